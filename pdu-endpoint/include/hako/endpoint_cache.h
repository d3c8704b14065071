/* The cache of an endpoint: what arrived, per PDU key (robot, channel id).
 *
 * latest: the last write overwrites; reads copy and do not consume.
 * queue:  a FIFO of `depth` PDUs per key; a write to a full queue drops the oldest (counted);
 *         reads pop.
 * Thread-safe: communication threads write, the application reads.
 */
#ifndef HAKO_ENDPOINT_CACHE_H
#define HAKO_ENDPOINT_CACHE_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HAKO_CACHE_MAX_DEPTH 1024

typedef struct hako_pdu_key {
	char robot[128];
	int32_t channel_id;
} hako_pdu_key_t;

typedef enum hako_cache_mode {
	HAKO_CACHE_LATEST = 0,
	HAKO_CACHE_QUEUE = 1,
} hako_cache_mode_t;

typedef struct hako_cache hako_cache_t;

/* depth: 1..1024 (HAKO_EINVAL otherwise); ignored (1) for latest. */
HAKO_API int hako_cache_create(hako_cache_mode_t mode, uint32_t depth, hako_cache_t **out);
HAKO_API void hako_cache_destroy(hako_cache_t *c);

/* Store a PDU (copied) and call the key's subscribers (outside the cache lock). */
HAKO_API int hako_cache_write(hako_cache_t *c, const hako_pdu_key_t *key, const void *data,
                              size_t len);

/* Store a PDU that fill produces straight into the cache's slot (saves the copy from a staging
 * buffer: the shm comm reads a channel into the slot). fill(arg, dst, cap, &len) gets at least
 * `cap` bytes at dst; it returns 0 with *len <= cap, or an error (returned from here) having
 * written nothing to dst, in which case nothing is stored. It runs under the cache lock: it
 * must not call the cache. The key's subscribers then get the slot's copy; the slot is not
 * reused while they run (a concurrent write of the same key gets another buffer). */
typedef int (*hako_cache_fill_fn)(void *arg, void *dst, size_t cap, size_t *len);
HAKO_API int hako_cache_write_fill(hako_cache_t *c, const hako_pdu_key_t *key, size_t cap,
                                   hako_cache_fill_fn fill, void *arg, size_t *len);

/* The PDU of `key`: latest copies it (stays), queue pops the oldest. HAKO_EAGAIN if there is
 * none; HAKO_ETOOBIG with *len = its size if cap is too small (nothing is consumed). */
HAKO_API int hako_cache_read(hako_cache_t *c, const hako_pdu_key_t *key, void *buf, size_t cap,
                             size_t *len);

/* The next pending PDU of any key: latest = keys written since their last read, in the order of
 * their first pending write; queue = global arrival order. *key gets its key. HAKO_EAGAIN if
 * nothing is pending. Consumes it (latest: the key is no longer pending). */
HAKO_API int hako_cache_read_next(hako_cache_t *c, hako_pdu_key_t *key, void *buf, size_t cap,
                                  size_t *len);

typedef void (*hako_cache_cb_t)(void *user, const hako_pdu_key_t *key, const void *data,
                                size_t len);
/* Call cb on every write of `key` (several subscribers per key allowed). */
HAKO_API int hako_cache_subscribe(hako_cache_t *c, const hako_pdu_key_t *key, hako_cache_cb_t cb,
                                  void *user);

typedef struct hako_cache_stats {
	uint64_t writes;
	uint64_t reads;
	uint64_t dropped; /* queue overflow: oldest dropped */
	uint32_t keys;
} hako_cache_stats_t;
HAKO_API void hako_cache_get_stats(hako_cache_t *c, hako_cache_stats_t *st);

#ifdef __cplusplus
}
#endif
#endif
