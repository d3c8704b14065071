/* The domain segment: create, attach, remove, and the one robust lock. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hako/log.h"
#include "hakoi/assert.h"
#include "internal.h"

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

int hakoi_valid_name(const char *name, size_t max)
{
	if (name == NULL || name[0] == '\0') {
		return HAKO_EINVAL;
	}
	if (strnlen(name, max) >= max) {
		return HAKO_ENAMETOOLONG;
	}
	return 0;
}

static int shm_path(const char *name, char *out, size_t len)
{
	int r = hakoi_valid_name(name, HAKO_NAME_MAX);
	if (r != 0) {
		return r;
	}
	if (strchr(name, '/') != NULL) {
		return HAKO_EINVAL;
	}
	snprintf(out, len, "/hako.%s", name);
	return 0;
}

const char *hako_domain_default_name(void)
{
	const char *d = getenv("HAKO_DOMAIN");
	return (d != NULL && d[0] != '\0') ? d : "default";
}

const char *hako_domain_name(const hako_domain_t *dom)
{
	return dom != NULL ? dom->name : "";
}

int hakoi_lock(hako_domain_t *dom)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += HAKOI_LOCK_TIMEOUT_USEC / 1000000;
	int r = pthread_mutex_timedlock(&dom->hdr->lock, &until);
	if (r == EOWNERDEAD) {
		/* The holder died inside a short critical section that only stores plain values:
		 * the data stays usable. */
		HAKO_WARN("domain '%s': a process died holding the lock; recovered", dom->name);
		pthread_mutex_consistent(&dom->hdr->lock);
		r = 0;
	}
	if (r == ETIMEDOUT) {
		HAKO_ERROR("domain '%s': its lock has been held for %d s; a process of the domain "
		           "is stopped or hung (or the segment is corrupted)",
		           dom->name, HAKOI_LOCK_TIMEOUT_USEC / 1000000);
		return HAKO_EBUSY;
	}
	if (r != 0) {
		return HAKO_EIO;
	}
	atomic_store_explicit(&dom->lock_holder, (uintptr_t)pthread_self(), memory_order_relaxed);
	return 0;
}

void hakoi_unlock(hako_domain_t *dom)
{
	HAKO_ASSERT(hakoi_lock_held(dom));
	/* Cleared before the unlock: the next holder's store comes after it. */
	atomic_store_explicit(&dom->lock_holder, 0, memory_order_relaxed);
	pthread_mutex_unlock(&dom->hdr->lock);
}

int hakoi_master_alive(hako_domain_t *dom)
{
	return hakoi_proc_alive(dom->hdr->creator_pid, dom->hdr->creator_start);
}

static void layout(const hako_domain_config_t *cfg, struct hakoi_header *h)
{
	uint32_t slots = 1;
	while (slots < 2 * cfg->max_channels) {
		slots <<= 1;
	}
	size_t off = align_up(sizeof(struct hakoi_header), 4096);
	h->waitsets_off = off;
	off = align_up(off + HAKO_WAITSET_MAX * sizeof(struct hakoi_waitslot), 4096);
	h->assets_off = off;
	off = align_up(off + (size_t)cfg->max_assets * sizeof(struct hakoi_asset), 4096);
	h->channels_off = off;
	off = align_up(off + (size_t)cfg->max_channels * sizeof(struct hakoi_channel), 4096);
	h->index_off = off;
	h->index_slots = slots;
	off = align_up(off + (size_t)slots * sizeof(int32_t), 4096);
	h->log_off = off;
	off = align_up(off + HAKOI_LOG_ENTRIES * sizeof(struct hakoi_log_entry), 4096);
	h->arena_off = off;
	h->arena_bytes = align_up(cfg->arena_bytes, 4096);
	h->segment_bytes = off + h->arena_bytes;
	h->max_assets = cfg->max_assets;
	h->max_channels = cfg->max_channels;
}

static int map_handle(hako_domain_t *dom, int fd, const struct hakoi_header *geo)
{
	void *p = mmap(NULL, geo->segment_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		return HAKO_EIO;
	}
	dom->fd = fd;
	dom->base = p;
	dom->size = geo->segment_bytes;
	dom->hdr = p;
	/* Offsets and counts from the copy that was checked, not from the live header. */
	dom->max_assets = geo->max_assets;
	dom->max_channels = geo->max_channels;
	dom->index_slots = geo->index_slots;
	dom->arena_bytes = geo->arena_bytes;
	dom->waitsets = (struct hakoi_waitslot *)(dom->base + geo->waitsets_off);
	dom->assets = (struct hakoi_asset *)(dom->base + geo->assets_off);
	dom->channels = (struct hakoi_channel *)(dom->base + geo->channels_off);
	dom->index = (_Atomic int32_t *)(dom->base + geo->index_off);
	dom->log = (struct hakoi_log_entry *)(dom->base + geo->log_off);
	dom->arena = dom->base + geo->arena_off;
	return 0;
}

/* Check a header read from an existing segment of `file_bytes` bytes: every capacity in range
 * and every offset where this layout version puts it, inside the file. 0, or HAKO_ECORRUPT with
 * the field named in why. Nothing in the segment is used before this passed. */
static int check_header(const struct hakoi_header *h, const char *name, uint64_t file_bytes,
                        char *why, size_t len)
{
	if (h->max_assets < 1 || h->max_assets > HAKO_MAX_ASSETS_LIMIT) {
		snprintf(why, len, "max_assets %u is not in [1, %u]", h->max_assets,
		         HAKO_MAX_ASSETS_LIMIT);
		return HAKO_ECORRUPT;
	}
	if (h->max_channels < 1 || h->max_channels > HAKO_MAX_CHANNELS_LIMIT) {
		snprintf(why, len, "max_channels %u is not in [1, %u]", h->max_channels,
		         HAKO_MAX_CHANNELS_LIMIT);
		return HAKO_ECORRUPT;
	}
	if (h->arena_bytes < 4096 || h->arena_bytes > HAKO_ARENA_BYTES_LIMIT ||
	    h->arena_bytes % 4096 != 0) {
		snprintf(why, len, "arena_bytes %llu is not a multiple of 4096 in [4096, 2^40]",
		         (unsigned long long)h->arena_bytes);
		return HAKO_ECORRUPT;
	}
	hako_domain_config_t cfg = {.max_assets = h->max_assets,
	                            .max_channels = h->max_channels,
	                            .arena_bytes = h->arena_bytes};
	struct hakoi_header want;
	memset(&want, 0, sizeof(want));
	layout(&cfg, &want);
	static const struct {
		const char *field;
		size_t off;
	} fields[] = {
	    {"waitsets_off", offsetof(struct hakoi_header, waitsets_off)},
	    {"assets_off", offsetof(struct hakoi_header, assets_off)},
	    {"channels_off", offsetof(struct hakoi_header, channels_off)},
	    {"index_off", offsetof(struct hakoi_header, index_off)},
	    {"log_off", offsetof(struct hakoi_header, log_off)},
	    {"arena_off", offsetof(struct hakoi_header, arena_off)},
	    {"segment_bytes", offsetof(struct hakoi_header, segment_bytes)},
	};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		uint64_t got, exp;
		memcpy(&got, (const char *)h + fields[i].off, sizeof(got));
		memcpy(&exp, (const char *)&want + fields[i].off, sizeof(exp));
		if (got != exp) {
			snprintf(why, len,
			         "%s is %llu, not %llu as the layout of %u assets, %u "
			         "channels and %llu arena bytes has it",
			         fields[i].field, (unsigned long long)got, (unsigned long long)exp,
			         h->max_assets, h->max_channels,
			         (unsigned long long)h->arena_bytes);
			return HAKO_ECORRUPT;
		}
	}
	if (h->index_slots != want.index_slots) {
		snprintf(why, len, "index_slots is %u, not %u", h->index_slots, want.index_slots);
		return HAKO_ECORRUPT;
	}
	if (h->segment_bytes > file_bytes || h->segment_bytes > SIZE_MAX) {
		snprintf(why, len, "the header says %llu bytes but the segment has %llu",
		         (unsigned long long)h->segment_bytes, (unsigned long long)file_bytes);
		return HAKO_ECORRUPT;
	}
	if (strnlen(h->name, sizeof(h->name)) >= sizeof(h->name) || strcmp(h->name, name) != 0) {
		snprintf(why, len, "it names another domain ('%.*s')", (int)sizeof(h->name) - 1,
		         h->name);
		return HAKO_ECORRUPT;
	}
	return 0;
}

/* A segment of another user: its owner's processes could rewrite what this process reads and
 * runs by (its clock, its PDUs). 0, or HAKO_EPERM (and *uid) unless HAKO_ALLOW_FOREIGN_DOMAIN=1. */
static int check_owner(int fd, const char *name, unsigned *uid)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		return HAKO_EIO;
	}
	*uid = (unsigned)st.st_uid;
	if (st.st_uid == geteuid()) {
		return 0;
	}
	const char *allow = getenv("HAKO_ALLOW_FOREIGN_DOMAIN");
	if (allow != NULL && strcmp(allow, "1") == 0) {
		HAKO_WARN("domain '%s': joining a segment owned by uid %u "
		          "(HAKO_ALLOW_FOREIGN_DOMAIN=1)",
		          name, *uid);
		return 0;
	}
	HAKO_ERROR("domain '%s': /dev/shm/hako.%s is owned by uid %u, not by you (uid %u); "
	           "set HAKO_ALLOW_FOREIGN_DOMAIN=1 to join it anyway",
	           name, name, *uid, (unsigned)geteuid());
	return HAKO_EPERM;
}

int hako_domain_owner(const char *name, unsigned *uid)
{
	char path[HAKO_NAME_MAX + 16];
	int r = shm_path(name, path + 8, sizeof(path) - 8);
	if (r != 0 || uid == NULL) {
		return r != 0 ? r : HAKO_EINVAL;
	}
	memcpy(path, "/dev/shm", 8);
	struct stat st;
	if (stat(path, &st) != 0) {
		return errno == ENOENT ? HAKO_ENOENT : HAKO_EIO;
	}
	*uid = (unsigned)st.st_uid;
	return 0;
}

static hako_domain_t *alloc_handle(const char *name)
{
	hako_domain_t *dom = calloc(1, sizeof(*dom));
	if (dom == NULL) {
		return NULL;
	}
	snprintf(dom->name, sizeof(dom->name), "%s", name);
	dom->fd = -1;
	pthread_mutex_init(&dom->cache_lock, NULL);
	return dom;
}

static int alloc_cache(hako_domain_t *dom)
{
	dom->chan_cache = calloc(dom->max_channels, sizeof(*dom->chan_cache));
	return dom->chan_cache != NULL ? 0 : HAKO_ENOMEM;
}

/* Read the header of an existing segment: 0, or HAKO_EMAGIC / HAKO_EVERSION / HAKO_EIO. */
static int peek_header(int fd, struct hakoi_header *out, uint64_t *file_bytes)
{
	/* A creator may be between ftruncate and the magic store: give it a moment. */
	for (int tries = 0; tries < 100; tries++) {
		struct stat st;
		if (fstat(fd, &st) != 0) {
			return HAKO_EIO;
		}
		*file_bytes = (uint64_t)st.st_size;
		if ((size_t)st.st_size >= sizeof(*out)) {
			ssize_t n = pread(fd, out, sizeof(*out), 0);
			if (n == (ssize_t)sizeof(*out) && out->magic == HAKOI_MAGIC) {
				return out->layout_version == HAKOI_LAYOUT_VERSION ? 0
				                                                   : HAKO_EVERSION;
			}
			if (n == (ssize_t)sizeof(*out) && out->magic != 0) {
				return HAKO_EMAGIC;
			}
		} else if (st.st_size > 0) {
			return HAKO_EMAGIC;
		}
		usleep(10000);
	}
	return HAKO_EMAGIC;
}

/* The header of an existing segment, checked: 0, or an error already reported. */
static int read_checked_header(int fd, const char *name, struct hakoi_header *h)
{
	uint64_t file_bytes = 0;
	char why[256] = "";
	int r = peek_header(fd, h, &file_bytes);
	if (r == 0) {
		r = check_header(h, name, file_bytes, why, sizeof(why));
	}
	if (r == HAKO_ECORRUPT) {
		HAKO_ERROR("domain '%s': /dev/shm/hako.%s is corrupted: %s; remove it with "
		           "'hako-cmd clean'",
		           name, name, why);
	} else if (r != 0) {
		HAKO_ERROR("domain '%s': /dev/shm/hako.%s is not a hako segment of layout %u (%s); "
		           "remove it with 'hako-cmd clean'",
		           name, name, HAKOI_LAYOUT_VERSION, hako_strerror(r));
	}
	return r;
}

/* shm_open of an existing segment failed with errno e. */
static int open_error(const char *name, int e)
{
	unsigned uid;
	if (e == ENOENT) {
		return HAKO_ENOENT;
	}
	if (e == EACCES && hako_domain_owner(name, &uid) == 0) {
		HAKO_ERROR("domain '%s': /dev/shm/hako.%s is owned by uid %u, not by you (uid %u)",
		           name, name, uid, (unsigned)geteuid());
		return HAKO_EPERM;
	}
	HAKO_ERROR("domain '%s': cannot open /dev/shm/hako.%s: %s", name, name, strerror(e));
	return e == EACCES ? HAKO_EPERM : HAKO_EIO;
}

static void init_header(hako_domain_t *dom, const hako_domain_config_t *cfg, const char *name)
{
	struct hakoi_header *h = dom->hdr;
	/* The fresh object is zero-filled: only non-zero fields are set. */
	h->layout_version = HAKOI_LAYOUT_VERSION;
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->creator_pid = getpid();
	h->creator_start = hakoi_proc_start_time(getpid());
	h->heartbeat_timeout_usec = cfg->heartbeat_timeout_usec;
	h->liveness_policy = cfg->liveness_policy;
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&h->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	atomic_store(&h->state, HAKO_STATE_STOPPED);
	atomic_store(&h->watch_beyond, INT64_MAX);
	atomic_store_explicit(&h->magic, HAKOI_MAGIC, memory_order_release);
}

int hako_domain_create(const char *name, const hako_domain_config_t *cfg, hako_domain_t **out)
{
	char path[HAKO_NAME_MAX + 8];
	hako_domain_config_t defaults;
	if (out == NULL) {
		return HAKO_EINVAL;
	}
	*out = NULL;
	int r = shm_path(name, path, sizeof(path));
	if (r != 0) {
		return r;
	}
	if (cfg == NULL) {
		if ((r = hako_domain_config_default(&defaults)) != 0) {
			return r;
		}
		cfg = &defaults;
	}
	if (cfg->max_assets < 1 || cfg->max_assets > HAKO_MAX_ASSETS_LIMIT ||
	    cfg->max_channels < 1 || cfg->max_channels > HAKO_MAX_CHANNELS_LIMIT ||
	    cfg->arena_bytes < 4096 || cfg->arena_bytes > HAKO_ARENA_BYTES_LIMIT) {
		return HAKO_EINVAL;
	}
	int fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 && errno == EEXIST) {
		int old = shm_open(path, O_RDWR, 0);
		if (old < 0) {
			return open_error(name, errno);
		}
		struct hakoi_header h;
		unsigned uid;
		/* Whose it is first: another user's segment is refused whatever it holds. */
		r = check_owner(old, name, &uid);
		if (r == 0) {
			r = read_checked_header(old, name, &h);
		}
		close(old);
		if (r != 0) {
			return r;
		}
		if (hakoi_proc_alive(h.creator_pid, h.creator_start)) {
			HAKO_ERROR("domain '%s' already has a conductor (pid %d)", name,
			           h.creator_pid);
			return HAKO_EBUSY;
		}
		HAKO_INFO("domain '%s': conductor pid %d is dead, recreating the segment", name,
		          h.creator_pid);
		shm_unlink(path);
		fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	}
	if (fd < 0) {
		return errno == EEXIST ? HAKO_EBUSY : open_error(name, errno);
	}
	fchmod(fd, 0600); /* whatever the umask */
	struct hakoi_header geo;
	memset(&geo, 0, sizeof(geo));
	layout(cfg, &geo);
	if (ftruncate(fd, (off_t)geo.segment_bytes) != 0) {
		HAKO_ERROR("domain '%s': cannot size the segment to %llu bytes: %s", name,
		           (unsigned long long)geo.segment_bytes, strerror(errno));
		close(fd);
		shm_unlink(path);
		return HAKO_ENOMEM;
	}
	/* Write the geometry before mapping so map_handle can compute the table addresses. */
	if (pwrite(fd, &geo, sizeof(geo), 0) != (ssize_t)sizeof(geo)) {
		close(fd);
		shm_unlink(path);
		return HAKO_EIO;
	}
	hako_domain_t *dom = alloc_handle(name);
	if (dom == NULL) {
		close(fd);
		shm_unlink(path);
		return HAKO_ENOMEM;
	}
	r = map_handle(dom, fd, &geo);
	if (r == 0) {
		r = alloc_cache(dom);
	}
	if (r != 0) {
		hako_domain_close(dom);
		shm_unlink(path);
		return r;
	}
	dom->is_creator = 1;
	init_header(dom, cfg, name);
	hakoi_log_event(dom, "domain created: %u assets, %u channels, %llu arena bytes",
	                cfg->max_assets, cfg->max_channels, (unsigned long long)geo.arena_bytes);
	HAKO_INFO("domain '%s' created: %u assets, %u channels, %llu arena bytes", name,
	          cfg->max_assets, cfg->max_channels, (unsigned long long)geo.arena_bytes);
	*out = dom;
	return 0;
}

int hako_domain_open(const char *name, hako_domain_t **out)
{
	char path[HAKO_NAME_MAX + 8];
	if (out == NULL) {
		return HAKO_EINVAL;
	}
	*out = NULL;
	int r = shm_path(name, path, sizeof(path));
	if (r != 0) {
		return r;
	}
	int fd = shm_open(path, O_RDWR, 0);
	if (fd < 0) {
		return open_error(name, errno);
	}
	struct hakoi_header h;
	unsigned uid;
	r = check_owner(fd, name, &uid);
	if (r == 0) {
		r = read_checked_header(fd, name, &h);
	}
	if (r != 0) {
		close(fd);
		return r;
	}
	hako_domain_t *dom = alloc_handle(name);
	if (dom == NULL) {
		close(fd);
		return HAKO_ENOMEM;
	}
	r = map_handle(dom, fd, &h);
	if (r == 0) {
		r = alloc_cache(dom);
	}
	if (r != 0) {
		hako_domain_close(dom);
		return r;
	}
	*out = dom;
	return 0;
}

void hako_domain_close(hako_domain_t *dom)
{
	if (dom == NULL) {
		return;
	}
	hakoi_channel_cache_free(dom);
	if (dom->base != NULL) {
		munmap(dom->base, dom->size);
	}
	if (dom->fd >= 0) {
		close(dom->fd);
	}
	pthread_mutex_destroy(&dom->cache_lock);
	free(dom);
}

int hako_domain_remove(const char *name)
{
	char path[HAKO_NAME_MAX + 8];
	int r = shm_path(name, path, sizeof(path));
	if (r != 0) {
		return r;
	}
	if (shm_unlink(path) != 0) {
		return errno == ENOENT ? HAKO_ENOENT : HAKO_EIO;
	}
	return 0;
}
