/* Node maps (node_map.h), read by the config walker like every other file hako reads. */
#include "node_map.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep_comm.h"
#include "hako/endpoint_config.h"
#include "hakoi/cfg.h"

typedef struct node_entry {
	char name[64];
	char address[64];
} node_entry_t;

struct hakoi_node_map {
	size_t count;
	node_entry_t *nodes;
};

/* The entry's name is its key: kept once its address was read and checked. */
static int node_name(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	node_entry_t *e = base;
	const char *key = hakoi_walk_key(w);
	if (key == NULL) {
		return hakoi_walk_fail(w, "is nested too deeply");
	}
	return hakoi_walk_string(w, key, strlen(key), 0, e->name, sizeof(e->name));
}

static const hakoi_field_t node_elem = {
    .kind = HAKOI_K_STRING, HAKOI_AT(node_entry_t, address), .check = hakoi_comm_check_ip};

static const hakoi_field_t map_fields[] = {
    HAKOI_IGNORE("$schema"),
    {.key = "nodes",
     .kind = HAKOI_K_MAP,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_ELEMS_NEW(hakoi_node_map_t, nodes, count),
     .elem = &node_elem,
     .check = node_name,
     .expect = "an object {node name: IP address}"},
    HAKOI_END,
};

void hakoi_node_map_free(hakoi_node_map_t *m)
{
	if (m != NULL) {
		free(m->nodes);
		free(m);
	}
}

/* Names twice are refused by the parser (a duplicate key), at their place in the file. */
int hakoi_node_map_load(const char *path, hakoi_node_map_t **out, hako_error_t *err)
{
	*out = NULL;
	hakoi_node_map_t *m = calloc(1, sizeof(*m));
	if (m == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, path, 0, 0, "out of memory");
	}
	json_t *root = NULL;
	char *text = NULL;
	size_t len = 0;
	int r = hakoi_cfg_load(path, err, &root, &text, &len);
	if (r == 0) {
		hakoi_walk_t w;
		hakoi_walk_init(&w, err, path, text, len, m);
		r = hakoi_walk_object(&w, root, map_fields, m);
		json_decref(root);
		free(text);
	}
	if (r != 0) {
		hakoi_node_map_free(m);
		return r;
	}
	*out = m;
	return 0;
}

int hako_endpoint_node_map_check(const char *path, size_t *count, hako_error_t *err)
{
	if (path == NULL) {
		return HAKO_EINVAL;
	}
	hakoi_node_map_t *m = NULL;
	int r = hakoi_node_map_load(path, &m, err);
	if (r == 0 && count != NULL) {
		*count = m->count;
	}
	hakoi_node_map_free(m);
	return r;
}

const char *hakoi_node_map_find(const hakoi_node_map_t *m, const char *name)
{
	for (size_t i = 0; m != NULL && i < m->count; i++) {
		if (strcmp(m->nodes[i].name, name) == 0) {
			return m->nodes[i].address;
		}
	}
	return NULL;
}

void hakoi_node_map_names(const hakoi_node_map_t *m, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < m->count && used < len; i++) {
		int n =
		    snprintf(buf + used, len - used, "%s%s", i == 0 ? "" : ", ", m->nodes[i].name);
		if (n < 0 || (size_t)n >= len - used) {
			if (len > 4) {
				memcpy(buf + len - 4, "...", 4);
			}
			return;
		}
		used += (size_t)n;
	}
	if (m->count == 0) {
		snprintf(buf, len, "none");
	}
}
