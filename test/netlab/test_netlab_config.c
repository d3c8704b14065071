/* hako-netlab's lab files: each cases/<name>/lab.json gives the exact error line, or "ok" and
 * the lab: the subnet, the switch and every node's address. A case folder with a file
 * "subnet" loads with that --subnet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hako_cases.h"
#include "netlab.h"

static void run_case(const char *dir, const char *input, char *out, size_t len, void *arg)
{
	(void)arg;
	char path[1024];
	snprintf(path, sizeof(path), "%s/subnet", dir);
	char *subnet = htc_read_all(path, NULL);
	if (subnet != NULL) {
		subnet[strcspn(subnet, "\n")] = '\0';
	}
	nl_lab_t lab;
	hako_error_t err;
	if (nl_lab_load(input, subnet, &lab, &err) != 0) {
		char buf[1700];
		htc_append(out, len, "%s\n", hako_error_format(&err, buf, sizeof(buf)));
	} else {
		char ip[16];
		htc_append(out, len, "ok\nsubnet %s\nswitch %s\n", lab.subnet_text,
		           nl_ip_text(lab.sw_ip, ip));
		for (size_t i = 0; i < lab.nnodes; i++) {
			htc_append(out, len, "node %s %s\n", lab.nodes[i].name,
			           nl_ip_text(lab.nodes[i].ip, ip));
		}
		nl_lab_free(&lab);
	}
	free(subnet);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_netlab_config CASES_DIR\n");
		return 2;
	}
	return htc_run_cases("netlab_config", argv[1], "lab.json", 10, HTC_EVERY_DIR, run_case,
	                     NULL);
}
