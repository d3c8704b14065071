/* The files and folders a launch file names (launch_config.c has the loader): made absolute
 * against the file's folder, and a command found on the search path (a '/' in it: relative to
 * the file; else --path, the file's "path", then $PATH). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch_config_internal.h"

/* base + "/" + p unless p is absolute; malloc'ed, or NULL. */
char *hakoi_launch_join(const char *base, const char *p)
{
	size_t n = strlen(base) + strlen(p) + 2;
	char *s = malloc(n);
	if (s == NULL) {
		return NULL;
	}
	if (p[0] == '/') {
		snprintf(s, n, "%s", p);
	} else if (strcmp(p, ".") == 0) {
		snprintf(s, n, "%s", base);
	} else {
		snprintf(s, n, "%s/%s", base, p[0] == '.' && p[1] == '/' ? p + 2 : p);
	}
	return s;
}

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int hakoi_launch_is_exe(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* An absolute folder: p resolved against base, then canonical if it exists. */
char *hakoi_launch_abs_dir(const char *base, const char *p)
{
	char *j = hakoi_launch_join(base, p);
	char real[PATH_MAX];
	if (j != NULL && realpath(j, real) != NULL) {
		free(j);
		return strdup(real);
	}
	return j;
}

/* The expanded folder at the current path, made absolute against the launch file's folder;
 * it must exist. *out is malloc'ed (and set also when the folder does not exist). */
int hakoi_launch_parse_folder(hakoi_walk_t *w, json_t *v, char **out)
{
	char *e = NULL;
	hakoi_field_t f = {.flags = 0};
	int r = hakoi_launch_parse_expanded(w, v, &e, &f);
	if (r != 0) {
		return r;
	}
	*out = hakoi_launch_abs_dir(ctx_of(w)->cfg->dir, e);
	free(e);
	if (*out == NULL) {
		return hakoi_walk_fail_oom(w);
	}
	return is_dir(*out) ? 0 : hakoi_walk_fail(w, "%s is not a folder", *out);
}

/* Append dir to the list of folders looked in (for the error message), once. */
static void add_looked(char *looked, size_t len, const char *dir)
{
	size_t used = strlen(looked), n = strlen(dir);
	for (const char *hit = strstr(looked, dir); hit != NULL; hit = strstr(hit + 1, dir)) {
		if ((hit == looked || hit[-1] == ' ') && (hit[n] == ',' || hit[n] == '\0')) {
			return;
		}
	}
	if (used + 4 < len) {
		snprintf(looked + used, len - used, "%s%s", used > 0 ? ", " : "", dir);
	}
}

static char *find_in(const char *dir, const char *cmd, char *looked, size_t len)
{
	char *p = hakoi_launch_join(dir, cmd);
	add_looked(looked, len, dir);
	if (p != NULL && hakoi_launch_is_exe(p)) {
		return p;
	}
	free(p);
	return NULL;
}

/* The executable of a command (at the current path): with a '/', relative to the launch file;
 * else in the folders `first` (absolute), the --path folders, the file's "path", then $PATH.
 * *exe is malloc'ed and absolute. name: the process, for the error (NULL: none). */
int hakoi_launch_resolve_command_in(hakoi_walk_t *w, const char *name, const char *cmd,
                                    const char *const *first, size_t nfirst, char **exe)
{
	struct ctx *c = ctx_of(w);
	*exe = NULL;
	if (strchr(cmd, '/') != NULL) {
		char *p = hakoi_launch_join(c->cfg->dir, cmd);
		if (p == NULL) {
			return hakoi_walk_fail_oom(w);
		}
		if (!hakoi_launch_is_exe(p)) {
			int r = hakoi_walk_fail(w, "process \"%s\": %s %s", name, p,
			                        access(p, F_OK) != 0 ? "does not exist"
			                                             : "is not an executable file");
			free(p);
			return r;
		}
		*exe = p;
		return 0;
	}
	char looked[2048] = "";
	for (size_t i = 0; i < nfirst && *exe == NULL; i++) {
		*exe = find_in(first[i], cmd, looked, sizeof(looked));
	}
	const hakoi_launch_options_t *o = c->opt;
	for (size_t i = 0; o != NULL && i < o->search_count && *exe == NULL; i++) {
		char *d = hakoi_launch_abs_dir(c->cwd, o->search[i]);
		if (d == NULL) {
			return hakoi_walk_fail_oom(w);
		}
		*exe = find_in(d, cmd, looked, sizeof(looked));
		free(d);
	}
	for (size_t i = 0; i < c->cfg->path_count && *exe == NULL; i++) {
		*exe = find_in(c->cfg->path[i], cmd, looked, sizeof(looked));
	}
	const char *env = getenv("PATH");
	char *copy = strdup(env != NULL ? env : "/usr/local/bin:/usr/bin:/bin");
	if (copy == NULL) {
		free(*exe);
		*exe = NULL;
		return hakoi_walk_fail_oom(w);
	}
	char *save = NULL;
	for (char *d = strtok_r(copy, ":", &save); d != NULL && *exe == NULL;
	     d = strtok_r(NULL, ":", &save)) {
		char *a = hakoi_launch_abs_dir(c->cwd, d);
		if (a == NULL) {
			free(copy);
			return hakoi_walk_fail_oom(w);
		}
		*exe = find_in(a, cmd, looked, sizeof(looked));
		free(a);
	}
	free(copy);
	if (*exe == NULL) {
		return hakoi_walk_fail(w, "%s%s%s\"%s\" not found (looked in %s)",
		                       name != NULL ? "process \"" : "", name != NULL ? name : "",
		                       name != NULL ? "\": " : "", cmd,
		                       looked[0] != '\0' ? looked : "no folder");
	}
	return 0;
}

int hakoi_launch_resolve_command(hakoi_walk_t *w, const char *name, const char *cmd, char **exe)
{
	return hakoi_launch_resolve_command_in(w, name, cmd, NULL, 0, exe);
}
