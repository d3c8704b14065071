/* PDU channels: a seqlock over a double buffer per channel.
 *
 * Write number n goes to buffer n & 1, so a reader copying the latest PDU is disturbed only if
 * the writer laps it twice during one copy; it then retries. The writer never waits for a
 * reader. Each buffer has its own sequence word (odd while written), checked before and after
 * the copy, so a reader never returns a torn PDU.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hako/log.h"
#include "hakoi/assert.h"
#include "internal.h"

static uint32_t key_hash(const char *robot, int32_t id)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)robot; *p != '\0'; p++) {
		h = (h ^ *p) * 16777619u;
	}
	for (int i = 0; i < 4; i++) {
		h = (h ^ (uint8_t)((uint32_t)id >> (8 * i))) * 16777619u;
	}
	return h;
}

/* Index of the channel (robot, id) or -1. Lock-free: index entries are published after the
 * channel they point to. */
static int find_index(hako_domain_t *dom, const char *robot, int32_t id)
{
	uint32_t mask = dom->index_slots - 1;
	for (uint32_t i = key_hash(robot, id) & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
		int32_t e = atomic_load_explicit(&dom->index[i], memory_order_acquire);
		if (e == 0) {
			return -1;
		}
		if (e < 0 || (uint32_t)e > dom->max_channels) {
			continue; /* not an entry this layout can hold: never followed */
		}
		struct hakoi_channel *c = &dom->channels[e - 1];
		if (c->channel_id == id && strncmp(c->robot, robot, sizeof(c->robot)) == 0) {
			return e - 1;
		}
	}
	return -1;
}

/* 1 if a channel's entry describes buffers inside the arena. Checked once per handle: the
 * data path then uses the handle's copies. */
static int entry_sane(const hako_domain_t *dom, const struct hakoi_channel *c)
{
	return c->size > 0 && c->stride >= c->size && c->stride % HAKOI_CACHELINE == 0 &&
	       c->data_off % HAKOI_CACHELINE == 0 && c->data_off <= dom->arena_bytes &&
	       2ull * c->stride <= dom->arena_bytes - c->data_off &&
	       strnlen(c->robot, sizeof(c->robot)) < sizeof(c->robot);
}

/* The handle of channel `index`; NULL with *r set (HAKO_ENOMEM, HAKO_ECORRUPT) if none. */
static hako_channel_t *handle_for(hako_domain_t *dom, int index, int *r)
{
	hako_channel_t *ch = atomic_load_explicit(&dom->chan_cache[index], memory_order_acquire);
	if (ch != NULL) {
		return ch;
	}
	pthread_mutex_lock(&dom->cache_lock);
	ch = atomic_load_explicit(&dom->chan_cache[index], memory_order_relaxed);
	if (ch == NULL) {
		struct hakoi_channel *c = &dom->channels[index];
		if (!entry_sane(dom, c)) {
			HAKO_ERROR(
			    "domain '%s': channel %d is corrupted (size %u, stride %u, offset "
			    "%llu in an arena of %llu bytes)",
			    dom->name, index, c->size, c->stride, (unsigned long long)c->data_off,
			    (unsigned long long)dom->arena_bytes);
			*r = HAKO_ECORRUPT;
		} else if ((ch = calloc(1, sizeof(*ch))) == NULL) {
			*r = HAKO_ENOMEM;
		} else {
			ch->dom = dom;
			ch->c = c;
			ch->index = index;
			ch->size = c->size;
			ch->buf[0] = dom->arena + c->data_off;
			ch->buf[1] = dom->arena + c->data_off + c->stride;
			atomic_store_explicit(&dom->chan_cache[index], ch, memory_order_release);
		}
	}
	pthread_mutex_unlock(&dom->cache_lock);
	return ch;
}

void hakoi_channel_cache_free(hako_domain_t *dom)
{
	if (dom->chan_cache == NULL) {
		return;
	}
	for (uint32_t i = 0; i < dom->max_channels; i++) {
		free(atomic_load_explicit(&dom->chan_cache[i], memory_order_relaxed));
	}
	free(dom->chan_cache);
	dom->chan_cache = NULL;
}

int hako_channel_lookup(hako_domain_t *dom, const char *robot, int32_t channel_id,
                        hako_channel_t **out)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (dom == NULL || out == NULL || robot == NULL) {
		return HAKO_EINVAL;
	}
	int idx = find_index(dom, robot, channel_id);
	if (idx < 0) {
		return HAKO_ENOENT;
	}
	int r = 0;
	*out = handle_for(dom, idx, &r);
	return r;
}

int hako_channel_create(hako_domain_t *dom, const char *robot, int32_t channel_id, size_t size,
                        hako_channel_t **out)
{
	if (out != NULL) {
		*out = NULL;
	}
	if (dom == NULL || out == NULL || size == 0 || size > UINT32_MAX / 2 || channel_id < 0) {
		return HAKO_EINVAL;
	}
	int r = hakoi_valid_name(robot, HAKO_NAME_MAX);
	if (r != 0) {
		return r;
	}
	if ((r = hakoi_lock(dom)) != 0) {
		return r;
	}
	struct hakoi_header *h = dom->hdr;
	int idx = find_index(dom, robot, channel_id);
	if (idx >= 0) {
		if (dom->channels[idx].size != size) {
			HAKO_WARN("channel %s/%d exists with %u bytes, not %zu", robot, channel_id,
			          dom->channels[idx].size, size);
			r = HAKO_ESIZE;
		}
		goto done;
	}
	uint32_t count = atomic_load(&h->channel_count);
	if (count >= dom->max_channels) {
		HAKO_WARN("domain '%s': all %u channels are in use", dom->name, dom->max_channels);
		r = HAKO_ENOSPC;
		goto done;
	}
	uint32_t stride =
	    (uint32_t)((size + HAKOI_CACHELINE - 1) / HAKOI_CACHELINE * HAKOI_CACHELINE);
	uint64_t used = atomic_load(&h->arena_used);
	if (used > dom->arena_bytes || 2ull * stride > dom->arena_bytes - used) {
		HAKO_WARN("domain '%s': PDU arena full (%llu of %llu bytes used, %u more needed)",
		          dom->name, (unsigned long long)used, (unsigned long long)dom->arena_bytes,
		          2 * stride);
		r = HAKO_ENOSPC;
		goto done;
	}
	struct hakoi_channel *c = &dom->channels[count];
	c->channel_id = channel_id;
	c->size = (uint32_t)size;
	c->stride = stride;
	c->data_off = used;
	snprintf(c->robot, sizeof(c->robot), "%s", robot);
	atomic_store(&c->seq, 0);
	atomic_store(&c->in_use, 1);
	atomic_store(&h->arena_used, used + 2ull * stride);
	uint32_t mask = dom->index_slots - 1;
	uint32_t i = key_hash(robot, channel_id) & mask;
	for (uint32_t n = 0; atomic_load(&dom->index[i]) != 0; n++) {
		if (n > mask) { /* more than twice the channel count: made up, not ours */
			HAKO_ERROR("domain '%s': the channel index is corrupted", dom->name);
			r = HAKO_ECORRUPT;
			goto done;
		}
		i = (i + 1) & mask;
	}
	atomic_store_explicit(&dom->index[i], (int32_t)count + 1, memory_order_release);
	atomic_store(&h->channel_count, count + 1);
	idx = (int)count;
	hakoi_log_event(dom, "channel %s/%d created: %zu bytes, real id %d", robot, channel_id,
	                size, idx);
done:
	hakoi_unlock(dom);
	if (r == 0) {
		*out = handle_for(dom, idx, &r);
	}
	return r;
}

size_t hako_channel_size(const hako_channel_t *ch)
{
	return ch != NULL ? ch->size : 0;
}

int hako_channel_index(const hako_channel_t *ch)
{
	return ch != NULL ? ch->index : -1;
}

const char *hako_channel_robot(const hako_channel_t *ch)
{
	return ch != NULL ? ch->c->robot : "";
}

int32_t hako_channel_id(const hako_channel_t *ch)
{
	return ch != NULL ? ch->c->channel_id : -1;
}

/* After a write: wake sleeping readers of this channel and the wait-sets watching it, with no
 * syscall when nobody sleeps. The loads follow the seq_cst store of c->seq: a waiter that
 * announced itself before that store is seen here. */
static void wake_readers(hako_domain_t *dom, struct hakoi_channel *c)
{
	if (atomic_load(&c->waiters) != 0) {
		atomic_fetch_add(&c->notify, 1);
		hakoi_futex_wake_all(&c->notify);
	}
	uint64_t mask = atomic_load(&c->waitset_mask);
	if (mask != 0) {
		hakoi_waitset_notify(dom, mask);
	}
}

/* 1 if the pid in a writer word names no process: its holder died mid-write. */
static int holder_dead(uint32_t holder)
{
	return holder != 0 && kill((pid_t)holder, 0) != 0 && errno == ESRCH;
}

/* Writers (and a reset) are serialised; the lock holds the writer's pid so a writer killed
 * mid-write cannot wedge the channel. A holder that lives but never lets go (a stopped process,
 * a loan never committed, or a pid a corrupted segment names) costs at most timeout_usec:
 * HAKO_EBUSY, never a hang. */
static int writer_lock(struct hakoi_channel *c, hako_time_t timeout_usec)
{
	uint32_t me = hakoi_self_pid();
	hako_time_t deadline = 0;
	for (unsigned spins = 1;; spins++) {
		uint32_t holder = 0;
		if (atomic_compare_exchange_weak_explicit(
		        &c->wlock, &holder, me, memory_order_acquire, memory_order_relaxed)) {
			return 0;
		}
		hakoi_cpu_relax();
		if ((spins & 4095) != 0) {
			continue;
		}
		if (holder != me && holder_dead(holder)) {
			atomic_compare_exchange_strong(&c->wlock, &holder, 0);
			continue;
		}
		sched_yield();
		hako_time_t now = hako_now_usec();
		if (deadline == 0) {
			deadline = now + timeout_usec;
		} else if (now >= deadline) {
			return HAKO_EBUSY;
		}
	}
}

/* hako_channel_write / loan: a writer waits as long as the domain lock is waited for. */
static int writer_lock_or_say(struct hakoi_channel *c)
{
	if (writer_lock(c, HAKOI_LOCK_TIMEOUT_USEC) == 0) {
		return 0;
	}
	HAKO_ERROR("channel %.*s/%d: its writer lock has been held by pid %u for %d s (a stopped "
	           "writer, or a loan never committed)",
	           (int)sizeof(c->robot) - 1, c->robot, c->channel_id,
	           (unsigned)atomic_load(&c->wlock), HAKOI_LOCK_TIMEOUT_USEC / 1000000);
	return HAKO_EBUSY;
}

static void writer_unlock(struct hakoi_channel *c)
{
	atomic_store_explicit(&c->wlock, 0, memory_order_release);
}

/* Open buffer b for writing (odd sequence word); returns the even base to close it with. */
static uint32_t buffer_open(struct hakoi_channel *c, unsigned b)
{
	uint32_t s = atomic_load_explicit(&c->buf_seq[b], memory_order_relaxed);
	s += s & 1; /* a writer that died mid-write left it odd */
	/* Release: a reader that sees this buffer open (and so takes the other one) also sees the
	 * other one's last close, which came before; relaxed, a weakly ordered CPU could show it
	 * the other buffer a write older than one it already returned. The fence keeps the data
	 * stores after the odd word. */
	atomic_store_explicit(&c->buf_seq[b], s + 1, memory_order_release);
	atomic_thread_fence(memory_order_release);
	return s;
}

/* Close buffer b, opened by buffer_open with the even base s, holding write wno (0: none) of len
 * bytes. The length and number are relaxed: the release store of the even word orders them, and
 * the data before them, for a reader that loads the word with acquire (newest_write) and finds it
 * unchanged after its copy. */
static inline void buffer_close(struct hakoi_channel *c, unsigned b, uint32_t s, uint64_t wno,
                                uint32_t len)
{
	HAKO_ASSERT_MSG((s & 1) == 0, "base %u", s); /* s + 1 was the open word, s + 2 is closed */
	atomic_store_explicit(&c->buf_len[b], len, memory_order_relaxed);
	atomic_store_explicit(&c->buf_wno[b], wno, memory_order_relaxed);
	atomic_store_explicit(&c->buf_seq[b], s + 2, memory_order_release);
}

/* Publish write n, of len bytes in buffer b (opened with the even base s): close the buffer,
 * count the write, let the next writer in, wake the readers. c->seq is the writers' counter
 * (readers go by buf_wno); its seq_cst store comes after the close and before wake_readers'
 * loads of the waiter flags, so a reader that announced itself before the store is woken. */
static inline void publish(hako_channel_t *ch, unsigned b, uint32_t s, uint64_t n, uint32_t len)
{
	struct hakoi_channel *c = ch->c;
	buffer_close(c, b, s, n, len);
	atomic_store(&c->seq, n);
	writer_unlock(c);
	/* Wake sleeping readers only: no syscall when nobody waits. */
	wake_readers(ch->dom, c);
}

int hako_channel_write(hako_channel_t *ch, const void *data, size_t len)
{
	if (ch == NULL || (data == NULL && len > 0)) {
		return HAKO_EINVAL;
	}
	struct hakoi_channel *c = ch->c;
	if (len > ch->size) {
		return HAKO_ETOOBIG;
	}
	/* One writer is the contract; a second one is serialised rather than corrupting data. */
	if (writer_lock_or_say(c) != 0) {
		return HAKO_EBUSY;
	}
	uint64_t n = atomic_load_explicit(&c->seq, memory_order_relaxed) + 1;
	unsigned b = (unsigned)(n & 1);
	uint32_t s = buffer_open(c, b);
	if (len > 0) {
		memcpy(ch->buf[b], data, len);
	}
	publish(ch, b, s, n, (uint32_t)len);
	return 0;
}

/* Loans: the writer lock is taken and the back buffer opened by hako_channel_loan, and both are
 * released by hako_channel_commit / hako_channel_cancel. No loan state is stored: while the lock
 * is held, the loaned write is c->seq + 1 and its buffer's sequence word is the odd one, so the
 * shared layout is unchanged. A loaner killed in between leaves the lock holding a dead pid and
 * the buffer odd: the next writer takes the lock over (writer_lock) and reopens the buffer
 * (buffer_open), as after a writer killed mid-copy. The loan's buffer in *b, and the even base
 * it was opened with (its odd word - 1) in *s. */
static int holds_loan(struct hakoi_channel *c, unsigned *b, uint32_t *s)
{
	if (atomic_load_explicit(&c->wlock, memory_order_acquire) != hakoi_self_pid()) {
		return 0;
	}
	*b = (unsigned)((atomic_load_explicit(&c->seq, memory_order_relaxed) + 1) & 1);
	uint32_t open = atomic_load_explicit(&c->buf_seq[*b], memory_order_relaxed);
	*s = open - 1;
	return (open & 1) != 0;
}

int hako_channel_loan(hako_channel_t *ch, void **buf, size_t *cap)
{
	if (buf != NULL) {
		*buf = NULL;
	}
	if (ch == NULL || buf == NULL) {
		return HAKO_EINVAL;
	}
	struct hakoi_channel *c = ch->c;
	if (writer_lock_or_say(c) != 0) {
		return HAKO_EBUSY;
	}
	unsigned b = (unsigned)((atomic_load_explicit(&c->seq, memory_order_relaxed) + 1) & 1);
	(void)buffer_open(c, b);
	*buf = ch->buf[b];
	if (cap != NULL) {
		*cap = ch->size;
	}
	return 0;
}

int hako_channel_commit(hako_channel_t *ch, size_t len)
{
	if (ch == NULL) {
		return HAKO_EINVAL;
	}
	struct hakoi_channel *c = ch->c;
	unsigned b;
	uint32_t s;
	if (!holds_loan(c, &b, &s)) {
		return HAKO_ESTATE;
	}
	if (len > ch->size) {
		return HAKO_ETOOBIG; /* the loan stays open: commit again or cancel */
	}
	uint64_t n = atomic_load_explicit(&c->seq, memory_order_relaxed) + 1;
	publish(ch, b, s, n, (uint32_t)len);
	return 0;
}

int hako_channel_cancel(hako_channel_t *ch)
{
	if (ch == NULL) {
		return HAKO_EINVAL;
	}
	struct hakoi_channel *c = ch->c;
	unsigned b;
	uint32_t s;
	if (!holds_loan(c, &b, &s)) {
		return HAKO_ESTATE;
	}
	/* The buffer held the write before the newest one, now partly overwritten: mark it empty
	 * (write number 0), so no reader ever takes it; the next write reuses it. */
	buffer_close(c, b, s, 0, 0);
	writer_unlock(c);
	return 0;
}

/* The newest complete write: its number (0 = none since creation or reset) in *wno, its buffer
 * and that buffer's sequence word. Buffers are chosen by the write number they hold, not by
 * c->seq, which the writer stores only after closing the buffer: so the number a reader gets is
 * the number of the data it copies, hako_channel_seq() agrees with it, and reads never go back in
 * time. HAKO_ECORRUPT if both buffers stay open with no live writer. */
static int newest_write(const struct hakoi_channel *c, unsigned *buf, uint32_t *buf_seq,
                        uint64_t *wno)
{
	hako_time_t deadline = 0;
	for (unsigned spins = 1;; spins++) {
		uint32_t q0 = atomic_load_explicit(&c->buf_seq[0], memory_order_acquire);
		uint64_t w0 = atomic_load_explicit(&c->buf_wno[0], memory_order_relaxed);
		uint32_t q1 = atomic_load_explicit(&c->buf_seq[1], memory_order_acquire);
		uint64_t w1 = atomic_load_explicit(&c->buf_wno[1], memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		int stable = atomic_load_explicit(&c->buf_seq[0], memory_order_relaxed) == q0 &&
		             atomic_load_explicit(&c->buf_seq[1], memory_order_relaxed) == q1;
		/* Both odd happens only while a writer takes over from one that died mid-write. */
		if (stable && !((q0 & 1) && (q1 & 1))) {
			unsigned b = (q0 & 1) ? 1 : (q1 & 1) ? 0 : (w1 > w0 ? 1 : 0);
			*buf = b;
			*buf_seq = b ? q1 : q0;
			*wno = b ? w1 : w0;
			/* A reader only ever takes a closed buffer. */
			HAKO_ASSERT_MSG((*buf_seq & 1) == 0, "words %u %u", q0, q1);
			return 0;
		}
		hakoi_cpu_relax();
		if ((spins & 1023) != 0) {
			continue;
		}
		sched_yield(); /* the writer may be preempted mid-copy */
		/* Both open, and nobody (alive) writing: no write will ever close them. Both are
		 * open only while a writer takes over from one that died mid-write, which closes
		 * one at once: a reader gives up after HAKOI_READ_STUCK_USEC even with a live lock
		 * holder (a pid a corrupted segment names), not after a writer's lock timeout, so a
		 * tool reading a broken segment is slowed, never stalled, channel after channel.
		 * A snapshot that keeps changing is a writer at work, whose lock is free between
		 * two writes: only the deadline ends that, never the lock word. */
		uint32_t holder = atomic_load_explicit(&c->wlock, memory_order_relaxed);
		hako_time_t now = hako_now_usec();
		if (deadline == 0) {
			deadline = now + HAKOI_READ_STUCK_USEC;
		} else if ((stable && (holder == 0 || holder_dead(holder))) || now >= deadline) {
			return HAKO_ECORRUPT;
		}
	}
}

int hakoi_channel_newest(const struct hakoi_channel *c, unsigned *buf, uint32_t *buf_seq,
                         uint64_t *wno)
{
	return newest_write(c, buf, buf_seq, wno);
}

uint64_t hako_channel_seq(const hako_channel_t *ch)
{
	unsigned b;
	uint32_t q;
	uint64_t wno = 0;
	return ch != NULL && newest_write(ch->c, &b, &q, &wno) == 0 ? wno : 0;
}

int hako_channel_read(hako_channel_t *ch, void *buf, size_t cap, size_t *len_out, uint64_t *seq_out)
{
	if (ch == NULL || (buf == NULL && cap > 0)) {
		return HAKO_EINVAL;
	}
	struct hakoi_channel *c = ch->c;
	for (;;) {
		unsigned b;
		uint32_t s1;
		uint64_t wno;
		if (newest_write(c, &b, &s1, &wno) != 0) {
			return HAKO_ECORRUPT;
		}
		size_t len =
		    wno == 0 ? 0 : atomic_load_explicit(&c->buf_len[b], memory_order_relaxed);
		size_t copy = len < cap ? len : cap;
		if (copy > ch->size) {
			copy = ch->size;
		}
		if (copy > 0) {
			memcpy(buf, ch->buf[b], copy);
		}
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&c->buf_seq[b], memory_order_relaxed) == s1) {
			if (len_out != NULL) {
				*len_out = len;
			}
			if (seq_out != NULL) {
				*seq_out = wno;
			}
			return len > cap ? HAKO_ETOOBIG : 0;
		}
		/* The writer lapped us twice during the copy: take the newer one. */
	}
}

struct seq_wait {
	struct hakoi_channel *c;
	uint64_t seen;
};

static int seq_changed(void *arg)
{
	struct seq_wait *w = arg;
	unsigned b;
	uint32_t q;
	/* A seq_cst load of the counter the writer stores (seq_cst) before it looks for waiters:
	 * a writer that saw no waiter has then made its buffer visible to this check. */
	(void)atomic_load(&w->c->seq);
	uint64_t wno;
	/* A channel that cannot be read ends the wait: the read says why. */
	return newest_write(w->c, &b, &q, &wno) != 0 || wno != w->seen;
}

int hako_channel_wait(hako_channel_t *ch, uint64_t seen, hako_time_t spin_usec,
                      hako_time_t timeout_usec)
{
	if (ch == NULL) {
		return HAKO_EINVAL;
	}
	struct seq_wait w = {ch->c, seen};
	int r = hakoi_wait(&ch->c->notify, &ch->c->waiters, seq_changed, &w, spin_usec,
	                   timeout_usec, NULL, NULL);
	return r < 0 ? r : 0;
}

void hakoi_channels_reset(hako_domain_t *dom)
{
	HAKO_ASSERT(hakoi_lock_held(dom));
	uint32_t count = hakoi_channel_count(dom);
	for (uint32_t i = 0; i < count; i++) {
		struct hakoi_channel *c = &dom->channels[i];
		if (!entry_sane(dom, c)) {
			continue;
		}
		/* As a writer would: a reader copying meanwhile sees the buffers open and retries.
		 * A writer that holds on (stopped) leaves its channel as it is, briefly waited for:
		 * the reset runs under the domain lock. */
		if (writer_lock(c, 100000) != 0) {
			HAKO_WARN(
			    "domain '%s': reset: channel %.*s/%d is held by writer pid %u; its "
			    "data is left as it is",
			    dom->name, (int)sizeof(c->robot) - 1, c->robot, c->channel_id,
			    (unsigned)atomic_load(&c->wlock));
			continue;
		}
		int written = atomic_load(&c->seq) != 0;
		for (unsigned b = 0; b < 2; b++) {
			uint32_t s = buffer_open(c, b);
			/* Zero only what was written: untouched arena pages stay unbacked. */
			if (written) {
				memset(dom->arena + c->data_off + b * (uint64_t)c->stride, 0,
				       c->stride);
			}
			buffer_close(c, b, s, 0, 0);
		}
		atomic_store(&c->seq, 0);
		writer_unlock(c);
		atomic_fetch_add(&c->notify, 1);
		if (atomic_load(&c->waiters) != 0) {
			hakoi_futex_wake_all(&c->notify);
		}
		hakoi_waitset_notify(dom, atomic_load(&c->waitset_mask));
	}
}

int hako_domain_list_channels(hako_domain_t *dom, hako_channel_info_t *out, int max, int *count)
{
	if (dom == NULL || (out == NULL && max > 0)) {
		return HAKO_EINVAL;
	}
	uint32_t n = hakoi_channel_count(dom);
	for (uint32_t i = 0; i < n && (int)i < max; i++) {
		struct hakoi_channel *c = &dom->channels[i];
		snprintf(out[i].robot, sizeof(out[i].robot), "%.*s", (int)sizeof(c->robot) - 1,
		         c->robot);
		out[i].channel_id = c->channel_id;
		out[i].size = c->size;
		unsigned b;
		uint32_t q;
		uint64_t wno = 0;
		out[i].seq = newest_write(c, &b, &q, &wno) == 0 ? wno : 0;
		out[i].index = (int)i;
	}
	if (count != NULL) {
		*count = (int)n;
	}
	return 0;
}

/* The writer's steps, for the batch writes of channel_batch.c (internal.h). */
int hakoi_channel_lock(struct hakoi_channel *c)
{
	return writer_lock_or_say(c);
}

uint32_t hakoi_channel_open(struct hakoi_channel *c, unsigned b)
{
	return buffer_open(c, b);
}

void hakoi_channel_close(struct hakoi_channel *c, unsigned b, uint32_t s, uint64_t wno,
                         uint32_t len)
{
	buffer_close(c, b, s, wno, len);
}

void hakoi_channel_wake(hako_domain_t *dom, struct hakoi_channel *c)
{
	wake_readers(dom, c);
}
