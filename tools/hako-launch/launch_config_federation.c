/* A federation file (launch_config.c has the loader): its nodes' launch files, each loaded and
 * checked, each run by a hako-launch of its own in its own domain; one server, whose clients are
 * the other nodes, all agreeing on the timing. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch_config_internal.h"

/* ---- a federation file: every node of a federation, each its own hako-launch ---- */

/* "<prefix>-<node id>", the domain of a node whose launch file does not name one; the prefix is
 * federation.name, else the domain hako-launch would use ($HAKO_DOMAIN or launch-<pid>). */
static int check_prefix(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_launch_config_t *cfg = base;
	const hakoi_launch_options_t *o = ctx_of(w)->opt;
	if (cfg->prefix == NULL) {
		const char *d = o != NULL && o->default_domain != NULL ? o->default_domain
		                                                       : hako_domain_default_name();
		if ((cfg->prefix = strdup(d)) == NULL) {
			return hakoi_walk_fail_oom(w);
		}
	} else if (strchr(cfg->prefix, '/') != NULL || strlen(cfg->prefix) > 60) {
		hakoi_walk_push_key(w, "name");
		return hakoi_walk_fail(w,
		                       "\"%s\": the nodes' domains are \"<name>-<node id>\": at "
		                       "most 60 characters and no '/'",
		                       cfg->prefix);
	}
	return 0;
}

/* Load a node's launch file for its domain; a node whose file names no domain gets
 * "<prefix>-<node id>", known once the file is read: it is read again with that default, so
 * that ${HAKO_DOMAIN} in it expands as it will in the node's own hako-launch. */
static int load_node(hakoi_walk_t *w, hakoi_launch_node_t *n, const char *prefix)
{
	const hakoi_launch_options_t *o = ctx_of(w)->opt;
	hakoi_launch_options_t opt = {prefix, o != NULL ? o->search : NULL,
	                              o != NULL ? o->search_count : 0};
	hako_error_t sub;
	int r = hakoi_launch_read(n->file, &opt, 1, &n->cfg, &sub);
	if (r != 0) {
		return hakoi_walk_sub_error(w, r, &sub, n->file);
	}
	if (n->cfg->federation == NULL) {
		return hakoi_walk_fail(w,
		                       "%s is not a federation node: its \"conductor\" has no "
		                       "\"federation\" file",
		                       n->file);
	}
	if (!n->cfg->domain_given) {
		char domain[HAKO_NAME_MAX];
		snprintf(domain, sizeof(domain), "%s-%s", prefix, n->cfg->federation->node_id);
		hakoi_launch_free(n->cfg);
		n->cfg = NULL;
		opt.default_domain = domain;
		if ((r = hakoi_launch_read(n->file, &opt, 1, &n->cfg, &sub)) != 0) {
			return hakoi_walk_sub_error(w, r, &sub, n->file);
		}
	}
	n->domain = strdup(n->cfg->domain);
	return n->domain != NULL ? 0 : hakoi_walk_fail_oom(w);
}

static int parse_node(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)f;
	hakoi_launch_node_t *n = base;
	const hakoi_launch_config_t *cfg = ctx_of(w)->cfg;
	char *rel = NULL;
	int r = hakoi_launch_parse_expanded(w, v, &rel, &(hakoi_field_t){.flags = 0});
	if (r != 0) {
		return r;
	}
	n->file = hakoi_launch_join(cfg->dir, rel);
	free(rel);
	if (n->file == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	if ((r = load_node(w, n, cfg->prefix)) != 0) {
		return r;
	}
	const hako_conductor_config_t *me = n->cfg->federation;
	if (!hakoi_launch_valid_proc_name(me->node_id)) {
		return hakoi_walk_fail(w,
		                       "node id \"%s\" cannot name its process and log (letters, "
		                       "digits, '.', '_' or '-', starting with a letter or digit)",
		                       me->node_id);
	}
	for (size_t j = 0; j < hakoi_walk_index(w); j++) {
		const hakoi_launch_node_t *o = &cfg->nodes[j];
		if (strcmp(o->cfg->federation->node_id, me->node_id) == 0) {
			return hakoi_walk_fail_dup(w, j, "node \"%s\"", me->node_id);
		}
		if (strcmp(o->domain, n->domain) == 0) {
			return hakoi_walk_fail_dup(w, j, "domain \"%s\"", n->domain);
		}
		if (strcmp(o->cfg->log_dir_abs, n->cfg->log_dir_abs) == 0) {
			/* hako-launch.log and the processes' logs would overwrite each other */
			return hakoi_walk_fail_dup(w, j, "log_dir %s", n->cfg->log_dir);
		}
		const hakoi_launch_viewer_t *mv = &n->cfg->viewer, *ov = &o->cfg->viewer;
		if (mv->enabled && ov->enabled && mv->port != 0 && mv->port == ov->port) {
			/* the nodes run on this machine: the second viewer could not listen */
			return hakoi_walk_fail_dup(w, j, "viewer port %lld", mv->port);
		}
		if (me->role == HAKO_CONDUCTOR_SERVER &&
		    o->cfg->federation->role == HAKO_CONDUCTOR_SERVER) {
			return hakoi_walk_fail(
			    w,
			    "a second server (\"%s\" is nodes[%zu]): a federation "
			    "has one server",
			    o->cfg->federation->node_id, j);
		}
	}
	return 0;
}

static int node_index(const hakoi_launch_config_t *cfg, const char *id)
{
	for (size_t i = 0; i < cfg->node_count; i++) {
		if (strcmp(cfg->nodes[i].cfg->federation->node_id, id) == 0) {
			return (int)i;
		}
	}
	return -1;
}

/* One process per node: this hako-launch again, on the node's file, in the node's domain. */
static int node_process(hakoi_walk_t *w, hakoi_launch_proc_t *p, const hakoi_launch_node_t *n)
{
	struct ctx *c = ctx_of(w);
	const hakoi_launch_options_t *o = c->opt;
	size_t nsearch = o != NULL ? o->search_count : 0;
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0) {
		return hakoi_walk_fail(w, "cannot find this program (/proc/self/exe): %s",
		                       strerror(errno));
	}
	self[len] = '\0';
	snprintf(p->name, sizeof(p->name), "%s", n->cfg->federation->node_id);
	p->command = strdup("hako-launch");
	p->exe = strdup(self);
	p->domain = strdup(n->domain);
	p->args = calloc(2 * nsearch + 1, sizeof(char *));
	p->argv = calloc(2 * nsearch + 3, sizeof(char *));
	if (p->command == NULL || p->exe == NULL || p->domain == NULL || p->args == NULL ||
	    p->argv == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	/* The --path folders of this hako-launch count for the nodes too. */
	for (size_t i = 0; i < nsearch; i++) {
		p->args[p->arg_count++] = strdup("--path");
		p->args[p->arg_count++] = hakoi_launch_abs_dir(c->cwd, o->search[i]);
	}
	p->args[p->arg_count++] = strdup(n->file);
	p->argv[0] = p->command;
	for (size_t i = 0; i < p->arg_count; i++) {
		if (p->args[i] == NULL) {
			return hakoi_walk_fail_oom(w);
		}
		p->argv[i + 1] = p->args[i];
	}
	p->argc = p->arg_count + 1;
	p->echo = 1;
	p->phase = HAKOI_LAUNCH_PHASE_RUN;
	p->wait_for = HAKOI_LAUNCH_WAIT_NOTHING;
	return 0;
}

/* What holds between the nodes: one server, whose clients are the other nodes, all of them
 * agreeing on the timing (config hash). */
static int check_nodes(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	(void)v;
	(void)f;
	hakoi_launch_config_t *cfg = base;
	int server = -1;
	for (size_t i = 0; i < cfg->node_count; i++) {
		if (cfg->nodes[i].cfg->federation->role == HAKO_CONDUCTOR_SERVER) {
			server = (int)i;
		}
	}
	hakoi_walk_push_key(w, HAKOI_LAUNCH_KEY_NODES);
	if (server < 0) {
		return hakoi_walk_fail(w,
		                       "no server among the nodes (a node whose conductor file has "
		                       "\"clients\")");
	}
	const hako_conductor_config_t *s = cfg->nodes[server].cfg->federation;
	for (size_t i = 0; i < cfg->node_count; i++) {
		const hako_conductor_config_t *c = cfg->nodes[i].cfg->federation;
		hakoi_walk_push_index(w, i);
		if (c->role == HAKO_CONDUCTOR_CLIENT) {
			int listed = 0;
			for (size_t k = 0; k < s->client_count; k++) {
				listed |= strcmp(s->clients[k], c->node_id) == 0;
			}
			if (strcmp(c->server_id, s->node_id) != 0 || !listed) {
				return hakoi_walk_fail(
				    w,
				    "client \"%s\" is not a client of server \"%s\" "
				    "(nodes[%d])",
				    c->node_id, s->node_id, server);
			}
		}
		if (c->config_hash != s->config_hash) {
			return hakoi_walk_fail(
			    w,
			    "the conductor files of \"%s\" and of the server \"%s\" "
			    "disagree on delta, Dmax or the publish mode (config hash "
			    "0x%08x, the server's 0x%08x)",
			    c->node_id, s->node_id, c->config_hash, s->config_hash);
		}
		hakoi_walk_pop(w);
	}
	for (size_t k = 0; k < s->client_count; k++) {
		if (node_index(cfg, s->clients[k]) < 0) {
			hakoi_walk_push_index(w, (size_t)server);
			return hakoi_walk_fail(
			    w,
			    "server \"%s\" has client \"%s\", which is not among the "
			    "nodes: the federation could never start",
			    s->node_id, s->clients[k]);
		}
	}
	hakoi_walk_pop(w);
	cfg->procs = calloc(cfg->node_count, sizeof(*cfg->procs));
	if (cfg->procs == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	for (size_t i = 0; i < cfg->node_count; i++) {
		cfg->proc_count = i + 1;
		int r = node_process(w, &cfg->procs[i], &cfg->nodes[i]);
		if (r != 0) {
			return r;
		}
	}
	return 0;
}

static const hakoi_field_t node_elem = {.kind = HAKOI_K_CUSTOM, .parse = parse_node};

static const hakoi_field_t federation_fields[] = {
    EXPANDED("name", 0, hakoi_launch_config_t, prefix),
    HAKOI_CHECK(check_prefix),
    {.key = HAKOI_LAUNCH_KEY_NODES,
     .kind = HAKOI_K_ARRAY,
     .flags = HAKOI_F_REQUIRED,
     .min = 1,
     .max = HAKO_CONDUCTOR_MAX_CLIENTS + 1,
     HAKOI_ELEMS_NEW(hakoi_launch_config_t, nodes, node_count),
     .elem = &node_elem,
     .expect = "an array of launch files"},
    HAKOI_CHECK(check_nodes),
    HAKOI_END,
};

const hakoi_field_t hakoi_launch_federation_top_fields[] = {
    HAKOI_IGNORE("$schema"),
    {.key = HAKOI_LAUNCH_KEY_FEDERATION,
     .kind = HAKOI_K_OBJECT,
     .flags = HAKOI_F_REQUIRED,
     .fields = federation_fields},
    EXPANDED(HAKOI_LAUNCH_KEY_LOG_DIR, 0, hakoi_launch_config_t, log_dir),
    HAKOI_CHECK(hakoi_launch_check_log_dir),
    INT_FIELD("grace_ms", hakoi_launch_config_t, grace_ms, 0, 3600000,
              "an integer in [0, 3600000] (ms)"),
    HAKOI_END,
};
