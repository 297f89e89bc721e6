/*
 * Helpers shared by the subcommands: strict number parsing and error lines.
 * A user's mistake gets one sentence naming the bad value and what is accepted.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/base.h"
#include "sampler/sampler.h"

void cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hearth %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end != '\0' || end == s)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int cli_parse_seconds(const char *s, double max, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end != '\0' || end == s || !isfinite(v)) {
		int64_t ns;
		/* not a decimal: base's one duration grammar ("1m30s", "500ms") */
		int err = base_duration_parse(s, &ns, NULL, 0);

		if (err)
			return err == -ERANGE ? -ERANGE : -EINVAL;
		v = (double)ns / 1e9;
	}
	if (v <= 0 || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int cli_parse_unwind(const char *cmd, const char *arg, int *out)
{
	if (!strcmp(arg, "auto"))
		*out = SAMPLER_UNWIND_AUTO;
	else if (!strcmp(arg, "dwarf"))
		*out = SAMPLER_UNWIND_DWARF;
	else if (!strcmp(arg, "fp"))
		*out = SAMPLER_UNWIND_FP;
	else {
		cli_error(cmd, "--unwind: unknown mode '%s' (dwarf, fp, auto)", arg);
		return -EINVAL;
	}
	return 0;
}

int cli_parse_python(const char *cmd, const char *arg, bool *on)
{
	if (strcmp(arg, "auto") && strcmp(arg, "off")) {
		cli_error(cmd, "--python: unknown mode '%s' (auto, off)", arg);
		return -EINVAL;
	}
	*on = !strcmp(arg, "auto");
	return 0;
}

int cli_parse_node(const char *cmd, const char *arg, bool *on)
{
	if (strcmp(arg, "auto") && strcmp(arg, "off")) {
		cli_error(cmd, "--node: unknown mode '%s' (auto, off)", arg);
		return -EINVAL;
	}
	*on = !strcmp(arg, "auto");
	return 0;
}

int cli_parse_java(const char *cmd, const char *arg, bool *on)
{
	if (strcmp(arg, "auto") && strcmp(arg, "off")) {
		cli_error(cmd, "--java: unknown mode '%s' (auto, off)", arg);
		return -EINVAL;
	}
	*on = !strcmp(arg, "auto");
	return 0;
}

int cli_parse_ruby(const char *cmd, const char *arg, bool *on)
{
	if (strcmp(arg, "auto") && strcmp(arg, "off")) {
		cli_error(cmd, "--ruby: unknown mode '%s' (auto, off)", arg);
		return -EINVAL;
	}
	*on = !strcmp(arg, "auto");
	return 0;
}

bool cli_getopt_failed(const char *cmd, int c, int argc, char **argv)
{
	const char *opt;

	if (c != '?' && c != ':')
		return false;
	opt = cli_bad_option(argc, argv, optind, optopt);
	if (c == '?')
		cli_error(cmd, "unknown option '%s' (see hearth %s --help)", opt, cmd);
	else
		cli_error(cmd, "option '%s' needs a value (see hearth %s --help)", opt, cmd);
	return true;
}

const char *cli_bad_option(int argc, char **argv, int optind_now, int optopt_now)
{
	static char buf[8];

	/* A long option is named as typed (the word getopt stopped at); a short one by
	 * optopt, its letter (the word may be a cluster such as -qz). */
	if (optind_now > 0 && optind_now <= argc && !strncmp(argv[optind_now - 1], "--", 2))
		return argv[optind_now - 1];
	if (optopt_now > 0 && optopt_now < 128 && isalnum(optopt_now)) {
		snprintf(buf, sizeof(buf), "-%c", optopt_now);
		return buf;
	}
	if (optind_now > 0 && optind_now <= argc)
		return argv[optind_now - 1];
	return "?";
}
