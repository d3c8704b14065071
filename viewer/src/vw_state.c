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

static void encode_channels(const vw_state_t *st, int full, vw_buf_t *b)
{
	vw_buf_puts(b, ",\"channels\":[");
	for (int i = 0; i < st->nchannels; i++) {
		const vw_channel_t *c = &st->channels[i];
		vw_buf_puts(b, i ? ",{\"robot\":" : "{\"robot\":");
		vw_buf_json_str(b, c->robot);
		vw_buf_printf(b, ",\"id\":%d,\"name\":", (int)c->id);
		vw_buf_json_str(b, c->name);
		vw_buf_puts(b, ",\"type\":");
		vw_buf_json_str(b, c->type);
		vw_buf_printf(b, ",\"size\":%u,\"seq\":%" PRIu64 ",\"rate_hz\":%.1f", c->size,
		              c->seq, isfinite(c->rate_hz) ? c->rate_hz : 0.0);
		if (c->too_big) {
			vw_buf_puts(b, ",\"too_big\":true");
		}
		/* A value is sent when it changed, or to a client that has to start over: the page
		 * keeps the last one it got. */
		if (full || c->changed) {
			vw_buf_puts(b, ",\"value\":");
			vw_buf_puts(b, c->json != NULL ? c->json : "null");
		}
		vw_buf_puts(b, "}");
	}
	vw_buf_puts(b, "]");
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

void vw_state_encode(const vw_state_t *st, int full, vw_buf_t *b)
{
	const hako_domain_info_t *in = &st->info;
	vw_buf_puts(b, "{\"type\":\"state\",\"full\":");
	vw_buf_puts(b, full ? "true" : "false");
	vw_buf_puts(b, ",\"domain\":");
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
		encode_assets(st, b);
		encode_channels(st, full, b);
		encode_rd(st, b);
	}
	const vw_stats_t *s = &st->stats;
	vw_buf_printf(b,
	              ",\"viewer\":{\"sessions\":%d,\"frames_sent\":%" PRIu64
	              ",\"frames_dropped\":%" PRIu64 ",\"pending_bytes\":%" PRIu64
	              ",\"pending_max\":%" PRIu64 ",\"refused_path\":%" PRIu64
	              ",\"refused_message\":%" PRIu64 ",\"refused_token\":%" PRIu64 "}}",
	              s->sessions, s->frames_sent, s->frames_dropped, s->pending_bytes,
	              s->pending_max, s->refused_path, s->refused_message, s->refused_token);
}
