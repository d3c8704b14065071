/* Wait-sets: one waiter on many channels. Which channels are reported and when, the slot table
 * (full, reclaimed from a dead process), wake, timeouts, writers in another process, domain
 * resets, and a writer racing the waiter (no lost wake-up). */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako_test_util.h"

#define NCH 4

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_master_t *master;
	hako_channel_t *ch[NCH];
	hako_waitset_t *ws;
};

static int setup_with(void **state, const char *test)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name(test, f->name, sizeof(f->name));
	*state = f;
	hako_domain_config_t cfg;
	hako_domain_config_init(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 16;
	cfg.arena_bytes = 1 << 20;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	for (int i = 0; i < NCH; i++) {
		assert_int_equal(hako_channel_create(f->dom, "r", i, 16, &f->ch[i]), 0);
	}
	assert_int_equal(hako_waitset_create(f->dom, &f->ws), 0);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	htu_kill_children();
	hako_waitset_destroy(f->ws);
	hako_master_stop(f->master);
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	free(f);
	return 0;
}

#define SETUP(test)                                                                                \
	static int setup_##test(void **state)                                                      \
	{                                                                                          \
		return setup_with(state, #test);                                                   \
	}

static void put(hako_channel_t *ch, uint8_t v)
{
	uint8_t b[16];
	memset(b, v, sizeof(b));
	assert_int_equal(hako_channel_write(ch, b, sizeof(b)), 0);
}

/* Only channels written since they were added or last reported; one event per channel however
 * many writes; the user pointer and the newest write number. */
SETUP(reports_written)
static void test_reports_written(void **state)
{
	struct fx *f = *state;
	hako_waitset_event_t ev[NCH];
	int n = -1;
	put(f->ch[0], 1); /* before the add: not an event */
	static int tag[NCH];
	for (int i = 0; i < 3; i++) {
		assert_int_equal(hako_waitset_add(f->ws, f->ch[i], &tag[i]), 0);
	}
	assert_int_equal(hako_waitset_add(f->ws, f->ch[0], NULL), HAKO_EEXIST);
	assert_int_equal(hako_waitset_wait(f->ws, 0, ev, NCH, &n), HAKO_ETIMEDOUT);
	assert_int_equal(n, 0);
	put(f->ch[1], 2);
	put(f->ch[1], 3);
	put(f->ch[3], 4); /* not watched */
	assert_int_equal(hako_waitset_wait(f->ws, 0, ev, NCH, &n), 0);
	assert_int_equal(n, 1);
	assert_ptr_equal(ev[0].channel, f->ch[1]);
	assert_ptr_equal(ev[0].user, &tag[1]);
	assert_int_equal(ev[0].seq, 2);
	assert_int_equal(hako_waitset_wait(f->ws, 0, ev, NCH, &n), HAKO_ETIMEDOUT);
	/* Removed: no longer reported. */
	assert_int_equal(hako_waitset_remove(f->ws, f->ch[1]), 0);
	assert_int_equal(hako_waitset_remove(f->ws, f->ch[1]), HAKO_ENOENT);
	put(f->ch[1], 5);
	assert_int_equal(hako_waitset_wait(f->ws, 0, ev, NCH, &n), HAKO_ETIMEDOUT);
	assert_int_equal(hako_waitset_wait(f->ws, 0, NULL, NCH, &n), HAKO_EINVAL);
}

/* More ready channels than room: the rest come with the next call, and a channel written
 * again meanwhile does not starve the others. */
SETUP(batches)
static void test_batches(void **state)
{
	struct fx *f = *state;
	hako_waitset_event_t ev[2];
	int n = 0, seen[NCH] = {0};
	for (int i = 0; i < NCH; i++) {
		assert_int_equal(hako_waitset_add(f->ws, f->ch[i], (void *)(intptr_t)i), 0);
		put(f->ch[i], (uint8_t)i);
	}
	assert_int_equal(hako_waitset_wait(f->ws, 0, ev, 2, &n), 0);
	assert_int_equal(n, 2);
	for (int k = 0; k < n; k++) {
		seen[(intptr_t)ev[k].user]++;
		put(ev[k].channel, 9); /* written again at once */
	}
	assert_int_equal(hako_waitset_wait(f->ws, 0, ev, 2, &n), 0);
	assert_int_equal(n, 2);
	for (int k = 0; k < n; k++) {
		seen[(intptr_t)ev[k].user]++;
	}
	for (int i = 0; i < NCH; i++) {
		assert_int_equal(seen[i], 1);
	}
}

struct later {
	hako_channel_t *ch;
	hako_waitset_t *ws;
	hako_time_t delay;
};

static void *write_later(void *p)
{
	struct later *l = p;
	htu_sleep_usec(l->delay);
	if (l->ch != NULL) {
		put(l->ch, 7);
	} else {
		hako_waitset_wake(l->ws);
	}
	return NULL;
}

/* A sleeping waiter is woken by a write from another thread, and by hako_waitset_wake. */
SETUP(wakes)
static void test_wakes(void **state)
{
	struct fx *f = *state;
	hako_waitset_event_t ev[NCH];
	int n = 0;
	assert_int_equal(hako_waitset_add(f->ws, f->ch[2], NULL), 0);
	pthread_t t;
	struct later l = {f->ch[2], NULL, 20000};
	assert_int_equal(pthread_create(&t, NULL, write_later, &l), 0);
	assert_int_equal(hako_waitset_wait(f->ws, HTU_TIMEOUT_USEC, ev, NCH, &n), 0);
	pthread_join(t, NULL);
	assert_int_equal(n, 1);
	assert_ptr_equal(ev[0].channel, f->ch[2]);

	struct later w = {NULL, f->ws, 20000};
	assert_int_equal(pthread_create(&t, NULL, write_later, &w), 0);
	assert_int_equal(hako_waitset_wait(f->ws, HTU_TIMEOUT_USEC, ev, NCH, &n), 0);
	pthread_join(t, NULL);
	assert_int_equal(n, 0);
	/* A wake with nobody waiting ends the next wait. */
	hako_waitset_wake(f->ws);
	assert_int_equal(hako_waitset_wait(f->ws, HTU_TIMEOUT_USEC, ev, NCH, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(hako_waitset_wait(f->ws, 1000, ev, NCH, &n), HAKO_ETIMEDOUT);
}

static void child_writes(void *p)
{
	struct fx *f = p;
	hako_domain_t *d;
	hako_channel_t *ch;
	HTU_CHECK_RC(hako_domain_open(f->name, &d), 0);
	HTU_CHECK_RC(hako_channel_lookup(d, "r", 3, &ch), 0);
	for (int i = 0; i < 100; i++) {
		uint8_t b[16] = {(uint8_t)i};
		HTU_CHECK_RC(hako_channel_write(ch, b, sizeof(b)), 0);
	}
	hako_domain_close(d);
}

/* Writers in another process wake the wait-set. */
SETUP(other_process)
static void test_other_process(void **state)
{
	struct fx *f = *state;
	hako_waitset_event_t ev[NCH];
	int n = 0;
	assert_int_equal(hako_waitset_add(f->ws, f->ch[3], NULL), 0);
	pid_t pid = htu_fork(child_writes, f);
	assert_true(pid > 0);
	uint64_t last = 0;
	while (last < 100) {
		assert_int_equal(hako_waitset_wait(f->ws, HTU_TIMEOUT_USEC, ev, NCH, &n), 0);
		assert_int_equal(n, 1);
		assert_true(ev[0].seq > last);
		last = ev[0].seq;
	}
	assert_true(htu_join_child(pid, HTU_TIMEOUT_USEC));
}

/* The slots: HAKO_WAITSET_MAX per domain, and a dead process's slot is taken again. */
static void child_takes_slots(void *p)
{
	struct fx *f = p;
	hako_domain_t *d;
	hako_waitset_t *ws;
	HTU_CHECK_RC(hako_domain_open(f->name, &d), 0);
	for (int i = 1; i < HAKO_WAITSET_MAX; i++) {
		HTU_CHECK_RC(hako_waitset_create(d, &ws), 0); /* never destroyed: the child exits */
	}
	HTU_CHECK_RC(hako_waitset_create(d, &ws), HAKO_ENOSPC);
}

SETUP(slots)
static void test_slots(void **state)
{
	struct fx *f = *state;
	pid_t pid = htu_fork(child_takes_slots, f);
	assert_true(pid > 0);
	assert_true(htu_join_child(pid, HTU_TIMEOUT_USEC));
	/* The child is gone: its 63 slots are free again. */
	hako_waitset_t *more[HAKO_WAITSET_MAX];
	for (int i = 1; i < HAKO_WAITSET_MAX; i++) {
		assert_int_equal(hako_waitset_create(f->dom, &more[i]), 0);
	}
	hako_waitset_t *extra = NULL;
	assert_int_equal(hako_waitset_create(f->dom, &extra), HAKO_ENOSPC);
	assert_null(extra);
	hako_waitset_destroy(more[1]);
	assert_int_equal(hako_waitset_create(f->dom, &more[1]), 0);
	for (int i = 1; i < HAKO_WAITSET_MAX; i++) {
		hako_waitset_destroy(more[i]);
	}
}

/* A domain reset clears every channel's writes: not an event; a write after it is. */
SETUP(reset)
static void test_reset(void **state)
{
	struct fx *f = *state;
	hako_waitset_event_t ev[NCH];
	int n = 0;
	assert_int_equal(hako_waitset_add(f->ws, f->ch[0], NULL), 0);
	put(f->ch[0], 1);
	put(f->ch[0], 2);
	assert_int_equal(hako_waitset_wait(f->ws, 0, ev, NCH, &n), 0);
	assert_int_equal(ev[0].seq, 2);
	hako_master_config_t mc = {1000, 1000, 0};
	assert_int_equal(hako_master_start(f->dom, &mc, &f->master), 0);
	assert_int_equal(hako_domain_reset(f->dom), 0);
	assert_int_equal(hako_domain_wait_state(f->dom, HAKO_STATE_STOPPED, HTU_TIMEOUT_USEC), 0);
	assert_int_equal(hako_waitset_wait(f->ws, 0, ev, NCH, &n), HAKO_ETIMEDOUT);
	put(f->ch[0], 3);
	assert_int_equal(hako_waitset_wait(f->ws, 0, ev, NCH, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].seq, 1);
}

struct racer {
	hako_channel_t *ch[2];
	int writes;
};

static void *race_writer(void *p)
{
	struct racer *r = p;
	for (int i = 0; i < r->writes; i++) {
		put(r->ch[i & 1], (uint8_t)i);
		if ((i & 255) == 0) {
			sched_yield();
		}
	}
	return NULL;
}

/* A writer racing the waiter on two channels: every write is eventually seen (the last
 * number of each channel is reported), whatever the interleaving. */
SETUP(no_lost_wakeup)
static void test_no_lost_wakeup(void **state)
{
	struct fx *f = *state;
	struct racer r = {{f->ch[0], f->ch[1]}, 20000};
	assert_int_equal(hako_waitset_add(f->ws, f->ch[0], (void *)0), 0);
	assert_int_equal(hako_waitset_add(f->ws, f->ch[1], (void *)1), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, race_writer, &r), 0);
	uint64_t last[2] = {0, 0};
	const uint64_t want = (uint64_t)r.writes / 2;
	while (last[0] < want || last[1] < want) {
		hako_waitset_event_t ev[2];
		int n = 0;
		int rc = hako_waitset_wait(f->ws, HTU_TIMEOUT_USEC, ev, 2, &n);
		if (rc != 0) {
			pthread_join(t, NULL);
			fail_msg("wait: %d after %llu / %llu writes seen", rc,
			         (unsigned long long)last[0], (unsigned long long)last[1]);
		}
		for (int k = 0; k < n; k++) {
			intptr_t i = (intptr_t)ev[k].user;
			assert_true(ev[k].seq > last[i]);
			last[i] = ev[k].seq;
		}
	}
	pthread_join(t, NULL);
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup_##name, teardown)

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    T(reports_written), T(batches), T(wakes),          T(other_process),
	    T(slots),           T(reset),   T(no_lost_wakeup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
