/* The pure pieces of hako-viewer: text buffer, request paths, tokens, commands. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>

#include "viewer.h"

/* ---- text buffer ---- */

void vw_buf_free(vw_buf_t *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

static int buf_reserve(vw_buf_t *b, size_t more)
{
	if (b->oom) {
		return -1;
	}
	if (b->len + more + 1 <= b->cap) {
		return 0;
	}
	size_t cap = b->cap ? b->cap : 1024;
	while (cap < b->len + more + 1) {
		cap *= 2;
	}
	char *d = realloc(b->data, cap);
	if (d == NULL) {
		b->oom = 1;
		return -1;
	}
	b->data = d;
	b->cap = cap;
	return 0;
}

void vw_buf_put(vw_buf_t *b, const char *s, size_t n)
{
	if (buf_reserve(b, n) != 0) {
		return;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void vw_buf_puts(vw_buf_t *b, const char *s)
{
	vw_buf_put(b, s, strlen(s));
}

void vw_buf_printf(vw_buf_t *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || buf_reserve(b, (size_t)n) != 0) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void vw_buf_json_str(vw_buf_t *b, const char *s)
{
	vw_buf_put(b, "\"", 1);
	for (const char *p = s; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			vw_buf_put(b, e, 2);
		} else if (c < 0x20) {
			vw_buf_printf(b, "\\u%04x", c);
		} else {
			vw_buf_put(b, p, 1);
		}
	}
	vw_buf_put(b, "\"", 1);
}

/* ---- request paths ---- */

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

int vw_path_check(const char *path, char *rel, size_t cap, const char **why)
{
	const char *dummy;
	why = why != NULL ? why : &dummy;
	if (path == NULL || path[0] != '/') {
		*why = "not an absolute path";
		return HAKO_EPERM;
	}
	size_t n = strlen(path);
	if (n > VW_PATH_MAX) {
		*why = "path too long";
		return HAKO_EPERM;
	}
	const char *name = path + 1;
	if (name[0] == '\0') {
		name = "index.html";
	}
	if (strstr(name, "..") != NULL) {
		*why = "\"..\" in the path";
		return HAKO_EPERM;
	}
	if (strchr(name, '%') != NULL) {
		*why = "an encoded character left after decoding";
		return HAKO_EPERM;
	}
	if (strchr(name, '/') != NULL || strchr(name, '\\') != NULL) {
		*why = "a folder in the path (the static folder is flat)";
		return HAKO_EPERM;
	}
	if (name[0] == '.') {
		*why = "a hidden file";
		return HAKO_EPERM;
	}
	for (const char *p = name; *p != '\0'; p++) {
		if (!name_char(*p)) {
			*why = "a character outside [A-Za-z0-9._-]";
			return HAKO_EPERM;
		}
	}
	if (strlen(name) + 1 > cap) {
		*why = "path too long";
		return HAKO_EPERM;
	}
	memcpy(rel, name, strlen(name) + 1);
	return 0;
}

const char *vw_mime(const char *rel)
{
	static const char *const types[][2] = {
	    {".html", "text/html; charset=utf-8"},
	    {".js", "text/javascript; charset=utf-8"},
	    {".css", "text/css; charset=utf-8"},
	    {".svg", "image/svg+xml"},
	    {".png", "image/png"},
	    {".json", "application/json"},
	    {".ico", "image/x-icon"},
	};
	const char *dot = strrchr(rel, '.');
	for (size_t i = 0; dot != NULL && i < sizeof(types) / sizeof(types[0]); i++) {
		if (strcmp(dot, types[i][0]) == 0) {
			return types[i][1];
		}
	}
	return "application/octet-stream";
}

/* ---- tokens ---- */

int vw_token_new(char out[VW_TOKEN_LEN + 1])
{
	unsigned char raw[VW_TOKEN_LEN / 2];
	size_t got = 0;
	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
		if (n <= 0) {
			return HAKO_EIO;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	}
	out[VW_TOKEN_LEN] = '\0';
	return 0;
}

int vw_token_equal(const char *want, const char *got)
{
	if (want == NULL || got == NULL || want[0] == '\0' || got[0] == '\0') {
		return 0;
	}
	size_t wn = strlen(want), gn = strlen(got);
	/* Every byte of want is looked at whatever got is: the time tells nothing of the prefix. */
	unsigned diff = wn != gn;
	for (size_t i = 0; i < wn; i++) {
		diff |= (unsigned char)want[i] ^ (unsigned char)(i < gn ? got[i] : 0);
	}
	return diff == 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9') {
		return c - '0';
	}
	if (c >= 'a' && c <= 'f') {
		return c - 'a' + 10;
	}
	if (c >= 'A' && c <= 'F') {
		return c - 'A' + 10;
	}
	return -1;
}

int vw_query_arg(const char *query, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);
	const char *p = query;
	while (p != NULL && *p != '\0') {
		const char *end = strchr(p, '&');
		size_t seg = end != NULL ? (size_t)(end - p) : strlen(p);
		if (seg > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
			size_t o = 0;
			for (size_t i = nl + 1; i < seg; i++) {
				char c = p[i];
				if (c == '%' && i + 2 < seg + 1 && hexval(p[i + 1]) >= 0 &&
				    hexval(p[i + 2]) >= 0) {
					c = (char)(hexval(p[i + 1]) * 16 + hexval(p[i + 2]));
					i += 2;
				} else if (c == '+') {
					c = ' ';
				}
				if (o + 1 >= cap) {
					return HAKO_ETOOBIG;
				}
				out[o++] = c;
			}
			out[o] = '\0';
			return 0;
		}
		p = end != NULL ? end + 1 : NULL;
	}
	return HAKO_ENOENT;
}

/* ---- commands ---- */

const char *vw_cmd_name(vw_cmd_t cmd)
{
	switch (cmd) {
	case VW_CMD_START: return "start";
	case VW_CMD_STOP: return "stop";
	case VW_CMD_RESET: return "reset";
	case VW_CMD_WATCH: return "watch";
	case VW_CMD_VIEW: return "view";
	default: return "none";
	}
}

/* "channels": [["robot", id], ...] */
static int parse_watch(json_t *list, vw_command_t *out, const char **why)
{
	if (!json_is_array(list)) {
		*why = "\"channels\" is not an array of [robot, id]";
		return HAKO_EPROTO;
	}
	if (json_array_size(list) > VW_WATCH_MAX) {
		*why = "more than 64 channels to watch";
		return HAKO_EPROTO;
	}
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e)
	{
		const char *robot = json_string_value(json_array_get(e, 0));
		json_t *id = json_array_get(e, 1);
		if (json_array_size(e) != 2 || robot == NULL || strlen(robot) >= HAKO_NAME_MAX ||
		    !json_is_integer(id) || json_integer_value(id) < 0 ||
		    json_integer_value(id) > INT32_MAX) {
			*why = "a watched channel is not [robot, id]";
			return HAKO_EPROTO;
		}
		vw_key_t *k = &out->watch[out->nwatch++];
		memcpy(k->robot, robot, strlen(robot) + 1);
		k->id = (int32_t)json_integer_value(id);
	}
	return 0;
}

/* "rd": bool, "positions": bool, each optional */
static int parse_view(json_t *root, vw_command_t *out, const char **why)
{
	json_t *rd = json_object_get(root, "rd"), *pos = json_object_get(root, "positions");
	if ((rd != NULL && !json_is_boolean(rd)) || (pos != NULL && !json_is_boolean(pos))) {
		*why = "\"rd\" and \"positions\" are true or false";
		return HAKO_EPROTO;
	}
	out->rd = rd != NULL ? json_is_true(rd) : -1;
	out->positions = pos != NULL ? json_is_true(pos) : -1;
	return 0;
}

int vw_command_parse(const char *text, size_t len, vw_command_t *out, const char **why)
{
	const char *dummy;
	why = why != NULL ? why : &dummy;
	memset(out, 0, sizeof(*out));
	json_error_t jerr;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(root)) {
		json_decref(root);
		*why = "not a JSON object";
		return HAKO_EPROTO;
	}
	int r = 0;
	const char *cmd = json_string_value(json_object_get(root, "cmd"));
	json_t *tok = json_object_get(root, "token");
	if (cmd == NULL) {
		*why = "no \"cmd\" string";
		r = HAKO_EPROTO;
	} else if (strcmp(cmd, "start") == 0) {
		out->cmd = VW_CMD_START;
	} else if (strcmp(cmd, "stop") == 0) {
		out->cmd = VW_CMD_STOP;
	} else if (strcmp(cmd, "reset") == 0) {
		out->cmd = VW_CMD_RESET;
	} else if (strcmp(cmd, "watch") == 0) {
		out->cmd = VW_CMD_WATCH;
		r = parse_watch(json_object_get(root, "channels"), out, why);
	} else if (strcmp(cmd, "view") == 0) {
		out->cmd = VW_CMD_VIEW;
		r = parse_view(root, out, why);
	} else {
		*why = "unknown \"cmd\" (start, stop, reset, watch, view)";
		r = HAKO_EPROTO;
	}
	if (r == 0 && tok != NULL) {
		const char *t = json_string_value(tok);
		if (t == NULL || strlen(t) >= sizeof(out->token)) {
			*why = "\"token\" is not a string of a token's length";
			r = HAKO_EPROTO;
		} else {
			memcpy(out->token, t, strlen(t) + 1);
		}
	}
	if (r != 0) {
		out->cmd = VW_CMD_NONE;
		out->token[0] = '\0';
		out->nwatch = 0;
	}
	json_decref(root);
	return r;
}
