/* The JSON "state" message: what the page shows (format: docs/viewer.md). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "viewer.h"

static void encode_assets(const vw_state_t *st, vw_buf_t *b)
{
	vw_buf_puts(b, ",\"assets\":[");
	for (int i = 0; i < st->nassets; i++) {
		const hako_asset_info_t *a = &st->assets[i];
		vw_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
		vw_buf_json_str(b, a->name);
		vw_buf_printf(b,
		              ",\"id\":%d,\"pid\":%d,\"alive\":%s,\"time_usec\":%lld,"
		              "\"delta_usec\":%lld,\"lag_usec\":%lld,\"steps\":%" PRIu64
		              ",\"proxy\":%s,\"note\":",
		              a->id, a->pid, a->alive ? "true" : "false", (long long)a->time_usec,
		              (long long)a->delta_usec, (long long)a->lag_usec, a->steps,
		              a->proxy ? "true" : "false");
		vw_buf_json_str(b, a->note);
		vw_buf_puts(b, "}");
	}
	vw_buf_puts(b, "]");
}

void vw_list_encode(const vw_state_t *st, vw_buf_t *b)
{
	vw_buf_printf(b, "{\"type\":\"channels\",\"version\":%" PRIu64 ",\"channels\":[",
	              st->list_version);
	for (int i = 0; i < st->nchannels; i++) {
		const vw_channel_t *c = &st->channels[i];
		vw_buf_puts(b, i ? ",{\"robot\":" : "{\"robot\":");
		vw_buf_json_str(b, c->robot);
		vw_buf_printf(b, ",\"id\":%d,\"name\":", (int)c->id);
		vw_buf_json_str(b, c->name);
		vw_buf_puts(b, ",\"type\":");
		vw_buf_json_str(b, c->type);
		vw_buf_printf(b, ",\"size\":%u%s}", c->size,
		              c->position ? ",\"position\":true" : "");
	}
	vw_buf_puts(b, "]}");
}

void vw_value_encode(const vw_channel_t *c, vw_buf_t *b)
{
	vw_buf_puts(b, "{\"robot\":");
	vw_buf_json_str(b, c->robot);
	vw_buf_printf(b, ",\"id\":%d,\"seq\":%" PRIu64 ",\"rate_hz\":%.1f", (int)c->id, c->seq,
	              isfinite(c->rate_hz) ? c->rate_hz : 0.0);
	if (c->too_big) {
		vw_buf_puts(b, ",\"too_big\":true");
	}
	vw_buf_puts(b, ",\"value\":");
	vw_buf_puts(b, c->json != NULL ? c->json : "null");
	vw_buf_puts(b, "}");
}

int vw_twist_xy(const uint8_t *raw, size_t len, double *x, double *y)
{
	/* A PDU is [meta 24 B][base]: the meta's u32 at 8 is where the base starts, and a Twist's
	 * base starts with linear.x, linear.y (little-endian float64, as on this machine). */
	if (raw == NULL || len < 24 + 16) {
		return -1;
	}
	uint32_t base = (uint32_t)raw[8] | (uint32_t)raw[9] << 8 | (uint32_t)raw[10] << 16 |
	                (uint32_t)raw[11] << 24;
	if (base < 24 || (size_t)base + 16 > len) {
		return -1;
	}
	memcpy(x, raw + base, sizeof(*x));
	memcpy(y, raw + base + 8, sizeof(*y));
	return isfinite(*x) && isfinite(*y) ? 0 : -1;
}

void vw_positions_encode(const vw_state_t *st, vw_buf_t *b)
{
	vw_buf_printf(b, "{\"type\":\"positions\",\"world_time_usec\":%lld,\"positions\":[",
	              (long long)st->info.world_time);
	int n = 0;
	for (int i = 0; i < st->nchannels; i++) {
		const vw_channel_t *c = &st->channels[i];
		double x, y;
		if (!c->position || c->raw_seq == 0 ||
		    vw_twist_xy(c->raw, c->raw_len, &x, &y) != 0) {
			continue;
		}
		vw_buf_puts(b, n++ ? ",[" : "[");
		vw_buf_json_str(b, c->robot);
		vw_buf_printf(b, ",%d,%.5g,%.5g,", (int)c->id, x, y);
		if (c->eu >= 0 && c->eu < st->neus) {
			vw_buf_printf(b, "%d]", st->eus[c->eu].owner);
		} else {
			vw_buf_puts(b, "null]");
		}
	}
	vw_buf_puts(b, "]}");
}

static void encode_rd(const vw_state_t *st, vw_buf_t *b)
{
	static const char *const status[] = {"stable", "releasing", "activating"};
	vw_buf_puts(b, ",\"eus\":[");
	for (int i = 0; i < st->neus; i++) {
		const vw_eu_t *e = &st->eus[i];
		vw_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
		vw_buf_json_str(b, e->name);
		vw_buf_puts(b, ",\"robot\":");
		vw_buf_json_str(b, e->robot);
		vw_buf_printf(b,
		              ",\"id\":%u,\"status\":\"%s\",\"epoch\":%d,\"owner\":%d,"
		              "\"next_owner\":%d}",
		              e->id, e->status >= 0 && e->status <= 2 ? status[e->status] : "?",
		              e->epoch, e->owner, e->next_owner);
	}
	vw_buf_puts(b, "],\"handoffs\":[");
	uint64_t first = st->nhandoffs > VW_HANDOFFS ? st->nhandoffs - VW_HANDOFFS : 0;
	for (uint64_t k = first; k < st->nhandoffs; k++) {
		const vw_handoff_t *h = &st->handoffs[k % VW_HANDOFFS];
		vw_buf_printf(b,
		              "%s{\"world_time_usec\":%lld,\"eu\":%u,\"from\":%d,\"to\":%d,"
		              "\"epoch\":%d}",
		              k > first ? "," : "", (long long)h->world_time, h->eu, h->from, h->to,
		              h->epoch);
	}
	vw_buf_puts(b, "]");
}

void vw_state_encode(const vw_state_t *st, int with_rd, vw_buf_t *b)
{
	const hako_domain_info_t *in = &st->info;
	vw_buf_puts(b, "{\"type\":\"state\",\"domain\":");
	vw_buf_json_str(b, in->name);
	vw_buf_printf(b, ",\"attached\":%s,\"control\":%s", st->attached ? "true" : "false",
	              st->control ? "true" : "false");
	if (st->attached) {
		vw_buf_printf(
		    b, ",\"state\":\"%s\",\"world_time_usec\":%lld,\"world_steps\":%" PRIu64,
		    hako_state_name(in->state), (long long)in->world_time, in->world_steps);
		vw_buf_printf(b,
		              ",\"delta_usec\":%lld,\"dmax_usec\":%lld,\"target_rtf\":%g,\"rtf\":",
		              (long long)in->delta_usec, (long long)in->max_delay_usec,
		              isfinite(in->real_time_factor) ? in->real_time_factor : 0.0);
		if (st->rtf >= 0.0 && isfinite(st->rtf)) {
			vw_buf_printf(b, "%.3f", st->rtf);
		} else {
			vw_buf_puts(b, "null");
		}
		vw_buf_printf(
		    b, ",\"master_alive\":%s,\"error\":", in->master_alive ? "true" : "false");
		vw_buf_json_str(b, in->error_reason);
		vw_buf_printf(b,
		              ",\"channels_version\":%" PRIu64 ",\"channel_count\":%d,"
		              "\"eu_count\":%d",
		              st->list_version, st->nchannels, st->neus);
		encode_assets(st, b);
		if (st->federation[0] != '\0') {
			vw_buf_puts(b, ",\"federation\":");
			vw_buf_puts(b, st->federation);
		}
		if (with_rd) {
			encode_rd(st, b);
		}
	}
	const vw_stats_t *s = &st->stats;
	vw_buf_printf(b, ",\"sampling\":{\"hz\":%.2f,\"max_hz\":%d,\"cpu\":%.3f}",
	              isfinite(st->sample_hz) ? st->sample_hz : 0.0, st->sample_hz_max,
	              isfinite(st->cpu) ? st->cpu : 0.0);
	vw_buf_printf(
	    b,
	    ",\"viewer\":{\"sessions\":%d,\"frames_sent\":%" PRIu64 ",\"frames_dropped\":%" PRIu64
	    ",\"frames_throttled\":%" PRIu64 ",\"pending_bytes\":%" PRIu64
	    ",\"pending_max\":%" PRIu64 ",\"refused_path\":%" PRIu64 ",\"refused_message\":%" PRIu64
	    ",\"refused_token\":%" PRIu64 ",",
	    s->sessions, s->frames_sent, s->frames_dropped, s->frames_throttled, s->pending_bytes,
	    s->pending_max, s->refused_path, s->refused_message, s->refused_token);
	const vw_fox_stats_t *f = &s->fox;
	vw_buf_printf(b,
	              "\"foxglove\":{\"sessions\":%d,\"channels\":%d,\"messages_sent\":%" PRIu64
	              ",\"messages_dropped\":%" PRIu64 ",\"throttled\":%" PRIu64
	              ",\"refused\":%" PRIu64 ",\"published\":%" PRIu64 ",\"pending_max\":%" PRIu64
	              "}}}",
	              f->sessions, f->channels, f->messages_sent, f->messages_dropped, f->throttled,
	              f->refused, f->published, f->pending_max);
}
