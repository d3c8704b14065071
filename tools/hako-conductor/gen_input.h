/* The parts of the eu-input loader of hako-conductor gen (gen_input*.c), for each other: the
 * load's own context, the helpers every part uses, and the handlers of each part that the
 * top-level table of gen_input.c names. Private to the loader: the rest of gen sees
 * conductor_gen.h. */
#ifndef HAKOI_GEN_INPUT_H
#define HAKOI_GEN_INPUT_H

#include <jansson.h>
#include <stddef.h>

#include "conductor_gen.h"
#include "hakoi/cfg.h"

/* mode "rd": the RD config's bounds (rd/src/rd_config.c) and gen's own for the context */
#define RD_MAX_TIMEOUT_USEC  86400000000LL /* a day of world time */
#define RD_MAX_CONTEXT_BYTES 65536
#define RD_DEFAULT_TIMEOUT   2000000
#define RD_DEFAULT_CONTEXT   4096
#define RD_STATUS_TYPE       "hako_msgs/ExecutionUnitRuntimeStatus"
#define RD_CONTEXT_TYPE      "hako_msgs/ExecutionUnitRuntimeContext"
#define RD_STATUS_SIZE       256 /* unit_count 1 needs 68 bytes */
#define RD_CONTEXT_OVERHEAD  64  /* 24-byte meta, 16-byte base, 24-byte RD header */

/* A robot type: its pdutypes file. */
struct rtype {
	char name[HAKO_NAME_MAX];
	char pdutypes[512];
};

struct robot {
	char name[HAKO_NAME_MAX];
	char type[HAKO_NAME_MAX];
};

/* An eu_types entry: the groups it writes and reads (one flag per group). */
struct etype {
	char name[HAKO_NAME_MAX];
	unsigned char *writes;
	unsigned char *reads;
};

/* Where a group was declared, for what is found about it at the end. */
struct group_src {
	const char *array; /* "pdu_groups" or "pdu_type_groups" */
	size_t index;
};

/* Where a unit was placed (unit_placement.nodes.<node>[index]), for the same reason. */
struct place_src {
	const char *node_key; /* NULL: placed by mode "auto" */
	size_t index;
};

/* The load's own context (hakoi_walk_t.user): what the parts read for each other and the model
 * does not keep. */
struct ld {
	hakoi_gen_t *g;
	/* connection_pairs, as read */
	size_t pair_count;
	const char *server_nodes[HAKOI_GEN_MAX_NODES]; /* each pair's server_node_id (JSON) */
	int exec_given;
	size_t rtype_count;
	struct rtype *rtypes;
	size_t robot_count;
	struct robot *robots;
	int robots_given;
	int pdudef_given;
	int groups_given, type_groups_given;
	struct group_src *group_src;
	size_t etype_count;
	struct etype *etypes;
	struct place_src *place_src; /* per unit */
	int placement_given;
	int base_port_given;
};

static inline struct ld *ld_of(hakoi_walk_t *w)
{
	return w->user;
}

/* gen_input.c: warnings at their place (dropped without opt.warn), an object walked with its
 * other members warned about, and the checks every part makes. */
void hakoi_gen_warn_at(hakoi_walk_t *w, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void hakoi_gen_warn_others(hakoi_walk_t *w, json_t *obj, const hakoi_field_t *fields);
int hakoi_gen_walk_lenient(hakoi_walk_t *w, json_t *v, const hakoi_field_t *fields, void *base);
int hakoi_gen_valid_name(const char *s);
int hakoi_gen_get_string(hakoi_walk_t *w, json_t *v, char *dst, size_t size);
int hakoi_gen_node_of(const struct ld *l, const char *id);
int hakoi_gen_fail_not_node(hakoi_walk_t *w, const char *id);
int hakoi_gen_keep_json(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);

/* The members' handlers, in the order the top-level table reads them. */

/* gen_input_nodes.c */
int hakoi_gen_parse_pairs(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_gen_parse_exec_nodes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_gen_parse_addresses(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_gen_parse_comm(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_gen_parse_conductor(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
/* on_client_loss by value (hakoi_gen_t.on_client_loss), NULL-terminated */
extern const char *const hakoi_gen_loss_names[];

/* gen_input_rd.c: "rd"; and, from hakoi_gen_finish, the execution units */
int hakoi_gen_parse_rd(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_gen_rd_units(hakoi_walk_t *w);

/* gen_input_pdus.c */
int hakoi_gen_parse_rtypes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_gen_parse_robots(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_gen_parse_pdudef(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_gen_build_pdudef(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);

/* gen_input_groups.c */
int hakoi_gen_parse_groups(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_gen_parse_type_groups(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_gen_check_groups(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);

/* gen_input_units.c; hakoi_gen_unit_of: the unit of that name, or -1 */
int hakoi_gen_parse_etypes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_gen_parse_units(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_gen_refuse_auto_units(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_gen_parse_bindings(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_gen_unit_of(const hakoi_gen_t *g, const char *name);

/* gen_input_placement.c */
int hakoi_gen_parse_placement(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);

/* gen_input_finish.c: the whole federation, last; hakoi_gen_push_unit: the path of unit k's
 * place, for a message about it */
int hakoi_gen_finish(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
void hakoi_gen_push_unit(hakoi_walk_t *w, const struct ld *l, size_t k);

#endif
