/* The udp comm: not built yet (ep_comm.h). */
#include "ep_comm.h"

static int stub_open(const hakoi_comm_ctx_t *ctx, void **impl, hako_error_t *err)
{
	(void)impl;
	return hako_error_set(err, HAKO_ENOTSUP, ctx->cfg->path, 0, 0,
	                      "the udp comm is not implemented yet");
}

const hakoi_comm_ops_t hakoi_comm_udp_ops = {.open = stub_open};
