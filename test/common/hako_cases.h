/* Shared runner for data-driven loader cases: cases/<name>/ holds an input file and
 * expected.txt, which is either the exact error line, with file paths written relative to the
 * case folder ("." for the folder itself), or "ok" followed by a dump.
 *
 * A file that many cases need lives once in a folder next to cases/ (fixtures/; rd's data/),
 * not in cases/ where every folder is a case, and the cases name it by relative path
 * ("../../fixtures/cache.json", which is also how messages print it). A case keeps its own copy
 * of the file it is about: the one its error is in, or whose place it tests.
 *
 * Each case is one cmocka test (named after its folder, run in sorted order), so the case
 * function may use cmocka's assertions. */
#ifndef HAKO_CASES_H
#define HAKO_CASES_H

#include <stddef.h>

/* Write the text to compare with expected.txt into out (len bytes, NUL-terminated).
 * case_dir is the absolute, resolved case folder; input_path is case_dir/input_name. */
typedef void (*htc_case_fn)(const char *case_dir, const char *input_path, char *out, size_t len,
                            void *arg);

/* Every folder is a case, even one without expected.txt (which then fails). Without this
 * flag, folders without expected.txt are skipped. */
#define HTC_EVERY_DIR 1u

/* Run every case folder under cases_dir as the cmocka group `group`: call fn, rewrite
 * "<case_dir>/" to "" and then "<case_dir>" to "." in its output, drop trailing blanks and
 * newlines from both texts and compare them, printing both on a mismatch. Returns the number
 * of failed cases, or 1 if fewer than min_cases cases were found. */
int htc_run_cases(const char *group, const char *cases_dir, const char *input_name,
                  size_t min_cases, unsigned flags, htc_case_fn fn, void *arg);

/* Append printf-style text to the NUL-terminated buf of capacity len (truncates). */
void htc_append(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The whole file as a NUL-terminated string (free() it), NULL if unreadable. *len_out, if
 * not NULL, receives the byte count. */
char *htc_read_all(const char *path, size_t *len_out);

#endif
