/* The domain segment: create, attach, remove, and the one robust lock. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hako/log.h"
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
	int r = pthread_mutex_lock(&dom->hdr->lock);
	if (r == EOWNERDEAD) {
		/* The holder died inside a short critical section that only stores plain values:
		 * the data stays usable. */
		HAKO_WARN("domain '%s': a process died holding the lock; recovered", dom->name);
		pthread_mutex_consistent(&dom->hdr->lock);
		return 0;
	}
	return r == 0 ? 0 : HAKO_EIO;
}

void hakoi_unlock(hako_domain_t *dom)
{
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
	h->assets_off = off;
	off = align_up(off + (size_t)cfg->max_assets * sizeof(struct hakoi_asset), 4096);
	h->channels_off = off;
	off = align_up(off + (size_t)cfg->max_channels * sizeof(struct hakoi_channel), 4096);
	h->index_off = off;
	h->index_slots = slots;
	off = align_up(off + (size_t)slots * sizeof(int32_t), 4096);
	h->arena_off = off;
	h->arena_bytes = align_up(cfg->arena_bytes, 4096);
	h->segment_bytes = off + h->arena_bytes;
	h->max_assets = cfg->max_assets;
	h->max_channels = cfg->max_channels;
}

static int map_handle(hako_domain_t *dom, int fd, size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		return HAKO_EIO;
	}
	dom->fd = fd;
	dom->base = p;
	dom->size = size;
	dom->hdr = p;
	dom->assets = (struct hakoi_asset *)(dom->base + dom->hdr->assets_off);
	dom->channels = (struct hakoi_channel *)(dom->base + dom->hdr->channels_off);
	dom->index = (_Atomic int32_t *)(dom->base + dom->hdr->index_off);
	dom->arena = dom->base + dom->hdr->arena_off;
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
	dom->chan_cache = calloc(dom->hdr->max_channels, sizeof(*dom->chan_cache));
	return dom->chan_cache != NULL ? 0 : HAKO_ENOMEM;
}

/* Read the header of an existing segment: 0, or HAKO_EMAGIC / HAKO_EVERSION / HAKO_EIO. */
static int peek_header(int fd, struct hakoi_header *out)
{
	/* A creator may be between ftruncate and the magic store: give it a moment. */
	for (int tries = 0; tries < 100; tries++) {
		struct stat st;
		if (fstat(fd, &st) != 0) {
			return HAKO_EIO;
		}
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
		hako_domain_config_default(&defaults);
		cfg = &defaults;
	}
	if (cfg->max_assets < 1 || cfg->max_assets > 4096 || cfg->max_channels < 1 ||
	    cfg->max_channels > (1u << 24) || cfg->arena_bytes < 4096) {
		return HAKO_EINVAL;
	}
	int fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 && errno == EEXIST) {
		int old = shm_open(path, O_RDWR, 0);
		if (old < 0) {
			return HAKO_EIO;
		}
		struct hakoi_header h;
		r = peek_header(old, &h);
		close(old);
		if (r != 0) {
			HAKO_ERROR("domain '%s': %s is not a hako segment of layout %u (%s); "
			           "remove it with 'hako-cmd clean'",
			           name, path, HAKOI_LAYOUT_VERSION, hako_strerror(r));
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
		return errno == EEXIST ? HAKO_EBUSY : HAKO_EIO;
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
	r = map_handle(dom, fd, geo.segment_bytes);
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
		return errno == ENOENT ? HAKO_ENOENT : (errno == EACCES ? HAKO_EPERM : HAKO_EIO);
	}
	struct hakoi_header h;
	r = peek_header(fd, &h);
	if (r != 0) {
		HAKO_ERROR("domain '%s': %s is not a hako segment of layout %u (%s)", name, path,
		           HAKOI_LAYOUT_VERSION, hako_strerror(r));
		close(fd);
		return r;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < h.segment_bytes) {
		HAKO_ERROR("domain '%s': segment is shorter than its header says", name);
		close(fd);
		return HAKO_EMAGIC;
	}
	hako_domain_t *dom = alloc_handle(name);
	if (dom == NULL) {
		close(fd);
		return HAKO_ENOMEM;
	}
	r = map_handle(dom, fd, h.segment_bytes);
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
