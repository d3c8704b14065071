/* Internal: a node map, Hakoniwa's node-ip-map.json ({"nodes": {"srv-01": "192.168.2.100"}}):
 * the addresses that node names written in tcp / udp comm files stand for. */
#ifndef HAKOI_NODE_MAP_H
#define HAKOI_NODE_MAP_H

#include <stddef.h>

#include "hako/error.h"

typedef struct hakoi_node_map hakoi_node_map_t;

/* Load and check a map file: every name non-empty and shorter than 64 bytes, every address an
 * IPv4 or IPv6 literal, no name twice; errors at file:line:column of the map. */
int hakoi_node_map_load(const char *path, hakoi_node_map_t **out, hako_error_t *err);
void hakoi_node_map_free(hakoi_node_map_t *m);
/* The address of name, or NULL when the map has no such node. */
const char *hakoi_node_map_find(const hakoi_node_map_t *m, const char *name);
/* The map's names, ", "-separated in the file's order, into buf (truncated with "..."). */
void hakoi_node_map_names(const hakoi_node_map_t *m, char *buf, size_t len);

#endif
