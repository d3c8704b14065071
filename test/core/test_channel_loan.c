/* Read loans (hako_channel_read_loan / hako_channel_read_release): the PDU lent in place, the
 * release saying whether it stayed intact; a reader holding a loan while another process writes
 * 1,000 times; a reader killed while holding one. */
#define _GNU_SOURCE
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

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name("rloan", f->name, sizeof(f->name));
	*state = f;
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 16;
	cfg.arena_bytes = 4 << 20;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	free(f);
	return 0;
}

/* One process: what a loan lends, when release confirms it, misuse. */
static void test_loan_release(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch, *other;
	assert_int_equal(hako_channel_create(f->dom, "r", 1, 100, &ch), 0);
	assert_int_equal(hako_channel_create(f->dom, "r", 2, 100, &other), 0);
	hako_channel_read_loan_t a, b;
	assert_int_equal(hako_channel_read_loan(NULL, &a), HAKO_EINVAL);
	assert_null(a.data);
	assert_int_equal(hako_channel_read_loan(ch, NULL), HAKO_EINVAL);
	assert_int_equal(hako_channel_read_release(ch, NULL), HAKO_EINVAL);

	/* Never written: an empty PDU, write 0, confirmed. */
	assert_int_equal(hako_channel_read_loan(ch, &a), 0);
	assert_non_null(a.data);
	assert_int_equal(a.len, 0);
	assert_int_equal(a.seq, 0);
	assert_int_equal(hako_channel_read_release(other, &a), HAKO_EINVAL); /* not its loan */
	assert_int_equal(hako_channel_read_release(NULL, &a), HAKO_EINVAL);
	assert_int_equal(hako_channel_read_release(ch, &a), 0);
	assert_int_equal(hako_channel_read_release(ch, &a), HAKO_ESTATE); /* released */

	/* The newest write, in place: two loans of one write lend the same bytes. */
	assert_int_equal(hako_channel_write(ch, "hello", 5), 0);
	assert_int_equal(hako_channel_read_loan(ch, &a), 0);
	assert_int_equal(hako_channel_read_loan(ch, &b), 0);
	assert_int_equal(a.len, 5);
	assert_int_equal(a.seq, 1);
	assert_memory_equal(a.data, "hello", 5);
	assert_ptr_equal(a.data, b.data);
	assert_int_equal(hako_channel_read_release(ch, &b), 0);

	/* The next write goes to the other buffer: the loan of write 1 survives it. */
	assert_int_equal(hako_channel_write(ch, "world!", 6), 0);
	assert_int_equal(hako_channel_read_loan(ch, &b), 0);
	assert_int_equal(b.seq, 2);
	assert_int_equal(b.len, 6);
	assert_memory_equal(b.data, "world!", 6);
	assert_ptr_not_equal(a.data, b.data);
	assert_memory_equal(a.data, "hello", 5);
	assert_int_equal(hako_channel_read_release(ch, &a), 0);

	/* Write 3 reuses write 1's buffer: a write loan lends the very bytes the read loan did. */
	assert_int_equal(hako_channel_read_loan(ch, &a), 0); /* write 2 */
	void *wbuf;
	assert_int_equal(hako_channel_loan(ch, &wbuf, NULL), 0);
	/* A write loan open: readers still get write 2. */
	hako_channel_read_loan_t c;
	assert_int_equal(hako_channel_read_loan(ch, &c), 0);
	assert_int_equal(c.seq, 2);
	assert_int_equal(hako_channel_read_release(ch, &c), 0);
	memcpy(wbuf, "three", 5);
	assert_int_equal(hako_channel_commit(ch, 5), 0);
	assert_int_equal(hako_channel_read_loan(ch, &c), 0);
	assert_int_equal(c.seq, 3);
	assert_ptr_equal(c.data, wbuf);
	assert_int_equal(hako_channel_read_release(ch, &c), 0);
	/* Write 2's loan survived write 3; write 4 overwrites its buffer: void. */
	assert_int_equal(hako_channel_write(ch, "four", 4), 0);
	assert_int_equal(hako_channel_read_release(ch, &a), HAKO_EAGAIN);
	assert_int_equal(hako_channel_read_release(ch, &b), HAKO_EAGAIN); /* the same loan */
	/* A cancelled write loan over a lent buffer voids that loan too (it was opened). */
	assert_int_equal(hako_channel_read_loan(ch, &a), 0); /* write 4, buffer 0 */
	assert_int_equal(hako_channel_read_loan(ch, &b), 0);
	assert_int_equal(hako_channel_write(ch, "five", 4), 0);  /* buffer 1 */
	assert_int_equal(hako_channel_loan(ch, &wbuf, NULL), 0); /* buffer 0 */
	assert_ptr_equal(wbuf, a.data);
	assert_int_equal(hako_channel_cancel(ch), 0);
	assert_int_equal(hako_channel_read_release(ch, &a), HAKO_EAGAIN);
	assert_int_equal(hako_channel_read_release(ch, &b), HAKO_EAGAIN);
	/* A reset voids every loan. */
	assert_int_equal(hako_channel_read_loan(ch, &a), 0);
	assert_int_equal(a.seq, 5);
	assert_int_equal(hako_domain_reset(f->dom), 0);
	assert_int_equal(hako_channel_read_release(ch, &a), HAKO_EAGAIN);
	assert_int_equal(hako_channel_read_release(ch, &a), HAKO_ESTATE);
	assert_int_equal(hako_channel_read_loan(ch, &a), 0);
	assert_int_equal(a.seq, 0);
	assert_int_equal(a.len, 0);
	assert_int_equal(hako_channel_read_release(ch, &a), 0);
}

/* A reader holds a loan while a writer process writes 1,000 PDUs of 64 KiB (every 64-bit word =
 * the write number; every other one through a write loan). The writer finishes while the loan is
 * held; the reader meanwhile takes and checks loan after loan: what release confirms is never
 * torn and always the write the loan named. */
#define WORDS  (64 * 1024 / 8)
#define WRITES 1000
struct race {
	char name[HAKO_NAME_MAX];
	_Atomic int go;
	_Atomic int writes; /* done by the writer */
};

static void race_writer(void *arg)
{
	struct race *r = arg;
	hako_domain_t *dom = NULL;
	hako_channel_t *ch = NULL;
	HTU_CHECK_RC(hako_domain_open(r->name, &dom), 0);
	HTU_CHECK_RC(hako_channel_lookup(dom, "r", 1, &ch), 0);
	static uint64_t pdu[WORDS];
	hako_time_t deadline = hako_now_usec() + HTU_TIMEOUT_USEC;
	while (!atomic_load(&r->go)) {
		HTU_CHECK(hako_now_usec() < deadline);
	}
	/* Write 1 was the parent's: this writes 2 .. WRITES + 1. */
	for (uint64_t k = 2; k <= WRITES + 1; k++) {
		if (k % 2 == 0) {
			void *buf;
			HTU_CHECK_RC(hako_channel_loan(ch, &buf, NULL), 0);
			uint64_t *w = buf;
			for (size_t i = 0; i < WORDS; i++) {
				w[i] = k;
			}
			HTU_CHECK_RC(hako_channel_commit(ch, sizeof(pdu)), 0);
		} else {
			for (size_t i = 0; i < WORDS; i++) {
				pdu[i] = k;
			}
			HTU_CHECK_RC(hako_channel_write(ch, pdu, sizeof(pdu)), 0);
		}
		atomic_store(&r->writes, (int)(k - 1));
	}
	hako_domain_close(dom);
}

/* 1 if the loan's PDU is not write `seq` throughout (read word by word, in place). */
static int torn(const hako_channel_read_loan_t *l)
{
	const uint64_t *w = l->data;
	if (l->len != WORDS * 8) {
		return 1;
	}
	for (size_t i = 0; i < WORDS; i++) {
		if (w[i] != l->seq) {
			return 1;
		}
	}
	return 0;
}

static void test_held_while_writer_writes(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, "r", 1, WORDS * 8, &ch), 0);
	static uint64_t pdu[WORDS];
	for (size_t i = 0; i < WORDS; i++) {
		pdu[i] = 1;
	}
	assert_int_equal(hako_channel_write(ch, pdu, sizeof(pdu)), 0);
	struct race *r = htu_shared_alloc(sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", f->name);
	pid_t pid = htu_fork(race_writer, r);

	hako_channel_read_loan_t held;
	assert_int_equal(hako_channel_read_loan(ch, &held), 0);
	assert_int_equal(held.seq, 1);
	assert_int_equal(torn(&held), 0);
	atomic_store(&r->go, 1);
	uint64_t confirmed = 0, confirmed_torn = 0, voided = 0, back = 0, last = 0;
	hako_time_t deadline = hako_now_usec() + HTU_TIMEOUT_USEC;
	while (atomic_load(&r->writes) < WRITES && hako_now_usec() < deadline &&
	       !htu_child_exited(pid)) {
		hako_channel_read_loan_t l;
		assert_int_equal(hako_channel_read_loan(ch, &l), 0);
		int t = torn(&l);
		uint64_t seq = l.seq;
		if (hako_channel_read_release(ch, &l) == 0) {
			confirmed++;
			confirmed_torn += t;
			back += seq < last;
			last = seq;
		} else {
			voided++;
		}
	}
	/* The writer was never held up by the loan: all its writes are done while it is held. */
	assert_int_equal(atomic_load(&r->writes), WRITES);
	assert_true(htu_join_child(pid, HTU_TIMEOUT_USEC));
	print_message(
	    "  %llu loans confirmed (%llu of them torn), %llu void while the writer ran\n",
	    (unsigned long long)confirmed, (unsigned long long)confirmed_torn,
	    (unsigned long long)voided);
	assert_int_equal(confirmed_torn, 0);
	assert_int_equal(back, 0);
	/* The held loan was overwritten hundreds of times: void. */
	assert_int_equal(held.seq, 1);
	assert_int_equal(hako_channel_read_release(ch, &held), HAKO_EAGAIN);
	/* Quiet now: the last write, confirmed. */
	hako_channel_read_loan_t l;
	assert_int_equal(hako_channel_read_loan(ch, &l), 0);
	assert_int_equal(l.seq, WRITES + 1);
	assert_int_equal(torn(&l), 0);
	assert_int_equal(hako_channel_read_release(ch, &l), 0);
	htu_shared_free(r, sizeof(*r));
}

/* A reader killed while it holds a loan leaves nothing behind: writers, readers and loans of the
 * channel go on as before, in this process and in a new one. */
struct killed {
	char name[HAKO_NAME_MAX];
	_Atomic int loaned;
	_Atomic uint64_t seq; /* what the loan lent */
};

static void killed_reader(void *arg)
{
	struct killed *k = arg;
	hako_domain_t *dom = NULL;
	hako_channel_t *ch = NULL;
	hako_channel_read_loan_t l;
	HTU_CHECK_RC(hako_domain_open(k->name, &dom), 0);
	HTU_CHECK_RC(hako_channel_lookup(dom, "r", 1, &ch), 0);
	HTU_CHECK_RC(hako_channel_read_loan(ch, &l), 0);
	atomic_store(&k->seq, l.seq);
	atomic_store(&k->loaned, 1);
	for (;;) {
		pause(); /* killed here, the loan held */
	}
}

static void late_reader(void *arg)
{
	struct killed *k = arg;
	hako_domain_t *dom = NULL;
	hako_channel_t *ch = NULL;
	hako_channel_read_loan_t l;
	HTU_CHECK_RC(hako_domain_open(k->name, &dom), 0);
	HTU_CHECK_RC(hako_channel_lookup(dom, "r", 1, &ch), 0);
	HTU_CHECK_RC(hako_channel_read_loan(ch, &l), 0);
	HTU_CHECK_RC(l.seq, 4);
	HTU_CHECK(l.len == 4096 && ((const unsigned char *)l.data)[4095] == 4);
	HTU_CHECK_RC(hako_channel_read_release(ch, &l), 0);
	hako_domain_close(dom);
}

static void test_killed_reader(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, "r", 1, 4096, &ch), 0);
	static unsigned char pdu[4096], out[4096];
	memset(pdu, 1, sizeof(pdu));
	assert_int_equal(hako_channel_write(ch, pdu, sizeof(pdu)), 0);
	struct killed *k = htu_shared_alloc(sizeof(*k));
	snprintf(k->name, sizeof(k->name), "%s", f->name);
	pid_t pid = htu_fork(killed_reader, k);
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&k->loaned) || htu_child_exited(pid), HTU_TIMEOUT_USEC);
	assert_true(ok && atomic_load(&k->loaned));
	assert_int_equal(atomic_load(&k->seq), 1);
	htu_kill_child(pid);
	/* Writes over the dead reader's buffer, each confirmed by a loan and read by a copy. */
	for (unsigned char v = 2; v <= 4; v++) {
		memset(pdu, v, sizeof(pdu));
		if (v == 3) {
			void *buf;
			assert_int_equal(hako_channel_loan(ch, &buf, NULL), 0);
			memcpy(buf, pdu, sizeof(pdu));
			assert_int_equal(hako_channel_commit(ch, sizeof(pdu)), 0);
		} else {
			assert_int_equal(hako_channel_write(ch, pdu, sizeof(pdu)), 0);
		}
		hako_channel_read_loan_t l;
		assert_int_equal(hako_channel_read_loan(ch, &l), 0);
		assert_int_equal(l.seq, v);
		assert_int_equal(l.len, sizeof(pdu));
		assert_memory_equal(l.data, pdu, sizeof(pdu));
		assert_int_equal(hako_channel_read_release(ch, &l), 0);
		size_t len = 0;
		uint64_t seq = 0;
		assert_int_equal(hako_channel_read(ch, out, sizeof(out), &len, &seq), 0);
		assert_int_equal(seq, v);
		assert_memory_equal(out, pdu, sizeof(pdu));
	}
	/* Another process's loans work too. */
	assert_true(htu_join_child(htu_fork(late_reader, k), HTU_TIMEOUT_USEC));
	htu_shared_free(k, sizeof(*k));
}

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_loan_release, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_held_while_writer_writes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_killed_reader, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
