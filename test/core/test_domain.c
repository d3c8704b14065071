/* Domain segments: create / open / close / remove, the segment header (mode, capacities, magic,
 * layout version) and the recovery of segments whose creator is dead. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hako/domain.h"
#include "hako_test_util.h"

#define HAKO_MAGIC_VALUE 0x4d444b48u /* "HKDM", offset 0 of the segment header */

struct fx {
	char name[HAKO_NAME_MAX];
	hako_domain_t *dom;
	hako_domain_t *dom2;
};

static hako_domain_config_t small_cfg(void)
{
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 4;
	cfg.max_channels = 8;
	cfg.arena_bytes = 1 << 20;
	return cfg;
}

static int setup(void **state, const char *test)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	htu_domain_name(test, f->name, sizeof(f->name));
	hako_domain_remove(f->name); /* a leftover of a killed earlier run with the same pid */
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	htu_kill_children();
	hako_domain_close(f->dom);
	hako_domain_close(f->dom2);
	htu_remove_domain(f->name);
	free(f);
	return 0;
}

#define SETUP(test)                                                                                \
	static int setup_##test(void **state)                                                      \
	{                                                                                          \
		return setup(state, #test);                                                        \
	}

/* Write `len` bytes of `fill` (and optionally a header prefix) as /dev/shm/hako.<name>. */
static void forge_segment(const char *name, const void *prefix, size_t prefix_len, int fill,
                          size_t len)
{
	char path[HAKO_NAME_MAX + 8];
	snprintf(path, sizeof(path), "/hako.%s", name);
	int fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	uint8_t *buf = malloc(len);
	assert_non_null(buf);
	memset(buf, fill, len);
	memcpy(buf, prefix, prefix_len);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	free(buf);
	close(fd);
}

SETUP(lifecycle)
static void test_lifecycle(void **state)
{
	struct fx *f = *state;
	hako_domain_config_t cfg = small_cfg();
	hako_domain_info_t info;

	assert_int_equal(hako_domain_open(f->name, &f->dom2), HAKO_ENOENT);
	assert_null(f->dom2);
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	assert_non_null(f->dom);
	assert_string_equal(hako_domain_name(f->dom), f->name);

	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
	assert_int_equal(hako_domain_get_info(f->dom2, &info), 0);
	assert_string_equal(info.name, f->name);
	assert_int_equal(info.layout_version, 3);
	assert_int_equal(info.state, HAKO_STATE_STOPPED);
	assert_int_equal(info.master_pid, getpid());
	assert_int_equal(info.master_alive, 1);
	assert_int_equal(info.asset_count, 0);
	assert_int_equal(info.channel_count, 0);
	assert_int_equal(info.world_time, 0);
	assert_int_equal(info.world_steps, 0);
	assert_string_equal(info.error_reason, "");
	assert_true(info.segment_bytes >= info.arena_bytes);
	assert_int_equal(hako_domain_state(f->dom2), HAKO_STATE_STOPPED);

	/* Both handles see the same memory. */
	hako_channel_t *a, *b;
	assert_int_equal(hako_channel_create(f->dom, "r", 1, 8, &a), 0);
	assert_int_equal(hako_channel_write(a, "12345678", 8), 0);
	assert_int_equal(hako_channel_lookup(f->dom2, "r", 1, &b), 0);
	char buf[8];
	assert_int_equal(hako_channel_read(b, buf, sizeof(buf), NULL, NULL), 0);
	assert_memory_equal(buf, "12345678", 8);

	hako_domain_close(f->dom2);
	f->dom2 = NULL;
	hako_domain_close(f->dom);
	f->dom = NULL;
	hako_domain_close(NULL);

	/* Closing does not remove: the segment is still there. */
	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
	hako_domain_close(f->dom2);
	f->dom2 = NULL;

	assert_int_equal(hako_domain_remove(f->name), 0);
	assert_int_equal(hako_domain_remove(f->name), HAKO_ENOENT);
	assert_int_equal(hako_domain_open(f->name, &f->dom2), HAKO_ENOENT);
}

SETUP(bad_names)
static void test_bad_names(void **state)
{
	(void)state;
	hako_domain_t *d = NULL;
	char longname[HAKO_NAME_MAX + 1];
	memset(longname, 'x', HAKO_NAME_MAX);
	longname[HAKO_NAME_MAX] = '\0';
	assert_int_equal(hako_domain_create("", NULL, &d), HAKO_EINVAL);
	assert_int_equal(hako_domain_create(NULL, NULL, &d), HAKO_EINVAL);
	assert_int_equal(hako_domain_create("a/b", NULL, &d), HAKO_EINVAL);
	assert_int_equal(hako_domain_create(longname, NULL, &d), HAKO_ENAMETOOLONG);
	assert_int_equal(hako_domain_open("", &d), HAKO_EINVAL);
	assert_int_equal(hako_domain_open(longname, &d), HAKO_ENAMETOOLONG);
	assert_int_equal(hako_domain_remove("a/b"), HAKO_EINVAL);
	assert_null(d);
}

SETUP(bad_config)
static void test_bad_config(void **state)
{
	struct fx *f = *state;
	hako_domain_config_t cfg = small_cfg();
	cfg.max_assets = 0;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), HAKO_EINVAL);
	cfg = small_cfg();
	cfg.max_channels = 0;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), HAKO_EINVAL);
	cfg = small_cfg();
	cfg.arena_bytes = 100;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), HAKO_EINVAL);
	assert_null(f->dom);
	/* Nothing was left behind by the refused creations. */
	assert_int_equal(hako_domain_open(f->name, &f->dom), HAKO_ENOENT);
}

SETUP(mode_0600)
static void test_mode_0600(void **state)
{
	struct fx *f = *state;
	hako_domain_config_t cfg = small_cfg();
	mode_t old = umask(0); /* the segment must be 0600 whatever the umask */
	int r = hako_domain_create(f->name, &cfg, &f->dom);
	umask(old);
	assert_int_equal(r, 0);
	char path[HAKO_NAME_MAX + 16];
	snprintf(path, sizeof(path), "/dev/shm/hako.%s", f->name);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, getuid());
}

SETUP(capacities_from_header)
static void test_capacities_from_header(void **state)
{
	struct fx *f = *state;
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	cfg.max_assets = 3;
	cfg.max_channels = 5;
	cfg.arena_bytes = 64 * 1024;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);

	hako_domain_info_t info;
	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
	assert_int_equal(hako_domain_get_info(f->dom2, &info), 0);
	assert_int_equal(info.max_assets, 3);
	assert_int_equal(info.max_channels, 5);
	assert_int_equal(info.arena_bytes, 64 * 1024);
	assert_int_equal(info.arena_used, 0);

	/* The attached handle enforces the header's capacities, not compiled-in ones. */
	hako_member_t *m[4] = {NULL};
	const char *names[] = {"a0", "a1", "a2", "a3"};
	for (int i = 0; i < 3; i++) {
		assert_int_equal(hako_member_register(f->dom2, names[i], 1000, &m[i]), 0);
	}
	assert_int_equal(hako_member_register(f->dom2, names[3], 1000, &m[3]), HAKO_ENOSPC);
	for (int i = 0; i < 5; i++) {
		hako_channel_t *ch;
		assert_int_equal(hako_channel_create(f->dom2, "robot", i, 16, &ch), 0);
	}
	hako_channel_t *ch;
	assert_int_equal(hako_channel_create(f->dom2, "robot", 5, 16, &ch), HAKO_ENOSPC);
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_int_equal(info.asset_count, 3);
	assert_int_equal(info.channel_count, 5);
	for (int i = 0; i < 3; i++) {
		hako_member_unregister(m[i]);
	}
}

SETUP(wrong_magic)
static void test_wrong_magic(void **state)
{
	struct fx *f = *state;
	forge_segment(f->name, "", 0, 0xa5, 4096);
	assert_int_equal(hako_domain_open(f->name, &f->dom), HAKO_EMAGIC);
	assert_null(f->dom);
	/* create neither attaches nor silently replaces a foreign object. */
	hako_domain_config_t cfg = small_cfg();
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), HAKO_EMAGIC);
	assert_null(f->dom);
	assert_int_equal(hako_domain_remove(f->name), 0);
}

SETUP(short_segment)
static void test_short_segment(void **state)
{
	struct fx *f = *state;
	forge_segment(f->name, "", 0, 0x5a, 16); /* shorter than any header */
	assert_int_equal(hako_domain_open(f->name, &f->dom), HAKO_EMAGIC);
	assert_null(f->dom);
}

SETUP(wrong_version)
static void test_wrong_version(void **state)
{
	struct fx *f = *state;
	uint32_t hdr[2] = {HAKO_MAGIC_VALUE, 999};
	forge_segment(f->name, hdr, sizeof(hdr), 0, 4096);
	assert_int_equal(hako_domain_open(f->name, &f->dom), HAKO_EVERSION);
	assert_null(f->dom);
	hako_domain_config_t cfg = small_cfg();
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), HAKO_EVERSION);
	assert_null(f->dom);
}

SETUP(truncated_segment)
static void test_truncated_segment(void **state)
{
	struct fx *f = *state;
	/* A header of this layout claiming a segment far longer than the object, from a creator
	 * that is not alive (pid 0). */
	uint32_t hdr[4] = {HAKO_MAGIC_VALUE, 3, 0, 0x100}; /* segment_bytes = 2^40 at offset 8 */
	forge_segment(f->name, hdr, sizeof(hdr), 0, 4096);
	assert_int_equal(hako_domain_open(f->name, &f->dom2), HAKO_ECORRUPT);
	assert_null(f->dom2);
	/* Nothing in a corrupted header can be trusted, its creator's pid neither: create refuses
	 * to replace it until it is removed (hako-cmd clean). */
	hako_domain_config_t cfg = small_cfg();
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), HAKO_ECORRUPT);
	assert_int_equal(hako_domain_remove(f->name), 0);
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
}

struct create_args {
	const char *name;
	int *ready; /* shared */
	int hold;   /* stay alive until killed */
};

static void child_create(void *p)
{
	struct create_args *a = p;
	hako_domain_config_t cfg = small_cfg();
	hako_domain_t *dom;
	HTU_CHECK_RC(hako_domain_create(a->name, &cfg, &dom), 0);
	hako_member_t *m;
	HTU_CHECK_RC(hako_member_register(dom, "left-behind", 1000, &m), 0);
	__atomic_store_n(a->ready, 1, __ATOMIC_SEQ_CST);
	while (a->hold) {
		pause();
	}
	_exit(0); /* neither removes nor closes */
}

SETUP(stale_segment_recreated)
static void test_stale_segment_recreated(void **state)
{
	struct fx *f = *state;
	int *ready = htu_shared_alloc(sizeof(int));
	assert_non_null(ready);
	struct create_args a = {f->name, ready, 0};
	pid_t pid = htu_fork(child_create, &a);
	assert_true(pid > 0);
	assert_true(htu_join_child(pid, HTU_TIMEOUT_USEC));
	assert_int_equal(*ready, 1);

	/* The segment outlived its creator, which is seen as dead. */
	hako_domain_info_t info;
	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
	assert_int_equal(hako_domain_get_info(f->dom2, &info), 0);
	assert_int_equal(info.master_pid, pid);
	assert_int_equal(info.master_alive, 0);
	assert_int_equal(info.asset_count, 1);
	hako_domain_close(f->dom2);
	f->dom2 = NULL;

	hako_domain_config_t cfg = small_cfg();
	cfg.max_assets = 2;
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	assert_int_equal(hako_domain_get_info(f->dom, &info), 0);
	assert_int_equal(info.master_pid, getpid());
	assert_int_equal(info.master_alive, 1);
	assert_int_equal(info.max_assets, 2);
	assert_int_equal(info.asset_count, 0); /* a fresh segment, not the old one */
	htu_shared_free(ready, sizeof(int));
}

SETUP(busy_while_creator_lives)
static void test_busy_while_creator_lives(void **state)
{
	struct fx *f = *state;
	hako_domain_config_t cfg = small_cfg();

	/* The creator is this very process. */
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom2), HAKO_EBUSY);
	assert_null(f->dom2);
	hako_domain_close(f->dom);
	f->dom = NULL;
	assert_int_equal(hako_domain_remove(f->name), 0);

	/* The creator is another live process; once it is dead the segment is recreated. */
	int *ready = htu_shared_alloc(sizeof(int));
	assert_non_null(ready);
	struct create_args a = {f->name, ready, 1};
	pid_t pid = htu_fork(child_create, &a);
	assert_true(pid > 0);
	int ok;
	HTU_WAIT_UNTIL(ok, __atomic_load_n(ready, __ATOMIC_SEQ_CST) == 1, HTU_TIMEOUT_USEC);
	assert_true(ok);
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), HAKO_EBUSY);
	assert_null(f->dom);
	/* The refused create left the live segment alone. */
	hako_domain_info_t info;
	assert_int_equal(hako_domain_open(f->name, &f->dom2), 0);
	assert_int_equal(hako_domain_get_info(f->dom2, &info), 0);
	assert_int_equal(info.master_pid, pid);
	assert_int_equal(info.master_alive, 1);
	assert_int_equal(info.asset_count, 1);

	htu_kill_child(pid);
	assert_int_equal(hako_domain_create(f->name, &cfg, &f->dom), 0);
	htu_shared_free(ready, sizeof(int));
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup_##name, teardown)

int main(void)
{
	htu_init();
	const struct CMUnitTest tests[] = {
	    T(lifecycle),
	    T(bad_names),
	    T(bad_config),
	    T(mode_0600),
	    T(capacities_from_header),
	    T(wrong_magic),
	    T(short_segment),
	    T(wrong_version),
	    T(truncated_segment),
	    T(stale_segment_recreated),
	    T(busy_while_creator_lives),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
