/*
 * hearth: entry point. Dispatches to one subcommand per file in src/cli/.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Subcommands: one line each (one file each in src/cli/). */
static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "record", cmd_record },
	{ "run", cmd_run },
	{ "agent", cmd_agent },
	{ "server", cmd_server },
	{ "query", cmd_query },
	{ "symbolize", cmd_symbolize },
	{ "recover", cmd_recover },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: hearth COMMAND [OPTIONS]\n"
		   "\n"
		   "An always-on, system-wide CPU profiler for Linux (eBPF).\n"
		   "\n"
		   "Commands:\n"
		   "  record    sample the whole machine (or some processes) for a while and\n"
		   "            write a profile: top table, pprof, folded stacks or SVG\n"
		   "  run       profile the machine continuously into a local store and serve\n"
		   "            the query API (agent + server in one process)\n"
		   "  agent     profile continuously and push to a server\n"
		   "  server    store pushed profiles, serve the query API\n"
		   "  query     query a server or a data directory from the terminal\n"
		   "  symbolize addresses on stdin -> function, file:line, inlined frames\n"
		   "            (like addr2line -f -i -C)\n"
		   "  recover   copy what can still be read of a damaged store into a new one\n"
		   "\n"
		   "Run 'hearth COMMAND --help' for the options of a command. Every option\n"
		   "can also be set in " CLI_CONFIG_DEFAULT " (or --config FILE; see\n"
		   "docs/config.md); 'hearth COMMAND --print-config' shows the result.\n"
		   "  -h, --help       this help\n"
		   "  -V, --version    print the version\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("hearth %s\n", HEARTH_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "hearth: unknown command '%s' (see hearth --help)\n", argv[1]);
	return EXIT_USAGE;
}
