/* Layout of a domain segment and the process-local handles. Private to hako_core. */
#ifndef HAKOI_INTERNAL_H
#define HAKOI_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hako/domain.h"

#define HAKOI_MAGIC          0x4d444b48u /* "HKDM" */
#define HAKOI_LAYOUT_VERSION 3u          /* 3: the event log */
#define HAKOI_CACHELINE      64
/* Waits wake at least this often to heartbeat and to notice a dead master. */
#define HAKOI_WAIT_SLICE_USEC 100000
/* The master checks liveness this often: a killed asset is noticed well within 1 s. */
#define HAKOI_LIVENESS_PERIOD_USEC 100000
/* Steps, Dmax and stop times are bounded (2^40 us = 12.7 days per step) so clock sums never
 * overflow int64. */
#define HAKOI_MAX_STEP_USEC (1ll << 40)
#define HAKOI_MAX_TIME_USEC (1ll << 60)

/* A wait-set's place in the segment: writers of the channels it watches bump seq and wake it.
 * Owned by a process (pid + start time), reclaimed when that process is gone. */
struct hakoi_waitslot {
	_Alignas(HAKOI_CACHELINE) _Atomic uint32_t owner_pid;
	uint64_t owner_start;
	_Atomic uint32_t seq;
	_Atomic uint32_t waiters;
};

/* One event of the domain's log (hako-cmd plog): a ring of the latest HAKOI_LOG_ENTRIES.
 * Written by any process without a lock: a writer takes the next event number, zeroes
 * `number`, fills the entry and stores number + 1 last; a reader keeps a copy only if `number`
 * was n + 1 before and after it copied. */
#define HAKOI_LOG_ENTRIES 256
struct hakoi_log_entry {
	_Atomic uint32_t number; /* event number + 1 once complete, 0 while written */
	int32_t pid;
	int64_t wall_usec; /* CLOCK_REALTIME */
	int64_t world_time;
	char text[HAKO_DOMAIN_EVENT_TEXT];
};
_Static_assert(sizeof(struct hakoi_log_entry) == 128, "a log entry is 128 bytes");

/* Segment header, at offset 0. Everything after `ready` is valid once magic is set. */
struct hakoi_header {
	_Atomic uint32_t magic; /* written last at creation */
	uint32_t layout_version;
	uint64_t segment_bytes;
	uint32_t max_assets;
	uint32_t max_channels;
	uint64_t arena_bytes;
	uint64_t waitsets_off; /* HAKO_WAITSET_MAX struct hakoi_waitslot */
	uint64_t assets_off;
	uint64_t channels_off;
	uint64_t index_off;
	uint64_t arena_off;
	uint64_t log_off;     /* HAKOI_LOG_ENTRIES struct hakoi_log_entry */
	uint32_t index_slots; /* power of two */
	int32_t creator_pid;
	uint64_t creator_start; /* /proc/<pid>/stat starttime, against pid reuse */
	char name[HAKO_NAME_MAX];

	pthread_mutex_t lock; /* robust, process-shared: registration and state changes */

	hako_time_t heartbeat_timeout_usec;
	int32_t liveness_policy;
	_Atomic int32_t master_running; /* a master thread runs in the creator */
	_Atomic hako_time_t delta_usec;
	_Atomic hako_time_t max_delay_usec;
	_Atomic uint64_t rtf_milli; /* real-time factor x 1000; 0 = free running */

	_Alignas(HAKOI_CACHELINE) _Atomic uint32_t state;
	_Atomic uint32_t asset_count;
	_Atomic uint32_t asset_hwm; /* slots [0, hwm) may be in use */
	_Atomic uint32_t channel_count;
	_Atomic uint64_t arena_used;
	_Atomic uint32_t log_count;   /* events logged since creation */
	_Atomic uint32_t proxy_count; /* members of asset_count that are proxies */
	char error_reason[256];

	/* Written by whoever advances the clock. */
	_Alignas(HAKOI_CACHELINE) _Atomic int64_t world_time;
	_Atomic uint64_t world_steps;
	_Atomic uint32_t reset_count; /* completed resets: channel sequence numbers restart */
	_Atomic int64_t stop_at;      /* world time at which the run stops; 0 = none */

	/* Futex words. seq: the world clock moved or the state / an event changed (assets wait
	 * on it). master_seq: something the master must look at. */
	_Alignas(HAKOI_CACHELINE) _Atomic uint32_t seq;
	_Atomic uint32_t waiters;
	_Alignas(HAKOI_CACHELINE) _Atomic uint32_t master_seq;
	_Atomic uint32_t master_waiters;
	/* hako_domain_wait_watch: watch_seq moves with seq, except for world steps that leave the
	 * world at or below watch_beyond (the lowest `beyond` of the watchers waiting; INT64_MAX
	 * once a step passed it and woke them). */
	_Alignas(HAKOI_CACHELINE) _Atomic uint32_t watch_seq;
	_Atomic uint32_t watch_waiters;
	_Atomic int64_t watch_beyond;
};

struct hakoi_asset {
	_Alignas(HAKOI_CACHELINE) _Atomic uint32_t in_use;
	_Atomic uint32_t generation; /* bumped when the slot is freed: stale handles see it */
	char name[HAKO_NAME_MAX];
	int32_t pid;
	uint64_t start_time;
	hako_time_t delta_usec; /* 0: a proxy, its clock set from outside */
	_Atomic uint32_t proxy;
	char note[96]; /* written and read under the domain lock */
	_Atomic uint32_t event;
	_Atomic uint32_t feedback;
	_Atomic uint32_t checked_in; /* passed the start barrier of this run */
	_Atomic uint32_t dead;       /* found dead by liveness; slot freed at reset */
	_Atomic int64_t heartbeat;   /* hako_now_usec() */
	_Atomic uint64_t steps;
	/* The asset's clock t_i: read by every clock advance, on its own line. */
	_Alignas(HAKOI_CACHELINE) _Atomic int64_t time_usec;
};

struct hakoi_channel {
	_Atomic uint32_t in_use;
	int32_t channel_id;
	uint32_t size;
	uint32_t stride;   /* size rounded up to the cache line */
	uint64_t data_off; /* two buffers of `stride` bytes from the arena start */
	char robot[HAKO_NAME_MAX];
	/* Data path. seq = the writers' counter: number of the last write; buffer (n & 1) gets
	 * write n. Readers go by buf_wno instead (see newest_write in channel.c). */
	_Alignas(HAKOI_CACHELINE) _Atomic uint64_t seq;
	_Atomic uint32_t wlock;      /* pid of the writer inside a write, 0 if none */
	_Atomic uint32_t buf_seq[2]; /* per-buffer seqlock: odd while being written */
	_Atomic uint32_t buf_len[2];
	_Atomic uint64_t buf_wno[2]; /* number of the write a buffer holds, 0 = none */
	_Atomic uint32_t notify;     /* futex word, bumped by a write when there are waiters */
	_Atomic uint32_t waiters;
	_Atomic uint64_t waitset_mask; /* bit i: waitsets[i] watches this channel */
};

struct hako_channel {
	hako_domain_t *dom;
	struct hakoi_channel *c;
	uint8_t *buf[2];
	uint32_t size; /* checked against the arena when the handle was made */
	int index;
};

struct hako_domain {
	char name[HAKO_NAME_MAX];
	int fd;
	uint8_t *base;
	size_t size;
	int is_creator;
	/* The geometry, checked against the segment's size when it was mapped. Later reads go
	 * here, never back to the header: a process of the same user could rewrite the header
	 * at any time, and a count or offset taken from it could then point outside the map. */
	uint32_t max_assets;
	uint32_t max_channels;
	uint32_t index_slots;
	uint64_t arena_bytes;
	struct hakoi_header *hdr;
	struct hakoi_waitslot *waitsets;
	struct hakoi_asset *assets;
	struct hakoi_channel *channels;
	_Atomic int32_t *index;
	struct hakoi_log_entry *log;
	uint8_t *arena;
	/* max_channels handles, made on first use under cache_lock and published with a release
	 * store: lookups on the data path read them without a lock. */
	pthread_mutex_t cache_lock;
	struct hako_channel *_Atomic *chan_cache;
	/* The thread of this process that holds the domain lock through this handle, 0 if none:
	 * what HAKO_ASSERT(hakoi_lock_held(dom)) checks where a comment says "lock held". */
	_Atomic uintptr_t lock_holder;
};

struct hako_member {
	hako_domain_t *dom;
	struct hakoi_asset *slot;
	int id;
	uint32_t generation;
	char name[HAKO_NAME_MAX];
	hako_time_t delta;
	hako_time_t last_master_check; /* busy assets look for a dead conductor this often */
	hako_time_t last_wait_usec;    /* the last step wait that waited (yield again if short) */
};

/* proc.c */
uint64_t hakoi_proc_start_time(int pid); /* 0 if unknown */
int hakoi_proc_alive(int pid, uint64_t start_time);
uint32_t hakoi_self_pid(void); /* getpid() without a system call */

/* wait.c: futex helpers. */
int hakoi_futex_wait(_Atomic uint32_t *addr, uint32_t expected, hako_time_t timeout_usec);
void hakoi_futex_wake_all(_Atomic uint32_t *addr);
/* Bump a futex word and wake its waiters (if any). */
void hakoi_notify(_Atomic uint32_t *word, _Atomic uint32_t *waiters);
/* Wait until cond(arg) is non-zero, spinning for at most spin_usec first, then sleeping on
 * `word` in slices; returns cond's value, or HAKO_ETIMEDOUT. The slice callback (may be NULL)
 * runs at every wake-up and may end the wait by returning non-zero. */
typedef int (*hakoi_cond_fn)(void *arg);
int hakoi_wait(_Atomic uint32_t *word, _Atomic uint32_t *waiters, hakoi_cond_fn cond, void *arg,
               hako_time_t spin_usec, hako_time_t timeout_usec, hakoi_cond_fn slice,
               void *slice_arg);
/* Spin budget for waits of an asset: HAKO_SPIN_USEC, or a default when every asset can have
 * its own CPU, else 0. */
hako_time_t hakoi_spin_budget(hako_domain_t *dom);
/* Yield budget for the step waits of an asset: a default when there are more assets than
 * CPUs (and no proxy, no pacing master, and HAKO_SPIN_USEC unset), else 0. */
hako_time_t hakoi_yield_budget(hako_domain_t *dom);
/* Give the CPU away (sched_yield) until cond(arg), which the caller found 0, is non-zero, for at
 * most usec; returns cond's value, 0 if the budget ran out first. */
int hakoi_yield_wait(hakoi_cond_fn cond, void *arg, hako_time_t usec);
static inline void hakoi_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* segment.c */
/* The lock, or HAKO_EBUSY after HAKOI_LOCK_TIMEOUT_USEC (a holder that never lets go: a
 * stopped process, or a lock word a corrupted segment made up). */
#define HAKOI_LOCK_TIMEOUT_USEC 5000000
/* A reader that finds both buffers of a channel open (a writer's takeover, or corruption). */
#define HAKOI_READ_STUCK_USEC 200000
int hakoi_lock(hako_domain_t *dom);
void hakoi_unlock(hako_domain_t *dom);
/* 1 if the calling thread holds the domain lock (taken with hakoi_lock through dom). */
static inline int hakoi_lock_held(hako_domain_t *dom)
{
	return atomic_load_explicit(&dom->lock_holder, memory_order_relaxed) ==
	       (uintptr_t)pthread_self();
}
int hakoi_master_alive(hako_domain_t *dom);
int hakoi_valid_name(const char *name, size_t max); /* 0 or HAKO_EINVAL / HAKO_ENAMETOOLONG */
/* Counts kept in the shared header, bounded by the mapped geometry. */
static inline uint32_t hakoi_asset_hwm(const hako_domain_t *dom)
{
	uint32_t n = atomic_load(&dom->hdr->asset_hwm);
	return n < dom->max_assets ? n : dom->max_assets;
}
static inline uint32_t hakoi_channel_count(const hako_domain_t *dom)
{
	uint32_t n = atomic_load(&dom->hdr->channel_count);
	return n < dom->max_channels ? n : dom->max_channels;
}

/* domain.c (lock held unless noted) */
void hakoi_publish_event(hako_domain_t *dom, uint32_t event);
void hakoi_try_transition(hako_domain_t *dom);
void hakoi_set_error(hako_domain_t *dom, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void hakoi_free_slot(hako_domain_t *dom, struct hakoi_asset *a);
void hakoi_wake_assets(hako_domain_t *dom); /* no lock needed */
/* After a world step to `world`: wakes the assets, and the watchers only if it passed their
 * threshold (hako_domain_wait_watch). No lock needed. */
void hakoi_wake_stepped(hako_domain_t *dom, hako_time_t world);
/* Set by hako_member_set_time_unwatched for its call: hakoi_wake_stepped leaves the watchers. */
extern __thread int hakoi_unwatched;
void hakoi_wake_master(hako_domain_t *dom);                    /* no lock needed */
int hakoi_check_liveness(hako_domain_t *dom, hako_time_t now); /* takes the lock itself */

/* event_log.c: add an event to the domain's log (any process, no lock needed). */
void hakoi_log_event(hako_domain_t *dom, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* clock.c: advance the world clock as far as the rules allow (free-running mode). */
void hakoi_try_advance(hako_domain_t *dom);
/* 0 if the asset's step fits the master's clock (or no master set one yet), else HAKO_EINVAL,
 * logged with the rule and the numbers. */
int hakoi_check_step(hako_domain_t *dom, const char *asset, hako_time_t dt);
/* One paced step by the master: 1 if the world advanced. */
int hakoi_advance_once(hako_domain_t *dom);
/* hako_member_step_wait that also ends (HAKO_EINTR) once is_force_stop() returns non-zero,
 * looked at every wait slice (NULL: never). For Hakoniwa's *_no_wait calls. */
int hakoi_member_step_wait_forced(hako_member_t *m, int (*is_force_stop)(void));

/* waitset.c: after a write, wake the wait-sets that watch the channel. */
void hakoi_waitset_notify(hako_domain_t *dom, uint64_t mask);

/* channel.c */
void hakoi_channels_reset(hako_domain_t *dom); /* lock held, nobody stepping */
void hakoi_channel_cache_free(hako_domain_t *dom);
/* The newest complete write of a channel: its buffer, that buffer's (even) sequence word and
 * the write number (0 = none); HAKO_ECORRUPT if none can be found (channel.c: newest_write). */
int hakoi_channel_newest(const struct hakoi_channel *c, unsigned *buf, uint32_t *buf_seq,
                         uint64_t *wno);
/* A writer's steps, one channel at a time, for channel_batch.c: the writer lock with its
 * takeover of a dead holder and its timeout (0 or HAKO_EBUSY, said); open buffer b (returns the
 * even base to close it with); close it holding write wno of len bytes (0, 0: empty); wake the
 * channel's sleeping readers and wait-sets. */
int hakoi_channel_lock(struct hakoi_channel *c);
uint32_t hakoi_channel_open(struct hakoi_channel *c, unsigned b);
void hakoi_channel_close(struct hakoi_channel *c, unsigned b, uint32_t s, uint64_t wno,
                         uint32_t len);
void hakoi_channel_wake(hako_domain_t *dom, struct hakoi_channel *c);

#endif
