/* record-probe: a reader asset for the record / replay tests. At every step it reads the
 * channels it is given and prints one line per channel: the world time T its step brings it to,
 * robot:id, the write number and a hash of the PDU's values (the bytes after the 24-byte meta
 * header, so the RD epoch byte does not count).
 *
 * With --after ASSET it reads only once ASSET's clock has passed T (ASSET wrote what it had to
 * write by T, and cannot write more before this step is done when Dmax is one step): what
 * hako-replay promises to hold at T, read without a race.
 *
 * usage: record-probe --asset NAME [--after ASSET] --out FILE ROBOT:ID... */
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako/domain.h"

#define MAXCH 16

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h = (h ^ p[i]) * 1099511628211ull;
	}
	return h;
}

static hako_time_t asset_time(hako_domain_t *dom, const char *name, int *found)
{
	hako_asset_info_t a[64];
	int n = 0;
	*found = 0;
	if (hako_domain_list_assets(dom, a, 64, &n) != 0) {
		return 0;
	}
	for (int i = 0; i < n && i < 64; i++) {
		if (strcmp(a[i].name, name) == 0) {
			*found = 1;
			return a[i].time_usec;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *asset = NULL, *after = NULL, *out = NULL;
	char robot[MAXCH][HAKO_NAME_MAX];
	int32_t id[MAXCH];
	hako_channel_t *ch[MAXCH] = {0};
	int n = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--asset") == 0 && i + 1 < argc) {
			asset = argv[++i];
		} else if (strcmp(argv[i], "--after") == 0 && i + 1 < argc) {
			after = argv[++i];
		} else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
			out = argv[++i];
		} else if (n < MAXCH && strchr(argv[i], ':') != NULL) {
			char *c = strchr(argv[i], ':');
			snprintf(robot[n], sizeof(robot[n]), "%.*s", (int)(c - argv[i]), argv[i]);
			id[n++] = (int32_t)atoi(c + 1);
		} else {
			fprintf(stderr, "record-probe: bad argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (asset == NULL || out == NULL || n == 0) {
		fprintf(
		    stderr,
		    "usage: record-probe --asset NAME [--after ASSET] --out FILE ROBOT:ID...\n");
		return 2;
	}
	FILE *f = fopen(out, "w");
	hako_domain_t *dom;
	hako_member_t *m;
	hako_domain_info_t info;
	if (f == NULL || hako_domain_open(hako_domain_default_name(), &dom) != 0 ||
	    hako_domain_get_info(dom, &info) != 0 ||
	    hako_member_register(dom, asset, info.delta_usec, &m) != 0) {
		fprintf(stderr, "record-probe: cannot open %s or register in the domain\n", out);
		return 1;
	}
	printf("record-probe: registered\n");
	fflush(stdout);
	static uint8_t buf[1 << 20];
	uint64_t steps = 0;
	for (int running = 1; running;) {
		int ev = 0;
		if (hako_member_wait_event(m, -1, &ev) != 0) {
			break;
		}
		hako_member_ack(m, ev);
		if (ev == HAKO_EVENT_RESET || ev == HAKO_EVENT_ERROR) {
			break;
		}
		if (ev != HAKO_EVENT_START) {
			continue;
		}
		while (hako_member_step_wait(m) == 0) {
			hako_time_t T = hako_member_time(m) + hako_member_delta(m);
			int found = 1;
			while (after != NULL && found && asset_time(dom, after, &found) < T &&
			       hako_domain_state(dom) == HAKO_STATE_RUNNING) {
				sched_yield();
			}
			for (int i = 0; i < n; i++) {
				if (ch[i] == NULL &&
				    hako_channel_lookup(dom, robot[i], id[i], &ch[i]) != 0) {
					ch[i] = NULL;
				}
				size_t len = 0;
				uint64_t seq = 0;
				if (ch[i] != NULL) {
					hako_channel_read(ch[i], buf, sizeof(buf), &len, &seq);
				}
				fprintf(f, "%lld %s:%d %" PRIu64 " %016" PRIx64 "\n", (long long)T,
				        robot[i], id[i], seq,
				        len > 24 ? fnv(buf + 24, len - 24) : 0);
			}
			steps++;
			hako_member_step_done(m);
		}
		(void)running;
	}
	fclose(f);
	printf("record-probe: done: %" PRIu64 " steps\n", steps);
	hako_member_unregister(m);
	hako_domain_close(dom);
	return 0;
}
