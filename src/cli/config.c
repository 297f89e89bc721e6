/*
 * The config file (/etc/hearth/hearth.conf, or --config FILE) as command-line
 * flags: every key is a long option of the command, turned into "--key=value"
 * placed before the user's own arguments, so the command's one parser checks
 * both (one set of rules and messages) and a flag given by hand wins over the
 * file. Syntax in conf_parse.c; user documentation in docs/config.md.
 *
 * State is per process (one command runs per process) and lives until exit.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cli.h"
#include "serve.h"

/* A file of more settings than this is a mistake, and keeps duplicate checks cheap. */
#define CONFIG_MAX_SETTINGS 1000

/* Sections a file may hold: one per command (main.c's table). */
static const char *const config_sections[] = {"record", "run",	     "agent",  "server",
					      "query",	"symbolize", "recover"};

struct config_setting {
	char *arg; /* "--key=value" or "--key"; NULL for a boolean set to false */
	char *key, *value;
	int line;
	bool global;
};

static struct {
	const char *cmd;
	const struct option *opts;
	const char *path;
	bool loaded; /* the file was there and read */
	bool print;
	char section[CLI_CONF_MAX_NAME + 1];
	struct config_setting *set; /* the file's settings that apply to cmd, in order */
	int n_set;
	size_t cap_set;
	int n_cfg;    /* argv[1..n_cfg] came from the file */
	int *arg_set; /* argv index -> set index */
	char **argv;
	int last_arg; /* the argument cli_getopt last looked at, 0 after the end */
} cfg;

static const struct option *find_opt(const struct option *opts, const char *key)
{
	for (; opts && opts->name; opts++)
		if (!strcmp(opts->name, key))
			return opts;
	return NULL;
}

/* Does any command take --key? (for a key in the global part) */
static bool any_command_has(const char *key)
{
	const struct option *tables[] = {cli_record_opts,     cli_agent_long_opts,
					 cli_agent_only_opts, cli_serve_long_opts,
					 cli_query_opts,      cli_recover_opts};

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		if (find_opt(tables[i], key))
			return true;
	return false;
}

static int setting_err(char *err, size_t errlen, int line, const char *fmt, const char *a,
		       const char *b)
{
	int n = snprintf(err, errlen, "line %d: ", line);

	if (n >= 0 && (size_t)n < errlen)
		snprintf(err + n, errlen - (size_t)n, fmt, a, b);
	return -EINVAL;
}

static int section_start(const struct cli_conf_entry *e, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(config_sections) / sizeof(config_sections[0]); i++)
		if (!strcmp(e->section, config_sections[i])) {
			snprintf(cfg.section, sizeof(cfg.section), "%s", e->section);
			return 0;
		}
	return setting_err(err, errlen, e->line,
			   "unknown section [%s] (record, run, agent, server, query, symbolize, "
			   "recover)%s",
			   e->section, "");
}

/* The "--key=value" argument of a setting, checked against the option. */
static int setting_arg(const struct option *o, const struct cli_conf_entry *e, char **arg,
		       char *err, size_t errlen)
{
	*arg = NULL;
	if (o->has_arg == no_argument) {
		if (!strcmp(e->value, "false"))
			return 0;
		if (strcmp(e->value, "true"))
			return setting_err(err, errlen, e->line, "'%s' is true or false, not '%s'",
					   e->key, e->value);
		if (asprintf(arg, "--%s", e->key) < 0)
			*arg = NULL;
	} else if (asprintf(arg, "--%s=%s", e->key, e->value) < 0) {
		*arg = NULL;
	}
	if (!*arg) {
		snprintf(err, errlen, "line %d: out of memory", e->line);
		return -ENOMEM;
	}
	return 0;
}

static int add_setting(const struct cli_conf_entry *e, bool global, const struct option *o,
		       char *err, size_t errlen)
{
	struct config_setting *s;
	int ret;

	for (int i = 0; i < cfg.n_set; i++)
		if (cfg.set[i].global == global && !strcmp(cfg.set[i].key, e->key)) {
			char first[16];

			snprintf(first, sizeof(first), "%d", cfg.set[i].line);
			return setting_err(err, errlen, e->line, "'%s' is already set on line %s",
					   e->key, first);
		}
	if (cfg.n_set == CONFIG_MAX_SETTINGS)
		return setting_err(err, errlen, e->line, "more than %s settings%s", "1000", "");
	if (base_grow_max((void **)&cfg.set, &cfg.cap_set, (size_t)cfg.n_set + 1, sizeof(*cfg.set),
			  CONFIG_MAX_SETTINGS))
		return -ENOMEM;
	s = &cfg.set[cfg.n_set];
	*s = (struct config_setting){.line = e->line, .global = global};
	ret = setting_arg(o, e, &s->arg, err, errlen);
	if (ret)
		return ret;
	s->key = strdup(e->key);
	s->value = strdup(e->value);
	if (!s->key || !s->value) {
		free(s->key);
		free(s->value);
		free(s->arg);
		return -ENOMEM;
	}
	cfg.n_set++;
	return 0;
}

static int on_entry(void *ctx, const struct cli_conf_entry *e, char *err, size_t errlen)
{
	bool global = !e->section[0];
	const struct option *o;

	(void)ctx;
	if (!e->key)
		return section_start(e, err, errlen);
	if (!global && strcmp(e->section, cfg.cmd))
		return 0; /* another command's: that command checks it */
	if (!strcmp(e->key, "help") || !strcmp(e->key, "config") || !strcmp(e->key, "print-config"))
		return setting_err(err, errlen, e->line, "'%s' cannot be set in a config file%s",
				   e->key, "");
	o = find_opt(cfg.opts, e->key);
	if (!o && global && any_command_has(e->key))
		return 0; /* for the commands that take it */
	if (!o)
		return setting_err(err, errlen, e->line,
				   global ? "unknown key '%s' (no command has --%s)"
					  : "unknown key '%s' (hearth %s --help lists the options)",
				   e->key, global ? e->key : cfg.cmd);
	return add_setting(e, global, o, err, errlen);
}

/* Reads the whole file into *text. 0, -ENOENT, or -errno / -EFBIG. */
static int read_text(const char *path, char **text, size_t *len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	*text = NULL;
	if (!f)
		return -errno;
	*text = malloc(CLI_CONF_MAX_BYTES + 1);
	if (!*text) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(*text, 1, CLI_CONF_MAX_BYTES + 1, f);
	if (ferror(f) || n > CLI_CONF_MAX_BYTES) {
		int ret = ferror(f) ? -EIO : -EFBIG;

		fclose(f);
		free(*text);
		*text = NULL;
		return ret;
	}
	fclose(f);
	*len = n;
	return 0;
}

static int load_file(const char *cmd, bool explicit_path)
{
	char *text = NULL, err[512];
	size_t len = 0;
	int ret = read_text(cfg.path, &text, &len);

	if (ret == -ENOENT && !explicit_path)
		return 0; /* no /etc/hearth/hearth.conf: flags and defaults only */
	if (ret) {
		cli_error(cmd, "cannot read the config file '%s': %s", cfg.path,
			  ret == -EFBIG ? "larger than 1 MiB" : strerror(-ret));
		return -EINVAL;
	}
	ret = cli_conf_parse(text, len, on_entry, NULL, err, sizeof(err));
	free(text);
	cfg.loaded = !ret;
	if (ret) {
		cli_error(cmd, "config file %s, %s", cfg.path, err[0] ? err : strerror(-ret));
		return -EINVAL;
	}
	return 0;
}

/* Takes --config and --print-config out of argv into rest (capacity argc). */
static int take_own_flags(const char *cmd, int argc, char **argv, char **rest, int *n_rest,
			  const char **path)
{
	*n_rest = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			while (i < argc)
				rest[(*n_rest)++] = argv[i++];
			break;
		}
		if (!strcmp(argv[i], "--print-config")) {
			cfg.print = true;
			continue;
		}
		if (strcmp(argv[i], "--config") && strncmp(argv[i], "--config=", 9)) {
			rest[(*n_rest)++] = argv[i];
			continue;
		}
		if (*path) {
			cli_error(cmd, "--config given twice");
			return -EINVAL;
		}
		if (argv[i][8] == '=')
			*path = argv[i] + 9;
		else if (i + 1 < argc)
			*path = argv[++i];
		if (!*path || !**path) {
			cli_error(cmd, "option '--config' needs a file (see hearth %s --help)",
				  cmd);
			return -EINVAL;
		}
	}
	return 0;
}

int cli_config_args(const char *cmd, const struct option *opts, int *argc, char ***argv)
{
	char **rest = calloc((size_t)*argc + 1, sizeof(*rest));
	const char *path = NULL;
	int n_rest, ret, k = 0;

	cfg.cmd = cmd;
	cfg.opts = opts;
	if (!rest) {
		cli_error(cmd, "out of memory");
		return -EINVAL;
	}
	ret = take_own_flags(cmd, *argc, *argv, rest, &n_rest, &path);
	cfg.path = path ? path : CLI_CONFIG_DEFAULT;
	if (!ret)
		ret = load_file(cmd, path != NULL);
	if (!ret) {
		cfg.argv = calloc((size_t)(cfg.n_set + n_rest + 2), sizeof(*cfg.argv));
		cfg.arg_set = calloc((size_t)(cfg.n_set + 1), sizeof(*cfg.arg_set));
		ret = cfg.argv && cfg.arg_set ? 0 : -ENOMEM;
	}
	if (ret) {
		free(rest);
		return ret == -ENOMEM ? (cli_error(cmd, "out of memory"), -EINVAL) : ret;
	}
	cfg.argv[k++] = (*argv)[0];
	/* the global part first, so a command's own section overrides it */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < cfg.n_set; i++)
			if (cfg.set[i].global == (pass == 0) && cfg.set[i].arg) {
				cfg.arg_set[k] = i;
				cfg.argv[k++] = cfg.set[i].arg;
			}
	cfg.n_cfg = k - 1;
	for (int i = 0; i < n_rest; i++)
		cfg.argv[k++] = rest[i];
	free(rest);
	*argc = k;
	*argv = cfg.argv;
	return 0;
}

int cli_getopt(int argc, char **argv, const char *optstring, const struct option *opts)
{
	int before = optind ? optind : 1;
	int c = getopt_long(argc, argv, optstring, opts, NULL);

	/* settings from the file are single "--key=value" words at the front, where
	 * getopt never permutes: the word at `before` is the one it just took */
	cfg.last_arg = c == -1 ? 0 : before;
	return c;
}

/* A value as the config file would need it written (quoted when it must be). */
static void print_value(const char *v)
{
	size_t n = strlen(v);

	if (n && v[0] != '"' && v[0] != ' ' && v[0] != '\t' && v[n - 1] != ' ' &&
	    v[n - 1] != '\t') {
		printf("%s", v);
		return;
	}
	putchar('"');
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			putchar('\\');
		putchar(*v);
	}
	putchar('"');
}

/* The option getopt returned c for (long options by index, short ones by letter). */
static const struct option *opt_of(const struct option *opts, int c, int idx)
{
	if (idx >= 0)
		return &opts[idx];
	for (; opts->name; opts++)
		if (opts->val == c && !opts->flag)
			return opts;
	return NULL;
}

/* Effective settings: the last value of each option (file, then flags), each after a
 * comment line saying where it came from; options left at their defaults as
 * comments. The output is a valid config file that --config reads back to the same
 * settings (tests/integration/test_config.sh). */
static void print_config(const char *cmd, const struct option *opts, const char *optstring,
			 int argc, char **argv)
{
	size_t n_opts = 0;
	const char **val;
	int *src; /* -1: the command line, else an index into cfg.set */
	char **copy = calloc((size_t)argc + 1, sizeof(*copy));
	int c, idx;

	while (opts[n_opts].name)
		n_opts++;
	val = calloc(n_opts + 1, sizeof(*val));
	src = calloc(n_opts + 1, sizeof(*src));
	if (!copy || !val || !src)
		goto cleanup;
	memcpy(copy, argv, sizeof(*copy) * (size_t)argc);
	opterr = 0;
	optind = 0; /* a full restart of getopt: parse_args ran it on the same words */
	while (idx = -1, (c = getopt_long(argc, copy, optstring, opts, &idx)) != -1) {
		const struct option *o = opt_of(opts, c, idx);
		int at = optind - 1;

		if (!o || o->val == 'h')
			continue;
		val[o - opts] = o->has_arg == no_argument ? "true" : optarg;
		/* settings from the file are one word each, at the front (see cli_getopt) */
		src[o - opts] = at >= 1 && at <= cfg.n_cfg ? cfg.arg_set[at] : -1;
	}
	if (cfg.loaded)
		printf("# hearth %s: effective settings (%s, then flags)\n", cmd, cfg.path);
	else
		printf("# hearth %s: effective settings (no %s: flags only)\n", cmd, cfg.path);
	printf("[%s]\n", cmd);
	for (size_t i = 0; i < n_opts; i++) {
		if (!strcmp(opts[i].name, "help"))
			continue;
		if (!val[i]) {
			printf("# %s: default (see hearth %s --help)\n", opts[i].name, cmd);
			continue;
		}
		/* where it came from on a line of its own: a '#' after a value would be
		 * part of the value (conf_parse.c), and the output must read back */
		if (src[i] >= 0)
			printf("# %s: %s line %d\n", opts[i].name, cfg.path, cfg.set[src[i]].line);
		else
			printf("# %s: command line\n", opts[i].name);
		printf("%s = ", opts[i].name);
		print_value(val[i]);
		putchar('\n');
	}
cleanup:
	free(copy);
	free(val);
	free(src);
}

int cli_config_done(const char *cmd, const struct option *opts, const char *optstring, int argc,
		    char **argv, int ret)
{
	if (ret < 0 && cfg.last_arg >= 1 && cfg.last_arg <= cfg.n_cfg) {
		const struct config_setting *s = &cfg.set[cfg.arg_set[cfg.last_arg]];

		cli_error(cmd, "(that is '%s = %s', %s line %d)", s->key, s->value, cfg.path,
			  s->line);
	}
	if (ret == 0 && cfg.print) {
		print_config(cmd, opts, optstring, argc, argv);
		return CLI_DONE;
	}
	return ret;
}

int cli_parse(const char *cmd, const struct option *opts, const char *optstring, int argc,
	      char **argv, cli_flags_fn flags, void *ctx)
{
	int ret = cli_config_args(cmd, opts, &argc, &argv);

	if (!ret)
		ret = flags(argc, argv, opts, ctx);
	return cli_config_done(cmd, opts, optstring, argc, argv, ret);
}
