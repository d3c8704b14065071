/* viewer.unit: the pure pieces of hako-viewer: request paths, tokens, query arguments, commands
 * and the JSON state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "viewer.h"
#include "vw_fox.h"

static void path_ok(const char *path, const char *want)
{
	char rel[VW_PATH_MAX + 1];
	const char *why = NULL;
	int r = vw_path_check(path, rel, sizeof(rel), &why);
	if (r != 0) {
		fail_msg("%s refused: %s", path, why);
	}
	assert_string_equal(rel, want);
}

static void path_refused(const char *path)
{
	char rel[VW_PATH_MAX + 1] = "untouched";
	const char *why = NULL;
	assert_int_equal(vw_path_check(path, rel, sizeof(rel), &why), HAKO_EPERM);
	assert_non_null(why);
	assert_string_equal(rel, "untouched");
}

static void test_paths(void **state)
{
	(void)state;
	path_ok("/", "index.html");
	path_ok("/index.html", "index.html");
	path_ok("/app.js", "app.js");
	path_ok("/style-2_x.css", "style-2_x.css");
	path_refused("/../../etc/passwd");
	path_refused("/..");
	path_refused("/%2e%2e/%2e%2e/etc/passwd"); /* encoded twice, or not decoded at all */
	path_refused("/%2e%2e");
	path_refused("/etc/passwd"); /* what lws leaves of /../../etc/passwd */
	path_refused("/sub/app.js");
	path_refused("/.hidden");
	path_refused("/a\\b");
	path_refused("/a b");
	path_refused("relative");
	path_refused("");
	path_refused(NULL);
	char longp[VW_PATH_MAX + 8];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	path_refused(longp);
	/* The output buffer bounds the name too. */
	char small[4];
	assert_int_equal(vw_path_check("/index.html", small, sizeof(small), NULL), HAKO_EPERM);
}

static void test_mime(void **state)
{
	(void)state;
	assert_string_equal(vw_mime("index.html"), "text/html; charset=utf-8");
	assert_string_equal(vw_mime("app.js"), "text/javascript; charset=utf-8");
	assert_string_equal(vw_mime("x.png"), "image/png");
	assert_string_equal(vw_mime("noext"), "application/octet-stream");
}

static void test_tokens(void **state)
{
	(void)state;
	char a[VW_TOKEN_LEN + 1], b[VW_TOKEN_LEN + 1];
	assert_int_equal(vw_token_new(a), 0);
	assert_int_equal(vw_token_new(b), 0);
	assert_int_equal(strlen(a), VW_TOKEN_LEN);
	assert_string_not_equal(a, b);
	for (const char *p = a; *p; p++) {
		assert_non_null(strchr("0123456789abcdef", *p));
	}
	assert_true(vw_token_equal(a, a));
	char c[VW_TOKEN_LEN + 1];
	memcpy(c, a, sizeof(c));
	c[VW_TOKEN_LEN - 1] = c[VW_TOKEN_LEN - 1] == '0' ? '1' : '0';
	assert_false(vw_token_equal(a, c));
	c[VW_TOKEN_LEN - 1] = '\0'; /* a prefix */
	assert_false(vw_token_equal(a, c));
	assert_false(vw_token_equal(a, ""));
	assert_false(vw_token_equal(a, NULL));
	assert_false(vw_token_equal("", ""));
	char longer[VW_TOKEN_LEN + 2];
	snprintf(longer, sizeof(longer), "%sx", a);
	assert_false(vw_token_equal(a, longer));
}

static void test_query(void **state)
{
	(void)state;
	char v[16];
	assert_int_equal(vw_query_arg("token=abc&x=1", "token", v, sizeof(v)), 0);
	assert_string_equal(v, "abc");
	assert_int_equal(vw_query_arg("x=1&token=a%2Fb+c", "token", v, sizeof(v)), 0);
	assert_string_equal(v, "a/b c");
	assert_int_equal(vw_query_arg("xtoken=1&tokenx=2", "token", v, sizeof(v)), HAKO_ENOENT);
	assert_int_equal(vw_query_arg("", "token", v, sizeof(v)), HAKO_ENOENT);
	assert_int_equal(vw_query_arg("token=0123456789abcdefXYZ", "token", v, sizeof(v)),
	                 HAKO_ETOOBIG);
	assert_int_equal(vw_query_arg("token=", "token", v, sizeof(v)), 0);
	assert_string_equal(v, "");
}

static void test_commands(void **state)
{
	(void)state;
	vw_command_t c;
	const char *why = NULL;
	const char *s = "{\"cmd\":\"stop\",\"token\":\"abc\"}";
	assert_int_equal(vw_command_parse(s, strlen(s), &c, &why), 0);
	assert_int_equal(c.cmd, VW_CMD_STOP);
	assert_string_equal(c.token, "abc");
	s = "{\"cmd\":\"start\"}";
	assert_int_equal(vw_command_parse(s, strlen(s), &c, &why), 0);
	assert_int_equal(c.cmd, VW_CMD_START);
	assert_string_equal(c.token, "");
	s = "{\"cmd\":\"reset\"}";
	assert_int_equal(vw_command_parse(s, strlen(s), &c, &why), 0);
	assert_int_equal(c.cmd, VW_CMD_RESET);
	static const char *const bad[] = {
	    "",
	    "not json",
	    "[1]",
	    "{\"cmd\":\"shutdown\"}",
	    "{\"cmd\":1}",
	    "{\"token\":\"x\"}",
	    "{\"cmd\":\"stop\",\"token\":7}",
	    "{\"cmd\":\"stop\",\"cmd\":\"start\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		assert_int_equal(vw_command_parse(bad[i], strlen(bad[i]), &c, &why), HAKO_EPROTO);
		assert_non_null(why);
		assert_int_equal(c.cmd, VW_CMD_NONE);
	}
	char longtok[200];
	snprintf(longtok, sizeof(longtok), "{\"cmd\":\"stop\",\"token\":\"%0100d\"}", 0);
	assert_int_equal(vw_command_parse(longtok, strlen(longtok), &c, &why), HAKO_EPROTO);
	assert_string_equal(vw_cmd_name(VW_CMD_STOP), "stop");
}

static void test_buf(void **state)
{
	(void)state;
	vw_buf_t b = {0};
	vw_buf_json_str(&b, "a\"b\\c\n\x01");
	assert_string_equal(b.data, "\"a\\\"b\\\\c\\u000a\\u0001\"");
	for (int i = 0; i < 1000; i++) {
		vw_buf_printf(&b, "%04d", i);
	}
	assert_int_equal(b.len, 21 + 4000);
	assert_false(b.oom);
	vw_buf_free(&b);
	assert_null(b.data);
}

static json_t *parse(vw_buf_t *b)
{
	json_error_t err;
	json_t *j = json_loads(b->data, 0, &err);
	if (j == NULL) {
		fail_msg("not JSON (%s): %s", err.text, b->data);
	}
	vw_buf_free(b);
	return j;
}

static json_t *encode(const vw_state_t *st, int with_rd)
{
	vw_buf_t b = {0};
	vw_state_encode(st, with_rd, &b);
	return parse(&b);
}

/* A Twist PDU as the map reads it: [meta 24 B, base at 24][linear.x, linear.y, ...]. */
static void twist(uint8_t pdu[72], double x, double y)
{
	memset(pdu, 0, 72);
	pdu[8] = 24;
	memcpy(pdu + 24, &x, sizeof(x));
	memcpy(pdu + 32, &y, sizeof(y));
}

static void test_state(void **state)
{
	(void)state;
	vw_state_t st;
	memset(&st, 0, sizeof(st));
	snprintf(st.info.name, sizeof(st.info.name), "dom\"1");
	json_t *j = encode(&st, 1);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "state");
	assert_string_equal(json_string_value(json_object_get(j, "domain")), "dom\"1");
	assert_true(json_is_false(json_object_get(j, "attached")));
	assert_null(json_object_get(j, "assets"));
	assert_non_null(json_object_get(j, "viewer"));
	assert_non_null(json_object_get(j, "sampling"));
	json_decref(j);

	hako_asset_info_t assets[2];
	memset(assets, 0, sizeof(assets));
	snprintf(assets[0].name, sizeof(assets[0].name), "writer");
	assets[0].time_usec = 5000;
	assets[0].lag_usec = 1000;
	assets[0].alive = 1;
	snprintf(assets[1].name, sizeof(assets[1].name), "reader");
	vw_channel_t ch[2];
	memset(ch, 0, sizeof(ch));
	snprintf(ch[0].robot, sizeof(ch[0].robot), "Robot");
	snprintf(ch[0].type, sizeof(ch[0].type), "std_msgs/UInt64");
	ch[0].seq = 5;
	ch[0].json = strdup("{\"data\":5}");
	snprintf(ch[1].robot, sizeof(ch[1].robot), "Other");
	ch[1].id = 3;
	ch[1].too_big = 1;
	vw_eu_t eu = {.name = "forklift", .robot = "Robot", .id = 1, .epoch = 2, .owner = 1};
	st.attached = 1;
	st.info.state = HAKO_STATE_RUNNING;
	st.info.world_time = 6000;
	st.info.max_delay_usec = 1000;
	st.rtf = 0.5;
	st.assets = assets;
	st.nassets = 2;
	st.channels = ch;
	st.nchannels = 2;
	st.eus = &eu;
	st.neus = 1;
	st.list_version = 4;
	st.stats.frames_dropped = 7;
	st.stats.fox.sessions = 3;
	st.stats.fox.messages_dropped = 11;
	st.sample_hz = 2.5;
	st.sample_hz_max = 10;

	j = encode(&st, 1);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "running");
	assert_int_equal(json_integer_value(json_object_get(j, "world_time_usec")), 6000);
	assert_true(json_real_value(json_object_get(j, "rtf")) == 0.5);
	json_t *a = json_object_get(j, "assets");
	assert_int_equal(json_array_size(a), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "name")),
	                    "writer");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(a, 0), "lag_usec")),
	                 1000);
	/* No channel in the state: its size does not grow with them. */
	assert_null(json_object_get(j, "channels"));
	assert_int_equal(json_integer_value(json_object_get(j, "channel_count")), 2);
	assert_int_equal(json_integer_value(json_object_get(j, "channels_version")), 4);
	assert_int_equal(json_array_size(json_object_get(j, "eus")), 1);
	assert_non_null(json_object_get(j, "handoffs"));
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "viewer"), "frames_dropped")), 7);
	json_t *fox = json_object_get(json_object_get(j, "viewer"), "foxglove");
	assert_int_equal(json_integer_value(json_object_get(fox, "sessions")), 3);
	assert_int_equal(json_integer_value(json_object_get(fox, "messages_dropped")), 11);
	assert_null(json_object_get(j, "federation")); /* not a federation node */
	json_t *smp = json_object_get(j, "sampling");
	assert_true(json_real_value(json_object_get(smp, "hz")) == 2.5);
	assert_int_equal(json_integer_value(json_object_get(smp, "max_hz")), 10);
	json_decref(j);
	j = encode(&st, 0); /* without the RD part */
	assert_null(json_object_get(j, "eus"));
	assert_null(json_object_get(j, "handoffs"));
	assert_int_equal(json_integer_value(json_object_get(j, "eu_count")), 1);
	json_decref(j);

	st.rtf = -1.0;
	j = encode(&st, 1);
	assert_true(json_is_null(json_object_get(j, "rtf")));
	json_decref(j);

	/* The channel list: metadata, no values. */
	vw_buf_t b = {0};
	vw_list_encode(&st, &b);
	j = parse(&b);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "channels");
	assert_int_equal(json_integer_value(json_object_get(j, "version")), 4);
	json_t *c = json_object_get(j, "channels");
	assert_int_equal(json_array_size(c), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "type")),
	                    "std_msgs/UInt64");
	assert_null(json_object_get(json_array_get(c, 0), "value"));
	json_decref(j);

	/* A value: the JSON of the channel, null when unknown or too big. */
	vw_value_encode(&ch[0], &b);
	j = parse(&b);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "value"), "data")),
	                 5);
	assert_int_equal(json_integer_value(json_object_get(j, "seq")), 5);
	json_decref(j);
	vw_value_encode(&ch[1], &b);
	j = parse(&b);
	assert_true(json_is_null(json_object_get(j, "value")));
	assert_true(json_is_true(json_object_get(j, "too_big")));
	json_decref(j);
	free(ch[0].json);
	/* A federation node: the conductor's status passed on as it is (checked JSON). */
	snprintf(st.federation, sizeof(st.federation),
	         "{\"node\":\"srv-01\",\"role\":\"server\",\"dmax_usec\":10000,"
	         "\"peers\":[{\"id\":\"cli-01\",\"drift_max_usec\":9000}]}");
	j = encode(&st, 0);
	json_t *fed = json_object_get(j, "federation");
	assert_string_equal(json_string_value(json_object_get(fed, "node")), "srv-01");
	assert_int_equal(json_integer_value(json_object_get(
	                     json_array_get(json_object_get(fed, "peers"), 0), "drift_max_usec")),
	                 9000);
	json_decref(j);
}

static void test_positions(void **state)
{
	(void)state;
	uint8_t pdu[2][72];
	double x, y;
	twist(pdu[0], 1.5, -2.25);
	assert_int_equal(vw_twist_xy(pdu[0], 72, &x, &y), 0);
	assert_true(x == 1.5 && y == -2.25);
	assert_int_equal(vw_twist_xy(pdu[0], 30, &x, &y), -1); /* too short */
	pdu[0][8] = 200;                                       /* base out of the PDU */
	assert_int_equal(vw_twist_xy(pdu[0], 72, &x, &y), -1);
	twist(pdu[0], 1.5, -2.25);
	twist(pdu[1], 3, 4);

	vw_channel_t ch[3];
	memset(ch, 0, sizeof(ch));
	vw_eu_t eu = {.name = "d2", .robot = "Drone-2", .id = 2, .owner = 2};
	for (int i = 0; i < 3; i++) {
		snprintf(ch[i].robot, sizeof(ch[i].robot), "Drone-%d", i + 1);
		ch[i].eu = -1;
		ch[i].position = i < 2;
		ch[i].raw_seq = 1;
		ch[i].raw = pdu[i % 2];
		ch[i].raw_len = 72;
	}
	ch[1].eu = 0;
	vw_state_t st;
	memset(&st, 0, sizeof(st));
	st.channels = ch;
	st.nchannels = 3;
	st.eus = &eu;
	st.neus = 1;
	st.info.world_time = 42;
	vw_buf_t b = {0};
	vw_positions_encode(&st, &b);
	json_t *j = parse(&b);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "positions");
	json_t *p = json_object_get(j, "positions");
	assert_int_equal(json_array_size(p), 2); /* the third is no position channel */
	json_t *p0 = json_array_get(p, 0), *p1 = json_array_get(p, 1);
	assert_string_equal(json_string_value(json_array_get(p0, 0)), "Drone-1");
	assert_true(json_number_value(json_array_get(p0, 2)) == 1.5);
	assert_true(json_number_value(json_array_get(p0, 3)) == -2.25);
	assert_true(json_is_null(json_array_get(p0, 4)));
	assert_int_equal(json_integer_value(json_array_get(p1, 4)), 2); /* its EU's owner */
	json_decref(j);
}

static void test_watch_view(void **state)
{
	(void)state;
	vw_command_t c;
	const char *why = NULL;
	const char *s = "{\"cmd\":\"watch\",\"channels\":[[\"Robot\",0],[\"Drone-1\",5]]}";
	assert_int_equal(vw_command_parse(s, strlen(s), &c, &why), 0);
	assert_int_equal(c.cmd, VW_CMD_WATCH);
	assert_int_equal(c.nwatch, 2);
	assert_string_equal(c.watch[1].robot, "Drone-1");
	assert_int_equal(c.watch[1].id, 5);
	s = "{\"cmd\":\"view\",\"rd\":false,\"positions\":true}";
	assert_int_equal(vw_command_parse(s, strlen(s), &c, &why), 0);
	assert_int_equal(c.cmd, VW_CMD_VIEW);
	assert_int_equal(c.rd, 0);
	assert_int_equal(c.positions, 1);
	s = "{\"cmd\":\"view\"}";
	assert_int_equal(vw_command_parse(s, strlen(s), &c, &why), 0);
	assert_int_equal(c.rd, -1);
	static const char *const bad[] = {
	    "{\"cmd\":\"watch\"}",
	    "{\"cmd\":\"watch\",\"channels\":[[\"Robot\"]]}",
	    "{\"cmd\":\"watch\",\"channels\":[[\"Robot\",-1]]}",
	    "{\"cmd\":\"watch\",\"channels\":[[0,0]]}",
	    "{\"cmd\":\"view\",\"rd\":1}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(vw_command_parse(bad[i], strlen(bad[i]), &c, &why), HAKO_EPROTO);
		assert_int_equal(c.cmd, VW_CMD_NONE);
	}
	/* More than a page of rows and the plot: refused, not cut. */
	vw_buf_t b = {0};
	vw_buf_puts(&b, "{\"cmd\":\"watch\",\"channels\":[");
	for (int i = 0; i <= VW_WATCH_MAX; i++) {
		vw_buf_printf(&b, "%s[\"R\",%d]", i ? "," : "", i);
	}
	vw_buf_puts(&b, "]}");
	assert_int_equal(vw_command_parse(b.data, b.len, &c, &why), HAKO_EPROTO);
	vw_buf_free(&b);
}

/* Foxglove's ros2 decoding and MCAP's ros2 profile name a type pkg/msg/Type. */
static void test_fox_names(void **state)
{
	(void)state;
	char out[64];
	assert_int_equal(vw_fox_schema_name("geometry_msgs/Twist", out, sizeof(out)), 0);
	assert_string_equal(out, "geometry_msgs/msg/Twist");
	assert_int_equal(vw_fox_schema_name("Twist", out, sizeof(out)), -1);
	assert_int_equal(vw_fox_schema_name("/Twist", out, sizeof(out)), -1);
	assert_int_equal(vw_fox_schema_name("a/b/c", out, sizeof(out)), -1);
	assert_int_equal(vw_fox_schema_name("geometry_msgs/Twist", out, 10), -1);
	assert_true(vw_fox_same_type("geometry_msgs/msg/Twist", "geometry_msgs/Twist"));
	assert_true(vw_fox_same_type("geometry_msgs/Twist", "geometry_msgs/Twist"));
	assert_false(vw_fox_same_type("geometry_msgs/msg/Pose", "geometry_msgs/Twist"));
	assert_false(vw_fox_same_type("geometry_msgs/srv/Twist", "geometry_msgs/Twist"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_paths),      cmocka_unit_test(test_mime),
	    cmocka_unit_test(test_tokens),     cmocka_unit_test(test_query),
	    cmocka_unit_test(test_commands),   cmocka_unit_test(test_buf),
	    cmocka_unit_test(test_state),      cmocka_unit_test(test_positions),
	    cmocka_unit_test(test_watch_view), cmocka_unit_test(test_fox_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
