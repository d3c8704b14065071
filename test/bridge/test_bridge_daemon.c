/* The hako-bridge daemon over tcp: this process sends PDUs to the bridge's tcp server source and
 * receives them from the bridge's tcp client destination (its server here), drives the control
 * socket (pause drops, bump makes unstamped PDUs drop), asks for statistics with SIGUSR1 and
 * checks a clean exit with statistics on SIGTERM; a bridge file whose endpoints are its inline
 * "endpoints" block, end to end; plus usage and config errors.
 * argv[1]: the hako-bridge executable. */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/endpoint.h"
#include "hako/pdu.h"
#include "hako_test_util.h"

static const char *tool;
static char dir[256];

static const char *path_of(const char *name)
{
	static char p[4][400];
	static int i;
	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

static void put(const char *name, const char *fmt, ...)
{
	char text[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	assert_int_equal(htu_write_file(path_of(name), text), 0);
}

/* ---- the daemon as a child ---- */

/* The port the daemon's log (-v) says endpoint `name` is bound to; 0 while its line is not
 * complete there. */
static unsigned logged_port(const char *log, const char *name)
{
	char pat[128];
	snprintf(pat, sizeof(pat), "endpoint '%s' bound to port ", name);
	const char *at = strstr(htu_slurp(log), pat);
	unsigned port = 0;
	char end = 0;
	if (at == NULL || sscanf(at + strlen(pat), "%u%c", &port, &end) != 2 || end != '\n') {
		return 0;
	}
	return port;
}

static int count_of(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++) {
		n++;
	}
	return n;
}

/* Run the tool to its end; its exit code, output in *out. */
static int run_to_end(const char *const *args, char **out)
{
	htu_exec_t r;
	memset(&r, 0, sizeof(r));
	r.argv[0] = (char *)tool;
	for (int i = 0; args[i] != NULL; i++) {
		r.argv[i + 1] = (char *)args[i];
	}
	r.log = path_of("short.log");
	pid_t pid = htu_fork(htu_exec_main, &r);
	assert_true(pid > 0);
	int status = 0;
	assert_int_equal(htu_wait_child(pid, HTU_TIMEOUT_USEC, &status), 0);
	*out = htu_slurp(r.log);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* ---- the control socket ---- */

static int ctl_fd = -1;

static void ctl_connect(const char *path)
{
	int ok = 0;
	hako_time_t deadline = hako_now_usec() + HTU_TIMEOUT_USEC;
	while (!ok && hako_now_usec() < deadline) {
		ctl_fd = socket(AF_UNIX, SOCK_STREAM, 0);
		struct sockaddr_un sa;
		memset(&sa, 0, sizeof(sa));
		sa.sun_family = AF_UNIX;
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
		ok = connect(ctl_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		if (!ok) {
			close(ctl_fd);
			ctl_fd = -1;
			htu_sleep_usec(10000);
		}
	}
	assert_true(ok);
}

/* Send n bytes; the answer up to and including its "ok..." / "error:..." line. */
static const char *ctl_raw(const char *bytes, size_t n_bytes)
{
	static char ans[4096];
	size_t used = 0;
	assert_int_equal(send(ctl_fd, bytes, n_bytes, MSG_NOSIGNAL), (ssize_t)n_bytes);
	for (;;) {
		assert_true(used < sizeof(ans) - 1);
		ssize_t n = recv(ctl_fd, ans + used, sizeof(ans) - 1 - used, 0);
		assert_true(n > 0);
		used += (size_t)n;
		ans[used] = '\0';
		/* the last complete line */
		if (used > 0 && ans[used - 1] == '\n') {
			char *end = ans + used - 1;
			char *start = end;
			while (start > ans && start[-1] != '\n') {
				start--;
			}
			if (strncmp(start, "ok", 2) == 0 || strncmp(start, "error:", 6) == 0) {
				return ans;
			}
		}
	}
}

/* Send a command line. */
static const char *ctl(const char *cmd)
{
	char line[256];
	snprintf(line, sizeof(line), "%s\n", cmd);
	return ctl_raw(line, strlen(line));
}

/* Poll "stats" until the answer contains `want`. */
static void wait_stats(const char *want)
{
	int ok;
	HTU_WAIT_UNTIL(ok, strstr(ctl("stats"), want) != NULL, HTU_TIMEOUT_USEC);
	if (!ok) {
		fail_msg("stats never showed '%s': %s", want, ctl("stats"));
	}
}

/* ---- the PDUs ---- */

static _Atomic uint64_t seen_mask;
static atomic_int seen_count;

static void on_rx(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	(void)user;
	(void)key;
	uint64_t v = 0;
	if (len >= 32) {
		memcpy(&v, (const uint8_t *)data + 24, 8);
	}
	if (v < 64) {
		atomic_fetch_or(&seen_mask, (uint64_t)1 << v);
	}
	atomic_fetch_add(&seen_count, 1);
}

static void send_pdu(hako_endpoint_t *tx, uint64_t v, uint8_t epoch)
{
	uint8_t pdu[32];
	memset(pdu, 0, sizeof(pdu));
	uint32_t meta[5] = {HAKO_PDU_MAGIC, HAKO_PDU_VERSION, 24, 32, 32};
	memcpy(pdu, meta, sizeof(meta));
	memcpy(pdu + 24, &v, 8);
	hako_pdu_set_epoch(pdu, sizeof(pdu), epoch);
	assert_int_equal(hako_endpoint_send_by_name(tx, "R", "a", pdu, sizeof(pdu)), 0);
}

static int seen(uint64_t v)
{
	return (atomic_load(&seen_mask) >> v) & 1;
}

static void wait_seen(uint64_t v)
{
	int ok;
	HTU_WAIT_UNTIL(ok, seen(v), HTU_TIMEOUT_USEC);
	if (!ok) {
		fail_msg("value %llu never forwarded", (unsigned long long)v);
	}
}

static void write_tcp_endpoint(const char *name, const char *role, unsigned port)
{
	char comm[64], ep[64];
	snprintf(comm, sizeof(comm), "comm_%s.json", name);
	snprintf(ep, sizeof(ep), "%s.json", name);
	put(comm,
	    "{\"protocol\": \"tcp\", \"name\": \"%s\", \"direction\": \"inout\", \"role\": \"%s\", "
	    "\"%s\": {\"address\": \"127.0.0.1\", \"port\": %u}, "
	    "\"options\": {\"connect_timeout_ms\": 200}}\n",
	    name, role, strcmp(role, "server") == 0 ? "local" : "remote", port);
	put(ep,
	    "{\"name\": \"%s\", \"cache\": \"latest.json\", \"comm\": \"%s\", "
	    "\"pdu_def_path\": \"pdudef.json\"}\n",
	    name, comm);
}

static void test_forward_control_signals(void **state)
{
	(void)state;
	put("pdudef.json", "{\"robots\": [{\"name\": \"R\", \"shm_pdu_readers\": ["
	                   "{\"type\": \"std_msgs/UInt64\", \"org_name\": \"a\", "
	                   "\"channel_id\": 1, \"pdu_size\": 32}], \"shm_pdu_writers\": []}]}\n");
	put("latest.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n");
	put("queue.json",
	    "{\"type\": \"buffer\", \"store\": {\"mode\": \"queue\", \"depth\": 64}}\n");

	/* The servers' files say port 0 (any free port): this process's rx tells its port, the
	 * bridge's src says it in its log (-v). */
	write_tcp_endpoint("rx", "server", 0);
	hako_endpoint_t *rx = NULL, *tx = NULL;
	hako_error_t err;
	assert_int_equal(hako_endpoint_open(path_of("rx.json"), &rx, &err), 0);
	assert_int_equal(hako_endpoint_subscribe_by_name(rx, "R", "a", on_rx, NULL, NULL), 0);
	assert_int_equal(hako_endpoint_start(rx, &err), 0);
	unsigned rx_port = hako_endpoint_local_port(rx);
	assert_true(rx_port != 0);

	write_tcp_endpoint("src", "server", 0);
	write_tcp_endpoint("dst", "client", rx_port);
	put("container.json", "[{\"nodeId\": \"n1\", \"endpoints\": [\n"
	                      "  {\"id\": \"src\", \"config_path\": \"src.json\"},\n"
	                      "  {\"id\": \"dst\", \"config_path\": \"dst.json\"}]}]\n");
	put("bridge.json",
	    "{\"version\": \"2.0.0\",\n"
	    " \"transferPolicies\": {\"imm\": {\"type\": \"immediate\"}},\n"
	    " \"nodes\": [{\"id\": \"n1\"}],\n"
	    " \"endpoints_config_path\": \"container.json\",\n"
	    " \"pduKeyGroups\": {\"g\": [{\"id\": \"R.a\", \"robot_name\": \"R\", "
	    "\"pdu_name\": \"a\"}]},\n"
	    " \"connections\": [{\"id\": \"c1\", \"nodeId\": \"n1\", \"source\": {\"endpointId\": "
	    "\"src\"},\n"
	    "   \"destinations\": [{\"endpointId\": \"dst\"}],\n"
	    "   \"transferPdus\": [{\"pduKeyGroupId\": \"g\", \"policyId\": \"imm\"}],\n"
	    "   \"epoch_validation\": true}]}\n");

	htu_exec_t r;
	memset(&r, 0, sizeof(r));
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* path_of reuses its buffers */
	snprintf(sock, sizeof(sock), "%s", path_of("ctl.sock"));
	const char *args[] = {tool, path_of("bridge.json"), "--node", "n1", "--control",
	                      sock, "--delta-usec",         "2000",   "-v", NULL};
	for (int i = 0; args[i] != NULL; i++) {
		r.argv[i] = (char *)args[i];
	}
	char log_path[400];
	snprintf(log_path, sizeof(log_path), "%s", path_of("bridge.log"));
	r.log = log_path;
	/* Under umask 000 the socket must still be the user's only: whoever connects can pause
	 * the bridge. */
	mode_t old_mask = umask(0);
	pid_t pid = htu_fork(htu_exec_main, &r);
	umask(old_mask);
	assert_true(pid > 0);
	ctl_connect(sock);
	struct stat sst;
	assert_int_equal(stat(sock, &sst), 0);
	assert_int_equal(sst.st_mode & 0777, 0600);
	int ok;
	unsigned src_port = 0;
	HTU_WAIT_UNTIL(ok, (src_port = logged_port(r.log, "src")) != 0, HTU_TIMEOUT_USEC);
	if (!ok) {
		fail_msg("the bridge did not say its src port:\n%s", htu_slurp(r.log));
	}
	assert_true(src_port < 65536 && src_port != rx_port);
	write_tcp_endpoint("tx", "client", src_port);

	assert_int_equal(hako_endpoint_open(path_of("tx.json"), &tx, &err), 0);
	assert_int_equal(hako_endpoint_start(tx, &err), 0);
	hako_endpoint_stats_t st;
	HTU_WAIT_UNTIL(ok, (hako_endpoint_get_stats(tx, &st), st.peers > 0), HTU_TIMEOUT_USEC);
	assert_true(ok);
	HTU_WAIT_UNTIL(ok, (hako_endpoint_get_stats(rx, &st), st.peers > 0), HTU_TIMEOUT_USEC);
	assert_true(ok);

	/* forwarding */
	send_pdu(tx, 1, 0);
	wait_seen(1);
	wait_stats("connection c1: forwarded=1 bytes=32 ");

	/* pause drops and counts; resume forwards again */
	assert_string_equal(ctl("pause c1"), "ok\n");
	send_pdu(tx, 2, 0);
	wait_stats("dropped_paused=1 ");
	assert_string_equal(ctl("resume c1"), "ok\n");
	send_pdu(tx, 3, 0);
	wait_seen(3);

	/* a new epoch: unstamped (epoch 0) PDUs are dropped, stamped ones pass */
	assert_string_equal(ctl("bump c1"), "ok epoch=1\n");
	assert_string_equal(ctl("epoch c1"), "ok epoch=1\n");
	send_pdu(tx, 4, 0);
	wait_stats("dropped_epoch=1 ");
	send_pdu(tx, 5, 1);
	wait_seen(5);
	assert_string_equal(ctl("epoch c1 7"), "ok epoch=7\n");
	send_pdu(tx, 6, 7);
	wait_seen(6);
	assert_false(seen(2));
	assert_false(seen(4));
	wait_stats("connection c1: forwarded=4 bytes=128 dropped_policy=0 dropped_epoch=1 "
	           "dropped_paused=1 send_failed=0 epoch=7 active=1\nok\n");

	/* control errors */
	assert_string_equal(ctl("pause nope"), "error: unknown connection 'nope'\n");
	assert_string_equal(ctl("epoch c1 256"), "error: epoch '256': must be 0..255\n");
	assert_string_equal(ctl("frobnicate c1"),
	                    "error: unknown command 'frobnicate' (try 'help')\n");
	assert_non_null(strstr(ctl("bump"), "error: usage"));
	/* a NUL byte inside a line is answered, and the lines after it still are */
	static const char nul_line[] = "pause\0 c1\n";
	assert_string_equal(ctl_raw(nul_line, sizeof(nul_line) - 1),
	                    "error: a NUL byte in the command\n");
	assert_string_equal(ctl("epoch c1"), "ok epoch=7\n");
	assert_non_null(strstr(ctl("help"), "bump CONN"));

	/* SIGUSR1: statistics on stderr, and the daemon goes on */
	assert_int_equal(kill(pid, SIGUSR1), 0);
	HTU_WAIT_UNTIL(ok,
	               strstr(htu_slurp(r.log), "hako-bridge: connection c1: forwarded=4 ") != NULL,
	               HTU_TIMEOUT_USEC);
	if (!ok) {
		fail_msg("no statistics after SIGUSR1:\n%s", htu_slurp(r.log));
	}
	send_pdu(tx, 8, 7);
	wait_seen(8);

	/* SIGTERM: clean exit, statistics printed again, socket removed */
	close(ctl_fd);
	ctl_fd = -1;
	assert_int_equal(kill(pid, SIGTERM), 0);
	int status = 0;
	assert_int_equal(htu_wait_child(pid, HTU_TIMEOUT_USEC, &status), 0);
	char *log = htu_slurp(r.log);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fail_msg("hako-bridge did not exit cleanly (status 0x%x):\n%s", status, log);
	}
	assert_int_equal(count_of(log, "hako-bridge: connection c1: forwarded="), 2);
	assert_non_null(strstr(log, "connection c1: forwarded=5 bytes=160 dropped_policy=0 "
	                            "dropped_epoch=1 dropped_paused=1 send_failed=0 epoch=7"));
	assert_int_equal(access(sock, F_OK), -1);
	hako_endpoint_close(tx);
	hako_endpoint_close(rx);
}

/* A bridge file in the published schema's shape: the node's endpoints in its inline "endpoints"
 * block, no endpoints_config_path and no --container. The source has a queue cache that only the
 * bridge takes. */
static void test_inline_endpoints(void **state)
{
	(void)state;
	atomic_store(&seen_mask, 0);
	atomic_store(&seen_count, 0);
	put("pdudef.json", "{\"robots\": [{\"name\": \"R\", \"shm_pdu_readers\": ["
	                   "{\"type\": \"std_msgs/UInt64\", \"org_name\": \"a\", "
	                   "\"channel_id\": 1, \"pdu_size\": 32}], \"shm_pdu_writers\": []}]}\n");
	put("latest.json", "{\"type\": \"buffer\", \"store\": {\"mode\": \"latest\"}}\n");
	put("queue4.json",
	    "{\"type\": \"buffer\", \"store\": {\"mode\": \"queue\", \"depth\": 4}}\n");
	write_tcp_endpoint("irx", "server", 0);
	hako_endpoint_t *rx = NULL, *tx = NULL;
	hako_error_t err;
	assert_int_equal(hako_endpoint_open(path_of("irx.json"), &rx, &err), 0);
	assert_int_equal(hako_endpoint_subscribe_by_name(rx, "R", "a", on_rx, NULL, NULL), 0);
	assert_int_equal(hako_endpoint_start(rx, &err), 0);
	unsigned rx_port = hako_endpoint_local_port(rx);
	write_tcp_endpoint("isrc", "server", 0);
	put("isrc.json", "{\"name\": \"isrc\", \"cache\": \"queue4.json\", "
	                 "\"comm\": \"comm_isrc.json\", \"pdu_def_path\": \"pdudef.json\"}\n");
	write_tcp_endpoint("idst", "client", rx_port);
	put("inline.json",
	    "{\"version\": \"2.0.0\",\n"
	    " \"transferPolicies\": {\"imm\": {\"type\": \"immediate\"}},\n"
	    " \"nodes\": [{\"id\": \"n1\"}, {\"id\": \"n2\"}],\n"
	    " \"endpoints\": [\n"
	    "   {\"nodeId\": \"n1\", \"endpoints\": [\n"
	    "     {\"id\": \"isrc\", \"mode\": \"wire\", \"config_path\": \"isrc.json\"},\n"
	    "     {\"id\": \"idst\", \"mode\": \"wire\", \"config_path\": \"idst.json\"}]},\n"
	    "   {\"nodeId\": \"n2\", \"endpoints\": []}],\n"
	    " \"pduKeyGroups\": {\"g\": [{\"id\": \"R.a\", \"robot_name\": \"R\", "
	    "\"pdu_name\": \"a\"}]},\n"
	    " \"connections\": [{\"id\": \"ic\", \"nodeId\": \"n1\", "
	    "\"source\": {\"endpointId\": \"isrc\"},\n"
	    "   \"destinations\": [{\"endpointId\": \"idst\"}],\n"
	    "   \"transferPdus\": [{\"pduKeyGroupId\": \"g\", \"policyId\": \"imm\"}]}]}\n");

	htu_exec_t r;
	memset(&r, 0, sizeof(r));
	const char *args[] = {tool, path_of("inline.json"), "--node", "n1", "-v", NULL};
	for (int i = 0; args[i] != NULL; i++) {
		r.argv[i] = (char *)args[i];
	}
	char log_path[400];
	snprintf(log_path, sizeof(log_path), "%s", path_of("inline.log"));
	r.log = log_path;
	pid_t pid = htu_fork(htu_exec_main, &r);
	assert_true(pid > 0);
	int ok;
	unsigned src_port = 0;
	HTU_WAIT_UNTIL(ok, (src_port = logged_port(r.log, "isrc")) != 0 || htu_child_exited(pid),
	               HTU_TIMEOUT_USEC);
	if (src_port == 0) {
		fail_msg("the bridge did not say its isrc port:\n%s", htu_slurp(r.log));
	}
	write_tcp_endpoint("itx", "client", src_port);
	assert_int_equal(hako_endpoint_open(path_of("itx.json"), &tx, &err), 0);
	assert_int_equal(hako_endpoint_start(tx, &err), 0);
	hako_endpoint_stats_t st;
	HTU_WAIT_UNTIL(ok, (hako_endpoint_get_stats(tx, &st), st.peers > 0), HTU_TIMEOUT_USEC);
	assert_true(ok);
	HTU_WAIT_UNTIL(ok, (hako_endpoint_get_stats(rx, &st), st.peers > 0), HTU_TIMEOUT_USEC);
	assert_true(ok);
	for (uint64_t v = 0; v < 1000; v++) {
		send_pdu(tx, v, 0);
	}
	HTU_WAIT_UNTIL(ok, atomic_load(&seen_count) == 1000, HTU_TIMEOUT_USEC);
	if (!ok) {
		fail_msg("%d of 1000 forwarded:\n%s", atomic_load(&seen_count), htu_slurp(r.log));
	}
	assert_int_equal(kill(pid, SIGTERM), 0);
	int status = 0;
	assert_int_equal(htu_wait_child(pid, HTU_TIMEOUT_USEC, &status), 0);
	char *log = htu_slurp(r.log);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fail_msg("hako-bridge did not exit cleanly (status 0x%x):\n%s", status, log);
	}
	assert_non_null(strstr(log, "node 'n1': 1 connection(s), 2 endpoint(s), wall clock"));
	assert_non_null(strstr(log, "connection ic: forwarded=1000 bytes=32000 dropped_policy=0 "
	                            "dropped_epoch=0 dropped_paused=0 send_failed=0"));
	hako_endpoint_close(tx);
	hako_endpoint_close(rx);
}

static void test_usage_and_config_errors(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(run_to_end((const char *const[]){"--help", NULL}, &out), 0);
	assert_non_null(strstr(out, "--control PATH"));
	assert_int_equal(run_to_end((const char *const[]){path_of("bridge.json"), NULL}, &out), 2);
	assert_non_null(strstr(out, "--node NAME is required"));
	assert_int_equal(run_to_end((const char *const[]){"--bogus", NULL}, &out), 2);
	assert_int_equal(
	    run_to_end((const char *const[]){"x.json", "--node", "n1", "--delta-usec", "0", NULL},
	               &out),
	    2);
	assert_non_null(strstr(out, "--delta-usec 0"));
	/* a config error: file:line:column */
	put("broken.json", "{\"version\": \"2.0.0\",\n \"transferPolicies\": {\"p\": {\"type\": "
	                   "\"sometimes\"}}}\n");
	assert_int_equal(
	    run_to_end((const char *const[]){path_of("broken.json"), "--node", "n1", NULL}, &out),
	    1);
	char want[400];
	snprintf(want, sizeof(want), "hako-bridge: %s:2:", path_of("broken.json"));
	if (strstr(out, want) == NULL) {
		fail_msg("expected '%s...' in:\n%s", want, out);
	}
	/* the node is not in the file */
	assert_int_equal(
	    run_to_end((const char *const[]){path_of("bridge.json"), "--node", "nx", NULL}, &out),
	    1);
	assert_non_null(strstr(out, "bridge.json"));
}

static int group_setup(void **state)
{
	(void)state;
	htu_tmpdir(dir, sizeof(dir));
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	htu_kill_children();
	htu_remove_tmpdirs();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH_TO_HAKO_BRIDGE\n", argv[0]);
		return 2;
	}
	tool = argv[1];
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_forward_control_signals),
	    cmocka_unit_test(test_inline_endpoints),
	    cmocka_unit_test(test_usage_and_config_errors),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
