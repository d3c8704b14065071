/* The storage comm: Hakoniwa's "storage" protocol, PDU frames kept in a file (ep_comm.h).
 *
 * The file is Hakoniwa's layout (hakoniwa-pdu-endpoint's storage format, version 1), so a file
 * written by either is read by the other. Little-endian, a 56-byte header:
 *   @0 magic u32 0x53445048 ("HPDS"), @4 version u16 = 1, @6 mode u16 (1 queue, 2 latest),
 *   @8 packet_version u16 (1 or 2: the frames' version), @10 flags u16, @12 reserved u16,
 *   @16 reserved u32, @24 key_count u64, @32 index_offset u64, @40 data_offset u64,
 *   @48 file_size u64.
 * queue: the header (key_count 0, data_offset 56), then records [u32 frame length][frame]
 *   appended in the order they were sent; the header's file_size is rewritten after each.
 * latest: the header, key_count index entries of 160 bytes from index_offset (56):
 *   @0 robot name char[128], @128 channel_id u32, @132 reserved u32, @136 timestamp_ns u64
 *   (wall clock of the last write; 0 = never written), @144 packet_offset u64,
 *   @152 packet_size u32, @156 reserved u32;
 *   then one frame slot per entry, from data_offset. The entries are every PDU of the
 *   endpoint's pdudef, ordered by robot name (bytes) then channel id; a slot holds the frame of
 *   a PDU of its pdudef size, zeros until written; a write overwrites it and its timestamp.
 *
 * Sending ("out", "inout") appends (queue) or overwrites (latest), from the caller's thread
 * under the comm's lock. Receiving ("in", "inout") is a thread that reads what the file holds
 * at start, then what is appended or overwritten, woken by inotify (no polling while nothing
 * changes but a look every second, for writes inotify does not see; a file renamed over the
 * path is not followed): queue delivers
 * every record once, in order; latest delivers an entry each time its timestamp changes. An
 * "inout" comm reads its own writes too, as Hakoniwa's does.
 *
 * A file is read as untrusted: every length and offset is checked against the file's size and
 * the frame limit before use. A record cut off at the end (a writer in the middle of one, or a
 * crash) is waited for; a malformed one is logged once with its offset and reading stops. */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ep_comm.h"
#include "hako/frame.h"
#include "hako/log.h"

#define ST_MAGIC       0x53445048u
#define ST_VERSION     1u
#define ST_MODE_QUEUE  1u
#define ST_MODE_LATEST 2u
#define ST_HEADER_SIZE 56u
#define ST_ENTRY_SIZE  160u
#define ST_NAME_SIZE   128u
#define ST_RESCAN_MS   1000
#define ST_MAX_FRAME   ((uint64_t)HAKO_ENDPOINT_MAX_BODY + HAKO_FRAME_V2_HEADER_SIZE)
#define ST_MAX_KEYS    (1u << 20)

typedef hako_comm_storage_options_t st_opts_t;

typedef struct st_entry {
	hako_pdu_key_t key;
	uint64_t offset;    /* the frame slot */
	uint32_t size;      /* the frame's bytes */
	uint64_t timestamp; /* as last written or read */
} st_entry_t;

typedef struct storage_comm {
	hakoi_comm_ctx_t ctx;
	const hako_comm_config_t *cfg;
	const st_opts_t *opt;
	hako_frame_version_t ver;
	int fd;
	pthread_mutex_t lock; /* fd writes, end, the entries' timestamps on the send side */
	uint64_t end;         /* queue: where the next record goes */
	uint64_t data_offset;
	st_entry_t *entries; /* latest: sorted by key */
	size_t entry_count;
	uint8_t *buf; /* send: a frame */
	size_t buf_cap;

	/* receiving */
	pthread_t thread;
	int running;
	int wake_fd;
	uint64_t read_at; /* queue: the next record to read */
	uint64_t *seen;   /* latest: the timestamp of each entry last delivered */
	uint8_t *rbuf;
	size_t rbuf_cap;
	int broken; /* a malformed record: reading stopped */
	atomic_int io_logged;
} storage_comm_t;

/* ---- little-endian fields ---- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++) {
		p[i] = (uint8_t)(v >> (8 * i));
	}
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		p[i] = (uint8_t)(v >> (8 * i));
	}
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t w = pwrite(fd, p, len, (off_t)off);
		if (w < 0 && errno == EINTR) {
			continue;
		}
		if (w <= 0) {
			return -1;
		}
		p += w;
		len -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* 1 read, 0 short (the file ends first), -1 error. */
static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t r = pread(fd, p, len, (off_t)off);
		if (r < 0 && errno == EINTR) {
			continue;
		}
		if (r < 0) {
			return -1;
		}
		if (r == 0) {
			return 0;
		}
		p += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t file_size(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

static void header_bytes(const storage_comm_t *s, uint64_t size, uint8_t h[ST_HEADER_SIZE])
{
	memset(h, 0, ST_HEADER_SIZE);
	put32(h, ST_MAGIC);
	put16(h + 4, ST_VERSION);
	put16(h + 6, s->opt->mode == HAKO_STORAGE_LATEST ? ST_MODE_LATEST : ST_MODE_QUEUE);
	put16(h + 8, (uint16_t)s->ver);
	put64(h + 24, s->entry_count);
	put64(h + 32, ST_HEADER_SIZE);
	put64(h + 40, s->data_offset);
	put64(h + 48, size);
}

static int key_cmp(const hako_pdu_key_t *a, const hako_pdu_key_t *b)
{
	int c = strcmp(a->robot, b->robot);
	if (c != 0) {
		return c;
	}
	return a->channel_id < b->channel_id ? -1 : a->channel_id > b->channel_id;
}

static int entry_cmp(const void *a, const void *b)
{
	return key_cmp(&((const st_entry_t *)a)->key, &((const st_entry_t *)b)->key);
}

static st_entry_t *find_entry(storage_comm_t *s, const hako_pdu_key_t *key)
{
	st_entry_t probe;
	probe.key = *key;
	return bsearch(&probe, s->entries, s->entry_count, sizeof(probe), entry_cmp);
}

/* ---- opening the file ---- */

static int fail_file(hako_error_t *err, int code, const storage_comm_t *s, const char *what)
{
	return hako_error_set(err, code, s->cfg->path, 0, 0, "storage file %s: %s", s->opt->path,
	                      what);
}

/* latest: the entries of the pdudef, sorted, with their slots. */
static int make_entries(storage_comm_t *s, hako_error_t *err)
{
	const hako_pdudef_t *def = s->ctx.pdudef;
	if (def == NULL) {
		return hako_error_set(err, HAKO_EINVAL, s->cfg->path, 0, 0,
		                      "storage mode \"latest\" needs the endpoint's pdudef "
		                      "(pdu_def_path): its slots are the pdudef's PDUs");
	}
	size_t n = 0;
	for (size_t i = 0; i < def->robot_count; i++) {
		n += def->robots[i].pdu_count;
	}
	if (n == 0 || n > ST_MAX_KEYS) {
		return hako_error_set(err, HAKO_EINVAL, s->cfg->path, 0, 0,
		                      "storage mode \"latest\": the pdudef %s has %zu PDUs (1..%u)",
		                      def->path, n, ST_MAX_KEYS);
	}
	s->entries = calloc(n, sizeof(*s->entries));
	if (s->entries == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, s->cfg->path, 0, 0, "out of memory");
	}
	for (size_t i = 0; i < def->robot_count; i++) {
		const hako_pdudef_robot_t *r = &def->robots[i];
		for (size_t j = 0; j < r->pdu_count; j++) {
			st_entry_t *e = &s->entries[s->entry_count++];
			snprintf(e->key.robot, sizeof(e->key.robot), "%s", r->name);
			e->key.channel_id = r->pdus[j].channel_id;
			e->size = (uint32_t)hako_frame_size(s->ver, r->name, r->pdus[j].pdu_size);
			if (e->size == 0 || strlen(r->name) >= ST_NAME_SIZE) {
				return hako_error_set(
				    err, HAKO_EINVAL, s->cfg->path, 0, 0,
				    "storage: PDU %s/%d of %zu bytes does not fit a "
				    "frame",
				    r->name, (int)r->pdus[j].channel_id,
				    (size_t)r->pdus[j].pdu_size);
			}
		}
	}
	qsort(s->entries, s->entry_count, sizeof(*s->entries), entry_cmp);
	uint64_t off = ST_HEADER_SIZE + (uint64_t)s->entry_count * ST_ENTRY_SIZE;
	s->data_offset = off;
	for (size_t i = 0; i < s->entry_count; i++) {
		if (i > 0 && entry_cmp(&s->entries[i - 1], &s->entries[i]) == 0) {
			return hako_error_set(err, HAKO_EINVAL, s->cfg->path, 0, 0,
			                      "storage: the pdudef names %s/%d twice",
			                      s->entries[i].key.robot,
			                      (int)s->entries[i].key.channel_id);
		}
		s->entries[i].offset = off;
		off += s->entries[i].size;
	}
	s->end = off;
	return 0;
}

static void entry_bytes(const st_entry_t *e, uint8_t b[ST_ENTRY_SIZE])
{
	memset(b, 0, ST_ENTRY_SIZE);
	memcpy(b, e->key.robot, strnlen(e->key.robot, ST_NAME_SIZE - 1));
	put32(b + 128, (uint32_t)e->key.channel_id);
	put64(b + 136, e->timestamp);
	put64(b + 144, e->offset);
	put32(b + 152, e->size);
}

/* A new file: the header, and for latest the entries and zero PDUs in their frames. */
static int create_file(storage_comm_t *s, hako_error_t *err)
{
	uint8_t h[ST_HEADER_SIZE];
	header_bytes(s, s->end, h);
	if (pwrite_all(s->fd, h, sizeof(h), 0) != 0) {
		return fail_file(err, HAKO_EIO, s, strerror(errno));
	}
	for (size_t i = 0; i < s->entry_count; i++) {
		st_entry_t *e = &s->entries[i];
		uint8_t b[ST_ENTRY_SIZE];
		entry_bytes(e, b);
		size_t body = e->size - (hako_frame_size(s->ver, e->key.robot, 0));
		uint8_t *frame = calloc(1, e->size);
		uint8_t *zero = calloc(1, body > 0 ? body : 1);
		hako_frame_t f = {.channel_id = e->key.channel_id,
		                  .request_type = HAKO_FRAME_PDU_DATA,
		                  .body = zero,
		                  .body_len = (uint32_t)body};
		snprintf(f.robot, sizeof(f.robot), "%s", e->key.robot);
		size_t len = 0;
		int r = frame == NULL || zero == NULL
		            ? HAKO_ENOMEM
		            : hako_frame_encode(s->ver, &f, frame, e->size, &len);
		if (r == 0 && (pwrite_all(s->fd, b, sizeof(b),
		                          ST_HEADER_SIZE + (uint64_t)i * ST_ENTRY_SIZE) != 0 ||
		               pwrite_all(s->fd, frame, len, e->offset) != 0)) {
			r = HAKO_EIO;
		}
		free(frame);
		free(zero);
		if (r != 0) {
			return fail_file(err, r, s,
			                 r == HAKO_EIO ? strerror(errno) : hako_strerror(r));
		}
	}
	return 0;
}

/* An existing file: its header, and for latest its entries against the pdudef's. */
static int check_file(storage_comm_t *s, uint64_t size, hako_error_t *err)
{
	uint8_t h[ST_HEADER_SIZE];
	if (size < ST_HEADER_SIZE || pread_all(s->fd, h, sizeof(h), 0) != 1) {
		return fail_file(err, HAKO_EPROTO, s, "shorter than the 56-byte header");
	}
	unsigned mode = s->opt->mode == HAKO_STORAGE_LATEST ? ST_MODE_LATEST : ST_MODE_QUEUE;
	char why[HAKO_NAME_MAX + 200];
	if (get32(h) != ST_MAGIC) {
		snprintf(why, sizeof(why), "not a storage file (magic 0x%08x, expected 0x%08x)",
		         get32(h), ST_MAGIC);
	} else if (get16(h + 4) != ST_VERSION) {
		snprintf(why, sizeof(why), "format version %u (this hako reads %u)", get16(h + 4),
		         ST_VERSION);
	} else if (get16(h + 6) != mode) {
		snprintf(why, sizeof(why), "a file of mode %s, the comm file says %s",
		         get16(h + 6) == ST_MODE_LATEST  ? "\"latest\""
		         : get16(h + 6) == ST_MODE_QUEUE ? "\"queue\""
		                                         : "(unknown)",
		         mode == ST_MODE_LATEST ? "\"latest\"" : "\"queue\"");
	} else if (get16(h + 8) != (uint16_t)s->ver) {
		snprintf(why, sizeof(why), "frames of version v%u, the comm file says v%d",
		         get16(h + 8), (int)s->ver);
	} else if (mode == ST_MODE_QUEUE &&
	           (get64(h + 40) < ST_HEADER_SIZE || get64(h + 40) > size)) {
		snprintf(why, sizeof(why), "data_offset %llu outside the file (%llu bytes)",
		         (unsigned long long)get64(h + 40), (unsigned long long)size);
	} else if (mode == ST_MODE_LATEST &&
	           (get64(h + 24) != s->entry_count || get64(h + 32) != ST_HEADER_SIZE ||
	            get64(h + 40) != s->data_offset || size < s->end)) {
		snprintf(why, sizeof(why),
		         "%llu PDUs (the pdudef has %zu), or its layout is not the pdudef's",
		         (unsigned long long)get64(h + 24), s->entry_count);
	} else {
		why[0] = '\0';
	}
	if (why[0] != '\0') {
		return fail_file(err, HAKO_EPROTO, s, why);
	}
	if (mode == ST_MODE_QUEUE) {
		s->data_offset = get64(h + 40);
		return 0;
	}
	for (size_t i = 0; i < s->entry_count; i++) {
		st_entry_t *e = &s->entries[i];
		uint8_t b[ST_ENTRY_SIZE];
		if (pread_all(s->fd, b, sizeof(b), ST_HEADER_SIZE + (uint64_t)i * ST_ENTRY_SIZE) !=
		    1) {
			return fail_file(err, HAKO_EPROTO, s, "its index is cut off");
		}
		if (memchr(b, 0, ST_NAME_SIZE) == NULL ||
		    strcmp((const char *)b, e->key.robot) != 0 ||
		    (int32_t)get32(b + 128) != e->key.channel_id || get64(b + 144) != e->offset ||
		    get32(b + 152) != e->size) {
			snprintf(why, sizeof(why),
			         "index entry %zu is not %s/%d at offset %llu (%u bytes) as the "
			         "pdudef makes it",
			         i, e->key.robot, (int)e->key.channel_id,
			         (unsigned long long)e->offset, e->size);
			return fail_file(err, HAKO_EPROTO, s, why);
		}
		e->timestamp = get64(b + 136);
	}
	return 0;
}

/* queue, for appending: the end of the last whole record. A record cut off is refused: the
 * file did not end cleanly, and appending after it would hide the gap. */
static int find_queue_end(storage_comm_t *s, uint64_t size, hako_error_t *err)
{
	uint64_t at = s->data_offset;
	while (at < size) {
		uint8_t l[4];
		uint64_t len = 0;
		if (size - at >= 4 && pread_all(s->fd, l, 4, at) == 1) {
			len = get32(l);
		}
		if (size - at < 4 || len == 0 || len > ST_MAX_FRAME || len > size - at - 4) {
			char why[160];
			snprintf(
			    why, sizeof(why),
			    "the record at offset %llu is cut off or malformed (length %llu, %llu "
			    "bytes left): the file did not end cleanly",
			    (unsigned long long)at, (unsigned long long)len,
			    (unsigned long long)(size - at));
			return fail_file(err, HAKO_EPROTO, s, why);
		}
		at += 4 + len;
	}
	s->end = at;
	return 0;
}

static int storage_open(const hakoi_comm_ctx_t *ctx, void **impl, hako_error_t *err)
{
	const hako_comm_config_t *cfg = ctx->cfg;
	storage_comm_t *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, cfg->path, 0, 0, "out of memory");
	}
	s->ctx = *ctx;
	s->cfg = cfg;
	s->opt = cfg->opts;
	s->ver = cfg->raw_version == 1 ? HAKO_FRAME_V1 : HAKO_FRAME_V2;
	s->fd = -1;
	s->wake_fd = -1;
	s->data_offset = ST_HEADER_SIZE;
	s->end = ST_HEADER_SIZE;
	pthread_mutex_init(&s->lock, NULL);
	int r = 0;
	if (s->opt->mode == HAKO_STORAGE_LATEST && (r = make_entries(s, err)) != 0) {
		goto fail;
	}
	int writes = cfg->direction != HAKO_COMM_IN;
	s->fd = open(s->opt->path, (writes ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, 0644);
	if (s->fd < 0) {
		r = fail_file(err, errno == ENOENT ? HAKO_ENOENT : HAKO_EIO, s,
		              errno == ENOENT
		                  ? "does not exist (direction \"in\" reads a file that "
		                    "a writer made)"
		                  : strerror(errno));
		goto fail;
	}
	uint64_t size = file_size(s->fd);
	if (size == 0 && writes) {
		r = create_file(s, err);
	} else {
		r = check_file(s, size, err);
		if (r == 0 && writes && s->opt->mode == HAKO_STORAGE_QUEUE) {
			r = find_queue_end(s, size, err);
		}
	}
	if (r != 0) {
		goto fail;
	}
	*impl = s;
	return 0;
fail:
	if (s->fd >= 0) {
		close(s->fd);
	}
	free(s->entries);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return r;
}

/* ---- sending ---- */

static void io_failed(storage_comm_t *s, const char *what)
{
	if (!atomic_exchange(&s->io_logged, 1)) {
		HAKO_WARN("endpoint '%s': storage file %s: %s: %s (logged once)", s->ctx.ep_name,
		          s->opt->path, what, strerror(errno));
	}
}

static int storage_send(void *impl, const hako_pdu_key_t *key, const void *data, size_t len)
{
	storage_comm_t *s = impl;
	hakoi_ep_counters_t *ctr = s->ctx.ctr;
	if (s->cfg->direction == HAKO_COMM_IN) {
		hakoi_count(&ctr->send_dropped, 1);
		return HAKO_EPERM;
	}
	size_t n = len <= UINT32_MAX ? hako_frame_size(s->ver, key->robot, (uint32_t)len) : 0;
	if (n == 0 || n > UINT32_MAX) {
		hakoi_count(&ctr->send_dropped, 1);
		return HAKO_ETOOBIG;
	}
	pthread_mutex_lock(&s->lock);
	int r = 0;
	st_entry_t *e = NULL;
	if (s->opt->mode == HAKO_STORAGE_LATEST) {
		e = find_entry(s, key);
		if (e == NULL || e->size != n) {
			pthread_mutex_unlock(&s->lock);
			hakoi_count(&ctr->send_dropped, 1);
			return e == NULL ? HAKO_ENOENT : HAKO_ESIZE;
		}
	}
	if (s->buf_cap < n + 4) {
		uint8_t *b = realloc(s->buf, n + 4);
		if (b == NULL) {
			pthread_mutex_unlock(&s->lock);
			hakoi_count(&ctr->send_dropped, 1);
			return HAKO_ENOMEM;
		}
		s->buf = b;
		s->buf_cap = n + 4;
	}
	hako_frame_t f = {.channel_id = key->channel_id,
	                  .request_type = HAKO_FRAME_PDU_DATA,
	                  .body = data,
	                  .body_len = (uint32_t)len};
	snprintf(f.robot, sizeof(f.robot), "%s", key->robot);
	size_t flen = 0;
	r = hako_frame_encode(s->ver, &f, s->buf + 4, n, &flen);
	if (r == 0 && e != NULL) {
		uint8_t b[ST_ENTRY_SIZE];
		e->timestamp = now_ns();
		entry_bytes(e, b);
		size_t i = (size_t)(e - s->entries);
		if (pwrite_all(s->fd, s->buf + 4, flen, e->offset) != 0 ||
		    pwrite_all(s->fd, b, sizeof(b), ST_HEADER_SIZE + (uint64_t)i * ST_ENTRY_SIZE) !=
		        0) {
			io_failed(s, "write");
			r = HAKO_EIO;
		}
	} else if (r == 0) {
		uint8_t h[ST_HEADER_SIZE];
		put32(s->buf, (uint32_t)flen);
		header_bytes(s, s->end + 4 + flen, h);
		if (pwrite_all(s->fd, s->buf, 4 + flen, s->end) != 0 ||
		    pwrite_all(s->fd, h, sizeof(h), 0) != 0) {
			io_failed(s, "append");
			r = HAKO_EIO;
		} else {
			s->end += 4 + flen;
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (r != 0) {
		hakoi_count(&ctr->send_dropped, 1);
		return r;
	}
	hakoi_count(&ctr->frames_out, 1);
	hakoi_count(&ctr->bytes_out, flen);
	return 0;
}

/* ---- receiving ---- */

static int rbuf_fit(storage_comm_t *s, size_t n)
{
	if (s->rbuf_cap >= n) {
		return 0;
	}
	uint8_t *b = realloc(s->rbuf, n);
	if (b == NULL) {
		return -1;
	}
	s->rbuf = b;
	s->rbuf_cap = n;
	return 0;
}

static void broken(storage_comm_t *s, uint64_t at, const char *why)
{
	s->broken = 1;
	hakoi_count(&s->ctx.ctr->rejected, 1);
	HAKO_ERROR("endpoint '%s': storage file %s: offset %llu: %s; nothing after it is read",
	           s->ctx.ep_name, s->opt->path, (unsigned long long)at, why);
}

static void deliver_frame(storage_comm_t *s, size_t len, uint64_t at)
{
	hako_frame_t fr;
	hako_error_t e;
	hako_error_clear(&e);
	if (hako_frame_decode(s->ver, s->rbuf, len, HAKO_ENDPOINT_MAX_BODY, &fr, &e) != 0) {
		hakoi_count(&s->ctx.ctr->rejected, 1);
		HAKO_WARN("endpoint '%s': storage file %s: the frame at offset %llu: %s (skipped)",
		          s->ctx.ep_name, s->opt->path, (unsigned long long)at, e.message);
		return;
	}
	if (fr.request_type != HAKO_FRAME_PDU_DATA) {
		hakoi_count(&s->ctx.ctr->recv_ignored, 1);
		return;
	}
	hako_pdu_key_t key;
	memset(&key, 0, sizeof(key));
	snprintf(key.robot, sizeof(key.robot), "%s", fr.robot);
	key.channel_id = fr.channel_id;
	s->ctx.deliver(s->ctx.ep, &key, fr.body, fr.body_len);
}

static void read_queue(storage_comm_t *s)
{
	uint64_t size = file_size(s->fd);
	while (!s->broken && s->read_at < size) {
		uint8_t l[4];
		if (size - s->read_at < 4 || pread_all(s->fd, l, 4, s->read_at) != 1) {
			return; /* the writer is in the middle of the record */
		}
		uint64_t len = get32(l);
		if (len == 0 || len > ST_MAX_FRAME) {
			broken(s, s->read_at,
			       len == 0 ? "a record of length 0"
			                : "a record longer than a frame can be");
			return;
		}
		if (len > size - s->read_at - 4) {
			return; /* not all there yet */
		}
		if (rbuf_fit(s, (size_t)len) != 0) {
			broken(s, s->read_at, "out of memory");
			return;
		}
		int r = pread_all(s->fd, s->rbuf, (size_t)len, s->read_at + 4);
		if (r != 1) {
			if (r < 0) {
				io_failed(s, "read");
			}
			return;
		}
		deliver_frame(s, (size_t)len, s->read_at);
		s->read_at += 4 + len;
	}
}

static void read_latest(storage_comm_t *s)
{
	for (size_t i = 0; i < s->entry_count && !s->broken; i++) {
		const st_entry_t *e = &s->entries[i];
		uint8_t b[ST_ENTRY_SIZE];
		if (pread_all(s->fd, b, sizeof(b), ST_HEADER_SIZE + (uint64_t)i * ST_ENTRY_SIZE) !=
		    1) {
			return;
		}
		uint64_t ts = get64(b + 136);
		if (ts == 0 || ts == s->seen[i]) {
			continue;
		}
		if (get64(b + 144) != e->offset || get32(b + 152) != e->size) {
			broken(s, ST_HEADER_SIZE + (uint64_t)i * ST_ENTRY_SIZE,
			       "an index entry changed its slot");
			return;
		}
		if (rbuf_fit(s, e->size) != 0 ||
		    pread_all(s->fd, s->rbuf, e->size, e->offset) != 1) {
			return;
		}
		s->seen[i] = ts;
		deliver_frame(s, e->size, e->offset);
	}
}

static void *reader(void *arg)
{
	storage_comm_t *s = arg;
	int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (in >= 0 && inotify_add_watch(in, s->opt->path, IN_MODIFY | IN_CLOSE_WRITE) < 0) {
		close(in);
		in = -1;
	}
	for (;;) {
		if (s->opt->mode == HAKO_STORAGE_LATEST) {
			read_latest(s);
		} else {
			read_queue(s);
		}
		struct pollfd p[2] = {{.fd = s->wake_fd, .events = POLLIN},
		                      {.fd = in, .events = POLLIN}};
		int n = poll(p, in >= 0 ? 2 : 1, ST_RESCAN_MS);
		if (n > 0 && (p[0].revents & POLLIN) != 0) {
			break;
		}
		if (n > 0 && in >= 0 && (p[1].revents & POLLIN) != 0) {
			char ev[4096];
			while (read(in, ev, sizeof(ev)) > 0) {
			}
		}
	}
	if (in >= 0) {
		close(in);
	}
	return NULL;
}

static int storage_start(void *impl, hako_domain_t *dom, hako_error_t *err)
{
	(void)dom;
	storage_comm_t *s = impl;
	if (s->cfg->direction == HAKO_COMM_OUT || s->running) {
		return 0;
	}
	s->read_at = s->data_offset;
	s->broken = 0;
	if (s->entry_count > 0) {
		free(s->seen);
		s->seen = calloc(s->entry_count, sizeof(*s->seen));
	}
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if ((s->entry_count > 0 && s->seen == NULL) || s->wake_fd < 0) {
		return hako_error_set(err, HAKO_ENOMEM, s->cfg->path, 0, 0,
		                      "storage: cannot start its reader");
	}
	if (pthread_create(&s->thread, NULL, reader, s) != 0) {
		close(s->wake_fd);
		s->wake_fd = -1;
		return hako_error_set(err, HAKO_ENOMEM, s->cfg->path, 0, 0,
		                      "storage: cannot start its reader thread");
	}
	s->running = 1;
	return 0;
}

static void storage_stop(void *impl)
{
	storage_comm_t *s = impl;
	if (!s->running) {
		return;
	}
	uint64_t one = 1;
	ssize_t w = write(s->wake_fd, &one, sizeof(one));
	(void)w;
	pthread_join(s->thread, NULL);
	close(s->wake_fd);
	s->wake_fd = -1;
	s->running = 0;
}

static void storage_close(void *impl)
{
	storage_comm_t *s = impl;
	storage_stop(s);
	if (s->fd >= 0) {
		close(s->fd);
	}
	free(s->entries);
	free(s->seen);
	free(s->buf);
	free(s->rbuf);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* ---- the comm file ---- */

static const char *const backend_names[] = {"file", NULL};
static const int backend_values[] = {0};
static const char *const mode_names[] = {"queue", "latest", NULL};
static const int mode_values[] = {HAKO_STORAGE_QUEUE, HAKO_STORAGE_LATEST};

static const hakoi_field_t storage_block_fields[] = {
    {.key = "backend",
     .kind = HAKOI_K_ENUM,
     HAKOI_COMM_AT(st_opts_t, backend),
     .names = backend_names,
     .values = backend_values},
    {.key = "mode",
     .kind = HAKOI_K_ENUM,
     HAKOI_COMM_AT(st_opts_t, mode),
     .names = mode_names,
     .values = mode_values},
    {.key = "path",
     .kind = HAKOI_K_PATH,
     .flags = HAKOI_F_REQUIRED,
     HAKOI_COMM_AT(st_opts_t, path)},
    HAKOI_END,
};

static const hakoi_field_t storage_fields[] = {
    HAKOI_COMM_COMMON_FIELDS,
    HAKOI_COMM_OBJECT("storage", HAKOI_F_REQUIRED, storage_block_fields),
    HAKOI_END,
};

static void storage_defaults(hako_comm_config_t *cc)
{
	st_opts_t *o = cc->opts;
	o->mode = HAKO_STORAGE_QUEUE;
}

const hako_comm_storage_options_t *hako_comm_storage_options(const hako_comm_config_t *cc)
{
	return cc != NULL && cc->protocol == HAKO_COMM_STORAGE ? cc->opts : NULL;
}

const hakoi_comm_t hakoi_comm_storage = {
    .name = "storage",
    .protocol = HAKO_COMM_STORAGE,
    .opts_size = sizeof(st_opts_t),
    .defaults = storage_defaults,
    .fields = storage_fields,
    .open = storage_open,
    .start = storage_start,
    .stop = storage_stop,
    .close = storage_close,
    .send = storage_send,
};
