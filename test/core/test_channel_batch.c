/* Batch writes (hako_channel_batch_*): what a commit publishes, the loan rules, waking readers
 * and wait-sets, a reader that never sees a torn member while a writer commits batches, and a
 * loaner killed while it holds a batch's loans. */
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
#include <unistd.h>

#include "hako/domain.h"
#include "hako_test_util.h"

#define NCH 8

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_channel_t *ch[NCH];
	hako_channel_batch_t *b;
};

/* NCH channels of sizes 24, 48, ... (members of one batch) in a fresh domain. */
static int setup_named(void **state, const char *test)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name(test, f->name, sizeof(f->name));
	*state = f;
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 32;
	cfg.arena_bytes = 1 << 20;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	for (int i = 0; i < NCH; i++) {
		assert_int_equal(
		    hako_channel_create(f->dom, "bot", i, 24 * (size_t)(i + 1), &f->ch[i]), 0);
	}
	assert_int_equal(hako_channel_batch_create(f->ch, NCH, &f->b), 0);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	hako_channel_batch_destroy(f->b);
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	free(f);
	return 0;
}

#define SETUP(test)                                                                                \
	static int setup_##test(void **state)                                                      \
	{                                                                                          \
		return setup_named(state, #test);                                                  \
	}

/* Member i's write w: every byte (i * 31 + w) & 0xff. */
static void fill(void *buf, size_t len, int i, uint64_t w)
{
	memset(buf, (int)((i * 31 + w) & 0xff), len);
}

/* 1 if buf[0..len) is one member's write, whole: every byte the same. */
static int whole(const uint8_t *buf, size_t len)
{
	for (size_t k = 1; k < len; k++) {
		if (buf[k] != buf[0]) {
			return 0;
		}
	}
	return 1;
}

SETUP(create_args)
static void test_create_args(void **state)
{
	struct fx *f = *state;
	hako_channel_batch_t *b = (hako_channel_batch_t *)1;
	assert_int_equal(hako_channel_batch_create(f->ch, 0, &b), HAKO_EINVAL);
	assert_null(b);
	assert_int_equal(hako_channel_batch_create(NULL, 2, &b), HAKO_EINVAL);
	assert_int_equal(hako_channel_batch_create(f->ch, 2, NULL), HAKO_EINVAL);
	/* a channel twice would wait for its own lock */
	hako_channel_t *twice[3] = {f->ch[0], f->ch[1], f->ch[0]};
	assert_int_equal(hako_channel_batch_create(twice, 3, &b), HAKO_EINVAL);
	assert_null(b);
	hako_channel_t *hole[2] = {f->ch[0], NULL};
	assert_int_equal(hako_channel_batch_create(hole, 2, &b), HAKO_EINVAL);
	assert_int_equal(hako_channel_batch_count(f->b), NCH);
	assert_int_equal(hako_channel_batch_count(NULL), 0);
	void *bufs[NCH];
	assert_int_equal(hako_channel_batch_loan(f->b, 0, NCH + 1, bufs), HAKO_EINVAL);
	assert_int_equal(hako_channel_batch_loan(f->b, NCH, 1, bufs), HAKO_EINVAL);
	assert_int_equal(hako_channel_batch_loan(NULL, 0, 1, bufs), HAKO_EINVAL);
	assert_int_equal(hako_channel_batch_commit(f->b, 2, NCH, NULL), HAKO_EINVAL);
	assert_int_equal(hako_channel_batch_cancel(f->b, NCH + 1, 0), HAKO_EINVAL);
	hako_channel_batch_destroy(NULL);
}

/* A commit publishes every member of the range, each one write further, with its length. */
SETUP(commit_publishes)
static void test_commit_publishes(void **state)
{
	struct fx *f = *state;
	void *bufs[NCH];
	size_t lens[NCH];
	for (uint64_t w = 1; w <= 3; w++) {
		assert_int_equal(hako_channel_batch_loan(f->b, 0, NCH, bufs), 0);
		for (int i = 0; i < NCH; i++) {
			assert_non_null(bufs[i]);
			lens[i] = hako_channel_size(f->ch[i]) - (size_t)i;
			fill(bufs[i], lens[i], i, w);
			/* not yet published: readers see the previous write */
			assert_int_equal(hako_channel_seq(f->ch[i]), w - 1);
		}
		assert_int_equal(hako_channel_batch_commit(f->b, 0, NCH, lens), 0);
		for (int i = 0; i < NCH; i++) {
			uint8_t out[256], want[256];
			size_t len = 0;
			uint64_t seq = 0;
			assert_int_equal(hako_channel_read(f->ch[i], out, sizeof(out), &len, &seq),
			                 0);
			assert_int_equal(seq, w);
			assert_int_equal(len, lens[i]);
			fill(want, lens[i], i, w);
			assert_memory_equal(out, want, lens[i]);
		}
	}
	/* a range: only its members move; lens NULL is each channel's size */
	assert_int_equal(hako_channel_batch_loan(f->b, 2, 3, bufs), 0);
	for (int k = 0; k < 3; k++) {
		fill(bufs[k], hako_channel_size(f->ch[2 + k]), 2 + k, 9);
	}
	assert_int_equal(hako_channel_batch_commit(f->b, 2, 3, NULL), 0);
	for (int i = 0; i < NCH; i++) {
		size_t len = 0;
		uint8_t out[256];
		assert_int_equal(hako_channel_read(f->ch[i], out, sizeof(out), &len, NULL), 0);
		int in = i >= 2 && i < 5;
		assert_int_equal(hako_channel_seq(f->ch[i]), in ? 4 : 3);
		assert_int_equal(len, in ? hako_channel_size(f->ch[i])
		                         : hako_channel_size(f->ch[i]) - i);
	}
	/* channel writes and batch writes mix: the counter goes on */
	uint8_t one[24] = {7};
	assert_int_equal(hako_channel_write(f->ch[0], one, sizeof(one)), 0);
	assert_int_equal(hako_channel_seq(f->ch[0]), 4);
	assert_int_equal(hako_channel_batch_loan(f->b, 0, 1, bufs), 0);
	assert_int_equal(hako_channel_batch_commit(f->b, 0, 1, NULL), 0);
	assert_int_equal(hako_channel_seq(f->ch[0]), 5);
}

/* The loan rules: no double loan, no commit without one, all-or-none commits, cancel. */
SETUP(loan_rules)
static void test_loan_rules(void **state)
{
	struct fx *f = *state;
	void *bufs[NCH];
	size_t lens[NCH];
	assert_int_equal(hako_channel_batch_commit(f->b, 0, 1, NULL), HAKO_ESTATE);
	assert_int_equal(hako_channel_batch_loan(f->b, 0, 4, bufs), 0);
	/* overlapping ranges: nothing of the second loan stays */
	assert_int_equal(hako_channel_batch_loan(f->b, 3, 3, bufs), HAKO_ESTATE);
	assert_int_equal(hako_channel_batch_commit(f->b, 4, 1, NULL), HAKO_ESTATE);
	/* a range with a member not loaned: nothing published */
	assert_int_equal(hako_channel_batch_commit(f->b, 0, 5, NULL), HAKO_ESTATE);
	assert_int_equal(hako_channel_seq(f->ch[0]), 0);
	for (int i = 0; i < 4; i++) {
		lens[i] = hako_channel_size(f->ch[i]);
	}
	lens[3]++; /* too big: nothing published, the loans stay */
	assert_int_equal(hako_channel_batch_commit(f->b, 0, 4, lens), HAKO_ETOOBIG);
	assert_int_equal(hako_channel_seq(f->ch[0]), 0);
	lens[3]--;
	for (int i = 0; i < 4; i++) {
		fill(bufs[i], lens[i], i, 1);
	}
	assert_int_equal(hako_channel_batch_commit(f->b, 0, 4, lens), 0);
	assert_int_equal(hako_channel_batch_commit(f->b, 0, 4, lens), HAKO_ESTATE);
	/* cancel: the readers keep write 1 */
	assert_int_equal(hako_channel_batch_loan(f->b, 0, NCH, bufs), 0);
	for (int i = 0; i < NCH; i++) {
		memset(bufs[i], 0xee, hako_channel_size(f->ch[i]));
	}
	assert_int_equal(hako_channel_batch_cancel(f->b, 0, NCH), 0);
	for (int i = 0; i < 4; i++) {
		uint8_t out[256], want[256];
		size_t len = 0;
		uint64_t seq = 0;
		assert_int_equal(hako_channel_read(f->ch[i], out, sizeof(out), &len, &seq), 0);
		assert_int_equal(seq, 1);
		fill(want, lens[i], i, 1);
		assert_memory_equal(out, want, len);
	}
	/* a member committed through its channel handle is no longer the batch's loan */
	assert_int_equal(hako_channel_batch_loan(f->b, 0, 2, bufs), 0);
	assert_int_equal(hako_channel_commit(f->ch[1], 24), 0);
	assert_int_equal(hako_channel_batch_commit(f->b, 0, 2, NULL), HAKO_ESTATE);
	assert_int_equal(hako_channel_batch_cancel(f->b, 0, 2), 0); /* member 0 only */
	assert_int_equal(hako_channel_seq(f->ch[1]), 2);
	assert_int_equal(hako_channel_batch_loan(f->b, 0, 2, bufs), 0);
	assert_int_equal(hako_channel_batch_commit(f->b, 0, 2, NULL), 0);
	assert_int_equal(hako_channel_seq(f->ch[0]), 2);
	assert_int_equal(hako_channel_seq(f->ch[1]), 3);
	/* the locks were let go: a plain write goes through */
	uint8_t one[24] = {1};
	assert_int_equal(hako_channel_write(f->ch[0], one, sizeof(one)), 0);
	/* destroy cancels what is still loaned */
	assert_int_equal(hako_channel_batch_loan(f->b, 0, NCH, bufs), 0);
	hako_channel_batch_destroy(f->b);
	f->b = NULL;
	assert_int_equal(hako_channel_write(f->ch[NCH - 1], one, sizeof(one)), 0);
}

/* Readers asleep on a member, and a wait-set watching one, are woken by a commit. */
struct sleeper {
	hako_channel_t *ch;
	_Atomic int result;
	_Atomic int started;
};

static void *sleep_on(void *arg)
{
	struct sleeper *s = arg;
	atomic_store(&s->started, 1);
	atomic_store(&s->result, hako_channel_wait(s->ch, 0, 0, HTU_TIMEOUT_USEC));
	return NULL;
}

SETUP(wakes)
static void test_wakes(void **state)
{
	struct fx *f = *state;
	struct sleeper s = {f->ch[NCH - 1], -1, 0};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, sleep_on, &s), 0);
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&s.started), HTU_TIMEOUT_USEC);
	assert_true(ok);
	hako_waitset_t *ws;
	assert_int_equal(hako_waitset_create(f->dom, &ws), 0);
	assert_int_equal(hako_waitset_add(ws, f->ch[3], &s), 0);
	void *bufs[NCH];
	assert_int_equal(hako_channel_batch_loan(f->b, 0, NCH, bufs), 0);
	assert_int_equal(hako_channel_batch_commit(f->b, 0, NCH, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&s.result), 0);
	hako_waitset_event_t ev[4];
	int count = 0;
	assert_int_equal(hako_waitset_wait(ws, HTU_TIMEOUT_USEC, ev, 4, &count), 0);
	assert_int_equal(count, 1);
	assert_ptr_equal(ev[0].channel, f->ch[3]);
	assert_int_equal(ev[0].seq, 1);
	hako_waitset_destroy(ws);
}

/* A reader thread reading every member while the writer commits 2,000 batches: every read is
 * one whole write of its member, and a member's write numbers never go back. */
struct torn {
	struct fx *f;
	_Atomic int stop;
	_Atomic uint64_t reads, bad;
};

static void *read_all(void *arg)
{
	struct torn *t = arg;
	uint64_t last[NCH] = {0};
	while (!atomic_load(&t->stop)) {
		for (int i = 0; i < NCH; i++) {
			uint8_t out[256];
			size_t len = 0;
			uint64_t seq = 0;
			if (hako_channel_read(t->f->ch[i], out, sizeof(out), &len, &seq) != 0 ||
			    seq < last[i] ||
			    (seq > 0 &&
			     (len != hako_channel_size(t->f->ch[i]) || !whole(out, len) ||
			      out[0] != (uint8_t)((i * 31 + seq) & 0xff)))) {
				atomic_fetch_add(&t->bad, 1);
			}
			last[i] = seq;
			atomic_fetch_add(&t->reads, 1);
		}
	}
	return NULL;
}

SETUP(no_torn_member)
static void test_no_torn_member(void **state)
{
	struct fx *f = *state;
	struct torn t = {f, 0, 0, 0};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, read_all, &t), 0);
	void *bufs[NCH];
	for (uint64_t w = 1; w <= 2000; w++) {
		assert_int_equal(hako_channel_batch_loan(f->b, 0, NCH, bufs), 0);
		for (int i = 0; i < NCH; i++) {
			/* byte by byte: a reader copying meanwhile would see a mix */
			volatile uint8_t *p = bufs[i];
			for (size_t k = 0; k < hako_channel_size(f->ch[i]); k++) {
				p[k] = (uint8_t)((i * 31 + w) & 0xff);
			}
		}
		assert_int_equal(hako_channel_batch_commit(f->b, 0, NCH, NULL), 0);
	}
	/* the reader has looked at least once more after the last commit */
	uint64_t r0 = atomic_load(&t.reads);
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&t.reads) > r0 + NCH, HTU_TIMEOUT_USEC);
	atomic_store(&t.stop, 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(ok);
	assert_int_equal(atomic_load(&t.bad), 0);
	for (int i = 0; i < NCH; i++) {
		assert_int_equal(hako_channel_seq(f->ch[i]), 2000);
	}
}

/* A process killed while it holds a batch's loans: readers keep the previous writes, and the
 * next writer of each member takes it over. */
struct killed {
	char name[HAKO_NAME_MAX];
	_Atomic int loaned;
};

static void killed_child(void *arg)
{
	struct killed *k = arg;
	hako_domain_t *dom = NULL;
	hako_channel_t *ch[NCH];
	hako_channel_batch_t *b = NULL;
	void *bufs[NCH];
	if (hako_domain_open(k->name, &dom) != 0) {
		_exit(2);
	}
	for (int i = 0; i < NCH; i++) {
		if (hako_channel_lookup(dom, "bot", i, &ch[i]) != 0) {
			_exit(3);
		}
	}
	if (hako_channel_batch_create(ch, NCH, &b) != 0 ||
	    hako_channel_batch_loan(b, 0, NCH, bufs) != 0) {
		_exit(4);
	}
	for (int i = 0; i < NCH; i++) {
		memset(bufs[i], 0xee, hako_channel_size(ch[i]));
	}
	atomic_store(&k->loaned, 1);
	for (;;) {
		pause(); /* killed here */
	}
}

SETUP(killed_loaner)
static void test_killed_loaner(void **state)
{
	struct fx *f = *state;
	void *bufs[NCH];
	assert_int_equal(hako_channel_batch_loan(f->b, 0, NCH, bufs), 0);
	for (int i = 0; i < NCH; i++) {
		fill(bufs[i], hako_channel_size(f->ch[i]), i, 1);
	}
	assert_int_equal(hako_channel_batch_commit(f->b, 0, NCH, NULL), 0);
	struct killed *k = htu_shared_alloc(sizeof(*k));
	snprintf(k->name, sizeof(k->name), "%s", f->name);
	pid_t pid = htu_fork(killed_child, k);
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&k->loaned) || htu_child_exited(pid), HTU_TIMEOUT_USEC);
	assert_true(ok && atomic_load(&k->loaned));
	/* loaned, not published: readers see write 1 */
	for (int i = 0; i < NCH; i++) {
		uint8_t out[256], want[256];
		size_t len = 0;
		uint64_t seq = 0;
		assert_int_equal(hako_channel_read(f->ch[i], out, sizeof(out), &len, &seq), 0);
		assert_int_equal(seq, 1);
		fill(want, len, i, 1);
		assert_memory_equal(out, want, len);
	}
	htu_kill_child(pid);
	/* the batch of this process takes every member over from the dead loaner */
	assert_int_equal(hako_channel_batch_loan(f->b, 0, NCH, bufs), 0);
	for (int i = 0; i < NCH; i++) {
		fill(bufs[i], hako_channel_size(f->ch[i]), i, 2);
	}
	assert_int_equal(hako_channel_batch_commit(f->b, 0, NCH, NULL), 0);
	for (int i = 0; i < NCH; i++) {
		uint8_t out[256], want[256];
		size_t len = 0;
		uint64_t seq = 0;
		assert_int_equal(hako_channel_read(f->ch[i], out, sizeof(out), &len, &seq), 0);
		assert_int_equal(seq, 2);
		fill(want, len, i, 2);
		assert_memory_equal(out, want, len);
	}
	htu_shared_free(k, sizeof(*k));
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup_##name, teardown)

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    T(create_args), T(commit_publishes), T(loan_rules),
	    T(wakes),       T(no_torn_member),   T(killed_loaner),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
