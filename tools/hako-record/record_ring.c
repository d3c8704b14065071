/* The sampler -> writer ring of hako-record (record_ring.h). */
#include "record_ring.h"

#include <stdlib.h>
#include <string.h>

#include "hako/error.h"

#define ALIGN8(n) (((n) + 7u) & ~(size_t)7u)

int rec_ring_init(rec_ring_t *r, size_t bytes)
{
	size_t cap = 4096;
	while (cap < bytes) {
		cap *= 2;
	}
	memset(r, 0, sizeof(*r));
	r->buf = malloc(cap);
	if (r->buf == NULL) {
		return HAKO_ENOMEM;
	}
	r->cap = cap;
	return 0;
}

void rec_ring_free(rec_ring_t *r)
{
	free(r->buf);
	r->buf = NULL;
}

rec_entry_t *rec_ring_reserve(rec_ring_t *r, size_t len)
{
	size_t need = ALIGN8(sizeof(rec_entry_t) + len);
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	size_t at = (size_t)(head & (r->cap - 1));
	size_t to_end = r->cap - at;
	size_t pad = need > to_end ? to_end : 0;
	if (need > r->cap / 2 || head + pad + need - tail > r->cap) {
		return NULL;
	}
	if (pad) {
		rec_entry_t *p = (rec_entry_t *)(r->buf + at);
		if (to_end >= sizeof(rec_entry_t)) {
			p->len = 0;
			p->chan = REC_PAD;
		}
		head += pad;
		atomic_store_explicit(&r->head, head, memory_order_release);
		at = 0;
	}
	r->reserved = need;
	return (rec_entry_t *)(r->buf + at);
}

void rec_ring_commit(rec_ring_t *r)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	atomic_store_explicit(&r->head, head + r->reserved, memory_order_release);
	r->reserved = 0;
}

const rec_entry_t *rec_ring_peek(rec_ring_t *r)
{
	for (;;) {
		uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
		uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
		if (tail == head) {
			return NULL;
		}
		size_t at = (size_t)(tail & (r->cap - 1));
		size_t to_end = r->cap - at;
		const rec_entry_t *e = (const rec_entry_t *)(r->buf + at);
		/* Entries are 8-aligned and at least a header long, so a tail too short for a
		 * header can only be padding. */
		if (to_end < sizeof(rec_entry_t) || e->chan == REC_PAD) {
			atomic_store_explicit(&r->tail, tail + to_end, memory_order_release);
			continue;
		}
		return e;
	}
}

void rec_ring_pop(rec_ring_t *r)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	const rec_entry_t *e = (const rec_entry_t *)(r->buf + (tail & (r->cap - 1)));
	atomic_store_explicit(&r->tail, tail + ALIGN8(sizeof(rec_entry_t) + e->len),
	                      memory_order_release);
}

size_t rec_ring_used(rec_ring_t *r)
{
	return (size_t)(atomic_load(&r->head) - atomic_load(&r->tail));
}
