/* The outer wall of hako's libraries: they are built with hidden visibility, and what a public
 * header marks HAKO_API is all they export (libuv's UV_EXTERN, nng's NNG_DECL). */
#ifndef HAKO_API_H
#define HAKO_API_H

#if defined(_WIN32)
#define HAKO_API
#else
#define HAKO_API __attribute__((visibility("default")))
#endif

#endif
