/* Bounded reading of the files loaders are told to read (hakoi/file.h). */
#include "hakoi/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hako/error.h"

/* Read a whole file. Returns 0 or an errno value (HAKOI_ENOTREG for what is not a regular
 * file). The file is opened without blocking and checked before it is read: a FIFO would block
 * the loader for ever, /dev/zero would fill the memory. */
int hakoi_read_file(const char *path, char **text, size_t *len)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		return errno;
	}
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) != 0) {
		rc = errno;
	} else if (S_ISDIR(st.st_mode)) {
		rc = EISDIR;
	} else if (!S_ISREG(st.st_mode)) {
		rc = HAKOI_ENOTREG;
	} else if ((uint64_t)st.st_size > HAKOI_FILE_MAX_BYTES) {
		rc = EFBIG;
	}
	/* The size is read again as the file is read: it may grow meanwhile. */
	size_t cap = rc == 0 ? (size_t)st.st_size + 1 : 0, used = 0;
	char *buf = rc == 0 ? malloc(cap) : NULL;
	if (rc == 0 && buf == NULL) {
		rc = ENOMEM;
	}
	while (rc == 0) {
		if (used == cap) {
			if (cap > HAKOI_FILE_MAX_BYTES) {
				rc = EFBIG;
				break;
			}
			char *nbuf = realloc(buf, cap * 2);
			if (nbuf == NULL) {
				rc = ENOMEM;
				break;
			}
			buf = nbuf;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + used, cap - used);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			rc = errno;
		} else if (n == 0) {
			break;
		}
		used += n > 0 ? (size_t)n : 0;
	}
	close(fd);
	if (rc != 0) {
		free(buf);
		return rc;
	}
	*text = buf;
	*len = used;
	return 0;
}

const char *hakoi_read_file_strerror(int e)
{
	switch (e) {
	case HAKOI_ENOTREG: return "not a regular file (a FIFO, device or socket)";
	case EISDIR: return "is a directory";
	case EFBIG: return "larger than " HAKOI_FILE_MAX_TEXT ", the limit of a file hako reads";
	default: return strerror(e);
	}
}

int hakoi_read_file_code(int e)
{
	if (e == ENOENT || e == ENOTDIR) {
		return HAKO_ENOENT;
	}
	return e == ENOMEM ? HAKO_ENOMEM : HAKO_EIO;
}

int hakoi_mkdirs(const char *path, unsigned mode)
{
	char buf[PATH_MAX];
	if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *s = buf + 1; *s != '\0'; s++) {
		if (*s == '/') {
			*s = '\0';
			if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
				return -1;
			}
			*s = '/';
		}
	}
	return mkdir(buf, (mode_t)mode) != 0 && errno != EEXIST ? -1 : 0;
}
