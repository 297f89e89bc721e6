/*
 * cli: the `hearth` command line. One subcommand per file; this header holds
 * what they share (exit codes, strict number parsing, error printing).
 */
#ifndef HEARTH_CLI_H
#define HEARTH_CLI_H

#include <stdbool.h>
#include <stdint.h>

#define HEARTH_VERSION "0.1.0"

/* Exit codes: 0 success, 1 runtime failure, 2 usage error (bad flag or value). */
#define EXIT_USAGE 2

int cmd_record(int argc, char **argv);
int cmd_server(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);
int cmd_recover(int argc, char **argv);

/* Prints "hearth CMD: MESSAGE" on stderr (one sentence, newline added). */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Strict decimal parse of the whole string into [min, max]. 0 or -EINVAL/-ERANGE. */
int cli_parse_long(const char *s, long min, long max, long *out);
/* Strict decimal-with-fraction parse (e.g. "2.5") into (0, max]. 0 or -EINVAL. */
int cli_parse_seconds(const char *s, double max, double *out);
/* --unwind auto|dwarf|fp into *out (an enum sampler_unwind). 0, or -EINVAL after an
 * error line naming the bad value. */
int cli_parse_unwind(const char *cmd, const char *arg, int *out);
/* The unknown or malformed option getopt stopped at, for an error message. */
const char *cli_bad_option(int argc, char **argv, int optind_now, int optopt_now);
/*
 * For getopt_long with a leading ':' in optstring: when c is '?' (unknown option)
 * or ':' (missing value), prints the one-sentence error for subcommand cmd and
 * returns true; otherwise returns false.
 */
bool cli_getopt_failed(const char *cmd, int c, int argc, char **argv);

#endif
