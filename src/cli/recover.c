/*
 * hearth recover: salvage a store that no longer opens (SQLite finds a page of
 * its database corrupt) into a new data directory, copying every row that can
 * still be read (store__salvage). The damaged directory is only read.
 */
#include "cli.h"
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
		   "  -h, --help       this help\n");
}

enum { OPT_DATA = 256, OPT_TO };

static const struct option long_opts[] = {
    {"data", required_argument, NULL, OPT_DATA},
    {"to", required_argument, NULL, OPT_TO},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int cmd_recover(int argc, char **argv)
{
	const char *data = NULL, *to = NULL;
	struct store_salvage_result res;
	char err[512];
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
		if (cli_getopt_failed("recover", c, argc, argv))
			return EXIT_USAGE;
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == OPT_DATA)
			data = optarg;
		else if (c == OPT_TO)
			to = optarg;
	}
	if (optind < argc) {
		cli_error("recover", "unexpected argument '%s' (see hearth recover --help)",
			  argv[optind]);
		return EXIT_USAGE;
	}
	if (!data || !to) {
		cli_error("recover", "--data DIR and --to NEWDIR are both required");
		return EXIT_USAGE;
	}
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
