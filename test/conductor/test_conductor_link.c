/* The conductor's time link (conductor/src/link.h), white-box: two ends over a Unix socket,
 * its hand-shake, its frames both ways, and what it refuses: a server without the shared
 * secret, a client of no known id, an altered frame, a replayed one, a frame too long. */
#define _GNU_SOURCE
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "link.h"

#define CLIENT_INC 0x1111222233334444ull
#define SERVER_INC 0x5555666677778888ull

static char g_addr[108];
static uint8_t g_key[HAKOI_LINK_KEY];     /* the server's static secret for "cli-01" */
static uint8_t g_cli_key[HAKOI_LINK_KEY]; /* the client's */

static int key_fn(void *ctx, const char *id, uint8_t *statik)
{
	(void)ctx;
	if (strcmp(id, "cli-01") != 0) {
		return -1;
	}
	memcpy(statik, g_key, HAKOI_LINK_KEY);
	return 0;
}

static void wait_readable(int fd, short ev)
{
	struct pollfd p = {fd, ev, 0};
	assert_int_equal(poll(&p, 1, 5000), 1);
}

/* One read step of l: wait for its socket, then read. */
static int step(hakoi_link_t *l, uint64_t inc, hakoi_link_frame_t *f, char *why, size_t len)
{
	wait_readable(l->fd, l->state == HAKOI_LINK_CONNECTING ? POLLOUT : POLLIN);
	return hakoi_link_read(l, inc, key_fn, NULL, f, why, len);
}

struct pair {
	int lfd;
	hakoi_link_t c, s;
};

/* Connect a client to a fresh listener and run the hand-shake; the result of the client's
 * last step (2: up) in *client_r, the server's in *server_r. */
static void handshake(struct pair *p, const char *id, int *client_r, int *server_r, char *why,
                      size_t len)
{
	hakoi_link_frame_t f;
	p->lfd = hakoi_link_listen(g_addr, why, len);
	assert_true(p->lfd >= 0);
	hakoi_link_init(&p->c, 1024);
	hakoi_link_init(&p->s, 1024);
	assert_int_equal(hakoi_link_connect(&p->c, g_addr, g_cli_key, id, CLIENT_INC), 0);
	wait_readable(p->lfd, POLLIN);
	int fd = accept4(p->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	assert_true(fd >= 0);
	hakoi_link_accepted(&p->s, fd);
	assert_int_equal(step(&p->c, CLIENT_INC, &f, why, len), 0); /* connected: HELLO out */
	*server_r = step(&p->s, SERVER_INC, &f, why, len);          /* HELLO in, WELCOME out */
	if (*server_r < 0) {
		/* The node closes a refused link: the client sees its end. */
		char cwhy[192];
		hakoi_link_close(&p->s);
		*client_r = step(&p->c, CLIENT_INC, &f, cwhy, sizeof(cwhy));
		return;
	}
	assert_int_equal(*server_r, 0);
	*client_r = step(&p->c, CLIENT_INC, &f, why, len); /* WELCOME in, first frame out */
	if (*client_r == 2) {
		*server_r = step(&p->s, SERVER_INC, &f, why, len); /* the first frame: up */
	}
}

static void close_pair(struct pair *p)
{
	hakoi_link_free(&p->c);
	hakoi_link_free(&p->s);
	hakoi_link_unlisten(p->lfd, g_addr);
}

static int setup(void **state)
{
	(void)state;
	snprintf(g_addr, sizeof(g_addr), "ipc:///tmp/hako-t-link-%d", (int)getpid());
	for (size_t i = 0; i < sizeof(g_key); i++) {
		g_key[i] = (uint8_t)(i * 7 + 3);
	}
	memcpy(g_cli_key, g_key, sizeof(g_key));
	return 0;
}

static void test_frames_both_ways(void **state)
{
	(void)state;
	struct pair p;
	char why[192] = "";
	int cr, sr;
	handshake(&p, "cli-01", &cr, &sr, why, sizeof(why));
	assert_int_equal(cr, 2);
	assert_int_equal(sr, 2);
	assert_int_equal(p.c.peer_incarnation, SERVER_INC);
	assert_int_equal(p.s.peer_incarnation, CLIENT_INC);
	assert_string_equal(p.s.peer, "cli-01");
	/* Two frames in one write (a part 2, then a plain one), then one back. */
	uint8_t big[700];
	for (size_t i = 0; i < sizeof(big); i++) {
		big[i] = (uint8_t)i;
	}
	assert_int_equal(hakoi_link_queue(&p.c, "ext", 3, big, sizeof(big)), 0);
	assert_int_equal(hakoi_link_queue(&p.c, "time", 4, NULL, 0), 0);
	assert_int_equal(hakoi_link_flush(&p.c), 0);
	assert_int_equal(p.c.wlen, 0);
	hakoi_link_frame_t f;
	assert_int_equal(step(&p.s, SERVER_INC, &f, why, sizeof(why)), 1);
	assert_int_equal(f.len1, 3);
	assert_memory_equal(f.part1, "ext", 3);
	assert_non_null(f.part2);
	assert_int_equal(f.len2, sizeof(big));
	assert_memory_equal(f.part2, big, sizeof(big));
	assert_int_equal(hakoi_link_read(&p.s, SERVER_INC, key_fn, NULL, &f, why, sizeof(why)), 1);
	assert_int_equal(f.len1, 4);
	assert_memory_equal(f.part1, "time", 4);
	assert_null(f.part2);
	assert_int_equal(hakoi_link_read(&p.s, SERVER_INC, key_fn, NULL, &f, why, sizeof(why)), 0);
	/* A zero-length part 2 is still one. */
	assert_int_equal(hakoi_link_queue(&p.s, "t", 1, "", 0), 0);
	assert_int_equal(hakoi_link_flush(&p.s), 0);
	assert_int_equal(step(&p.c, CLIENT_INC, &f, why, sizeof(why)), 1);
	assert_int_equal(f.len1, 1);
	assert_non_null(f.part2);
	assert_int_equal(f.len2, 0);
	/* Larger than the link takes: refused at the sender. */
	static uint8_t huge[8192];
	assert_int_equal(hakoi_link_queue(&p.c, "x", 1, huge, sizeof(huge)), -1);
	/* The peer closes: the reader says so. */
	hakoi_link_close(&p.s);
	assert_int_equal(step(&p.c, CLIENT_INC, &f, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "closed"));
	close_pair(&p);
}

static void test_wrong_key_refused(void **state)
{
	(void)state;
	struct pair p;
	char why[192] = "";
	int cr, sr;
	g_cli_key[5] ^= 1; /* the client does not share the server's secret */
	handshake(&p, "cli-01", &cr, &sr, why, sizeof(why));
	g_cli_key[5] ^= 1;
	assert_int_equal(sr, 0);
	assert_int_equal(cr, -1);
	assert_non_null(strstr(why, "did not prove"));
	close_pair(&p);
}

static void test_unknown_client_refused(void **state)
{
	(void)state;
	struct pair p;
	char why[192] = "";
	int cr, sr;
	handshake(&p, "cli-99", &cr, &sr, why, sizeof(why));
	assert_int_equal(sr, -1);
	assert_int_equal(cr, -1);
	assert_non_null(strstr(why, "cli-99"));
	close_pair(&p);
}

/* Frames written by hand on the client's socket: altered, replayed, too long. */
static void test_bad_frames_end_the_link(void **state)
{
	(void)state;
	for (int kind = 0; kind < 3; kind++) {
		struct pair p;
		char why[192] = "";
		int cr, sr;
		handshake(&p, "cli-01", &cr, &sr, why, sizeof(why));
		assert_int_equal(sr, 2);
		assert_int_equal(hakoi_link_queue(&p.c, "time", 4, NULL, 0), 0);
		uint8_t frame[64];
		size_t flen = p.c.wlen;
		assert_true(flen <= sizeof(frame));
		memcpy(frame, p.c.wbuf, flen);
		assert_int_equal(hakoi_link_flush(&p.c), 0);
		hakoi_link_frame_t f;
		assert_int_equal(step(&p.s, SERVER_INC, &f, why, sizeof(why)), 1);
		if (kind == 0) {
			frame[flen - 1] ^= 0x40; /* altered */
		} else if (kind == 2) {
			frame[0] = 0xff, frame[1] = 0xff, frame[2] = 0xff, frame[3] = 0x7f;
		}
		/* kind 1: the same frame again (a replay) */
		assert_int_equal(write(p.c.fd, frame, flen), (ssize_t)flen);
		int r = step(&p.s, SERVER_INC, &f, why, sizeof(why));
		assert_int_equal(r, -1);
		assert_non_null(strstr(why, kind == 2 ? "length" : "decrypt"));
		close_pair(&p);
	}
}

static void test_parse_inner(void **state)
{
	(void)state;
	hakoi_link_frame_t f;
	uint8_t b[16] = {0, 3, 0, 0, 0, 'a', 'b', 'c'};
	assert_int_equal(hakoi_link_parse_inner(b, 8, &f), 0);
	assert_int_equal(f.len1, 3);
	assert_null(f.part2);
	assert_int_equal(hakoi_link_parse_inner(b, 9, &f), -1); /* a byte no part owns */
	b[0] = 1;
	assert_int_equal(hakoi_link_parse_inner(b, 9, &f), 0);
	assert_int_equal(f.len2, 1);
	b[0] = 2; /* an unknown flag */
	assert_int_equal(hakoi_link_parse_inner(b, 8, &f), -1);
	b[0] = 1;
	b[1] = 9; /* part 1 longer than the body */
	assert_int_equal(hakoi_link_parse_inner(b, 8, &f), -1);
	assert_int_equal(hakoi_link_parse_inner(b, 4, &f), -1);
}

static void test_resolve(void **state)
{
	(void)state;
	struct sockaddr_storage sa;
	unsigned len;
	char why[128];
	assert_int_equal(hakoi_link_resolve("tcp://127.0.0.1:5000", 0, &sa, &len, why, 128), 0);
	assert_int_equal(sa.ss_family, AF_INET);
	assert_int_equal(hakoi_link_resolve("tcp://*:5000", 1, &sa, &len, why, 128), 0);
	assert_int_equal(hakoi_link_resolve("ipc:///tmp/x", 0, &sa, &len, why, 128), 0);
	assert_int_equal(sa.ss_family, AF_UNIX);
	assert_int_equal(hakoi_link_resolve("inproc://x", 0, &sa, &len, why, 128), -1);
	assert_non_null(strstr(why, "tcp:// or ipc://"));
	assert_int_equal(hakoi_link_resolve("tcp://127.0.0.1", 0, &sa, &len, why, 128), -1);
	assert_non_null(strstr(why, "no port"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frames_both_ways),
	    cmocka_unit_test(test_wrong_key_refused),
	    cmocka_unit_test(test_unknown_client_refused),
	    cmocka_unit_test(test_bad_frames_end_the_link),
	    cmocka_unit_test(test_parse_inner),
	    cmocka_unit_test(test_resolve),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
