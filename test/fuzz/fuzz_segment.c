/* Fuzz target for attaching to a corrupted domain segment (white-box: core/src/internal.h).
 *
 * Once per process a small real domain is created (2 assets, 3 channels written once) and its
 * bytes kept as a template. An input is a list of patches applied to a copy of the template:
 *   [u16 offset, little endian][u8 len][len bytes]   bytes at (offset + i) mod template size
 *   [u16 size][u8 0]                                 truncate the image to size bytes (> 0)
 * The image is written as the segment of a domain of this process, then opened; if that works
 * the harness lists, looks up and reads what the segment claims to hold, and checks that every
 * region the handles point to lies inside the mapping. A crash, a sanitizer report, a hang, an
 * error code open does not document, or a failed check (abort) is a finding.
 *
 * Left alone, because they cost a wait and not a bug (test/core/test_segment.c covers them): the
 * bytes of the header's lock (a lock that looks held costs the 5 s lock timeout), a zero magic
 * and an empty object (a creator still initialising: open waits 1 s for it). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hako/domain.h"
#include "hako/log.h"
#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME_PREFIX "fuzz-segment-"

static const struct {
	const char *robot;
	int32_t id;
	size_t size;
} tpl_channels[] = {{"drone", 0, 72}, {"drone", 1, 32}, {"rover", 7, 1000}};
#define TPL_CHANNELS (sizeof(tpl_channels) / sizeof(tpl_channels[0]))

static uint8_t *tpl; /* the template image */
static size_t tpl_len;
static uint8_t *img; /* the image of the current input */
static char name[64];
static char path[80]; /* for shm_open */

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fuzz_segment: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	shm_unlink(path);
	abort();
}

static void remove_segment(void)
{
	if (path[0] != '\0') {
		shm_unlink(path);
	}
}

/* Segments of earlier runs that were killed (a timeout does not run atexit handlers). */
static void sweep_dead(void)
{
	DIR *d = opendir("/dev/shm");
	if (d == NULL) {
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		const char *p = strstr(e->d_name, NAME_PREFIX);
		if (strncmp(e->d_name, "hako.", 5) != 0 || p != e->d_name + 5) {
			continue;
		}
		const char *num = strrchr(e->d_name, '-') + 1;
		char *end;
		long pid = strtol(num, &end, 10);
		if (*end != '\0' || pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH) {
			continue;
		}
		char old[300];
		snprintf(old, sizeof(old), "/%s", e->d_name);
		shm_unlink(old);
	}
	closedir(d);
}

/* Under the name the inputs are written as: the header names its domain. */
static void make_template(const char *tname)
{
	hako_domain_config_t cfg;
	hako_domain_t *dom;
	hako_member_t *m[2];
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 8;
	cfg.arena_bytes = 64 * 1024;
	hako_domain_remove(tname);
	if (hako_domain_create(tname, &cfg, &dom) != 0 ||
	    hako_member_register(dom, "camera", 1000, &m[0]) != 0 ||
	    hako_member_register(dom, "controller", 2000, &m[1]) != 0) {
		fail("cannot create the template domain %s", tname);
	}
	for (size_t i = 0; i < TPL_CHANNELS; i++) {
		hako_channel_t *ch;
		uint8_t pdu[1000];
		memset(pdu, (int)(0x41 + i), sizeof(pdu));
		if (hako_channel_create(dom, tpl_channels[i].robot, tpl_channels[i].id,
		                        tpl_channels[i].size, &ch) != 0 ||
		    hako_channel_write(ch, pdu, tpl_channels[i].size) != 0) {
			fail("cannot create the template channels");
		}
	}
	char file[96];
	snprintf(file, sizeof(file), "/dev/shm/hako.%s", tname);
	int fd = open(file, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		fail("cannot read %s", file);
	}
	tpl_len = (size_t)st.st_size;
	tpl = malloc(tpl_len);
	img = malloc(tpl_len);
	if (tpl == NULL || img == NULL || pread(fd, tpl, tpl_len, 0) != (ssize_t)tpl_len) {
		fail("cannot read %s", file);
	}
	close(fd);
	hako_member_unregister(m[0]);
	hako_member_unregister(m[1]);
	hako_domain_close(dom);
	hako_domain_remove(tname);
}

/* Provided by the sanitizer runtimes: a report ends the process without atexit. */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static void init(void)
{
	hako_log_set_level(HAKO_LOG_OFF);
	sweep_dead();
	snprintf(name, sizeof(name), NAME_PREFIX "%d", (int)getpid());
	snprintf(path, sizeof(path), "/hako.%s", name);
	atexit(remove_segment);
	if (__sanitizer_set_death_callback != NULL) {
		__sanitizer_set_death_callback(remove_segment);
	}
	make_template(name);
}

static int in_lock(size_t off)
{
	return off >= offsetof(struct hakoi_header, lock) &&
	       off < offsetof(struct hakoi_header, lock) + sizeof(pthread_mutex_t);
}

/* The image of an input: its length. */
static size_t apply_patches(const uint8_t *data, size_t size)
{
	size_t len = tpl_len;
	memcpy(img, tpl, tpl_len);
	const uint8_t *p = data, *end = data + size;
	while (end - p >= 3) {
		size_t off = (size_t)p[0] | (size_t)p[1] << 8;
		size_t n = p[2];
		p += 3;
		if (n == 0) {
			if (off > 0 && off < len) {
				len = off;
			}
			continue;
		}
		if (n > (size_t)(end - p)) {
			n = (size_t)(end - p);
		}
		for (size_t i = 0; i < n; i++) {
			size_t o = (off + i) % tpl_len;
			if (!in_lock(o)) {
				img[o] = p[i];
			}
		}
		p += n;
	}
	uint32_t magic;
	memcpy(&magic, img, sizeof(magic));
	if (magic == 0) {
		memcpy(img, tpl, sizeof(magic));
	}
	return len;
}

static void write_segment(size_t len)
{
	int fd = shm_open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		fail("shm_open %s: %s", path, strerror(errno));
	}
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, img + done, len - done);
		if (n <= 0) {
			fail("write %s: %s", path, strerror(errno));
		}
		done += (size_t)n;
	}
	close(fd);
}

static int inside(const hako_domain_t *d, const void *p, uint64_t bytes)
{
	const uint8_t *b = p;
	return b >= d->base && b <= d->base + d->size && bytes <= (uint64_t)(d->base + d->size - b);
}

/* Every region the handle will use lies inside the mapping, which lies inside the object. */
static void check_geometry(const hako_domain_t *d, size_t len)
{
	if (d->size > len) {
		fail("mapped %zu bytes of a %zu-byte object", d->size, len);
	}
	if (!inside(d, d->assets, (uint64_t)d->max_assets * sizeof(struct hakoi_asset)) ||
	    !inside(d, d->channels, (uint64_t)d->max_channels * sizeof(struct hakoi_channel)) ||
	    !inside(d, (const void *)d->index, (uint64_t)d->index_slots * sizeof(int32_t)) ||
	    !inside(d, d->arena, d->arena_bytes)) {
		fail("a table lies outside the %zu mapped bytes", d->size);
	}
	if (d->index_slots == 0 || (d->index_slots & (d->index_slots - 1)) != 0) {
		fail("index_slots %u is not a power of two", d->index_slots);
	}
}

static void check_name(const char *what, const char *s)
{
	if (memchr(s, '\0', HAKO_NAME_MAX) == NULL) {
		fail("%s: a name without a NUL in %d bytes", what, HAKO_NAME_MAX);
	}
}

/* Look up and read one channel: what the lookup gives is inside the arena. */
static void use_channel(hako_domain_t *d, const char *robot, int32_t id)
{
	hako_channel_t *ch = NULL;
	int r = hako_channel_lookup(d, robot, id, &ch);
	if (r == HAKO_ENOENT || r == HAKO_ECORRUPT) {
		if (ch != NULL) {
			fail("lookup %s/%d: %s and a handle", robot, (int)id, hako_strerror(r));
		}
		return;
	}
	if (r != 0 || ch == NULL) {
		fail("lookup %s/%d: %d (%s)", robot, (int)id, r, hako_strerror(r));
	}
	size_t sz = hako_channel_size(ch);
	if (sz == 0 || !inside(d, ch->buf[0], sz) || !inside(d, ch->buf[1], sz) ||
	    ch->buf[0] < d->arena || ch->buf[1] + sz > d->arena + d->arena_bytes) {
		fail("lookup %s/%d: buffers of %zu bytes outside the arena", robot, (int)id, sz);
	}
	check_name("hako_channel_robot", hako_channel_robot(ch));
	/* Exactly the channel's size, so ASan sees a copy past it. */
	uint8_t *buf = malloc(sz);
	size_t got = 0;
	uint64_t seq = 0;
	/* HAKO_ECORRUPT: both buffers open and nobody writing. */
	r = hako_channel_read(ch, buf, sz, &got, &seq);
	if (r != 0 && r != HAKO_ETOOBIG && r != HAKO_ECORRUPT) {
		fail("read %s/%d: %d (%s)", robot, (int)id, r, hako_strerror(r));
	}
	uint8_t small[4];
	r = hako_channel_read(ch, small, sizeof(small), &got, NULL);
	if (r != 0 && r != HAKO_ETOOBIG && r != HAKO_ECORRUPT) {
		fail("read %s/%d into 4 bytes: %d (%s)", robot, (int)id, r, hako_strerror(r));
	}
	(void)hako_channel_seq(ch);
	free(buf);
}

static void use_domain(hako_domain_t *d, size_t len)
{
	check_geometry(d, len);
	hako_domain_info_t info;
	int r = hako_domain_get_info(d, &info);
	if (r != 0) {
		fail("get_info: %d (%s)", r, hako_strerror(r));
	}
	if (info.channel_count > info.max_channels) {
		fail("get_info: %u channels of %u", info.channel_count, info.max_channels);
	}
	if (memchr(info.error_reason, '\0', sizeof(info.error_reason)) == NULL) {
		fail("get_info: an error reason without a NUL");
	}

	hako_asset_info_t assets[8];
	int n = -1;
	r = hako_domain_list_assets(d, assets, 8, &n);
	if (r != 0 || n < 0 || (uint32_t)n > d->max_assets) {
		fail("list_assets: %d, %d assets of %u", r, n, d->max_assets);
	}
	for (int i = 0; i < n && i < 8; i++) {
		check_name("list_assets", assets[i].name);
	}

	hako_channel_info_t chans[16];
	n = -1;
	r = hako_domain_list_channels(d, chans, 16, &n);
	if (r != 0 || n < 0 || (uint32_t)n > d->max_channels) {
		fail("list_channels: %d, %d channels of %u", r, n, d->max_channels);
	}
	for (int i = 0; i < n && i < 16; i++) {
		check_name("list_channels", chans[i].robot);
		use_channel(d, chans[i].robot, chans[i].channel_id);
	}
	for (size_t i = 0; i < TPL_CHANNELS; i++) {
		use_channel(d, tpl_channels[i].robot, tpl_channels[i].id);
	}

	/* The event log: a made-up count or entry gives fewer events, never more or unbounded. */
	static hako_domain_event_t ev[HAKOI_LOG_ENTRIES + 1];
	uint32_t next = 0;
	n = -1;
	r = hako_domain_read_events(d, 0, ev, HAKOI_LOG_ENTRIES + 1, &n, &next);
	if (r != 0 || n < 0 || n > HAKOI_LOG_ENTRIES) {
		fail("read_events: %d, %d events", r, n);
	}
	for (int i = 0; i < n; i++) {
		if (memchr(ev[i].text, '\0', sizeof(ev[i].text)) == NULL) {
			fail("read_events: an event without a NUL");
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (tpl == NULL) {
		init();
	}
	size_t len = apply_patches(data, size);
	write_segment(len);
	hako_domain_t *d = NULL;
	int r = hako_domain_open(name, &d);
	shm_unlink(path); /* the mapping stays: a finding below leaves nothing behind */
	if (r == 0) {
		if (d == NULL) {
			fail("open: 0 and no handle");
		}
		use_domain(d, len);
		hako_domain_close(d);
	} else if (r != HAKO_EMAGIC && r != HAKO_EVERSION && r != HAKO_ECORRUPT) {
		fail("open: %d (%s), not a documented refusal", r, hako_strerror(r));
	} else if (d != NULL) {
		fail("open: %s and a handle", hako_strerror(r));
	}
	return 0;
}
