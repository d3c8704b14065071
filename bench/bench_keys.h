/* The conductor benches' federation keys: the control plane is authenticated by default
 * (docs/conductor.md), so a bench measures it as users run it. */
#ifndef HAKO_BENCH_KEYS_H
#define HAKO_BENCH_KEYS_H

#include "hako/conductor.h"

/* Make (once) a private folder under /tmp in dir (64 bytes, "" the first time), give every
 * config its keys_dir, and the nodes' keys; exits through bench_die on failure. */
void bench_keys_make(hako_conductor_config_t *cfgs, int n, char *dir);
/* Remove the folder and its keys (accepts ""). */
void bench_keys_remove(const char *dir);

#endif
