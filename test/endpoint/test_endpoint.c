/* The endpoint object without a network: a comm-less endpoint is an in-process bus (send writes
 * the cache, subscribers run, recv / recv_next / wait see it), names resolve through the pdudef,
 * statistics count, and a container opens, starts, looks up and closes a node's endpoints. */
#define _GNU_SOURCE

#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "ep_test_util.h"

#include "hako/endpoint.h"
#include "hako_test_util.h"

static char dir[512];

static void put(const char *name, const char *text)
{
	char p[700];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(htu_write_file(p, text), 0);
}

static const char *path_of(const char *name)
{
	static char p[700];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static int setup(void **state)
{
	(void)state;
	htu_tmpdir(dir, sizeof(dir));
	put("pdudef.json", "{\"robots\": [{\"name\": \"Drone\", \"shm_pdu_readers\": ["
	                   "{\"type\": \"geometry_msgs/Twist\", \"org_name\": \"pos\", "
	                   "\"channel_id\": 1, \"pdu_size\": 72},"
	                   "{\"type\": \"std_msgs/UInt64\", \"org_name\": \"count\", "
	                   "\"channel_id\": 2, \"pdu_size\": 32}], \"shm_pdu_writers\": []}]}\n");
	put("latest.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n");
	put("queue.json",
	    "{\"type\": \"buffer\", \"store\": {\"mode\": \"queue\", \"depth\": 3}}\n");
	put("bus.json", "{\"name\": \"bus\", \"cache\": \"latest.json\", \"comm\": null,\n"
	                " \"pdu_def_path\": \"pdudef.json\"}\n");
	put("fifo.json", "{\"name\": \"fifo\", \"cache\": \"queue.json\", \"comm\": null,\n"
	                 " \"pdu_def_path\": null}\n");
	put("container.json", "[{\"nodeId\": \"n1\", \"endpoints\": [\n"
	                      "  {\"id\": \"a\", \"config_path\": \"bus.json\"},\n"
	                      "  {\"id\": \"b\", \"config_path\": \"fifo.json\"}]},\n"
	                      " {\"nodeId\": \"n2\", \"endpoints\": [\n"
	                      "  {\"id\": \"c\", \"config_path\": \"missing.json\"}]}]\n");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	htu_remove_tmpdirs();
	return 0;
}

struct seen {
	int calls;
	size_t last_len;
	unsigned char last[8];
};

static void on_recv(void *user, const hako_pdu_key_t *k, const void *data, size_t len)
{
	struct seen *s = user;
	(void)k;
	s->calls++;
	s->last_len = len;
	memcpy(s->last, data, len < sizeof(s->last) ? len : sizeof(s->last));
}

static void test_bus_latest_by_name(void **state)
{
	(void)state;
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	assert_int_equal(hako_endpoint_open(path_of("bus.json"), &ep, &err), 0);
	assert_string_equal(hako_endpoint_name(ep), "bus");
	assert_int_equal(hako_endpoint_start(ep, &err), 0);
	assert_int_equal(hako_endpoint_start(ep, &err), HAKO_ESTATE);

	hako_pdu_key_t k;
	size_t size = 0;
	assert_int_equal(hako_endpoint_resolve(ep, "Drone", "pos", &k, &size), 0);
	assert_int_equal(k.channel_id, 1);
	assert_int_equal(size, 72);
	assert_string_equal(hako_endpoint_pdu_name(ep, &k), "pos");
	assert_int_equal(hako_endpoint_resolve(ep, "Drone", "nope", &k, NULL), HAKO_ENOENT);
	assert_int_equal(hako_endpoint_resolve(ep, "Nobody", "pos", &k, NULL), HAKO_ENOENT);

	struct seen s = {0};
	assert_int_equal(hako_endpoint_subscribe_by_name(ep, "Drone", "pos", on_recv, &s, NULL), 0);
	unsigned char buf[16];
	size_t len = 0;
	assert_int_equal(hako_endpoint_recv_by_name(ep, "Drone", "pos", buf, sizeof(buf), &len),
	                 HAKO_EAGAIN);
	assert_int_equal(hako_endpoint_send_by_name(ep, "Drone", "pos", "abc", 3), 0);
	assert_int_equal(hako_endpoint_send_by_name(ep, "Drone", "pos", "xyzw", 4), 0);
	assert_int_equal(s.calls, 2);
	assert_memory_equal(s.last, "xyzw", 4);
	/* latest: the last write, and reads do not consume */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(
		    hako_endpoint_recv_by_name(ep, "Drone", "pos", buf, sizeof(buf), &len), 0);
		assert_int_equal(len, 4);
		assert_memory_equal(buf, "xyzw", 4);
	}
	assert_int_equal(hako_endpoint_recv(ep, &k, buf, 2, &len), HAKO_ETOOBIG);
	assert_int_equal(len, 4);
	assert_int_equal(hako_endpoint_send_by_name(ep, "Drone", "nope", "a", 1), HAKO_ENOENT);

	hako_endpoint_stats_t st;
	hako_endpoint_get_stats(ep, &st);
	assert_int_equal(st.frames_in, 2);
	assert_int_equal(st.bytes_in, 7);
	assert_int_equal(st.recv_dropped, 0);
	assert_int_equal(hako_endpoint_process_recv_events(ep), 0);
	assert_int_equal(hako_endpoint_local_port(ep), 0);
	assert_int_equal(hako_endpoint_stop(ep), 0);
	assert_false(hako_endpoint_is_running(ep));
	hako_endpoint_close(ep);
}

static void test_bus_queue_next_and_drops(void **state)
{
	(void)state;
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	assert_int_equal(hako_endpoint_open(path_of("fifo.json"), &ep, &err), 0);
	hako_pdu_key_t a = ept_key("A", 0), b = ept_key("B", 5);
	/* no pdudef: names do not resolve, keys work */
	assert_int_equal(hako_endpoint_resolve(ep, "A", "x", NULL, NULL), HAKO_ENOENT);
	assert_null(hako_endpoint_pdu_name(ep, &a));
	for (int i = 0; i < 5; i++) {
		unsigned char v = (unsigned char)i;
		assert_int_equal(hako_endpoint_send(ep, i % 2 ? &b : &a, &v, 1), 0);
	}
	/* a got 0, 2, 4; b got 1, 3 (depth 3: nothing dropped yet) */
	unsigned char v;
	size_t len;
	hako_pdu_key_t k;
	int order[5];
	for (int i = 0; i < 5; i++) {
		assert_int_equal(hako_endpoint_recv_next(ep, &k, &v, 1, &len), 0);
		order[i] = v;
		assert_string_equal(k.robot, v % 2 ? "B" : "A");
	}
	for (int i = 0; i < 5; i++) {
		assert_int_equal(order[i], i);
	}
	assert_int_equal(hako_endpoint_recv_next(ep, &k, &v, 1, &len), HAKO_EAGAIN);
	assert_int_equal(hako_endpoint_wait(ep, 1000), HAKO_ETIMEDOUT);
	/* overflow: depth 3, 5 writes -> 2 dropped, the oldest */
	for (int i = 0; i < 5; i++) {
		unsigned char w = (unsigned char)(10 + i);
		assert_int_equal(hako_endpoint_send(ep, &a, &w, 1), 0);
	}
	assert_int_equal(hako_endpoint_wait(ep, 0), 0);
	assert_int_equal(hako_endpoint_recv(ep, &a, &v, 1, &len), 0);
	assert_int_equal(v, 12);
	hako_endpoint_stats_t st;
	hako_endpoint_get_stats(ep, &st);
	assert_int_equal(st.recv_dropped, 2);
	assert_int_equal(st.frames_in, 10);
	/* bad arguments */
	hako_pdu_key_t empty = ept_key("", 0);
	assert_int_equal(hako_endpoint_send(ep, &empty, &v, 1), HAKO_EINVAL);
	assert_int_equal(hako_endpoint_send(ep, NULL, &v, 1), HAKO_EINVAL);
	assert_int_equal(hako_endpoint_send(NULL, &a, &v, 1), HAKO_EINVAL);
	hako_endpoint_close(ep);
	hako_endpoint_close(NULL);
}

struct waiter {
	hako_endpoint_t *ep;
	int result;
	unsigned char got;
	atomic_int tid; /* the waiting thread's, once it is about to wait */
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	hako_pdu_key_t k;
	size_t len;
	atomic_store(&w->tid, (int)syscall(SYS_gettid));
	while (hako_endpoint_recv_next(w->ep, &k, &w->got, 1, &len) == HAKO_EAGAIN) {
		w->result = hako_endpoint_wait(w->ep, HTU_TIMEOUT_USEC);
		if (w->result != 0) {
			return NULL;
		}
	}
	return NULL;
}

static void test_wait_wakes_on_arrival(void **state)
{
	(void)state;
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	assert_int_equal(hako_endpoint_open(path_of("fifo.json"), &ep, &err), 0);
	struct waiter w = {.ep = ep, .result = 0, .got = 0};
	atomic_init(&w.tid, 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, wait_thread, &w), 0);
	/* Send once the waiter sleeps in the wait (its state in /proc is S), so that what is
	 * tested is the wake-up, not a wait that found the PDU there already. */
	int asleep = 0;
	for (int i = 0; i < 5000 && !asleep; i++) {
		int tid = atomic_load(&w.tid);
		char path[64], stat[512] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
		FILE *f = tid != 0 ? fopen(path, "r") : NULL;
		if (f != NULL) {
			size_t n = fread(stat, 1, sizeof(stat) - 1, f);
			stat[n] = '\0';
			fclose(f);
			const char *st = strrchr(stat, ')');
			asleep = st != NULL && st[1] == ' ' && st[2] == 'S';
		}
		if (!asleep) {
			struct timespec ts = {0, 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	assert_true(asleep);
	hako_pdu_key_t a = ept_key("A", 0);
	unsigned char v = 42;
	assert_int_equal(hako_endpoint_send(ep, &a, &v, 1), 0);
	pthread_join(t, NULL);
	assert_int_equal(w.result, 0);
	assert_int_equal(w.got, 42);
	hako_endpoint_close(ep);
}

static void test_container(void **state)
{
	(void)state;
	hako_endpoint_set_t *s = NULL;
	hako_error_t err;
	assert_int_equal(hako_endpoint_set_open(path_of("container.json"), "n1", &s, &err), 0);
	assert_string_equal(hako_endpoint_set_node(s), "n1");
	assert_int_equal(hako_endpoint_set_count(s), 2);
	hako_endpoint_t *a = hako_endpoint_set_get(s, "a");
	hako_endpoint_t *b = hako_endpoint_set_get(s, "b");
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_equal(hako_endpoint_set_at(s, 1), b);
	assert_null(hako_endpoint_set_at(s, 2));
	assert_null(hako_endpoint_set_get(s, "bus")); /* renamed to its id */
	assert_string_equal(hako_endpoint_name(a), "a");
	assert_int_equal(hako_endpoint_set_start(s, &err), 0);
	assert_true(hako_endpoint_is_running(a));
	assert_true(hako_endpoint_is_running(b));
	hako_endpoint_set_stop(s);
	assert_false(hako_endpoint_is_running(a));
	hako_endpoint_set_close(s);

	/* node n2 names a missing file: the error names it, nothing stays open */
	s = NULL;
	int r = hako_endpoint_set_open(path_of("container.json"), "n2", &s, &err);
	assert_int_equal(r, HAKO_ENOENT);
	assert_null(s);
	assert_non_null(strstr(err.message, "missing.json"));
	r = hako_endpoint_set_open(path_of("container.json"), "n9", &s, &err);
	assert_int_equal(r, HAKO_ECONFIG);
}

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bus_latest_by_name),
	    cmocka_unit_test(test_bus_queue_next_and_drops),
	    cmocka_unit_test(test_wait_wakes_on_arrival),
	    cmocka_unit_test(test_container),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
