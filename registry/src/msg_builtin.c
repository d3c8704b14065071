/* The built-in .msg packages: a table compiled into the library by cmake/embed_msgs.cmake
 * (msg_builtin_data.c in the build tree), sorted by package, then type. */
#include "msg_internal.h"

#include <stdlib.h>
#include <string.h>

struct key {
	const char *pkg;
	const char *name;
};

static int by_key(const void *k, const void *e)
{
	const struct key *key = k;
	const struct hakoi_builtin_msg *m = e;
	int d = strcmp(key->pkg, m->pkg);
	return d != 0 ? d : strcmp(key->name, m->name);
}

const char *hako_msg_builtin_text(const char *pkg, const char *name)
{
	if (pkg == NULL || name == NULL || hakoi_builtin_msg_count == 0) {
		return NULL;
	}
	struct key key = {pkg, name};
	const struct hakoi_builtin_msg *m =
	    bsearch(&key, hakoi_builtin_msgs, hakoi_builtin_msg_count, sizeof(*m), by_key);
	return m != NULL ? m->text : NULL;
}

size_t hako_msg_builtin_count(void)
{
	return hakoi_builtin_msg_count;
}

void hako_msg_builtin_at(size_t i, const char **pkg, const char **name)
{
	int in = i < hakoi_builtin_msg_count;
	if (pkg != NULL) {
		*pkg = in ? hakoi_builtin_msgs[i].pkg : NULL;
	}
	if (name != NULL) {
		*name = in ? hakoi_builtin_msgs[i].name : NULL;
	}
}
