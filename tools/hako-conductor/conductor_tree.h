/* hako-conductor tree: every file of a tree Hakoniwa's gen writes, said loaded (by which hako
 * loader), read and not used (and why), refused (file:line:column) or unknown
 * (docs/hakoniwa-compat.md). Internal to the tool. */
#ifndef HAKOI_CONDUCTOR_TREE_H
#define HAKOI_CONDUCTOR_TREE_H

#include "hako_cli.h"

/* The "tree" command: exit 0 when no file is refused or unknown, 1 otherwise. */
int hakoi_tree_command(const hako_cli_command_t *cmd, int argc, char **argv);

#endif
