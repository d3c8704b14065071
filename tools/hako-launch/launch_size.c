/* The domain's size from the launch file: a process with "domain_needs" is run once at load
 * time with those arguments added to its own, and prints what it needs of the domain as one
 * JSON object, {"channels": N, "arena_bytes": B} ("assets": A optional). The needs of all such
 * processes are added up. Without a core_config, hako-launch creates the domain that big (and
 * never smaller than the defaults); with one, a core config too small is refused at load,
 * with the numbers. A fleet host answers for its fleet (fleet-host --print-needs), so a fleet
 * of any size gets a domain that holds it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hako/error.h"
#include "launch_config.h"
#include "launch_supervise.h"

#define NEEDS_MAX_BYTES   4096
#define NEEDS_TIMEOUT_MS  10000
#define HEADROOM_CHANNELS 256           /* for the other processes' channels */
#define HEADROOM_ARENA    (16ull << 20) /* ... and their PDUs */

static int fail(hako_error_t *err, const hakoi_launch_config_t *cfg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(hako_error_t *err, const hakoi_launch_config_t *cfg, const char *fmt, ...)
{
	memset(err, 0, sizeof(*err));
	snprintf(err->file, sizeof(err->file), "%s", cfg->file);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return HAKO_ECONFIG;
}

/* Run p's command with its needs arguments, in the environment and folder it runs in; its
 * stdout (at most NEEDS_MAX_BYTES) in out. */
static int run_query(const hakoi_launch_config_t *cfg, const hakoi_launch_proc_t *p, char *out,
                     size_t cap, char *why, size_t why_len)
{
	size_t n = p->argc + p->needs_count;
	char **argv = calloc(n + 1, sizeof(*argv));
	char **env = hakoi_launch_env(cfg, p);
	int fd[2];
	if (argv == NULL || env == NULL || pipe2(fd, O_CLOEXEC) != 0) {
		snprintf(why, why_len, "%s",
		         argv == NULL || env == NULL ? "out of memory" : strerror(errno));
		free(argv);
		hakoi_launch_env_free(env);
		return -1;
	}
	memcpy(argv, p->argv, p->argc * sizeof(*argv));
	memcpy(argv + p->argc, p->needs_args, p->needs_count * sizeof(*argv));
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], STDOUT_FILENO);
		if (p->cwd != NULL && chdir(p->cwd) != 0) {
			_exit(127);
		}
		execve(p->exe, argv, env);
		_exit(127);
	}
	free(argv);
	hakoi_launch_env_free(env);
	close(fd[1]);
	if (pid < 0) {
		close(fd[0]);
		snprintf(why, why_len, "cannot start it: %s", strerror(errno));
		return -1;
	}
	size_t len = 0;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int timed_out = 0;
	for (;;) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left = NEEDS_TIMEOUT_MS -
		            ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		struct pollfd pf = {fd[0], POLLIN, 0};
		if (left <= 0 || poll(&pf, 1, (int)left) == 0) {
			timed_out = 1;
			break;
		}
		char buf[512];
		ssize_t k = read(fd[0], buf, sizeof(buf));
		if (k < 0 && errno == EINTR) {
			continue;
		}
		if (k <= 0) {
			break;
		}
		size_t take = (size_t)k < cap - 1 - len ? (size_t)k : cap - 1 - len;
		memcpy(out + len, buf, take);
		len += take;
	}
	out[len] = '\0';
	close(fd[0]);
	if (timed_out) {
		kill(pid, SIGKILL);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	if (timed_out) {
		snprintf(why, why_len, "it printed no answer within %d s", NEEDS_TIMEOUT_MS / 1000);
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(why, why_len, "it %s %d",
		         WIFEXITED(status) ? "exited with code" : "died of signal",
		         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return -1;
	}
	return 0;
}

/* {"channels": N, "arena_bytes": B, "assets": A}: non-negative integers, the first two given. */
static int parse_needs(const char *text, long long v[3], char *why, size_t why_len)
{
	json_error_t je;
	json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	static const char *const keys[3] = {"channels", "arena_bytes", "assets"};
	int r = 0;
	if (!json_is_object(o)) {
		snprintf(why, why_len, "its answer is not a JSON object (%s)",
		         o == NULL ? je.text : "another JSON value");
		r = -1;
	}
	for (int k = 0; k < 3 && r == 0; k++) {
		json_t *x = json_object_get(o, keys[k]);
		v[k] = 0;
		if (x == NULL && k < 2) {
			snprintf(why, why_len, "its answer has no \"%s\"", keys[k]);
			r = -1;
		} else if (x != NULL && (!json_is_integer(x) || json_integer_value(x) < 0 ||
		                         json_integer_value(x) > (1ll << 40))) {
			snprintf(why, why_len, "its \"%s\" is not an integer in [0, 2^40]",
			         keys[k]);
			r = -1;
		} else if (x != NULL) {
			v[k] = json_integer_value(x);
		}
	}
	json_decref(o);
	return r;
}

int hakoi_launch_size(hakoi_launch_config_t *cfg, hako_error_t *err)
{
	long long need[3] = {0, 0, 0};
	int asked = 0;
	for (size_t i = 0; i < cfg->proc_count; i++) {
		const hakoi_launch_proc_t *p = &cfg->procs[i];
		if (p->needs_args == NULL) {
			continue;
		}
		char out[NEEDS_MAX_BYTES], why[300];
		long long v[3];
		if (run_query(cfg, p, out, sizeof(out), why, sizeof(why)) != 0 ||
		    parse_needs(out, v, why, sizeof(why)) != 0) {
			return fail(err, cfg,
			            "processes[%zu] (\"%s\"): its \"domain_needs\" query: %s", i,
			            p->name, why);
		}
		for (int k = 0; k < 3; k++) {
			need[k] += v[k];
		}
		asked = 1;
	}
	if (!asked) {
		return 0;
	}
	need[2] += (long long)cfg->proc_count;
	hako_domain_config_t *c = &cfg->core;
	if (cfg->core_config != NULL) {
		if ((long long)c->max_channels < need[0] || (long long)c->arena_bytes < need[1] ||
		    (long long)c->max_assets < need[2]) {
			return fail(
			    err, cfg,
			    "the processes need %lld channels, %lld arena bytes and %lld assets "
			    "(what their \"domain_needs\" said); core_config %s allows %u "
			    "channels, %llu bytes and %u assets: make it bigger, or leave "
			    "core_config out and hako-launch sizes the domain",
			    need[0], need[1], need[2], cfg->core_config, c->max_channels,
			    (unsigned long long)c->arena_bytes, c->max_assets);
		}
		return 0;
	}
	long long ch = need[0] + HEADROOM_CHANNELS;
	unsigned long long arena =
	    (unsigned long long)need[1] + (unsigned long long)need[1] / 4 + HEADROOM_ARENA;
	arena = (arena + (1ull << 20) - 1) & ~((1ull << 20) - 1);
	if (ch > (long long)c->max_channels) {
		if (ch > UINT32_MAX) {
			return fail(err, cfg,
			            "the processes need %lld channels: more than a domain holds",
			            need[0]);
		}
		c->max_channels = (uint32_t)ch;
	}
	if (arena > c->arena_bytes) {
		c->arena_bytes = arena;
	}
	if (need[2] + 8 > (long long)c->max_assets) {
		c->max_assets = (uint32_t)(need[2] + 8);
	}
	cfg->sized = 1;
	return 0;
}
