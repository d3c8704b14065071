/* See bench_keys.h. */
#define _GNU_SOURCE
#include "bench_keys.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"

void bench_keys_make(hako_conductor_config_t *cfgs, int n, char *dir)
{
	if (dir[0] == '\0') {
		snprintf(dir, 64, "/tmp/hako-bench-keys-XXXXXX");
		if (mkdtemp(dir) == NULL) {
			dir[0] = '\0';
			bench_die("mkdtemp: %s", strerror(errno));
		}
	}
	const hako_conductor_config_t *set[HAKO_CONDUCTOR_MAX_CLIENTS + 1];
	for (int i = 0; i < n; i++) {
		snprintf(cfgs[i].keys_dir, sizeof(cfgs[i].keys_dir), "%s", dir);
		set[i] = &cfgs[i];
	}
	hako_error_t err;
	if (hako_conductor_keygen(set, (size_t)n, NULL, &err) != 0) {
		bench_die("keys: %s: %s", err.file, err.message);
	}
}

void bench_keys_remove(const char *dir)
{
	if (dir[0] == '\0') {
		return;
	}
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] != '.') {
			char p[512];
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	}
	if (d != NULL) {
		closedir(d);
	}
	rmdir(dir);
}
