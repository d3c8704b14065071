/* Fuzz target for the MCAP reader (tools/mcap, hako-replay's): arbitrary bytes as a file (a
 * memfd, opened by its /proc path as a file is), opened, its tables walked, its messages read in
 * file order and in log-time order to the end, going on after errors as hako-replay does. Every
 * message handed out must lie on a channel of the tables with its data inside what the reader
 * holds; the reader must say why when it fails. Crashes and sanitizer reports are the findings. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mcap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fuzz_mcap_reader: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

static volatile uint8_t g_sink;

static void drain(hako_mcap_reader_t *r, hako_mcap_order_t order)
{
	if (hako_mcap_reader_rewind(r, order) != 0) {
		return;
	}
	hako_mcap_message_t m;
	/* Bounded: each block is consumed even when it fails, so this ends; the bound is a guard.
	 */
	for (int i = 0; i < 1000000; i++) {
		int rc = hako_mcap_reader_next(r, &m);
		if (rc == 0) {
			return;
		}
		if (rc < 0) {
			if (hako_mcap_reader_error(r)[0] == '\0') {
				fail("error %d without a message", rc);
			}
			continue;
		}
		int found = 0;
		for (size_t c = 0; c < hako_mcap_reader_channel_count(r); c++) {
			found |= hako_mcap_reader_channel(r, c) == m.channel;
		}
		if (!found) {
			fail("a message on a channel not in the table");
		}
		if (m.len > 0) { /* touched, so ASan sees a read past what the reader holds */
			g_sink ^= m.data[0] ^ m.data[m.len - 1];
		}
		(void)strlen(m.channel->topic);
	}
	fail("the reader did not come to an end");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("mcap", MFD_CLOEXEC);
	if (fd < 0) {
		return 0;
	}
	size_t off = 0;
	while (off < size) {
		ssize_t k = write(fd, data + off, size - off);
		if (k <= 0) {
			close(fd);
			return 0;
		}
		off += (size_t)k;
	}
	char path[64], err[512];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	hako_mcap_reader_t *r;
	int rc = hako_mcap_reader_open(&r, path, err, sizeof(err));
	if (rc != 0) {
		if (err[0] == '\0') {
			fail("open failed (%d) without a message", rc);
		}
		close(fd);
		return 0;
	}
	for (size_t i = 0; i < hako_mcap_reader_schema_count(r); i++) {
		const hako_mcap_schema_t *s = hako_mcap_reader_schema(r, i);
		(void)strlen(s->name);
		if (s->len) {
			g_sink ^= s->data[s->len - 1];
		}
	}
	for (size_t i = 0; i < hako_mcap_reader_channel_count(r); i++) {
		const hako_mcap_channel_t *c = hako_mcap_reader_channel(r, i);
		for (size_t k = 0; c->metadata[k]; k++) {
			(void)strlen(c->metadata[k]);
		}
	}
	for (size_t i = 0; i < hako_mcap_reader_skip_count(r); i++) {
		const hako_mcap_skip_t *s = hako_mcap_reader_skip(r, i);
		if (s->offset + s->bytes < s->offset || s->why[0] == '\0') {
			fail("a skip without a reason or past 2^64");
		}
	}
	drain(r, HAKO_MCAP_ORDER_FILE);
	drain(r, HAKO_MCAP_ORDER_LOG_TIME);
	hako_mcap_reader_close(r);
	close(fd);
	return 0;
}
