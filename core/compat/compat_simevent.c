/* Hakoniwa's sim-event controller as a C API over the default domain. Hakoniwa's five functions
 * answer true on success (hako_capi.h); the handle API under them answers 0. */
#include "hako/hako_simevent.h"
#include "compat.h"

static struct {
	pthread_mutex_t lock;
	hako_domain_t *dom;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int last_error;

/* true for 0; else remember the code for hako_simevent_last_error. */
static bool ok(int r)
{
	if (r != 0) {
		last_error = r;
	}
	return r == 0;
}

static int attach(void)
{
	pthread_mutex_lock(&g.lock);
	int r = 0;
	if (g.dom == NULL) {
		r = hako_domain_open(hako_domain_default_name(), &g.dom);
	}
	pthread_mutex_unlock(&g.lock);
	return r;
}

bool hako_simevent_init(void)
{
	return ok(attach());
}

void hako_simevent_fini(void)
{
	pthread_mutex_lock(&g.lock);
	hako_domain_close(g.dom);
	g.dom = NULL;
	pthread_mutex_unlock(&g.lock);
}

int hako_simevent_last_error(void)
{
	return last_error;
}

int hako_simevent_get_state(void)
{
	if (!ok(attach())) {
		return -1;
	}
	return hako_domain_state(g.dom);
}

bool hako_simevent_start(void)
{
	return ok(attach()) && ok(hako_domain_start(g.dom));
}

bool hako_simevent_stop(void)
{
	return ok(attach()) && ok(hako_domain_stop(g.dom));
}

bool hako_simevent_reset(void)
{
	return ok(attach()) && ok(hako_domain_reset(g.dom));
}

hako_time_t hako_simevent_world_time(void)
{
	return attach() == 0 ? hako_domain_world_time(g.dom) : 0;
}

int hako_simevent_list_assets(hako_asset_info_t *out, int max, int *count)
{
	int r = attach();
	if (r == 0) {
		r = hako_domain_list_assets(g.dom, out, max, count);
	}
	ok(r);
	return r;
}
