/* What the loader made of a launch file (hakoi_launch_dump, launch_config.h), one item a line:
 * hako-launch --check prints it, and the data-driven tests compare it. */
#include <stdio.h>

#include "launch_config.h"

/* A string in double quotes with '"', '\\' and control characters escaped. */
static void dump_quoted(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\') {
			fprintf(out, "\\%c", ch);
		} else if (ch < 0x20) {
			fprintf(out, "\\x%02x", ch);
		} else {
			fputc(ch, out);
		}
	}
	fputc('"', out);
}

static void dump_federation(const hakoi_launch_config_t *cfg, FILE *out)
{
	fprintf(out, "federation of %zu nodes, domains %s-<node id>\n", cfg->node_count,
	        cfg->prefix);
	fprintf(out, "log_dir %s\n", cfg->log_dir);
	fprintf(out, "grace_ms %lld\n", cfg->grace_ms);
	for (size_t i = 0; i < cfg->node_count; i++) {
		const hakoi_launch_node_t *n = &cfg->nodes[i];
		const hako_conductor_config_t *c = n->cfg->federation;
		fprintf(out, "node %s %s file %s domain %s log_dir %s\n", c->node_id,
		        c->role == HAKO_CONDUCTOR_SERVER ? "server" : "client", n->file, n->domain,
		        n->cfg->log_dir);
		fprintf(out, "  argv");
		for (size_t j = 0; j < cfg->procs[i].argc; j++) {
			fputc(' ', out);
			dump_quoted(out, cfg->procs[i].argv[j]);
		}
		fputc('\n', out);
		if (n->cfg->viewer.enabled) {
			fprintf(out, "  viewer port %lld\n", n->cfg->viewer.port);
		}
	}
}

static void dump_viewer(const hakoi_launch_config_t *cfg, FILE *out)
{
	const hakoi_launch_proc_t *p = &cfg->viewer.proc;
	fprintf(out, "viewer port=%lld log=%s/viewer.log\n", cfg->viewer.port, cfg->log_dir);
	fprintf(out, "  exe %s\n  argv", p->exe);
	for (size_t j = 0; j < p->argc; j++) {
		fputc(' ', out);
		dump_quoted(out, p->argv[j]);
	}
	fputc('\n', out);
}

static void dump_record(const hakoi_launch_config_t *cfg, FILE *out)
{
	const hakoi_launch_proc_t *p = &cfg->record.proc;
	fprintf(out, "record log=%s/record.log\n", cfg->log_dir);
	fprintf(out, "  exe %s\n  argv", p->exe);
	for (size_t j = 0; j < p->argc; j++) {
		fputc(' ', out);
		dump_quoted(out, p->argv[j]);
	}
	fputc('\n', out);
}

void hakoi_launch_dump(const hakoi_launch_config_t *cfg, FILE *out)
{
	static const char *const waits[] = {"nothing", "asset", "log"};
	if (cfg->node_count > 0) {
		dump_federation(cfg, out);
		return;
	}
	fprintf(out, "domain %s\n", cfg->domain);
	fprintf(out, "conductor delta_usec=%lld max_delay_usec=%lld real_time_factor=%g",
	        (long long)cfg->master.delta_usec, (long long)cfg->master.max_delay_usec,
	        cfg->master.real_time_factor);
	fprintf(out, " stop_at_usec=%lld\n", (long long)cfg->stop_at_usec);
	if (cfg->federation != NULL) {
		const hako_conductor_config_t *c = cfg->federation;
		fprintf(out, "federation %s node %s %s", cfg->federation_file, c->node_id,
		        c->role == HAKO_CONDUCTOR_SERVER ? "server of" : "client of");
		if (c->role == HAKO_CONDUCTOR_SERVER) {
			for (size_t i = 0; i < c->client_count; i++) {
				fprintf(out, "%s%s", i > 0 ? "," : " ", c->clients[i]);
			}
		} else {
			fprintf(out, " %s", c->server_id);
		}
		fprintf(out, " start_timeout_ms=%lld\n", cfg->start_timeout_ms);
	}
	if (cfg->sized) {
		fprintf(out,
		        "domain sized to the processes' needs: max_assets=%u max_channels=%u "
		        "arena_bytes=%llu\n",
		        cfg->core.max_assets, cfg->core.max_channels,
		        (unsigned long long)cfg->core.arena_bytes);
	}
	if (cfg->core_config != NULL) {
		fprintf(out, "core_config %s max_assets=%u max_channels=%u liveness=%s\n",
		        cfg->core_config, cfg->core.max_assets, cfg->core.max_channels,
		        cfg->core.liveness_policy == HAKO_LIVENESS_REMOVE ? "remove" : "error");
	}
	fprintf(out, "log_dir %s\n", cfg->log_dir);
	fprintf(out, "grace_ms %lld\n", cfg->grace_ms);
	for (size_t i = 0; i < cfg->path_count; i++) {
		fprintf(out, "path %s\n", cfg->path[i]);
	}
	if (cfg->viewer.enabled) {
		dump_viewer(cfg, out);
	}
	if (cfg->record.enabled) {
		dump_record(cfg, out);
	}
	for (size_t i = 0; i < cfg->proc_count; i++) {
		const hakoi_launch_proc_t *p = &cfg->procs[i];
		fprintf(out, "process %s phase=%s echo=%s\n", p->name,
		        p->phase == HAKOI_LAUNCH_PHASE_AFTER ? "after" : "run",
		        p->echo ? "true" : "false");
		fprintf(out, "  exe %s\n  argv", p->exe);
		for (size_t j = 0; j < p->argc; j++) {
			fputc(' ', out);
			dump_quoted(out, p->argv[j]);
		}
		fputc('\n', out);
		for (size_t j = 0; j < p->env_count; j++) {
			if (p->env[j].value == NULL) {
				fprintf(out, "  env %s unset\n", p->env[j].key);
				continue;
			}
			fprintf(out, "  env %s=", p->env[j].key);
			dump_quoted(out, p->env[j].value);
			fputc('\n', out);
		}
		fprintf(out, "  cwd %s\n", p->cwd != NULL ? p->cwd : "(inherited)");
		if (p->delay_ms > 0) {
			fprintf(out, "  delay_ms %lld\n", p->delay_ms);
		}
		fprintf(out, "  wait_for %s", waits[p->wait_for]);
		if (p->wait_for != HAKOI_LAUNCH_WAIT_NOTHING) {
			fputc(' ', out);
			dump_quoted(out, p->wait_what);
			fprintf(out, " timeout_ms=%lld", p->timeout_ms);
		}
		fputc('\n', out);
		if (p->restart_on_failure) {
			fprintf(out, "  restart on-failure max_restarts=%d\n", p->max_restarts);
		} else {
			fprintf(out, "  restart never\n");
		}
		if (p->continue_on_failure) {
			fprintf(out, "  on_failure continue\n");
		}
	}
}
