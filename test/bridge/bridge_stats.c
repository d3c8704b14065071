#include "bridge_stats.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

uint64_t bst_stat_of(const char *text, const char *conn, const char *key)
{
	char head[64], k[64];
	snprintf(head, sizeof(head), "connection %s: ", conn);
	snprintf(k, sizeof(k), " %s=", key);
	const char *line = strstr(text, head);
	if (line == NULL) {
		fail_msg("no statistics of %s in:\n%s", conn, text);
	}
	const char *eol = strchr(line, '\n');
	const char *at = strstr(line, k);
	if (at == NULL || (eol != NULL && at > eol)) {
		fail_msg("no %s in statistics line of %s", key, conn);
	}
	return strtoull(at + strlen(k), NULL, 10);
}

int bst_lines_of(const char *text, const char *conn)
{
	char head[64];
	int n = 0;
	snprintf(head, sizeof(head), "connection %s: ", conn);
	for (const char *p = text; (p = strstr(p, head)) != NULL; p++) {
		n++;
	}
	return n;
}
