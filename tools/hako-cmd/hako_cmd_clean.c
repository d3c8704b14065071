/* hako-cmd clean: remove a domain's segment. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "hako_cmd.h"

int hakoi_cmd_clean(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"force", no_argument, NULL, 'f'}, HAKOI_CMD_LONG_OPTIONS, {NULL, 0, NULL, 0}};
	int force = 0, c, r;
	while ((c = getopt_long(argc, argv, ":d:hf", longopts, NULL)) != -1) {
		if (c == 'f') {
			force = 1;
		} else if ((r = hakoi_cmd_option(cmd, c, argv)) >= 0) {
			return r;
		}
	}
	if ((r = hakoi_cmd_no_operands(cmd, argc, argv)) >= 0) {
		return r;
	}
	hako_domain_t *dom = NULL;
	unsigned uid;
	if (force) {
		/* Nothing of the segment is read: whatever it holds, it goes. */
		r = hako_domain_owner(hakoi_cmd_domain(), &uid) == HAKO_ENOENT ? HAKO_ENOENT
		                                                               : HAKO_EAGAIN;
	} else {
		hakoi_cmd_library_quiet(1);
		r = hako_domain_open(hakoi_cmd_domain(), &dom);
		hakoi_cmd_library_quiet(0);
	}
	if (r == HAKO_ENOENT) {
		hakoi_cmd_errf("no domain '%s': nothing to clean", hakoi_cmd_domain());
		return 1;
	}
	if (r == HAKO_EPERM) {
		hakoi_cmd_errf(
		    "domain '%s': /dev/shm/hako.%s belongs to another user; remove it anyway with: "
		    "hako-cmd clean --force",
		    hakoi_cmd_domain(), hakoi_cmd_domain());
		return 1;
	}
	if (r == 0) {
		hako_domain_info_t info;
		int n = 0, alive = 0;
		hako_domain_get_info(dom, &info);
		hako_asset_info_t *a = hakoi_cmd_list_assets(dom, &n);
		for (int i = 0; a != NULL && i < n; i++) {
			alive += a[i].alive != 0;
		}
		free(a);
		hako_domain_close(dom);
		if (info.master_alive && !force) {
			hakoi_cmd_errf(
			    "domain '%s' has a live conductor (pid %d); stop it with Ctrl-C or "
			    "kill %d, or remove the segment anyway with: hako-cmd clean --force",
			    hakoi_cmd_domain(), info.master_pid, info.master_pid);
			return 1;
		}
		if (alive > 0) {
			printf("note: %d asset process%s still attached; %s keep%s the old "
			       "segment mapped\n",
			       alive, alive == 1 ? " is" : "es are", alive == 1 ? "it" : "they",
			       alive == 1 ? "s" : "");
		}
	}
	/* A segment that does not open (another layout version, garbage) is removed too: that is
	 * what clean is for. */
	r = hako_domain_remove(hakoi_cmd_domain());
	if (r != 0) {
		hakoi_cmd_errf("cannot remove /dev/shm/hako.%s: %s", hakoi_cmd_domain(),
		               hako_strerror(r));
		return 1;
	}
	printf("domain '%s' removed (/dev/shm/hako.%s)\n", hakoi_cmd_domain(), hakoi_cmd_domain());
	return 0;
}
