/* Process identity: a pid plus its start time, so a reused pid is not taken for the old one. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

uint64_t hakoi_proc_start_time(int pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return 0;
	}
	char buf[1024];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: fields start after the last ')'. */
	char *p = strrchr(buf, ')');
	if (p == NULL) {
		return 0;
	}
	p++;
	/* After ')' come field 3 (state) ... field 22 (starttime). */
	for (int field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (p == NULL) {
			return 0;
		}
	}
	return strtoull(p + 1, NULL, 10);
}

int hakoi_proc_alive(int pid, uint64_t start_time)
{
	if (pid <= 0) {
		return 0;
	}
	if (kill(pid, 0) != 0 && errno == ESRCH) {
		return 0;
	}
	uint64_t now_start = hakoi_proc_start_time(pid);
	if (now_start == 0) {
		return 0; /* gone between the two checks, or a zombie being reaped */
	}
	if (start_time != 0 && now_start != start_time) {
		return 0;
	}
	/* A zombie has exited: it is dead for us even if its parent has not reaped it yet. */
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (f != NULL) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		char *p = strrchr(buf, ')');
		if (p != NULL && (p[2] == 'Z' || p[2] == 'X')) {
			return 0;
		}
	}
	return 1;
}
