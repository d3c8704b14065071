/* Hakoniwa's hako_conductor.h: the master of the default domain in a thread of this process.
 * A failure is logged and its reason kept for hako_asset_last_error, as the asset calls' are:
 * hakopy.conductor_start answers False and last_error() says why. */
#include <stdio.h>
#include <stdlib.h>

#include "hako/hako_conductor.h"
#include "compat.h"

static struct {
	pthread_mutex_t lock;
	hako_domain_t *dom;
	hako_master_t *master;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

int hako_conductor_start(hako_time_t delta_usec, hako_time_t max_delay_usec)
{
	hako_domain_config_t cfg;
	if (hako_domain_config_default(&cfg) != 0) {
		hakoi_compat_fail(HAKO_ECONFIG, "hako_conductor_start: an invalid HAKO_* variable "
		                                "(logged above)");
		return -1;
	}
	const char *path = getenv("HAKO_CORE_CONFIG");
	if (path != NULL && path[0] != '\0') {
		hako_error_t err;
		char msg[1200];
		if (hako_domain_config_load(&cfg, path, &err) != 0) {
			hakoi_compat_fail(HAKO_ECONFIG, "hako_conductor_start: %s",
			                  hako_error_format(&err, msg, sizeof(msg)));
			return -1;
		}
	}
	hako_master_config_t mc = {delta_usec, max_delay_usec, 0.0};
	const char *rtf = getenv("HAKO_REAL_TIME_FACTOR");
	if (rtf != NULL && rtf[0] != '\0') {
		mc.real_time_factor = atof(rtf);
	}
	pthread_mutex_lock(&g.lock);
	if (g.master != NULL) {
		pthread_mutex_unlock(&g.lock);
		hakoi_compat_fail(HAKO_EBUSY,
		                  "hako_conductor_start: already started in this process");
		return -1;
	}
	const char *name = hako_domain_default_name();
	int r = hako_domain_create(name, &cfg, &g.dom);
	if (r == 0) {
		r = hako_master_start(g.dom, &mc, &g.master);
		if (r != 0) {
			hako_domain_close(g.dom);
			hako_domain_remove(name);
			g.dom = NULL;
		}
	}
	pthread_mutex_unlock(&g.lock);
	if (r != 0) {
		hakoi_compat_fail(r, "hako_conductor_start(domain '%s'): %s", name,
		                  hako_strerror(r));
		return -1;
	}
	return 0;
}

void hako_conductor_stop(void)
{
	pthread_mutex_lock(&g.lock);
	if (g.master != NULL) {
		hako_master_stop(g.master);
		g.master = NULL;
		/* The segment goes with its conductor: nothing is left behind in /dev/shm. */
		hako_domain_remove(hako_domain_name(g.dom));
		hako_domain_close(g.dom);
		g.dom = NULL;
	}
	pthread_mutex_unlock(&g.lock);
}
