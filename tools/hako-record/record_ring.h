/* A bounded single-producer single-consumer byte ring between hako-record's sampler (which
 * reads the channels) and its writer thread (which encodes and writes the MCAP file). The
 * sampler never waits for the writer: a record that does not fit is refused, and the caller
 * counts it as dropped. */
#ifndef HAKO_RECORD_RING_H
#define HAKO_RECORD_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rec_ring {
	uint8_t *buf;
	size_t cap;            /* a power of two */
	_Atomic uint64_t head; /* bytes produced (the sampler's) */
	_Atomic uint64_t tail; /* bytes consumed (the writer's) */
	uint64_t reserved;     /* the sampler's open reservation */
} rec_ring_t;

/* Every record starts with this and is padded to 8 bytes. A record that would cross the end of
 * the buffer is preceded by a pad record (len 0, chan UINT32_MAX) that fills the rest. */
typedef struct rec_entry {
	uint32_t len;    /* PDU bytes that follow */
	uint32_t chan;   /* the recorder's channel index */
	uint64_t seq;    /* the channel's write number */
	int64_t log_ns;  /* world time (with the reset base), ns */
	int64_t wall_ns; /* CLOCK_REALTIME, ns */
} rec_entry_t;

#define REC_PAD UINT32_MAX

int rec_ring_init(rec_ring_t *r, size_t bytes);
void rec_ring_free(rec_ring_t *r);
/* Room for an entry with len PDU bytes: its header (to fill), NULL if the ring is full. */
rec_entry_t *rec_ring_reserve(rec_ring_t *r, size_t len);
/* Publish the reserved entry. */
void rec_ring_commit(rec_ring_t *r);
/* The oldest entry, NULL if none. */
const rec_entry_t *rec_ring_peek(rec_ring_t *r);
/* Release the entry rec_ring_peek returned. */
void rec_ring_pop(rec_ring_t *r);
/* Bytes in use. */
size_t rec_ring_used(rec_ring_t *r);

#endif
