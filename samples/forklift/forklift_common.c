/* Helpers shared by the forklift programs. See forklift.h. */
#include "forklift.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hako/error.h"
#include "hako/msgs/std_msgs/Float64MultiArray.h"
#include "hako/pdu.h"

const char *forklift_config_path(const char *name, char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash != NULL) {
			*slash = '\0';
			if (snprintf(buf, len, "%s/%s", exe, name) < (int)len &&
			    access(buf, R_OK) == 0) {
				return buf;
			}
		}
	}
	snprintf(buf, len, "%s/%s", FORKLIFT_SHARE_DIR, name);
	return buf;
}

int forklift_mission_encode(const forklift_mission_t *m, void *pdu, size_t cap, size_t *len)
{
	hako_pdu_writer_t w;
	int r = hako_pdu_std_msgs_Float64MultiArray_writer_init(&w, pdu, cap);
	if (r != 0) {
		return r;
	}
	Hako_Float64MultiArray *base = hako_pdu_std_msgs_Float64MultiArray_base(pdu);
	double *data =
	    hako_pdu_std_msgs_Float64MultiArray_data_alloc(&w, base, FORKLIFT_MISSION_VALUES);
	if (data == NULL) {
		return w.error;
	}
	const double v[FORKLIFT_MISSION_VALUES] = {m->forward_m, m->backward_m, m->speed,
	                                           m->lift_height, (double)m->loops};
	memcpy(data, v, sizeof(v)); /* the heap is packed: no alignment promised */
	return hako_pdu_writer_finish(&w, len);
}

int forklift_mission_decode(const void *pdu, size_t len, forklift_mission_t *m)
{
	if (hako_pdu_classify(pdu, len) == HAKO_PDU_UNINITIALIZED) {
		return HAKO_EAGAIN;
	}
	hako_pdu_meta_t meta;
	if (hako_pdu_meta_read(pdu, len, &meta) != 0) {
		return HAKO_EPROTO;
	}
	uint32_t count = 0;
	const double *data = hako_pdu_std_msgs_Float64MultiArray_data(pdu, meta.total_size, &count);
	if (data == NULL || count != FORKLIFT_MISSION_VALUES) {
		return HAKO_EPROTO;
	}
	double v[FORKLIFT_MISSION_VALUES];
	memcpy(v, data, sizeof(v));
	if (!(v[4] >= 0 && v[4] <= UINT32_MAX) || v[4] != floor(v[4])) {
		return HAKO_EPROTO;
	}
	forklift_mission_t out = {v[0], v[1], v[2], v[3], (uint32_t)v[4]};
	if (forklift_mission_check(&out) != 0) {
		return HAKO_EPROTO;
	}
	*m = out;
	return 0;
}

void forklift_mission_describe(const forklift_mission_t *m, char *buf, size_t len)
{
	char loops[48];
	if (m->loops == 0) {
		snprintf(loops, sizeof(loops), "repeat");
	} else {
		snprintf(loops, sizeof(loops), "%u time%s", m->loops, m->loops == 1 ? "" : "s");
	}
	double speed = m->speed < FORKLIFT_V_MAX ? m->speed : FORKLIFT_V_MAX;
	snprintf(buf, len, "forward %.2f m, lift %.2f m, back %.2f m, lift down, %s (%.2f m/s)",
	         m->forward_m, m->lift_height, m->backward_m, loops, speed);
}

int forklift_parse_double(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end != '\0' || errno != 0 || !isfinite(v)) {
		return -1;
	}
	*out = v;
	return 0;
}

int forklift_parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (end == s || *end != '\0' || errno != 0 || s[0] == '-' || v > max) {
		return -1;
	}
	*out = v;
	return 0;
}
