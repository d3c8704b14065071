/* Start hako-relay from a test, drive it through its control socket, stop it. The relay runs
 * as a tracked child (hako_test_util.h): it is killed even when the test fails. */
#ifndef HAKO_RELAY_UTIL_H
#define HAKO_RELAY_UTIL_H

#include <stddef.h>
#include <sys/types.h>

#define RELAY_MAX_ROUTES 8

typedef struct relay {
	pid_t pid;
	char log[512];
	char control[512];
	int nroutes;
	int port[RELAY_MAX_ROUTES]; /* the port each --listen got, in order */
} relay_t;

/* Run exe with args (NULL-terminated; --control is added) in dir; wait for "ready" and read
 * the ports it listens on. 0, or -1 with why on stderr (its log printed). */
int relay_start(relay_t *r, const char *exe, const char *dir, const char *const *args);
/* Send a command line, read the reply line into reply (may be NULL). 0 if it starts with
 * "ok". */
int relay_cmd(relay_t *r, const char *cmd, char *reply, size_t len);
/* The value of "key=N" in the reply to "stats" (-1 if absent). */
long long relay_stat(relay_t *r, const char *key);
/* SIGTERM, then reap (SIGKILL after a while). */
void relay_stop(relay_t *r);

/* A free local TCP or UDP port (bound to 127.0.0.1:0 and released): for a server that cannot
 * listen on port 0 itself. Another process may take it meanwhile, so the caller retries. */
int relay_free_port(int udp);

#endif
