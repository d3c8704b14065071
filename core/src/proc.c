/* Process identity: a pid plus its start time, so a reused pid is not taken for the old one. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Read /proc/<pid>/stat once: its start time and whether it has exited (zombie). 0 if the
 * process does not exist. */
static uint64_t stat_of(int pid, int *exited)
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
	if (p == NULL || p[1] == '\0') {
		return 0;
	}
	*exited = p[2] == 'Z' || p[2] == 'X';
	/* After ") " come field 3 (state) ... field 22 (starttime). */
	p++;
	for (int field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (p == NULL) {
			return 0;
		}
	}
	return strtoull(p + 1, NULL, 10);
}

uint64_t hakoi_proc_start_time(int pid)
{
	int exited = 0;
	return stat_of(pid, &exited);
}

int hakoi_proc_alive(int pid, uint64_t start_time)
{
	if (pid <= 0) {
		return 0;
	}
	int exited = 0;
	uint64_t now_start = stat_of(pid, &exited);
	/* Gone, reused by another process, or exited and not yet reaped by its parent. */
	return now_start != 0 && (start_time == 0 || now_start == start_time) && !exited;
}

/* getpid() is a system call since glibc 2.25: the data path uses a copy, renewed in a child
 * after fork. */
static _Atomic uint32_t self_pid;

static void forget_pid(void)
{
	atomic_store_explicit(&self_pid, 0, memory_order_relaxed);
}

static void register_forget(void)
{
	pthread_atfork(NULL, NULL, forget_pid);
}

uint32_t hakoi_self_pid(void)
{
	uint32_t p = atomic_load_explicit(&self_pid, memory_order_relaxed);
	if (p == 0) {
		static pthread_once_t once = PTHREAD_ONCE_INIT;
		pthread_once(&once, register_forget);
		p = (uint32_t)getpid();
		atomic_store_explicit(&self_pid, p, memory_order_relaxed);
	}
	return p;
}
