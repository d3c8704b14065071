/* Read loans: the newest PDU lent where it lies, in the channel's buffer, without a copy.
 *
 * This is hako_channel_read's seqlock with the copy taken out: the loan picks the newest complete
 * write and remembers its buffer's (even) sequence word; the release checks that the word did not
 * move. The caller's reads in between are the copy, done in place: if the word still holds at
 * release, every byte they saw was the PDU the loan named; if a writer opened the buffer
 * meanwhile, release says so and the reader throws away what it read.
 *
 * Why optimistic rather than pinned: a pin (a reader count per buffer that writers avoid) would
 * need shared state, a liveness sweep for pins left by dead readers, and, with two buffers,
 * readers pinning both would stall the writer. Here a writer never learns about read loans and
 * never waits for one; a reader killed while holding a loan leaves nothing behind. The price is
 * the reader's: a loan held across two writes is void. Since write n + 1 goes to the other
 * buffer, a loan outlives the next write, so a reader that keeps up with the writer (consumes a
 * PDU before the one after next is written) always gets its loans confirmed. As for
 * hako_channel_read's check, a 32-bit word that wrapped (2^31 writes to the buffer during one
 * loan) would go unnoticed.
 */
#include <stdatomic.h>

#include "internal.h"

int hako_channel_read_loan(hako_channel_t *ch, hako_channel_read_loan_t *loan)
{
	if (loan != NULL) {
		*loan = (hako_channel_read_loan_t){0};
	}
	if (ch == NULL || loan == NULL) {
		return HAKO_EINVAL;
	}
	unsigned b;
	uint32_t word;
	uint64_t wno;
	if (hakoi_channel_newest(ch->c, &b, &word, &wno) != 0) {
		return HAKO_ECORRUPT;
	}
	/* Loaded after the word (acquire in newest_write): the length of write wno unless the
	 * buffer was reopened since, which release will tell. Bounded either way, so a reader
	 * looping to len never leaves the buffer. */
	size_t len = wno == 0 ? 0 : atomic_load_explicit(&ch->c->buf_len[b], memory_order_relaxed);
	loan->data = ch->buf[b];
	loan->len = len < ch->size ? len : ch->size;
	loan->seq = wno;
	loan->ch_ = ch;
	loan->word_ = word;
	loan->buf_ = b;
	return 0;
}

int hako_channel_read_release(hako_channel_t *ch, hako_channel_read_loan_t *loan)
{
	if (ch == NULL || loan == NULL) {
		return HAKO_EINVAL;
	}
	if (loan->ch_ == NULL) {
		return HAKO_ESTATE;
	}
	if (loan->ch_ != ch || loan->buf_ > 1) {
		return HAKO_EINVAL;
	}
	/* The caller's loads of the data come before the word's second load (as in
	 * hako_channel_read after its copy). */
	atomic_thread_fence(memory_order_acquire);
	uint32_t now = atomic_load_explicit(&ch->c->buf_seq[loan->buf_], memory_order_relaxed);
	int intact = now == loan->word_;
	*loan = (hako_channel_read_loan_t){0};
	return intact ? 0 : HAKO_EAGAIN;
}
