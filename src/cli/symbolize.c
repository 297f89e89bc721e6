/*
 * hearth symbolize: addresses on stdin -> function, file:line (and inlined frames), in
 * the output format of `addr2line -f -i -C`. A tool in itself, and the entry point of
 * bench/symbolize.
 *
 * Input lines: a hex ELF virtual address of --obj ("0x401136" or "401136", as addr2line
 * takes), or FILE+0xOFF — a file offset in FILE, what hearth prints for a frame it could
 * not name. Output per address: with -a the address, then per frame (innermost first;
 * only the innermost without --inlines) the function and "file:line", "??" and "??:0"
 * when unknown. stdin and stdout get 1 MiB buffers: through pipes, stdio's 4 KiB default
 * made a syscall (and a reader wake-up) every ~40 addresses, more than the lookups cost.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "symbolize/symbolize.h"

#define SYMBOLIZE_IO_BUF (1 << 20)

struct symbolize_args {
	const char *obj;
	bool inlines, addresses, stats;
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
	    "  -a, --addresses         print each address before its frames\n"
	    "      --symbol-cache-mb N byte budget of symbol tables, DWARF and the address\n"
	    "                          cache, 1-65536 (default %d)\n"
	    "      --debuginfod-wait S with DEBUGINFOD_URLS set, wait up to S seconds for\n"
	    "                          debug info being fetched (default 30, 0 = don't)\n"
	    "      --stats             print cache counters on stderr at the end\n"
	    "      --timing N          read all input first, then symbolize it N times in this\n"
	    "                          process (output of the first pass only) and print each\n"
	    "                          pass's addresses/s on stderr (lookups and formatting into\n"
	    "                          memory; reading and writing excluded)\n"
	    "  -h, --help              this help\n"
	    "\n"
	    "Exit status: 0 on success, 1 when an object cannot be read, 2 for a bad option.\n",
	    SYM_DEFAULT_CACHE_MB);
}

enum { OPT_OBJ = 256, OPT_CACHE, OPT_WAIT, OPT_STATS, OPT_TIMING };

/* 0, or EXIT_USAGE after saying why; -1 for --help. */
static int parse_args(int argc, char **argv, struct symbolize_args *a)
{
	static const struct option opts[] = {
	    {"obj", required_argument, NULL, OPT_OBJ},
	    {"inlines", no_argument, NULL, 'i'},
	    {"addresses", no_argument, NULL, 'a'},
	    {"symbol-cache-mb", required_argument, NULL, OPT_CACHE},
	    {"debuginfod-wait", required_argument, NULL, OPT_WAIT},
	    {"stats", no_argument, NULL, OPT_STATS},
	    {"timing", required_argument, NULL, OPT_TIMING},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c;

	*a = (struct symbolize_args){.cache_mb = SYM_DEFAULT_CACHE_MB, .wait_s = 30};
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":iah", opts, NULL)) != -1) {
		switch (c) {
		case OPT_OBJ:
			a->obj = optarg;
			break;
		case 'i':
			a->inlines = true;
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
			return EXIT_USAGE;
		case 'h':
			usage(stdout);
			return -1;
		case OPT_CACHE:
			if (cli_parse_long(optarg, 1, 65536, &a->cache_mb) == 0)
				break;
			cli_error("symbolize",
				  "--symbol-cache-mb '%s' is not a number of MiB from 1 to 65536",
				  optarg);
			return EXIT_USAGE;
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
			return EXIT_USAGE;
		default:
			cli_error("symbolize",
				  "unknown or incomplete option '%s' (see hearth symbolize --help)",
				  cli_bad_option(argc, argv, optind, optopt));
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_error("symbolize", "unexpected argument '%s': addresses are read from stdin",
			  argv[optind]);
		return EXIT_USAGE;
	}
	return 0;
}

/* Decimal of v into buf (room for 21 bytes); returns the start. printf is the warm
 * pass's largest cost, so frames are written with fputs. */
static const char *u64_dec(uint64_t v, char *buf)
{
	char *p = buf + 20;

	*p = '\0';
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	return p;
}

static void print_frame(FILE *out, const struct sym_frame *f)
{
	char num[21];

	fputs_unlocked(f->name, out);
	putc_unlocked('\n', out);
	fputs_unlocked(f->file ? f->file : "??", out);
	putc_unlocked(':', out);
	fputs_unlocked(u64_dec(f->file && f->line > 0 ? (uint64_t)f->line : 0, num), out);
	putc_unlocked('\n', out);
}

static void print_frames(FILE *out, const struct sym_result *r, bool inlines)
{
	size_t n = inlines ? r->n : (r->n ? 1 : 0);

	if (!n)
		fputs_unlocked("??\n??:0\n", out);
	for (size_t i = 0; i < n; i++)
		print_frame(out, &r->frames[i]);
}

static void print_address(FILE *out, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char buf[20];

	buf[0] = '0';
	buf[1] = 'x';
	for (int i = 0; i < 16; i++)
		buf[2 + i] = digits[(v >> (60 - 4 * i)) & 15];
	buf[18] = '\n';
	fwrite_unlocked(buf, 1, 19, out);
}

/* Strict hex (optional 0x) of the whole string. */
static bool parse_hex(const char *s, uint64_t *v)
{
	char *end;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 16);
	return !errno && !*end;
}

/* One input line (newline stripped): resolves and prints it. */
static void symbolize_line(FILE *out, struct symbolizer *s, struct sym_object *obj, char *line,
			   bool inlines, bool addresses)
{
	const struct sym_result *r = NULL;
	char *plus = strrchr(line, '+');
	uint64_t v = 0;

	if (plus && plus != line) {
		*plus = '\0';
		if (parse_hex(plus + 1, &v))
			symbolizer__resolve(s, symbolizer__object(s, line, line, 0, 0), v, &r);
		*plus = '+';
	} else if (obj && parse_hex(line, &v)) {
		symbolizer__resolve_vaddr(s, obj, v, &r);
	}
	if (addresses)
		print_address(out, v);
	print_frames(out, r ? r : &(struct sym_result){0}, inlines);
}

static void print_stats(const struct symbolizer *s)
{
	struct sym_stats st;

	symbolizer__stats(s, &st);
	fprintf(stderr,
		"cache_hits %" PRIu64 "\ncache_misses %" PRIu64 "\ncache_evictions %" PRIu64
		"\nobject_evictions %" PRIu64 "\ncache_bytes %" PRIu64 "\ncache_budget %" PRIu64
		"\nobjects %" PRIu64 "\ndwarf_failures %" PRIu64 "\ndebug_files %" PRIu64
		"\ndebuginfod_files %" PRIu64 "\n",
		st.cache_hits, st.cache_misses, st.cache_evictions, st.object_evictions,
		st.cache_bytes, st.cache_budget, st.objects, st.dwarf_failures, st.debug_files,
		st.debuginfod_files);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Every line of stdin (newlines stripped) into *lines. Count, or -ENOMEM. */
static long read_lines(char ***lines)
{
	char *line = NULL, **v = NULL, **nv;
	size_t cap = 0, n = 0, vcap = 0;
	ssize_t len;

	while ((len = getline(&line, &cap, stdin)) > 0) {
		while (len > 0 &&
		       (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
			line[--len] = '\0';
		if (n == vcap) {
			vcap = vcap ? vcap * 2 : 1024;
			if (!(nv = realloc(v, vcap * sizeof(*v))))
				break;
			v = nv;
		}
		if (!(v[n] = strdup(line)))
			break;
		n++;
	}
	free(line);
	*lines = v;
	return (long)n;
}

/*
 * --timing: each pass symbolizes every line into a memory buffer, timed; the first
 * pass's buffer goes to stdout. Pass 1 is cold (nothing cached), later ones warm.
 */
static int timed_passes(struct symbolizer *s, struct sym_object *obj,
			const struct symbolize_args *a)
{
	char **lines = NULL, *buf = NULL;
	size_t len = 0;
	long n = read_lines(&lines);
	int err = 0;

	for (long p = 0; p < a->passes && !err; p++) {
		FILE *mem = open_memstream(&buf, &len);
		double t0 = now_s(), dt;

		if (!mem) {
			err = 1;
			break;
		}
		for (long i = 0; i < n; i++)
			symbolize_line(mem, s, obj, lines[i], a->inlines, a->addresses);
		fflush(mem);
		dt = now_s() - t0;
		fprintf(stderr, "pass %ld: %ld addresses in %.3f s, %.0f addresses/s\n", p + 1, n,
			dt, dt > 0 ? (double)n / dt : 0.0);
		fclose(mem);
		if (p == 0)
			fwrite(buf, 1, len, stdout);
		free(buf);
		buf = NULL;
	}
	for (long i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	return err;
}

int cmd_symbolize(int argc, char **argv)
{
	struct symbolize_args a;
	struct symbolizer *s = NULL;
	struct sym_object *obj = NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int err = parse_args(argc, argv, &a);

	if (err)
		return err < 0 ? 0 : err;
	if (a.obj && access(a.obj, R_OK) != 0) {
		cli_error("symbolize", "cannot read --obj '%s': %s", a.obj, strerror(errno));
		return 1;
	}
	s = symbolizer__new(&(struct sym_opts){.cache_bytes = (uint64_t)a.cache_mb << 20});
	if (!s || (a.obj && !(obj = symbolizer__object(s, a.obj, a.obj, 0, 0)))) {
		cli_error("symbolize", "out of memory");
		symbolizer__free(s);
		return 1;
	}
	if (a.wait_s > 0)
		symbolizer__wait_debuginfo(s, (int)(a.wait_s * 1000));
	setvbuf(stdin, NULL, _IOFBF, SYMBOLIZE_IO_BUF);
	setvbuf(stdout, NULL, _IOFBF, SYMBOLIZE_IO_BUF);
	if (a.passes)
		err = timed_passes(s, obj, &a);
	while (!a.passes && (n = getline(&line, &cap, stdin)) > 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
			line[--n] = '\0';
		symbolize_line(stdout, s, obj, line, a.inlines, a.addresses);
	}
	fflush(stdout);
	if (a.stats)
		print_stats(s);
	free(line);
	symbolizer__free(s);
	return err;
}
