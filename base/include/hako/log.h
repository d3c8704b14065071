/* The one logger of hako libraries. Level from HAKO_LOG=debug|info|warn|error|off
 * (default warn); lines go to stderr as "hako[<pid>] <level>: <message>". */
#ifndef HAKO_LOG_H
#define HAKO_LOG_H

#include "hako/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hako_log_level {
	HAKO_LOG_DEBUG = 0,
	HAKO_LOG_INFO = 1,
	HAKO_LOG_WARN = 2,
	HAKO_LOG_ERROR = 3,
	HAKO_LOG_OFF = 4,
} hako_log_level_t;

HAKO_API void hako_log(hako_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
HAKO_API int hako_log_enabled(hako_log_level_t level);
/* Override the level read from HAKO_LOG (tools use it for -v / -q). */
HAKO_API void hako_log_set_level(hako_log_level_t level);

#define HAKO_DEBUG(...) hako_log(HAKO_LOG_DEBUG, __VA_ARGS__)
#define HAKO_INFO(...)  hako_log(HAKO_LOG_INFO, __VA_ARGS__)
#define HAKO_WARN(...)  hako_log(HAKO_LOG_WARN, __VA_ARGS__)
#define HAKO_ERROR(...) hako_log(HAKO_LOG_ERROR, __VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif
