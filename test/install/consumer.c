/* A program built against an installed hako: the Hakoniwa-style include, the handle API, and a
 * generated PDU type header, the endpoint library. */
#include <hako_asset.h>
#include <hako/domain.h>
#include <hako/endpoint.h>
#include <hako/msgs/geometry_msgs/Twist.h>
#include <hako/pdu.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	if (cfg.max_assets == 0 || strcmp(hako_strerror(HAKO_ESIZE), "size mismatch") != 0) {
		return 1;
	}
	unsigned char pdu[HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST];
	if (hako_pdu_geometry_msgs_Twist_init(pdu, sizeof(pdu)) != 0) {
		return 1;
	}
	Hako_Twist *t = hako_pdu_geometry_msgs_Twist_base(pdu);
	t->linear.x = 1.5;
	if (hako_pdu_classify(pdu, sizeof(pdu)) != HAKO_PDU_VALID) {
		return 1;
	}
	/* The endpoint library: frame size of a v2 frame for this PDU. */
	if (hako_frame_size(HAKO_FRAME_V2, "Robot", sizeof(pdu)) != 304 + sizeof(pdu)) {
		return 1;
	}
	printf("hako consumer ok\n");
	return 0;
}
