/* Zones: drones handed between two hosts at x = 0 (fleet_zones.h). */
#include "fleet_zones.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_host.h"
#include "formation.h"
#include "hako/error.h"
#include "hako/msgs/geometry_msgs/Twist.h"
#include "hako/msgs/hako_mavlink_msgs/HakoHilActuatorControls.h"
#include "hako/msgs/hako_msgs/DroneStatus.h"
#include "hako/rd.h"

enum { P_MOTOR, P_POS, P_VELOCITY, P_STATUS, P_COUNT };

struct zdrone {
	drone_t d;
	hako_rd_trigger_state_t tst;
	size_t pdu[P_COUNT]; /* index of each PDU in the EU's writes */
};

struct fleet_zones {
	hako_domain_t *dom;
	hako_rd_config_t *cfg;
	hako_rd_node_t *node;
	uint8_t self;
	drone_params_t params;
	hako_time_t dmax;
	size_t total;
	struct zdrone *z;
	uint64_t releases, activations;
};

int fleet_zones_write_config(const char *dir, size_t total, char *rd_path, size_t len)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/drone_pdutypes.json", dir);
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		return -1;
	}
	fprintf(f, "[\n"
	           "  {\"channel_id\": 0, \"pdu_size\": 112, \"name\": \"motor\", "
	           "\"type\": \"hako_mavlink_msgs/HakoHilActuatorControls\"},\n"
	           "  {\"channel_id\": 1, \"pdu_size\": 72, \"name\": \"pos\", "
	           "\"type\": \"geometry_msgs/Twist\"},\n"
	           "  {\"channel_id\": 5, \"pdu_size\": 72, \"name\": \"velocity\", "
	           "\"type\": \"geometry_msgs/Twist\"},\n"
	           "  {\"channel_id\": 18, \"pdu_size\": 64, \"name\": \"status\", "
	           "\"type\": \"hako_msgs/DroneStatus\"},\n"
	           "  {\"channel_id\": 30, \"pdu_size\": 256, \"name\": \"rd_status\", "
	           "\"type\": \"hako_msgs/ExecutionUnitRuntimeStatus\"},\n"
	           "  {\"channel_id\": 31, \"pdu_size\": 320, \"name\": \"rd_context\", "
	           "\"type\": \"hako_msgs/ExecutionUnitRuntimeContext\"}\n"
	           "]\n");
	if (fclose(f) != 0) {
		return -1;
	}
	snprintf(path, sizeof(path), "%s/fleet_pdudef.json", dir);
	if ((f = fopen(path, "w")) == NULL) {
		return -1;
	}
	fprintf(f, "{\"paths\": [{\"id\": \"drone\", \"path\": \"drone_pdutypes.json\"}],\n"
	           " \"robots\": [");
	for (size_t k = 1; k <= total; k++) {
		fprintf(f, "%s{\"name\": \"Drone-%zu\", \"pdutypes_id\": \"drone\"}",
		        k > 1 ? ",\n    " : "", k);
	}
	fprintf(f, "]}\n");
	if (fclose(f) != 0) {
		return -1;
	}
	snprintf(path, sizeof(path), "%s/fleet_rd.json", dir);
	if ((f = fopen(path, "w")) == NULL) {
		return -1;
	}
	drone_params_t p;
	drone_params_default(&p);
	fprintf(
	    f,
	    "{\"pdudef\": \"fleet_pdudef.json\",\n"
	    " \"nodes\": [{\"id\": 1, \"name\": \"west\"}, {\"id\": 2, \"name\": \"east\"}],\n"
	    " \"handoff_timeout_usec\": 200000,\n"
	    " \"trigger\": {\"type\": \"boundary\", \"axis\": \"x\", \"boundary\": 0.0, "
	    "\"v_max\": %.1f, \"hysteresis\": 0.3, \"cooldown_usec\": 300000, \"low_owner\": 1, "
	    "\"high_owner\": 2},\n"
	    " \"execution_units\": [",
	    p.v_max + 0.5);
	for (size_t i = 0; i < total; i++) {
		double start[3];
		fleet_formation_point(FLEET_GRID, i, total, start);
		fprintf(
		    f,
		    "%s{\"id\": %zu, \"name\": \"drone-%zu\", \"robot\": \"Drone-%zu\", "
		    "\"writes\": [\"motor\", \"pos\", \"velocity\", \"status\"], \"candidates\": "
		    "[1, 2], \"initial_owner\": %d, \"max_context_bytes\": %u, \"status\": "
		    "\"rd_status\", \"context\": \"rd_context\"}",
		    i > 0 ? ",\n    " : "", i, i + 1, i + 1, start[0] < 0 ? 1 : 2,
		    DRONE_CONTEXT_SIZE);
	}
	fprintf(f, "]}\n");
	if (fclose(f) != 0) {
		return -1;
	}
	if (snprintf(rd_path, len, "%s/fleet_rd.json", dir) >= (int)len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static size_t write_index(const hako_rd_eu_config_t *eu, const char *name)
{
	for (size_t k = 0; k < eu->write_count; k++) {
		if (strcmp(eu->writes[k].name, name) == 0) {
			return k;
		}
	}
	return SIZE_MAX;
}

int fleet_zones_open(hako_domain_t *dom, const char *rd_path, uint8_t node, const char *trace,
                     fleet_zones_t **out, char *why, size_t why_len)
{
	*out = NULL;
	fleet_zones_t *z = calloc(1, sizeof(*z));
	if (z == NULL) {
		return HAKO_ENOMEM;
	}
	z->dom = dom;
	z->self = node;
	drone_params_default(&z->params);
	hako_error_t err;
	int r = hako_rd_config_load(rd_path, &z->cfg, &err);
	if (r != 0) {
		hako_error_format(&err, why, why_len);
		free(z);
		return r;
	}
	hako_domain_info_t info;
	z->dmax = hako_domain_get_info(dom, &info) == 0 ? info.max_delay_usec : 1000;
	z->total = z->cfg->eu_count;
	z->z = calloc(z->total, sizeof(*z->z));
	if (z->z == NULL) {
		fleet_zones_close(z);
		return HAKO_ENOMEM;
	}
	static const char *const names[P_COUNT] = {"motor", "pos", "velocity", "status"};
	for (size_t i = 0; i < z->total; i++) {
		double start[3];
		fleet_formation_point(FLEET_GRID, i, z->total, start);
		drone_init(&z->z[i].d, start[0], start[1], 0.0);
		for (int k = 0; k < P_COUNT; k++) {
			z->z[i].pdu[k] = write_index(&z->cfg->eus[i], names[k]);
			if (z->z[i].pdu[k] == SIZE_MAX) {
				snprintf(why, why_len, "%s: EU %s does not write \"%s\"", rd_path,
				         z->cfg->eus[i].name, names[k]);
				fleet_zones_close(z);
				return HAKO_ECONFIG;
			}
		}
		hako_rd_trigger_reset(&z->z[i].tst, start[0], 0);
	}
	if ((r = hako_rd_node_open(dom, z->cfg, node, trace, &z->node)) != 0) {
		snprintf(why, why_len, "%s: node %u: %s", rd_path, node, hako_strerror(r));
		fleet_zones_close(z);
		return r;
	}
	hako_rd_trace_writes(z->node, 0);
	*out = z;
	return 0;
}

void fleet_zones_close(fleet_zones_t *z)
{
	if (z == NULL) {
		return;
	}
	hako_rd_node_close(z->node);
	hako_rd_config_free(z->cfg);
	free(z->z);
	free(z);
}

/* The drone's four PDUs, through the RD node (it stamps the epoch and checks the owner). */
static int write_pdus(fleet_zones_t *z, uint32_t eu, struct zdrone *zd, int64_t mt)
{
	uint8_t motor[HAKO_PDU_SIZE_HAKO_MAVLINK_MSGS_HAKOHILACTUATORCONTROLS];
	uint8_t pos[HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST], vel[HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST];
	uint8_t status[HAKO_PDU_SIZE_HAKO_MSGS_DRONESTATUS];
	void *const pdu[P_COUNT] = {motor, pos, vel, status};
	const size_t len[P_COUNT] = {sizeof(motor), sizeof(pos), sizeof(vel), sizeof(status)};
	fleet_drone_pdus(&zd->d, mt, pdu);
	for (int k = 0; k < P_COUNT; k++) {
		int r = hako_rd_write(z->node, eu, zd->pdu[k], pdu[k], len[k], mt);
		if (r != 0) {
			return r;
		}
	}
	return 0;
}

int fleet_zones_step(fleet_zones_t *z, int64_t now)
{
	uint8_t ctx[DRONE_CONTEXT_SIZE];
	for (size_t i = 0; i < z->total; i++) {
		struct zdrone *zd = &z->z[i];
		uint32_t eu = z->cfg->eus[i].id;
		hako_rd_event_t ev = HAKO_RD_EV_NONE;
		hako_rd_activation_t act;
		int r = hako_rd_poll(z->node, eu, now, &ev, ctx, sizeof(ctx), &act);
		if (r != 0) {
			return r;
		}
		if (ev == HAKO_RD_EV_ACTIVATE) {
			drone_t restored;
			int ok = drone_context_unpack(&restored, ctx, act.ctx_len) == 0 &&
			         restored.step == act.model_step;
			if ((r = hako_rd_activate(z->node, eu, ok, now)) != 0) {
				return r;
			}
			if (ok) {
				zd->d = restored;
				z->activations++;
				hako_rd_trigger_reset(&zd->tst, restored.pos[0], now);
			}
		} else if (ev == HAKO_RD_EV_RECLAIMED) {
			hako_rd_trigger_reset(&zd->tst, zd->d.pos[0], now);
		}
		if (!hako_rd_is_owner(z->node, eu)) {
			continue;
		}
		/* Catch up to this step: a drone activated here runs the steps after its release.
		 */
		uint64_t target = (uint64_t)(now / DRONE_DT_USEC);
		if (zd->d.step >= target) {
			continue;
		}
		while (zd->d.step < target) {
			int64_t mt = (int64_t)(zd->d.step + 1) * DRONE_DT_USEC;
			fleet_mission_apply(&zd->d, i, z->total, mt);
			drone_step(&zd->d, &z->params);
			hako_rd_trace_step(z->node, eu, zd->d.step, mt);
		}
		int64_t mt = (int64_t)zd->d.step * DRONE_DT_USEC;
		if ((r = write_pdus(z, eu, zd, mt)) != 0) {
			return r;
		}
		double v[3];
		drone_velocity_world(&zd->d, v);
		uint8_t next = hako_rd_trigger_boundary(&z->cfg->trigger, &zd->tst, z->self,
		                                        zd->d.pos[0], v[0], mt, z->dmax);
		if (next != 0) {
			size_t n = drone_context_pack(&zd->d, ctx, sizeof(ctx));
			if ((r = hako_rd_release(z->node, eu, next, ctx, n, zd->d.step, mt)) != 0) {
				return r;
			}
			z->releases++;
		}
	}
	return 0;
}

size_t fleet_zones_total(const fleet_zones_t *z)
{
	return z != NULL ? z->total : 0;
}

int fleet_zones_owns(fleet_zones_t *z, size_t i)
{
	return z != NULL && i < z->total && hako_rd_is_owner(z->node, z->cfg->eus[i].id);
}

const drone_t *fleet_zones_drone(const fleet_zones_t *z, size_t i)
{
	return z != NULL && i < z->total ? &z->z[i].d : NULL;
}

uint64_t fleet_zones_releases(const fleet_zones_t *z)
{
	return z != NULL ? z->releases : 0;
}

uint64_t fleet_zones_activations(const fleet_zones_t *z)
{
	return z != NULL ? z->activations : 0;
}
