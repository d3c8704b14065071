/* ep_peer: one side of the multi-process endpoint tests (test_pairs.c starts it).
 *
 *   ep_peer <endpoint.json> [options] MODE ...
 *   echo N ROBOT CH              send back every PDU of ROBOT/CH (on that key, or --to's)
 *                                until N were echoed (0: until SIGTERM)
 *   send N ROBOT CH SIZE         wait for --peers peers, send N PDUs of SIZE bytes (0: until
 *                                SIGTERM) and wait until they were written to the peers
 *   recv N [ROBOT CH]...         receive N PDUs (of these keys, else any) and check them
 *   ping N ROBOT CH SIZE RROBOT RCH  send one PDU, wait for it to come back on RROBOT/RCH, N times
 *
 * A PDU body: u32 magic "EPPR", u32 sequence number (from --first-seq, default 1), u32 size,
 * u32 zero, then the bytes (seq * 131 + i * 7 + 1) & 0xff at offset i. A receiver checks the
 * pattern and that the sequence numbers of each key strictly increase; "all N intact and in
 * order" is then "N received" when the sender sent N.
 *
 * stdout, one line each, flushed: "port N" first when the endpoint has a local port, "ready"
 * once started, "peers K" once the peers are there, "seq S" per PDU with --print, and at the end
 * "sent N" / "recv ok N" / "echoed N" / "ping ok N". Errors on stderr; exit 0 only on success.
 *
 * options: --timeout SEC (30: every wait), --peers K (1, tcp/websocket), --interval-ms M,
 * --first-seq S, --to ROBOT CH (echo), --recv N ROBOT CH (send, repeatable: also receive and check
 * N PDUs of that key before exiting), --stay (wait for SIGTERM before exiting), --print.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hako/domain.h"
#include "hako/endpoint.h"
#include "hako_test_util.h"

#define PEER_MAGIC  0x52505045u /* "EPPR" */
#define HEADER_SIZE 16u
#define MAX_KEYS    8

static volatile sig_atomic_t got_term;

static void on_term(int sig)
{
	(void)sig;
	got_term = 1;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "ep_peer[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void fill_pdu(uint8_t *buf, uint32_t size, uint32_t seq)
{
	memset(buf, 0, HEADER_SIZE);
	put_u32(buf, PEER_MAGIC);
	put_u32(buf + 4, seq);
	put_u32(buf + 8, size);
	for (uint32_t i = HEADER_SIZE; i < size; i++) {
		buf[i] = (uint8_t)(seq * 131u + i * 7u + 1u);
	}
}

/* 0 and *seq if the PDU is intact, else -1 with why. */
static int check_pdu(const uint8_t *buf, size_t len, uint32_t *seq, char *why, size_t wlen)
{
	if (len < HEADER_SIZE || get_u32(buf) != PEER_MAGIC) {
		snprintf(why, wlen, "a PDU of %zu bytes without the test header", len);
		return -1;
	}
	*seq = get_u32(buf + 4);
	if (get_u32(buf + 8) != len) {
		snprintf(why, wlen, "PDU seq %" PRIu32 ": %zu bytes, its header says %" PRIu32,
		         *seq, len, get_u32(buf + 8));
		return -1;
	}
	for (size_t i = HEADER_SIZE; i < len; i++) {
		if (buf[i] != (uint8_t)(*seq * 131u + (uint32_t)i * 7u + 1u)) {
			snprintf(why, wlen, "PDU seq %" PRIu32 ": byte %zu is wrong", *seq, i);
			return -1;
		}
	}
	return 0;
}

/* ---- what the subscribers see (comm thread) ---- */

typedef struct key_state {
	hako_pdu_key_t key;
	uint32_t last_seq; /* only touched by the comm thread that delivers the key */
} key_state_t;

static struct {
	hako_endpoint_t *ep;
	key_state_t keys[MAX_KEYS];
	size_t nkeys;
	int print;
	int echo;             /* echo mode: send back */
	hako_pdu_key_t to;    /* echo: the key to send back on ("" robot: the same) */
	_Atomic uint64_t got; /* checked PDUs */
	_Atomic uint64_t echoed;
	_Atomic uint32_t last_seq; /* the latest sequence number seen (ping) */
	atomic_int bad;            /* a check failed: why holds the first reason */
	char why[300];
} rx;

static void set_bad(const char *why)
{
	int expected = 0;
	if (atomic_compare_exchange_strong(&rx.bad, &expected, 1)) {
		snprintf(rx.why, sizeof(rx.why), "%s", why);
	}
}

static void on_pdu(void *user, const hako_pdu_key_t *key, const void *data, size_t len)
{
	key_state_t *ks = user;
	char why[200];
	uint32_t seq = 0;
	if (check_pdu(data, len, &seq, why, sizeof(why)) != 0) {
		set_bad(why);
		return;
	}
	if (!rx.echo && seq <= ks->last_seq) {
		snprintf(why, sizeof(why), "%s/%d: seq %" PRIu32 " after %" PRIu32, key->robot,
		         (int)key->channel_id, seq, ks->last_seq);
		set_bad(why);
		return;
	}
	ks->last_seq = seq;
	atomic_store(&rx.last_seq, seq);
	if (rx.print) {
		say("seq %" PRIu32, seq);
	}
	if (rx.echo) {
		const hako_pdu_key_t *to = rx.to.robot[0] != '\0' ? &rx.to : key;
		int r = hako_endpoint_send(rx.ep, to, data, len);
		if (r == 0) {
			atomic_fetch_add(&rx.echoed, 1);
		} else {
			fail("echo of seq %" PRIu32 ": %s", seq, hako_strerror(r));
		}
		return;
	}
	atomic_fetch_add(&rx.got, 1);
}

static int parse_key(const char *robot, const char *ch, hako_pdu_key_t *key)
{
	char *end;
	long v = strtol(ch, &end, 10);
	if (strlen(robot) >= sizeof(key->robot) || *end != '\0' || end == ch || v < 0 ||
	    v > INT32_MAX) {
		fail("bad key %s %s", robot, ch);
		return -1;
	}
	memset(key, 0, sizeof(*key));
	strcpy(key->robot, robot);
	key->channel_id = (int32_t)v;
	return 0;
}

static int subscribe(const char *robot, const char *ch)
{
	if (rx.nkeys == MAX_KEYS) {
		fail("too many keys");
		return -1;
	}
	key_state_t *ks = &rx.keys[rx.nkeys];
	if (parse_key(robot, ch, &ks->key) != 0) {
		return -1;
	}
	int r = hako_endpoint_subscribe(rx.ep, &ks->key, on_pdu, ks, NULL);
	if (r != 0) {
		fail("subscribe %s/%s: %s", robot, ch, hako_strerror(r));
		return -1;
	}
	rx.nkeys++;
	return 0;
}

/* ---- waits ---- */

static hako_time_t timeout_usec = 30000000;

/* Wait until *counter >= want (want 0: until SIGTERM). 0, or -1 after a message. */
static int wait_count(_Atomic uint64_t *counter, uint64_t want, const char *what)
{
	hako_time_t deadline = hako_now_usec() + timeout_usec;
	while (want == 0 || atomic_load(counter) < want) {
		if (atomic_load(&rx.bad)) {
			fail("%s", rx.why);
			return -1;
		}
		if (got_term) {
			return want == 0 ? 0
			                 : (fail("SIGTERM after %" PRIu64 " of %" PRIu64 " %s",
			                         atomic_load(counter), want, what),
			                    -1);
		}
		hako_endpoint_process_recv_events(rx.ep);
		if (want != 0 && hako_now_usec() >= deadline) {
			fail("timeout: %" PRIu64 " of %" PRIu64 " %s", atomic_load(counter), want,
			     what);
			return -1;
		}
		htu_sleep_usec(2000);
	}
	if (atomic_load(&rx.bad)) {
		fail("%s", rx.why);
		return -1;
	}
	return 0;
}

static int connected_comm(hako_endpoint_t *ep)
{
	const hako_comm_config_t *c = hako_endpoint_config(ep)->comm;
	return c != NULL && (c->protocol == HAKO_COMM_TCP || c->protocol == HAKO_COMM_WEBSOCKET);
}

static int wait_peers(hako_endpoint_t *ep, uint32_t peers)
{
	hako_time_t deadline = hako_now_usec() + timeout_usec;
	hako_endpoint_stats_t st;
	if (!connected_comm(ep)) {
		return 0;
	}
	for (;;) {
		hako_endpoint_get_stats(ep, &st);
		if (st.peers >= peers) {
			say("peers %u", (unsigned)st.peers);
			return 0;
		}
		if (got_term || hako_now_usec() >= deadline) {
			fail("%u of %u peers connected", (unsigned)st.peers, (unsigned)peers);
			return -1;
		}
		htu_sleep_usec(2000);
	}
}

/* Until frames_out grew by want (each PDU written to each peer). */
static int wait_written(hako_endpoint_t *ep, uint64_t out0, uint64_t want)
{
	hako_time_t deadline = hako_now_usec() + timeout_usec;
	hako_endpoint_stats_t st;
	if (!connected_comm(ep)) {
		return 0;
	}
	for (;;) {
		hako_endpoint_get_stats(ep, &st);
		if (st.frames_out - out0 >= want) {
			return 0;
		}
		if (got_term || hako_now_usec() >= deadline) {
			fail("written %" PRIu64 " of %" PRIu64 " frames (send_dropped %" PRIu64 ")",
			     st.frames_out - out0, want, st.send_dropped);
			return -1;
		}
		htu_sleep_usec(2000);
	}
}

/* ---- modes ---- */

static int send_one(hako_endpoint_t *ep, const hako_pdu_key_t *key, uint8_t *buf, uint32_t size,
                    uint32_t seq)
{
	fill_pdu(buf, size, seq);
	hako_time_t deadline = hako_now_usec() + timeout_usec;
	for (;;) {
		int r = hako_endpoint_send(ep, key, buf, size);
		if (r == 0) {
			return 0;
		}
		/* A client between two connections (reconnect test): try again. */
		if (r != HAKO_ENOTCONN || got_term || hako_now_usec() >= deadline) {
			fail("send seq %" PRIu32 ": %s", seq, hako_strerror(r));
			return -1;
		}
		htu_sleep_usec(10000);
	}
}

struct opts {
	uint32_t peers;
	uint64_t interval_ms;
	uint32_t first_seq;
	int stay;
	uint64_t recv_n;
};

static int run_send(hako_endpoint_t *ep, const struct opts *o, uint64_t n,
                    const hako_pdu_key_t *key, uint32_t size)
{
	if (size < HEADER_SIZE) {
		fail("SIZE must be >= %u", HEADER_SIZE);
		return -1;
	}
	uint8_t *buf = malloc(size);
	if (buf == NULL || wait_peers(ep, o->peers) != 0) {
		free(buf);
		return -1;
	}
	hako_endpoint_stats_t st;
	hako_endpoint_get_stats(ep, &st);
	uint64_t i = 0;
	for (; (n == 0 || i < n) && !got_term; i++) {
		if (i > 0 && o->interval_ms > 0) {
			htu_sleep_usec((hako_time_t)o->interval_ms * 1000);
		}
		if (send_one(ep, key, buf, size, o->first_seq + (uint32_t)i) != 0) {
			free(buf);
			return n == 0 && got_term ? 0 : -1;
		}
	}
	free(buf);
	if (n == 0) {
		say("sent %" PRIu64, i);
		return 0;
	}
	if (wait_written(ep, st.frames_out, n * o->peers) != 0) {
		return -1;
	}
	say("sent %" PRIu64, n);
	if (o->recv_n > 0) {
		if (wait_count(&rx.got, o->recv_n, "PDUs received") != 0) {
			return -1;
		}
		say("recv ok %" PRIu64, o->recv_n);
	}
	return 0;
}

static int run_recv_any(hako_endpoint_t *ep, uint64_t n)
{
	/* No keys: recv_next, each key's sequence numbers checked. */
	size_t cap = 1u << 20;
	uint8_t *buf = malloc(cap);
	hako_time_t deadline = hako_now_usec() + timeout_usec;
	uint64_t got = 0;
	while (buf != NULL && (n == 0 || got < n)) {
		hako_pdu_key_t key;
		size_t len;
		int r = hako_endpoint_recv_next(ep, &key, buf, cap, &len);
		if (r == 0) {
			size_t k = 0;
			while (k < rx.nkeys && memcmp(&rx.keys[k].key, &key, sizeof(key)) != 0) {
				k++;
			}
			if (k == rx.nkeys && rx.nkeys < MAX_KEYS) {
				rx.keys[rx.nkeys++].key = key;
			}
			on_pdu(k < MAX_KEYS ? &rx.keys[k] : &rx.keys[0], &key, buf, len);
			got++;
			continue;
		}
		if (atomic_load(&rx.bad) || got_term || hako_now_usec() >= deadline) {
			break;
		}
		hako_endpoint_process_recv_events(ep);
		hako_endpoint_wait(ep, 10000);
	}
	free(buf);
	if (n == 0 && got_term && !atomic_load(&rx.bad)) {
		return 0;
	}
	return wait_count(&rx.got, n, "PDUs received");
}

static int run_ping(hako_endpoint_t *ep, const struct opts *o, uint64_t n,
                    const hako_pdu_key_t *key, uint32_t size)
{
	uint8_t *buf = malloc(size >= HEADER_SIZE ? size : HEADER_SIZE);
	if (buf == NULL || size < HEADER_SIZE || wait_peers(ep, o->peers) != 0) {
		free(buf);
		return -1;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint32_t seq = o->first_seq + (uint32_t)i;
		if (send_one(ep, key, buf, size, seq) != 0) {
			free(buf);
			return -1;
		}
		hako_time_t deadline = hako_now_usec() + timeout_usec;
		while (atomic_load(&rx.last_seq) != seq) {
			if (atomic_load(&rx.bad) || got_term || hako_now_usec() >= deadline) {
				fail("ping seq %" PRIu32 ": no reply (last %" PRIu32 ")%s%s", seq,
				     atomic_load(&rx.last_seq), rx.bad ? ": " : "",
				     rx.bad ? rx.why : "");
				free(buf);
				return -1;
			}
			hako_endpoint_process_recv_events(ep);
			htu_sleep_usec(500);
		}
	}
	free(buf);
	say("ping ok %" PRIu64, n);
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-') {
		fail("'%s' is not a count", s);
		return -1;
	}
	*out = v;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: ep_peer <endpoint.json> [--timeout SEC] [--peers K] "
	                "[--interval-ms M] [--first-seq S] [--to ROBOT CH] [--recv N ROBOT CH] "
	                "[--stay] [--print] echo N ROBOT CH | send N ROBOT CH SIZE | recv N "
	                "[ROBOT CH]... | ping N ROBOT CH SIZE RROBOT RCH\n");
}

int main(int argc, char **argv)
{
	struct opts o = {.peers = 1, .first_seq = 1};
	hako_pdu_key_t recv_keys[MAX_KEYS];
	size_t nrecv_keys = 0;
	uint64_t v;
	if (argc < 3) {
		usage();
		return 2;
	}
	const char *path = argv[1];
	int i = 2;
	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		const char *opt = argv[i];
		int need = strcmp(opt, "--to") == 0                                    ? 2
		           : strcmp(opt, "--recv") == 0                                ? 3
		           : strcmp(opt, "--stay") == 0 || strcmp(opt, "--print") == 0 ? 0
		                                                                       : 1;
		if (i + need >= argc) {
			usage();
			return 2;
		}
		if (strcmp(opt, "--stay") == 0) {
			o.stay = 1;
		} else if (strcmp(opt, "--print") == 0) {
			rx.print = 1;
		} else if (strcmp(opt, "--to") == 0) {
			if (parse_key(argv[i + 1], argv[i + 2], &rx.to) != 0) {
				return 2;
			}
		} else if (strcmp(opt, "--recv") == 0) {
			if (nrecv_keys == MAX_KEYS || parse_u64(argv[i + 1], &v) != 0 ||
			    parse_key(argv[i + 2], argv[i + 3], &recv_keys[nrecv_keys]) != 0) {
				return 2;
			}
			o.recv_n += v;
			nrecv_keys++;
		} else if (parse_u64(argv[i + 1], &v) != 0) {
			return 2;
		} else if (strcmp(opt, "--timeout") == 0) {
			timeout_usec = (hako_time_t)v * 1000000;
		} else if (strcmp(opt, "--peers") == 0) {
			o.peers = (uint32_t)v;
		} else if (strcmp(opt, "--interval-ms") == 0) {
			o.interval_ms = v;
		} else if (strcmp(opt, "--first-seq") == 0) {
			o.first_seq = (uint32_t)v;
		} else {
			usage();
			return 2;
		}
		i += need;
	}
	if (i + 1 >= argc) {
		usage();
		return 2;
	}
	const char *mode = argv[i];
	uint64_t n;
	if (parse_u64(argv[i + 1], &n) != 0) {
		return 2;
	}
	char **rest = argv + i + 2;
	int nrest = argc - i - 2;
	int want = strcmp(mode, "echo") == 0   ? 2
	           : strcmp(mode, "send") == 0 ? 3
	           : strcmp(mode, "ping") == 0 ? 5
	           : strcmp(mode, "recv") == 0 ? (nrest % 2 == 0 ? nrest : -1)
	                                       : -1;
	if (want < 0 || nrest != want) {
		usage();
		return 2;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	hako_error_t err;
	hako_error_clear(&err);
	hako_endpoint_t *ep = NULL;
	int r = hako_endpoint_open(path, &ep, &err);
	if (r != 0) {
		char msg[1200];
		fail("open: %s (%s)", hako_error_format(&err, msg, sizeof(msg)), hako_strerror(r));
		return 1;
	}
	rx.ep = ep;
	uint16_t port = hako_endpoint_local_port(ep);
	if (port != 0) {
		say("port %u", (unsigned)port);
	}
	int rc = 1;
	hako_pdu_key_t key;
	if (strcmp(mode, "echo") == 0) {
		rx.echo = 1;
		if (subscribe(rest[0], rest[1]) != 0) {
			goto out;
		}
	} else if (strcmp(mode, "recv") == 0) {
		for (int k = 0; k + 1 < nrest; k += 2) {
			if (subscribe(rest[k], rest[k + 1]) != 0) {
				goto out;
			}
		}
	} else if (strcmp(mode, "ping") == 0) {
		if (subscribe(rest[3], rest[4]) != 0 || parse_key(rest[0], rest[1], &key) != 0) {
			goto out;
		}
	} else if (parse_key(rest[0], rest[1], &key) != 0) {
		goto out;
	}
	for (size_t k = 0; k < nrecv_keys; k++) {
		char ch[16];
		snprintf(ch, sizeof(ch), "%d", (int)recv_keys[k].channel_id);
		if (subscribe(recv_keys[k].robot, ch) != 0) {
			goto out;
		}
	}
	hako_error_clear(&err);
	r = hako_endpoint_start(ep, &err);
	if (r != 0) {
		char msg[1200];
		fail("start: %s (%s)", hako_error_format(&err, msg, sizeof(msg)), hako_strerror(r));
		goto out;
	}
	say("ready");
	uint64_t size = 0;
	if ((strcmp(mode, "send") == 0 || strcmp(mode, "ping") == 0) &&
	    (parse_u64(rest[2], &size) != 0 || size > UINT32_MAX)) {
		goto out;
	}
	if (strcmp(mode, "echo") == 0) {
		r = wait_count(&rx.echoed, n, "PDUs echoed");
		if (r == 0) {
			say("echoed %" PRIu64, atomic_load(&rx.echoed));
		}
	} else if (strcmp(mode, "recv") == 0) {
		r = rx.nkeys > 0 ? wait_count(&rx.got, n, "PDUs received") : run_recv_any(ep, n);
		if (r == 0) {
			say("recv ok %" PRIu64, atomic_load(&rx.got));
		}
	} else if (strcmp(mode, "send") == 0) {
		r = run_send(ep, &o, n, &key, (uint32_t)size);
	} else {
		r = run_ping(ep, &o, n, &key, (uint32_t)size);
	}
	if (r == 0 && o.stay) {
		while (!got_term) {
			htu_sleep_usec(10000);
		}
	}
	rc = r == 0 ? 0 : 1;
out:
	if (rc != 0) {
		hako_endpoint_stats_t st;
		hako_endpoint_get_stats(ep, &st);
		fail("stats: in %" PRIu64 " out %" PRIu64 " send_dropped %" PRIu64
		     " recv_dropped %" PRIu64 " rejected %" PRIu64 " peers %u",
		     st.frames_in, st.frames_out, st.send_dropped, st.recv_dropped, st.rejected,
		     (unsigned)st.peers);
	}
	hako_endpoint_close(ep);
	return rc;
}
