/* The fleet's RD configs (fleet_zones.h), read back by the RD library: zones at x = 0 between
 * two hosts, RD-Full zones across two named nodes, balance between two hosts (a split) and
 * among three (counts); and what the writers refuse: counts that do not add up to the fleet,
 * fewer than two or more than FLEET_MAX_HOSTS hosts, an RD-Full node list that is not
 * "west,east"; zones on a grid (2 x 2, and 3 x 2 across six named nodes) and the grids refused;
 * and their removal, which leaves other files alone. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fleet_zones.h"
#include "formation.h"
#include "hako/error.h"
#include "hako/rd.h"
#include "hako_test_util.h"

static char g_dir[256];

static int setup(void **state)
{
	(void)state;
	return htu_tmpdir(g_dir, sizeof(g_dir)) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	htu_remove_tmpdirs();
	return 0;
}

static hako_rd_config_t *load(const char *path)
{
	hako_rd_config_t *cfg = NULL;
	hako_error_t err;
	int r = hako_rd_config_load(path, &cfg, &err);
	if (r != 0) {
		char why[1200];
		fail_msg("%s", hako_error_format(&err, why, sizeof(why)));
	}
	return cfg;
}

/* How many EUs each node (1..n) owns at the start; 0 if an EU is not a candidate of every
 * node. */
static int first_owners(const hako_rd_config_t *cfg, size_t n, size_t *count)
{
	memset(count, 0, (n + 1) * sizeof(*count));
	for (size_t i = 0; i < cfg->eu_count; i++) {
		const hako_rd_eu_config_t *eu = &cfg->eus[i];
		if (eu->candidate_count != n || eu->initial_owner < 1 || eu->initial_owner > n) {
			return 0;
		}
		count[eu->initial_owner]++;
	}
	return 1;
}

static void test_zones(void **state)
{
	(void)state;
	char rd[600];
	assert_int_equal(fleet_zones_write_config(g_dir, 64, NULL, rd, sizeof(rd)), 0);
	hako_rd_config_t *cfg = load(rd);
	assert_int_equal(cfg->mode, HAKO_RD_MODE_LIGHT);
	assert_int_equal(cfg->node_count, 2);
	assert_int_equal(cfg->eu_count, 64);
	assert_string_equal(cfg->trigger.type, "boundary");
	assert_true(cfg->trigger.boundary == 0.0);
	assert_int_equal(cfg->trigger.low_owner, 1);
	assert_int_equal(cfg->trigger.high_owner, 2);
	/* Each drone starts with the host of its start position's zone. */
	for (size_t i = 0; i < cfg->eu_count; i++) {
		double p[3];
		fleet_formation_point(FLEET_GRID, i, 64, p);
		assert_int_equal(cfg->eus[i].initial_owner, p[0] < 0 ? 1 : 2);
	}
	hako_rd_config_free(cfg);
}

static void test_full(void **state)
{
	(void)state;
	char rd[600];
	assert_int_equal(fleet_zones_write_config(g_dir, 16, "cli-01,cli-02", rd, sizeof(rd)), 0);
	hako_rd_config_t *cfg = load(rd);
	assert_int_equal(cfg->mode, HAKO_RD_MODE_FULL);
	assert_string_equal(cfg->node_names[0], "cli-01");
	assert_string_equal(cfg->node_names[1], "cli-02");
	hako_rd_config_free(cfg);
	static const char *const bad[] = {"cli-01", ",cli-02", "cli-01,", ""};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		errno = 0;
		assert_int_equal(fleet_zones_write_config(g_dir, 16, bad[k], rd, sizeof(rd)), -1);
		assert_int_equal(errno, EINVAL);
	}
}

/* Zones on a grid: a 2 x 2 grid of 64 drones (16 start in each cell), a 3 x 2 grid across six
 * named client nodes (RD-Full), and the grids and node lists refused. */
static void test_grid(void **state)
{
	(void)state;
	char rd[600];
	size_t count[FLEET_MAX_HOSTS + 1];
	assert_int_equal(fleet_zones_write_grid(g_dir, 64, 2, 2, NULL, rd, sizeof(rd)), 0);
	hako_rd_config_t *cfg = load(rd);
	assert_int_equal(cfg->mode, HAKO_RD_MODE_LIGHT);
	assert_int_equal(cfg->node_count, 4);
	assert_string_equal(cfg->trigger.type, "grid");
	assert_int_equal(cfg->trigger.grid_nx, 1);
	assert_int_equal(cfg->trigger.grid_ny, 1);
	assert_int_equal(cfg->trigger.grid_owner[1][0], 3);
	assert_true(first_owners(cfg, 4, count));
	for (size_t k = 1; k <= 4; k++) {
		assert_int_equal(count[k], 16);
	}
	for (size_t i = 0; i < cfg->eu_count; i++) {
		double p[3];
		fleet_formation_point(FLEET_GRID, i, 64, p);
		assert_int_equal(cfg->eus[i].initial_owner,
		                 hako_rd_trigger_grid_owner(&cfg->trigger, p[0], p[1]));
	}
	hako_rd_config_free(cfg);
	assert_int_equal(fleet_zones_write_grid(g_dir, 64, 3, 2, "a,b,c,d,e,f", rd, sizeof(rd)), 0);
	cfg = load(rd);
	assert_int_equal(cfg->mode, HAKO_RD_MODE_FULL);
	assert_int_equal(cfg->node_count, 6);
	assert_string_equal(cfg->node_names[5], "f");
	assert_int_equal(cfg->trigger.grid_nx, 2);
	assert_true(cfg->trigger.grid_x[0] < cfg->trigger.grid_x[1]);
	hako_rd_config_free(cfg);
	static const struct {
		size_t cols, rows;
		const char *full;
	} bad[] = {{1, 1, NULL},        {17, 1, NULL},    {4, 5, NULL}, {2, 2, "a,b,c"},
	           {2, 2, "a,b,c,d,e"}, {2, 2, "a,,c,d"}, {2, 1, "a,"}};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		errno = 0;
		assert_int_equal(fleet_zones_write_grid(g_dir, 64, bad[k].cols, bad[k].rows,
		                                        bad[k].full, rd, sizeof(rd)),
		                 -1);
		assert_int_equal(errno, EINVAL);
	}
}

static void test_balance_two(void **state)
{
	(void)state;
	char rd[600];
	const size_t split[2] = {48, 16};
	assert_int_equal(fleet_zones_write_balance(g_dir, 64, split, 2, NULL, rd, sizeof(rd)), 0);
	hako_rd_config_t *cfg = load(rd);
	assert_string_equal(cfg->trigger.type, "manual");
	assert_int_equal(cfg->node_count, 2);
	size_t count[3];
	assert_true(first_owners(cfg, 2, count));
	assert_int_equal(count[1], 48);
	assert_int_equal(count[2], 16);
	/* in drone order: the first 48 on host 1 */
	assert_int_equal(cfg->eus[47].initial_owner, 1);
	assert_int_equal(cfg->eus[48].initial_owner, 2);
	hako_rd_config_free(cfg);
}

static void test_balance_three(void **state)
{
	(void)state;
	char rd[600];
	const size_t counts[3] = {40, 16, 8};
	assert_int_equal(fleet_zones_write_balance(g_dir, 64, counts, 3, NULL, rd, sizeof(rd)), 0);
	hako_rd_config_t *cfg = load(rd);
	assert_string_equal(cfg->trigger.type, "manual");
	assert_int_equal(cfg->node_count, 3);
	for (size_t k = 0; k < 3; k++) {
		assert_int_equal(cfg->node_ids[k], k + 1);
	}
	size_t count[4];
	assert_true(first_owners(cfg, 3, count));
	assert_int_equal(count[1], 40);
	assert_int_equal(count[2], 16);
	assert_int_equal(count[3], 8);
	assert_int_equal(cfg->eus[55].initial_owner, 2);
	assert_int_equal(cfg->eus[56].initial_owner, 3);
	hako_rd_config_free(cfg);

	/* As many hosts as the fleet allows, one drone each. */
	size_t ones[FLEET_MAX_HOSTS];
	for (size_t k = 0; k < FLEET_MAX_HOSTS; k++) {
		ones[k] = 1;
	}
	assert_int_equal(fleet_zones_write_balance(g_dir, FLEET_MAX_HOSTS, ones, FLEET_MAX_HOSTS,
	                                           NULL, rd, sizeof(rd)),
	                 0);
	cfg = load(rd);
	assert_int_equal(cfg->node_count, FLEET_MAX_HOSTS);
	size_t all[FLEET_MAX_HOSTS + 1];
	assert_true(first_owners(cfg, FLEET_MAX_HOSTS, all));
	for (size_t k = 1; k <= FLEET_MAX_HOSTS; k++) {
		assert_int_equal(all[k], 1);
	}
	hako_rd_config_free(cfg);
}

/* Balance across the client nodes of a federation (RD-Full): the nodes named by their ids,
 * the manual trigger, host k's first drones as in RD-Light; lists that do not name every host
 * once refused. */
static void test_balance_full(void **state)
{
	(void)state;
	char rd[600];
	const size_t counts[3] = {40, 16, 8};
	assert_int_equal(
	    fleet_zones_write_balance(g_dir, 64, counts, 3, "cli-01,cli-02,cli-03", rd, sizeof(rd)),
	    0);
	hako_rd_config_t *cfg = load(rd);
	assert_int_equal(cfg->mode, HAKO_RD_MODE_FULL);
	assert_string_equal(cfg->trigger.type, "manual");
	assert_int_equal(cfg->node_count, 3);
	assert_string_equal(cfg->node_names[2], "cli-03");
	size_t count[FLEET_MAX_HOSTS + 1];
	assert_true(first_owners(cfg, 3, count));
	assert_int_equal(count[1], 40);
	assert_int_equal(count[2], 16);
	assert_int_equal(count[3], 8);
	hako_rd_config_free(cfg);
	static const char *const bad[] = {"cli-01,cli-02", "cli-01,cli-02,cli-03,cli-04",
	                                  "cli-01,,cli-03", ""};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		errno = 0;
		assert_int_equal(
		    fleet_zones_write_balance(g_dir, 64, counts, 3, bad[k], rd, sizeof(rd)), -1);
		assert_int_equal(errno, EINVAL);
	}
}

static void test_balance_refused(void **state)
{
	(void)state;
	char rd[600];
	const size_t short_sum[3] = {40, 16, 7}, one[1] = {64};
	size_t many[FLEET_MAX_HOSTS + 1];
	for (size_t k = 0; k <= FLEET_MAX_HOSTS; k++) {
		many[k] = 1;
	}
	struct {
		const size_t *counts;
		size_t hosts, total;
	} bad[] = {
	    {short_sum, 3, 64},                               /* 63 of 64 */
	    {one, 1, 64},                                     /* one host */
	    {many, FLEET_MAX_HOSTS + 1, FLEET_MAX_HOSTS + 1}, /* too many */
	    {NULL, 2, 64},
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		errno = 0;
		assert_int_equal(fleet_zones_write_balance(g_dir, bad[k].total, bad[k].counts,
		                                           bad[k].hosts, NULL, rd, sizeof(rd)),
		                 -1);
		assert_int_equal(errno, EINVAL);
	}
	/* A path that does not fit the caller's buffer. */
	const size_t two[2] = {32, 32};
	errno = 0;
	assert_int_equal(fleet_zones_write_balance(g_dir, 64, two, 2, NULL, rd, 8), -1);
	assert_int_equal(errno, ENAMETOOLONG);
	/* A directory that is not there. */
	assert_int_equal(
	    fleet_zones_write_balance("/nonexistent/dir", 64, two, 2, NULL, rd, sizeof(rd)), -1);
	assert_int_equal(errno, ENOENT);
}

/* The files a writer made go with fleet_zones_remove_config, and its directory with them. */
static void test_remove(void **state)
{
	(void)state;
	char rd[600], sub[300];
	snprintf(sub, sizeof(sub), "%s/zones", g_dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(fleet_zones_write_config(sub, 8, NULL, rd, sizeof(rd)), 0);
	assert_int_equal(access(rd, R_OK), 0);
	assert_int_equal(fleet_zones_remove_config(sub), 0);
	assert_int_equal(access(sub, F_OK), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(fleet_zones_remove_config(sub), 0); /* nothing left: not an error */
	/* A directory with other files too keeps them, and itself. */
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(fleet_zones_write_config(sub, 8, NULL, rd, sizeof(rd)), 0);
	char other[400];
	snprintf(other, sizeof(other), "%s/notes.txt", sub);
	assert_int_equal(htu_write_file(other, "mine"), 0);
	assert_int_equal(fleet_zones_remove_config(sub), 0);
	assert_int_equal(access(rd, F_OK), -1);
	assert_int_equal(access(other, R_OK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_zones, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_full, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_grid, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_balance_two, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_balance_three, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_balance_full, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_balance_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_remove, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
