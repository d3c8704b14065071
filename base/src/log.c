#include "hako/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* -1 = not read from the environment yet. */
static _Atomic int log_level = -1;

static int level_from_env(void)
{
	const char *s = getenv("HAKO_LOG");
	if (s == NULL || s[0] == '\0') {
		return HAKO_LOG_WARN;
	}
	static const char *const names[] = {"debug", "info", "warn", "error", "off"};
	for (int i = 0; i < 5; i++) {
		if (strcmp(s, names[i]) == 0) {
			return i;
		}
	}
	return HAKO_LOG_WARN;
}

static int current_level(void)
{
	int lvl = atomic_load_explicit(&log_level, memory_order_relaxed);
	if (lvl < 0) {
		lvl = level_from_env();
		atomic_store_explicit(&log_level, lvl, memory_order_relaxed);
	}
	return lvl;
}

void hako_log_set_level(hako_log_level_t level)
{
	atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

int hako_log_enabled(hako_log_level_t level)
{
	return (int)level >= current_level();
}

void hako_log(hako_log_level_t level, const char *fmt, ...)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	if (!hako_log_enabled(level) || level >= HAKO_LOG_OFF) {
		return;
	}
	/* One write per line so lines of concurrent processes do not interleave. */
	char line[1024];
	int n = snprintf(line, sizeof(line), "hako[%d] %s: ", (int)getpid(), names[level]);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(line) - 2) {
		len = sizeof(line) - 2;
	}
	line[len++] = '\n';
	fwrite(line, 1, len, stderr);
}
