/*
 * hearth recover: salvage a store that no longer opens (SQLite finds a page of
 * its database corrupt) into a new data directory, copying every row that can
 * still be read (store__salvage). The damaged directory is only read.
 */
#include "cli.h"
#include "serve.h"
#include "store/store.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: hearth recover --data DIR --to NEWDIR\n"
		   "\n"
		   "Copies what can still be read of the store in DIR (whose database is\n"
		   "damaged: hearth refuses to open it) into a new store in NEWDIR; then start\n"
		   "hearth with --data NEWDIR. DIR is not changed. See docs/storage.md.\n"
		   "\n"
		   "  --data DIR       the damaged data directory\n"
		   "  --to NEWDIR      where to write the new store (must hold no database)\n"
		   "  --config FILE    settings file (default " CLI_CONFIG_DEFAULT ", if any;\n"
		   "                   flags override it; see docs/config.md)\n"
		   "  --print-config   print the effective settings and exit\n"
		   "  -h, --help       this help\n");
}

enum { OPT_DATA = 256, OPT_TO };

const struct option cli_recover_opts[] = {
    {"data", required_argument, NULL, OPT_DATA},
    {"to", required_argument, NULL, OPT_TO},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_flags(int argc, char **argv, const char **data, const char **to)
{
	int c;

	opterr = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, ":h", cli_recover_opts)) != -1) {
		if (cli_getopt_failed("recover", c, argc, argv))
			return -EINVAL;
		if (c == 'h') {
			usage(stdout);
			return CLI_DONE;
		}
		if (c == OPT_DATA)
			*data = optarg;
		else if (c == OPT_TO)
			*to = optarg;
	}
	if (optind < argc) {
		cli_error("recover", "unexpected argument '%s' (see hearth recover --help)",
			  argv[optind]);
		return -EINVAL;
	}
	if (!*data || !*to) {
		cli_error("recover", "--data DIR and --to NEWDIR are both required");
		return -EINVAL;
	}
	return 0;
}

/* The config file's settings, then argv (cli.h has the return convention). */
static int parse_args(int argc, char **argv, const char **data, const char **to)
{
	int ret = cli_config_args("recover", cli_recover_opts, &argc, &argv);

	if (!ret)
		ret = parse_flags(argc, argv, data, to);
	return cli_config_done("recover", cli_recover_opts, ":h", argc, argv, ret);
}

int cmd_recover(int argc, char **argv)
{
	const char *data = NULL, *to = NULL;
	struct store_salvage_result res;
	char err[512];
	int ret = parse_args(argc, argv, &data, &to);

	if (ret)
		return ret > 0 ? 0 : EXIT_USAGE;
	/* The new store is as private as the one a server makes (umask 077, the
	 * directory 0700): its stacks name the machine's code and users. */
	if (cli_private_dir("recover", to))
		return 1;
	if (store__salvage(data, to, &res, err, sizeof(err))) {
		cli_error("recover", "%s", err[0] ? err : "salvage failed");
		return 1;
	}
	printf("hearth recover: %llu rows copied to %s (%llu chunks); %llu unreadable "
	       "stretches skipped, %llu tables unreadable\n",
	       (unsigned long long)res.rows, to, (unsigned long long)res.chunks,
	       (unsigned long long)res.holes, (unsigned long long)res.lost_tables);
	return 0;
}
