/* The functions of assert_probe.c, compiled twice: probe_on_* with HAKO_ASSERTS defined,
 * probe_off_* without. Both objects come from one source, so their lines are the same. */
#ifndef ASSERT_PROBE_H
#define ASSERT_PROBE_H

/* Each of its two assertions counts its evaluations in *n: +2 when on, +0 when off. */
int probe_on_count(int *n);
int probe_off_count(int *n);
/* A false HAKO_ASSERT, whose line goes to *line first; returns only if assertions are off. */
void probe_on_fail(int *line);
void probe_off_fail(int *line);
/* A false HAKO_ASSERT_MSG (x == 42) with the message "x is <x>". */
void probe_on_fail_msg(int x, int *line);
void probe_off_fail_msg(int x, int *line);

#endif
