/* The cache of an endpoint: what arrived, per PDU key (robot, channel id), and who is told.
 *
 * latest: the last write overwrites; reads copy and do not consume.
 * queue:  a FIFO of `depth` PDUs per key; a write to a full queue drops the oldest (counted);
 *         reads pop.
 *
 * What is stored (hako_cache_set_store): HAKO_CACHE_STORE_ALL, the default, stores every write.
 * HAKO_CACHE_STORE_READ is for a cache whose PDUs are forwarded by a subscriber and that nobody
 * reads (hako-bridge's endpoints): a written PDU is stored unless its key has a subscriber (of
 * that key, or of every key) and has never been read. A key is read once hako_cache_read of
 * it, or hako_cache_read_next (every key), has been called, whatever it returned; from then on
 * it is stored for good, so a reader that turns up still gets its PDUs, from the next one on.
 * A PDU that is not stored is only handed to the subscribers (counted in `passed`): it costs no
 * copy into the cache and no time under its lock, and a queue nobody pops does not count it as
 * a drop. A key that held PDUs and stops being stored (a first subscriber, or the policy set,
 * before any read) drops them at its next write (queue: counted in `dropped`), so a first read
 * never returns a PDU older than what the subscribers got.
 *
 * Subscriptions (libuv's uv_close contract): hako_cache_subscribe returns a handle; after
 * hako_cache_unsubscribe of it returns, its callback is not called again, and no call of it is
 * still running, except in the case below. Callbacks run in the writer's thread, after the
 * write, outside the cache lock (they may read, write and subscribe). From inside a callback of
 * the same cache (in a thread that is delivering one of its writes) unsubscribe cannot wait for
 * the calls below it on that thread's stack: it marks the subscription and returns at once. No
 * call of it begins afterwards; the calls already begun finish: this one, and, when several
 * threads write at once (a comm-less endpoint sent to from several threads, a subscription to
 * every key of an shm endpoint), one in another thread. Elsewhere it waits for the running
 * calls, so do not call it holding a lock that the callback takes.
 *
 * Thread-safe: communication threads write, the application reads.
 */
#ifndef HAKO_ENDPOINT_CACHE_H
#define HAKO_ENDPOINT_CACHE_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#include "hako/error.h"
#include "hako/limits.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HAKO_CACHE_MAX_DEPTH 1024

typedef struct hako_pdu_key {
	char robot[HAKO_NAME_MAX];
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

typedef enum hako_cache_store {
	HAKO_CACHE_STORE_ALL = 0,  /* every write is stored (the default) */
	HAKO_CACHE_STORE_READ = 1, /* a subscribed key only once it has been read (above) */
} hako_cache_store_t;
/* What the cache stores from now on (above). HAKO_EINVAL. */
HAKO_API int hako_cache_set_store(hako_cache_t *c, hako_cache_store_t store);

/* Store a PDU (copied; with HAKO_CACHE_STORE_READ not when it is only for subscribers), and
 * call the subscribers of the key, then those of every key, each in subscription order.
 * HAKO_ENOMEM: neither stored nor delivered. */
HAKO_API int hako_cache_write(hako_cache_t *c, const hako_pdu_key_t *key, const void *data,
                              size_t len);

/* Store a PDU that fill produces straight into the cache's slot (saves the copy from a staging
 * buffer: the shm comm reads a channel into the slot). fill(arg, dst, cap, &len) gets at least
 * `cap` bytes at dst; it returns 0 with *len <= cap, or an error (returned from here) having
 * written nothing to dst, in which case nothing is stored nor delivered. It may run under the
 * cache lock: it must not call the cache. The subscribers then get the slot's copy; the slot is
 * not reused while they run (a concurrent write of the same key gets another buffer). A PDU
 * that is only for subscribers is filled into a buffer of the calling thread instead (kept for
 * its next write, freed when the thread exits), outside the lock. */
typedef int (*hako_cache_fill_fn)(void *arg, void *dst, size_t cap, size_t *len);
HAKO_API int hako_cache_write_fill(hako_cache_t *c, const hako_pdu_key_t *key, size_t cap,
                                   hako_cache_fill_fn fill, void *arg, size_t *len);

/* The PDU of `key`: latest copies it (stays), queue pops the oldest. HAKO_EAGAIN if there is
 * none; HAKO_ETOOBIG with *len = its size if cap is too small (nothing is consumed). Marks the
 * key read (HAKO_CACHE_STORE_READ: its PDUs are stored from now on). */
HAKO_API int hako_cache_read(hako_cache_t *c, const hako_pdu_key_t *key, void *buf, size_t cap,
                             size_t *len);

/* The next pending PDU of any key: latest = keys written since their last read, in the order of
 * their first pending write; queue = global arrival order. *key gets its key. HAKO_EAGAIN if
 * nothing is pending. Consumes it (latest: the key is no longer pending). Marks every key read
 * (HAKO_CACHE_STORE_READ: every PDU is stored from now on). */
HAKO_API int hako_cache_read_next(hako_cache_t *c, hako_pdu_key_t *key, void *buf, size_t cap,
                                  size_t *len);

typedef void (*hako_cache_cb_t)(void *user, const hako_pdu_key_t *key, const void *data,
                                size_t len);
typedef struct hako_cache_sub hako_cache_sub_t;
/* Call cb(user, key, data, len) on every write of `key`, or of every key when key is NULL
 * (several subscribers per key allowed). *sub gets the handle for hako_cache_unsubscribe; sub
 * may be NULL for a subscription that lasts as long as the cache. HAKO_EINVAL, HAKO_ENOMEM. */
HAKO_API int hako_cache_subscribe(hako_cache_t *c, const hako_pdu_key_t *key, hako_cache_cb_t cb,
                                  void *user, hako_cache_sub_t **sub);
/* End a subscription (the contract at the top) and free its handle. Once per handle, before the
 * cache is destroyed (which frees the remaining ones). Accepts NULL. */
HAKO_API void hako_cache_unsubscribe(hako_cache_sub_t *sub);

typedef struct hako_cache_stats {
	uint64_t writes;  /* PDUs stored */
	uint64_t reads;   /* PDUs read (copied out) */
	uint64_t dropped; /* queue: stored PDUs dropped unread (overflow, or the key stopped being
	                   * stored) */
	uint64_t passed;  /* PDUs handed to the subscribers only (HAKO_CACHE_STORE_READ) */
	uint32_t keys;    /* keys stored at least once */
} hako_cache_stats_t;
HAKO_API void hako_cache_get_stats(hako_cache_t *c, hako_cache_stats_t *st);

#ifdef __cplusplus
}
#endif
#endif
