/* Internal: the I/O loop that serves the network comms (tcp, udp) of an endpoint set from one
 * thread: poll() over the fds the comms register, timers in a heap, and tasks that any thread
 * posts, behind one eventfd that wakes the poll.
 *
 * Ownership. An endpoint set owns one loop for all its endpoints; an endpoint opened on its own
 * owns its own. The loop's thread runs while at least one comm holds it (a comm holds it from
 * start to stop), so a stopped set has no thread.
 *
 * Threads. ios and timers belong to the loop thread: add, change and delete them there (in a
 * callback, a task, or a hakoi_loop_call), or while no thread runs. Tasks are posted from any
 * thread. Callbacks run one at a time on the loop thread; one that blocks holds up every comm
 * of the loop, so they only do non-blocking I/O.
 */
#ifndef HAKOI_EP_LOOP_H
#define HAKOI_EP_LOOP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hakoi_loop hakoi_loop_t;
typedef struct hakoi_io hakoi_io_t;
typedef struct hakoi_timer hakoi_timer_t;
typedef struct hakoi_task hakoi_task_t;

/* An fd the loop polls: cb(io, revents) when one of events (POLLIN, POLLOUT) or an error is
 * reported. events 0: not polled at all (paused). */
struct hakoi_io {
	int fd;
	short events;
	void (*cb)(hakoi_io_t *io, short revents);
	void *arg;
	const void *owner; /* hakoi_loop_current() during cb */
	size_t slot;       /* the loop's: 0 = not added */
};

/* A deadline on CLOCK_MONOTONIC (hakoi_now_ns): cb(t) once it has passed, once per set. */
struct hakoi_timer {
	uint64_t when;
	void (*cb)(hakoi_timer_t *t);
	void *arg;
	const void *owner;
	size_t slot; /* the loop's: 0 = not armed */
	int added;
};

/* Work for the loop thread: fn(t) runs once after a post, however often it was posted until
 * then; a post while fn runs makes it run again. */
struct hakoi_task {
	void (*fn)(hakoi_task_t *t);
	void *arg;
	const void *owner;
	atomic_int queued;
	hakoi_task_t *next;
};

uint64_t hakoi_now_ns(void);

/* 0, HAKO_ENOMEM or HAKO_EIO (no eventfd). */
int hakoi_loop_create(hakoi_loop_t **out);
/* Once no comm uses it (nothing added, no holder). Accepts NULL. */
void hakoi_loop_destroy(hakoi_loop_t *l);

/* The first hold starts the loop thread (0, or HAKO_EIO when it cannot); the last release
 * stops and joins it (from the loop thread itself it is joined by the next hold or by destroy). */
int hakoi_loop_hold(hakoi_loop_t *l);
void hakoi_loop_release(hakoi_loop_t *l);

/* Whether the caller is l's thread; the owner of the io, timer or task whose callback the
 * calling thread is running (NULL outside of callbacks, and on other threads). */
int hakoi_loop_on_thread(const hakoi_loop_t *l);
const void *hakoi_loop_current(void);

/* Run fn(arg) on the loop thread and return when it did: inline when called from the loop
 * thread or while no thread runs. */
void hakoi_loop_call(hakoi_loop_t *l, void (*fn)(void *), void *arg);

/* Any thread. post: queue t (no-op while it is queued) and wake the loop if it sleeps. cancel:
 * unqueue t and wait for a run of it in progress, so that its memory may be freed. */
void hakoi_loop_post(hakoi_loop_t *l, hakoi_task_t *t);
void hakoi_loop_cancel(hakoi_loop_t *l, hakoi_task_t *t);

/* Loop thread (see above). io_add: 0 or HAKO_ENOMEM. timer_add makes room for t in the heap (0
 * or HAKO_ENOMEM), so that arming it never fails; timer_del disarms and frees that room. */
int hakoi_io_add(hakoi_loop_t *l, hakoi_io_t *io);
void hakoi_io_events(hakoi_loop_t *l, hakoi_io_t *io, short events);
void hakoi_io_del(hakoi_loop_t *l, hakoi_io_t *io);
int hakoi_timer_add(hakoi_loop_t *l, hakoi_timer_t *t);
void hakoi_timer_set(hakoi_loop_t *l, hakoi_timer_t *t, uint64_t when);
void hakoi_timer_cancel(hakoi_loop_t *l, hakoi_timer_t *t);
void hakoi_timer_del(hakoi_loop_t *l, hakoi_timer_t *t);

static inline int hakoi_timer_armed(const hakoi_timer_t *t)
{
	return t->slot != 0;
}

#endif
