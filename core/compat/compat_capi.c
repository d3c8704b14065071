/* Hakoniwa's older C API (hako_capi.h) over the handle API: one process-default domain, the
 * assets this process registered through it, and the readers' positions behind
 * hako_asset_is_pdu_dirty. Hakoniwa's bool functions answer true on success.
 *
 * Hakoniwa's polling assets report their own clock (notify_simtime) instead of stepping under
 * the core's rule; they are ordinary members here whose clock this layer sets, and the world
 * rule bounds the world by it as by any asset. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/hako_capi.h"
#include "hako/log.h"
#include "compat.h"

/* World step and max delay of hako_master_init until hako_master_set_config_simtime (hako-cmd
 * conductor's default). */
#define CAPI_DEFAULT_DELTA_USEC 1000

/* An asset this process registered through this API. */
struct capi_asset {
	hako_member_t *m;
	hako_asset_callback_t cb;
	int has_cb;
	pthread_t thread; /* runs the callbacks of a callback-mode asset */
	_Atomic int quit;
};

/* Where one asset (by name, any process's) last read each channel: is_pdu_dirty. */
struct reader {
	char name[HAKO_NAME_MAX];
	uint64_t *seen;     /* by channel index: write number of the last read */
	uint32_t *resets;   /* ... and the reset count then (a reset restarts the numbers) */
	uint32_t nchannels; /* entries allocated */
};

struct recv_sub {
	hako_channel_t *ch;
	uint64_t seen;
	uint32_t resets;
	int pending;
};

static struct {
	pthread_mutex_t lock;
	hako_domain_t *dom;
	hako_master_t *master;
	hako_time_t last_world; /* what hako_master_execute saw last */
	struct capi_asset **assets;
	int nassets;
	struct reader *readers;
	int nreaders;
	struct recv_sub *subs;
	int nsubs;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int last_error;
static _Thread_local char last_message[600];

static bool fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_message, sizeof(last_message), fmt, ap);
	va_end(ap);
	last_error = code;
	HAKO_ERROR("%s", last_message);
	return false;
}

int hako_capi_last_error(const char **message)
{
	if (message != NULL) {
		*message = last_message;
	}
	return last_error;
}

static const char *str(const char *s)
{
	return s != NULL ? s : "(null)";
}

/* ---- the domain ---- */

static bool attach(const char *who)
{
	int r = 0;
	pthread_mutex_lock(&g.lock);
	if (g.dom == NULL) {
		r = hako_domain_open(hako_domain_default_name(), &g.dom);
	}
	pthread_mutex_unlock(&g.lock);
	if (r == HAKO_ENOENT) {
		return fail(HAKO_ENOMASTER,
		            "%s: no conductor for domain '%s' (start one with 'hako-cmd conductor' "
		            "or hako_master_init())",
		            who, hako_domain_default_name());
	}
	if (r != 0) {
		return fail(r, "%s: cannot join domain '%s': %s", who, hako_domain_default_name(),
		            hako_strerror(r));
	}
	return true;
}

static int member_valid(const hako_member_t *m)
{
	return atomic_load(&m->slot->in_use) && atomic_load(&m->slot->generation) == m->generation;
}

/* The slot of a registered asset of the domain (of any process), or NULL. Names are read
 * bounded: the segment is not trusted. */
static struct hakoi_asset *find_slot(const char *name)
{
	if (g.dom == NULL || name == NULL) {
		return NULL;
	}
	uint32_t hwm = hakoi_asset_hwm(g.dom);
	for (uint32_t i = 0; i < hwm; i++) {
		struct hakoi_asset *a = &g.dom->assets[i];
		if (atomic_load(&a->in_use) && strncmp(a->name, name, sizeof(a->name)) == 0) {
			return a;
		}
	}
	return NULL;
}

/* An asset this process registered through this API, or NULL. Lock held. */
static struct capi_asset *find_own_locked(const char *name)
{
	for (int i = 0; name != NULL && i < g.nassets; i++) {
		if (strcmp(hako_member_name(g.assets[i]->m), name) == 0) {
			return g.assets[i];
		}
	}
	return NULL;
}

static hako_member_t *find_own(const char *name)
{
	pthread_mutex_lock(&g.lock);
	struct capi_asset *a = find_own_locked(name);
	hako_member_t *m = a != NULL ? a->m : NULL;
	pthread_mutex_unlock(&g.lock);
	return m;
}

static bool channel(const char *who, const char *robo, HakoPduChannelIdType id, hako_channel_t **ch)
{
	if (!attach(who)) {
		return false;
	}
	int r = hako_channel_lookup(g.dom, str(robo), id, ch);
	if (r != 0) {
		return fail(r, "%s(%s, %d): %s", who, str(robo), id, hako_strerror(r));
	}
	return true;
}

/* ---- master ---- */

bool hako_master_init(void)
{
	hako_domain_config_t cfg;
	if (hako_domain_config_default(&cfg) != 0) {
		return fail(HAKO_ECONFIG, "hako_master_init: an invalid HAKO_* variable (logged)");
	}
	pthread_mutex_lock(&g.lock);
	if (g.master != NULL) {
		pthread_mutex_unlock(&g.lock);
		return true;
	}
	if (g.dom != NULL) {
		pthread_mutex_unlock(&g.lock);
		return fail(HAKO_EBUSY,
		            "hako_master_init: this process is attached to domain '%s' "
		            "as an asset: its conductor runs elsewhere",
		            hako_domain_name(g.dom));
	}
	const char *name = hako_domain_default_name();
	hako_master_config_t mc = {CAPI_DEFAULT_DELTA_USEC, CAPI_DEFAULT_DELTA_USEC, 0.0};
	int r = hako_domain_create(name, &cfg, &g.dom);
	if (r == 0 && (r = hako_master_start(g.dom, &mc, &g.master)) != 0) {
		hako_domain_close(g.dom);
		hako_domain_remove(name);
		g.dom = NULL;
	}
	g.last_world = 0;
	pthread_mutex_unlock(&g.lock);
	if (r != 0) {
		return fail(r, "hako_master_init(domain '%s'): %s", name, hako_strerror(r));
	}
	return true;
}

bool hako_master_execute(void)
{
	if (g.master == NULL) {
		return false;
	}
	hako_time_t w = hako_domain_world_time(g.dom);
	bool moved = w != g.last_world;
	g.last_world = w;
	return moved;
}

void hako_master_set_config_simtime(hako_time_t max_delay_time_usec, hako_time_t delta_time_usec)
{
	if (g.master == NULL) {
		fail(HAKO_ESTATE, "hako_master_set_config_simtime: call hako_master_init first");
		return;
	}
	if (delta_time_usec < 1 || max_delay_time_usec < delta_time_usec ||
	    max_delay_time_usec > HAKOI_MAX_STEP_USEC) {
		fail(HAKO_EINVAL,
		     "hako_master_set_config_simtime: need 1 <= delta (%lld) <= max delay (%lld) "
		     "<= 2^40 us",
		     (long long)delta_time_usec, (long long)max_delay_time_usec);
		return;
	}
	/* The master and every clock rule read these from the header at each use. */
	atomic_store(&g.dom->hdr->delta_usec, delta_time_usec);
	atomic_store(&g.dom->hdr->max_delay_usec, max_delay_time_usec);
	hakoi_try_advance(g.dom);
}

hako_time_t hako_master_get_max_deltay_time_usec(void)
{
	return g.dom != NULL ? atomic_load(&g.dom->hdr->max_delay_usec) : 0;
}

hako_time_t hako_master_get_delta_time_usec(void)
{
	return g.dom != NULL ? atomic_load(&g.dom->hdr->delta_usec) : 0;
}

/* ---- assets ---- */

bool hako_asset_init(void)
{
	return attach("hako_asset_init");
}

bool hako_asset_endpoint_attach_core(void)
{
	return attach("hako_asset_endpoint_attach_core");
}

static void (*callback_of(const hako_asset_callback_t *cb, int ev))(void)
{
	switch (ev) {
	case HAKO_EVENT_START: return cb->start;
	case HAKO_EVENT_STOP: return cb->stop;
	case HAKO_EVENT_RESET: return cb->reset;
	default: return NULL; /* ERROR: Hakoniwa has no callback for it, nor needs a feedback */
	}
}

/* Hakoniwa's proxy thread: each event, once, to its callback, which acknowledges it. */
static void *callback_main(void *arg)
{
	struct capi_asset *a = arg;
	hako_domain_t *dom = a->m->dom;
	int delivered = HAKO_EVENT_NONE;
	while (!atomic_load(&a->quit)) {
		uint32_t seen = hako_domain_changes(dom);
		int ev = hako_member_event(a->m);
		if (ev < 0) {
			break; /* removed (found dead): nothing more will come */
		}
		if (ev != delivered) {
			delivered = ev;
			void (*fn)(void) = callback_of(&a->cb, ev);
			if (fn != NULL) {
				fn();
			}
			continue;
		}
		/* An event stays pending until acknowledged: wait for the next change (events and
		 * transitions move the counter), heartbeating meanwhile. */
		hako_member_heartbeat(a->m);
		hako_domain_wait_change(dom, seen, HAKOI_WAIT_SLICE_USEC);
	}
	return NULL;
}

bool hako_capi_asset_register(const char *name, hako_asset_callback_t *callbacks)
{
	if (name == NULL || name[0] == '\0') {
		return fail(HAKO_EINVAL, "hako_capi_asset_register: no asset name");
	}
	if (callbacks != NULL &&
	    (callbacks->start == NULL || callbacks->stop == NULL || callbacks->reset == NULL)) {
		return fail(HAKO_EINVAL,
		            "hako_capi_asset_register(%s): callbacks need start, stop "
		            "and reset (or pass NULL for a polling asset)",
		            name);
	}
	if (!attach("hako_capi_asset_register")) {
		return false;
	}
	struct capi_asset *a = calloc(1, sizeof(*a));
	if (a == NULL) {
		return fail(HAKO_ENOMEM, "hako_capi_asset_register(%s): out of memory", name);
	}
	pthread_mutex_lock(&g.lock);
	struct capi_asset **n = realloc(g.assets, (size_t)(g.nassets + 1) * sizeof(*n));
	if (n != NULL) {
		g.assets = n; /* room for this one before it exists: nothing can fail after it */
	}
	pthread_mutex_unlock(&g.lock);
	if (n == NULL) {
		free(a);
		return fail(HAKO_ENOMEM, "hako_capi_asset_register(%s): out of memory", name);
	}
	/* The clock is the asset's own report: any step fits, the world's own is the natural one
	 * (shown by hako-cmd ls, and what a stop time counts in). */
	hako_time_t delta = atomic_load(&g.dom->hdr->delta_usec);
	int r = hako_member_register(g.dom, name, delta > 0 ? delta : 1, &a->m);
	if (r != 0) {
		free(a);
		return fail(r, "hako_capi_asset_register(%s): %s", name, hako_strerror(r));
	}
	/* In the table before its thread runs: a callback acknowledges by the asset's name. */
	pthread_mutex_lock(&g.lock);
	g.assets[g.nassets++] = a;
	pthread_mutex_unlock(&g.lock);
	if (callbacks != NULL) {
		a->cb = *callbacks;
		a->has_cb = 1;
		if (pthread_create(&a->thread, NULL, callback_main, a) != 0) {
			a->has_cb = 0;
			hako_capi_asset_unregister(name);
			return fail(HAKO_ENOMEM, "hako_capi_asset_register(%s): no thread", name);
		}
	}
	return true;
}

bool hako_asset_register_polling(const char *name)
{
	return hako_capi_asset_register(name, NULL);
}

bool hako_capi_asset_unregister(const char *name)
{
	pthread_mutex_lock(&g.lock);
	struct capi_asset *a = NULL;
	for (int i = 0; name != NULL && i < g.nassets; i++) {
		if (strcmp(hako_member_name(g.assets[i]->m), name) == 0) {
			a = g.assets[i];
			g.assets[i] = g.assets[--g.nassets];
			break;
		}
	}
	pthread_mutex_unlock(&g.lock);
	if (a == NULL) {
		return fail(HAKO_ENOENT,
		            "hako_capi_asset_unregister(%s): not an asset of this process",
		            str(name));
	}
	if (a->has_cb) {
		atomic_store(&a->quit, 1);
		pthread_join(a->thread, NULL); /* it looks at quit every wait slice */
	}
	hako_member_unregister(a->m);
	free(a);
	return true;
}

int hako_asset_get_event(const char *name)
{
	if (!attach("hako_asset_get_event")) {
		return HAKO_EVENT_ERROR;
	}
	hako_member_t *m = find_own(name);
	if (m != NULL) {
		/* Polling assets call this in their loop: it is their sign of life. */
		hako_member_heartbeat(m);
		int ev = hako_member_event(m);
		return ev < 0 ? HAKO_EVENT_ERROR : ev;
	}
	struct hakoi_asset *slot = find_slot(name);
	return slot != NULL ? (int)atomic_load(&slot->event) : HAKO_EVENT_ERROR;
}

void hako_asset_notify_simtime(const char *name, hako_time_t simtime)
{
	hako_member_t *m = find_own(name);
	if (m == NULL || !member_valid(m)) {
		fail(HAKO_ENOENT, "hako_asset_notify_simtime(%s): not an asset of this process",
		     str(name));
		return;
	}
	if (simtime < 0 || simtime > HAKOI_MAX_TIME_USEC) {
		fail(HAKO_EINVAL, "hako_asset_notify_simtime(%s): time %lld out of [0, 2^60]", name,
		     (long long)simtime);
		return;
	}
	struct hakoi_asset *a = m->slot;
	if (simtime > atomic_load(&a->time_usec)) {
		atomic_fetch_add_explicit(&a->steps, 1, memory_order_relaxed);
	}
	/* seq_cst, as a step's: pairs with the loads of the world rule in other processes. */
	atomic_store(&a->time_usec, simtime);
	hako_member_heartbeat(m);
	hakoi_try_advance(g.dom);
	if (atomic_load_explicit(&g.dom->hdr->stop_at, memory_order_relaxed) > 0) {
		hakoi_wake_master(g.dom); /* the run may be complete */
	}
}

hako_time_t hako_asset_get_worldtime(void)
{
	if (!attach("hako_asset_get_worldtime")) {
		return 0;
	}
	/* A polling asset waiting for the world asks this in its loop, and may report nothing
	 * else for long: it is alive as long as it asks. */
	pthread_mutex_lock(&g.lock);
	for (int i = 0; i < g.nassets; i++) {
		hako_member_heartbeat(g.assets[i]->m);
	}
	pthread_mutex_unlock(&g.lock);
	return hako_domain_world_time(g.dom);
}

hako_time_t hako_asset_get_min_asset_time(void)
{
	if (!attach("hako_asset_get_min_asset_time")) {
		return 0;
	}
	hako_time_t min = 0;
	int any = 0;
	uint32_t hwm = hakoi_asset_hwm(g.dom);
	for (uint32_t i = 0; i < hwm; i++) {
		struct hakoi_asset *a = &g.dom->assets[i];
		hako_time_t t = atomic_load(&a->time_usec);
		if (atomic_load(&a->in_use) && (!any || t < min)) {
			min = t;
			any = 1;
		}
	}
	return min;
}

static bool feedback(const char *who, const char *name, bool ok, int state, int event)
{
	hako_member_t *m = find_own(name);
	if (m == NULL) {
		return fail(HAKO_ENOENT, "%s(%s): not an asset of this process", who, str(name));
	}
	hako_member_heartbeat(m);
	int st = hako_domain_state(g.dom);
	if (st != state) {
		return fail(HAKO_ESTATE, "%s(%s): the domain is %s, not %s", who, name,
		            hako_state_name(st), hako_state_name(state));
	}
	if (!ok) {
		return true; /* a negative feedback: the transition waits, as Hakoniwa's does */
	}
	int r = hako_member_ack(m, event);
	return r == 0 ? true : fail(r, "%s(%s): %s", who, name, hako_strerror(r));
}

bool hako_asset_start_feedback(const char *asset_name, bool isOk)
{
	return feedback("hako_asset_start_feedback", asset_name, isOk, HAKO_STATE_RUNNABLE,
	                HAKO_EVENT_START);
}

bool hako_asset_stop_feedback(const char *asset_name, bool isOk)
{
	return feedback("hako_asset_stop_feedback", asset_name, isOk, HAKO_STATE_STOPPING,
	                HAKO_EVENT_STOP);
}

bool hako_asset_reset_feedback(const char *asset_name, bool isOk)
{
	return feedback("hako_asset_reset_feedback", asset_name, isOk, HAKO_STATE_RESETTING,
	                HAKO_EVENT_RESET);
}

/* ---- PDU channels ---- */

bool hako_asset_create_pdu_channel(HakoPduChannelIdType channel_id, size_t pdu_size)
{
	return fail(HAKO_ENOTSUP,
	            "hako_asset_create_pdu_channel(%d, %zu): a channel needs a robot name in "
	            "hako; use hako_asset_create_pdu_lchannel(robot, id, size)",
	            channel_id, pdu_size);
}

bool hako_asset_create_pdu_lchannel(const char *robo_name, HakoPduChannelIdType channel_id,
                                    size_t pdu_size)
{
	hako_channel_t *ch;
	if (!attach("hako_asset_create_pdu_lchannel")) {
		return false;
	}
	int r = hako_channel_create(g.dom, str(robo_name), channel_id, pdu_size, &ch);
	if (r != 0) {
		return fail(r, "hako_asset_create_pdu_lchannel(%s, %d, %zu): %s", str(robo_name),
		            channel_id, pdu_size, hako_strerror(r));
	}
	return true;
}

HakoPduChannelIdType hako_asset_get_pdu_channel(const char *robo_name,
                                                HakoPduChannelIdType channel_id)
{
	hako_channel_t *ch;
	return channel("hako_asset_get_pdu_channel", robo_name, channel_id, &ch)
	           ? hako_channel_index(ch)
	           : -1;
}

/* The reader record of an asset, made on first use. Lock held. */
static struct reader *reader_locked(const char *name, int index)
{
	struct reader *r = NULL;
	for (int i = 0; i < g.nreaders; i++) {
		if (strcmp(g.readers[i].name, name) == 0) {
			r = &g.readers[i];
			break;
		}
	}
	if (r == NULL) {
		struct reader *n = realloc(g.readers, (size_t)(g.nreaders + 1) * sizeof(*n));
		if (n == NULL) {
			return NULL;
		}
		g.readers = n;
		r = &g.readers[g.nreaders++];
		memset(r, 0, sizeof(*r));
		snprintf(r->name, sizeof(r->name), "%s", name);
	}
	if ((uint32_t)index >= r->nchannels) {
		uint32_t cap = (uint32_t)index + 1 < 64 ? 64 : (uint32_t)index + 1;
		uint64_t *seen = realloc(r->seen, cap * sizeof(*seen));
		if (seen != NULL) {
			r->seen = seen;
		}
		uint32_t *resets = realloc(r->resets, cap * sizeof(*resets));
		if (resets != NULL) {
			r->resets = resets;
		}
		if (seen == NULL || resets == NULL) {
			return NULL;
		}
		memset(r->seen + r->nchannels, 0, (cap - r->nchannels) * sizeof(*seen));
		memset(r->resets + r->nchannels, 0, (cap - r->nchannels) * sizeof(*resets));
		r->nchannels = cap;
	}
	return r;
}

/* The write number the asset last read, 0 since a reset. */
static uint64_t seen_by(const char *asset, hako_channel_t *ch)
{
	int i = hako_channel_index(ch);
	uint32_t resets = hako_domain_reset_count(g.dom);
	pthread_mutex_lock(&g.lock);
	struct reader *r = reader_locked(asset, i);
	uint64_t seen = r != NULL && r->resets[i] == resets ? r->seen[i] : 0;
	pthread_mutex_unlock(&g.lock);
	return seen;
}

static void set_seen_by(const char *asset, hako_channel_t *ch, uint64_t seq, uint32_t resets)
{
	int i = hako_channel_index(ch);
	pthread_mutex_lock(&g.lock);
	struct reader *r = reader_locked(asset, i);
	if (r != NULL) {
		r->seen[i] = seq;
		r->resets[i] = resets;
	}
	pthread_mutex_unlock(&g.lock);
}

static bool is_asset(const char *who, const char *asset)
{
	if (find_slot(asset) == NULL) {
		return fail(HAKO_ENOENT, "%s: no asset '%s' in domain '%s'", who, str(asset),
		            hako_domain_name(g.dom));
	}
	return true;
}

bool hako_asset_is_pdu_dirty(const char *asset_name, const char *robo_name,
                             HakoPduChannelIdType channel_id)
{
	hako_channel_t *ch;
	if (!channel("hako_asset_is_pdu_dirty", robo_name, channel_id, &ch) ||
	    !is_asset("hako_asset_is_pdu_dirty", asset_name)) {
		return false;
	}
	return hako_channel_seq(ch) != seen_by(asset_name, ch);
}

static bool write_pdu(const char *who, const char *robo, HakoPduChannelIdType id, const char *data,
                      size_t len)
{
	hako_channel_t *ch;
	if (!channel(who, robo, id, &ch)) {
		return false;
	}
	int r = hako_channel_write(ch, data, len);
	if (r != 0) {
		return fail(r, "%s(%s, %d): %zu bytes: %s", who, str(robo), id, len,
		            r == HAKO_ETOOBIG ? "larger than the channel" : hako_strerror(r));
	}
	return true;
}

/* Read len bytes (a shorter PDU zero-filled); the write number read in *seq. */
static bool read_pdu(const char *who, const char *robo, HakoPduChannelIdType id, char *data,
                     size_t len, hako_channel_t **chp, uint64_t *seq, uint32_t *resets)
{
	hako_channel_t *ch;
	if (!channel(who, robo, id, &ch)) {
		return false;
	}
	if (len > hako_channel_size(ch)) {
		return fail(HAKO_ESIZE, "%s(%s, %d): %zu bytes > channel size %zu", who, str(robo),
		            id, len, hako_channel_size(ch));
	}
	size_t got = 0;
	*resets = hako_domain_reset_count(g.dom);
	int r = hako_channel_read(ch, data, len, &got, seq);
	if (r == HAKO_ETOOBIG) {
		r = 0; /* a shorter read of a longer PDU, as Hakoniwa's */
		got = len;
	}
	if (r != 0) {
		return fail(r, "%s(%s, %d): %s", who, str(robo), id, hako_strerror(r));
	}
	if (got < len) {
		memset(data + got, 0, len - got);
	}
	*chp = ch;
	return true;
}

bool hako_asset_write_pdu(const char *asset_name, const char *robo_name,
                          HakoPduChannelIdType channel_id, const char *pdu_data, size_t len)
{
	return attach("hako_asset_write_pdu") && is_asset("hako_asset_write_pdu", asset_name) &&
	       write_pdu("hako_asset_write_pdu", robo_name, channel_id, pdu_data, len);
}

bool hako_asset_read_pdu(const char *asset_name, const char *robo_name,
                         HakoPduChannelIdType channel_id, char *pdu_data, size_t len)
{
	hako_channel_t *ch = NULL;
	uint64_t seq = 0;
	uint32_t resets = 0;
	if (!attach("hako_asset_read_pdu") || !is_asset("hako_asset_read_pdu", asset_name) ||
	    !read_pdu("hako_asset_read_pdu", robo_name, channel_id, pdu_data, len, &ch, &seq,
	              &resets)) {
		return false;
	}
	set_seen_by(asset_name, ch, seq, resets);
	return true;
}

bool hako_asset_write_pdu_nolock(const char *robo_name, HakoPduChannelIdType channel_id,
                                 const char *pdu_data, size_t len)
{
	return write_pdu("hako_asset_write_pdu_nolock", robo_name, channel_id, pdu_data, len);
}

bool hako_asset_read_pdu_nolock(const char *robo_name, HakoPduChannelIdType channel_id,
                                char *pdu_data, size_t len)
{
	hako_channel_t *ch;
	uint64_t seq;
	uint32_t resets;
	return read_pdu("hako_asset_read_pdu_nolock", robo_name, channel_id, pdu_data, len, &ch,
	                &seq, &resets);
}

void hako_asset_notify_read_pdu_done(const char *asset_name)
{
	(void)asset_name;
}

void hako_asset_notify_write_pdu_done(const char *asset_name)
{
	hako_member_t *m = find_own(asset_name);
	if (m == NULL || !member_valid(m)) {
		fail(HAKO_ENOENT,
		     "hako_asset_notify_write_pdu_done(%s): not an asset of this process",
		     str(asset_name));
		return;
	}
	int st = hako_domain_state(g.dom);
	if (st != HAKO_STATE_RUNNABLE && st != HAKO_STATE_RUNNING) {
		return; /* no run to check in to; a start clears the check-ins */
	}
	atomic_store(&m->slot->checked_in, 1);
	hako_member_heartbeat(m);
	hakoi_try_advance(g.dom); /* the last one in opens the barrier */
}

bool hako_asset_is_pdu_sync_mode(const char *asset_name)
{
	if (!attach("hako_asset_is_pdu_sync_mode")) {
		return false;
	}
	struct hakoi_asset *a = find_slot(asset_name);
	int st = hako_domain_state(g.dom);
	return a != NULL && (st == HAKO_STATE_RUNNABLE || st == HAKO_STATE_RUNNING) &&
	       !atomic_load(&a->checked_in);
}

bool hako_asset_is_simulation_mode(void)
{
	if (!attach("hako_asset_is_simulation_mode") ||
	    hako_domain_state(g.dom) != HAKO_STATE_RUNNING) {
		return false;
	}
	uint32_t hwm = hakoi_asset_hwm(g.dom);
	for (uint32_t i = 0; i < hwm; i++) {
		struct hakoi_asset *a = &g.dom->assets[i];
		if (atomic_load(&a->in_use) && !atomic_load(&a->checked_in)) {
			return false;
		}
	}
	return true;
}

bool hako_asset_is_pdu_created(void)
{
	return attach("hako_asset_is_pdu_created");
}

/* ---- receive events (flag mode) ---- */

static struct recv_sub *sub_locked(hako_channel_t *ch)
{
	for (int i = 0; i < g.nsubs; i++) {
		if (g.subs[i].ch == ch) {
			return &g.subs[i];
		}
	}
	return NULL;
}

bool hako_capi_asset_register_data_recv_event(const char *robo_name, HakoPduChannelIdType lchannel)
{
	hako_channel_t *ch;
	if (!channel("hako_capi_asset_register_data_recv_event", robo_name, lchannel, &ch)) {
		return false;
	}
	pthread_mutex_lock(&g.lock);
	if (sub_locked(ch) == NULL) {
		struct recv_sub *n = realloc(g.subs, (size_t)(g.nsubs + 1) * sizeof(*n));
		if (n == NULL) {
			pthread_mutex_unlock(&g.lock);
			return fail(HAKO_ENOMEM, "hako_capi_asset_register_data_recv_event: out of "
			                         "memory");
		}
		g.subs = n;
		/* Writes from now on count, as a Hakoniwa flag set by the next write. */
		g.subs[g.nsubs++] =
		    (struct recv_sub){ch, hako_channel_seq(ch), hako_domain_reset_count(g.dom), 0};
	}
	pthread_mutex_unlock(&g.lock);
	return true;
}

bool hako_capi_asset_check_data_recv_event(const char *asset_name, const char *robo_name,
                                           HakoPduChannelIdType lchannel)
{
	hako_channel_t *ch;
	const char *who = "hako_capi_asset_check_data_recv_event";
	if (!channel(who, robo_name, lchannel, &ch) ||
	    (asset_name != NULL && !is_asset(who, asset_name))) {
		return false;
	}
	bool got = false;
	pthread_mutex_lock(&g.lock);
	struct recv_sub *s = sub_locked(ch);
	if (s != NULL && !s->pending) {
		uint32_t resets = hako_domain_reset_count(g.dom);
		if (resets != s->resets) {
			s->resets = resets;
			s->seen = 0;
		}
		uint64_t seq = hako_channel_seq(ch);
		got = seq != s->seen;
		s->seen = seq;
	}
	pthread_mutex_unlock(&g.lock);
	return got;
}

static bool set_pending(const char *who, const char *robo, HakoPduChannelIdType id, int pending)
{
	hako_channel_t *ch;
	if (!channel(who, robo, id, &ch)) {
		return false;
	}
	pthread_mutex_lock(&g.lock);
	struct recv_sub *s = sub_locked(ch);
	if (s != NULL) {
		s->pending = pending; /* writes meanwhile stay unseen: they show on resume */
	}
	pthread_mutex_unlock(&g.lock);
	return s != NULL ? true
	                 : fail(HAKO_ENOENT, "%s(%s, %d): no subscription", who, str(robo), id);
}

bool hako_capi_asset_set_data_recv_event_pending(const char *robo_name,
                                                 HakoPduChannelIdType lchannel)
{
	return set_pending("hako_capi_asset_set_data_recv_event_pending", robo_name, lchannel, 1);
}

bool hako_capi_asset_set_data_recv_event_resume(const char *robo_name,
                                                HakoPduChannelIdType lchannel)
{
	return set_pending("hako_capi_asset_set_data_recv_event_resume", robo_name, lchannel, 0);
}
