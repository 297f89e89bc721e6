/*
 * cli: the `hearth` command line. One subcommand per file; this header holds
 * what they share (exit codes, strict number parsing, error printing).
 */
#ifndef HEARTH_CLI_H
#define HEARTH_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEARTH_VERSION "0.1.0"

/* Exit codes: 0 success, 1 runtime failure, 2 usage error (bad flag or value). */
#define EXIT_USAGE 2

/*
 * What every command's parse_args returns: 0 to go on and run, CLI_DONE when it
 * printed what was asked (--help, --print-config) and the command exits 0, or
 * -EINVAL after one error line naming the bad argument (the command exits
 * EXIT_USAGE).
 */
#define CLI_DONE 1

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
/* Seconds: a strict decimal with fraction ("2.5"), or a duration of base's one
 * grammar ("1m30s", "500ms", base_duration_parse), into (0, max]. 0, -EINVAL or
 * -ERANGE. */
int cli_parse_seconds(const char *s, double max, double *out);
/* --unwind auto|dwarf|fp into *out (an enum sampler_unwind). 0, or -EINVAL after an
 * error line naming the bad value. */
int cli_parse_unwind(const char *cmd, const char *arg, int *out);
/* --python auto|off into *on. 0, or -EINVAL after an error message. */
int cli_parse_python(const char *cmd, const char *arg, bool *on);
/* --node MODE: auto (the V8 walk, docs/node.md) or off. */
int cli_parse_node(const char *cmd, const char *arg, bool *on);
/* --java auto|off (docs/java.md). 0 or -EINVAL (said). */
int cli_parse_java(const char *cmd, const char *arg, bool *on);
/* --ruby auto|off into *on, as --python. */
int cli_parse_ruby(const char *cmd, const char *arg, bool *on);
/* The unknown or malformed option getopt stopped at, for an error message. */
const char *cli_bad_option(int argc, char **argv, int optind_now, int optopt_now);
/*
 * For getopt_long with a leading ':' in optstring: when c is '?' (unknown option)
 * or ':' (missing value), prints the one-sentence error for subcommand cmd and
 * returns true; otherwise returns false.
 */
bool cli_getopt_failed(const char *cmd, int c, int argc, char **argv);

/* The option tables of the commands, for the global part of the config file
 * (agent and run also take cli_agent_long_opts and cli_serve_long_opts, serve.h). */
extern const struct option cli_record_opts[];
extern const struct option cli_agent_only_opts[];
extern const struct option cli_query_opts[];
extern const struct option cli_recover_opts[];

/* ---- the config file (config.c, conf_parse.c; docs/config.md) ---- */
#define CLI_CONFIG_DEFAULT "/etc/hearth/hearth.conf"
#define CLI_CONF_MAX_LINE  4096
#define CLI_CONF_MAX_NAME  64
#define CLI_CONF_MAX_BYTES (1 << 20)

/* One line of a config file, for the callback; strings borrowed for the call. */
struct cli_conf_entry {
	const char *section; /* "" before the first [section]: the global part */
	const char *key;     /* NULL on a "[section]" line */
	const char *value;   /* unquoted */
	int line;	     /* 1-based */
};
/* 0 to go on; anything else stops the parse and is returned, err filled. */
typedef int (*cli_conf_fn)(void *ctx, const struct cli_conf_entry *e, char *err, size_t errlen);
/*
 * Parses a config file's text (len bytes, NUL-free; it need not end in a NUL)
 * and calls fn for each section header and key = value line, in order. 0, or
 * -EINVAL with err "line N: why" (or what fn returned).
 */
int cli_conf_parse(const char *text, size_t len, cli_conf_fn fn, void *ctx, char *err,
		   size_t errlen);

/*
 * Start of a parse_args: takes --config FILE and --print-config out of *argv,
 * reads the config file (FILE, or CLI_CONFIG_DEFAULT when it exists) and
 * replaces argc and argv by argv[0], the file's settings for cmd as "--key=value"
 * arguments (its global part, then its [cmd] section), then the rest of argv:
 * the same parser checks both, and a flag overrides the file. Keys are the long
 * options of opts. The new argv lives until exit. 0, or -EINVAL after an error
 * line naming the file and line.
 */
int cli_config_args(const char *cmd, const struct option *opts, int *argc, char ***argv);
/* getopt_long for parse_args: remembers which argument an error is about. */
int cli_getopt(int argc, char **argv, const char *optstring, const struct option *opts);
/*
 * End of a parse_args, with what it returns (ret): after an error about a
 * setting from the config file, says which line it was on; after a successful
 * parse with --print-config, prints the effective settings and returns CLI_DONE.
 * Otherwise returns ret.
 */
int cli_config_done(const char *cmd, const struct option *opts, const char *optstring, int argc,
		    char **argv, int ret);
/* What a command's flag parser gets: argv with the config file's settings in front,
 * the command's options, and its argument struct. Returns as parse_args does. */
typedef int (*cli_flags_fn)(int argc, char **argv, const struct option *opts, void *ctx);
/*
 * A command's parse_args: the config file's settings for cmd, then argv, through
 * flags (cli_config_args, flags, cli_config_done). 0 to run, CLI_DONE after
 * --help or --print-config, -EINVAL after an error line.
 */
int cli_parse(const char *cmd, const struct option *opts, const char *optstring, int argc,
	      char **argv, cli_flags_fn flags, void *ctx);

#endif
