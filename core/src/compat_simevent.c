/* Hakoniwa's sim-event controller as a C API over the default domain. */
#include "hako/hako_simevent.h"
#include "internal.h"

static struct {
	pthread_mutex_t lock;
	hako_domain_t *dom;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

int hako_simevent_init(void)
{
	pthread_mutex_lock(&g.lock);
	int r = 0;
	if (g.dom == NULL) {
		r = hako_domain_open(hako_domain_default_name(), &g.dom);
	}
	pthread_mutex_unlock(&g.lock);
	return r;
}

void hako_simevent_fini(void)
{
	pthread_mutex_lock(&g.lock);
	hako_domain_close(g.dom);
	g.dom = NULL;
	pthread_mutex_unlock(&g.lock);
}

static hako_domain_t *dom(void)
{
	if (g.dom == NULL) {
		hako_simevent_init();
	}
	return g.dom;
}

int hako_simevent_get_state(void)
{
	return dom() != NULL ? hako_domain_state(g.dom) : HAKO_ENOENT;
}

int hako_simevent_start(void)
{
	return dom() != NULL ? hako_domain_start(g.dom) : HAKO_ENOENT;
}

int hako_simevent_stop(void)
{
	return dom() != NULL ? hako_domain_stop(g.dom) : HAKO_ENOENT;
}

int hako_simevent_reset(void)
{
	return dom() != NULL ? hako_domain_reset(g.dom) : HAKO_ENOENT;
}

hako_time_t hako_simevent_world_time(void)
{
	return dom() != NULL ? hako_domain_world_time(g.dom) : 0;
}

int hako_simevent_list_assets(hako_asset_info_t *out, int max, int *count)
{
	return dom() != NULL ? hako_domain_list_assets(g.dom, out, max, count) : HAKO_ENOENT;
}
