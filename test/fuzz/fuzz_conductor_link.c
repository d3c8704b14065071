/* Fuzz target for the conductor's time link (conductor/src/link.h). The first byte picks:
 *   even: the rest is what a stranger sends to a server's link (HELLO, then frames), read
 *         through a socket pair by hakoi_link_read until it stops; it must end the link with a
 *         reason or wait for more, never return a frame (nothing it sends decrypts), and never
 *         read out of bounds;
 *   odd:  the rest is a decrypted frame body: hakoi_link_parse_inner must refuse it or return
 *         parts that lie inside it and add up to it.
 * Any disagreement is a finding (abort). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "link.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fuzz_conductor_link: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

/* Every id but "cli-01" is a stranger; cli-01's secret is one the input cannot know. */
static int key_fn(void *ctx, const char *id, uint8_t *statik)
{
	(void)ctx;
	if (strcmp(id, "cli-01") != 0) {
		return -1;
	}
	memset(statik, 0x5a, HAKOI_LINK_KEY);
	return 0;
}

static void stranger(const uint8_t *data, size_t size)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) {
		fail("socketpair");
	}
	/* Small inputs fit the socket buffer whole; the rest is cut there. */
	size_t n = size < 65536 ? size : 65536;
	if (n > 0 && write(sv[1], data, n) != (ssize_t)n) {
		n = 0;
	}
	shutdown(sv[1], SHUT_WR);
	hakoi_link_t l;
	hakoi_link_init(&l, 4096);
	hakoi_link_accepted(&l, sv[0]);
	for (int i = 0; i < 64; i++) {
		hakoi_link_frame_t f;
		char why[192] = "";
		int r = hakoi_link_read(&l, 42, key_fn, NULL, &f, why, sizeof(why));
		if (r == 1 || r == 2) {
			fail("bytes without the key gave %s", r == 1 ? "a frame" : "a link up");
		}
		if (r < 0) {
			if (why[0] == '\0' || memchr(why, '\0', sizeof(why)) == NULL) {
				fail("a link ended without a reason");
			}
			break;
		}
		if (r == 0 && l.state == HAKOI_LINK_HELLO && l.rlen >= HAKOI_LINK_HELLO_LEN) {
			fail("a whole HELLO left waiting");
		}
	}
	hakoi_link_free(&l); /* closes sv[0] */
	close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0) {
		return 0;
	}
	if ((data[0] & 1) == 0) {
		stranger(data + 1, size - 1);
		return 0;
	}
	const uint8_t *body = data + 1;
	size_t len = size - 1;
	hakoi_link_frame_t f;
	if (hakoi_link_parse_inner(body, len, &f) != 0) {
		return 0;
	}
	if (f.part1 != body + HAKOI_LINK_INNER || f.len1 > len - HAKOI_LINK_INNER) {
		fail("part 1 outside the body");
	}
	size_t total = HAKOI_LINK_INNER + f.len1 + (f.part2 != NULL ? f.len2 : 0);
	if (total != len || (f.part2 != NULL && f.part2 != f.part1 + f.len1) ||
	    (f.part2 == NULL && f.len2 != 0)) {
		fail("parts of %zu + %zu bytes in a body of %zu", f.len1, f.len2, len);
	}
	return 0;
}
