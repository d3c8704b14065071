/* Torn reads across processes: a writer process hammers a 4 KiB channel for ~3 s while a
 * polling reader and a waiting reader (hako_channel_wait) read it. Every PDU carries its
 * number, a pattern derived from it and a 64-bit FNV-1a hash of the rest; every read is
 * verified. Zero torn reads, and many distinct PDUs seen (so the test cannot pass vacuously). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako_test_util.h"

#define PDU_SIZE   4096
#define WORDS      (PDU_SIZE / 8)
#define RUN_USEC   3000000
#define MIN_UNIQUE 100

struct reader_stats {
	_Atomic int ready;
	_Atomic uint64_t reads;
	_Atomic uint64_t distinct;
	_Atomic uint64_t torn;
	_Atomic uint64_t backwards;   /* a PDU older than one read before */
	_Atomic uint64_t older_label; /* data older than the sequence number returned with it */
	_Atomic uint64_t newer_label; /* data newer than the sequence number (see account) */
	_Atomic uint64_t newer_k, newer_seq; /* the first such read */
	_Atomic uint64_t wakeups;            /* hako_channel_wait returns (waiting reader) */
	_Atomic uint64_t empty_wakeups;
};

struct shared {
	_Atomic int go;
	_Atomic int writer_done;
	_Atomic uint64_t writes;
	struct reader_stats r[2];
};

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	struct shared *sh;
};

/* FNV-1a over 64-bit words (cheap enough for the writer to go fast). */
static uint64_t fnv1a64(const uint64_t *w, size_t n)
{
	uint64_t h = 14695981039346656037ull;
	for (size_t i = 0; i < n; i++) {
		h = (h ^ w[i]) * 1099511628211ull;
	}
	return h;
}

/* Word 0: the PDU number k; words 1..WORDS-2: derived from k; last word: the hash. */
static void make_pdu(uint64_t *w, uint64_t k)
{
	w[0] = k;
	for (size_t i = 1; i < WORDS - 1; i++) {
		w[i] = k * 0x9e3779b97f4a7c15ull + i;
	}
	w[WORDS - 1] = fnv1a64(w, WORDS - 1);
}

/* The PDU number, or 0 if the PDU is not one make_pdu wrote. */
static uint64_t check_pdu(const uint64_t *w)
{
	uint64_t k = w[0];
	if (k == 0 || w[WORDS - 1] != fnv1a64(w, WORDS - 1)) {
		return 0;
	}
	for (size_t i = 1; i < WORDS - 1; i++) {
		if (w[i] != k * 0x9e3779b97f4a7c15ull + i) {
			return 0;
		}
	}
	return k;
}

static hako_channel_t *attach(const char *domain)
{
	hako_domain_t *dom;
	hako_channel_t *ch;
	HTU_CHECK_RC(hako_domain_open(domain, &dom), 0);
	HTU_CHECK_RC(hako_channel_lookup(dom, "torn", 0, &ch), 0);
	return ch; /* the domain handle lives as long as the process */
}

static struct fx *g_fx;

static void writer_main(void *p)
{
	(void)p;
	struct shared *sh = g_fx->sh;
	hako_channel_t *ch = attach(g_fx->name);
	static uint64_t buf[WORDS];
	while (!atomic_load(&sh->go)) {
		htu_sleep_usec(1000);
	}
	hako_time_t end = hako_now_usec() + RUN_USEC;
	uint64_t k = 0;
	while (hako_now_usec() < end) {
		for (int i = 0; i < 64; i++) {
			make_pdu(buf, ++k);
			HTU_CHECK_RC(hako_channel_write(ch, buf, PDU_SIZE), 0);
		}
		atomic_store(&sh->writes, k);
	}
	atomic_store(&sh->writer_done, 1);
}

static void account(struct reader_stats *st, const uint64_t *buf, size_t len, uint64_t seq,
                    uint64_t *last)
{
	atomic_fetch_add(&st->reads, 1);
	uint64_t k = len == PDU_SIZE ? check_pdu(buf) : 0;
	if (k == 0) {
		atomic_fetch_add(&st->torn, 1);
		return;
	}
	/* The data is that of write k; the sequence number returned names write seq. Each
	 * buffer holds the newest write of its parity, so k >= seq always. */
	if (k < seq) {
		atomic_fetch_add(&st->older_label, 1);
	} else if (k > seq) {
		if (atomic_fetch_add(&st->newer_label, 1) == 0) {
			atomic_store(&st->newer_k, k);
			atomic_store(&st->newer_seq, seq);
		}
	}
	if (k < *last) {
		atomic_fetch_add(&st->backwards, 1);
	} else if (k > *last) {
		atomic_fetch_add(&st->distinct, 1);
		*last = k;
	}
}

static void poll_reader_main(void *p)
{
	(void)p;
	struct shared *sh = g_fx->sh;
	struct reader_stats *st = &sh->r[0];
	hako_channel_t *ch = attach(g_fx->name);
	static uint64_t buf[WORDS];
	uint64_t last = 0;
	atomic_store(&st->ready, 1);
	while (!atomic_load(&sh->writer_done)) {
		size_t len = 0;
		uint64_t seq = 0;
		HTU_CHECK_RC(hako_channel_read(ch, buf, sizeof(buf), &len, &seq), 0);
		if (seq != 0) {
			account(st, buf, len, seq, &last);
		}
	}
}

static void wait_reader_main(void *p)
{
	(void)p;
	struct shared *sh = g_fx->sh;
	struct reader_stats *st = &sh->r[1];
	hako_channel_t *ch = attach(g_fx->name);
	static uint64_t buf[WORDS];
	uint64_t last = 0, seen = hako_channel_seq(ch);
	atomic_store(&st->ready, 1);
	while (!atomic_load(&sh->writer_done)) {
		int r = hako_channel_wait(ch, seen, 0, 100000);
		if (r == HAKO_ETIMEDOUT) {
			continue;
		}
		HTU_CHECK_RC(r, 0);
		atomic_fetch_add(&st->wakeups, 1);
		size_t len = 0;
		uint64_t seq = 0;
		HTU_CHECK_RC(hako_channel_read(ch, buf, sizeof(buf), &len, &seq), 0);
		if (seq == seen) {
			atomic_fetch_add(&st->empty_wakeups, 1); /* woke without a new write */
		}
		seen = seq;
		account(st, buf, len, seq, &last);
	}
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name("torn", f->name, sizeof(f->name));
	f->sh = htu_shared_alloc(sizeof(*f->sh));
	assert_non_null(f->sh);
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 4;
	cfg.arena_bytes = 1 << 20;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	g_fx = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	htu_kill_children();
	hako_domain_close(f->dom);
	htu_remove_domain(f->name);
	htu_shared_free(f->sh, sizeof(*f->sh));
	free(f);
	g_fx = NULL;
	return 0;
}

static void test_torn(void **state)
{
	struct fx *f = *state;
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom, "torn", 0, PDU_SIZE, &ch), 0);
	pid_t w = htu_fork(writer_main, NULL);
	pid_t r0 = htu_fork(poll_reader_main, NULL);
	pid_t r1 = htu_fork(wait_reader_main, NULL);
	assert_true(w > 0 && r0 > 0 && r1 > 0);
	int ok;
	HTU_WAIT_UNTIL(ok, atomic_load(&f->sh->r[0].ready) && atomic_load(&f->sh->r[1].ready),
	               HTU_TIMEOUT_USEC);
	assert_true(ok);
	atomic_store(&f->sh->go, 1);
	assert_true(htu_join_child(w, RUN_USEC + HTU_TIMEOUT_USEC));
	assert_true(htu_join_child(r0, HTU_TIMEOUT_USEC));
	assert_true(htu_join_child(r1, HTU_TIMEOUT_USEC));

	uint64_t writes = atomic_load(&f->sh->writes);
	assert_int_equal(hako_channel_seq(ch), writes);
	static uint64_t buf[WORDS];
	size_t len = 0;
	uint64_t seq = 0;
	assert_int_equal(hako_channel_read(ch, buf, sizeof(buf), &len, &seq), 0);
	assert_int_equal(seq, writes);
	assert_int_equal(check_pdu(buf), writes);

	for (int i = 0; i < 2; i++) {
		struct reader_stats *st = &f->sh->r[i];
		print_message(
		    "%s reader: %llu reads, %llu distinct PDUs, %llu torn, %llu going "
		    "back, %llu with a newer PDU than their sequence number; %llu wake-ups "
		    "(%llu empty); "
		    "%llu writes; first newer PDU: %llu labelled %llu\n",
		    i == 0 ? "polling" : "waiting", (unsigned long long)st->reads,
		    (unsigned long long)st->distinct, (unsigned long long)st->torn,
		    (unsigned long long)st->backwards, (unsigned long long)st->newer_label,
		    (unsigned long long)st->wakeups, (unsigned long long)st->empty_wakeups,
		    (unsigned long long)writes, (unsigned long long)st->newer_k,
		    (unsigned long long)st->newer_seq);
		assert_int_equal(atomic_load(&st->torn), 0);
		assert_int_equal(atomic_load(&st->older_label), 0);
		/* Not asserted here: PDUs newer than their label, and reads going back, come from
		 * one known core bug that test_channel's reads_never_go_back checks. */
		assert_true(atomic_load(&st->distinct) >= MIN_UNIQUE);
	}
	assert_int_equal(atomic_load(&f->sh->r[1].empty_wakeups), 0);
}

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_torn, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
