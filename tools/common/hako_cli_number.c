/* See hako_cli.h: the numbers of options. */
#include "hako_cli.h"

#include <errno.h>
#include <stdlib.h>

int hako_cli_parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	/* the negated test also refuses NaN */
	if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi)) {
		return -1;
	}
	*out = v;
	return 0;
}

int hako_cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
		return -1;
	}
	*out = (int64_t)v;
	return 0;
}

int hako_cli_option_double(const hako_cli_command_t *cmd, const char *opt, const char *s, double lo,
                           double hi, const char *expected, double *out)
{
	if (hako_cli_parse_double(s, lo, hi, out) != 0) {
		return hako_cli_usage_error(cmd, "%s %s: expected %s", opt, s, expected);
	}
	return -1;
}
