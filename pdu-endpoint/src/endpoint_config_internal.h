/* Endpoint config loaders, the entry points other hako libraries use but the public API does
 * not offer. */
#ifndef HAKOI_ENDPOINT_CONFIG_INTERNAL_H
#define HAKOI_ENDPOINT_CONFIG_INTERNAL_H

#include "hako/endpoint_config.h"
#include "json_pos.h"

struct json_t; /* jansson's */

/* Load node_id's endpoints from a container already parsed: value is the array
 * [{nodeId, endpoints: [{id, mode?, direction?, config_path}]}] found at j's current path in
 * j->file (a bridge file's inline "endpoints" block). It is checked as a container file is;
 * config_path resolves under the folder of j->file; errors are reported through j, as
 * "<j->file>:line:column: <j's path>[0].endpoints[1].config_path: ...". The container's path
 * is j->file. Returns 0 (*out set) or an error code (*out NULL); j is not changed. */
int hakoi_endpoint_container_from_json(const hakoi_jctx_t *j, struct json_t *value,
                                       const char *node_id, hako_endpoint_container_t **out);

#endif
