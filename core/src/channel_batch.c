/* Batch writes (hako/domain.h): the loans and commits of channel.c for many channels at once.
 *
 * A member's loan is hako_channel_loan's: the channel's writer lock holds this process's pid and
 * the buffer of the next write is open (odd word), so a reader takes the other one, and a loaner
 * killed in between is taken over by the next writer as after a killed hako_channel_loan. The
 * batch keeps, per member, what the data path needs in one compact array (the channel's shared
 * entry, its two buffers, the loaned buffer and its base): a host writing thousands of PDUs a
 * step walks that array instead of one handle per channel.
 *
 * The commit closes every buffer of the range and stores each channel's write counter with
 * release stores, then issues one seq_cst fence before it looks for sleeping readers. That fence
 * does for the whole range what the seq_cst store of c->seq does for one write in publish()
 * (channel.c): a reader that announced itself (seq_cst) before the fence is seen by the loads
 * after it, and one that announces itself later sees every counter stored before it.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct member {
	struct hakoi_channel *c;
	uint8_t *buf[2];
	uint32_t size;
	uint32_t base; /* the even base of the open buffer, while loaned */
	uint8_t b;     /* the loaned buffer */
	uint8_t loaned;
};

struct hako_channel_batch {
	hako_domain_t *dom;
	size_t n;
	struct member m[];
};

int hako_channel_batch_create(hako_channel_t *const *chs, size_t n, hako_channel_batch_t **out)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (out == NULL || chs == NULL || n == 0 || chs[0] == NULL ||
	    n > (SIZE_MAX - sizeof(hako_channel_batch_t)) / sizeof(struct member)) {
		return HAKO_EINVAL;
	}
	hako_domain_t *dom = chs[0]->dom;
	/* A channel twice would wait for its own writer lock: refused. */
	uint8_t *seen = calloc(dom->max_channels, 1);
	hako_channel_batch_t *b = calloc(1, sizeof(*b) + n * sizeof(struct member));
	if (seen == NULL || b == NULL) {
		free(seen);
		free(b);
		return HAKO_ENOMEM;
	}
	int r = 0;
	for (size_t k = 0; k < n && r == 0; k++) {
		const hako_channel_t *ch = chs[k];
		if (ch == NULL || ch->dom != dom || ch->index < 0 ||
		    (uint32_t)ch->index >= dom->max_channels || seen[ch->index]) {
			r = HAKO_EINVAL;
			break;
		}
		seen[ch->index] = 1;
		b->m[k] = (struct member){ch->c, {ch->buf[0], ch->buf[1]}, ch->size, 0, 0, 0};
	}
	free(seen);
	if (r != 0) {
		free(b);
		return r;
	}
	b->dom = dom;
	b->n = n;
	*out = b;
	return 0;
}

void hako_channel_batch_destroy(hako_channel_batch_t *b)
{
	if (b == NULL) {
		return;
	}
	hako_channel_batch_cancel(b, 0, b->n);
	free(b);
}

size_t hako_channel_batch_count(const hako_channel_batch_t *b)
{
	return b != NULL ? b->n : 0;
}

static int range_ok(const hako_channel_batch_t *b, size_t first, size_t n)
{
	return b != NULL && first <= b->n && n <= b->n - first;
}

/* 1 if member m's loan is still this process's: not committed or cancelled meanwhile through
 * its channel handle (hako_channel_commit), nor taken over. */
static int held(const struct member *m, uint32_t me)
{
	return m->loaned && atomic_load_explicit(&m->c->wlock, memory_order_relaxed) == me &&
	       atomic_load_explicit(&m->c->buf_seq[m->b], memory_order_relaxed) == m->base + 1;
}

/* Drop member m's loan: its buffer marked empty (as hako_channel_cancel does), the lock let go. */
static void drop(struct member *m)
{
	hakoi_channel_close(m->c, m->b, m->base, 0, 0);
	atomic_store_explicit(&m->c->wlock, 0, memory_order_release);
	m->loaned = 0;
}

int hako_channel_batch_loan(hako_channel_batch_t *b, size_t first, size_t n, void **bufs)
{
	if (!range_ok(b, first, n) || (bufs == NULL && n > 0)) {
		return HAKO_EINVAL;
	}
	uint32_t me = hakoi_self_pid();
	struct member *m = &b->m[first];
	for (size_t k = 0; k < n; k++) {
		struct hakoi_channel *c = m[k].c;
		int r = m[k].loaned ? HAKO_ESTATE : 0;
		uint32_t free_word = 0;
		/* The lock is free between two writes of the one writer: one CAS. A held or dead
		 * holder goes the long way (channel.c's writer_lock). */
		if (r == 0 && !atomic_compare_exchange_strong_explicit(&c->wlock, &free_word, me,
		                                                       memory_order_acquire,
		                                                       memory_order_relaxed)) {
			r = hakoi_channel_lock(c);
		}
		if (r != 0) {
			while (k-- > 0) {
				drop(&m[k]);
			}
			return r;
		}
		unsigned w =
		    (unsigned)((atomic_load_explicit(&c->seq, memory_order_relaxed) + 1) & 1);
		m[k].base = hakoi_channel_open(c, w);
		m[k].b = (uint8_t)w;
		m[k].loaned = 1;
		bufs[k] = m[k].buf[w];
	}
	return 0;
}

int hako_channel_batch_commit(hako_channel_batch_t *b, size_t first, size_t n, const size_t *lens)
{
	if (!range_ok(b, first, n)) {
		return HAKO_EINVAL;
	}
	struct member *m = &b->m[first];
	uint32_t me = hakoi_self_pid();
	for (size_t k = 0; k < n; k++) {
		if (!held(&m[k], me)) {
			return HAKO_ESTATE; /* a buffer is never closed twice */
		}
		if (lens != NULL && lens[k] > m[k].size) {
			return HAKO_ETOOBIG;
		}
	}
	for (size_t k = 0; k < n; k++) {
		struct hakoi_channel *c = m[k].c;
		uint64_t wno = atomic_load_explicit(&c->seq, memory_order_relaxed) + 1;
		hakoi_channel_close(c, m[k].b, m[k].base, wno,
		                    lens != NULL ? (uint32_t)lens[k] : m[k].size);
		atomic_store_explicit(&c->seq, wno, memory_order_release);
		atomic_store_explicit(&c->wlock, 0, memory_order_release);
		m[k].loaned = 0;
	}
	/* One fence for the range (see the top of this file), then the waiters of each member:
	 * no system call for a member nobody sleeps on. */
	atomic_thread_fence(memory_order_seq_cst);
	for (size_t k = 0; k < n; k++) {
		struct hakoi_channel *c = m[k].c;
		if (atomic_load_explicit(&c->waiters, memory_order_relaxed) != 0 ||
		    atomic_load_explicit(&c->waitset_mask, memory_order_relaxed) != 0) {
			hakoi_channel_wake(b->dom, c);
		}
	}
	return 0;
}

int hako_channel_batch_cancel(hako_channel_batch_t *b, size_t first, size_t n)
{
	if (!range_ok(b, first, n)) {
		return HAKO_EINVAL;
	}
	uint32_t me = hakoi_self_pid();
	for (size_t k = first; k < first + n; k++) {
		if (held(&b->m[k], me)) {
			drop(&b->m[k]);
		}
		b->m[k].loaned = 0;
	}
	return 0;
}
