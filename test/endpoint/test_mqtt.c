/* The mqtt comm (pdu-endpoint/src/comm_mqtt.c) against a real mosquitto broker and the
 * mosquitto clients (Debian mosquitto, mosquitto-clients): each test starts its own broker on a
 * free loopback port with a config file of its own in the test's temp folder, and kills it at
 * teardown (the broker is a child that also dies with this process).
 *
 * What the stream comms' conformance suite (test_pairs.c) checks and where it is here:
 * pair (both ways, values exact: mosquitto_pub -> endpoint, endpoint -> mosquitto_sub, and
 * endpoint -> endpoint), reconnect (broker killed and restarted on its port), burst (10,000
 * PDUs at QoS 1, none lost, order kept), hostile (counted and dropped, endpoint alive). fanout,
 * overflow and stop_drain are about a server's peers and its per-peer queues: an mqtt comm has
 * neither (the broker fans out; its window and pending table are tested here instead). */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "ep_test_util.h"
#include "hako/endpoint.h"

#define PREFIX   "hako_test"
#define PDU_LEN  72 /* Drone/pos in the pdudef fixture */
#define BURST    10000
#define PUB_WAIT (10 * 1000000)

typedef struct broker {
	pid_t pid;
	int port;
	int anonymous;
	char conf[600];
	char log[600];
} broker_t;

static broker_t g_broker;

/* A program of the mosquitto packages: its path, or a failed test saying what to install. */
static const char *tool_path(const char *name, char *buf, size_t cap)
{
	static const char *const dirs[] = {"/usr/sbin",      "/usr/bin", "/usr/local/sbin",
	                                   "/usr/local/bin", "/sbin",    "/bin"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(buf, cap, "%s/%s", dirs[i], name);
		if (access(buf, X_OK) == 0) {
			return buf;
		}
	}
	fail_msg("%s not found: install the Debian packages mosquitto and mosquitto-clients "
	         "(make test-deps installs them)",
	         name);
	return NULL;
}

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static int port_open(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0) {
		close(fd);
	}
	return ok;
}

/* Start (or restart, same port) the broker; returns once it accepts connections. */
static void broker_start(broker_t *b)
{
	char bin[256];
	tool_path("mosquitto", bin, sizeof(bin));
	if (b->port == 0) {
		b->port = free_port();
	}
	snprintf(b->conf, sizeof(b->conf), "%s/mosquitto.conf", ept_dir());
	snprintf(b->log, sizeof(b->log), "%s/mosquitto.log", ept_dir());
	char text[512];
	/* max_queued_messages: the broker's queue per subscriber (1000 by default) must hold a
	 * burst the subscriber has not read yet, or the broker drops QoS 1 messages itself. */
	snprintf(text, sizeof(text),
	         "listener %d 127.0.0.1\nallow_anonymous %s\npersistence false\n"
	         "max_queued_messages 20000\nlog_type error\nlog_type warning\nlog_type notice\n"
	         "log_type information\n",
	         b->port, b->anonymous ? "true" : "false");
	ept_write_file("mosquitto.conf", text);
	static htu_exec_t x;
	memset(&x, 0, sizeof(x));
	static char argv0[256];
	snprintf(argv0, sizeof(argv0), "%s", bin);
	x.argv[0] = argv0;
	x.argv[1] = "-c";
	x.argv[2] = b->conf;
	x.log = b->log;
	b->pid = htu_fork(htu_exec_main, &x);
	assert_true(b->pid > 0);
	int ok;
	HTU_WAIT_UNTIL(ok, port_open(b->port) || htu_child_exited(b->pid), 10 * 1000000);
	if (!port_open(b->port)) {
		fail_msg("mosquitto did not listen on 127.0.0.1:%d; its log:\n%s", b->port,
		         htu_slurp(b->log));
	}
}

static void broker_kill(broker_t *b)
{
	if (b->pid > 0) {
		htu_kill_child(b->pid);
		b->pid = 0;
	}
}

static int setup(void **state)
{
	(void)state;
	memset(&g_broker, 0, sizeof(g_broker));
	g_broker.anonymous = 1;
	return ept_setup_dir("hako_mqtt_test");
}

static int teardown(void **state)
{
	ept_close_all(state);
	broker_kill(&g_broker);
	htu_kill_children();
	return ept_remove_dir();
}

/* An endpoint <name> on the broker (pdudef: the Drone fixture), opened and started. */
static hako_endpoint_t *mqtt_ep(const char *name, const char *dir, int qos, const char *extra,
                                int depth)
{
	char buf[1024], file[300];
	snprintf(buf, sizeof(buf),
	         "{\"protocol\": \"mqtt\", \"direction\": \"%s\", \"mqtt\": {\"broker\": "
	         "\"tcp://127.0.0.1:%d\", \"topic_prefix\": \"" PREFIX "\", \"qos\": %d, "
	         "\"client_id\": \"%s\"%s}, \"options\": {\"reconnect_min_ms\": 20, "
	         "\"reconnect_max_ms\": 200}}",
	         dir, g_broker.port, qos, name, extra != NULL ? extra : "");
	snprintf(file, sizeof(file), "%s.comm.json", name);
	ept_write_file(file, buf);
	snprintf(buf, sizeof(buf),
	         "{\"type\": \"buffer\", \"store\": {\"mode\": \"queue\", \"depth\": %d}}", depth);
	snprintf(file, sizeof(file), "%s.cache.json", name);
	ept_write_file(file, buf);
	char def[600];
	snprintf(def, sizeof(def), "%s", TEST_FIXTURES "/pdudef_drone.json");
	snprintf(buf, sizeof(buf),
	         "{\"name\": \"%s\", \"cache\": \"%s.cache.json\", \"comm\": \"%s.comm.json\", "
	         "\"pdu_def_path\": \"%s\"}",
	         name, name, name, def);
	snprintf(file, sizeof(file), "%s.json", name);
	ept_write_file(file, buf);
	char path[600];
	snprintf(path, sizeof(path), "%s/%s.json", ept_dir(), name);
	hako_endpoint_t *ep = NULL;
	hako_error_t err;
	char msg[1200];
	int r = hako_endpoint_open(path, &ep, &err);
	if (r != 0) {
		fail_msg("open %s: %s", name, hako_error_format(&err, msg, sizeof(msg)));
	}
	ept_track(ep);
	r = hako_endpoint_start(ep, &err);
	if (r != 0) {
		fail_msg("start %s: %s", name, hako_error_format(&err, msg, sizeof(msg)));
	}
	return ep;
}

static void fill_pdu(uint8_t *p, uint32_t seq)
{
	for (int i = 0; i < PDU_LEN; i++) {
		p[i] = (uint8_t)(seq * 7u + (unsigned)i);
	}
	memcpy(p, &seq, sizeof(seq));
}

/* Run a mosquitto client to its end (argv after the program; NULL-terminated). */
static int run_client(const char *prog, const char *log, ...)
{
	static htu_exec_t x;
	static char bin[256];
	memset(&x, 0, sizeof(x));
	tool_path(prog, bin, sizeof(bin));
	x.argv[0] = bin;
	va_list ap;
	va_start(ap, log);
	for (int i = 1; i < 15; i++) {
		x.argv[i] = va_arg(ap, char *);
		if (x.argv[i] == NULL) {
			break;
		}
	}
	va_end(ap);
	x.log = log;
	pid_t pid = htu_fork(htu_exec_main, &x);
	return htu_join_child(pid, PUB_WAIT);
}

static void write_bytes(const char *name, const void *data, size_t len, char *path, size_t cap)
{
	snprintf(path, cap, "%s/%s", ept_dir(), name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void pub_file(const char *topic, const char *file, const char *qos)
{
	char port[16], log[600];
	snprintf(port, sizeof(port), "%d", g_broker.port);
	snprintf(log, sizeof(log), "%s/pub.log", ept_dir());
	if (!run_client("mosquitto_pub", log, "-h", "127.0.0.1", "-p", port, "-q", qos, "-t", topic,
	                "-f", file, (char *)NULL)) {
		fail_msg("mosquitto_pub -t %s failed:\n%s", topic, htu_slurp(log));
	}
}

/* ---- pair: values exact both ways with the mosquitto clients ---- */

static void test_from_mosquitto_pub(void **state)
{
	(void)state;
	broker_start(&g_broker);
	hako_endpoint_t *ep = mqtt_ep("in1", "in", 1, NULL, 16);
	EPT_WAIT_FOR(ept_stats(ep).peers == 1);
	/* Subscribed once the broker has answered; a retained message proves it without a
	 * sleep: it is delivered to a subscription made before or after. */
	uint8_t pdu[PDU_LEN];
	fill_pdu(pdu, 4242);
	char file[600], port[16], log[600];
	write_bytes("pdu.bin", pdu, sizeof(pdu), file, sizeof(file));
	snprintf(port, sizeof(port), "%d", g_broker.port);
	snprintf(log, sizeof(log), "%s/pub.log", ept_dir());
	assert_true(run_client("mosquitto_pub", log, "-h", "127.0.0.1", "-p", port, "-q", "1", "-r",
	                       "-t", PREFIX "/Drone/1", "-f", file, (char *)NULL));
	hako_pdu_key_t k = ept_key("Drone", 1);
	uint8_t got[256];
	size_t len = 0;
	assert_int_equal(ept_recv_wait(ep, &k, got, sizeof(got), &len), 0);
	assert_int_equal(len, PDU_LEN);
	assert_memory_equal(got, pdu, PDU_LEN);
	assert_int_equal(ept_stats(ep).rejected, 0);
}

static void test_to_mosquitto_sub(void **state)
{
	(void)state;
	broker_start(&g_broker);
	hako_endpoint_t *ep = mqtt_ep("out1", "out", 1, ", \"retain\": true", 16);
	EPT_WAIT_FOR(ept_stats(ep).peers == 1);
	uint8_t pdu[PDU_LEN];
	fill_pdu(pdu, 77);
	hako_pdu_key_t k = ept_key("Drone", 1);
	assert_int_equal(hako_endpoint_send(ep, &k, pdu, sizeof(pdu)), 0);
	EPT_WAIT_FOR(ept_stats(ep).frames_out == 1); /* acknowledged: QoS 1 */
	/* retained: mosquitto_sub gets it whenever it subscribes. */
	char port[16], log[600];
	snprintf(port, sizeof(port), "%d", g_broker.port);
	snprintf(log, sizeof(log), "%s/sub.log", ept_dir());
	assert_true(run_client("mosquitto_sub", log, "-h", "127.0.0.1", "-p", port, "-t",
	                       PREFIX "/#", "-C", "1", "-W", "10", "-F", "%t %x", (char *)NULL));
	char want[400];
	int n = snprintf(want, sizeof(want), PREFIX "/Drone/1 ");
	for (int i = 0; i < PDU_LEN; i++) {
		n += snprintf(want + n, sizeof(want) - (size_t)n, "%02x", pdu[i]);
	}
	const char *out = htu_slurp(log);
	if (strstr(out, want) == NULL) {
		fail_msg("mosquitto_sub printed:\n%s\nexpected:\n%s", out, want);
	}
}

/* ---- burst: 10,000 PDUs at QoS 1, none lost, in order ---- */

typedef struct burst_rx {
	_Atomic uint32_t count;
	_Atomic uint32_t out_of_order;
	atomic_int probes;
	uint32_t next;
} burst_rx_t;

/* seq 0 is a probe (sent until one arrives: then the receiver is subscribed), not counted. */
static void on_burst(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)key;
	burst_rx_t *b = user;
	uint32_t seq;
	if (len != PDU_LEN) {
		atomic_fetch_add(&b->out_of_order, 1);
		return;
	}
	memcpy(&seq, data, sizeof(seq));
	if (seq == 0) {
		atomic_store(&b->probes, 1);
		return;
	}
	if (seq != b->next) {
		atomic_fetch_add(&b->out_of_order, 1);
	}
	b->next = seq + 1;
	atomic_fetch_add(&b->count, 1);
}

/* A broker, a sender <name>_tx and a receiver <name>_rx whose PDUs on_burst counts into *b;
 * returns the sender once a probe has gone through (the receiver is subscribed). */
static hako_endpoint_t *burst_pair(const char *name, burst_rx_t *b)
{
	char rx_name[64], tx_name[64];
	snprintf(rx_name, sizeof(rx_name), "%s_rx", name);
	snprintf(tx_name, sizeof(tx_name), "%s_tx", name);
	broker_start(&g_broker);
	hako_endpoint_t *rx = mqtt_ep(rx_name, "in", 1, NULL, 16);
	hako_endpoint_t *tx = mqtt_ep(tx_name, "out", 1, NULL, 16);
	memset(b, 0, sizeof(*b));
	b->next = 1;
	assert_int_equal(hako_endpoint_subscribe(rx, NULL, on_burst, b, NULL), 0);
	hako_pdu_key_t k = ept_key("Drone", 1);
	uint8_t pdu[PDU_LEN];
	fill_pdu(pdu, 0);
	int ok;
	HTU_WAIT_UNTIL(ok, hako_endpoint_send(tx, &k, pdu, sizeof(pdu)) == 0 && b->probes,
	               10 * 1000000);
	assert_true(ok);
	return tx;
}

static void test_burst_qos1(void **state)
{
	(void)state;
	static burst_rx_t b;
	hako_endpoint_t *tx = burst_pair("burst", &b);
	hako_pdu_key_t k = ept_key("Drone", 1);
	uint8_t pdu[PDU_LEN];
	for (uint32_t i = 1; i <= BURST; i++) {
		fill_pdu(pdu, i);
		assert_int_equal(hako_endpoint_send(tx, &k, pdu, sizeof(pdu)), 0);
	}
	EPT_WAIT_FOR(atomic_load(&b.count) >= BURST);
	assert_int_equal(atomic_load(&b.count), BURST);
	assert_int_equal(atomic_load(&b.out_of_order), 0);
	assert_int_equal(b.next, BURST + 1);
	assert_int_equal(ept_stats(tx).send_dropped, 0);
}

/* ---- reconnect: broker killed and restarted on its port ---- */

static void test_broker_restart(void **state)
{
	(void)state;
	broker_start(&g_broker);
	/* retain: the newest value waits at the broker for a receiver that resubscribes after the
	 * sender has reconnected. */
	hako_endpoint_t *rx = mqtt_ep("re_rx", "in", 1, NULL, 1024);
	hako_endpoint_t *tx = mqtt_ep("re_tx", "out", 1, ", \"retain\": true", 16);
	EPT_WAIT_FOR(ept_stats(rx).peers == 1 && ept_stats(tx).peers == 1);
	hako_pdu_key_t k = ept_key("Drone", 1);
	uint8_t pdu[PDU_LEN], got[PDU_LEN];
	size_t len;
	uint32_t seq = 1;
	fill_pdu(pdu, seq);
	assert_int_equal(hako_endpoint_send(tx, &k, pdu, sizeof(pdu)), 0);
	uint32_t last = 0;
	while (last != seq) {
		assert_int_equal(ept_recv_wait(rx, &k, got, sizeof(got), &len), 0);
		memcpy(&last, got, sizeof(last));
	}

	broker_kill(&g_broker);
	EPT_WAIT_FOR(ept_stats(rx).peers == 0 && ept_stats(tx).peers == 0);
	/* Disconnected: sends keep the newest value of the channel. */
	for (seq = 2; seq <= 50; seq++) {
		fill_pdu(pdu, seq);
		assert_int_equal(hako_endpoint_send(tx, &k, pdu, sizeof(pdu)), 0);
	}
	broker_start(&g_broker); /* the same port */
	EPT_WAIT_FOR(ept_stats(rx).peers == 1 && ept_stats(tx).peers == 1);
	assert_true(ept_stats(tx).reconnects >= 1);
	assert_true(ept_stats(rx).reconnects >= 1);
	/* The newest value written while the broker was away arrives (the in-between ones
	 * need not). */
	last = 0;
	while (last != 50) {
		assert_int_equal(ept_recv_wait(rx, &k, got, sizeof(got), &len), 0);
		memcpy(&last, got, sizeof(last));
		assert_true(last >= 2 && last <= 50);
		assert_memory_equal(got, (fill_pdu(pdu, last), pdu), PDU_LEN);
	}
	/* And the stream goes on. */
	for (seq = 51; seq <= 60; seq++) {
		fill_pdu(pdu, seq);
		assert_int_equal(hako_endpoint_send(tx, &k, pdu, sizeof(pdu)), 0);
	}
	for (uint32_t want = 51; want <= 60; want++) {
		assert_int_equal(ept_recv_wait(rx, &k, got, sizeof(got), &len), 0);
		memcpy(&last, got, sizeof(last));
		assert_int_equal(last, want);
	}
}

/* ---- hostile: counted, dropped, the endpoint serves on ---- */

static void test_hostile(void **state)
{
	(void)state;
	broker_start(&g_broker);
	hako_endpoint_t *ep =
	    mqtt_ep("host_rx", "in", 1, NULL, 16); /* max_body_bytes default: 16 MiB */
	EPT_WAIT_FOR(ept_stats(ep).peers == 1);
	char file[600], big[600], huge[600], good[600], empty[600];
	uint8_t buf[PDU_LEN * 3];
	memset(buf, 0xab, sizeof(buf));
	write_bytes("wrong.bin", buf, PDU_LEN + 1, file, sizeof(file));
	write_bytes("big.bin", buf, sizeof(buf), big, sizeof(big));
	write_bytes("empty.bin", buf, 0, empty, sizeof(empty));
	/* Larger than any channel of the pdudef and than max_body_bytes is tested in the
	 * config of its own below; here: larger than every channel (112 bytes at most). */
	write_bytes("huge.bin", buf, sizeof(buf), huge, sizeof(huge));
	uint8_t pdu[PDU_LEN];
	fill_pdu(pdu, 9);
	write_bytes("good.bin", pdu, sizeof(pdu), good, sizeof(good));

	pub_file(PREFIX "/Drone/1", file, "1");   /* 73 bytes for a 72-byte channel */
	pub_file(PREFIX "/Drone/0", huge, "1");   /* 216 bytes: over every channel */
	pub_file(PREFIX "/Drone/9", big, "1");    /* no such channel */
	pub_file(PREFIX "/Nobody/1", big, "1");   /* no such robot */
	pub_file(PREFIX "/Drone/x", big, "1");    /* not a channel id */
	pub_file(PREFIX "/Drone", big, "1");      /* no channel at all */
	pub_file(PREFIX "/Drone/1", empty, "1");  /* empty */
	pub_file("elsewhere/Drone/1", good, "1"); /* outside the prefix: never delivered */
	pub_file(PREFIX "/Drone/1", good, "1");
	hako_pdu_key_t k = ept_key("Drone", 1);
	uint8_t got[256];
	size_t len;
	assert_int_equal(ept_recv_wait(ep, &k, got, sizeof(got), &len), 0);
	assert_int_equal(len, PDU_LEN);
	assert_memory_equal(got, pdu, PDU_LEN);
	hako_endpoint_stats_t s = ept_stats(ep);
	assert_int_equal(s.rejected, 7);
	assert_int_equal(s.frames_in, 1);
	assert_int_equal(s.peers, 1);
	assert_int_equal(s.disconnects, 0);
}

/* Over max_body_bytes, on an endpoint without pdudef (its only bound). */
static void test_over_max_body(void **state)
{
	(void)state;
	broker_start(&g_broker);
	char buf[512];
	snprintf(buf, sizeof(buf),
	         "{\"protocol\": \"mqtt\", \"direction\": \"in\", \"mqtt\": {\"broker\": "
	         "\"127.0.0.1:%d\", \"topic_prefix\": \"" PREFIX "\", \"qos\": 1}, "
	         "\"options\": {\"max_body_bytes\": 100}}",
	         g_broker.port);
	hako_endpoint_t *ep = ept_must_open("nodef", buf, 0, 0);
	EPT_WAIT_FOR(ept_stats(ep).peers == 1);
	uint8_t data[101];
	memset(data, 1, sizeof(data));
	char over[600], at[600];
	write_bytes("over.bin", data, 101, over, sizeof(over));
	write_bytes("at.bin", data, 100, at, sizeof(at));
	pub_file(PREFIX "/Any/5", over, "1");
	pub_file(PREFIX "/Any/5", at, "1");
	hako_pdu_key_t k = ept_key("Any", 5);
	uint8_t got[256];
	size_t len;
	assert_int_equal(ept_recv_wait(ep, &k, got, sizeof(got), &len), 0);
	assert_int_equal(len, 100);
	assert_int_equal(ept_stats(ep).rejected, 1);
}

/* ---- a broker that refuses: a clear error, the endpoint keeps retrying ---- */

static int g_saved_stderr = -1;
static char g_err_path[600];

static void capture_stderr(void)
{
	snprintf(g_err_path, sizeof(g_err_path), "%s/stderr.log", ept_dir());
	fflush(stderr);
	g_saved_stderr = dup(2);
	int fd = open(g_err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	dup2(fd, 2);
	close(fd);
}

static const char *captured(void)
{
	fflush(stderr);
	return htu_slurp(g_err_path);
}

static void restore_stderr(void)
{
	fflush(stderr);
	if (g_saved_stderr >= 0) {
		dup2(g_saved_stderr, 2);
		close(g_saved_stderr);
		g_saved_stderr = -1;
	}
}

static void test_refused(void **state)
{
	(void)state;
	/* Nobody on the port, then a broker that refuses anonymous clients, then one that
	 * accepts: the same endpoint connects in the end. */
	g_broker.port = free_port();
	capture_stderr();
	hako_endpoint_t *ep = mqtt_ep("refused", "inout", 0, NULL, 16);
	char want[200];
	snprintf(want, sizeof(want), "cannot connect to broker 127.0.0.1:%d: Connection refused",
	         g_broker.port);
	EPT_WAIT_UNTIL(strstr(captured(), want) != NULL);
	int seen_refused = strstr(captured(), want) != NULL;
	/* Sends meanwhile are kept (newest per channel), not errors. */
	hako_pdu_key_t k = ept_key("Drone", 1);
	uint8_t pdu[PDU_LEN];
	fill_pdu(pdu, 5);
	int sent = hako_endpoint_send(ep, &k, pdu, sizeof(pdu));

	g_broker.anonymous = 0;
	broker_start(&g_broker);
	EPT_WAIT_UNTIL(strstr(captured(), "not authorised") != NULL);
	int seen_auth = strstr(captured(), "not authorised") != NULL;
	int peers_while_refused = (int)ept_stats(ep).peers;
	broker_kill(&g_broker);
	g_broker.anonymous = 1;
	broker_start(&g_broker);
	EPT_WAIT_UNTIL(ept_stats(ep).peers == 1);
	int peers_at_end = (int)ept_stats(ep).peers;
	const char *text = captured();
	char copy[4096];
	snprintf(copy, sizeof(copy), "%s", text);
	restore_stderr();
	fprintf(stderr, "%s", copy);
	assert_true(seen_refused);
	assert_true(seen_auth);
	assert_int_equal(sent, 0);
	assert_int_equal(peers_while_refused, 0);
	assert_int_equal(peers_at_end, 1);
	/* The PDU kept while refused went out once connected: the endpoint is inout and
	 * subscribed, so it comes back. */
	EPT_WAIT_FOR(ept_stats(ep).frames_out >= 1);
}

/* ---- pair, fanout, stop_drain: the conformance suite's cases that apply ---- */

/* Both ways at once; the last PDU of each side is out before its close returns. An inout
 * endpoint also gets its own PDUs back (its subscription covers its topics, as Hakoniwa's). */
static void test_pair_both_ways(void **state)
{
	(void)state;
	broker_start(&g_broker);
	hako_endpoint_t *a = mqtt_ep("pair_a", "inout", 1, NULL, 1024);
	hako_endpoint_t *b = mqtt_ep("pair_b", "inout", 1, NULL, 1024);
	EPT_WAIT_FOR(ept_stats(a).peers == 1 && ept_stats(b).peers == 1);
	hako_pdu_key_t ka = ept_key("Drone", 1), kb = ept_key("Drone", 0);
	/* Both subscribed once a probe of each arrives at the other. */
	uint8_t pa[PDU_LEN], pb[112], got[256];
	size_t len;
	fill_pdu(pa, 0);
	memset(pb, 0, sizeof(pb));
	int ok;
	HTU_WAIT_UNTIL(ok,
	               hako_endpoint_send(a, &ka, pa, sizeof(pa)) == 0 &&
	                   hako_endpoint_send(b, &kb, pb, sizeof(pb)) == 0 &&
	                   hako_endpoint_recv(b, &ka, got, sizeof(got), &len) == 0 &&
	                   hako_endpoint_recv(a, &kb, got, sizeof(got), &len) == 0,
	               10 * 1000000);
	assert_true(ok);
	while (hako_endpoint_recv(a, &kb, got, sizeof(got), &len) == 0 ||
	       hako_endpoint_recv(b, &ka, got, sizeof(got), &len) == 0) {
	}
	for (uint32_t i = 1; i <= 100; i++) {
		fill_pdu(pa, i);
		memset(pb, 0, sizeof(pb));
		memcpy(pb, &i, sizeof(i));
		assert_int_equal(hako_endpoint_send(a, &ka, pa, sizeof(pa)), 0);
		assert_int_equal(hako_endpoint_send(b, &kb, pb, sizeof(pb)), 0);
	}
	/* Probes may still be on their way: skip seq 0, then 1..100 in order. */
	for (uint32_t want = 1; want <= 100; want++) {
		uint32_t seq;
		do {
			assert_int_equal(ept_recv_wait(b, &ka, got, sizeof(got), &len), 0);
			memcpy(&seq, got, sizeof(seq));
		} while (seq == 0 && want == 1);
		assert_int_equal(seq, want);
		assert_int_equal(len, PDU_LEN);
		do {
			assert_int_equal(ept_recv_wait(a, &kb, got, sizeof(got), &len), 0);
			memcpy(&seq, got, sizeof(seq));
		} while (seq == 0 && want == 1);
		assert_int_equal(seq, want);
		assert_int_equal(len, 112);
	}
	/* The last PDU, then close at once: it is out (acknowledged) before close returns. */
	fill_pdu(pa, 1000);
	assert_int_equal(hako_endpoint_send(a, &ka, pa, sizeof(pa)), 0);
	ept_close(a);
	assert_int_equal(ept_recv_wait(b, &ka, got, sizeof(got), &len), 0);
	assert_memory_equal(got, pa, PDU_LEN);
}

/* One sender, three receivers: the broker fans out, each gets every PDU in order. */
static void test_fanout(void **state)
{
	(void)state;
	broker_start(&g_broker);
	hako_endpoint_t *rx[3];
	static burst_rx_t b[3];
	char name[32];
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "fan_rx%d", i);
		rx[i] = mqtt_ep(name, "in", 1, NULL, 16);
		memset(&b[i], 0, sizeof(b[i]));
		b[i].next = 1;
		assert_int_equal(hako_endpoint_subscribe(rx[i], NULL, on_burst, &b[i], NULL), 0);
	}
	hako_endpoint_t *tx = mqtt_ep("fan_tx", "out", 1, NULL, 16);
	hako_pdu_key_t k = ept_key("Drone", 1);
	uint8_t pdu[PDU_LEN];
	fill_pdu(pdu, 0);
	int ok;
	HTU_WAIT_UNTIL(ok,
	               hako_endpoint_send(tx, &k, pdu, sizeof(pdu)) == 0 && b[0].probes &&
	                   b[1].probes && b[2].probes,
	               10 * 1000000);
	assert_true(ok);
	for (uint32_t i = 1; i <= 1000; i++) {
		fill_pdu(pdu, i);
		assert_int_equal(hako_endpoint_send(tx, &k, pdu, sizeof(pdu)), 0);
	}
	for (int i = 0; i < 3; i++) {
		EPT_WAIT_FOR(atomic_load(&b[i].count) >= 1000);
		assert_int_equal(atomic_load(&b[i].count), 1000);
		assert_int_equal(atomic_load(&b[i].out_of_order), 0);
	}
}

/* PDUs sent just before stop are written out (QoS 1: acknowledged) by stop. */
static void test_stop_drain(void **state)
{
	(void)state;
	static burst_rx_t b;
	hako_endpoint_t *tx = burst_pair("drain", &b);
	hako_pdu_key_t k = ept_key("Drone", 1);
	uint8_t pdu[PDU_LEN];
	for (uint32_t i = 1; i <= 2000; i++) {
		fill_pdu(pdu, i);
		assert_int_equal(hako_endpoint_send(tx, &k, pdu, sizeof(pdu)), 0);
	}
	hako_endpoint_stop(tx);
	hako_endpoint_stats_t s = ept_stats(tx);
	assert_int_equal(s.send_dropped, 0);
	assert_true(s.frames_out >= 2000); /* every one acknowledged before stop returned */
	EPT_WAIT_FOR(atomic_load(&b.count) >= 2000);
	assert_int_equal(atomic_load(&b.count), 2000);
	assert_int_equal(atomic_load(&b.out_of_order), 0);
}

/* A subscriber that sends from the comm's own thread (a bridge forwarding on one endpoint):
 * never waits for room only that thread could make; every PDU comes back. */
typedef struct echo {
	hako_endpoint_t *ep;
	_Atomic uint32_t sent_back;
} echo_t;

static void on_echo(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)key;
	echo_t *e = user;
	hako_pdu_key_t out = ept_key("Drone", 1);
	if (len == PDU_LEN && hako_endpoint_send(e->ep, &out, data, len) == 0) {
		atomic_fetch_add(&e->sent_back, 1);
	}
}

static void test_echo_from_subscriber(void **state)
{
	(void)state;
	broker_start(&g_broker);
	/* A small window, so that the echoes find it full at times. */
	char buf[700];
	snprintf(buf, sizeof(buf),
	         "{\"protocol\": \"mqtt\", \"direction\": \"inout\", \"mqtt\": {\"broker\": "
	         "\"127.0.0.1:%d\", \"topic_prefix\": \"echo\", \"qos\": 1, \"client_id\": "
	         "\"echo_a\"}, \"options\": {\"send_queue_depth\": 4}}",
	         g_broker.port);
	hako_endpoint_t *a = ept_must_open("echo_a", buf, 0, 0);
	snprintf(buf, sizeof(buf),
	         "{\"protocol\": \"mqtt\", \"direction\": \"inout\", \"mqtt\": {\"broker\": "
	         "\"127.0.0.1:%d\", \"topic_prefix\": \"echo\", \"qos\": 1, \"client_id\": "
	         "\"echo_b\"}}",
	         g_broker.port);
	hako_endpoint_t *b = ept_must_open("echo_b", buf, 0, 0);
	static echo_t e;
	memset(&e, 0, sizeof(e));
	e.ep = a;
	hako_pdu_key_t in = ept_key("Drone", 0);
	assert_int_equal(hako_endpoint_subscribe(a, &in, on_echo, &e, NULL), 0);
	static burst_rx_t r;
	memset(&r, 0, sizeof(r));
	r.next = 1;
	hako_pdu_key_t back = ept_key("Drone", 1);
	assert_int_equal(hako_endpoint_subscribe(b, &back, on_burst, &r, NULL), 0);
	uint8_t pdu[PDU_LEN];
	fill_pdu(pdu, 0);
	int ok;
	HTU_WAIT_UNTIL(ok, hako_endpoint_send(b, &in, pdu, sizeof(pdu)) == 0 && r.probes,
	               10 * 1000000);
	assert_true(ok);
	for (uint32_t i = 1; i <= 500; i++) {
		fill_pdu(pdu, i);
		assert_int_equal(hako_endpoint_send(b, &in, pdu, sizeof(pdu)), 0);
	}
	EPT_WAIT_FOR(atomic_load(&r.count) >= 500);
	assert_int_equal(atomic_load(&r.out_of_order), 0);
	assert_int_equal(ept_stats(a).send_dropped, 0);
}

/* Mid-stream: a thread sends every millisecond while the broker is killed and restarted. The
 * receiver sees the sequence never go back (per channel order, across the reconnect), the
 * stream resumes, and the last PDU sent is the last one it gets. */
typedef struct stream_rx {
	_Atomic uint32_t last;
	_Atomic uint32_t went_back;
	_Atomic uint32_t count;
} stream_rx_t;

static void on_stream(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)key;
	stream_rx_t *r = user;
	uint32_t seq;
	if (len != PDU_LEN) {
		return;
	}
	memcpy(&seq, data, sizeof(seq));
	if (seq < atomic_load(&r->last)) {
		atomic_fetch_add(&r->went_back, 1);
	}
	atomic_store(&r->last, seq);
	atomic_fetch_add(&r->count, 1);
}

typedef struct stream_tx {
	hako_endpoint_t *ep;
	atomic_int stop;
	_Atomic uint32_t sent; /* the last seq sent */
	_Atomic int errors;
} stream_tx_t;

static void *stream_send(void *arg)
{
	stream_tx_t *t = arg;
	hako_pdu_key_t k = ept_key("Drone", 1);
	uint8_t pdu[PDU_LEN];
	for (uint32_t seq = 1; !atomic_load(&t->stop); seq++) {
		fill_pdu(pdu, seq);
		if (hako_endpoint_send(t->ep, &k, pdu, sizeof(pdu)) != 0) {
			atomic_fetch_add(&t->errors, 1);
		}
		atomic_store(&t->sent, seq);
		htu_sleep_usec(1000);
	}
	return NULL;
}

static void test_restart_mid_stream(void **state)
{
	(void)state;
	broker_start(&g_broker);
	hako_endpoint_t *rx = mqtt_ep("mid_rx", "in", 1, NULL, 16);
	hako_endpoint_t *tx = mqtt_ep("mid_tx", "out", 1, ", \"retain\": true", 16);
	static stream_rx_t r;
	memset(&r, 0, sizeof(r));
	assert_int_equal(hako_endpoint_subscribe(rx, NULL, on_stream, &r, NULL), 0);
	EPT_WAIT_FOR(ept_stats(rx).peers == 1 && ept_stats(tx).peers == 1);
	static stream_tx_t t;
	memset(&t, 0, sizeof(t));
	t.ep = tx;
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, stream_send, &t), 0);
	EPT_WAIT_UNTIL(atomic_load(&r.count) >= 100);
	int streaming = atomic_load(&r.count) >= 100;
	broker_kill(&g_broker);
	EPT_WAIT_UNTIL(ept_stats(rx).peers == 0 && ept_stats(tx).peers == 0);
	uint32_t at_kill = atomic_load(&t.sent);
	EPT_WAIT_UNTIL(atomic_load(&t.sent) >= at_kill + 100); /* sends go on meanwhile */
	broker_start(&g_broker);
	uint32_t at_restart = atomic_load(&t.sent);
	EPT_WAIT_UNTIL(atomic_load(&r.last) >= at_restart + 100);
	int resumed = atomic_load(&r.last) >= at_restart + 100;
	atomic_store(&t.stop, 1);
	pthread_join(th, NULL);
	uint32_t final = atomic_load(&t.sent);
	EPT_WAIT_UNTIL(atomic_load(&r.last) == final);
	assert_true(streaming);
	assert_true(resumed);
	assert_int_equal(atomic_load(&r.last), final);
	assert_int_equal(atomic_load(&r.went_back), 0);
	assert_int_equal(atomic_load(&t.errors), 0);
	assert_true(ept_stats(tx).reconnects >= 1 && ept_stats(rx).reconnects >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_from_mosquitto_pub, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_to_mosquitto_sub, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_burst_qos1, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_broker_restart, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restart_mid_stream, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_over_max_body, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pair_both_ways, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fanout, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stop_drain, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_echo_from_subscriber, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
