/* The `ros2msg` schema text of a type and its dependencies, written from the type model. */
#include "hako/cdr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sout {
	char *out;
	size_t cap;
	size_t len; /* keeps counting past cap */
};

static void put(struct sout *s, const char *text, size_t n)
{
	if (s->len < s->cap && n < s->cap - s->len) {
		memcpy(s->out + s->len, text, n);
	}
	s->len += n;
}

static void puts_(struct sout *s, const char *text)
{
	put(s, text, strlen(text));
}

static void put_fields(struct sout *s, const hako_msg_type_t *type)
{
	for (size_t i = 0; i < type->field_count; i++) {
		const hako_msg_field_t *f = &type->fields[i];
		puts_(s, f->kind == HAKO_MSG_STRUCT ? f->type->full_name
		                                    : hako_msg_kind_name(f->kind));
		if (f->form == HAKO_MSG_ARRAY) {
			char n[24];
			snprintf(n, sizeof(n), "[%u]", f->count);
			puts_(s, n);
		} else if (f->form == HAKO_MSG_VARRAY) {
			puts_(s, "[]");
		}
		puts_(s, " ");
		puts_(s, f->name);
		puts_(s, "\n");
	}
}

struct deps {
	const hako_msg_type_t **v;
	size_t n;
	size_t cap;
};

/* Every type `type` uses, depth first, each once, in the order first met. */
static int collect(struct deps *d, const hako_msg_type_t *type)
{
	for (size_t i = 0; i < type->field_count; i++) {
		const hako_msg_type_t *t = type->fields[i].type;
		if (type->fields[i].kind != HAKO_MSG_STRUCT || t == NULL) {
			continue;
		}
		int seen = 0;
		for (size_t j = 0; j < d->n && !seen; j++) {
			seen = d->v[j] == t;
		}
		if (seen) {
			continue;
		}
		if (d->n == d->cap) {
			size_t ncap = d->cap ? d->cap * 2 : 16;
			const hako_msg_type_t **nv = realloc(d->v, ncap * sizeof(*nv));
			if (nv == NULL) {
				return HAKO_ENOMEM;
			}
			d->v = nv;
			d->cap = ncap;
		}
		d->v[d->n++] = t;
		int rc = collect(d, t);
		if (rc != 0) {
			return rc;
		}
	}
	return 0;
}

int hako_cdr_schema(const hako_msg_type_t *type, char *out, size_t cap, size_t *len)
{
	if (type == NULL || len == NULL || (out == NULL && cap > 0)) {
		return HAKO_EINVAL;
	}
	struct deps d = {0};
	int rc = collect(&d, type);
	if (rc != 0) {
		free(d.v);
		return rc;
	}
	struct sout s = {out, cap, 0};
	put_fields(&s, type);
	static const char rule[] = "========================================"
	                           "========================================\n";
	for (size_t i = 0; i < d.n; i++) {
		put(&s, rule, sizeof(rule) - 1);
		puts_(&s, "MSG: ");
		puts_(&s, d.v[i]->full_name);
		puts_(&s, "\n");
		put_fields(&s, d.v[i]);
	}
	free(d.v);
	*len = s.len;
	if (s.len >= cap) {
		if (cap > 0) {
			out[0] = '\0';
		}
		return HAKO_ETOOBIG;
	}
	out[s.len] = '\0';
	return 0;
}
