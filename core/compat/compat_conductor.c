/* Hakoniwa's hako_conductor.h: the master of the default domain in a thread of this process.
 * A failure is logged and its reason kept for hako_asset_last_error, as the asset calls' are:
 * hakopy.conductor_start answers False and last_error() says why.
 *
 * When another process already conducts the domain (hako-launch, hako-cmd conductor, an
 * external hako-conductor), Hakoniwa's call succeeds (its shared memory is created without
 * O_EXCL) and the asset runs on: so does this one, leaving that conductor alone. */
#include <stdio.h>
#include <stdlib.h>

#include "hako/hako_conductor.h"
#include "hako/log.h"
#include "compat.h"

static struct {
	pthread_mutex_t lock;
	hako_domain_t *dom;
	hako_master_t *master;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The pid of the live conductor of domain name, 0 if none: asked before creating the domain,
 * so that a conductor already there is not reported as an error (hako_domain_create's). */
static int live_conductor(const char *name)
{
	hako_domain_t *dom = NULL;
	hako_domain_info_t info;
	int pid = 0;
	if (hako_domain_open(name, &dom) == 0 && hako_domain_get_info(dom, &info) == 0 &&
	    info.master_alive) {
		pid = info.master_pid;
	}
	hako_domain_close(dom);
	return pid;
}

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
	int pid = live_conductor(name);
	if (pid != 0) {
		pthread_mutex_unlock(&g.lock);
		HAKO_INFO("hako_conductor_start: domain '%s' already has a conductor (pid %d); "
		          "this process runs under it",
		          name, pid);
		return 0;
	}
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
