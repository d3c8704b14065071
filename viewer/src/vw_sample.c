/* The sampler: reads a domain's info, assets, the channel list with each channel's write
 * number and rate, and RD ownership, at the server's pace (10 Hz by default). A channel's value
 * is read (and converted to JSON through the registry) only when a session asks for it, once
 * per write however many ask. It only reads: the seqlock channels never make a writer wait. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hako/conductor.h"
#include "hako/log.h"
#include "hako/msg.h"
#include "hako/pdu.h"
#include "hako/pdudef.h"
#include "hako/rd.h"

#include "viewer.h"

#define ATTACH_RETRY_USEC 500000
#define RATE_WINDOW_USEC  500000
#define RTF_WINDOW_USEC   1000000
#define RAW_MAX           (4u << 20) /* a channel larger than this is listed, not read */

struct vw_sampler {
	char domain[HAKO_NAME_MAX];
	hako_pdudef_t *def;
	hako_msg_registry_t *reg;
	hako_rd_config_t *rdcfg;
	hako_rd_node_t *rd;
	hako_domain_t *dom;
	int master_pid;
	hako_time_t next_attach;
	hako_time_t prev_world, prev_wall;
	uint32_t prev_reset;
	hako_channel_info_t *list;
	int list_cap;
	int asset_cap;
	int chan_cap;
	hako_channel_t *fed;  /* the conductor's status channel, NULL until there is one */
	uint64_t fed_seq;     /* the write behind st.federation */
	hako_time_t fed_look; /* when to look for the channel again */
	vw_state_t st;
};

/* Library calls that log why they fail (hako_domain_open) would repeat it at every retry. */
static hako_log_level_t quiet_begin(void)
{
	hako_log_level_t lvl = HAKO_LOG_OFF;
	for (int l = HAKO_LOG_DEBUG; l < HAKO_LOG_OFF; l++) {
		if (hako_log_enabled((hako_log_level_t)l)) {
			lvl = (hako_log_level_t)l;
			break;
		}
	}
	hako_log_set_level(HAKO_LOG_OFF);
	return lvl;
}

static void channel_clear(vw_channel_t *c)
{
	free(c->json);
	free(c->raw);
	memset(c, 0, sizeof(*c));
}

static void detach(vw_sampler_t *s)
{
	for (int i = 0; i < s->st.nchannels; i++) {
		channel_clear(&s->st.channels[i]);
	}
	if (s->st.nchannels > 0) {
		s->st.list_version++;
	}
	s->st.nchannels = 0;
	s->st.nassets = 0;
	hako_rd_node_close(s->rd);
	s->rd = NULL;
	hako_domain_close(s->dom);
	s->dom = NULL;
	s->fed = NULL; /* a handle of the closed domain */
	s->fed_seq = 0;
	s->fed_look = 0;
	s->st.federation[0] = '\0';
	s->st.attached = 0;
	s->st.rtf = -1.0;
	s->prev_world = -1;
}

int vw_sampler_create(const vw_sampler_config_t *cfg, vw_sampler_t **out, char *why, size_t len)
{
	vw_sampler_t *s = calloc(1, sizeof(*s));
	hako_error_t err;
	char msg[1024];
	if (s == NULL) {
		snprintf(why, len, "out of memory");
		return HAKO_ENOMEM;
	}
	snprintf(s->domain, sizeof(s->domain), "%s", cfg->domain);
	snprintf(s->st.info.name, sizeof(s->st.info.name), "%s", cfg->domain);
	s->st.rtf = -1.0;
	s->st.control = 1;
	s->prev_world = -1;
	int r = hako_msg_registry_create(&s->reg);
	if (r == 0 && cfg->pdudef != NULL && cfg->pdudef[0] != '\0') {
		r = hako_pdudef_load(cfg->pdudef, &s->def, &err);
		if (r != 0) {
			snprintf(why, len, "%s", hako_error_format(&err, msg, sizeof(msg)));
		}
	}
	if (r == 0 && cfg->rd != NULL && cfg->rd[0] != '\0') {
		r = hako_rd_config_load(cfg->rd, &s->rdcfg, &err);
		if (r != 0) {
			snprintf(why, len, "%s", hako_error_format(&err, msg, sizeof(msg)));
		} else if (s->def == NULL && s->rdcfg->pdudef_path[0] != '\0') {
			/* The RD config names the pdudef of its EUs: their types come with it. */
			r = hako_pdudef_load(s->rdcfg->pdudef_path, &s->def, &err);
			if (r != 0) {
				snprintf(why, len, "%s", hako_error_format(&err, msg, sizeof(msg)));
			}
		}
	}
	if (r == 0 && s->rdcfg != NULL) {
		s->st.eus = calloc(s->rdcfg->eu_count ? s->rdcfg->eu_count : 1, sizeof(vw_eu_t));
		if (s->st.eus == NULL) {
			r = HAKO_ENOMEM;
			snprintf(why, len, "out of memory");
		}
	}
	if (r != 0) {
		vw_sampler_destroy(s);
		return r;
	}
	*out = s;
	return 0;
}

void vw_sampler_destroy(vw_sampler_t *s)
{
	if (s == NULL) {
		return;
	}
	detach(s);
	free(s->st.channels);
	free(s->st.assets);
	free(s->st.eus);
	free(s->list);
	hako_rd_config_free(s->rdcfg);
	hako_pdudef_free(s->def);
	hako_msg_registry_destroy(s->reg);
	free(s);
}

vw_state_t *vw_sampler_state(vw_sampler_t *s)
{
	return &s->st;
}

hako_domain_t *vw_sampler_domain(vw_sampler_t *s)
{
	return s->dom;
}

vw_channel_t *vw_sampler_channel(vw_sampler_t *s, const char *robot, int32_t id)
{
	for (int i = 0; i < s->st.nchannels; i++) {
		vw_channel_t *c = &s->st.channels[i];
		if (c->id == id && strcmp(c->robot, robot) == 0) {
			return c;
		}
	}
	return NULL;
}

static int attach(vw_sampler_t *s, hako_time_t now)
{
	if (now < s->next_attach) {
		return -1;
	}
	s->next_attach = now + ATTACH_RETRY_USEC;
	hako_log_level_t lvl = quiet_begin();
	int r = hako_domain_open(s->domain, &s->dom);
	hako_log_set_level(lvl);
	if (r != 0) {
		s->dom = NULL;
		return -1;
	}
	hako_domain_info_t info;
	if (hako_domain_get_info(s->dom, &info) != 0 || !info.master_alive) {
		hako_domain_close(s->dom);
		s->dom = NULL;
		return -1;
	}
	s->master_pid = info.master_pid;
	if (s->rdcfg != NULL) {
		r = hako_rd_node_open(s->dom, s->rdcfg, 0, NULL, &s->rd);
		if (r != 0) {
			HAKO_WARN("hako-viewer: cannot follow the RD config %s in domain '%s': %s",
			          s->rdcfg->path, s->domain, hako_strerror(r));
			s->rd = NULL;
		}
	}
	HAKO_INFO("hako-viewer: attached to domain '%s' (conductor pid %d)", s->domain,
	          info.master_pid);
	return 0;
}

static void set_type(vw_sampler_t *s, vw_channel_t *c)
{
	const hako_pdudef_pdu_t *p =
	    s->def != NULL ? hako_pdudef_find_channel(s->def, c->robot, c->id) : NULL;
	if (p == NULL) {
		return;
	}
	snprintf(c->name, sizeof(c->name), "%s", p->name);
	snprintf(c->type, sizeof(c->type), "%s", p->type);
}

/* The map draws the Twist channels, but of a robot that has one named pos, position or pose
 * only that one (a drone's velocity is a Twist too). */
static int position_name(const char *name)
{
	return strcasecmp(name, "pos") == 0 || strcasecmp(name, "position") == 0 ||
	       strcasecmp(name, "pose") == 0;
}

static void mark_positions(vw_state_t *st)
{
	for (int i = 0; i < st->nchannels; i++) {
		vw_channel_t *c = &st->channels[i];
		c->position = strcmp(c->type, "geometry_msgs/Twist") == 0;
		if (!c->position || position_name(c->name)) {
			continue;
		}
		for (int j = 0; j < st->nchannels; j++) {
			const vw_channel_t *o = &st->channels[j];
			if (j != i && strcmp(o->type, "geometry_msgs/Twist") == 0 &&
			    position_name(o->name) && strcmp(o->robot, c->robot) == 0) {
				c->position = 0;
				break;
			}
		}
	}
}

/* Keep the channel list in the domain's order; a channel keeps its cache while it is listed. */
static int sync_channels(vw_sampler_t *s, int n)
{
	vw_state_t *st = &s->st;
	int same = n == st->nchannels;
	for (int i = 0; same && i < n; i++) {
		same = st->channels[i].id == s->list[i].channel_id &&
		       strcmp(st->channels[i].robot, s->list[i].robot) == 0;
	}
	if (same) {
		return 0;
	}
	vw_channel_t *next = calloc((size_t)(n ? n : 1), sizeof(*next));
	if (next == NULL) {
		return -1;
	}
	for (int i = 0; i < n; i++) {
		vw_channel_t *old = NULL;
		for (int j = 0; j < st->nchannels; j++) {
			if (st->channels[j].id == s->list[i].channel_id &&
			    strcmp(st->channels[j].robot, s->list[i].robot) == 0) {
				old = &st->channels[j];
				break;
			}
		}
		if (old != NULL) {
			next[i] = *old;
			memset(old, 0, sizeof(*old)); /* moved */
			continue;
		}
		vw_channel_t *c = &next[i];
		snprintf(c->robot, sizeof(c->robot), "%s", s->list[i].robot);
		c->id = s->list[i].channel_id;
		c->size = s->list[i].size;
		c->rate_wall = hako_now_usec();
		c->eu = -1;
		set_type(s, c);
		if (hako_channel_lookup(s->dom, c->robot, c->id, &c->ch) != 0) {
			c->ch = NULL;
		}
	}
	for (int j = 0; j < st->nchannels; j++) {
		channel_clear(&st->channels[j]);
	}
	free(st->channels);
	st->channels = next;
	st->nchannels = n;
	mark_positions(st);
	st->list_version++;
	return 0;
}

static void update_rate(vw_channel_t *c, uint64_t seq, hako_time_t now)
{
	if (now - c->rate_wall >= RATE_WINDOW_USEC) {
		uint64_t d = seq >= c->rate_seq ? seq - c->rate_seq : seq;
		c->rate_hz = (double)d * 1e6 / (double)(now - c->rate_wall);
		c->rate_seq = seq;
		c->rate_wall = now;
	}
	if (seq > c->seq || seq < c->raw_seq) { /* a reset starts the numbers over */
		c->seq = seq;
	}
}

void vw_sampler_refresh(vw_sampler_t *s, vw_channel_t *c)
{
	(void)s;
	if (c->ch != NULL) {
		uint64_t seq = hako_channel_seq(c->ch);
		if (seq > c->seq || seq < c->raw_seq) {
			c->seq = seq;
		}
	}
}

hako_time_t vw_sampler_world_time(vw_sampler_t *s)
{
	if (s->dom != NULL) {
		s->st.info.world_time = hako_domain_world_time(s->dom);
	}
	return s->st.info.world_time;
}

int vw_sampler_read(vw_sampler_t *s, vw_channel_t *c)
{
	(void)s;
	if (c->ch == NULL || c->size > RAW_MAX || c->seq == 0) {
		return -1;
	}
	if (c->raw != NULL && c->raw_seq == c->seq) {
		return 0;
	}
	if (c->raw == NULL) {
		c->raw = malloc(c->size ? c->size : 1);
		if (c->raw == NULL) {
			return -1;
		}
	}
	size_t len = 0;
	uint64_t got = 0;
	if (hako_channel_read(c->ch, c->raw, c->size, &len, &got) != 0) {
		c->raw_len = 0;
		c->raw_seq = 0;
		return -1;
	}
	c->raw_len = len;
	c->raw_seq = got;
	c->seq = got;
	c->json_done = 0;
	return 0;
}

const char *vw_sampler_json(vw_sampler_t *s, vw_channel_t *c)
{
	if (vw_sampler_read(s, c) != 0) {
		return c->json;
	}
	if (c->json_done && c->json_seq == c->raw_seq) {
		return c->json;
	}
	free(c->json);
	c->json = NULL;
	c->too_big = 0;
	c->json_done = 1;
	c->json_seq = c->raw_seq;
	const hako_msg_type_t *type = NULL;
	hako_error_t err;
	if (c->type[0] == '\0' || c->raw_len == 0 ||
	    hako_msg_registry_get(s->reg, c->type, &type, &err) != 0) {
		return NULL;
	}
	char *json = NULL;
	if (hako_pdu_to_json(type, c->raw, c->raw_len, 0, &json, &err) != 0) {
		return NULL;
	}
	if (strlen(json) > VW_VALUE_MAX) {
		free(json);
		c->too_big = 1;
		return NULL;
	}
	c->json = json;
	return json;
}

static void sample_rd(vw_sampler_t *s)
{
	vw_state_t *st = &s->st;
	int before = st->neus;
	st->neus = 0;
	if (s->rd == NULL) {
		st->rd_version += before != 0;
		return;
	}
	for (size_t i = 0; i < s->rdcfg->eu_count; i++) {
		const hako_rd_eu_config_t *ec = &s->rdcfg->eus[i];
		hako_rd_eu_state_t es;
		if (hako_rd_get_state(s->rd, ec->id, &es) != 0) {
			continue;
		}
		vw_eu_t *e = &st->eus[st->neus];
		if (e->id != ec->id || e->status != (int)es.status || e->epoch != es.epoch ||
		    e->owner != es.curr_owner || e->next_owner != es.next_owner) {
			st->rd_version++;
		}
		if (e->id == ec->id && e->name[0] != '\0' && e->owner != es.curr_owner) {
			vw_handoff_t *h = &st->handoffs[st->nhandoffs % VW_HANDOFFS];
			h->world_time = st->info.world_time;
			h->eu = ec->id;
			h->from = e->owner;
			h->to = es.curr_owner;
			h->epoch = es.epoch;
			st->nhandoffs++;
		}
		snprintf(e->name, sizeof(e->name), "%s", ec->name);
		snprintf(e->robot, sizeof(e->robot), "%s", ec->robot);
		e->id = ec->id;
		e->status = (int)es.status;
		e->epoch = es.epoch;
		e->owner = es.curr_owner;
		e->next_owner = es.next_owner;
		st->neus++;
	}
	st->rd_version += before != st->neus;
}

/* Each position channel's EU (for the map's owner colours), searched again only when the hint
 * no longer names the channel's robot. */
static void link_eus(vw_state_t *st)
{
	for (int i = 0; i < st->nchannels; i++) {
		vw_channel_t *c = &st->channels[i];
		if (!c->position || (c->eu >= 0 && c->eu < st->neus &&
		                     strcmp(st->eus[c->eu].robot, c->robot) == 0)) {
			continue;
		}
		c->eu = -1;
		for (int k = 0; k < st->neus; k++) {
			if (strcmp(st->eus[k].robot, c->robot) == 0) {
				c->eu = k;
				break;
			}
		}
	}
}

/* A federation node's conductor writes its status in its domain: the viewer shows the node's
 * drift against each peer. Read with the conductor's reader (hako/conductor.h) and passed on
 * as the JSON it formats, so the page sees the keys the status contract names. */
static void sample_federation(vw_sampler_t *s, hako_time_t now)
{
	vw_state_t *st = &s->st;
	if (s->fed == NULL) {
		if (now < s->fed_look) {
			return;
		}
		s->fed_look = now + 2000000; /* a node may be linked later: look again */
		if (hako_channel_lookup(s->dom, HAKO_CONDUCTOR_STATUS_ROBOT, 0, &s->fed) != 0) {
			s->fed = NULL;
			st->federation[0] = '\0';
			return;
		}
	}
	/* The status is rewritten every 200 ms: read and parse it only when it was. */
	uint64_t seq = hako_channel_seq(s->fed);
	if (seq == s->fed_seq) {
		return;
	}
	static hako_conductor_status_t fs;
	int r = hako_conductor_status_read(s->dom, &fs);
	if (r == HAKO_EAGAIN) {
		return; /* right after a reset: written again at once */
	}
	s->fed_seq = r == 0 ? fs.seq : seq; /* not a status: not parsed again until rewritten */
	if (r != 0 ||
	    hako_conductor_status_format(&fs, st->federation, sizeof(st->federation), NULL) != 0) {
		st->federation[0] = '\0';
	}
}

void vw_sampler_tick(vw_sampler_t *s)
{
	vw_state_t *st = &s->st;
	hako_time_t now = hako_now_usec();
	if (s->dom == NULL && attach(s, now) != 0) {
		st->attached = 0;
		return;
	}
	hako_domain_info_t info;
	if (hako_domain_get_info(s->dom, &info) != 0 || !info.master_alive ||
	    info.master_pid != s->master_pid) {
		HAKO_INFO("hako-viewer: domain '%s': its conductor is gone", s->domain);
		detach(s);
		s->next_attach = now; /* a new conductor may be there already */
		return;
	}
	st->info = info;
	st->attached = 1;
	/* Over a second at least: a 100 ms sample of a paced clock is mostly jitter. */
	if (s->prev_world < 0 || info.reset_count != s->prev_reset ||
	    info.world_time < s->prev_world) {
		st->rtf = -1.0;
		s->prev_world = info.world_time;
		s->prev_wall = now;
		s->prev_reset = info.reset_count;
	} else if (now - s->prev_wall >= RTF_WINDOW_USEC) {
		st->rtf = (double)(info.world_time - s->prev_world) / (double)(now - s->prev_wall);
		s->prev_world = info.world_time;
		s->prev_wall = now;
	}

	if (s->asset_cap < (int)info.max_assets) {
		hako_asset_info_t *a = realloc(st->assets, info.max_assets * sizeof(*a));
		if (a == NULL) {
			return;
		}
		st->assets = a;
		s->asset_cap = (int)info.max_assets;
	}
	int n = 0;
	if (hako_domain_list_assets(s->dom, st->assets, s->asset_cap, &n) != 0) {
		n = 0;
	}
	st->nassets = n < s->asset_cap ? n : s->asset_cap;
	sample_federation(s, now);

	n = 0;
	if (s->list_cap < (int)info.channel_count || s->list == NULL) {
		int cap = (int)info.channel_count + 16;
		hako_channel_info_t *l = realloc(s->list, (size_t)cap * sizeof(*l));
		if (l == NULL) {
			return;
		}
		s->list = l;
		s->list_cap = cap;
	}
	if (hako_domain_list_channels(s->dom, s->list, s->list_cap, &n) != 0) {
		n = 0;
	}
	n = n < s->list_cap ? n : s->list_cap;
	if (sync_channels(s, n) != 0) {
		return;
	}
	for (int i = 0; i < n; i++) {
		update_rate(&st->channels[i], s->list[i].seq, now);
	}
	sample_rd(s);
	link_eus(st);
}
