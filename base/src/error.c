#include "hako/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *hako_strerror(int err)
{
	switch (err) {
	case HAKO_OK: return "success";
	case HAKO_EINVAL: return "invalid argument";
	case HAKO_ENOMEM: return "out of memory";
	case HAKO_ENOENT: return "not found";
	case HAKO_EEXIST: return "name already in use";
	case HAKO_ENOSPC: return "capacity exhausted";
	case HAKO_ENAMETOOLONG: return "name too long";
	case HAKO_ESIZE: return "size mismatch";
	case HAKO_EMAGIC: return "bad magic";
	case HAKO_EVERSION: return "unsupported layout version";
	case HAKO_ESTATE: return "not allowed in the current state";
	case HAKO_EINTR: return "interrupted by stop, reset or error";
	case HAKO_ETIMEDOUT: return "timed out";
	case HAKO_EIO: return "I/O error";
	case HAKO_EAGAIN: return "nothing new, try again";
	case HAKO_ECONFIG: return "invalid configuration";
	case HAKO_ENOMASTER: return "no conductor running for the domain";
	case HAKO_EBUSY: return "busy";
	case HAKO_EPERM: return "not permitted";
	case HAKO_ENOTOWNER: return "not the owner";
	case HAKO_EPROTO: return "malformed data";
	case HAKO_ENOTSUP: return "not supported";
	case HAKO_ETOOBIG: return "too big";
	case HAKO_ECRASHED: return "a process of the domain died";
	case HAKO_ENOTCONN: return "no peer connected";
	case HAKO_ECORRUPT: return "corrupted shared segment";
	default: return "unknown error";
	}
}

void hako_error_clear(hako_error_t *err)
{
	if (err != NULL) {
		memset(err, 0, sizeof(*err));
	}
}

int hako_error_set(hako_error_t *err, int code, const char *file, int line, int column,
                   const char *fmt, ...)
{
	if (err == NULL) {
		return code;
	}
	snprintf(err->file, sizeof(err->file), "%s", file != NULL ? file : "");
	err->line = line;
	err->column = column;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return code;
}

const char *hako_error_format(const hako_error_t *err, char *buf, unsigned long len)
{
	if (buf == NULL || len == 0) {
		return buf;
	}
	if (err == NULL) {
		buf[0] = '\0';
		return buf;
	}
	const char *file = err->file[0] != '\0' ? err->file : "<input>";
	if (err->line > 0 && err->column > 0) {
		snprintf(buf, len, "%s:%d:%d: %s", file, err->line, err->column, err->message);
	} else if (err->line > 0) {
		snprintf(buf, len, "%s:%d: %s", file, err->line, err->message);
	} else {
		snprintf(buf, len, "%s: %s", file, err->message);
	}
	return buf;
}
