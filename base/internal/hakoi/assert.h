/* HAKO_ASSERT: the invariants a comment states, checked in Debug, sanitizer and -DHAKO_ASSERTS=ON
 * builds (the top CMakeLists.txt defines HAKO_ASSERTS there) and compiled away elsewhere.
 *
 * For what the code itself guarantees (a lock held, a seqlock word's parity, a legal state
 * transition), the way SQLite's assert() and libuv's assert() are used: never for what a caller,
 * a file, a socket or another process's segment can make false. Those are checked and answered
 * with an error code in every build. A failure prints file:line, the function, the expression
 * (and the message) to stderr and aborts, so a debugger or a core file shows where.
 *
 * Off, the expression is still compiled (type-checked) but never evaluated: it may be as
 * costly as it needs to be, and must have no effect the code relies on. Internal to
 * hako's libraries (base/internal/ is never installed). */
#ifndef HAKOI_ASSERT_H
#define HAKOI_ASSERT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* The format of HAKO_ASSERT_MSG, type-checked in both builds. */
static inline int hakoi_assert_format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int hakoi_assert_format(const char *fmt, ...)
{
	(void)fmt;
	return 0;
}

#ifdef HAKO_ASSERTS

/* stderr, not the logger: HAKO_LOG may have silenced it, and this is the last line. */
static inline void hakoi_assert_head(const char *file, int line, const char *func, const char *expr)
{
	fprintf(stderr, "%s:%d: %s: assertion failed: %s", file, line, func, expr);
}

static inline void hakoi_assert_end(void) __attribute__((noreturn));
static inline void hakoi_assert_end(void)
{
	fputc('\n', stderr);
	fflush(stderr);
	abort();
}

static inline void hakoi_assert_fail(const char *file, int line, const char *func, const char *expr)
    __attribute__((noreturn, cold));
static inline void hakoi_assert_fail(const char *file, int line, const char *func, const char *expr)
{
	hakoi_assert_head(file, line, func, expr);
	hakoi_assert_end();
}

static inline void hakoi_assert_fail_msg(const char *file, int line, const char *func,
                                         const char *expr, const char *fmt, ...)
    __attribute__((noreturn, cold, format(printf, 5, 6)));
static inline void hakoi_assert_fail_msg(const char *file, int line, const char *func,
                                         const char *expr, const char *fmt, ...)
{
	hakoi_assert_head(file, line, func, expr);
	fputs(": ", stderr);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	hakoi_assert_end();
}

#define HAKO_ASSERT(expr)                                                                          \
	(__builtin_expect(!!(expr), 1) ? (void)0                                                   \
	                               : hakoi_assert_fail(__FILE__, __LINE__, __func__, #expr))
/* HAKO_ASSERT_MSG(expr, fmt, ...): the message says what the numbers were. */
#define HAKO_ASSERT_MSG(expr, ...)                                                                 \
	(__builtin_expect(!!(expr), 1)                                                             \
	     ? (void)0                                                                             \
	     : hakoi_assert_fail_msg(__FILE__, __LINE__, __func__, #expr, __VA_ARGS__))

#else

/* Behind 0 &&, not inside sizeof: a function only an assertion calls is then still used, which
 * clang asks of a static function (-Wunneeded-internal-declaration). Folded away at -O0 too. */
#define HAKO_ASSERT(expr)          ((void)(0 && (expr)))
#define HAKO_ASSERT_MSG(expr, ...) ((void)(0 && (expr) && hakoi_assert_format(__VA_ARGS__)))

#endif

#endif
