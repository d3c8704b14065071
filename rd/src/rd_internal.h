/* Shared inside hako_rd: the control-plane PDUs (status and context of hako_msgs, encoded with
 * the registry's codec), the trace writer and the FNV-1a hash of config files. */
#ifndef HAKOI_RD_INTERNAL_H
#define HAKOI_RD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "hako/msg.h"
#include "hako/rd.h"

#define HAKOI_RD_STATUS_TYPE  "hako_msgs/ExecutionUnitRuntimeStatus"
#define HAKOI_RD_CONTEXT_TYPE "hako_msgs/ExecutionUnitRuntimeContext"

/* The RD header at the start of context[]: magic "RDCX" (bytes R D C X), version u16, header
 * length u16, release world time i64, model step u64; little-endian. */
#define HAKOI_RD_CTX_MAGIC    0x58434452u
#define HAKOI_RD_CTX_VERSION  1u
#define HAKOI_RD_CTX_HDR_SIZE 24u
/* RD-Full: a context whose model step is this is the conductor's announcement of a commit
 * point (the release time), not an owner's context. */
#define HAKOI_RD_CTX_ANNOUNCE UINT64_MAX

/* The largest max_context_bytes a config may ask for. */
#define HAKOI_RD_MAX_CONTEXT (16u << 20)

uint32_t hakoi_rd_fnv1a(const void *data, size_t len);

/* hako_rd_full_request's kept connection (rd_full_request.c): how many connections it has
 * opened in this process, and closing it now (the tests). */
unsigned hakoi_rd_full_request_opens(void);
void hakoi_rd_full_request_drop(void);

/* ---- Control-plane PDUs ---- */

/* The two hako_msgs types, resolved in a registry, with the offsets of their fields. */
typedef struct hakoi_rd_types {
	const hako_msg_type_t *status;
	const hako_msg_type_t *context;
	uint32_t st_hash, st_count, st_status, st_epoch, st_curr, st_next; /* base offsets */
	uint32_t cx_hash, cx_epoch, cx_owner, cx_bytes;
} hakoi_rd_types_t;

/* Resolve both types in reg (a field missing from a type found on HAKO_MSG_PATH: HAKO_EPROTO). */
int hakoi_rd_types_get(hako_msg_registry_t *reg, hakoi_rd_types_t *t, hako_error_t *err);

/* Bytes a status PDU with unit_count 1 needs; a context PDU with ctx_max application bytes. */
uint32_t hakoi_rd_status_size(const hakoi_rd_types_t *t);
uint32_t hakoi_rd_context_size(const hakoi_rd_types_t *t, uint32_t ctx_max);

typedef struct hakoi_rd_status {
	uint32_t config_hash;
	uint8_t status; /* hako_rd_status_t */
	uint8_t epoch;
	uint8_t curr;
	uint8_t next;
} hakoi_rd_status_t;

int hakoi_rd_status_encode(const hakoi_rd_types_t *t, const hakoi_rd_status_t *st, void *buf,
                           size_t cap, size_t *len);
/* Validate and decode; HAKO_EPROTO with the reason in why (unit_count must be 1). */
int hakoi_rd_status_decode(const hakoi_rd_types_t *t, const void *pdu, size_t len,
                           hakoi_rd_status_t *st, char *why, size_t why_len);

typedef struct hakoi_rd_context {
	uint32_t config_hash;
	uint8_t epoch;
	uint8_t owner;
	hako_time_t release_time;
	uint64_t model_step;
	const uint8_t *bytes; /* the application's bytes, inside the decoded PDU */
	size_t len;
} hakoi_rd_context_t;

int hakoi_rd_context_encode(const hakoi_rd_types_t *t, const hakoi_rd_context_t *cx, void *buf,
                            size_t cap, size_t *len);
int hakoi_rd_context_decode(const hakoi_rd_types_t *t, const void *pdu, size_t len,
                            hakoi_rd_context_t *cx, char *why, size_t why_len);

/* ---- Trace (JSON lines, format in docs/rd.md) ----
 * The contract between the executors that write a trace (rd_node.c, in every asset process
 * hosting an EU) and hako-rd check (rd_check.c) that reads it: every record has "t", "node",
 * "eu", "epoch" and "ev", one of the events below, and the keys its event names. */

typedef enum hakoi_rd_trace_ev {
	HAKOI_RD_EV_INIT,     /* "run", "hash", "role": owner | standby | observer */
	HAKOI_RD_EV_WRITE,    /* "pdu", "mt" (the model time it wrote at) */
	HAKOI_RD_EV_STEP,     /* "step", "mt" */
	HAKOI_RD_EV_RELEASE,  /* "next", "step": the owner stopped for node next */
	HAKOI_RD_EV_ACTIVATE, /* "from", "step": the new owner took over from node from */
	HAKOI_RD_EV_RELEASED, /* "next": a node saw the hand-off done */
	HAKOI_RD_EV_RECLAIM,  /* "step": the old owner took the EU back */
	HAKOI_RD_EV_RESTART,  /* "lost", "step": RD-Full, from the authority's committed context */
	HAKOI_RD_EV_READ,     /* "pdu", "mt": a reader (an observer) was given a PDU */
	HAKOI_RD_EV_COUNT
} hakoi_rd_trace_ev_t;

/* The event's name in the trace ("init", ...); NULL for none. */
const char *hakoi_rd_trace_ev_name(hakoi_rd_trace_ev_t ev);
/* The event of a name; HAKOI_RD_EV_COUNT for none. */
hakoi_rd_trace_ev_t hakoi_rd_trace_ev_of(const char *name);

typedef struct hakoi_rd_trace hakoi_rd_trace_t;

/* Open path for appending (created 0644). NULL and errno on failure. */
hakoi_rd_trace_t *hakoi_rd_trace_open(const char *path);
void hakoi_rd_trace_close(hakoi_rd_trace_t *tr);
/* The record of a model step (HAKOI_RD_EV_STEP, "step", "mt"), formatted without printf. */
void hakoi_rd_trace_step(hakoi_rd_trace_t *tr, hako_time_t t, uint8_t node, uint32_t eu,
                         uint8_t epoch, uint64_t step, hako_time_t model_time);
/* Write out the records that wait (model steps, writes, reads). */
void hakoi_rd_trace_flush(hakoi_rd_trace_t *tr);

/* One record, written with one write(2): {"t","node","eu","epoch","ev"} followed by `extra`
 * (already JSON: `,"pdu":"pos","mt":1000` or ""). Accepts tr == NULL. */
void hakoi_rd_trace_emit(hakoi_rd_trace_t *tr, hako_time_t t, uint8_t node, uint32_t eu,
                         uint8_t epoch, hakoi_rd_trace_ev_t ev, const char *extra);

/* `s` as the body of a JSON string (quotes and backslashes escaped, control characters as
 * \u00XX) into buf. */
void hakoi_rd_json_escape(const char *s, char *buf, size_t len);

#endif
