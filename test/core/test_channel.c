/* PDU channels: create / lookup, capacities, sizes, the write sequence number, waiting for
 * writes, channels created while running, reset, loans (commit, cancel, laps, a killed loaner). */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hako/domain.h"
#include "hako_test_util.h"

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_member_t *m;
	pthread_t thread;
	int thread_started;
};

static int setup_with(void **state, const char *test, uint32_t max_channels, uint64_t arena)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name(test, f->name, sizeof(f->name));
	*state = f;
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = max_channels;
	cfg.arena_bytes = arena;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->thread_started) {
		pthread_join(f->thread, NULL);
	}
	hako_member_unregister(f->m);
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	free(f);
	return 0;
}

#define SETUP(test, max_channels, arena)                                                           \
	static int setup_##test(void **state)                                                      \
	{                                                                                          \
		return setup_with(state, #test, max_channels, arena);                              \
	}

SETUP(create_lookup, 16, 1 << 20)
static void test_create_lookup(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch = NULL, *found = NULL;
	assert_int_equal(hako_channel_lookup(f->dom, "robot", 3, &found), HAKO_ENOENT);
	assert_null(found);
	assert_int_equal(hako_channel_create(f->dom, "robot", 3, 100, &ch), 0);
	assert_non_null(ch);
	assert_int_equal(hako_channel_size(ch), 100);
	assert_string_equal(hako_channel_robot(ch), "robot");
	assert_int_equal(hako_channel_id(ch), 3);
	assert_int_equal(hako_channel_seq(ch), 0);
	assert_int_equal(hako_channel_lookup(f->dom, "robot", 3, &found), 0);
	assert_ptr_equal(found, ch);
	assert_int_equal(hako_channel_index(found), hako_channel_index(ch));

	/* Same key, same size: the same channel; another size is refused. */
	hako_channel_t *again = NULL;
	assert_int_equal(hako_channel_create(f->dom, "robot", 3, 100, &again), 0);
	assert_int_equal(hako_channel_index(again), hako_channel_index(ch));
	assert_int_equal(hako_channel_create(f->dom, "robot", 3, 101, &again), HAKO_ESIZE);
	assert_null(again);
	assert_int_equal(hako_channel_create(f->dom, "robot", 3, 99, &again), HAKO_ESIZE);

	/* Keys differ by robot and by id. */
	hako_channel_t *other_id, *other_robot;
	assert_int_equal(hako_channel_create(f->dom, "robot", 4, 100, &other_id), 0);
	assert_int_equal(hako_channel_create(f->dom, "robot2", 3, 50, &other_robot), 0);
	assert_int_not_equal(hako_channel_index(other_id), hako_channel_index(ch));
	assert_int_not_equal(hako_channel_index(other_robot), hako_channel_index(ch));
	assert_int_not_equal(hako_channel_index(other_robot), hako_channel_index(other_id));
	assert_int_equal(hako_channel_lookup(f->dom, "robot2", 4, &found), HAKO_ENOENT);

	/* Found through another handle of the domain (another process would do the same). */
	hako_domain_t *other;
	assert_int_equal(hako_domain_open(f->name, &other), 0);
	int r = hako_channel_lookup(other, "robot2", 3, &found);
	size_t size = r == 0 ? hako_channel_size(found) : 0;
	hako_domain_close(other);
	assert_int_equal(r, 0);
	assert_int_equal(size, 50);

	hako_channel_info_t list[8];
	int count = -1;
	assert_int_equal(hako_domain_list_channels(f->dom, list, 8, &count), 0);
	assert_int_equal(count, 3);
	assert_string_equal(list[0].robot, "robot");
	assert_int_equal(list[0].channel_id, 3);
	assert_int_equal(list[0].size, 100);
	assert_int_equal(list[2].size, 50);
	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_int_equal(info.channel_count, 3);
	assert_true(info.arena_used >= 2 * (100 + 100 + 50));
}

SETUP(bad_arguments, 16, 1 << 20)
static void test_bad_arguments(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch = NULL;
	char robot[HAKO_NAME_MAX + 1];
	memset(robot, 'r', HAKO_NAME_MAX);
	robot[HAKO_NAME_MAX] = '\0';
	assert_int_equal(hako_channel_create(f->dom, "r", 0, 0, &ch), HAKO_EINVAL);
	assert_int_equal(hako_channel_create(f->dom, "r", -1, 8, &ch), HAKO_EINVAL);
	assert_int_equal(hako_channel_create(f->dom, "", 0, 8, &ch), HAKO_EINVAL);
	assert_int_equal(hako_channel_create(f->dom, NULL, 0, 8, &ch), HAKO_EINVAL);
	assert_int_equal(hako_channel_create(f->dom, robot, 0, 8, &ch), HAKO_ENAMETOOLONG);
	assert_int_equal(hako_channel_create(NULL, "r", 0, 8, &ch), HAKO_EINVAL);
	assert_null(ch);
	assert_int_equal(hako_channel_write(NULL, "x", 1), HAKO_EINVAL);
	assert_int_equal(hako_channel_read(NULL, robot, 1, NULL, NULL), HAKO_EINVAL);
	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_int_equal(info.channel_count, 0);
	assert_int_equal(info.arena_used, 0);
}

SETUP(channel_capacity, 5, 1 << 20)
static void test_channel_capacity(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch;
	for (int i = 0; i < 5; i++) {
		assert_int_equal(hako_channel_create(f->dom, "r", i, 32, &ch), 0);
	}
	assert_int_equal(hako_channel_create(f->dom, "r", 5, 32, &ch), HAKO_ENOSPC);
	assert_null(ch);
	/* Existing channels are still found (and "created") when the table is full. */
	assert_int_equal(hako_channel_create(f->dom, "r", 4, 32, &ch), 0);
	assert_int_equal(hako_channel_id(ch), 4);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(hako_channel_lookup(f->dom, "r", i, &ch), 0);
		assert_int_equal(hako_channel_id(ch), i);
	}
}

SETUP(arena_capacity, 64, 8192)
static void test_arena_capacity(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch;
	/* Two buffers of 4096 bytes fill the 8 KiB arena exactly. */
	assert_int_equal(hako_channel_create(f->dom, "big", 0, 4096, &ch), 0);
	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_int_equal(info.arena_used, 8192);
	assert_int_equal(hako_channel_create(f->dom, "small", 0, 1, &ch), HAKO_ENOSPC);
	assert_null(ch);
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_int_equal(info.channel_count, 1);
	assert_int_equal(info.arena_used, 8192);
	/* The full channel is usable to its last byte. */
	assert_int_equal(hako_channel_lookup(f->dom, "big", 0, &ch), 0);
	uint8_t buf[4096], out[4096];
	for (size_t i = 0; i < sizeof(buf); i++) {
		buf[i] = (uint8_t)(i * 7 + 1);
	}
	assert_int_equal(hako_channel_write(ch, buf, sizeof(buf)), 0);
	assert_int_equal(hako_channel_write(ch, buf, sizeof(buf)), 0); /* the other buffer */
	size_t len = 0;
	assert_int_equal(hako_channel_read(ch, out, sizeof(out), &len, NULL), 0);
	assert_int_equal(len, 4096);
	assert_memory_equal(buf, out, sizeof(buf));
}

SETUP(read_write_sizes, 16, 1 << 20)
static void test_read_write_sizes(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, "r", 1, 16, &ch), 0);
	char buf[32] = "abcdefghijklmnopqrstuvwxyz";
	size_t len = 99;
	uint64_t seq = 99;

	/* Never written: empty, seq 0. */
	assert_int_equal(hako_channel_read(ch, buf, sizeof(buf), &len, &seq), 0);
	assert_int_equal(len, 0);
	assert_int_equal(seq, 0);

	assert_int_equal(hako_channel_write(ch, buf, 17), HAKO_ETOOBIG);
	assert_int_equal(hako_channel_seq(ch), 0);
	assert_int_equal(hako_channel_write(ch, "0123456789ABCDEF", 16), 0);
	assert_int_equal(hako_channel_seq(ch), 1);

	/* A small buffer gets the first bytes and ETOOBIG, with the real length. */
	char small[4] = {0};
	assert_int_equal(hako_channel_read(ch, small, sizeof(small), &len, &seq), HAKO_ETOOBIG);
	assert_memory_equal(small, "0123", 4);
	assert_int_equal(len, 16);
	assert_int_equal(seq, 1);

	/* A shorter PDU has its own length. */
	assert_int_equal(hako_channel_write(ch, "xyz", 3), 0);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(hako_channel_read(ch, buf, sizeof(buf), &len, &seq), 0);
	assert_int_equal(len, 3);
	assert_int_equal(seq, 2);
	assert_memory_equal(buf, "xyz", 3);
}

/* NULL buffers with length 0 are accepted by the API (only NULL with a length is EINVAL): an
 * empty write and a length probe. Under -fsanitize=undefined these must not memcpy NULL. */
SETUP(null_write_zero_length, 16, 1 << 20)
static void test_null_write_zero_length(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, "r", 1, 16, &ch), 0);
	assert_int_equal(hako_channel_write(ch, "xyz", 3), 0);
	assert_int_equal(hako_channel_write(ch, NULL, 0), 0); /* empty writes are writes too */
	char buf[16];
	size_t len = 9;
	uint64_t seq = 0;
	assert_int_equal(hako_channel_read(ch, buf, sizeof(buf), &len, &seq), 0);
	assert_int_equal(len, 0);
	assert_int_equal(seq, 2);
}

SETUP(null_read_zero_length, 16, 1 << 20)
static void test_null_read_zero_length(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, "r", 1, 16, &ch), 0);
	assert_int_equal(hako_channel_write(ch, "xyz", 3), 0);
	size_t len = 0;
	uint64_t seq = 0;
	assert_int_equal(hako_channel_read(ch, NULL, 0, &len, &seq), HAKO_ETOOBIG);
	assert_int_equal(len, 3);
	assert_int_equal(seq, 1);
}

SETUP(seq_and_latest, 16, 1 << 20)
static void test_seq_and_latest(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, "r", 1, sizeof(uint64_t), &ch), 0);
	uint64_t seen = hako_channel_seq(ch);
	for (uint64_t i = 1; i <= 1000; i++) {
		uint64_t v = i * 0x9e3779b97f4a7c15ull;
		assert_int_equal(hako_channel_write(ch, &v, sizeof(v)), 0);
		assert_int_equal(hako_channel_seq(ch), i);
		if (i % 3 == 0) {
			/* new data is detected through the sequence number */
			assert_true(hako_channel_seq(ch) != seen);
			seen = hako_channel_seq(ch);
			assert_true(hako_channel_seq(ch) == seen);
			uint64_t out = 0, seq = 0;
			size_t len = 0;
			assert_int_equal(hako_channel_read(ch, &out, sizeof(out), &len, &seq), 0);
			assert_int_equal(seq, i);
			assert_int_equal(len, sizeof(out));
			assert_true(out == v); /* the latest, never an older one */
		}
	}
	hako_channel_info_t info;
	int count;
	assert_int_equal(hako_domain_list_channels(f->dom, &info, 1, &count), 0);
	assert_int_equal(info.seq, 1000);
}

/* The state letter of thread `tid` of this process (R running, S sleeping, ...), '?' if unknown. */
static char thread_state(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return '?';
	}
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the name may hold anything: the state follows ") " */
	return p != NULL && p[1] == ' ' ? p[2] : '?';
}

/* A waiter that must be asleep before the event that wakes it, so that the wake-up is what is
 * tested. In the waits below the waiting thread sleeps only on the channel's futex, and it
 * cannot return before the event: seen asleep, it sleeps there. */
struct wake_after_sleep {
	pid_t waiter;
	_Atomic int saw_sleep; /* the waiter was asleep when the event came */
	hako_channel_t *ch;    /* the event: a write to ch, or (ch NULL) a reset of dom */
	hako_domain_t *dom;
};

static void *wake_after_sleep_main(void *p)
{
	struct wake_after_sleep *w = p;
	int ok;
	HTU_WAIT_UNTIL(ok, thread_state(w->waiter) == 'S', HTU_TIMEOUT_USEC);
	atomic_store(&w->saw_sleep, ok);
	if (w->ch != NULL) {
		uint32_t v = 42;
		hako_channel_write(w->ch, &v, sizeof(v));
	} else {
		hako_domain_reset(w->dom);
	}
	return NULL;
}

static pid_t self_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

SETUP(wait_wakes, 16, 1 << 20)
static void test_wait_wakes(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, "r", 1, 4, &ch), 0);
	uint64_t seen = hako_channel_seq(ch);

	/* Sleeping on the futex at once (spin 0) and after a spin phase; written once asleep. */
	for (int spin = 0; spin <= 1; spin++) {
		static struct wake_after_sleep w;
		memset(&w, 0, sizeof(w));
		w.waiter = self_tid();
		w.ch = ch;
		assert_int_equal(pthread_create(&f->thread, NULL, wake_after_sleep_main, &w), 0);
		f->thread_started = 1;
		assert_int_equal(hako_channel_wait(ch, seen, spin ? 200 : 0, HTU_TIMEOUT_USEC), 0);
		assert_true(hako_channel_seq(ch) == seen + 1);
		pthread_join(f->thread, NULL);
		f->thread_started = 0;
		assert_true(atomic_load(&w.saw_sleep));
		seen = hako_channel_seq(ch);
	}
	/* Already newer than `seen`: returns at once. */
	assert_int_equal(hako_channel_wait(ch, seen - 1, 0, 0), 0);
	assert_int_equal(hako_channel_wait(NULL, 0, 0, 0), HAKO_EINVAL);
}

SETUP(wait_times_out, 16, 1 << 20)
static void test_wait_times_out(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, "r", 1, 4, &ch), 0);
	assert_int_equal(hako_channel_write(ch, "abcd", 4), 0);
	uint64_t seen = hako_channel_seq(ch);
	assert_int_equal(hako_channel_wait(ch, seen, 0, 20000), HAKO_ETIMEDOUT);
	assert_int_equal(hako_channel_wait(ch, seen, 100, 20000), HAKO_ETIMEDOUT);
	assert_int_equal(hako_channel_wait(ch, seen, 0, 0), HAKO_ETIMEDOUT);
	assert_true(hako_channel_seq(ch) == seen);
}

/* Start a run with one member so the domain is Running. */
static void run_with_member(struct fx *f)
{
	assert_int_equal(hako_member_register(f->dom, "asset", 1000, &f->m), 0);
	assert_int_equal(hako_domain_start(f->dom), 0);
	assert_int_equal(hako_member_ack(f->m, HAKO_EVENT_START), 0);
	assert_int_equal(hako_domain_state(f->dom), HAKO_STATE_RUNNING);
}

SETUP(create_after_start, 16, 1 << 20)
static void test_create_after_start(void **state)
{
	struct fx *f = *state;
	run_with_member(f);
	hako_channel_t *ch, *found;
	assert_int_equal(hako_channel_create(f->dom, "late", 7, 24, &ch), 0);
	assert_int_equal(hako_channel_write(ch, "late channel payload 24b", 24), 0);
	hako_domain_t *other;
	assert_int_equal(hako_domain_open(f->name, &other), 0);
	char buf[24] = {0};
	size_t len = 0;
	int r = hako_channel_lookup(other, "late", 7, &found);
	if (r == 0) {
		r = hako_channel_read(found, buf, sizeof(buf), &len, NULL);
	}
	hako_domain_close(other);
	assert_int_equal(r, 0);
	assert_int_equal(len, 24);
	assert_memory_equal(buf, "late channel payload 24b", 24);
}

SETUP(reset_zeroes, 16, 1 << 20)
static void test_reset_zeroes(void **state)
{
	struct fx *f = *state;
	hako_channel_t *a, *b, *untouched;
	assert_int_equal(hako_channel_create(f->dom, "r", 1, 8, &a), 0);
	assert_int_equal(hako_channel_create(f->dom, "r", 2, 300, &b), 0);
	assert_int_equal(hako_channel_create(f->dom, "r", 3, 8, &untouched), 0);
	assert_int_equal(hako_channel_write(a, "AAAAAAAA", 8), 0);
	assert_int_equal(hako_channel_write(a, "aaaaaaaa", 8), 0);
	char big[300];
	memset(big, 'b', sizeof(big));
	assert_int_equal(hako_channel_write(b, big, sizeof(big)), 0);

	/* A reset with no asset completes at once. */
	assert_int_equal(hako_domain_reset(f->dom), 0);
	assert_int_equal(hako_domain_state(f->dom), HAKO_STATE_STOPPED);

	char buf[300];
	size_t len = 1;
	uint64_t seq = 1;
	assert_int_equal(hako_channel_seq(a), 0);
	assert_int_equal(hako_channel_seq(b), 0);
	assert_int_equal(hako_channel_read(a, buf, sizeof(buf), &len, &seq), 0);
	assert_int_equal(len, 0);
	assert_int_equal(seq, 0);
	assert_int_equal(hako_channel_read(b, buf, sizeof(buf), &len, &seq), 0);
	assert_int_equal(len, 0);
	assert_int_equal(hako_channel_seq(untouched), 0);
	/* The channels survive the reset and work as before. */
	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_int_equal(info.channel_count, 3);
	assert_int_equal(hako_channel_write(b, "new", 3), 0);
	assert_int_equal(hako_channel_read(b, buf, sizeof(buf), &len, &seq), 0);
	assert_int_equal(len, 3);
	assert_int_equal(seq, 1);
	assert_memory_equal(buf, "new", 3);
	assert_int_equal(hako_channel_write(b, "newer", 5), 0);
	assert_int_equal(hako_channel_read(b, buf, sizeof(buf), &len, &seq), 0);
	assert_int_equal(len, 5);
	assert_int_equal(seq, 2);
	assert_memory_equal(buf, "newer", 5);
}

/* A reader waiting for a write (asleep) wakes when a reset changes the sequence number. */
SETUP(reset_wakes_waiter, 16, 1 << 20)
static void test_reset_wakes_waiter(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, "r", 1, 8, &ch), 0);
	assert_int_equal(hako_channel_write(ch, "12345678", 8), 0);
	static struct wake_after_sleep w;
	memset(&w, 0, sizeof(w));
	w.waiter = self_tid();
	w.dom = f->dom;
	assert_int_equal(pthread_create(&f->thread, NULL, wake_after_sleep_main, &w), 0);
	f->thread_started = 1;
	assert_int_equal(hako_channel_wait(ch, 1, 0, HTU_TIMEOUT_USEC), 0);
	assert_int_equal(hako_channel_seq(ch), 0);
	pthread_join(f->thread, NULL);
	f->thread_started = 0;
	assert_true(atomic_load(&w.saw_sleep));
}

/* Threads with their own domain handles create the same keys at the same time: one channel
 * per key, whatever the interleaving. */
struct creator {
	const char *domain;
	_Atomic int *go;
	int failures;
};

static void *creator_main(void *p)
{
	struct creator *c = p;
	hako_domain_t *dom;
	if (hako_domain_open(c->domain, &dom) != 0) {
		c->failures = -1;
		return NULL;
	}
	while (!atomic_load(c->go)) {
	}
	for (int i = 0; i < 64; i++) {
		hako_channel_t *ch;
		if (hako_channel_create(dom, i % 2 ? "odd" : "even", i, 24, &ch) != 0 ||
		    hako_channel_id(ch) != i) {
			c->failures++;
		}
	}
	hako_domain_close(dom);
	return NULL;
}

SETUP(concurrent_create, 128, 1 << 20)
static void test_concurrent_create(void **state)
{
	struct fx *f = *state;
	static _Atomic int go;
	atomic_store(&go, 0);
	struct creator c[2] = {{f->name, &go, 0}, {f->name, &go, 0}};
	pthread_t other;
	assert_int_equal(pthread_create(&other, NULL, creator_main, &c[1]), 0);
	assert_int_equal(pthread_create(&f->thread, NULL, creator_main, &c[0]), 0);
	f->thread_started = 1;
	atomic_store(&go, 1);
	pthread_join(other, NULL);
	pthread_join(f->thread, NULL);
	f->thread_started = 0;
	assert_int_equal(c[0].failures, 0);
	assert_int_equal(c[1].failures, 0);
	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_int_equal(info.channel_count, 64);
	for (int i = 0; i < 64; i++) {
		hako_channel_t *ch;
		assert_int_equal(hako_channel_lookup(f->dom, i % 2 ? "odd" : "even", i, &ch), 0);
	}
}

/* In-process seqlock check: one writer thread, the test thread reads and verifies. */
struct hammer {
	hako_channel_t *ch;
	_Atomic int stop;
	_Atomic uint64_t writes;
};

#define HAMMER_WORDS 128

static void fill(uint64_t *w, uint64_t k)
{
	for (int i = 0; i < HAMMER_WORDS - 1; i++) {
		w[i] = k * 0x100000001b3ull + (uint64_t)i;
	}
	w[HAMMER_WORDS - 1] = k;
}

static void *hammer_writer(void *p)
{
	struct hammer *h = p;
	uint64_t w[HAMMER_WORDS];
	for (uint64_t k = 1; !atomic_load(&h->stop); k++) {
		fill(w, k);
		hako_channel_write(h->ch, w, sizeof(w));
		atomic_store(&h->writes, k);
	}
	return NULL;
}

SETUP(threads_never_torn, 16, 1 << 20)
static void test_threads_never_torn(void **state)
{
	struct fx *f = *state;
	static struct hammer h;
	memset(&h, 0, sizeof(h));
	assert_int_equal(hako_channel_create(f->dom, "r", 1, HAMMER_WORDS * 8, &h.ch), 0);
	assert_int_equal(pthread_create(&f->thread, NULL, hammer_writer, &h), 0);
	f->thread_started = 1;
	uint64_t w[HAMMER_WORDS], expect[HAMMER_WORDS], last = 0, distinct = 0, torn = 0;
	uint64_t older = 0, failed = 0;
	hako_time_t end = hako_now_usec() + 300000;
	while (hako_now_usec() < end || distinct < 100) {
		size_t len = 0;
		uint64_t seq = 0;
		if (hako_channel_read(h.ch, w, sizeof(w), &len, &seq) != 0) {
			failed++; /* a channel being written is never corrupt */
		}
		if (hako_now_usec() > end + HTU_TIMEOUT_USEC) {
			break;
		}
		if (seq == 0) {
			continue;
		}
		uint64_t k = w[HAMMER_WORDS - 1];
		fill(expect, k);
		if (len != sizeof(w) || memcmp(w, expect, sizeof(w)) != 0) {
			torn++;
		}
		/* Each buffer holds the newest write of its parity: never older than the label. */
		older += k < seq;
		if (k > last) {
			distinct++;
			last = k;
		}
	}
	atomic_store(&h.stop, 1);
	pthread_join(f->thread, NULL);
	f->thread_started = 0;
	assert_int_equal(failed, 0);
	assert_int_equal(torn, 0);
	assert_int_equal(older, 0);
	assert_true(distinct >= 100);
	assert_true(hako_channel_seq(h.ch) == atomic_load(&h.writes));
}

/* A reader must not see a PDU and then an older one, and the sequence number returned with a
 * PDU is the number of that write. Small PDUs written as fast as possible make the race
 * windows (a writer completing writes between the reader's load of the sequence number and
 * its copy) likely; the test reads for a second and until it has seen a newer write
 * GO_BACK_DISTINCT times (on a loaded machine the writer may not have run at all in that
 * second; on one CPU each time is a turn of the writer), and stops at the first violation.
 * It cannot fail without a bug, it can only miss one. */
#define GO_BACK_DISTINCT 100
struct counter_writer {
	hako_channel_t *ch;
	_Atomic int stop;
};

static void *counter_writer_main(void *p)
{
	struct counter_writer *c = p;
	for (uint64_t k = 1; !atomic_load(&c->stop); k++) {
		hako_channel_write(c->ch, &k, sizeof(k));
	}
	return NULL;
}

SETUP(reads_never_go_back, 16, 1 << 20)
static void test_reads_never_go_back(void **state)
{
	struct fx *f = *state;
	static struct counter_writer c;
	memset(&c, 0, sizeof(c));
	assert_int_equal(hako_channel_create(f->dom, "r", 1, sizeof(uint64_t), &c.ch), 0);
	assert_int_equal(pthread_create(&f->thread, NULL, counter_writer_main, &c), 0);
	f->thread_started = 1;
	uint64_t last = 0, last_seq = 0, back = 0, mislabelled = 0, distinct = 0, failed = 0;
	uint64_t ex_k = 0, ex_seq = 0, ex_last = 0;
	hako_time_t start = hako_now_usec(), end = start + 1000000;
	while (back == 0 && mislabelled == 0 &&
	       (hako_now_usec() < end || distinct < GO_BACK_DISTINCT) &&
	       hako_now_usec() < start + HTU_TIMEOUT_USEC) {
		for (int i = 0; i < 1000; i++) {
			uint64_t k = 0, seq = 0;
			size_t len = 0;
			if (hako_channel_read(c.ch, &k, sizeof(k), &len, &seq) != 0) {
				failed++;
				continue;
			}
			if (seq == 0) {
				continue;
			}
			if (k < last && back++ == 0) {
				ex_k = k;
				ex_seq = seq;
				ex_last = last;
			} else if (k != seq && mislabelled++ == 0 && back == 0) {
				ex_k = k;
				ex_seq = seq;
				ex_last = last_seq;
			}
			distinct += k > last;
			last = k > last ? k : last;
			last_seq = seq;
		}
	}
	atomic_store(&c.stop, 1);
	pthread_join(f->thread, NULL);
	f->thread_started = 0;
	if (back != 0) {
		fail_msg("read PDU %llu (labelled seq %llu) after PDU %llu",
		         (unsigned long long)ex_k, (unsigned long long)ex_seq,
		         (unsigned long long)ex_last);
	}
	if (mislabelled != 0) {
		fail_msg("read PDU %llu labelled with seq %llu", (unsigned long long)ex_k,
		         (unsigned long long)ex_seq);
	}
	assert_int_equal(failed, 0);
	assert_true(distinct >= GO_BACK_DISTINCT);
}

/* Loans: commit publishes in place, cancel leaves the previous write, misuse is refused. */
SETUP(loan_commit_cancel, 16, 1 << 20)
static void test_loan_commit_cancel(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, "r", 1, 100, &ch), 0);
	void *buf = NULL;
	size_t cap = 0, len = 0;
	uint64_t seq = 0;
	char out[100];
	assert_int_equal(hako_channel_commit(ch, 1), HAKO_ESTATE);
	assert_int_equal(hako_channel_cancel(ch), HAKO_ESTATE);
	assert_int_equal(hako_channel_loan(ch, NULL, NULL), HAKO_EINVAL);
	assert_int_equal(hako_channel_loan(NULL, &buf, NULL), HAKO_EINVAL);
	/* A cancelled first loan: still nothing written. */
	assert_int_equal(hako_channel_loan(ch, &buf, &cap), 0);
	assert_non_null(buf);
	assert_int_equal(cap, 100);
	memset(buf, 'x', 100);
	assert_int_equal(hako_channel_cancel(ch), 0);
	assert_int_equal(hako_channel_seq(ch), 0);
	assert_int_equal(hako_channel_read(ch, out, sizeof(out), &len, &seq), 0);
	assert_int_equal(len, 0);
	assert_int_equal(seq, 0);
	/* Commit. */
	assert_int_equal(hako_channel_loan(ch, &buf, NULL), 0);
	memcpy(buf, "hello", 5);
	assert_int_equal(hako_channel_commit(ch, 101), HAKO_ETOOBIG); /* still lent */
	assert_int_equal(hako_channel_commit(ch, 5), 0);
	assert_int_equal(hako_channel_commit(ch, 5), HAKO_ESTATE);
	assert_int_equal(hako_channel_seq(ch), 1);
	assert_int_equal(hako_channel_read(ch, out, sizeof(out), &len, &seq), 0);
	assert_int_equal(len, 5);
	assert_int_equal(seq, 1);
	assert_memory_equal(out, "hello", 5);
	/* Write 2 by hako_channel_write, then a cancelled loan over write 1's buffer. */
	assert_int_equal(hako_channel_write(ch, "world!", 6), 0);
	assert_int_equal(hako_channel_loan(ch, &buf, NULL), 0);
	memset(buf, 'y', 100);
	/* Meanwhile readers get write 2. */
	assert_int_equal(hako_channel_read(ch, out, sizeof(out), &len, &seq), 0);
	assert_int_equal(seq, 2);
	assert_int_equal(hako_channel_cancel(ch), 0);
	assert_int_equal(hako_channel_seq(ch), 2);
	assert_int_equal(hako_channel_read(ch, out, sizeof(out), &len, &seq), 0);
	assert_int_equal(len, 6);
	assert_int_equal(seq, 2);
	assert_memory_equal(out, "world!", 6);
	/* The next write reuses the cancelled buffer. */
	assert_int_equal(hako_channel_loan(ch, &buf, NULL), 0);
	memcpy(buf, "three", 5);
	assert_int_equal(hako_channel_commit(ch, 5), 0);
	assert_int_equal(hako_channel_read(ch, out, sizeof(out), &len, &seq), 0);
	assert_int_equal(seq, 3);
	assert_memory_equal(out, "three", 5);
	/* A reset of a channel written by loans. */
	assert_int_equal(hako_domain_reset(f->dom), 0);
	assert_int_equal(hako_channel_seq(ch), 0);
}

/* The lap test: a writer producing PDUs in loaned buffers as fast as it can (every 64-bit word =
 * the write number) while a reader copies: never a torn PDU, the label is the data's number. */
#define LAP_WORDS (64 * 1024 / 8)
struct lapper {
	hako_channel_t *ch;
	_Atomic int stop;
	_Atomic uint64_t writes;
};

static void *lap_writer(void *p)
{
	struct lapper *l = p;
	for (uint64_t k = 1; !atomic_load(&l->stop); k++) {
		void *buf;
		if (hako_channel_loan(l->ch, &buf, NULL) != 0) {
			break;
		}
		uint64_t *w = buf;
		/* Partly written then cancelled every 7th time: a cancelled loan is never read. */
		size_t n = k % 7 == 0 ? LAP_WORDS / 2 : LAP_WORDS;
		for (size_t i = 0; i < n; i++) {
			w[i] = k % 7 == 0 ? ~k : k;
		}
		if (k % 7 == 0) {
			hako_channel_cancel(l->ch);
			continue;
		}
		hako_channel_commit(l->ch, LAP_WORDS * 8);
		atomic_store(&l->writes, k);
	}
	return NULL;
}

SETUP(loan_never_torn, 16, 4 << 20)
static void test_loan_never_torn(void **state)
{
	struct fx *f = *state;
	static struct lapper l;
	memset(&l, 0, sizeof(l));
	assert_int_equal(hako_channel_create(f->dom, "r", 1, LAP_WORDS * 8, &l.ch), 0);
	assert_int_equal(pthread_create(&f->thread, NULL, lap_writer, &l), 0);
	f->thread_started = 1;
	static uint64_t w[LAP_WORDS];
	uint64_t torn = 0, mislabelled = 0, distinct = 0, last_seq = 0, back = 0, failed = 0;
	hako_time_t end = hako_now_usec() + 300000;
	while (hako_now_usec() < end || distinct < 50) {
		size_t len = 0;
		uint64_t seq = 0;
		if (hako_channel_read(l.ch, w, sizeof(w), &len, &seq) != 0) {
			failed++;
		}
		if (hako_now_usec() > end + HTU_TIMEOUT_USEC) {
			break;
		}
		if (seq == 0) {
			continue;
		}
		uint64_t k = w[0];
		for (size_t i = 0; i < LAP_WORDS; i++) {
			if (w[i] != k) {
				torn++;
				break;
			}
		}
		/* Write numbers count cancelled loans out: write n holds producer number k >= n. */
		mislabelled += len != sizeof(w) || k % 7 == 0 || k < seq;
		back += seq < last_seq;
		if (seq > last_seq) {
			distinct++;
			last_seq = seq;
		}
	}
	atomic_store(&l.stop, 1);
	pthread_join(f->thread, NULL);
	f->thread_started = 0;
	assert_int_equal(failed, 0);
	assert_int_equal(torn, 0);
	assert_int_equal(mislabelled, 0);
	assert_int_equal(back, 0);
	assert_true(distinct >= 50);
}

/* A loaner killed between loan and commit: readers keep the previous write meanwhile, the next
 * writer takes the channel over, nothing torn is ever read. */
struct killed_loaner {
	char name[HAKO_NAME_MAX];
	_Atomic int loaned;
};

static void killed_loaner_child(void *arg)
{
	struct killed_loaner *k = arg;
	hako_domain_t *dom = NULL;
	hako_channel_t *ch = NULL;
	void *buf = NULL;
	if (hako_domain_open(k->name, &dom) != 0 || hako_channel_lookup(dom, "r", 1, &ch) != 0 ||
	    hako_channel_loan(ch, &buf, NULL) != 0) {
		_exit(3);
	}
	memset(buf, 0xee, 4096); /* half-produced */
	atomic_store(&k->loaned, 1);
	for (;;) {
		pause(); /* killed here */
	}
}

SETUP(killed_loaner, 16, 1 << 20)
static void test_killed_loaner(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, "r", 1, 4096, &ch), 0);
	static char pdu[4096], out[4096];
	memset(pdu, 1, sizeof(pdu));
	assert_int_equal(hako_channel_write(ch, pdu, sizeof(pdu)), 0);
	struct killed_loaner *k = htu_shared_alloc(sizeof(*k));
	snprintf(k->name, sizeof(k->name), "%s", f->name);
	pid_t pid = htu_fork(killed_loaner_child, k);
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&k->loaned) || htu_child_exited(pid), HTU_TIMEOUT_USEC);
	assert_true(ok && atomic_load(&k->loaned));
	size_t len = 0;
	uint64_t seq = 0;
	assert_int_equal(hako_channel_read(ch, out, sizeof(out), &len, &seq), 0);
	assert_int_equal(seq, 1);
	assert_memory_equal(out, pdu, sizeof(pdu));
	htu_kill_child(pid);
	/* Still the first write, then a write that takes the lock over from the dead pid. */
	assert_int_equal(hako_channel_read(ch, out, sizeof(out), &len, &seq), 0);
	assert_int_equal(seq, 1);
	assert_memory_equal(out, pdu, sizeof(pdu));
	memset(pdu, 2, sizeof(pdu));
	hako_time_t t0 = hako_now_usec();
	assert_int_equal(hako_channel_write(ch, pdu, sizeof(pdu)), 0);
	assert_true(hako_now_usec() - t0 < HTU_TIMEOUT_USEC);
	assert_int_equal(hako_channel_read(ch, out, sizeof(out), &len, &seq), 0);
	assert_int_equal(seq, 2);
	assert_int_equal(len, sizeof(pdu));
	assert_memory_equal(out, pdu, sizeof(pdu));
	/* And a loan after that. */
	void *buf;
	assert_int_equal(hako_channel_loan(ch, &buf, NULL), 0);
	memset(buf, 3, 4096);
	assert_int_equal(hako_channel_commit(ch, 4096), 0);
	assert_int_equal(hako_channel_read(ch, out, sizeof(out), &len, &seq), 0);
	assert_int_equal(seq, 3);
	assert_int_equal((unsigned char)out[4095], 3);
	htu_shared_free(k, sizeof(*k));
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup_##name, teardown)

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    T(create_lookup),
	    T(bad_arguments),
	    T(channel_capacity),
	    T(arena_capacity),
	    T(read_write_sizes),
	    T(seq_and_latest),
	    T(wait_wakes),
	    T(wait_times_out),
	    T(create_after_start),
	    T(reset_zeroes),
	    T(reset_wakes_waiter),
	    T(concurrent_create),
	    T(threads_never_torn),
	    T(reads_never_go_back),
	    T(loan_commit_cancel),
	    T(loan_never_torn),
	    T(killed_loaner),
	    /* last: under -fsanitize=undefined a failure here ends the program */
	    T(null_write_zero_length),
	    T(null_read_zero_length),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
