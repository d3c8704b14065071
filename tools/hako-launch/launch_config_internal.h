/* The parts of the launch file loader (launch_config*.c), for each other: the walk's own
 * context, the table entries cfg.h has no shorthand for, and what one part uses of another.
 * Private to the loader: hako-launch sees launch_config.h. */
#ifndef HAKOI_LAUNCH_CONFIG_INTERNAL_H
#define HAKOI_LAUNCH_CONFIG_INTERNAL_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>

#include "hako_launch_keys.h"
#include "hakoi/cfg.h"
#include "launch_config.h"

/* The walk's own context (hakoi_walk_t.user): what variables are known so far. */
struct ctx {
	const hakoi_launch_options_t *opt;
	hakoi_launch_config_t *cfg;
	char cwd[PATH_MAX];
	/* Set by hako-launch for every process; NULL until known. */
	const char *var_domain;
	const char *var_dir;
	const char *var_log_dir;
	/* Hakoniwa's launcher format: its "defaults" object (NULL: none), the document */
	json_t *hk_defaults;
	json_t *hk_root;
};

static inline struct ctx *ctx_of(hakoi_walk_t *w)
{
	return w->user;
}

/* Table entries the shorthands of cfg.h do not cover. */
#define INT_FIELD(key_, T, M, lo, hi, expect_)                                                     \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_INT, HAKOI_AT(T, M), .min = (lo), .max = (hi),      \
		.expect = (expect_)                                                                \
	}
#define EXPANDED(key_, flags_, T, M)                                                               \
	{                                                                                          \
		.key = (key_), .kind = HAKOI_K_CUSTOM, .flags = (flags_),                          \
		.offset = offsetof(T, M), .parse = hakoi_launch_parse_expanded,                    \
		.expect = "a string"                                                               \
	}

/* launch_config.c: hakoi_launch_load, for a federation file's nodes too (nested: a node, which
 * cannot be a federation file itself) */
int hakoi_launch_read(const char *file, const hakoi_launch_options_t *opt, int nested,
                      hakoi_launch_config_t **out, hako_error_t *err);

/* launch_config_expand.c: a variable name's first and other characters; a string member
 * expanded into the char * at base + f->offset (HAKOI_F_EMPTY_OK: "" too) */
int hakoi_launch_is_var_start(int ch);
int hakoi_launch_is_var_char(int ch);
int hakoi_launch_parse_expanded(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);

/* launch_config_paths.c: base + "/" + p unless p is absolute (malloc'ed, or NULL); an
 * executable file; an absolute folder, canonical if it exists; the expanded folder at the
 * current path, absolute, that must exist; a command's executable, looked for in first, then
 * where any command is (name: the process, for the error). */
char *hakoi_launch_join(const char *base, const char *p);
int hakoi_launch_is_exe(const char *p);
char *hakoi_launch_abs_dir(const char *base, const char *p);
int hakoi_launch_parse_folder(hakoi_walk_t *w, json_t *v, char **out);
int hakoi_launch_resolve_command_in(hakoi_walk_t *w, const char *name, const char *cmd,
                                    const char *const *first, size_t nfirst, char **exe);
int hakoi_launch_resolve_command(hakoi_walk_t *w, const char *name, const char *cmd, char **exe);

/* launch_config_file.c: hako's launch file; the domain and the log folder, which every form
 * has */
extern const hakoi_field_t hakoi_launch_top_fields[];
int hakoi_launch_check_domain(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_launch_check_log_dir(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);

/* launch_config_process.c: an element of "processes"; the checks a Hakoniwa asset shares
 * (its name, the rules between members, then argv) */
int hakoi_launch_parse_process(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
extern const hakoi_field_t hakoi_launch_arg_elem;
int hakoi_launch_valid_proc_name(const char *name);
int hakoi_launch_check_proc_name(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_launch_reserved_env(const char *key);
int hakoi_launch_check_process(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);
int hakoi_launch_set_argv(hakoi_walk_t *w, hakoi_launch_proc_t *p);

/* launch_config_viewer.c: "viewer" */
extern const hakoi_field_t hakoi_launch_viewer_fields[];
extern const hakoi_field_t hakoi_launch_record_fields[];

/* launch_config_federation.c: a federation file */
extern const hakoi_field_t hakoi_launch_federation_top_fields[];

/* launch_config_hakoniwa.c, launch_config_hakoniwa_env.c: Hakoniwa's launcher file; an env
 * object {set, prepend, append, unset} into the process at base */
extern const hakoi_field_t hakoi_launch_hk_top_fields[];
int hakoi_launch_hk_env(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f);

#endif
