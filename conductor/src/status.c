/* The node's status record (hako/conductor.h, hako_conductor_status_t): written by the node as
 * JSON text into channel _hako_conductor/0 of its domain, read back by the programs that show
 * it. Writer and reader are both here, so the keys are spelled in one place. */
#include <string.h>

#include <jansson.h>

#include "hako/conductor.h"

static const char *role_name(hako_conductor_role_t r)
{
	return r == HAKO_CONDUCTOR_SERVER ? "server" : "client";
}

int hako_conductor_status_format(const hako_conductor_status_t *st, char *buf, size_t len,
                                 size_t *out_len)
{
	if (st == NULL || buf == NULL || len == 0) {
		return HAKO_EINVAL;
	}
	json_t *peers = json_array();
	for (int i = 0; i < st->peer_count && i < HAKO_CONDUCTOR_MAX_CLIENTS; i++) {
		const hako_conductor_peer_stats_t *p = &st->peers[i];
		json_array_append_new(
		    peers,
		    json_pack("{s:s, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
		              "s:I, s:I}",
		              "id", p->node_id, "joined", p->joined, "connected", p->connected,
		              "known_time_usec", (json_int_t)p->known_time, "last_heard_usec",
		              (json_int_t)p->last_heard_usec, "samples", (json_int_t)p->samples,
		              "drift_p50_usec", (json_int_t)p->drift_p50_usec, "drift_p95_usec",
		              (json_int_t)p->drift_p95_usec, "drift_max_usec",
		              (json_int_t)p->drift_max_usec, "age_p50_usec",
		              (json_int_t)p->age_p50_usec, "age_max_usec",
		              (json_int_t)p->age_max_usec, "in", (json_int_t)p->messages_in, "out",
		              (json_int_t)p->messages_out, "garbage", (json_int_t)p->garbage,
		              "restarts", (json_int_t)p->restarts));
	}
	json_t *o =
	    json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:I, s:o}", "node", st->node_id, "role",
	              role_name(st->role), "server", st->server_id, "dmax_usec",
	              (json_int_t)st->dmax_usec, "world_time_usec", (json_int_t)st->world_time_usec,
	              "garbage_unknown", (json_int_t)st->garbage_unknown, "auth",
	              st->auth == HAKO_CONDUCTOR_AUTH_NONE ? "none" : "curve", "auth_refused",
	              (json_int_t)st->auth_refused, "peers", peers);
	if (o == NULL) {
		return HAKO_ENOMEM;
	}
	size_t need = json_dumpb(o, buf, len, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (need == 0 || need >= len) {
		return HAKO_ETOOBIG;
	}
	buf[need] = '\0';
	if (out_len != NULL) {
		*out_len = need;
	}
	return 0;
}

static json_int_t int_of(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static void str_of(json_t *o, const char *key, char *out, size_t len)
{
	const char *s = json_string_value(json_object_get(o, key));
	size_t n = s != NULL ? strnlen(s, len - 1) : 0;
	memcpy(out, s != NULL ? s : "", n);
	out[n] = '\0';
}

int hako_conductor_status_read(hako_domain_t *dom, hako_conductor_status_t *out)
{
	if (dom == NULL || out == NULL) {
		return HAKO_EINVAL;
	}
	memset(out, 0, sizeof(*out));
	hako_channel_t *ch = NULL;
	if (hako_channel_lookup(dom, HAKO_CONDUCTOR_STATUS_ROBOT, 0, &ch) != 0) {
		return HAKO_ENOENT;
	}
	static __thread char buf[HAKO_CONDUCTOR_STATUS_BYTES + 1];
	size_t len = 0;
	uint64_t seq = 0;
	int r = hako_channel_read(ch, buf, HAKO_CONDUCTOR_STATUS_BYTES, &len, &seq);
	if (r != 0) {
		return r;
	}
	if (len == 0 || seq == 0) {
		return HAKO_EAGAIN;
	}
	/* The node writes the NUL; a channel of someone else's may not. */
	buf[len < HAKO_CONDUCTOR_STATUS_BYTES ? len : HAKO_CONDUCTOR_STATUS_BYTES] = '\0';
	json_t *o = json_loads(buf, JSON_REJECT_DUPLICATES, NULL);
	json_t *peers = json_object_get(o, "peers");
	if (!json_is_object(o) || !json_is_array(peers) ||
	    !json_is_string(json_object_get(o, "node"))) {
		json_decref(o);
		return HAKO_EPROTO;
	}
	out->seq = seq;
	str_of(o, "node", out->node_id, sizeof(out->node_id));
	char role[16];
	str_of(o, "role", role, sizeof(role));
	out->role = strcmp(role, "server") == 0 ? HAKO_CONDUCTOR_SERVER : HAKO_CONDUCTOR_CLIENT;
	str_of(o, "server", out->server_id, sizeof(out->server_id));
	out->dmax_usec = int_of(o, "dmax_usec");
	out->world_time_usec = int_of(o, "world_time_usec");
	out->garbage_unknown = (uint64_t)int_of(o, "garbage_unknown");
	char auth[16];
	str_of(o, "auth", auth, sizeof(auth));
	out->auth =
	    strcmp(auth, "none") == 0 ? HAKO_CONDUCTOR_AUTH_NONE : HAKO_CONDUCTOR_AUTH_CURVE;
	out->auth_refused = (uint64_t)int_of(o, "auth_refused");
	size_t n = json_array_size(peers);
	for (size_t i = 0; i < n && i < HAKO_CONDUCTOR_MAX_CLIENTS; i++) {
		json_t *p = json_array_get(peers, i);
		hako_conductor_peer_stats_t *s = &out->peers[out->peer_count++];
		str_of(p, "id", s->node_id, sizeof(s->node_id));
		s->joined = (int)int_of(p, "joined");
		s->connected = (int)int_of(p, "connected");
		s->known_time = int_of(p, "known_time_usec");
		s->last_heard_usec = int_of(p, "last_heard_usec");
		s->samples = (uint64_t)int_of(p, "samples");
		s->drift_p50_usec = int_of(p, "drift_p50_usec");
		s->drift_p95_usec = int_of(p, "drift_p95_usec");
		s->drift_max_usec = int_of(p, "drift_max_usec");
		s->age_p50_usec = int_of(p, "age_p50_usec");
		s->age_max_usec = int_of(p, "age_max_usec");
		s->messages_in = (uint64_t)int_of(p, "in");
		s->messages_out = (uint64_t)int_of(p, "out");
		s->garbage = (uint64_t)int_of(p, "garbage");
		s->restarts = (uint32_t)int_of(p, "restarts");
	}
	json_decref(o);
	return 0;
}
