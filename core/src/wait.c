/* Blocking waits: spin for a short budget, then sleep on a futex. Wakers make the FUTEX_WAKE
 * system call only when a waiter announced itself, so the data path costs no syscall when
 * nobody sleeps. */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define SPIN_USEC 50 /* spin budget when every asset has a CPU */
/* Yield budget of a step wait when there are more assets than CPUs: a lock-step round takes a
 * context switch (a few us) per asset on each CPU, so the budget grows with assets per CPU. */
#define YIELD_USEC           50
#define YIELD_USEC_PER_ASSET 8

hako_time_t hako_now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (hako_time_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int hakoi_futex_wait(_Atomic uint32_t *addr, uint32_t expected, hako_time_t timeout_usec)
{
	struct timespec ts, *tsp = NULL;
	if (timeout_usec >= 0) {
		ts.tv_sec = timeout_usec / 1000000;
		ts.tv_nsec = (timeout_usec % 1000000) * 1000;
		tsp = &ts;
	}
	/* Shared futex (no FUTEX_PRIVATE_FLAG): waiters live in other processes. */
	long r = syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT, expected, tsp, NULL, 0);
	if (r == 0) {
		return 0;
	}
	return errno == ETIMEDOUT ? HAKO_ETIMEDOUT : 0;
}

void hakoi_futex_wake_all(_Atomic uint32_t *addr)
{
	syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

void hakoi_notify(_Atomic uint32_t *word, _Atomic uint32_t *waiters)
{
	atomic_fetch_add(word, 1);
	if (atomic_load(waiters) != 0) {
		hakoi_futex_wake_all(word);
	}
}

int hakoi_wait(_Atomic uint32_t *word, _Atomic uint32_t *waiters, hakoi_cond_fn cond, void *arg,
               hako_time_t spin_usec, hako_time_t timeout_usec, hakoi_cond_fn slice,
               void *slice_arg)
{
	int r = cond(arg);
	if (r != 0) {
		return r;
	}
	hako_time_t start = hako_now_usec();
	hako_time_t deadline = timeout_usec < 0 ? -1 : start + timeout_usec;
	if (spin_usec > 0) {
		hako_time_t spin_end = start + spin_usec;
		for (unsigned i = 1;; i++) {
			hakoi_cpu_relax();
			if ((r = cond(arg)) != 0) {
				return r;
			}
			/* Reading the clock costs ~25 ns: do it every 64 polls only. */
			if ((i & 63) == 0) {
				hako_time_t now = hako_now_usec();
				if (now >= spin_end) {
					break;
				}
				/* Past 2 us the process we wait for may be queued behind us on
				 * this very CPU: let it run. */
				if (now - start >= 2) {
					sched_yield();
				}
			}
		}
	}
	hako_time_t last_slice = start;
	for (;;) {
		hako_time_t now = hako_now_usec();
		if (deadline >= 0 && now >= deadline) {
			return HAKO_ETIMEDOUT;
		}
		/* Also when other processes keep waking us: a waiter that never times out must
		 * still heartbeat and look for a dead conductor. */
		if (slice != NULL && now - last_slice >= HAKOI_WAIT_SLICE_USEC) {
			last_slice = now;
			if ((r = slice(slice_arg)) != 0) {
				return r;
			}
		}
		hako_time_t slice_usec = HAKOI_WAIT_SLICE_USEC;
		if (deadline >= 0 && deadline - now < slice_usec) {
			slice_usec = deadline - now;
		}
		/* Announce first, then read the word, then re-check: a waker that bumps the word
		 * after our check sees waiters != 0 and wakes us (all operations seq_cst). */
		atomic_fetch_add(waiters, 1);
		uint32_t seen = atomic_load(word);
		if ((r = cond(arg)) != 0) {
			atomic_fetch_sub(waiters, 1);
			return r;
		}
		int timed_out = hakoi_futex_wait(word, seen, slice_usec) == HAKO_ETIMEDOUT;
		atomic_fetch_sub(waiters, 1);
		if ((r = cond(arg)) != 0) {
			return r;
		}
		if (timed_out && slice != NULL) {
			last_slice = hako_now_usec();
			if ((r = slice(slice_arg)) != 0) {
				return r;
			}
		}
	}
}

int hakoi_yield_wait(hakoi_cond_fn cond, void *arg, hako_time_t usec)
{
	if (usec <= 0) {
		return 0;
	}
	hako_time_t end = hako_now_usec() + usec;
	do {
		sched_yield();
		int r = cond(arg);
		if (r != 0) {
			return r;
		}
	} while (hako_now_usec() < end);
	return 0;
}

/* HAKO_SPIN_USEC, or -1 when unset. */
static long env_spin(void)
{
	static _Atomic long env = -2; /* -2 unread, -1 unset */
	long s = atomic_load_explicit(&env, memory_order_relaxed);
	if (s == -2) {
		const char *e = getenv("HAKO_SPIN_USEC");
		s = (e != NULL && e[0] != '\0') ? atol(e) : -1;
		atomic_store_explicit(&env, s, memory_order_relaxed);
	}
	return s;
}

static long online_cpus(void)
{
	static _Atomic long ncpu = 0;
	long n = atomic_load_explicit(&ncpu, memory_order_relaxed);
	if (n == 0) {
		n = sysconf(_SC_NPROCESSORS_ONLN);
		if (n < 1) {
			n = 1;
		}
		atomic_store_explicit(&ncpu, n, memory_order_relaxed);
	}
	return n;
}

/* 1 if every asset of the domain can have a CPU to itself, 0 if not, -1 if a member is a
 * proxy (a conductor node's peer): its clock moves when a message arrives from another node,
 * tens of microseconds away, carried by this process's own threads, which need the CPU that
 * a spinner would take. */
static int assets_fit_cpus(hako_domain_t *dom)
{
	if (atomic_load_explicit(&dom->hdr->proxy_count, memory_order_relaxed) > 0) {
		return -1;
	}
	uint32_t assets = atomic_load_explicit(&dom->hdr->asset_count, memory_order_relaxed);
	return (long)assets <= online_cpus();
}

hako_time_t hakoi_spin_budget(hako_domain_t *dom)
{
	long s = env_spin();
	if (s >= 0) {
		return s;
	}
	/* Spinning pays only when every asset has a CPU to itself; otherwise the spinner takes
	 * the CPU that the asset it waits for needs. */
	return assets_fit_cpus(dom) == 1 ? SPIN_USEC : 0;
}

hako_time_t hakoi_yield_budget(hako_domain_t *dom)
{
	if (env_spin() >= 0) {
		return 0; /* the user chose how to wait */
	}
	if (atomic_load_explicit(&dom->hdr->rtf_milli, memory_order_relaxed) != 0) {
		return 0; /* the master's timer moves the world, not the last asset's report */
	}
	/* More assets than CPUs: the assets of a lock-step round take turns on each CPU. A
	 * waiter that yields hands its CPU to the next one without a futex sleep and wake-up
	 * (one context switch instead of a sleep, a wake and a switch, and no CPU going idle
	 * between steps, to be woken by an interrupt), and sees the world advance the next
	 * time its turn comes. */
	if (assets_fit_cpus(dom) != 0) {
		return 0;
	}
	uint32_t assets = atomic_load_explicit(&dom->hdr->asset_count, memory_order_relaxed);
	hako_time_t budget = (hako_time_t)assets * YIELD_USEC_PER_ASSET / online_cpus();
	return budget > YIELD_USEC ? budget : YIELD_USEC;
}
