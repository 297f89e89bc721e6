/*
 * hearth symbolize: addresses on stdin -> function, file:line (and inlined frames), in
 * the output format of `addr2line -f -i -C`. A tool in itself, and the entry point of
 * bench/symbolize. This file is the command line; the engine (block reads, the text
 * cache of formatted answers, the writev emitter) is src/symbolize/sym_batch.c.
 *
 * --no-inlines prints one frame, named for the function the code is physically in (the
 * outermost frame) at the innermost file:line, as llvm-symbolizer --no-inlines does;
 * addr2line -f names the innermost, our default. The text cache takes a quarter of
 * --symbol-cache-mb, the symbolizer the rest.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "cli.h"
#include "symbolize/symbolize.h"

/* Our ends of the pipes (see widen_pipes). */
#define SYMBOLIZE_IO_BUF (1 << 20)

/* Which frames an answer shows (the options' words; sym_frames_shown is the engine's). */
enum frames_shown {
	FRAMES_INNERMOST, /* default: the innermost function (addr2line -f) */
	FRAMES_ALL,	  /* --inlines: every frame, innermost first (addr2line -f -i) */
	FRAMES_PHYSICAL,  /* --no-inlines: the outermost function, innermost file:line */
};

struct symbolize_args {
	const char *obj;
	enum frames_shown frames;
	bool addresses, stats;
	long passes; /* --timing N: in-process passes, timed on stderr */
	long cache_mb;
	double wait_s;
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: hearth symbolize [--obj FILE] [OPTIONS] < ADDRESSES\n"
	    "\n"
	    "Reads addresses on stdin, one per line: hex ELF virtual addresses of --obj\n"
	    "(0x401136), or FILE+0xOFF (a file offset in FILE). Prints what addr2line -f -C\n"
	    "prints: the function, then file:line; '?"
	    "?' and '?"
	    "?:0' when unknown.\n"
	    "\n"
	    "      --obj FILE          the object hex addresses belong to\n"
	    "  -i, --inlines           also the frames inlined at the address (innermost first)\n"
	    "      --no-inlines        one frame, named for the function the code is in (where\n"
	    "                          inlined code was inlined to, as llvm-symbolizer\n"
	    "                          --no-inlines), at the innermost file:line; without\n"
	    "                          either, the innermost function (as addr2line -f)\n"
	    "  -a, --addresses         print each address before its frames\n"
	    "      --symbol-cache-mb N byte budget of symbol tables, DWARF and the address\n"
	    "                          caches (a quarter of it for formatted answers),\n"
	    "                          1-65536 (default %d)\n"
	    "      --debuginfod-wait S with DEBUGINFOD_URLS set, wait up to S seconds for\n"
	    "                          debug info being fetched (default 30, 0 = don't)\n"
	    "      --stats             print cache counters on stderr at the end\n"
	    "      --timing N          read all input first, then symbolize it N times in this\n"
	    "                          process (output of the first pass only) and print each\n"
	    "                          pass's addresses/s on stderr (lookups and formatting into\n"
	    "                          memory; reading and writing excluded)\n"
	    "      --config FILE       settings file (default " CLI_CONFIG_DEFAULT ", if any;\n"
	    "                          flags override it; see docs/config.md)\n"
	    "      --print-config      print the effective settings and exit\n"
	    "  -h, --help              this help\n"
	    "\n"
	    "Exit status: 0 on success, 1 when an object cannot be read, 2 for a bad option.\n",
	    SYM_DEFAULT_CACHE_MB);
}
enum { OPT_OBJ = 256, OPT_NO_INLINES, OPT_CACHE, OPT_WAIT, OPT_STATS, OPT_TIMING };

/* The config file's settings, then argv (cli.h has the return convention). */
static int parse_args(int argc, char **argv, struct symbolize_args *a)
{
	static const struct option opts[] = {
	    {"obj", required_argument, NULL, OPT_OBJ},
	    {"inlines", no_argument, NULL, 'i'},
	    {"no-inlines", no_argument, NULL, OPT_NO_INLINES},
	    {"addresses", no_argument, NULL, 'a'},
	    {"symbol-cache-mb", required_argument, NULL, OPT_CACHE},
	    {"debuginfod-wait", required_argument, NULL, OPT_WAIT},
	    {"stats", no_argument, NULL, OPT_STATS},
	    {"timing", required_argument, NULL, OPT_TIMING},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c, ret = cli_config_args("symbolize", opts, &argc, &argv);

	*a = (struct symbolize_args){.cache_mb = SYM_DEFAULT_CACHE_MB, .wait_s = 30};
	opterr = 0;
	optind = 1;
	while (!ret && (c = cli_getopt(argc, argv, ":iah", opts)) != -1) {
		switch (c) {
		case OPT_OBJ:
			a->obj = optarg;
			break;
		case 'i':
			a->frames = FRAMES_ALL;
			break;
		case OPT_NO_INLINES:
			a->frames = FRAMES_PHYSICAL;
			break;
		case 'a':
			a->addresses = true;
			break;
		case OPT_STATS:
			a->stats = true;
			break;
		case OPT_TIMING:
			if (cli_parse_long(optarg, 1, 100, &a->passes) == 0)
				break;
			cli_error("symbolize",
				  "--timing '%s' is not a number of passes from 1 to 100", optarg);
			ret = -EINVAL;
			break;
		case 'h':
			usage(stdout);
			ret = CLI_DONE;
			break;
		case OPT_CACHE:
			if (cli_parse_long(optarg, 1, 65536, &a->cache_mb) == 0)
				break;
			cli_error("symbolize",
				  "--symbol-cache-mb '%s' is not a number of MiB from 1 to 65536",
				  optarg);
			ret = -EINVAL;
			break;
		case OPT_WAIT:
			if (!strcmp(optarg, "0") ||
			    cli_parse_seconds(optarg, 3600, &a->wait_s) == 0) {
				a->wait_s = strcmp(optarg, "0") ? a->wait_s : 0;
				break;
			}
			cli_error(
			    "symbolize",
			    "--debuginfod-wait '%s' is not a number of seconds from 0 to 3600",
			    optarg);
			ret = -EINVAL;
			break;
		default:
			cli_error("symbolize",
				  "unknown or incomplete option '%s' (see hearth symbolize --help)",
				  cli_bad_option(argc, argv, optind, optopt));
			ret = -EINVAL;
			break;
		}
	}
	if (!ret && optind < argc) {
		cli_error("symbolize", "unexpected argument '%s': addresses are read from stdin",
			  argv[optind]);
		ret = -EINVAL;
	}
	return cli_config_done("symbolize", opts, ":iah", argc, argv, ret);
}

/*
 * Through pipes, every 64 KiB (the default pipe size) costs a hand-over between us and
 * the other end, which on a busy machine waits for a time slice: answers are ~12 times
 * the size of their questions, so 11 MB out made ~170 of them. Our ends of the pipes get
 * SYMBOLIZE_IO_BUF instead (best effort: not a pipe, or over fs.pipe-max-size, leaves
 * them as they are).
 */
static void widen_pipes(void)
{
	fcntl(STDIN_FILENO, F_SETPIPE_SZ, SYMBOLIZE_IO_BUF);
	fcntl(STDOUT_FILENO, F_SETPIPE_SZ, SYMBOLIZE_IO_BUF);
}

/* All of stdin into in. 0 or -errno. */
static int read_all(struct base_sbuf *in)
{
	ssize_t n;

	do {
		if (base_grow((void **)&in->s, &in->cap, in->len + SYMBOLIZE_IO_BUF, 1))
			return -ENOMEM;
		n = read(STDIN_FILENO, in->s + in->len, in->cap - in->len);
		if (n < 0 && errno != EINTR)
			return -errno;
		in->len += n > 0 ? (size_t)n : 0;
	} while (n != 0);
	return 0;
}

/* All of [p, p + len) to fd. 0 or -errno (EPIPE when the reader left). */
static int write_all(int fd, const char *p, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

static double now_s(void)
{
	return (double)base_clock_ns(CLOCK_MONOTONIC) / 1e9;
}

/*
 * --timing: all input is read first; each pass answers every line into memory, timed;
 * the first pass's answers go to stdout. Pass 1 is cold (nothing cached), later ones
 * warm. 0 or -errno (*what says of what).
 */
static int timed_passes(struct sym_batch *b, long passes, const char **what)
{
	struct base_sbuf in = {0}, out = {0};
	long lines = 0;
	int err;

	*what = "read";
	err = read_all(&in);
	for (size_t i = 0; i < in.len; i++)
		lines += in.s[i] == '\n' || (i + 1 == in.len);
	for (long p = 0; p < passes && !err; p++) {
		double t0 = now_s(), dt;

		out.len = 0;
		err = sym_batch__text(b, in.s, in.len, &out);
		dt = now_s() - t0;
		fprintf(stderr, "pass %ld: %ld addresses in %.3f s, %.0f addresses/s\n", p + 1,
			lines, dt, dt > 0 ? (double)lines / dt : 0.0);
		*what = "write";
		if (!err && p == 0)
			err = write_all(STDOUT_FILENO, out.s, out.len);
	}
	base_sbuf__fini(&in);
	base_sbuf__fini(&out);
	return err;
}

static void print_stats(const struct symbolizer *s, const struct sym_batch *b)
{
	struct sym_stats st;
	struct sym_batch_stats bs;

	symbolizer__stats(s, &st);
	sym_batch__stats(b, &bs);
	fprintf(stderr,
		"cache_hits %" PRIu64 "\ncache_misses %" PRIu64 "\ncache_evictions %" PRIu64
		"\nobject_evictions %" PRIu64 "\ncache_bytes %" PRIu64 "\ncache_budget %" PRIu64
		"\nobjects %" PRIu64 "\ndwarf_failures %" PRIu64 "\ndebug_files %" PRIu64
		"\ndebuginfod_files %" PRIu64 "\n",
		st.cache_hits, st.cache_misses, st.cache_evictions, st.object_evictions,
		st.cache_bytes, st.cache_budget, st.objects, st.dwarf_failures, st.debug_files,
		st.debuginfod_files);
	fprintf(stderr,
		"text_cache_hits %" PRIu64 "\ntext_cache_misses %" PRIu64
		"\ntext_cache_resets %" PRIu64 "\ntext_cache_bytes %zu\ntext_cache_budget %zu\n",
		bs.hits, bs.misses, bs.resets, bs.bytes, bs.budget);
	fprintf(stderr,
		"budget_skips %" PRIu64 "\nbus_faults %" PRIu64 "\ndebug_cache_files %" PRIu64
		"\nrss_bytes %" PRIu64 "\npeak_rss_bytes %" PRIu64 "\n",
		st.budget_skips, st.bus_faults, st.debug_cache_files, mem_budget__rss(),
		mem_budget__peak_rss());
}

int cmd_symbolize(int argc, char **argv)
{
	static const enum sym_frames_shown shown[] = {
	    [FRAMES_INNERMOST] = SYM_FRAMES_INNERMOST,
	    [FRAMES_ALL] = SYM_FRAMES_ALL,
	    [FRAMES_PHYSICAL] = SYM_FRAMES_PHYSICAL,
	};
	struct symbolize_args a;
	struct sym_batch_opts bo = {0};
	struct symbolizer *s = NULL;
	struct sym_batch *b = NULL;
	const char *what = "read";
	uint64_t budget;
	int err = parse_args(argc, argv, &a);

	if (err)
		return err > 0 ? 0 : EXIT_USAGE;
	if (a.obj && access(a.obj, R_OK) != 0) {
		cli_error("symbolize", "cannot read --obj '%s': %s", a.obj, strerror(errno));
		return 1;
	}
	budget = (uint64_t)a.cache_mb << 20;
	bo.frames = shown[a.frames];
	bo.addresses = a.addresses;
	bo.text_bytes = (size_t)(budget / 4);
	/* the text cache keeps every answer: the symbolizer's address cache would be a copy */
	s = symbolizer__new(&(struct sym_opts){.cache_bytes = budget - bo.text_bytes,
					       .no_address_cache = true,
					       .no_inlines = bo.frames == SYM_FRAMES_PHYSICAL});
	if (!s || (a.obj && !(bo.obj = symbolizer__object(s, a.obj, a.obj, 0, 0))) ||
	    sym_batch__new(s, &bo, &b)) {
		cli_error("symbolize", "out of memory");
		symbolizer__free(s);
		return 1;
	}
	if (a.wait_s > 0)
		symbolizer__wait_debuginfo(s, (int)(a.wait_s * 1000));
	widen_pipes();
	err = a.passes ? timed_passes(b, a.passes, &what)
		       : sym_batch__stream(b, STDIN_FILENO, STDOUT_FILENO, &what);
	if (err == -ENOMEM)
		cli_error("symbolize", "out of memory");
	else if (err)
		cli_error("symbolize", "cannot %s %s: %s", what,
			  strcmp(what, "read") ? "stdout" : "stdin", strerror(-err));
	/* the reader sees EOF now, not after the caches are torn down below */
	if (close(STDOUT_FILENO) != 0 && !err) {
		err = -errno;
		cli_error("symbolize", "cannot write stdout: %s", strerror(-err));
	}
	if (a.stats)
		print_stats(s, b);
	sym_batch__free(b);
	symbolizer__free(s);
	return err ? 1 : 0;
}
