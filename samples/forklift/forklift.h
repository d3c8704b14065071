/* What the processes of the forklift demo share: PDU names, file names, the mission PDU, and
 * where to find the configs (next to the executable in the build tree, else installed). */
#ifndef FORKLIFT_H
#define FORKLIFT_H

#include <stddef.h>
#include <stdint.h>

#include "forklift_model.h"

#define FORKLIFT_ROBOT "forklift"
#define FORKLIFT_EU    "forklift"
/* The PDUs of robot "forklift" (forklift_pdudef.json). The EU's writes are pos, height and
 * phase (forklift_rd.json); mission is the controller's. */
#define FORKLIFT_PDU_MISSION "mission"
#define FORKLIFT_PDU_POS     "pos"
#define FORKLIFT_PDU_HEIGHT  "height"
#define FORKLIFT_PDU_PHASE   "phase"

#define FORKLIFT_RD_CONFIG "forklift_rd.json"

/* Files in the output folder: per host, the RD trace (written by the RD library) and the
 * record of every model step it ran; the report's outputs. */
#define FORKLIFT_TRACE_FMT   "forklift-%u.trace.jsonl"
#define FORKLIFT_STEPS_FMT   "forklift-%u.steps.csv"
#define FORKLIFT_OUT_CSV     "forklift-trace.csv"
#define FORKLIFT_OUT_SVG     "forklift-x.svg"
#define FORKLIFT_OUT_SUMMARY "forklift-summary.json"

#ifndef FORKLIFT_SHARE_DIR /* set by CMake from the install prefix */
#define FORKLIFT_SHARE_DIR "/usr/local/share/hako/samples/forklift"
#endif

/* The config file `name`: next to the executable if it is there (the build tree), else in
 * FORKLIFT_SHARE_DIR. Returns buf. */
const char *forklift_config_path(const char *name, char *buf, size_t len);

/* ---- The mission PDU: std_msgs/Float64MultiArray, data = {forward_m, backward_m, speed,
 * lift_height, loops} (layout empty). ---- */

#define FORKLIFT_MISSION_VALUES   5
#define FORKLIFT_MISSION_PDU_SIZE 88 /* 24 meta + 24 base + 5 doubles */

/* *len = the PDU's size. 0, or HAKO_ETOOBIG. */
int forklift_mission_encode(const forklift_mission_t *m, void *pdu, size_t cap, size_t *len);
/* 0, HAKO_EAGAIN (never written: all zero) or HAKO_EPROTO (not a valid mission). */
int forklift_mission_decode(const void *pdu, size_t len, forklift_mission_t *m);

/* "forward 2.00 m, lift 0.40 m, back 2.00 m, lift down, repeat forever at 0.70 m/s" */
void forklift_mission_describe(const forklift_mission_t *m, char *buf, size_t len);

/* Parse a double / unsigned option value; 0 or -1. */
int forklift_parse_double(const char *s, double *out);
int forklift_parse_uint(const char *s, unsigned long max, unsigned long *out);

#endif
