/* Conductor files (Hakoniwa's srv-NN.json / cli-NN.json plus hako's fields): data-driven cases
 * in cases/, the timing rule, the federation hash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hako/conductor.h"
#include "hako_cases.h"

static const char *const publish[] = {"immediate", "delta_boundary"};

static void run_case(const char *dir, const char *input, char *out, size_t len, void *arg)
{
	(void)dir;
	(void)arg;
	hako_conductor_config_t *c = NULL;
	hako_error_t err;
	int r = hako_conductor_config_load(input, &c, &err);
	if (r != 0) {
		assert_null(c);
		hako_error_format(&err, out, len);
		return;
	}
	htc_append(out, len, "ok\nrole %s\nnode %s\nserver %s\nclients ",
	           c->role == HAKO_CONDUCTOR_SERVER ? "server" : "client", c->node_id,
	           c->server_id);
	for (size_t i = 0; i < c->client_count; i++) {
		htc_append(out, len, "%s%s", i ? "," : "", c->clients[i]);
	}
	htc_append(out, len, "\ndelta %lld dmax %lld publish %s/%lld\ncontrol %s time %s\n",
	           (long long)c->delta_usec, (long long)c->max_delay_usec, publish[c->publish_mode],
	           (long long)c->publish_interval_usec, c->control_address, c->time_address);
	htc_append(out, len, "heartbeat %u timeout %u loss %s\n", c->heartbeat_ms,
	           c->peer_timeout_ms,
	           c->on_client_loss == HAKO_CLIENT_LOSS_DROP ? "drop" : "error");
	/* The keys folder is resolved against the file's: its last part. */
	const char *slash = strrchr(c->keys_dir, '/');
	htc_append(out, len, "auth %s keys %s\n",
	           c->auth == HAKO_CONDUCTOR_AUTH_NONE ? "none" : "curve",
	           slash != NULL ? slash + 1 : c->keys_dir);
	hako_conductor_config_free(c);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CASES_DIR\n", argv[0]);
		return 2;
	}
	return htc_run_cases("conductor_config", argv[1], "conductor.json", 18, HTC_EVERY_DIR,
	                     run_case, NULL);
}
