/* HAKO_ASSERT (hakoi/assert.h): on, a false assertion aborts (SIGABRT) after saying where and
 * what on stderr; off, the expression is not evaluated. assert_probe.c is compiled both ways. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "assert_probe.h"

/* Run fn(arg) in a child with stderr into a pipe; its wait status, and what it wrote in out. */
static int run_child(void (*fn)(int), int arg, char *out, size_t cap)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit none = {0, 0};
		setrlimit(RLIMIT_CORE, &none); /* an expected abort leaves no core file */
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		fn(arg);
		_exit(0);
	}
	close(fds[1]);
	size_t len = 0;
	ssize_t n;
	while (len + 1 < cap && (n = read(fds[0], out + len, cap - 1 - len)) > 0) {
		len += (size_t)n;
	}
	out[len] = '\0';
	close(fds[0]);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void call_on_fail(int arg)
{
	int line;
	(void)arg;
	probe_on_fail(&line);
}

static void call_on_fail_msg(int arg)
{
	int line;
	probe_on_fail_msg(arg, &line);
}

static void call_off_fail(int arg)
{
	int line;
	(void)arg;
	probe_off_fail(&line);
	probe_off_fail_msg(arg, &line);
}

static void test_false_assert_aborts(void **state)
{
	(void)state;
	char out[1024], want[256];
	int line = 0;
	probe_off_fail(&line); /* the same source line as probe_on_fail's */
	int status = run_child(call_on_fail, 0, out, sizeof(out));
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	snprintf(want, sizeof(want),
	         "assert_probe.c:%d: probe_on_fail: assertion failed: sizeof(int) == 0\n", line);
	if (strstr(out, want) == NULL) {
		fail_msg("stderr was '%s', not '...%s'", out, want);
	}
}

static void test_false_assert_msg_aborts_with_message(void **state)
{
	(void)state;
	char out[1024], want[256];
	int line = 0;
	probe_off_fail_msg(7, &line);
	int status = run_child(call_on_fail_msg, 7, out, sizeof(out));
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	snprintf(want, sizeof(want),
	         "assert_probe.c:%d: probe_on_fail_msg: assertion failed: x == 42: x is 7\n", line);
	if (strstr(out, want) == NULL) {
		fail_msg("stderr was '%s', not '...%s'", out, want);
	}
}

static void test_true_assert_passes(void **state)
{
	(void)state;
	char out[1024];
	int status = run_child(call_on_fail_msg, 42, out, sizeof(out));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_string_equal(out, "");
}

static void test_off_never_aborts(void **state)
{
	(void)state;
	char out[1024];
	int status = run_child(call_off_fail, 7, out, sizeof(out));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_string_equal(out, "");
}

static void test_expression_evaluated_only_when_on(void **state)
{
	(void)state;
	int n = 0;
	assert_int_equal(probe_on_count(&n), 2);
	assert_int_equal(n, 2);
	n = 0;
	assert_int_equal(probe_off_count(&n), 0);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_false_assert_aborts),
	    cmocka_unit_test(test_false_assert_msg_aborts_with_message),
	    cmocka_unit_test(test_true_assert_passes),
	    cmocka_unit_test(test_off_never_aborts),
	    cmocka_unit_test(test_expression_evaluated_only_when_on),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
