/* ${NAME} in a launch file's strings (launch_config.c has the loader): from the environment, or
 * what hako-launch sets for every process (HAKO_DOMAIN, HAKO_LAUNCH_DIR, HAKO_LAUNCH_LOG_DIR);
 * $$ is a '$'. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "launch_config_internal.h"

int hakoi_launch_is_var_start(int ch)
{
	return isalpha(ch) || ch == '_';
}

int hakoi_launch_is_var_char(int ch)
{
	return isalnum(ch) || ch == '_';
}

static const char *lookup_var(const struct ctx *c, const char *name)
{
	if (strcmp(name, "HAKO_DOMAIN") == 0 && c->var_domain != NULL) {
		return c->var_domain;
	}
	if (strcmp(name, "HAKO_LAUNCH_DIR") == 0 && c->var_dir != NULL) {
		return c->var_dir;
	}
	if (strcmp(name, "HAKO_LAUNCH_LOG_DIR") == 0 && c->var_log_dir != NULL) {
		return c->var_log_dir;
	}
	return getenv(name);
}

struct buf {
	char *p;
	size_t len;
	size_t cap;
};

static int buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap > 0 ? b->cap : 64;
		while (b->len + n + 1 > cap) {
			cap *= 2;
		}
		char *p = realloc(b->p, cap);
		if (p == NULL) {
			return -1;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* ${NAME} from the environment, $$ = '$'; anything else after '$' is an error at the current
 * path. *out is malloc'ed. */
static int expand(hakoi_walk_t *w, const char *in, char **out)
{
	struct buf b = {NULL, 0, 0};
	*out = NULL;
	if (buf_add(&b, "", 0) != 0) {
		return hakoi_walk_fail_oom(w);
	}
	const char *p = in;
	while (*p != '\0') {
		const char *dollar = strchr(p, '$');
		if (dollar == NULL) {
			dollar = p + strlen(p);
		}
		if (buf_add(&b, p, (size_t)(dollar - p)) != 0) {
			goto oom;
		}
		if (*dollar == '\0') {
			break;
		}
		if (dollar[1] == '$') {
			if (buf_add(&b, "$", 1) != 0) {
				goto oom;
			}
			p = dollar + 2;
			continue;
		}
		if (dollar[1] != '{') {
			free(b.p);
			return hakoi_walk_fail(
			    w, "a '$' must start ${NAME} or be doubled ($$ is a '$')");
		}
		const char *name = dollar + 2;
		const char *end = name;
		while (hakoi_launch_is_var_char((unsigned char)*end)) {
			end++;
		}
		if (*end != '}' || end == name ||
		    !hakoi_launch_is_var_start((unsigned char)*name)) {
			const char *close = strchr(name, '}');
			int n = close != NULL ? (int)(close - dollar + 1) : (int)strlen(dollar);
			free(b.p);
			return hakoi_walk_fail(
			    w,
			    "\"%.*s\" is not a variable reference ${NAME} (NAME: "
			    "letters, digits, '_')",
			    n, dollar);
		}
		char var[256];
		size_t vlen = (size_t)(end - name);
		if (vlen >= sizeof(var)) {
			free(b.p);
			return hakoi_walk_fail(w, "variable name too long");
		}
		memcpy(var, name, vlen);
		var[vlen] = '\0';
		const char *val = lookup_var(ctx_of(w), var);
		if (val == NULL) {
			free(b.p);
			return hakoi_walk_fail(w, "${%s} is not set in the environment", var);
		}
		if (buf_add(&b, val, strlen(val)) != 0) {
			goto oom;
		}
		p = end + 1;
	}
	*out = b.p;
	return 0;
oom:
	free(b.p);
	return hakoi_walk_fail_oom(w);
}

/* A string member (HAKOI_F_EMPTY_OK: "" too) expanded into the char * at base + f->offset. */
int hakoi_launch_parse_expanded(hakoi_walk_t *w, json_t *v, void *base, const hakoi_field_t *f)
{
	if (!json_is_string(v)) {
		return hakoi_walk_fail_must(w, "a string");
	}
	int r =
	    hakoi_walk_string(w, json_string_value(v), json_string_length(v), f->flags, NULL, 0);
	if (r != 0) {
		return r;
	}
	char **dst = (char **)(void *)((char *)base + f->offset);
	free(*dst);
	*dst = NULL;
	return expand(w, json_string_value(v), dst);
}
