/* Hakoniwa's hako_asset.h over the handle API: one process-default domain and asset. */
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/hako_asset.h"
#include "hako/log.h"
#include "hako/pdudef.h"
#include "compat.h"

struct recv_event {
	hako_channel_t *ch;
	uint64_t seen;
	uint32_t resets; /* reset count when `seen` was taken: a reset restarts the numbers */
	void (*on_recv)(int);
	int pending; /* hako_asset_set_data_recv_event_pending: writes wait for the resume */
};

/* The documented process-default handle behind the compatible API. */
static struct {
	pthread_mutex_t lock;
	hako_domain_t *dom;
	hako_member_t *member;
	hako_asset_callbacks_t cb;
	struct recv_event *events;
	int event_count;
	int event_cap;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int last_error;
static _Thread_local char last_message[600];

static int errno_of(int code)
{
	switch (code) {
	case HAKO_ENOENT: return ENOENT;
	case HAKO_EINTR: return EINTR;
	case HAKO_ENOMEM: return ENOMEM;
	case HAKO_EEXIST: return EEXIST;
	case HAKO_ENAMETOOLONG: return ENAMETOOLONG;
	case HAKO_ENOSPC: return ENOSPC;
	case HAKO_ETIMEDOUT: return ETIMEDOUT;
	case HAKO_EIO:
	case HAKO_ENOMASTER:
	case HAKO_ECRASHED: return EIO;
	default: return EINVAL;
	}
}

static void set_last(int code, const char *fmt, va_list ap)
{
	vsnprintf(last_message, sizeof(last_message), fmt, ap);
	last_error = code;
	HAKO_ERROR("%s", last_message);
}

/* Hakoniwa returns positive errno values; keep hako's code for hako_asset_last_error. */
static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set_last(code, fmt, ap);
	va_end(ap);
	return errno_of(code);
}

/* A blocking call ended because the run did (stop, reset, error) or its caller asked (a forced
 * stop): EINTR, as in Hakoniwa. Not an error to log, but hako_asset_last_error says why rather
 * than what failed before. */
static int interrupted(const char *why)
{
	snprintf(last_message, sizeof(last_message), "%s", why);
	last_error = HAKO_EINTR;
	return EINTR;
}

int hakoi_compat_fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set_last(code, fmt, ap);
	va_end(ap);
	return errno_of(code);
}

int hako_asset_last_error(const char **message)
{
	if (message != NULL) {
		*message = last_message;
	}
	return last_error;
}

hako_domain_t *hako_asset_domain(void)
{
	return g.dom;
}

hako_member_t *hako_asset_member(void)
{
	return g.member;
}

/* What to do about a channel that cannot be created, in the user's terms. */
static const char *channel_hint(hako_domain_t *dom, int r)
{
	hako_domain_info_t info;
	if (r == HAKO_ESIZE) {
		return " (another pdudef declared this channel with another size; "
		       "every asset must use the same PDU sizes)";
	}
	if (r == HAKO_ENOSPC && hako_domain_get_info(dom, &info) == 0 &&
	    info.channel_count >= info.max_channels) {
		return " (the domain's channel table is full: start the conductor with a larger "
		       "HAKO_MAX_CHANNELS or max_channels)";
	}
	if (r == HAKO_ENOSPC) {
		return " (the domain's PDU arena is full: start the conductor with a larger "
		       "HAKO_ARENA_BYTES or arena_bytes)";
	}
	return "";
}

static int create_channels(hako_domain_t *dom, const char *config_path)
{
	hako_pdudef_t *def = NULL;
	hako_error_t err;
	char msg[1200];
	int r = hako_pdudef_load(config_path, &def, &err);
	if (r != 0) {
		return fail(r, "hako_asset_register: %s",
		            hako_error_format(&err, msg, sizeof(msg)));
	}
	for (size_t i = 0; i < def->robot_count; i++) {
		const hako_pdudef_robot_t *rb = &def->robots[i];
		for (size_t j = 0; j < rb->pdu_count; j++) {
			const hako_pdudef_pdu_t *p = &rb->pdus[j];
			hako_channel_t *ch;
			r = hako_channel_create(dom, rb->name, p->channel_id, p->pdu_size, &ch);
			if (r != 0) {
				/* Report before freeing: the names live in the pdudef. */
				r = fail(
				    r,
				    "hako_asset_register: %s: channel %s/%s (id %d, %u bytes): "
				    "%s%s",
				    config_path, rb->name, p->name, p->channel_id, p->pdu_size,
				    hako_strerror(r), channel_hint(dom, r));
				hako_pdudef_free(def);
				return r;
			}
		}
	}
	hako_pdudef_free(def);
	return 0;
}

int hako_asset_register(const char *asset_name, const char *config_path,
                        hako_asset_callbacks_t *callbacks, hako_time_t delta_usec,
                        HakoAssetModelType model)
{
	(void)model; /* unused, as in Hakoniwa */
	if (asset_name == NULL) {
		return fail(HAKO_EINVAL, "hako_asset_register: asset name is NULL");
	}
	if (delta_usec < HAKO_ASSET_MIN_DELTA_TIME_USEC) {
		return fail(HAKO_EINVAL, "hako_asset_register: delta_usec must be >= 1");
	}
	if (callbacks != NULL && callbacks->on_simulation_step != NULL &&
	    callbacks->on_manual_timing_control != NULL) {
		return fail(HAKO_EINVAL, "hako_asset_register: set on_simulation_step or "
		                         "on_manual_timing_control, not both");
	}
	pthread_mutex_lock(&g.lock);
	int r;
	if (g.member != NULL) {
		pthread_mutex_unlock(&g.lock);
		return fail(HAKO_EEXIST,
		            "hako_asset_register: this process already registered '%s'",
		            hako_member_name(g.member));
	}
	const char *dname = hako_domain_default_name();
	if (g.dom == NULL && (r = hako_domain_open(dname, &g.dom)) != 0) {
		pthread_mutex_unlock(&g.lock);
		if (r != HAKO_ENOENT) {
			/* The segment is there (another user's, corrupted...): the reason was
			 * logged by hako_domain_open. */
			return fail(r, "hako_asset_register: cannot join domain '%s': %s", dname,
			            hako_strerror(r));
		}
		return fail(HAKO_ENOMASTER,
		            "hako_asset_register: no conductor for domain '%s'; start one with "
		            "'hako-cmd conductor' or hako_conductor_start()",
		            dname);
	}
	if (config_path != NULL && (r = create_channels(g.dom, config_path)) != 0) {
		pthread_mutex_unlock(&g.lock);
		return r;
	}
	r = hako_member_register(g.dom, asset_name, delta_usec, &g.member);
	if (r != 0) {
		char why[400] = "";
		hako_domain_info_t info;
		if (r == HAKO_EINVAL && hako_domain_get_info(g.dom, &info) == 0 &&
		    hako_step_fits(delta_usec, info.delta_usec, info.max_delay_usec, why,
		                   sizeof(why)) == 0) {
			why[0] = '\0';
		}
		pthread_mutex_unlock(&g.lock);
		return fail(r, "hako_asset_register: asset '%s' in domain '%s': %s", asset_name,
		            dname, why[0] != '\0' ? why : hako_strerror(r));
	}
	memset(&g.cb, 0, sizeof(g.cb));
	if (callbacks != NULL) {
		g.cb = *callbacks;
	}
	pthread_mutex_unlock(&g.lock);
	return 0;
}

/* Attach without registering. The domain is opened only once per process. */
static int attach(const char *who)
{
	int r = 0;
	pthread_mutex_lock(&g.lock);
	if (g.dom == NULL) {
		r = hako_domain_open(hako_domain_default_name(), &g.dom);
	}
	pthread_mutex_unlock(&g.lock);
	if (r == HAKO_ENOENT) {
		return fail(HAKO_ENOMASTER,
		            "%s: no conductor for domain '%s'; start one with 'hako-cmd conductor' "
		            "or hako_conductor_start()",
		            who, hako_domain_default_name());
	}
	if (r != 0) {
		return fail(r == HAKO_ENOMEM ? r : HAKO_EIO, "%s: cannot join domain '%s': %s", who,
		            hako_domain_default_name(), hako_strerror(r));
	}
	return 0;
}

int hako_asset_attach_core(void)
{
	return attach("hako_asset_attach_core");
}

int hako_initialize_for_external(void)
{
	if (g.dom != NULL) {
		return fail(HAKO_EIO, "hako_initialize_for_external: already attached");
	}
	return attach("hako_initialize_for_external");
}

int hako_asset_attach_core_with_name(const char *asset_name, const char *config_path)
{
	if (g.dom != NULL) {
		return 0;
	}
	if (asset_name == NULL || asset_name[0] == '\0') {
		return fail(HAKO_EINVAL, "hako_asset_attach_core_with_name: no asset name");
	}
	if (config_path == NULL) {
		return fail(HAKO_ENOENT, "hako_asset_attach_core_with_name: no pdudef");
	}
	hako_pdudef_t *def = NULL;
	hako_error_t err;
	char msg[1200];
	int r = hako_pdudef_load(config_path, &def, &err);
	if (r != 0) {
		return fail(r, "hako_asset_attach_core_with_name(%s): %s", asset_name,
		            hako_error_format(&err, msg, sizeof(msg)));
	}
	hako_pdudef_free(def);
	return attach("hako_asset_attach_core_with_name");
}

int hako_asset_unregister(void)
{
	hakoi_service_forget(); /* its channel handles belong to the domain closed here */
	pthread_mutex_lock(&g.lock);
	hako_member_unregister(g.member);
	g.member = NULL;
	free(g.events);
	g.events = NULL;
	g.event_count = g.event_cap = 0;
	hako_domain_close(g.dom);
	g.dom = NULL;
	pthread_mutex_unlock(&g.lock);
	return 0;
}

/* 1 if the event's channel was written since it was last consumed (and consume it). */
static int consume_recv_event(struct recv_event *e)
{
	uint32_t resets = hako_domain_reset_count(g.dom);
	if (resets != e->resets) {
		e->resets = resets;
		e->seen = 0;
	}
	uint64_t s = hako_channel_seq(e->ch);
	if (s == e->seen) {
		return 0;
	}
	e->seen = s;
	return 1;
}

static void dispatch_recv_events(void)
{
	for (int i = 0; i < g.event_count; i++) {
		struct recv_event *e = &g.events[i];
		if (e->on_recv != NULL && !e->pending && consume_recv_event(e)) {
			e->on_recv(i);
		}
	}
}

static int one_step(int (*is_force_stop)(void))
{
	int r = hakoi_member_step_wait_forced(g.member, is_force_stop);
	if (r != 0) {
		return r;
	}
	dispatch_recv_events();
	return 0;
}

/* After the run was interrupted: acknowledge STOP, wait for RESET (also after an error), run
 * on_reset and acknowledge it. */
static int finish_run(int (*is_force_stop)(void))
{
	hako_asset_context_t ctx = {NULL};
	for (;;) {
		int ev = HAKO_EVENT_NONE;
		int r = hako_member_wait_event(g.member, is_force_stop != NULL ? 100000 : -1, &ev);
		if (r == HAKO_ETIMEDOUT) {
			if (is_force_stop != NULL && is_force_stop()) {
				return interrupted("hako_asset_start: forced stop");
			}
			continue;
		}
		if (r != 0) {
			return fail(r, "hako_asset_start: %s", hako_strerror(r));
		}
		if (ev == HAKO_EVENT_STOP || ev == HAKO_EVENT_ERROR) {
			hako_member_ack(g.member, ev);
		} else if (ev == HAKO_EVENT_RESET) {
			if (g.cb.on_reset != NULL) {
				g.cb.on_reset(&ctx);
			}
			hako_member_ack(g.member, ev);
			return interrupted("hako_asset_start: the run ended with a reset");
		} else if (ev == HAKO_EVENT_START) {
			/* A start without a reset in between: do not consume it here. */
			return interrupted("hako_asset_start: the run ended; a new one starts");
		}
	}
}

/* After acknowledging START: wait until every asset did (the run is Running), as Hakoniwa does,
 * so no asset runs on before every other ran its on_initialize (a client's first request
 * written before the server's on_initialize created the server would not be taken). 0 when
 * Running, HAKO_EINTR when is_force_stop says so, HAKO_ESTATE when the run stopped or failed
 * instead. */
static int wait_running(int (*is_force_stop)(void))
{
	for (;;) {
		int st = hako_domain_state(g.dom);
		if (st == HAKO_STATE_RUNNING) {
			return 0;
		}
		if (st != HAKO_STATE_RUNNABLE) {
			return HAKO_ESTATE;
		}
		int r = hako_domain_wait_state(g.dom, HAKO_STATE_RUNNING, 100000);
		if (r == HAKO_ETIMEDOUT && is_force_stop != NULL && is_force_stop()) {
			return HAKO_EINTR;
		}
		if (r != 0 && r != HAKO_ETIMEDOUT) {
			return r;
		}
	}
}

int hako_asset_start_no_wait(int (*is_force_stop)(void))
{
	hako_asset_context_t ctx = {NULL};
	if (g.member == NULL) {
		return fail(HAKO_EINVAL, "hako_asset_start: no asset registered");
	}
	int ev = HAKO_EVENT_NONE;
	for (;;) {
		int r = hako_member_wait_event(g.member, 100000, &ev);
		if (r == 0 && ev == HAKO_EVENT_START) {
			break;
		}
		if (r == 0 && ev != HAKO_EVENT_NONE) {
			return finish_run(is_force_stop);
		}
		if (r != 0 && r != HAKO_ETIMEDOUT) {
			return fail(r, "hako_asset_start: %s", hako_strerror(r));
		}
		if (is_force_stop != NULL && is_force_stop()) {
			return interrupted("hako_asset_start: forced stop");
		}
	}
	if (g.cb.on_initialize != NULL) {
		g.cb.on_initialize(&ctx);
	}
	hako_member_ack(g.member, HAKO_EVENT_START);
	int r = wait_running(is_force_stop);
	if (r == HAKO_EINTR) {
		return interrupted("hako_asset_start: forced stop");
	}
	if (r != 0) {
		return finish_run(is_force_stop);
	}
	if (g.cb.on_manual_timing_control != NULL) {
		int ret = g.cb.on_manual_timing_control(&ctx);
		if (hako_domain_state(g.dom) == HAKO_STATE_RUNNING) {
			return ret; /* returned on its own while still running */
		}
	} else {
		for (;;) {
			if (one_step(is_force_stop) != 0) {
				break;
			}
			if (g.cb.on_simulation_step != NULL) {
				g.cb.on_simulation_step(&ctx);
			}
			hako_member_step_done(g.member);
		}
	}
	return finish_run(is_force_stop);
}

int hako_asset_start(void)
{
	return hako_asset_start_no_wait(NULL);
}

int hako_asset_usleep_no_wait(hako_time_t sleep_time_usec, int (*is_force_stop)(void))
{
	if (g.member == NULL) {
		return 0; /* no-op when not registered, as for Hakoniwa's external attachments */
	}
	hako_time_t dt = hako_member_delta(g.member);
	hako_time_t steps = sleep_time_usec <= 0 ? 1 : (sleep_time_usec + dt - 1) / dt;
	for (hako_time_t i = 0; i < steps; i++) {
		if (one_step(is_force_stop) != 0) {
			return interrupted(
			    "hako_asset_usleep: the run ended (stop, reset, error or "
			    "forced stop)");
		}
		hako_member_step_done(g.member);
	}
	return 0;
}

int hako_asset_usleep(hako_time_t sleep_time_usec)
{
	return hako_asset_usleep_no_wait(sleep_time_usec, NULL);
}

hako_time_t hako_asset_simulation_time(void)
{
	return g.dom != NULL ? hako_domain_world_time(g.dom) : 0;
}

hako_time_t hako_asset_current_time(void)
{
	return hako_member_time(g.member);
}

hako_time_t hako_asset_min_asset_time(void)
{
	hako_asset_info_t info[64];
	int n = 0;
	if (g.dom == NULL || hako_domain_list_assets(g.dom, info, 64, &n) != 0 || n == 0) {
		return 0;
	}
	hako_time_t min = info[0].time_usec;
	for (int i = 1; i < n && i < 64; i++) {
		if (info[i].time_usec < min) {
			min = info[i].time_usec;
		}
	}
	return min;
}

static int channel_of(const char *robo, HakoPduChannelIdType lch, hako_channel_t **ch)
{
	if (g.dom == NULL) {
		return HAKO_EINVAL;
	}
	return hako_channel_lookup(g.dom, robo, lch, ch);
}

int hako_asset_pdu_create(const char *robo_name, HakoPduChannelIdType lchannel, size_t pdu_size)
{
	hako_channel_t *ch;
	if (g.dom == NULL) {
		return fail(HAKO_EINVAL, "hako_asset_pdu_create: register first");
	}
	int r = hako_channel_create(g.dom, robo_name, lchannel, pdu_size, &ch);
	if (r != 0) {
		return fail(r, "hako_asset_pdu_create(%s, %d, %zu): %s", robo_name ? robo_name : "",
		            lchannel, pdu_size, hako_strerror(r));
	}
	return 0;
}

int hako_asset_pdu_read(const char *robo_name, HakoPduChannelIdType lchannel, char *buffer,
                        size_t buffer_len)
{
	hako_channel_t *ch;
	int r = channel_of(robo_name, lchannel, &ch);
	if (r != 0) {
		return fail(r, "hako_asset_pdu_read(%s, %d): %s", robo_name ? robo_name : "",
		            lchannel, hako_strerror(r));
	}
	if (buffer_len > hako_channel_size(ch)) {
		return fail(HAKO_ESIZE, "hako_asset_pdu_read(%s, %d): %zu bytes > channel size %zu",
		            robo_name, lchannel, buffer_len, hako_channel_size(ch));
	}
	size_t len = 0;
	r = hako_channel_read(ch, buffer, buffer_len, &len, NULL);
	if (r == HAKO_ETOOBIG) {
		r = 0; /* a shorter read of a longer PDU is what Hakoniwa does */
	}
	if (r == 0 && len < buffer_len) {
		memset(buffer + len, 0, buffer_len - len);
	}
	return r == 0 ? 0 : fail(r, "hako_asset_pdu_read: %s", hako_strerror(r));
}

int hako_asset_pdu_write(const char *robo_name, HakoPduChannelIdType lchannel, const char *buffer,
                         size_t buffer_len)
{
	hako_channel_t *ch;
	int r = channel_of(robo_name, lchannel, &ch);
	if (r != 0) {
		return fail(r, "hako_asset_pdu_write(%s, %d): %s", robo_name ? robo_name : "",
		            lchannel, hako_strerror(r));
	}
	r = hako_channel_write(ch, buffer, buffer_len);
	if (r != 0) {
		return fail(r == HAKO_ETOOBIG ? HAKO_ESIZE : r,
		            "hako_asset_pdu_write(%s, %d): %zu bytes: %s", robo_name, lchannel,
		            buffer_len,
		            r == HAKO_ETOOBIG ? "larger than the channel" : hako_strerror(r));
	}
	return 0;
}

int hako_asset_register_data_recv_event(const char *robo_name, HakoPduChannelIdType lchannel,
                                        void (*on_recv)(int), int *recv_event_id)
{
	hako_channel_t *ch;
	int r = channel_of(robo_name, lchannel, &ch);
	if (r != 0) {
		return fail(r, "hako_asset_register_data_recv_event(%s, %d): %s",
		            robo_name ? robo_name : "", lchannel, hako_strerror(r));
	}
	pthread_mutex_lock(&g.lock);
	if (g.event_count == g.event_cap) {
		int cap = g.event_cap == 0 ? 16 : g.event_cap * 2;
		struct recv_event *n = realloc(g.events, (size_t)cap * sizeof(*n));
		if (n == NULL) {
			pthread_mutex_unlock(&g.lock);
			return fail(HAKO_ENOMEM,
			            "hako_asset_register_data_recv_event: out of memory");
		}
		g.events = n;
		g.event_cap = cap;
	}
	int id = g.event_count++;
	g.events[id].ch = ch;
	g.events[id].resets = hako_domain_reset_count(g.dom);
	g.events[id].seen = hako_channel_seq(ch);
	g.events[id].on_recv = on_recv;
	g.events[id].pending = 0;
	pthread_mutex_unlock(&g.lock);
	if (recv_event_id != NULL) {
		*recv_event_id = id;
	}
	return 0;
}

int hako_asset_check_data_recv_event(const char *robo_name, HakoPduChannelIdType lchannel)
{
	hako_channel_t *ch;
	if (channel_of(robo_name, lchannel, &ch) != 0) {
		return ENOENT;
	}
	for (int i = 0; i < g.event_count; i++) {
		struct recv_event *e = &g.events[i];
		if (e->ch == ch && e->on_recv == NULL) {
			return !e->pending && consume_recv_event(e) ? 0 : ENOENT;
		}
	}
	return ENOENT;
}

static int set_pending(const char *who, int recv_event_id, int pending)
{
	if (g.dom == NULL) {
		return fail(HAKO_EINVAL, "%s: register or attach first", who);
	}
	if (recv_event_id < 0) {
		return fail(HAKO_EINVAL, "%s: recv event id %d", who, recv_event_id);
	}
	pthread_mutex_lock(&g.lock);
	int found = recv_event_id < g.event_count;
	if (found) {
		/* Resuming consumes nothing: a write while pending is still unseen, so it fires
		 * once now, as Hakoniwa's kept flag does. */
		g.events[recv_event_id].pending = pending;
	}
	pthread_mutex_unlock(&g.lock);
	if (!found) {
		return fail(HAKO_ENOENT, "%s: no recv event %d", who, recv_event_id);
	}
	return 0;
}

int hako_asset_set_data_recv_event_pending(int recv_event_id)
{
	return set_pending("hako_asset_set_data_recv_event_pending", recv_event_id, 1);
}

int hako_asset_set_data_recv_event_resume(int recv_event_id)
{
	return set_pending("hako_asset_set_data_recv_event_resume", recv_event_id, 0);
}

int hako_trigger_event(int trigger_event)
{
	if (g.dom == NULL) {
		return fail(HAKO_EINVAL, "hako_trigger_event: register first");
	}
	int r;
	switch (trigger_event) {
	case HAKO_TRIGGER_EVENT_ID_START: r = hako_domain_start(g.dom); break;
	case HAKO_TRIGGER_EVENT_ID_STOP: r = hako_domain_stop(g.dom); break;
	case HAKO_TRIGGER_EVENT_ID_RESET: r = hako_domain_reset(g.dom); break;
	default: return fail(HAKO_EINVAL, "hako_trigger_event: unknown event %d", trigger_event);
	}
	return r == 0 ? 0 : fail(r, "hako_trigger_event(%d): %s", trigger_event, hako_strerror(r));
}
