/* Reading a file a loader was told to read: a regular file of bounded size, never a FIFO that
 * blocks the loader or a device that fills the memory. Internal to hako's libraries. */
#ifndef HAKOI_FILE_H
#define HAKOI_FILE_H

#include <stddef.h>

#define HAKOI_FILE_MAX_BYTES (64u << 20)
#define HAKOI_FILE_MAX_TEXT  "64 MiB"
#define HAKOI_ENOTREG        (-1)

/* Read a whole regular file of at most HAKOI_FILE_MAX_BYTES into a malloc'd buffer (not
 * NUL-terminated). Returns 0 or an errno value; HAKOI_ENOTREG for a FIFO, device or socket,
 * EISDIR, EFBIG. */
int hakoi_read_file(const char *path, char **text, size_t *len);
/* Such a value in words, for a message. */
const char *hakoi_read_file_strerror(int e);
/* ... and as a HAKO_E* code: HAKO_ENOENT for a missing file, HAKO_ENOMEM, else HAKO_EIO. */
int hakoi_read_file_code(int e);

/* Make the folder path and its missing parents (mode 0755); the folder itself, if it is made,
 * gets mode (a private one: 0700). 0, or -1 with errno (ENAMETOOLONG past PATH_MAX). */
int hakoi_mkdirs(const char *path, unsigned mode);

#endif
