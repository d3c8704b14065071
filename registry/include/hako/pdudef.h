/* PDU definition files (Hakoniwa's "pdudef"): which PDUs each robot has.
 *
 * Two forms load:
 *  - legacy:  {"robots": [{"name", "shm_pdu_readers": [...], "shm_pdu_writers": [...],
 *              "rpc_pdu_readers", "rpc_pdu_writers"}]}, entries {type, org_name, name?,
 *              channel_id, pdu_size, write_cycle?, method_type?}
 *  - compact: {"paths": [{"id", "path"}], "robots": [{"name", "pdutypes_id"}]} where each path
 *              (relative to the pdudef file) is a JSON array of {channel_id, pdu_size, name, type}.
 */
#ifndef HAKO_PDUDEF_H
#define HAKO_PDUDEF_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/error.h"
#include "hako/limits.h"
#include "hako/msg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The old name of HAKO_NAME_MAX, until the last users move to it; do not use. */
#define HAKO_PDUDEF_NAME_MAX HAKO_NAME_MAX

typedef struct hako_pdudef_pdu {
	char name[HAKO_NAME_MAX];     /* short name: org_name (legacy) or name (compact) */
	char type[HAKO_MSG_FULL_MAX]; /* ROS-style type, e.g. "geometry_msgs/Twist" */
	int32_t channel_id;           /* logical channel id, >= 0 */
	uint32_t pdu_size;            /* bytes, > 0 */
	int is_reader;                /* listed among the shm/rpc readers (legacy form) */
	int is_writer;                /* listed among the shm/rpc writers (legacy form) */
} hako_pdudef_pdu_t;

typedef struct hako_pdudef_robot {
	char name[HAKO_NAME_MAX];
	size_t pdu_count;
	hako_pdudef_pdu_t *pdus;
} hako_pdudef_robot_t;

typedef struct hako_pdudef {
	char path[512]; /* the file it was loaded from */
	size_t robot_count;
	hako_pdudef_robot_t *robots;
} hako_pdudef_t;

/* Load a pdudef file. On error returns HAKO_ENOENT (the pdudef or a pdutypes file is missing),
 * HAKO_ECONFIG (malformed), HAKO_EIO, HAKO_ENOMEM, HAKO_ENAMETOOLONG (path of 512 bytes or more)
 * or HAKO_EINVAL (NULL argument), and fills err with file, line, column and what is wrong. */
HAKO_API int hako_pdudef_load(const char *path, hako_pdudef_t **out, hako_error_t *err);
HAKO_API void hako_pdudef_free(hako_pdudef_t *def);

HAKO_API const hako_pdudef_robot_t *hako_pdudef_robot(const hako_pdudef_t *def, const char *robot);
HAKO_API const hako_pdudef_pdu_t *hako_pdudef_find(const hako_pdudef_t *def, const char *robot,
                                                   const char *name);
HAKO_API const hako_pdudef_pdu_t *hako_pdudef_find_channel(const hako_pdudef_t *def,
                                                           const char *robot, int32_t channel_id);

#ifdef __cplusplus
}
#endif
#endif
