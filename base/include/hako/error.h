/* hako error codes and the loader error record shared by every library. */
#ifndef HAKO_ERROR_H
#define HAKO_ERROR_H

#include "hako/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every hako call returns 0 on success or one of these (negative). */
enum hako_errno {
	HAKO_OK = 0,
	HAKO_EINVAL = -1,       /* bad argument */
	HAKO_ENOMEM = -2,       /* out of memory */
	HAKO_ENOENT = -3,       /* no such file, domain, asset or channel */
	HAKO_EEXIST = -4,       /* name already in use */
	HAKO_ENOSPC = -5,       /* a capacity of the domain is exhausted */
	HAKO_ENAMETOOLONG = -6, /* name longer than the limit */
	HAKO_ESIZE = -7,        /* size does not match the existing channel */
	HAKO_EMAGIC = -8,       /* segment or frame has another magic */
	HAKO_EVERSION = -9,     /* segment or frame has another layout version */
	HAKO_ESTATE = -10,      /* not allowed in the current simulation state */
	HAKO_EINTR = -11,       /* interrupted by stop, reset or error */
	HAKO_ETIMEDOUT = -12,   /* a wait ran out of time */
	HAKO_EIO = -13,         /* operating system I/O error */
	HAKO_EAGAIN = -14,      /* nothing new yet, try again */
	HAKO_ECONFIG = -15,     /* invalid configuration file */
	HAKO_ENOMASTER = -16,   /* no live conductor for the domain */
	HAKO_EBUSY = -17,       /* resource held by another live process */
	HAKO_EPERM = -18,       /* not permitted */
	HAKO_ENOTOWNER = -19,   /* not the owner of the execution unit */
	HAKO_EPROTO = -20,      /* malformed data from a peer or a file */
	HAKO_ENOTSUP = -21,     /* not supported */
	HAKO_ETOOBIG = -22,     /* buffer too small or data too large */
	HAKO_ECRASHED = -23,    /* a process of the domain died */
	HAKO_ENOTCONN = -24,    /* no peer connected */
	HAKO_ECORRUPT = -25,    /* a shared segment fails its consistency checks */
};

/* A short English description of an error code ("unknown error" if none). */
HAKO_API const char *hako_strerror(int err);

/* Where and why a file could not be loaded. line/column are 1-based, 0 when unknown. */
typedef struct hako_error {
	char file[512];
	int line;
	int column;
	char message[1024];
} hako_error_t;

/* Clear an error record. Accepts NULL. */
HAKO_API void hako_error_clear(hako_error_t *err);

/* Fill an error record (printf-style message). Accepts err == NULL. Returns code. */
HAKO_API int hako_error_set(hako_error_t *err, int code, const char *file, int line, int column,
                            const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* "file:line:column: message" (line/column omitted when 0) into buf. Returns buf. */
HAKO_API const char *hako_error_format(const hako_error_t *err, char *buf, unsigned long len);

#ifdef __cplusplus
}
#endif
#endif
