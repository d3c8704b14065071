/* hako-cmd pmeta, jmeta and plog: the domain's master data (header, assets, channels) as
 * Hakoniwa's hako-cmd prints it, one "key = value" per line, or as one JSON document; and the
 * event log kept in the segment. The keys are Hakoniwa's where hako has the same datum
 * (master_pid, time_usec.current, assets[i].ctime, channel_map, ...), so scripts written for
 * Hakoniwa find them; hako's own data come with names of their own. */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "hako_cmd.h"

static const char *event_name(int ev)
{
	static const char *const names[] = {"none", "start", "stop", "reset", "error"};
	return ev >= 0 && ev <= 4 ? names[ev] : "?";
}

static const char *policy_name(hako_liveness_policy_t p)
{
	return p == HAKO_LIVENESS_REMOVE ? "remove" : "error";
}

/* What both commands print, read once. */
struct meta {
	hako_domain_info_t info;
	hako_asset_info_t *assets;
	int nassets;
	hako_channel_info_t *channels;
	int nchannels;
};

static int read_meta(struct meta *m)
{
	hako_domain_t *dom;
	memset(m, 0, sizeof(*m));
	if (hakoi_cmd_open_domain(&dom) != 0) {
		return 1;
	}
	int rc = 1;
	if (hakoi_cmd_get_info(dom, &m->info) == 0 &&
	    (m->assets = hakoi_cmd_list_assets(dom, &m->nassets)) != NULL &&
	    (m->channels = hakoi_cmd_list_channels(dom, &m->nchannels)) != NULL) {
		rc = 0;
	}
	hako_domain_close(dom);
	return rc;
}

static void free_meta(struct meta *m)
{
	free(m->assets);
	free(m->channels);
}

int hakoi_cmd_pmeta(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int r = hakoi_cmd_simple_options(cmd, argc, argv);
	if (r >= 0) {
		return r;
	}
	struct meta m;
	if (read_meta(&m) != 0) {
		free_meta(&m);
		return 1;
	}
	const hako_domain_info_t *i = &m.info;
	printf("domain = %s (/dev/shm/hako.%s)\n", i->name, i->name);
	printf("layout_version = %" PRIu32 "\n", i->layout_version);
	printf("segment_bytes = %" PRIu64 "\n", i->segment_bytes);
	printf("max_assets = %" PRIu32 "\n", i->max_assets);
	printf("max_channels = %" PRIu32 "\n", i->max_channels);
	printf("arena_bytes = %" PRIu64 "\n", i->arena_bytes);
	printf("arena_used = %" PRIu64 "\n", i->arena_used);
	printf("master_pid = %d\n", i->master_pid);
	printf("master_alive = %d\n", i->master_alive);
	printf("master_running = %d\n", i->master_running);
	printf("state = %d (%s)\n", i->state, hako_state_name(i->state));
	printf("time_usec.max_delay = %lld\n", i->max_delay_usec);
	printf("time_usec.delta = %lld\n", i->delta_usec);
	printf("time_usec.current = %lld\n", i->world_time);
	printf("real_time_factor = %g\n", i->real_time_factor);
	printf("world_steps = %" PRIu64 "\n", i->world_steps);
	printf("reset_count = %" PRIu32 "\n", i->reset_count);
	printf("stop_at = %lld\n", i->stop_at);
	printf("heartbeat_timeout_usec = %lld\n", i->heartbeat_timeout_usec);
	printf("liveness_policy = %s\n", policy_name(i->liveness_policy));
	printf("error_reason = %s\n", i->error_reason);
	printf("asset_num = %d\n", m.nassets);
	for (int k = 0; k < m.nassets; k++) {
		const hako_asset_info_t *a = &m.assets[k];
		printf("assets[%d].id = %d\n", k, a->id);
		printf("assets[%d].name = %s\n", k, a->name);
		printf("assets[%d].proxy = %d\n", k, a->proxy);
		printf("assets[%d].note = %s\n", k, a->note);
		printf("assets_ev[%d].pid = %d\n", k, a->pid);
		printf("assets_ev[%d].alive = %d\n", k, a->alive);
		printf("assets_ev[%d].ctime = %lld\n", k, a->time_usec);
		printf("assets_ev[%d].delta = %lld\n", k, a->delta_usec);
		printf("assets_ev[%d].steps = %" PRIu64 "\n", k, a->steps);
		printf("assets_ev[%d].heartbeat_age_usec = %lld\n", k, a->heartbeat_age_usec);
		printf("assets_ev[%d].event = %d (%s)\n", k, a->event, event_name(a->event));
		printf("pdu_meta_data.asset_pdu_check_status[%d] = %d\n", k, a->checked_in);
	}
	printf("pdu_meta_data.channel_num = %d\n", m.nchannels);
	for (int k = 0; k < m.nchannels; k++) {
		const hako_channel_info_t *c = &m.channels[k];
		printf("pdu_meta_data.channel[%d].size = %" PRIu32 "\n", c->index, c->size);
		printf("pdu_meta_data.channel[%d].seq = %" PRIu64 "\n", c->index, c->seq);
		printf("pdu_meta_data.channel_map[%d].robo_name = %s\n", c->index, c->robot);
		printf("pdu_meta_data.channel_map[%d].logical_channel_id = %" PRId32 "\n", c->index,
		       c->channel_id);
	}
	free_meta(&m);
	return 0;
}

/* json_object_set_new for a literal key, into an object built here: cannot fail but on memory,
 * which json_dumps then reports as a NULL. */
#define SET(obj, key, value) json_object_set_new((obj), (key), (value))

static json_t *integer(long long v)
{
	return json_integer((json_int_t)v);
}

/* Names are any bytes to the core; JSON wants UTF-8: other bytes become '?' rather than the
 * key going missing. */
static json_t *text(const char *s)
{
	json_t *v = json_string(s);
	if (v != NULL) {
		return v;
	}
	char buf[HAKO_NAME_MAX + 256];
	size_t n = 0;
	for (; s[n] != '\0' && n + 1 < sizeof(buf); n++) {
		buf[n] = (unsigned char)s[n] < 0x80 ? s[n] : '?';
	}
	buf[n] = '\0';
	return json_string(buf);
}

int hakoi_cmd_jmeta(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int r = hakoi_cmd_simple_options(cmd, argc, argv);
	if (r >= 0) {
		return r;
	}
	struct meta m;
	if (read_meta(&m) != 0) {
		free_meta(&m);
		return 1;
	}
	const hako_domain_info_t *i = &m.info;
	char path[HAKO_NAME_MAX + 16];
	snprintf(path, sizeof(path), "/dev/shm/hako.%s", i->name);
	json_t *root = json_object();
	json_t *seg = json_object();
	SET(seg, "domain", text(i->name));
	SET(seg, "path", text(path));
	SET(seg, "layout_version", integer(i->layout_version));
	SET(seg, "data_size", integer((long long)i->segment_bytes));
	SET(seg, "max_assets", integer(i->max_assets));
	SET(seg, "max_channels", integer(i->max_channels));
	SET(seg, "arena_bytes", integer((long long)i->arena_bytes));
	SET(seg, "arena_used", integer((long long)i->arena_used));
	SET(root, "shared_memory", seg);

	json_t *md = json_object();
	SET(md, "master_pid", integer(i->master_pid));
	SET(md, "master_alive", json_boolean(i->master_alive));
	SET(md, "master_running", json_boolean(i->master_running));
	SET(md, "state", integer(i->state));
	SET(md, "state_name", text(hako_state_name(i->state)));
	json_t *t = json_object();
	SET(t, "max_delay", integer(i->max_delay_usec));
	SET(t, "delta", integer(i->delta_usec));
	SET(t, "current", integer(i->world_time));
	SET(md, "time_usec", t);
	SET(md, "real_time_factor", json_real(i->real_time_factor));
	SET(md, "world_steps", integer((long long)i->world_steps));
	SET(md, "reset_count", integer(i->reset_count));
	SET(md, "stop_at", integer(i->stop_at));
	SET(md, "heartbeat_timeout_usec", integer(i->heartbeat_timeout_usec));
	SET(md, "liveness_policy", text(policy_name(i->liveness_policy)));
	SET(md, "error_reason", text(i->error_reason));
	SET(md, "asset_num", integer(m.nassets));
	json_t *assets = json_array(), *evs = json_array(), *check = json_array();
	for (int k = 0; k < m.nassets; k++) {
		const hako_asset_info_t *a = &m.assets[k];
		json_t *o = json_object();
		SET(o, "id", integer(a->id));
		SET(o, "name", text(a->name));
		SET(o, "proxy", json_boolean(a->proxy));
		SET(o, "note", text(a->note));
		json_array_append_new(assets, o);
		json_t *e = json_object();
		SET(e, "pid", integer(a->pid));
		SET(e, "alive", json_boolean(a->alive));
		SET(e, "ctime", integer(a->time_usec));
		SET(e, "delta", integer(a->delta_usec));
		SET(e, "steps", integer((long long)a->steps));
		SET(e, "heartbeat_age_usec", integer(a->heartbeat_age_usec));
		SET(e, "event", integer(a->event));
		json_array_append_new(evs, e);
		json_array_append_new(check, json_boolean(a->checked_in));
	}
	SET(md, "assets", assets);
	SET(md, "assets_ev", evs);
	json_t *pm = json_object();
	SET(pm, "channel_num", integer(m.nchannels));
	SET(pm, "asset_pdu_check_status", check);
	json_t *real = json_array(), *map = json_array();
	for (int k = 0; k < m.nchannels; k++) {
		const hako_channel_info_t *c = &m.channels[k];
		json_t *o = json_object();
		SET(o, "real_cid", integer(c->index));
		SET(o, "size", integer(c->size));
		SET(o, "seq", integer((long long)c->seq));
		json_array_append_new(real, o);
		o = json_object();
		SET(o, "real_cid", integer(c->index));
		SET(o, "robo_name", text(c->robot));
		SET(o, "logical_channel_id", integer(c->channel_id));
		json_array_append_new(map, o);
	}
	SET(pm, "real_channels", real);
	SET(pm, "channel_map", map);
	SET(md, "pdu_meta_data", pm);
	SET(root, "master_data", md);
	free_meta(&m);

	char *out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (out == NULL) {
		hakoi_cmd_errf("out of memory");
		return 1;
	}
	printf("%s\n", out);
	free(out);
	return 0;
}

/* ---- plog ---- */

static void print_events(hako_domain_t *dom, uint32_t *next)
{
	hako_domain_event_t ev[64];
	int n;
	do {
		n = 0;
		if (hako_domain_read_events(dom, *next, ev, 64, &n, next) != 0) {
			return;
		}
		for (int k = 0; k < n; k++) {
			time_t sec = (time_t)(ev[k].wall_usec / 1000000);
			struct tm tm;
			char when[32];
			localtime_r(&sec, &tm);
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
			printf("%s.%06lld  world %.6f s  pid %-7d %s\n", when,
			       (long long)(ev[k].wall_usec % 1000000),
			       hakoi_cmd_sec(ev[k].world_time), ev[k].pid, ev[k].text);
		}
	} while (n == 64);
	fflush(stdout);
}

int hakoi_cmd_plog(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"follow", no_argument, NULL, 'f'}, HAKOI_CMD_LONG_OPTIONS, {NULL, 0, NULL, 0}};
	int follow = 0, c, r;
	while ((c = getopt_long(argc, argv, ":d:hf", longopts, NULL)) != -1) {
		if (c == 'f') {
			follow = 1;
			continue;
		}
		if ((r = hakoi_cmd_option(cmd, c, argv)) >= 0) {
			return r;
		}
	}
	if ((r = hakoi_cmd_no_operands(cmd, argc, argv)) >= 0) {
		return r;
	}
	hako_domain_t *dom;
	if (hakoi_cmd_open_domain(&dom) != 0) {
		return 1;
	}
	uint32_t next = 0;
	print_events(dom, &next);
	if (follow) {
		sigset_t set;
		hakoi_cmd_stop_signals(&set, 1);
		struct timespec zero = {0, 0};
		/* Events come with a change of the domain (a state, a registration) or without
		 * (a channel created): look at least every 200 ms. */
		while (sigtimedwait(&set, NULL, &zero) < 0) {
			uint32_t seen = hako_domain_changes(dom);
			print_events(dom, &next);
			hako_domain_wait_change(dom, seen, 200000);
		}
	}
	hako_domain_close(dom);
	return 0;
}
