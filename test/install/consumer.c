/* A program built against an installed hako: the Hakoniwa-style include and the handle API. */
#include <hako_asset.h>
#include <hako/domain.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	hako_domain_config_t cfg;
	hako_domain_config_default(&cfg);
	if (cfg.max_assets == 0 || strcmp(hako_strerror(HAKO_ESIZE), "size mismatch") != 0) {
		return 1;
	}
	printf("hako consumer ok\n");
	return 0;
}
