/* The service sample's shared bits: the service, its file, the step. */
#ifndef SERVICE_SAMPLE_H
#define SERVICE_SAMPLE_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SAMPLE_SERVICE    "Service/Add"
#define SAMPLE_DELTA_USEC 1000

/* The service file: $HAKO_SERVICE_FILE, else service.json next to the executable, else the
 * installed one. */
static inline const char *sample_service_file(void)
{
	static char path[PATH_MAX];
	const char *env = getenv("HAKO_SERVICE_FILE");
	if (env != NULL && env[0] != '\0') {
		return env;
	}
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	if (n > 0) {
		path[n] = '\0';
		char *slash = strrchr(path, '/');
		if (slash != NULL && (size_t)(slash - path) + 16 < sizeof(path)) {
			strcpy(slash + 1, "service.json");
			if (access(path, R_OK) == 0) {
				return path;
			}
		}
	}
	return SERVICE_JSON_INSTALLED;
}

#endif
