#include <stdio.h>
#include <string.h>

#include "mcap_gen.h"

static const char *const schema_names[GEN_SCHEMAS] = {"geometry_msgs/msg/Twist",
                                                      "std_msgs/msg/String", "hako_msgs/msg/Empty"};

void gen_schema(size_t k, const char **name, char *data, size_t cap, size_t *len)
{
	*name = schema_names[k];
	int n = snprintf(data, cap, "# schema %zu\nfloat64 x\nstring label_%zu\n", k, k);
	*len = (size_t)n < cap ? (size_t)n : cap;
}

void gen_message(const gen_spec_t *s, size_t i, gen_msg_t *m)
{
	m->channel = (uint16_t)(i % GEN_CHANNELS);
	m->sequence = (uint32_t)i;
	/* Steps of 1 ms; every 5th message shares its time with the one before; every 11th goes
	 * back 3 ms (a late PDU): a log-time order differs from the file order. */
	uint64_t t = GEN_T0 + (uint64_t)i * 1000000u;
	if (i % 5 == 4) {
		t -= 1000000u;
	}
	if (i % 11 == 10) {
		t -= 3000000u;
	}
	m->log_time = t;
	m->publish_time = t + 17 + i;
	m->len = (s->big_at >= 0 && i == (size_t)s->big_at) ? GEN_BIG : (i * 37) % 301;
	for (size_t k = 0; k < m->len; k++) {
		m->data[k] = (uint8_t)(i * 31 + k * 7 + (k >> 8));
	}
}

int gen_write(const char *path, const gen_spec_t *s)
{
	hako_mcap_writer_opts_t o = {.profile = "ros2",
	                             .library = "hako-test",
	                             .chunk_size = s->chunk_size,
	                             .compression = (hako_mcap_compression_t)s->compression};
	hako_mcap_writer_t *w;
	char err[512];
	int rc = hako_mcap_writer_open(&w, path, &o, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "%s\n", err);
		return rc;
	}
	static gen_msg_t m;
	for (size_t k = 0; s->with_channels && k < GEN_SCHEMAS && rc == 0; k++) {
		const char *name;
		char data[128];
		size_t len;
		gen_schema(k, &name, data, sizeof(data), &len);
		rc = hako_mcap_writer_add_schema(w, name, "ros2msg", data, len, NULL);
	}
	for (size_t c = 0; s->with_channels && c < GEN_CHANNELS && rc == 0; c++) {
		char topic[64], idx[16];
		snprintf(topic, sizeof(topic), "/robot%zu/pdu_%zu", c / 4, c);
		snprintf(idx, sizeof(idx), "%zu", c);
		const char *meta[] = {"robot", "r", "channel_id", idx, NULL};
		/* channel 11 has no schema: schema_id 0 */
		rc = hako_mcap_writer_add_channel(w, c == 11 ? 0 : (uint16_t)(c % GEN_SCHEMAS + 1),
		                                  topic, "cdr", c % 2 ? meta : NULL, NULL);
	}
	for (size_t i = 0; i < s->messages && rc == 0; i++) {
		gen_message(s, i, &m);
		rc = hako_mcap_writer_write(w, m.channel, m.sequence, m.log_time, m.publish_time,
		                            m.data, m.len);
	}
	if (rc) {
		fprintf(stderr, "%s: %s\n", path, hako_mcap_writer_error(w));
		hako_mcap_writer_close(w);
		return rc;
	}
	rc = hako_mcap_writer_close(w);
	if (rc) {
		fprintf(stderr, "%s: close: %d\n", path, rc);
	}
	return rc;
}
