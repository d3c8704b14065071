/* The bridge tests read hako-bridge's statistics lines ("connection ID: forwarded=N ..."), from
 * its exit log or a "stats" answer of the control socket. */
#ifndef HAKO_TEST_BRIDGE_STATS_H
#define HAKO_TEST_BRIDGE_STATS_H

#include <stdint.h>

/* The counter `key` of connection `conn`'s statistics line in text; fails the test if absent. */
uint64_t bst_stat_of(const char *text, const char *conn, const char *key);
/* How many statistics lines of connection `conn` text holds. */
int bst_lines_of(const char *text, const char *conn);

#endif
