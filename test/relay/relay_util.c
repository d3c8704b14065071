/* See relay_util.h. */
#define _GNU_SOURCE
#include "relay_util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "hako_test_util.h"

/* htu_exec_t has room for 15 arguments; a relay of several routes takes more. */
struct exec_long {
	char *argv[40];
	const char *log;
};

static void exec_long_main(void *arg)
{
	struct exec_long *x = arg;
	int fd = open(x->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execv(x->argv[0], x->argv);
	_exit(127);
}

int relay_start(relay_t *r, const char *exe, const char *dir, const char *const *args)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->log, sizeof(r->log), "%s/relay.log", dir);
	snprintf(r->control, sizeof(r->control), "%s/relay.sock", dir);
	struct exec_long x; /* the child reads its own copy */
	memset(&x, 0, sizeof(x));
	int n = 0;
	x.argv[n++] = (char *)exe;
	x.argv[n++] = "--control";
	x.argv[n++] = r->control;
	for (int i = 0; args[i] != NULL; i++) {
		if (n == sizeof(x.argv) / sizeof(x.argv[0]) - 1) {
			fprintf(stderr, "relay_start: too many arguments\n");
			return -1;
		}
		x.argv[n++] = (char *)args[i];
	}
	x.log = r->log;
	r->pid = htu_fork(exec_long_main, &x);
	if (r->pid <= 0) {
		return -1;
	}
	int ok;
	HTU_WAIT_UNTIL(ok,
	               strstr(htu_slurp(r->log), "hako-relay: ready\n") != NULL ||
	                   htu_child_exited(r->pid),
	               HTU_TIMEOUT_USEC);
	const char *text = htu_slurp(r->log);
	if (!ok || strstr(text, "hako-relay: ready\n") == NULL) {
		fprintf(stderr, "hako-relay did not start:\n%s\n", text);
		return -1;
	}
	for (const char *p = text; (p = strstr(p, " -> ")) != NULL && r->nroutes < RELAY_MAX_ROUTES;
	     p += 4) {
		const char *colon = p;
		while (colon > text && *colon != ':') {
			colon--;
		}
		r->port[r->nroutes++] = atoi(colon + 1);
	}
	return 0;
}

int relay_cmd(relay_t *r, const char *cmd, char *reply, size_t len)
{
	char buf[512];
	size_t got = 0;
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	if (strlen(r->control) >= sizeof(a.sun_path)) {
		fprintf(stderr, "relay control %s: path too long\n", r->control);
		return -1;
	}
	memcpy(a.sun_path, r->control, strlen(r->control) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		fprintf(stderr, "relay control %s: %s\n", r->control, strerror(errno));
		if (fd >= 0) {
			close(fd);
		}
		return -1;
	}
	char line[256];
	int n = snprintf(line, sizeof(line), "%s\n", cmd);
	if (write(fd, line, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	hako_time_t deadline = hako_now_usec() + HTU_TIMEOUT_USEC;
	while (got < sizeof(buf) - 1 && memchr(buf, '\n', got) == NULL) {
		struct pollfd p = {fd, POLLIN, 0};
		hako_time_t left = deadline - hako_now_usec();
		if (left <= 0 || poll(&p, 1, (int)(left / 1000) + 1) <= 0) {
			break;
		}
		ssize_t k = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (k <= 0) {
			break;
		}
		got += (size_t)k;
	}
	close(fd);
	buf[got] = '\0';
	if (reply != NULL) {
		snprintf(reply, len, "%s", buf);
	}
	return strncmp(buf, "ok", 2) == 0 ? 0 : -1;
}

long long relay_stat(relay_t *r, const char *key)
{
	char reply[512], pat[64];
	if (relay_cmd(r, "stats", reply, sizeof(reply)) != 0) {
		return -1;
	}
	snprintf(pat, sizeof(pat), " %s=", key);
	const char *p = strstr(reply, pat);
	return p != NULL ? atoll(p + strlen(pat)) : -1;
}

void relay_stop(relay_t *r)
{
	if (r->pid <= 0) {
		return;
	}
	kill(r->pid, SIGTERM);
	if (htu_wait_child(r->pid, HTU_TIMEOUT_USEC, NULL) != 0) {
		htu_kill_child(r->pid);
	}
	r->pid = 0;
}

int relay_free_port(int udp)
{
	int fd = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(a);
	int port = -1;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0) {
		port = ntohs(a.sin_port);
	}
	if (fd >= 0) {
		close(fd);
	}
	return port;
}
