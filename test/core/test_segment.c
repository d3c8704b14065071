/* Planted and corrupted segments (white-box: the layout is core/src/internal.h). A real domain is
 * created, then changed through a second writable mapping of /dev/shm/hako.<name>, as a buggy or
 * hostile process of the same user could; a fresh hako_domain_open (or the call named) must then
 * give the documented error, or work within the checked geometry, and never crash or hang. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
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

#include <cmocka.h>

#include "hako/domain.h"
#include "hako/log.h"
#include "hako_test_util.h"
#include "internal.h"

#define FOREIGN_UID 65534 /* nobody */

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;  /* the creator */
	hako_domain_t *dom2; /* a fresh attach to the corrupted segment */
	hako_member_t *m[2];
	int fd; /* the second view of the segment */
	uint8_t *seg;
	size_t seg_len;
	int *ready; /* shared with a child */
};

static hako_domain_config_t small_cfg(void)
{
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 8;
	cfg.arena_bytes = 64 * 1024;
	cfg.heartbeat_timeout_usec = 0;
	return cfg;
}

static int setup(void **state, const char *test)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name(test, f->name, sizeof(f->name));
	hako_domain_remove(f->name); /* a leftover of a killed earlier run with the same pid */
	f->fd = -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	htu_kill_children();
	unsetenv("HAKO_ALLOW_FOREIGN_DOMAIN");
	for (int i = 0; i < 2; i++) {
		hako_member_unregister(f->m[i]);
	}
	hako_domain_close(f->dom2);
	hako_domain_close(f->dom);
	if (f->seg != NULL) {
		munmap(f->seg, f->seg_len);
	}
	if (f->fd >= 0) {
		close(f->fd);
	}
	if (f->ready != NULL) {
		htu_shared_free(f->ready, sizeof(int));
	}
	htu_remove_domain(f->name);
	free(f);
	return 0;
}

#define SETUP(test)                                                                                \
	static int setup_##test(void **state)                                                      \
	{                                                                                          \
		return setup(state, #test);                                                        \
	}

static void shm_file(const char *name, char *path, size_t len)
{
	snprintf(path, len, "/dev/shm/hako.%s", name);
}

/* Create the domain and map its segment a second time, writable. */
static void create_and_map(struct fx *f)
{
	hako_domain_config_t cfg = small_cfg();
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	char path[HAKO_NAME_MAX + 16];
	shm_file(f->name, path, sizeof(path));
	f->fd = open(path, O_RDWR);
	assert_true(f->fd >= 0);
	struct stat st;
	assert_int_equal(fstat(f->fd, &st), 0);
	f->seg_len = (size_t)st.st_size;
	void *p = mmap(NULL, f->seg_len, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	assert_true(p != MAP_FAILED);
	f->seg = p;
}

static struct hakoi_header *hdr(struct fx *f)
{
	return (struct hakoi_header *)f->seg;
}

static struct hakoi_asset *asset_slot(struct fx *f, int i)
{
	return (struct hakoi_asset *)(f->seg + hdr(f)->assets_off) + i;
}

static struct hakoi_channel *channel_slot(struct fx *f, int i)
{
	return (struct hakoi_channel *)(f->seg + hdr(f)->channels_off) + i;
}

static int32_t *index_slots(struct fx *f)
{
	return (int32_t *)(f->seg + hdr(f)->index_off);
}

/* Write `len` bytes (a fill byte, or a fixed pseudo-random pattern if fill < 0) as
 * /dev/shm/hako.<name>. */
static void plant_segment(const char *name, int fill, size_t len, const void *prefix,
                          size_t prefix_len)
{
	char path[HAKO_NAME_MAX + 16];
	shm_file(name, path, sizeof(path));
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	uint8_t *buf = malloc(len + 1);
	assert_non_null(buf);
	uint32_t x = 2463534242u; /* xorshift32 */
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = fill >= 0 ? (uint8_t)fill : (uint8_t)x;
	}
	memcpy(buf, prefix, prefix_len);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	free(buf);
	close(fd);
}

/* hako_domain_open with what the library logged to stderr captured into log. */
static int open_logged(const char *name, hako_domain_t **out, char *log, size_t len)
{
	FILE *tmp = tmpfile();
	assert_non_null(tmp);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	int r = hako_domain_open(name, out);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	size_t n = fread(log, 1, len - 1, tmp);
	log[n] = '\0';
	fclose(tmp);
	return r;
}

/* The error log names the segment and `what`. */
static void assert_logged(const char *log, const char *name, const char *what)
{
	char path[HAKO_NAME_MAX + 16];
	shm_file(name, path, sizeof(path));
	if (strstr(log, path) == NULL || strstr(log, what) == NULL) {
		fail_msg("the log does not name %s and '%s':\n%s", path, what, log);
	}
}

static void register_two(struct fx *f)
{
	assert_int_equal(hako_member_register(f->dom, "a0", 1000, &f->m[0]), 0);
	assert_int_equal(hako_member_register(f->dom, "a1", 1000, &f->m[1]), 0);
}

/* Channels r/1 (16 bytes), r/2 (100 bytes), r/3 (8 bytes), each written once. */
static void three_channels(struct fx *f)
{
	static const size_t sizes[3] = {16, 100, 8};
	for (int i = 0; i < 3; i++) {
		hako_channel_t *ch;
		uint8_t data[100];
		memset(data, 'a' + i, sizeof(data));
		assert_int_equal(hako_channel_create(f->dom, "r", i + 1, sizes[i], &ch), 0);
		assert_int_equal(hako_channel_write(ch, data, sizes[i]), 0);
	}
}

/* ---- dynamic counts: clamped to the checked geometry ---- */

SETUP(asset_hwm_huge)
static void test_asset_hwm_huge(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	register_two(f);
	three_channels(f); /* in_use words past the asset table, if it were overrun */
	atomic_store(&hdr(f)->asset_hwm, 100000);

	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
	hako_asset_info_t out[8];
	int n = -1;
	assert_int_equal(hako_domain_list_assets(f->dom2, out, 8, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(out[0].name, "a0");
	assert_string_equal(out[1].name, "a1");
	n = -1;
	assert_int_equal(hako_domain_list_assets(f->dom2, NULL, 0, &n), 0);
	assert_int_equal(n, 2);
	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom2, &info), 0);
	assert_int_equal(info.max_assets, 4);
	/* Start and stop walk the asset table too. */
	assert_int_equal(hako_domain_start(f->dom2), 0);
	assert_int_equal(hako_member_event(f->m[0]), HAKO_EVENT_START);
	assert_int_equal(hako_domain_stop(f->dom2), 0);
}

SETUP(channel_count_huge)
static void test_channel_count_huge(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	three_channels(f);
	atomic_store(&hdr(f)->channel_count, UINT32_MAX);

	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
	hako_channel_info_t out[8];
	int n = -1;
	assert_int_equal(hako_domain_list_channels(f->dom2, out, 8, &n), 0);
	assert_int_equal(n, 8); /* max_channels: the rest are empty entries */
	assert_string_equal(out[0].robot, "r");
	assert_int_equal(out[1].channel_id, 2);
	assert_int_equal(out[2].size, 8);
	n = -1;
	assert_int_equal(hako_domain_list_channels(f->dom2, NULL, 0, &n), 0);
	assert_int_equal(n, 8);
	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom2, &info), 0);
	assert_int_equal(info.channel_count, 8);
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom2, "r", 50, 8, &ch), HAKO_ENOSPC);
	assert_null(ch);
	assert_int_equal(hako_channel_lookup(f->dom2, "r", 2, &ch), 0);
	assert_int_equal(hako_channel_size(ch), 100);
}

SETUP(arena_used_huge)
static void test_arena_used_huge(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	atomic_store(&hdr(f)->arena_used, UINT64_MAX - 64);
	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom2, "r", 1, 8, &ch), HAKO_ENOSPC);
	assert_null(ch);
}

/* ---- the header: every capacity and offset is checked before use ---- */

enum { SET, ADD };

struct hdr_case {
	const char *what;
	size_t off;   /* in struct hakoi_header */
	size_t width; /* 4 or 8 bytes */
	int op;
	int64_t value;
	const char *logged; /* the error names it */
};

#define F(field) offsetof(struct hakoi_header, field), sizeof(((struct hakoi_header *)0)->field)

static const struct hdr_case hdr_cases[] = {
    {"assets_off + 4096", F(assets_off), ADD, 4096, "assets_off"},
    {"assets_off = 0", F(assets_off), SET, 0, "assets_off"},
    {"channels_off = 2^40", F(channels_off), SET, 1ll << 40, "channels_off"},
    {"channels_off - 64", F(channels_off), ADD, -64, "channels_off"},
    {"index_off + 4096", F(index_off), ADD, 4096, "index_off"},
    {"index_off = -1", F(index_off), SET, -1, "index_off"},
    {"log_off + 4096", F(log_off), ADD, 4096, "log_off"},
    {"log_off = 0", F(log_off), SET, 0, "log_off"},
    {"arena_off + 4096", F(arena_off), ADD, 4096, "arena_off"},
    {"arena_off = 0", F(arena_off), SET, 0, "arena_off"},
    {"segment_bytes + 4096", F(segment_bytes), ADD, 4096, "segment_bytes"},
    {"segment_bytes - 4096", F(segment_bytes), ADD, -4096, "segment_bytes"},
    {"segment_bytes = -1", F(segment_bytes), SET, -1, "segment_bytes"},
    {"max_assets = 0", F(max_assets), SET, 0, "max_assets"},
    {"max_assets = 5000", F(max_assets), SET, 5000, "max_assets"},
    {"max_assets = 2^32 - 1", F(max_assets), SET, UINT32_MAX, "max_assets"},
    {"max_assets = 4000 (in range, another layout)", F(max_assets), SET, 4000, "channels_off"},
    {"max_channels = 0", F(max_channels), SET, 0, "max_channels"},
    {"max_channels = limit + 1", F(max_channels), SET, HAKO_MAX_CHANNELS_LIMIT + 1, "max_channels"},
    {"max_channels = 4096 (in range, another layout)", F(max_channels), SET, 4096, "index_off"},
    {"arena_bytes + 1", F(arena_bytes), ADD, 1, "arena_bytes"},
    {"arena_bytes = 0", F(arena_bytes), SET, 0, "arena_bytes"},
    {"arena_bytes = 2^41", F(arena_bytes), SET, 1ll << 41, "arena_bytes"},
    {"arena_bytes + 4096 (another layout)", F(arena_bytes), ADD, 4096, "segment_bytes"},
    {"index_slots = 0", F(index_slots), SET, 0, "index_slots"},
    {"index_slots - 1", F(index_slots), ADD, -1, "index_slots"},
    {"index_slots * 2", F(index_slots), SET, 32, "index_slots"},
};

static void patch_field(uint8_t *p, const struct hdr_case *c)
{
	if (c->width == 4) {
		uint32_t v;
		memcpy(&v, p, 4);
		v = c->op == ADD ? v + (uint32_t)c->value : (uint32_t)c->value;
		memcpy(p, &v, 4);
	} else {
		uint64_t v;
		memcpy(&v, p, 8);
		v = c->op == ADD ? v + (uint64_t)c->value : (uint64_t)c->value;
		memcpy(p, &v, 8);
	}
}

SETUP(header_fields)
static void test_header_fields(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	assert_int_equal(hdr(f)->index_slots, 16); /* "index_slots * 2" above assumes it */
	char log[4096];
	for (size_t i = 0; i < sizeof(hdr_cases) / sizeof(hdr_cases[0]); i++) {
		const struct hdr_case *c = &hdr_cases[i];
		uint8_t saved[8];
		memcpy(saved, f->seg + c->off, c->width);
		patch_field(f->seg + c->off, c);
		int r = open_logged(f->name, &f->dom2, log, sizeof(log));
		memcpy(f->seg + c->off, saved, c->width);
		if (r != HAKO_ECORRUPT || f->dom2 != NULL) {
			fail_msg("%s: hako_domain_open gave %d (%s), not HAKO_ECORRUPT", c->what, r,
			         hako_strerror(r));
		}
		assert_logged(log, f->name, c->logged);
		/* Restored, it opens: the refusal was about that field. */
		if ((r = hako_domain_open(f->name, &f->dom2)) != 0) {
			fail_msg("after %s was restored: hako_domain_open gave %d", c->what, r);
		}
		hako_domain_close(f->dom2);
		f->dom2 = NULL;
	}
}

SETUP(header_name)
static void test_header_name(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	char log[4096];
	hdr(f)->name[0] ^= 1;
	assert_int_equal(open_logged(f->name, &f->dom2, log, sizeof(log)), HAKO_ECORRUPT);
	assert_null(f->dom2);
	assert_logged(log, f->name, "names another domain");
	/* No terminator at all: still refused, and the log stays bounded. */
	memset(hdr(f)->name, 'N', sizeof(hdr(f)->name));
	assert_int_equal(open_logged(f->name, &f->dom2, log, sizeof(log)), HAKO_ECORRUPT);
	assert_null(f->dom2);
	assert_logged(log, f->name, "names another domain");
	char unbounded[HAKO_NAME_MAX + 1];
	memset(unbounded, 'N', HAKO_NAME_MAX);
	unbounded[HAKO_NAME_MAX] = '\0';
	assert_null(strstr(log, unbounded));
}

/* The event log: entries and a count any process may have scribbled on are read bounded. */
SETUP(event_log)
static void test_event_log(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	struct hakoi_log_entry *log = (struct hakoi_log_entry *)(f->seg + hdr(f)->log_off);
	uint32_t total = atomic_load(&hdr(f)->log_count);
	assert_true(total >= 1); /* "domain created" */
	/* a text without its NUL, and a count far past what was written */
	memset(log[0].text, 'x', sizeof(log[0].text));
	atomic_store(&hdr(f)->log_count, UINT32_MAX - 3);
	hako_domain_event_t ev[HAKOI_LOG_ENTRIES + 8];
	int n = -1;
	uint32_t next = 0;
	assert_int_equal(hako_domain_read_events(f->dom, 0, ev, HAKOI_LOG_ENTRIES + 8, &n, &next),
	                 0);
	/* Only entries whose number matches their place are kept: none of the made-up ones. */
	assert_int_equal(n, 0);
	assert_int_equal(next, UINT32_MAX - 3);
	atomic_store(&hdr(f)->log_count, total);
	assert_int_equal(hako_domain_read_events(f->dom, 0, ev, HAKOI_LOG_ENTRIES + 8, &n, &next),
	                 0);
	assert_int_equal(n, (int)total);
	assert_int_equal(strlen(ev[0].text), sizeof(ev[0].text) - 1);
}

SETUP(layout_version)
static void test_layout_version(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	hdr(f)->layout_version = 99;
	assert_int_equal(hako_domain_open(f->name, &f->dom2), HAKO_EVERSION);
	assert_null(f->dom2);
}

SETUP(truncated)
static void test_truncated(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	char log[4096];
	/* From here on, neither mapping may touch what was cut off (SIGBUS). */
	assert_int_equal(ftruncate(f->fd, (off_t)(f->seg_len - 4096)), 0);
	assert_int_equal(open_logged(f->name, &f->dom2, log, sizeof(log)), HAKO_ECORRUPT);
	assert_null(f->dom2);
	assert_logged(log, f->name, "the segment has");
	assert_int_equal(ftruncate(f->fd, 4096), 0); /* the header page only */
	assert_int_equal(hako_domain_open(f->name, &f->dom2), HAKO_ECORRUPT);
	assert_int_equal(ftruncate(f->fd, sizeof(struct hakoi_header) - 1), 0);
	assert_int_equal(hako_domain_open(f->name, &f->dom2), HAKO_EMAGIC);
	assert_null(f->dom2);
}

/* ---- objects that were never a hako segment ---- */

SETUP(planted_garbage)
static void test_planted_garbage(void **state)
{
	struct fx *f = *state;
	plant_segment(f->name, -1, 64 * 1024, "", 0);
	assert_int_equal(hako_domain_open(f->name, &f->dom2), HAKO_EMAGIC);
	assert_null(f->dom2);
	hako_domain_config_t cfg = small_cfg();
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), HAKO_EMAGIC);
	assert_null(f->dom);
	assert_int_equal(hako_domain_remove(f->name), 0);

	/* The right magic and version, garbage after them. */
	uint32_t head[2] = {HAKOI_MAGIC, HAKOI_LAYOUT_VERSION};
	plant_segment(f->name, -1, 64 * 1024, head, sizeof(head));
	assert_int_equal(hako_domain_open(f->name, &f->dom2), HAKO_ECORRUPT);
	assert_null(f->dom2);
}

SETUP(planted_zeros)
static void test_planted_zeros(void **state)
{
	struct fx *f = *state;
	/* Looks like a creator between ftruncate and its magic store, until the wait ends. */
	plant_segment(f->name, 0, 64 * 1024, "", 0);
	assert_int_equal(hako_domain_open(f->name, &f->dom2), HAKO_EMAGIC);
	assert_null(f->dom2);
}

SETUP(planted_empty)
static void test_planted_empty(void **state)
{
	struct fx *f = *state;
	plant_segment(f->name, 0, 0, "", 0);
	assert_int_equal(hako_domain_open(f->name, &f->dom2), HAKO_EMAGIC);
	assert_null(f->dom2);
}

/* ---- channel entries and the channel index ---- */

struct chan_case {
	const char *what;
	int32_t id; /* r/<id>, index id - 1 */
	void (*corrupt)(struct hakoi_channel *c, uint64_t arena_bytes);
	int want; /* from hako_channel_lookup */
};

static void data_off_past_arena(struct hakoi_channel *c, uint64_t arena_bytes)
{
	c->data_off = arena_bytes + 64;
}
static void data_off_huge(struct hakoi_channel *c, uint64_t arena_bytes)
{
	(void)arena_bytes;
	c->data_off = UINT64_MAX & ~(uint64_t)63;
}
static void second_buffer_past_arena(struct hakoi_channel *c, uint64_t arena_bytes)
{
	c->data_off = arena_bytes - c->stride;
}
static void size_over_stride(struct hakoi_channel *c, uint64_t arena_bytes)
{
	(void)arena_bytes;
	c->size = c->stride + 1;
}
static void stride_zero(struct hakoi_channel *c, uint64_t arena_bytes)
{
	(void)arena_bytes;
	c->stride = 0;
}
static void stride_huge(struct hakoi_channel *c, uint64_t arena_bytes)
{
	(void)arena_bytes;
	c->stride = UINT32_MAX & ~63u;
	c->size = c->stride;
}
static void data_off_unaligned(struct hakoi_channel *c, uint64_t arena_bytes)
{
	(void)arena_bytes;
	c->data_off += 1;
}
static void robot_unterminated(struct hakoi_channel *c, uint64_t arena_bytes)
{
	(void)arena_bytes;
	memset(c->robot, 'x', sizeof(c->robot));
}

static const struct chan_case chan_cases[] = {
    {"data_off beyond the arena", 1, data_off_past_arena, HAKO_ECORRUPT},
    {"data_off near 2^64", 2, data_off_huge, HAKO_ECORRUPT},
    {"second buffer beyond the arena", 3, second_buffer_past_arena, HAKO_ECORRUPT},
    {"size > stride", 2, size_over_stride, HAKO_ECORRUPT},
    {"stride 0", 1, stride_zero, HAKO_ECORRUPT},
    {"stride near 2^32", 3, stride_huge, HAKO_ECORRUPT},
    {"data_off not aligned", 2, data_off_unaligned, HAKO_ECORRUPT},
    {"robot name without a NUL", 1, robot_unterminated, HAKO_ENOENT}, /* not "r" any more */
};

SETUP(channel_entry)
static void test_channel_entry(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	three_channels(f);
	uint64_t arena = hdr(f)->arena_bytes;
	for (size_t i = 0; i < sizeof(chan_cases) / sizeof(chan_cases[0]); i++) {
		const struct chan_case *k = &chan_cases[i];
		struct hakoi_channel *c = channel_slot(f, k->id - 1);
		struct hakoi_channel saved;
		memcpy(&saved, c, sizeof(saved));
		k->corrupt(c, arena);
		assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
		hako_channel_t *ch = (hako_channel_t *)1;
		int r = hako_channel_lookup(f->dom2, "r", k->id, &ch);
		if (r != k->want || ch != NULL) {
			fail_msg("%s: hako_channel_lookup gave %d (%s), not %d (%s)", k->what, r,
			         hako_strerror(r), k->want, hako_strerror(k->want));
		}
		/* The other channels are still usable, and listing does not trip over it. */
		int32_t other = k->id % 3 + 1;
		uint8_t buf[128];
		size_t len = 0;
		assert_int_equal(hako_channel_lookup(f->dom2, "r", other, &ch), 0);
		assert_int_equal(hako_channel_read(ch, buf, sizeof(buf), &len, NULL), 0);
		assert_int_equal(len, hako_channel_size(ch));
		assert_int_equal(buf[0], 'a' + other - 1);
		hako_channel_info_t out[8];
		int n = 0;
		assert_int_equal(hako_domain_list_channels(f->dom2, out, 8, &n), 0);
		assert_int_equal(n, 3);
		assert_true(strlen(out[k->id - 1].robot) < sizeof(out[0].robot));
		hako_domain_close(f->dom2);
		f->dom2 = NULL;
		memcpy(c, &saved, sizeof(saved));
	}
}

SETUP(channel_index)
static void test_channel_index(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	three_channels(f);
	uint32_t slots = hdr(f)->index_slots;
	int32_t *idx = index_slots(f);
	int32_t bad[2] = {-5, (int32_t)hdr(f)->max_channels + 7};
	int filled = 0;
	for (uint32_t i = 0; i < slots; i++) {
		if (idx[i] == 0) {
			idx[i] = bad[filled++ % 2];
		}
	}
	assert_int_equal(filled, (int)slots - 3);

	/* No empty slot left, every other one out of range: lookups go round once and stop. */
	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
	hako_channel_t *ch;
	for (int32_t id = 1; id <= 3; id++) {
		assert_int_equal(hako_channel_lookup(f->dom2, "r", id, &ch), 0);
		assert_int_equal(hako_channel_id(ch), id);
	}
	assert_int_equal(hako_channel_lookup(f->dom2, "r", 99, &ch), HAKO_ENOENT);
	assert_int_equal(hako_channel_create(f->dom2, "r", 99, 8, &ch), HAKO_ECORRUPT);
	assert_null(ch);
	hako_domain_close(f->dom2);
	f->dom2 = NULL;

	/* The real entries gone too. */
	for (uint32_t i = 0; i < slots; i++) {
		if (idx[i] >= 1 && idx[i] <= 3) {
			idx[i] = -5;
		}
	}
	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
	assert_int_equal(hako_channel_lookup(f->dom2, "r", 1, &ch), HAKO_ENOENT);
	assert_null(ch);
	hako_domain_close(f->dom2);
	f->dom2 = NULL;

	/* An entry in range that points at a never used (all-zero) channel slot. */
	idx[0] = 5;
	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
	assert_int_equal(hako_channel_lookup(f->dom2, "", 0, &ch), HAKO_ECORRUPT);
	assert_null(ch);
}

/* ---- asset slots ---- */

SETUP(asset_name_unterminated)
static void test_asset_name_unterminated(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	register_two(f);
	struct hakoi_asset *a = asset_slot(f, hako_member_id(f->m[0]));
	memset(a->name, 'A', sizeof(a->name));

	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
	hako_asset_info_t out[4];
	memset(out, 0x55, sizeof(out));
	int n = 0;
	assert_int_equal(hako_domain_list_assets(f->dom2, out, 4, &n), 0);
	assert_int_equal(n, 2);
	const hako_asset_info_t *o = out[0].id == hako_member_id(f->m[0]) ? &out[0] : &out[1];
	assert_non_null(memchr(o->name, '\0', sizeof(o->name)));
	assert_int_equal(strlen(o->name), HAKO_NAME_MAX - 1);
	assert_int_equal(strspn(o->name, "A"), HAKO_NAME_MAX - 1);
	/* Registration compares names bounded too. */
	hako_member_t *m = NULL;
	assert_int_equal(hako_member_register(f->dom2, "b", 1000, &m), 0);
	hako_member_unregister(m);
}

/* ---- a segment of another user ---- */

SETUP(foreign_owner)
static void test_foreign_owner(void **state)
{
	struct fx *f = *state;
	if (geteuid() != 0) {
		skip(); /* only root can give a file away */
	}
	create_and_map(f);
	assert_int_equal(fchown(f->fd, FOREIGN_UID, FOREIGN_UID), 0);
	unsigned uid = 0;
	assert_int_equal(hako_domain_owner(f->name, &uid), 0);
	assert_int_equal(uid, FOREIGN_UID);

	char log[4096];
	assert_int_equal(open_logged(f->name, &f->dom2, log, sizeof(log)), HAKO_EPERM);
	assert_null(f->dom2);
	assert_logged(log, f->name, "owned by uid 65534");
	hako_domain_t *d = NULL;
	hako_domain_config_t cfg = small_cfg();
	assert_int_equal(hako_domain_create(f->name, &cfg, &d), HAKO_EPERM);
	assert_null(d);

	setenv("HAKO_ALLOW_FOREIGN_DOMAIN", "0", 1);
	assert_int_equal(hako_domain_open(f->name, &f->dom2), HAKO_EPERM);
	setenv("HAKO_ALLOW_FOREIGN_DOMAIN", "1", 1);
	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
	hako_domain_info_t info;
	assert_int_equal(hako_domain_get_info(f->dom2, &info), 0);
	assert_int_equal(info.max_assets, 4);
	assert_int_equal(hako_domain_owner("no-such-domain-for-owner", &uid), HAKO_ENOENT);
}

/* ---- a lock that is never released ---- */

struct lock_args {
	struct hakoi_header *h;
	int *ready;
};

static void child_lock_and_stop(void *p)
{
	struct lock_args *a = p;
	HTU_CHECK_RC(pthread_mutex_lock(&a->h->lock), 0);
	__atomic_store_n(a->ready, 1, __ATOMIC_SEQ_CST);
	raise(SIGSTOP); /* a process of the domain stopped inside its critical section */
	for (;;) {
		pause();
	}
}

SETUP(lock_held_by_stopped_process)
static void test_lock_held_by_stopped_process(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	f->ready = htu_shared_alloc(sizeof(int));
	assert_non_null(f->ready);
	struct lock_args a = {hdr(f), f->ready};
	pid_t pid = htu_fork(child_lock_and_stop, &a);
	assert_true(pid > 0);
	int ok;
	HTU_WAIT_UNTIL(ok, __atomic_load_n(f->ready, __ATOMIC_SEQ_CST) == 1, HTU_TIMEOUT_USEC);
	assert_true(ok);

	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0); /* takes no lock */
	assert_int_equal(hako_domain_start(f->dom2), HAKO_EBUSY);
	assert_int_equal(hako_domain_state(f->dom2), HAKO_STATE_STOPPED);
}

SETUP(lock_word_garbage)
static void test_lock_word_garbage(void **state)
{
	struct fx *f = *state;
#ifdef __GLIBC__
	create_and_map(f);
	/* Held by a thread id no process can have (pid_max is at most 2^22), kind unchanged: robust
	 * and process-shared, so the kernel will never report its owner dead. */
	hdr(f)->lock.__data.__lock = 0x3ffffff0;
	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
	hako_asset_info_t out[4];
	int n = 0;
	assert_int_equal(hako_domain_list_assets(f->dom2, out, 4, &n), HAKO_EBUSY);
#else
	(void)f;
	skip(); /* the layout of pthread_mutex_t is glibc's */
#endif
}

/* ---- seqlock and writer words: a reader or writer must not spin for ever ---- */

struct bounded_args {
	const char *name;
	int32_t id;
	int reset; /* hako_domain_reset instead of a read */
};

/* In a child, so that a hang is a test failure and not a hung test program. */
static void child_read_or_reset(void *p)
{
	struct bounded_args *a = p;
	hako_domain_t *d;
	hako_channel_t *ch;
	HTU_CHECK_RC(hako_domain_open(a->name, &d), 0);
	if (a->reset) {
		/* The held channel is left as it is; the reset itself completes. */
		HTU_CHECK_RC(hako_domain_reset(d), 0);
		HTU_CHECK_RC(hako_domain_state(d), HAKO_STATE_STOPPED);
	} else {
		uint8_t buf[128];
		hako_channel_info_t out[8];
		int n;
		HTU_CHECK_RC(hako_channel_lookup(d, "r", a->id, &ch), 0);
		HTU_CHECK_RC(hako_channel_read(ch, buf, sizeof(buf), NULL, NULL), HAKO_ECORRUPT);
		HTU_CHECK_RC(hako_channel_seq(ch), 0);
		HTU_CHECK_RC(hako_domain_list_channels(d, out, 8, &n), 0);
		HTU_CHECK_RC(n, 3);
	}
	hako_domain_close(d);
}

SETUP(both_buffers_odd)
static void test_both_buffers_odd(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	three_channels(f);
	/* Both buffers "being written", and no writer: only a corrupted segment looks so. */
	struct hakoi_channel *c = channel_slot(f, 0);
	atomic_fetch_or(&c->buf_seq[0], 1);
	atomic_fetch_or(&c->buf_seq[1], 1);
	struct bounded_args a = {f->name, 1, 0};
	pid_t pid = htu_fork(child_read_or_reset, &a);
	assert_true(pid > 0);
	assert_true(htu_join_child(pid, HTU_TIMEOUT_USEC));
}

SETUP(writer_word_live_pid)
static void test_writer_word_live_pid(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	three_channels(f);
	/* The writer lock names a live process that is no writer (this one): a reset (which
	 * rewinds every channel as a writer) must not wait for it for ever. */
	atomic_store(&channel_slot(f, 0)->wlock, (uint32_t)getpid());
	struct bounded_args a = {f->name, 1, 1};
	pid_t pid = htu_fork(child_read_or_reset, &a);
	assert_true(pid > 0);
	assert_true(htu_join_child(pid, HTU_TIMEOUT_USEC));
}

static void child_list_assets(void *p)
{
	hako_domain_t *d;
	hako_asset_info_t out[4];
	int n = 0;
	HTU_CHECK_RC(hako_domain_open(p, &d), 0);
	HTU_CHECK_RC(hako_domain_list_assets(d, out, 4, &n), 0);
	HTU_CHECK_RC(n, 2);
	hako_domain_close(d);
}

SETUP(asset_clock_extremes)
static void test_asset_clock_extremes(void **state)
{
	struct fx *f = *state;
	create_and_map(f);
	register_two(f);
	/* Times no run can reach: the lag (T_c - t_i) and the heartbeat age (now - heartbeat) of
	 * a listing must not overflow (UB, which ends the sanitizer build: so in a child). */
	struct hakoi_asset *a = asset_slot(f, hako_member_id(f->m[0]));
	atomic_store(&a->time_usec, INT64_MIN);
	atomic_store(&a->heartbeat, INT64_MIN);
	a = asset_slot(f, hako_member_id(f->m[1]));
	atomic_store(&a->time_usec, INT64_MIN + 1);
	atomic_store(&hdr(f)->world_time, INT64_MAX);
	pid_t pid = htu_fork(child_list_assets, f->name);
	assert_true(pid > 0);
	assert_true(htu_join_child(pid, HTU_TIMEOUT_USEC));
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup_##name, teardown)

int main(void)
{
	htu_init();
	/* The refusals are logged at error level; the tests read them. */
	hako_log_set_level(HAKO_LOG_ERROR);
	const struct CMUnitTest tests[] = {
	    T(asset_hwm_huge),
	    T(channel_count_huge),
	    T(arena_used_huge),
	    T(header_fields),
	    T(header_name),
	    T(layout_version),
	    T(event_log),
	    T(truncated),
	    T(planted_garbage),
	    T(planted_zeros),
	    T(planted_empty),
	    T(channel_entry),
	    T(channel_index),
	    T(asset_name_unterminated),
	    T(foreign_owner),
	    T(lock_held_by_stopped_process),
	    T(lock_word_garbage),
	    T(both_buffers_odd),
	    T(writer_word_live_pid),
	    T(asset_clock_extremes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
