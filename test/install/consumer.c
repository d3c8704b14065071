/* A program built against an installed hako: the Hakoniwa-style include, and calls into each
 * library (base, registry, core, endpoint, bridge, conductor, rd), so a library missing from
 * hako.pc or the CMake package, or a symbol not exported, fails the link. */
#include <hako_asset.h>
#include <hako/bridge_config.h>
#include <hako/conductor.h>
#include <hako/domain.h>
#include <hako/endpoint.h>
#include <hako/frame.h>
#include <hako/log.h>
#include <hako/msgs/geometry_msgs/Twist.h>
#include <hako/pdu.h>
#include <hako/rd.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	/* base */
	if (strcmp(hako_strerror(HAKO_ESIZE), "size mismatch") != 0) {
		return 1;
	}
	hako_log_set_level(HAKO_LOG_OFF);
	/* core */
	hako_domain_config_t cfg;
	hako_domain_config_init(&cfg);
	if (cfg.max_assets == 0 || hako_asset_simulation_time() != 0) {
		return 1;
	}
	/* registry: a generated type header over the codec */
	unsigned char pdu[HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST];
	if (hako_pdu_geometry_msgs_Twist_init(pdu, sizeof(pdu)) != 0) {
		return 1;
	}
	Hako_Twist *t = hako_pdu_geometry_msgs_Twist_base(pdu);
	t->linear.x = 1.5;
	if (hako_pdu_classify(pdu, sizeof(pdu)) != HAKO_PDU_VALID) {
		return 1;
	}
	/* endpoint: the size of a v2 frame for this PDU */
	if (hako_frame_size(HAKO_FRAME_V2, "Robot", sizeof(pdu)) != 304 + sizeof(pdu)) {
		return 1;
	}
	/* bridge, conductor and rd: their loaders, on a file that is not there */
	hako_error_t err;
	hako_bridge_config_t *bc = NULL;
	hako_conductor_config_t *cc = NULL;
	hako_rd_config_t *rc = NULL;
	if (hako_bridge_config_load("/nonexistent/bridge.json", "n", NULL, &bc, &err) !=
	        HAKO_ENOENT ||
	    hako_conductor_config_load("/nonexistent/conductor.json", &cc, &err) != HAKO_ENOENT ||
	    hako_rd_config_load("/nonexistent/rd.json", &rc, &err) != HAKO_ENOENT) {
		return 1;
	}
	/* rd: the status PDUs of a domain (none given) */
	size_t found = 0;
	if (hako_rd_status_read(NULL, NULL, 0, &found) != HAKO_EINVAL) {
		return 1;
	}
	printf("hako consumer ok\n");
	return 0;
}
