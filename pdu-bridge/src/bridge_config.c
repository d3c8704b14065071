/* The bridge file loader: not built yet. */
#include "hako/bridge_config.h"

int hako_bridge_config_load(const char *path, const char *node, const char *container_path,
                            hako_bridge_config_t **out, hako_error_t *err)
{
	(void)node;
	(void)container_path;
	if (out != 0) {
		*out = 0;
	}
	return hako_error_set(err, HAKO_ENOTSUP, path != 0 ? path : "", 0, 0,
	                      "not implemented yet");
}

void hako_bridge_config_free(hako_bridge_config_t *cfg)
{
	(void)cfg;
}
