/* The I/O loop of the network comms (ep_loop.h).
 *
 * One iteration: run the tasks posted so far, sleep in poll() until an fd is ready, the first
 * timer is due or the eventfd is written, then call the ready ios and the due timers.
 *
 * Waking. A post writes the eventfd only when the loop may be asleep: the loop clears
 * wake_pending before it looks for posted tasks a last time and polls, and sets it when poll
 * returns; a post sets `posted` and then exchanges wake_pending. Both are seq_cst, so either the
 * loop sees the post or the post sees the loop asleep. A burst of sends therefore costs one
 * eventfd write, not one per PDU.
 *
 * ios live in an array parallel to the pollfd array (slot 0 is the eventfd). An io deleted while
 * the ready ones are being called leaves a hole (fd -1) until the round ends, so that the array
 * does not move under the round; one added meanwhile is appended and polled from the next round.
 * Timers are a binary heap; timer_add reserves a place in it, so arming never allocates.
 */
#define _GNU_SOURCE

#include "ep_loop.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "hako/error.h"
#include "hako/log.h"

#define MAX_POLL_MS 60000

struct hakoi_loop {
	/* The loop thread's (or anyone's while no thread runs). */
	struct pollfd *pfds;
	hakoi_io_t **ios;
	size_t nio;
	size_t io_cap;
	int dispatching;
	int holes;
	hakoi_timer_t **heap;
	size_t nheap;
	size_t heap_cap;
	size_t ntimers; /* added: the heap has room for all of them */
	int poll_warned;

	int wfd;
	atomic_int wake_pending; /* 1: awake, or already signalled */
	atomic_int posted;       /* the task list is not empty */

	pthread_mutex_t mu;
	pthread_cond_t cv; /* a call done, a task run ended, a join ended */
	hakoi_task_t *head;
	hakoi_task_t *tail;
	size_t nqueued;
	hakoi_task_t *running; /* the task whose fn runs now */
	int holders;
	atomic_int quit; /* the thread leaves at its next round (set under mu) */
	int thread_on;   /* a thread was started and not joined yet */
	int joining;     /* a caller joins it */
	pthread_t tid;
};

static _Thread_local const hakoi_loop_t *tl_loop;
static _Thread_local const void *tl_current;

uint64_t hakoi_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int hakoi_loop_on_thread(const hakoi_loop_t *l)
{
	return l != NULL && tl_loop == l;
}

const void *hakoi_loop_current(void)
{
	return tl_current;
}

static void wake(hakoi_loop_t *l)
{
	uint64_t one = 1;
	ssize_t w = write(l->wfd, &one, sizeof(one));
	(void)w; /* EAGAIN: the counter is not zero, the loop wakes anyway */
}

/* ---- tasks ---- */

void hakoi_loop_post(hakoi_loop_t *l, hakoi_task_t *t)
{
	if (atomic_exchange(&t->queued, 1)) {
		return;
	}
	pthread_mutex_lock(&l->mu);
	t->next = NULL;
	if (l->tail != NULL) {
		l->tail->next = t;
	} else {
		l->head = t;
	}
	l->tail = t;
	l->nqueued++;
	atomic_store(&l->posted, 1);
	pthread_mutex_unlock(&l->mu);
	if (!atomic_exchange(&l->wake_pending, 1)) {
		wake(l);
	}
}

/* Unlink t from the queue (mu held); 0 if it was not there. */
static int unqueue_locked(hakoi_loop_t *l, hakoi_task_t *t)
{
	hakoi_task_t *prev = NULL;
	for (hakoi_task_t *q = l->head; q != NULL; prev = q, q = q->next) {
		if (q != t) {
			continue;
		}
		if (prev != NULL) {
			prev->next = t->next;
		} else {
			l->head = t->next;
		}
		if (l->tail == t) {
			l->tail = prev;
		}
		t->next = NULL;
		l->nqueued--;
		return 1;
	}
	return 0;
}

void hakoi_loop_cancel(hakoi_loop_t *l, hakoi_task_t *t)
{
	pthread_mutex_lock(&l->mu);
	if (unqueue_locked(l, t)) {
		atomic_store(&t->queued, 0);
	}
	while (l->running == t && !hakoi_loop_on_thread(l)) {
		pthread_cond_wait(&l->cv, &l->mu);
	}
	pthread_mutex_unlock(&l->mu);
}

/* The tasks queued when the round began (one that posts itself again runs next round). */
static void run_tasks(hakoi_loop_t *l)
{
	if (!atomic_load(&l->posted)) {
		return;
	}
	pthread_mutex_lock(&l->mu);
	atomic_store(&l->posted, 0);
	for (size_t n = l->nqueued; n > 0 && l->head != NULL; n--) {
		hakoi_task_t *t = l->head;
		unqueue_locked(l, t);
		l->running = t;
		pthread_mutex_unlock(&l->mu);
		atomic_store(&t->queued, 0);
		tl_current = t->owner;
		t->fn(t);
		tl_current = NULL;
		pthread_mutex_lock(&l->mu);
		l->running = NULL;
		pthread_cond_broadcast(&l->cv);
	}
	if (l->head != NULL) {
		atomic_store(&l->posted, 1);
	}
	pthread_mutex_unlock(&l->mu);
}

typedef struct loop_call {
	hakoi_loop_t *l;
	void (*fn)(void *);
	void *arg;
	int done;
	hakoi_task_t task;
} loop_call_t;

static void call_run(hakoi_task_t *t)
{
	loop_call_t *c = t->arg;
	c->fn(c->arg);
	pthread_mutex_lock(&c->l->mu);
	c->done = 1;
	pthread_cond_broadcast(&c->l->cv);
	pthread_mutex_unlock(&c->l->mu);
}

void hakoi_loop_call(hakoi_loop_t *l, void (*fn)(void *), void *arg)
{
	pthread_mutex_lock(&l->mu);
	int inline_call = hakoi_loop_on_thread(l) || !l->thread_on;
	pthread_mutex_unlock(&l->mu);
	if (inline_call) {
		fn(arg);
		return;
	}
	loop_call_t c = {.l = l, .fn = fn, .arg = arg};
	c.task.fn = call_run;
	c.task.arg = &c;
	atomic_init(&c.task.queued, 0);
	hakoi_loop_post(l, &c.task);
	pthread_mutex_lock(&l->mu);
	while (!c.done) {
		pthread_cond_wait(&l->cv, &l->mu);
	}
	pthread_mutex_unlock(&l->mu);
}

/* ---- ios ---- */

static int io_room(hakoi_loop_t *l, size_t n)
{
	if (n <= l->io_cap) {
		return 0;
	}
	size_t cap = l->io_cap * 2 > n ? l->io_cap * 2 : n;
	struct pollfd *p = realloc(l->pfds, cap * sizeof(*p));
	if (p == NULL) {
		return HAKO_ENOMEM;
	}
	l->pfds = p;
	hakoi_io_t **ios = realloc(l->ios, cap * sizeof(*ios));
	if (ios == NULL) {
		return HAKO_ENOMEM;
	}
	l->ios = ios;
	l->io_cap = cap;
	return 0;
}

int hakoi_io_add(hakoi_loop_t *l, hakoi_io_t *io)
{
	if (io->slot != 0) {
		return 0;
	}
	if (io_room(l, l->nio + 1) != 0) {
		return HAKO_ENOMEM;
	}
	size_t i = l->nio++;
	l->pfds[i] = (struct pollfd){.fd = io->events != 0 ? io->fd : -1, .events = io->events};
	l->ios[i] = io;
	io->slot = i;
	return 0;
}

void hakoi_io_events(hakoi_loop_t *l, hakoi_io_t *io, short events)
{
	io->events = events;
	if (io->slot != 0) {
		/* Not polled at all while paused: poll would still report errors and hang-ups. */
		l->pfds[io->slot].fd = events != 0 ? io->fd : -1;
		l->pfds[io->slot].events = events;
	}
}

/* Move the last entry into slot i (i was deleted). */
static void io_fill(hakoi_loop_t *l, size_t i)
{
	size_t last = --l->nio;
	if (i != last) {
		l->pfds[i] = l->pfds[last];
		l->ios[i] = l->ios[last];
		if (l->ios[i] != NULL) {
			l->ios[i]->slot = i;
		}
	}
}

void hakoi_io_del(hakoi_loop_t *l, hakoi_io_t *io)
{
	size_t i = io->slot;
	if (i == 0) {
		return;
	}
	io->slot = 0;
	if (l->dispatching) {
		l->pfds[i] = (struct pollfd){.fd = -1};
		l->ios[i] = NULL;
		l->holes++;
		return;
	}
	io_fill(l, i);
}

static void io_compact(hakoi_loop_t *l)
{
	for (size_t i = l->nio; l->holes > 0 && i-- > 1;) {
		if (l->ios[i] == NULL) {
			io_fill(l, i);
			l->holes--;
		}
	}
	l->holes = 0;
}

static void dispatch(hakoi_loop_t *l)
{
	size_t n = l->nio;
	l->dispatching = 1;
	for (size_t i = 1; i < n; i++) {
		short rev = l->pfds[i].revents;
		hakoi_io_t *io = l->ios[i];
		if (rev == 0 || io == NULL) {
			continue;
		}
		l->pfds[i].revents = 0;
		tl_current = io->owner;
		io->cb(io, rev);
		tl_current = NULL;
	}
	l->dispatching = 0;
	io_compact(l);
}

/* ---- timers ---- */

static void heap_put(hakoi_loop_t *l, size_t i, hakoi_timer_t *t)
{
	l->heap[i] = t;
	t->slot = i + 1;
}

static void sift_up(hakoi_loop_t *l, size_t i)
{
	hakoi_timer_t *t = l->heap[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (l->heap[parent]->when <= t->when) {
			break;
		}
		heap_put(l, i, l->heap[parent]);
		i = parent;
	}
	heap_put(l, i, t);
}

static void sift_down(hakoi_loop_t *l, size_t i)
{
	hakoi_timer_t *t = l->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= l->nheap) {
			break;
		}
		if (c + 1 < l->nheap && l->heap[c + 1]->when < l->heap[c]->when) {
			c++;
		}
		if (t->when <= l->heap[c]->when) {
			break;
		}
		heap_put(l, i, l->heap[c]);
		i = c;
	}
	heap_put(l, i, t);
}

int hakoi_timer_add(hakoi_loop_t *l, hakoi_timer_t *t)
{
	if (t->added) {
		return 0;
	}
	if (l->ntimers + 1 > l->heap_cap) {
		size_t cap = l->heap_cap > 0 ? l->heap_cap * 2 : 16;
		hakoi_timer_t **h = realloc(l->heap, cap * sizeof(*h));
		if (h == NULL) {
			return HAKO_ENOMEM;
		}
		l->heap = h;
		l->heap_cap = cap;
	}
	l->ntimers++;
	t->added = 1;
	t->slot = 0;
	return 0;
}

void hakoi_timer_set(hakoi_loop_t *l, hakoi_timer_t *t, uint64_t when)
{
	if (!t->added) {
		return; /* a bug: hakoi_timer_add first */
	}
	if (t->slot != 0) {
		uint64_t old = t->when;
		t->when = when;
		if (when < old) {
			sift_up(l, t->slot - 1);
		} else {
			sift_down(l, t->slot - 1);
		}
		return;
	}
	t->when = when;
	l->heap[l->nheap] = t;
	sift_up(l, l->nheap++);
}

void hakoi_timer_cancel(hakoi_loop_t *l, hakoi_timer_t *t)
{
	if (t->slot == 0) {
		return;
	}
	size_t i = t->slot - 1;
	t->slot = 0;
	hakoi_timer_t *last = l->heap[--l->nheap];
	if (i < l->nheap) {
		heap_put(l, i, last);
		sift_up(l, i);
		sift_down(l, last->slot - 1);
	}
}

void hakoi_timer_del(hakoi_loop_t *l, hakoi_timer_t *t)
{
	hakoi_timer_cancel(l, t);
	if (t->added) {
		t->added = 0;
		l->ntimers--;
	}
}

static int next_timeout(const hakoi_loop_t *l)
{
	if (l->nheap == 0) {
		return -1;
	}
	uint64_t now = hakoi_now_ns();
	uint64_t when = l->heap[0]->when;
	if (when <= now) {
		return 0;
	}
	uint64_t ms = (when - now + 999999u) / 1000000u;
	return ms > MAX_POLL_MS ? MAX_POLL_MS : (int)ms;
}

/* The timers due now; one that sets itself again for a time already past runs next round. */
static void run_timers(hakoi_loop_t *l)
{
	uint64_t now = hakoi_now_ns();
	for (size_t n = l->nheap; n > 0 && l->nheap > 0 && l->heap[0]->when <= now; n--) {
		hakoi_timer_t *t = l->heap[0];
		hakoi_timer_cancel(l, t);
		tl_current = t->owner;
		t->cb(t);
		tl_current = NULL;
	}
}

/* ---- the thread ---- */

static void *loop_main(void *arg)
{
	hakoi_loop_t *l = arg;
	tl_loop = l;
	for (;;) {
		run_tasks(l);
		/* Not under mu: a sender posting each round would contend for it. */
		if (atomic_load(&l->quit)) {
			break;
		}
		/* Asleep from here: posts must write the eventfd. Then look once more for them. */
		atomic_store(&l->wake_pending, 0);
		int timeout = atomic_load(&l->posted) ? 0 : next_timeout(l);
		int n = poll(l->pfds, l->nio, timeout);
		atomic_store(&l->wake_pending, 1);
		if (n < 0) {
			if (errno != EINTR && !l->poll_warned) {
				HAKO_WARN("endpoint I/O loop: poll over %zu fds: %s", l->nio,
				          strerror(errno));
				l->poll_warned = 1;
			}
			continue;
		}
		if (n > 0 && l->pfds[0].revents != 0) {
			uint64_t v;
			ssize_t r = read(l->wfd, &v, sizeof(v));
			(void)r;
		}
		if (n > 0) {
			dispatch(l);
		}
		run_timers(l);
	}
	tl_loop = NULL;
	return NULL;
}

/* mu held. */
static int start_locked(hakoi_loop_t *l)
{
	atomic_store(&l->quit, 0);
	int e = pthread_create(&l->tid, NULL, loop_main, l);
	if (e != 0) {
		HAKO_WARN("endpoint I/O loop: cannot start its thread: %s", strerror(e));
		return HAKO_EIO;
	}
	l->thread_on = 1;
	return 0;
}

/* Join the thread told to quit (mu held, released meanwhile). */
static void join_locked(hakoi_loop_t *l)
{
	pthread_t t = l->tid;
	l->joining = 1;
	pthread_mutex_unlock(&l->mu);
	wake(l);
	pthread_join(t, NULL);
	pthread_mutex_lock(&l->mu);
	l->joining = 0;
	l->thread_on = 0;
	pthread_cond_broadcast(&l->cv);
}

int hakoi_loop_hold(hakoi_loop_t *l)
{
	int r = 0;
	pthread_mutex_lock(&l->mu);
	l->holders++;
	if (hakoi_loop_on_thread(l)) {
		/* Released from a callback and held again: keep running. (If a caller is already
		 * joining this thread, it starts a new one, the loop being held again.) */
		if (!l->joining) {
			atomic_store(&l->quit, 0);
		}
	} else {
		while (l->joining) {
			pthread_cond_wait(&l->cv, &l->mu);
		}
		if (l->thread_on && atomic_load(&l->quit)) {
			join_locked(l); /* left by a release from its own thread */
		}
		if (!l->thread_on) {
			r = start_locked(l);
		}
	}
	if (r != 0) {
		l->holders--;
	}
	pthread_mutex_unlock(&l->mu);
	return r;
}

void hakoi_loop_release(hakoi_loop_t *l)
{
	pthread_mutex_lock(&l->mu);
	if (--l->holders > 0) {
		pthread_mutex_unlock(&l->mu);
		return;
	}
	atomic_store(&l->quit, 1);
	if (!hakoi_loop_on_thread(l)) {
		while (l->joining) {
			pthread_cond_wait(&l->cv, &l->mu);
		}
		if (l->thread_on && l->holders == 0) {
			join_locked(l);
			if (l->holders > 0) {
				start_locked(
				    l); /* held again from its thread while it was leaving */
			}
		}
	}
	pthread_mutex_unlock(&l->mu);
}

int hakoi_loop_create(hakoi_loop_t **out)
{
	*out = NULL;
	hakoi_loop_t *l = calloc(1, sizeof(*l));
	if (l == NULL) {
		return HAKO_ENOMEM;
	}
	l->wfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->wfd < 0 || io_room(l, 8) != 0) {
		int r = l->wfd < 0 ? HAKO_EIO : HAKO_ENOMEM;
		if (l->wfd >= 0) {
			close(l->wfd);
		}
		free(l->pfds);
		free(l->ios);
		free(l);
		return r;
	}
	l->pfds[0] = (struct pollfd){.fd = l->wfd, .events = POLLIN};
	l->ios[0] = NULL;
	l->nio = 1;
	atomic_init(&l->wake_pending, 1);
	atomic_init(&l->posted, 0);
	atomic_init(&l->quit, 0);
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	*out = l;
	return 0;
}

void hakoi_loop_destroy(hakoi_loop_t *l)
{
	if (l == NULL) {
		return;
	}
	pthread_mutex_lock(&l->mu);
	while (l->joining) {
		pthread_cond_wait(&l->cv, &l->mu);
	}
	if (l->thread_on) {
		atomic_store(&l->quit, 1);
		join_locked(l);
	}
	pthread_mutex_unlock(&l->mu);
	if (l->nio > 1 || l->ntimers > 0 || l->head != NULL) {
		HAKO_WARN("endpoint I/O loop destroyed with %zu fds, %zu timers, %zu tasks left",
		          l->nio - 1, l->ntimers, l->nqueued);
	}
	close(l->wfd);
	free(l->pfds);
	free(l->ios);
	free(l->heap);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	free(l);
}
