/*
 * hearth record: sample for a while, then write one profile — perf record and
 * perf report in one step.
 *
 * Constraint: every user mistake is found before sampling starts (exit 2), and
 * an interrupted recording (Ctrl-C, SIGTERM) still writes its output.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "base/base.h"
#include "serve.h"
#include "collect/collect.h"
#include "profile/profile.h"
#include "sampler/sampler.h"
#include "java/java.h"
#include "offcpu/offcpu.h"
#include "python/python.h"
#include "v8/v8.h"
#include "ruby/ruby.h"
#include "unwind/unwind.h"

#define RECORD_MAX_SECONDS (365.0 * 24 * 3600)
/* How often the in-kernel counts are drained. */
#define DRAIN_INTERVAL_MS 1000
#define POLL_MS 100

enum out_format { FMT_NONE, FMT_TOP, FMT_PPROF, FMT_FOLDED, FMT_SVG };

struct record_args {
	struct sampler_opts so;
	uint32_t pids[SAMPLER_MAX_PIDS];
	double seconds;
	const char *output;
	enum out_format format;
	long top_rows;
	long cache_mb; /* symbolizer budget, 0 = its default */
	uint64_t memory_limit; /* --memory-limit, 0 = none (docs/memory.md) */
	bool quiet;
	bool verbose; /* -v: the unwinder's, Python walk's and BPF program's counts too */
	bool wall;    /* --wall: on-CPU + off-CPU time per thread (implies so.off_cpu) */
};

/* What on_sample feeds: the collector, and which samples it takes. */
struct record_ctx {
	struct collector *col;
	bool off_cpu, wall;
	uint64_t period_ns;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hearth record [OPTIONS]\n"
		"\n"
		"Samples on-CPU stacks (user and kernel) of every process on the machine, or of\n"
		"the processes given, and writes one profile when done. Needs root (or CAP_BPF\n"
		"and CAP_PERFMON).\n"
		"\n"
		"  -a, --all-cpus         the whole machine (the default; accepted as in perf)\n"
		"  -p, --pid PID[,PID...] only these processes (all their threads)\n"
		"      --cgroup PATH      only tasks in this cgroup v2 directory and below\n"
		"  -F, --freq HZ          samples per second per CPU, 1-10000 (default 99)\n"
		"  -d, --duration SECS    how long to record (default 10); Ctrl-C stops early\n"
		"  -o, --output FILE      where to write (default: the top table on stdout)\n"
		"      --format FMT       pprof, folded, svg or top (default from the file name:\n"
		"                         .pb.gz/.pprof pprof, .folded/.txt folded, .svg svg)\n"
		"      --top N            rows of the top table (default 40, 0 = all)\n"
		"      --transfer MODE    ringbuf (every sample through a BPF ring buffer; default)\n"
		"                         or map (counts aggregated in the kernel, drained in\n"
		"                         batches); bench/overhead measured ringbuf cheaper\n"
		"      --unwind MODE      user stacks: auto (CFI tables from .eh_frame where a\n"
		"                         process has them, frame pointers elsewhere; default),\n"
		"                         dwarf (the same, an error if the unwinder cannot load;\n"
		"                         up to 512 frames) or fp (frame pointers, 127 frames)\n"
		"      --python MODE      auto (default): name the Python frames of CPython\n"
		"                         3.10-3.13 processes (docs/python.md); off: their\n"
		"                         interpreter's native frames only\n"
		"      --node MODE        auto (default): name the JavaScript frames of Node.js\n"
		"                         processes from V8's own metadata (docs/node.md);\n"
		"                         off: native frames (and perf maps) only\n"
		"      --java MODE        auto (default): name the Java frames of HotSpot JVMs\n"
		"                         (OpenJDK 17; docs/java.md); off: native frames only\n"
		"      --off-cpu          record where threads wait instead: off-CPU time by\n"
		"                         reason (runqueue, io, lock, sleep, throttled, other)\n"
		"                         with the stack they waited in (docs/offcpu.md)\n"
		"      --wall             wall-clock time per thread: on-CPU samples x period\n"
		"                         ([on-cpu]) plus off-CPU time ([off-cpu: REASON])\n"
		"      --off-cpu-min DUR  off-CPU time of a thread is sent with a stack once it\n"
		"                         adds up to DUR per reason (default 1ms; ns, us, ms, s)\n"
		"      --ruby MODE        auto (default): name the Ruby frames of CRuby 3.1\n"
		"                         processes (docs/ruby.md); off: native frames only\n"
		"      --idle             keep samples of idle CPUs (pid 0)\n"
		"      --symbol-cache-mb N  memory budget of symbol tables, DWARF and the address\n"
		"                         cache (default 256)\n"
		"      --memory-limit SIZE  the ledger's limit, as hearth agent's (e.g. 64M; default\n"
		"                         none): caches get 40%% of it, the symbol cache too\n"
		"                         unless --symbol-cache-mb is given (docs/memory.md)\n"
		"  -q, --quiet            no progress line\n"
		"  -v, --verbose          after the summary line, the counts of the unwinder,\n"
		"                         the Python walk and the BPF program\n"
		"      --config FILE      settings file (default " CLI_CONFIG_DEFAULT ", if any;\n"
		"                         flags override it; see docs/config.md)\n"
		"      --print-config     print the effective settings and exit\n"
		"  -h, --help             this help\n"
		"\n"
		"Exit status: 0 on success, 1 when sampling fails, 2 for a bad option or value.\n");
}

/* Format implied by an output file name, FMT_NONE when the name says nothing. */
static enum out_format format_from_name(const char *path)
{
	static const struct {
		const char *suffix;
		enum out_format fmt;
	} map[] = { { ".pb.gz", FMT_PPROF }, { ".pprof", FMT_PPROF }, { ".folded", FMT_FOLDED },
		    { ".txt", FMT_FOLDED },  { ".svg", FMT_SVG } };
	size_t n = strlen(path);

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		size_t m = strlen(map[i].suffix);

		if (n >= m && strcmp(path + n - m, map[i].suffix) == 0)
			return map[i].fmt;
	}
	return FMT_NONE;
}

static int parse_format(const char *s, enum out_format *out)
{
	if (!strcmp(s, "pprof"))
		*out = FMT_PPROF;
	else if (!strcmp(s, "folded"))
		*out = FMT_FOLDED;
	else if (!strcmp(s, "svg"))
		*out = FMT_SVG;
	else if (!strcmp(s, "top"))
		*out = FMT_TOP;
	else
		return -EINVAL;
	return 0;
}

/* "Tgid:" of /proc/PID/status: the process a thread id belongs to; 0 if none. */
static long process_of(long pid)
{
	char path[64], line[256];
	long tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

static int parse_pids(const char *arg, struct record_args *a)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long pid, tgid;

		if (cli_parse_long(tok, 1, 0x7fffffff, &pid)) {
			cli_error("record", "-p: '%s' is not a process id (give PID[,PID...])", tok);
			ret = -EINVAL;
			break;
		}
		tgid = process_of(pid);
		if (tgid == 0) {
			cli_error("record", "-p: no process with pid %ld", pid);
			ret = -ESRCH;
			break;
		}
		if (tgid != pid) {
			cli_error("record", "-p: %ld is a thread of process %ld; give the process id",
				  pid, tgid);
			ret = -EINVAL;
			break;
		}
		if (a->so.n_pids == SAMPLER_MAX_PIDS) {
			cli_error("record", "-p: at most %d processes", SAMPLER_MAX_PIDS);
			ret = -E2BIG;
			break;
		}
		a->pids[a->so.n_pids++] = (uint32_t)pid;
	}
	if (!ret && a->so.n_pids == 0) {
		cli_error("record", "-p: no process id given");
		ret = -EINVAL;
	}
	free(copy);
	return ret;
}

enum { OPT_CGROUP = 256, OPT_FORMAT, OPT_TRANSFER, OPT_IDLE, OPT_TOP, OPT_UNWIND, OPT_CACHE, OPT_PYTHON,
       OPT_NODE, OPT_MEMLIMIT, OPT_JAVA, OPT_OFFCPU, OPT_WALL, OPT_OFFCPU_MIN,
       OPT_RUBY };

const struct option cli_record_opts[] = {
	{ "all-cpus", no_argument, NULL, 'a' },	   { "pid", required_argument, NULL, 'p' },
	{ "freq", required_argument, NULL, 'F' },	   { "duration", required_argument, NULL, 'd' },
	{ "output", required_argument, NULL, 'o' },	   { "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },		   { "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "format", required_argument, NULL, OPT_FORMAT }, { "transfer", required_argument, NULL, OPT_TRANSFER },
	{ "symbol-cache-mb", required_argument, NULL, OPT_CACHE },
	{ "idle", no_argument, NULL, OPT_IDLE },	   { "top", required_argument, NULL, OPT_TOP },
	{ "unwind", required_argument, NULL, OPT_UNWIND },
	{ "python", required_argument, NULL, OPT_PYTHON },
	{ "node", required_argument, NULL, OPT_NODE },
	{ "memory-limit", required_argument, NULL, OPT_MEMLIMIT },
	{ "java", required_argument, NULL, OPT_JAVA },
	{ "off-cpu", no_argument, NULL, OPT_OFFCPU },
	{ "wall", no_argument, NULL, OPT_WALL },
	{ "off-cpu-min", required_argument, NULL, OPT_OFFCPU_MIN },
	{ "ruby", required_argument, NULL, OPT_RUBY },
	{ NULL, 0, NULL, 0 },
};

/* One option. 0 to go on, CLI_DONE when --help was printed, -EINVAL after an error line. */
static int parse_one(int c, const char *arg, struct record_args *a)
{
	long v;

	switch (c) {
	case 'a':
		return 0;
	case 'p':
		return parse_pids(arg, a) ? -EINVAL : 0;
	case 'F':
		if (cli_parse_long(arg, SAMPLER_MIN_HZ, SAMPLER_MAX_HZ, &v)) {
			cli_error("record", "-F: '%s' is not a frequency from %d to %d Hz", arg,
				  SAMPLER_MIN_HZ, SAMPLER_MAX_HZ);
			return -EINVAL;
		}
		a->so.hz = (int)v;
		return 0;
	case 'd':
		if (cli_parse_seconds(arg, RECORD_MAX_SECONDS, &a->seconds)) {
			cli_error("record", "-d: '%s' is not a duration in seconds (> 0)", arg);
			return -EINVAL;
		}
		return 0;
	case 'o':
		a->output = arg;
		return 0;
	case 'q':
		a->quiet = true;
		return 0;
	case 'v':
		a->verbose = true;
		return 0;
	case 'h':
		usage(stdout);
		return CLI_DONE;
	case OPT_CGROUP:
		a->so.cgroup_path = arg;
		return 0;
	case OPT_FORMAT:
		if (parse_format(arg, &a->format)) {
			cli_error("record", "--format: unknown format '%s' (pprof, folded, svg, top)",
				  arg);
			return -EINVAL;
		}
		return 0;
	case OPT_TRANSFER:
		if (!strcmp(arg, "map"))
			a->so.transfer = SAMPLER_TRANSFER_MAP;
		else if (!strcmp(arg, "ringbuf"))
			a->so.transfer = SAMPLER_TRANSFER_RINGBUF;
		else {
			cli_error("record", "--transfer: unknown mode '%s' (map, ringbuf)", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_IDLE:
		a->so.idle = true;
		return 0;
	case OPT_UNWIND: {
		int mode;

		if (cli_parse_unwind("record", arg, &mode))
			return -EINVAL;
		a->so.unwind = (enum sampler_unwind)mode;
		return 0;
	}
	case OPT_NODE:
		return cli_parse_node("record", arg, &a->so.node);
	case OPT_PYTHON:
		return cli_parse_python("record", arg, &a->so.python);
	case OPT_MEMLIMIT:
		if (cli_parse_mem_size(arg, &a->memory_limit) || a->memory_limit < (16ull << 20)) {
			cli_error("record",
				  "--memory-limit: '%s' is not a size of at least 16M (e.g. 32M, "
				  "64MB, 1G; K, M, G, T are powers of 1024)",
				  arg);
			return -EINVAL;
		}
		return 0;
	case OPT_JAVA:
		return cli_parse_java("record", arg, &a->so.java);
	case OPT_OFFCPU:
		a->so.off_cpu = true;
		return 0;
	case OPT_WALL:
		a->wall = true;
		a->so.off_cpu = true;
		return 0;
	case OPT_OFFCPU_MIN:
		if (offcpu_parse_duration(arg, &a->so.off_cpu_min_ns)) {
			cli_error("record", "--off-cpu-min: '%s' is not a duration from 1us to 10s "
					    "(a number with ns, us, ms or s; ms when none)", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_RUBY:
		return cli_parse_ruby("record", arg, &a->so.ruby);
	case OPT_CACHE:
		if (cli_parse_long(arg, 1, 65536, &a->cache_mb)) {
			cli_error("record", "--symbol-cache-mb: '%s' is not a number of MiB from 1 to "
					    "65536", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_TOP:
		if (cli_parse_long(arg, 0, 1000000, &a->top_rows)) {
			cli_error("record", "--top: '%s' is not a row count (0 = all)", arg);
			return -EINVAL;
		}
		return 0;
	}
	return -EINVAL;
}

#define RECORD_OPTSTRING ":ap:F:d:o:qvh"

/* Parses argv. 0 to record, CLI_DONE after --help, -EINVAL after printing the error. */
static int parse_flags(int argc, char **argv, const struct option *opts, void *ctx)
{
	struct record_args *a = ctx;
	int c, ret;

	a->so.hz = 99;
	/* Cheaper per sample at 99 Hz: docs/architecture.md, "Transfer modes". */
	a->so.transfer = SAMPLER_TRANSFER_RINGBUF;
	a->so.unwind = SAMPLER_UNWIND_AUTO; /* CFI tables where present: docs/unwind.md */
	a->so.node = true;		    /* docs/node.md */
	a->so.java = true;		    /* docs/java.md */
	a->so.python = true;		    /* docs/python.md */
	a->so.ruby = true;		    /* docs/ruby.md */
	a->seconds = 10;
	a->top_rows = 40;
	a->so.pids = a->pids;
	opterr = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, RECORD_OPTSTRING, opts)) != -1) {
		if (cli_getopt_failed("record", c, argc, argv))
			return -EINVAL;
		ret = parse_one(c, optarg, a);
		if (ret)
			return ret;
	}
	if (optind < argc) {
		cli_error("record", "unexpected argument '%s' (see hearth record --help)",
			  argv[optind]);
		return -EINVAL;
	}
	if (a->format == FMT_NONE)
		a->format = a->output ? format_from_name(a->output) : FMT_TOP;
	if (a->format == FMT_NONE) {
		cli_error("record", "cannot tell the format of '%s' from its name; add --format "
				    "pprof|folded|svg|top", a->output);
		return -EINVAL;
	}
	return 0;
}

/* The config file's settings, then argv (cli.h has the return convention). */
static int parse_args(int argc, char **argv, struct record_args *a)
{
	return cli_parse("record", cli_record_opts, RECORD_OPTSTRING, argc, argv, parse_flags, a);
}

/* ---- recording ---- */

/* CPU samples; with --off-cpu off-CPU blocks only; with --wall both, the CPU
 * samples as their time (count x period) under the reason "running". */
static void on_sample(void *ctx, const struct sampler_sample *s)
{
	struct record_ctx *rc = ctx;
	struct sampler_sample w;
	bool running = s->kind == HEARTH_RB_KIND_RUNNING; /* CPU samples inside a walk: wall only */

	if (rc->wall && (!s->kind || running)) {
		offcpu_wall_sample(s, rc->period_ns, &w);
		collector__add(rc->col, &w);
	} else if (!running && (rc->wall || !s->kind == !rc->off_cpu)) {
		collector__add(rc->col, s);
	}
}

static void on_event(void *ctx, const struct sampler_event *e)
{
	collector__event(((struct record_ctx *)ctx)->col, e);
}

static void progress(const struct record_args *a, struct sampler *s, double elapsed)
{
	fprintf(stderr, "\rhearth record: %.1f/%.1f s, %llu samples ", elapsed, a->seconds,
		(unsigned long long)sampler__samples(s));
	fflush(stderr);
}

/* Samples until the duration ends or a signal arrives. 0 or -errno. */
static int sample_loop(const struct record_args *a, struct sampler *s)
{
	int64_t start = base_clock_ns(CLOCK_MONOTONIC), last_drain = start, now;
	bool show = !a->quiet && isatty(STDERR_FILENO);
	int ret;

	while (!stop_requested) {
		now = base_clock_ns(CLOCK_MONOTONIC);
		if ((double)(now - start) / 1e9 >= a->seconds)
			break;
		ret = sampler__poll(s, POLL_MS);
		if (ret < 0)
			return ret;
		if (now - last_drain >= (int64_t)DRAIN_INTERVAL_MS * 1000000) {
			ret = sampler__drain(s);
			if (ret < 0)
				return ret;
			last_drain = now;
		}
		if (show)
			progress(a, s, (double)(now - start) / 1e9);
	}
	if (show)
		fputc('\n', stderr);
	sampler__stop(s);
	sampler__raw_finish(s);
	return sampler__drain(s);
}

static int write_output(const struct record_args *a, const struct profile *p, FILE *out)
{
	switch (a->format) {
	case FMT_PPROF:
		return pprof_write(p, out);
	case FMT_FOLDED:
		return folded_write(p, out);
	case FMT_SVG:
		return svg_write(p, out, "hearth record");
	default:
		return top_write(p, out, (size_t)a->top_rows);
	}
}

/* Appends ", N what" (or ": N what" for the first item) to line at *n. */
static void append_count(char *line, size_t len, size_t *n, bool *first, uint64_t v,
			 const char *what)
{
	int w;

	if (*n >= len)
		return;
	w = snprintf(line + *n, len - *n, "%s %llu %s", *first ? ":" : ",",
		     (unsigned long long)v, what);
	*first = false;
	*n = w > 0 ? *n + (size_t)w : *n;
}

/*
 * The end-of-run summary, one line on stderr (as perf record's), also kept as a
 * pprof comment:
 *   N samples, dropped N samples: N reason, ...[; N stack-id collisions resent ...]
 * On stderr the counts after ';' (events that lost nothing) and the BPF program's
 * run time only with verbose.
 */
static void report_drops(struct sampler *s, const uint64_t drops[HEARTH_DROP_MAX],
			 struct profile *p, const struct collect_stats *cs, bool add_comment,
			 bool verbose)
{
	uint64_t total = cs->dropped, run_ns, runs;
	char line[1024];
	size_t n, short_len;
	bool first = true;

	for (int i = 0; i < HEARTH_DROP_MAX; i++)
		if (sampler_drop_is_loss(i))
			total += drops[i];
	if (profile__type(p)) /* off-CPU / wall: the counts are nanoseconds */
		n = (size_t)snprintf(line, sizeof(line), "%.3f s recorded, dropped %llu samples",
				     (double)cs->samples / 1e9, (unsigned long long)total);
	else
		n = (size_t)snprintf(line, sizeof(line), "%llu samples, dropped %llu samples",
				     (unsigned long long)cs->samples, (unsigned long long)total);
	for (int i = 0; i < HEARTH_DROP_MAX; i++)
		if (drops[i] && sampler_drop_is_loss(i))
			append_count(line, sizeof(line), &n, &first, drops[i], sampler_drop_name(i));
	if (cs->dropped)
		append_count(line, sizeof(line), &n, &first, cs->dropped, "user-space table full");
	short_len = n < sizeof(line) ? n : sizeof(line) - 1;
	for (int i = 0; i < HEARTH_DROP_MAX; i++)
		if (drops[i] && !sampler_drop_is_loss(i) && n < sizeof(line))
			n += (size_t)snprintf(line + n, sizeof(line) - n, "; %llu %s",
					      (unsigned long long)drops[i], sampler_drop_name(i));
	fprintf(stderr, "hearth record: %.*s", verbose ? (int)sizeof(line) : (int)short_len,
		line);
	/* Only counted while kernel.bpf_stats_enabled=1 (bench/overhead sets it). */
	if (verbose && sampler__prog_stats(s, &run_ns, &runs) == 0 && runs > 0)
		fprintf(stderr, "; BPF program: %llu runs, %llu ns", (unsigned long long)runs,
			(unsigned long long)run_ns);
	fputc('\n', stderr);
	/* Kept in pprof/folded/SVG files; the top table on a terminal already has it above. */
	if (add_comment)
		profile__add_comment(p, line);
}

/* One stderr line (and pprof comment) on the off-CPU recorder, when it ran: its
 * counters as read right after the last drain (blocks sent later are not in
 * the profile: long sleepers wake while it is built). */
static void report_offcpu(const uint64_t st[HEARTH_OFFCPU_STAT_MAX], bool on, struct profile *p,
			  bool add_comment)
{
	char line[512];

	if (!on)
		return;
	offcpu_format_stats(st, line, sizeof(line));
	fprintf(stderr, "hearth record: %s\n", line);
	if (add_comment)
		profile__add_comment(p, line);
}

/* One stderr line on the Python walk, when CPython processes were sampled. */
static void report_python(struct sampler *s)
{
	uint64_t py[HEARTH_PY_STAT_MAX];
	struct python_mgr_stats ms;

	if (sampler__python_stats(s, py))
		return;
	python_mgr__stats(sampler__python(s), &ms);
	if (!py[HEARTH_PY_SAMPLES] && !ms.unsupported)
		return;
	fprintf(stderr,
		"hearth record: python: %llu samples of CPython processes, %llu with Python frames "
		"(%llu frames); without: %llu threads with no interpreter state, %llu idle in C, "
		"%llu unreadable, %llu stopped at a non-code frame; %llu truncated; %llu CPython "
		"processes of versions without offsets (native frames only)\n",
		(unsigned long long)py[HEARTH_PY_SAMPLES], (unsigned long long)py[HEARTH_PY_WALKED],
		(unsigned long long)py[HEARTH_PY_FRAMES], (unsigned long long)py[HEARTH_PY_NO_TSTATE],
		(unsigned long long)py[HEARTH_PY_NO_FRAME], (unsigned long long)py[HEARTH_PY_READ_FAIL],
		(unsigned long long)py[HEARTH_PY_NOT_CODE], (unsigned long long)py[HEARTH_PY_TRUNCATED],
		(unsigned long long)ms.unsupported);
}

/* One stderr line on the V8 walk, when node processes were sampled. */
static void report_node(struct sampler *s)
{
	uint64_t v[HEARTH_V8_STAT_MAX];
	struct v8_mgr_stats ms;

	if (sampler__v8_stats(s, v))
		return;
	v8_mgr__stats(sampler__v8(s), &ms);
	if (!v[HEARTH_V8_SAMPLES] && !ms.unsupported)
		return;
	fprintf(stderr,
		"hearth record: node: %llu samples of node processes, %llu with JS frames (%llu "
		"frames); %llu typed frames skipped, %llu native frames crossed; stops: %llu "
		"unreadable, %llu end of the fp chain, %llu truncated; %llu functions named, %llu "
		"unknown (moved or collected); %llu V8 builds not walkable\n",
		(unsigned long long)v[HEARTH_V8_SAMPLES], (unsigned long long)v[HEARTH_V8_WALKED],
		(unsigned long long)v[HEARTH_V8_FRAMES], (unsigned long long)v[HEARTH_V8_MARKER],
		(unsigned long long)v[HEARTH_V8_NOT_JS], (unsigned long long)v[HEARTH_V8_READ_FAIL],
		(unsigned long long)v[HEARTH_V8_BAD_FP], (unsigned long long)v[HEARTH_V8_TRUNCATED],
		(unsigned long long)ms.cached, (unsigned long long)ms.failed,
		(unsigned long long)ms.unsupported);
}

/* One stderr line on the Java walk, when JVMs were sampled (-v). */
static void report_java(struct sampler *s)
{
	uint64_t j[HEARTH_JAVA_STAT_MAX];
	struct java_mgr_stats ms;

	if (sampler__java_stats(s, j))
		return;
	java_mgr__stats(sampler__java(s), &ms);
	if (!j[HEARTH_JAVA_SAMPLES] && !ms.unsupported)
		return;
	fprintf(stderr,
		"hearth record: java: %llu samples of JVMs, %llu with Java frames (%llu "
		"interpreted, %llu compiled, %llu stub frames; %llu stubs stepped with rbp, %llu "
		"in a prologue); stops: %llu no code blob, %llu bad frame, %llu unreadable, %llu "
		"truncated; %llu methods named (%llu KiB), %llu stale, %llu unnamed frames, %llu "
		"JVMs unsupported\n",
		(unsigned long long)j[HEARTH_JAVA_SAMPLES], (unsigned long long)j[HEARTH_JAVA_WALKED],
		(unsigned long long)j[HEARTH_JAVA_F_INTERP],
		(unsigned long long)j[HEARTH_JAVA_F_COMPILED],
		(unsigned long long)j[HEARTH_JAVA_F_STUB], (unsigned long long)j[HEARTH_JAVA_STUB_FP],
		(unsigned long long)j[HEARTH_JAVA_PROLOGUE], (unsigned long long)j[HEARTH_JAVA_NO_BLOB],
		(unsigned long long)j[HEARTH_JAVA_BAD_FRAME],
		(unsigned long long)j[HEARTH_JAVA_READ_FAIL],
		(unsigned long long)j[HEARTH_JAVA_TRUNCATED], (unsigned long long)ms.methods,
		(unsigned long long)(ms.bytes >> 10), (unsigned long long)ms.stale,
		(unsigned long long)ms.failed, (unsigned long long)ms.unsupported);
}

/* One stderr line on the Ruby walk, when CRuby processes were sampled. */
static void report_ruby(struct sampler *s)
{
	uint64_t rb[HEARTH_RB_STAT_MAX];
	struct ruby_mgr_stats ms;

	if (sampler__ruby_stats(s, rb))
		return;
	ruby_mgr__stats(sampler__ruby(s), &ms);
	if (!rb[HEARTH_RB_SAMPLES] && !ms.unsupported)
		return;
	fprintf(stderr,
		"hearth record: ruby: %llu samples of CRuby processes, %llu with Ruby frames "
		"(%llu frames); without: %llu threads with no execution context, %llu with no "
		"Ruby frame, %llu unreadable, %llu bad VM stack; %llu truncated; %llu iseqs "
		"named, %llu unreadable; %llu CRuby processes of versions without offsets\n",
		(unsigned long long)rb[HEARTH_RB_SAMPLES], (unsigned long long)rb[HEARTH_RB_WALKED],
		(unsigned long long)rb[HEARTH_RB_FRAMES], (unsigned long long)rb[HEARTH_RB_NO_EC],
		(unsigned long long)rb[HEARTH_RB_NO_FRAME], (unsigned long long)rb[HEARTH_RB_READ_FAIL],
		(unsigned long long)rb[HEARTH_RB_BAD_STACK], (unsigned long long)rb[HEARTH_RB_TRUNCATED],
		(unsigned long long)ms.iseq_cached, (unsigned long long)ms.iseq_failed,
		(unsigned long long)ms.unsupported);
}

/* One stderr line on the table unwinder: why walks stopped, table memory, build time. */
static void report_unwind(struct sampler *s)
{
	uint64_t uw[HEARTH_UW_STAT_MAX], raw[SAMPLER_RAW_STAT_MAX];
	struct unwind_mgr_stats ms;
	const struct unwind_table *big;

	if (sampler__unwind_stats(s, uw, &ms))
		return;
	big = unwind_mgr__largest(sampler__unwind_mgr(s));
	sampler__raw_stats(s, raw);
	fprintf(
	    stderr,
	    "hearth record: unwind: %llu samples table-unwound (stops: %llu outermost, %llu "
	    "unsupported rule, %llu unreadable stack, %llu bad frame pointer, %llu at %d frames; "
	    "mixed mode: %llu unmapped pcs and %llu pcs without CFI row, %llu frames crossed "
	    "with frame pointers; %llu signal frames crossed; %llu frame-pointer frames; %llu "
	    "rows from the row cache); %llu "
	    "tables for %llu processes, %llu "
	    "rows "
	    "= %llu KiB in BPF (%llu of %llu chunks; %llu objects waiting for room, %llu "
	    "loads without room), %llu KiB user memory, %llu builds (%llu again) in "
	    "%.1f ms%s%s\n",
	    (unsigned long long)uw[HEARTH_UW_SAMPLES], (unsigned long long)uw[HEARTH_UW_END],
	    (unsigned long long)uw[HEARTH_UW_UNSUPPORTED],
	    (unsigned long long)uw[HEARTH_UW_READ_FAIL], (unsigned long long)uw[HEARTH_UW_BAD_FP],
	    (unsigned long long)uw[HEARTH_UW_TRUNCATED], HEARTH_UNWIND_MAX_FRAMES,
	    (unsigned long long)uw[HEARTH_UW_NO_MAPPING], (unsigned long long)uw[HEARTH_UW_NO_ROW],
	    (unsigned long long)uw[HEARTH_UW_JIT_FRAMES], (unsigned long long)uw[HEARTH_UW_SIGNAL],
	    (unsigned long long)uw[HEARTH_UW_FP_FRAMES],
	    (unsigned long long)uw[HEARTH_UW_ROW_CACHE_HITS], (unsigned long long)ms.tables,
	    (unsigned long long)ms.procs, (unsigned long long)ms.rows,
	    (unsigned long long)(ms.row_bytes >> 10), (unsigned long long)ms.chunks_used,
	    (unsigned long long)ms.chunks_total, (unsigned long long)ms.no_room_objects,
	    (unsigned long long)ms.no_room, (unsigned long long)(ms.user_bytes >> 10),
	    (unsigned long long)ms.builds, (unsigned long long)ms.rebuilds, ms.build_ms,
	    big ? "; largest " : "", big ? big->path : "");
	fprintf(stderr,
		"hearth record: unwind: first samples of new processes: %llu sent with a stack "
		"copy (%llu more with frame pointers: ring full), walked once their tables were "
		"out: %llu complete, %llu partial, %llu with frame pointers (no tables in time), "
		"%llu dropped\n",
		(unsigned long long)uw[HEARTH_UW_RAW], (unsigned long long)uw[HEARTH_UW_RAW_LOST],
		(unsigned long long)raw[SAMPLER_RAW_COMPLETE],
		(unsigned long long)raw[SAMPLER_RAW_PARTIAL],
		(unsigned long long)raw[SAMPLER_RAW_NO_VIEW],
		(unsigned long long)raw[SAMPLER_RAW_DROPPED]);
	/* Tables on demand (docs/unwind.md "Tables by heat"). */
	fprintf(stderr,
		"hearth record: unwind: tables by heat: %llu loaded (%llu again), %llu evicted "
		"for hotter objects, %llu requests (%llu frames without their table, %llu "
		"wake-ups), %llu objects waiting for room, %llu tables parked (%llu KiB), %llu "
		"of %llu KiB of BPF table budget in use, %llu objects, %llu ticks\n",
		(unsigned long long)ms.tables_loaded, (unsigned long long)ms.tables_reloaded,
		(unsigned long long)ms.tables_evicted,
		(unsigned long long)ms.requests, (unsigned long long)uw[HEARTH_UW_NO_TABLE],
		(unsigned long long)ms.request_events, (unsigned long long)ms.waiting_objects,
		(unsigned long long)ms.parked_tables, (unsigned long long)(ms.parked_bytes >> 10),
		(unsigned long long)(ms.bpf_bytes_used >> 10),
		(unsigned long long)(ms.bpf_bytes_budget >> 10), (unsigned long long)ms.objects,
		(unsigned long long)ms.heat_ticks);
	fprintf(stderr,
		"hearth record: unwind: partial tables: %llu (%llu FDEs loaded, %llu added, %llu "
		"dropped for the cap), %llu pcs asked for (%llu frames without their FDE, %llu not "
		"covered by any FDE), %llu reloads, %llu for want of room\n",
		(unsigned long long)ms.partial_tables, (unsigned long long)ms.partial_fdes,
		(unsigned long long)ms.partial_fdes_added, (unsigned long long)ms.partial_fdes_dropped,
		(unsigned long long)ms.partial_requests, (unsigned long long)uw[HEARTH_UW_PARTIAL_MISS],
		(unsigned long long)ms.partial_not_covered, (unsigned long long)ms.partial_reloads,
		(unsigned long long)ms.partial_for_room);
	fprintf(stderr,
		"hearth record: unwind: maps re-read for a pc outside the view: %llu (%llu found "
		"nothing new)\n",
		(unsigned long long)ms.remaps, (unsigned long long)ms.remaps_unchanged);
}

static int record(const struct record_args *a, FILE *out)
{
	struct proc_table *pt = proc_table__new("/proc");
	struct sym_opts so = { .cache_bytes = a->cache_mb ? (uint64_t)a->cache_mb << 20
							  : a->memory_limit / 100 * AGENT_CACHE_PCT };
	struct symbolizer *sym = symbolizer__new(&so);
	struct collector *col = (pt && sym) ? collector__new(pt, sym) : NULL;
	struct record_ctx rc = { .col = col, .off_cpu = a->so.off_cpu && !a->wall, .wall = a->wall,
				 .period_ns = 1000000000ull / (uint64_t)a->so.hz };
	struct sampler_callbacks cb = { .sample = on_sample, .event = on_event, .ctx = &rc };
	struct sampler *s = NULL;
	struct profile *p = NULL;
	struct collect_stats cs;
	uint64_t offcpu_st[HEARTH_OFFCPU_STAT_MAX], drops[HEARTH_DROP_MAX];
	bool offcpu_on = false;
	char err[2048] = "";
	int64_t t0 = 0, m0 = 0;
	int ret;

	if (!col || (a->so.off_cpu &&
		     collector__set_type(col, a->wall ? OFFCPU_WALL_TYPE : OFFCPU_PROFILE_TYPE))) {
		ret = -ENOMEM;
		cli_error("record", "out of memory");
		goto cleanup;
	}
	ret = sampler__open(&a->so, &cb, &s, err, sizeof(err));
	if (ret) {
		cli_error("record", "%s", err);
		goto cleanup;
	}
	collector__set_python(col, sampler__python(s));
	collector__set_v8(col, sampler__v8(s));
	collector__set_java(col, sampler__java(s));
	collector__set_ruby(col, sampler__ruby(s));
	t0 = base_clock_ns(CLOCK_REALTIME);
	m0 = base_clock_ns(CLOCK_MONOTONIC);
	ret = sample_loop(a, s);
	/* The counters as the recording ends, together: the programs run on until
	 * sampler__close, through the build (a drop then is no sample of it). */
	sampler__drops(s, drops);
	offcpu_on = sampler__offcpu_stats(s, offcpu_st) == 0;
	if (a->verbose) {
		report_unwind(s);
		report_python(s);
		report_node(s);
		report_java(s);
		report_ruby(s);
	}
	if (ret < 0) {
		cli_error("record", "reading samples from the kernel failed: %s", strerror(-ret));
		goto cleanup;
	}
	p = collector__build(col, 1000000000 / a->so.hz, t0, base_clock_ns(CLOCK_MONOTONIC) - m0);
	if (!p) {
		ret = -ENOMEM;
		cli_error("record", "out of memory while building the profile");
		goto cleanup;
	}
	collector__stats(col, &cs);
	report_drops(s, drops, p, &cs, a->format != FMT_TOP, a->verbose);
	report_offcpu(offcpu_st, offcpu_on, p, a->format != FMT_TOP);
	ret = write_output(a, p, out);
	if (ret)
		cli_error("record", "writing %s failed: %s", a->output ? a->output : "stdout",
			  strerror(-ret));
cleanup:
	profile__free(p);
	sampler__close(s);
	collector__free(col);
	symbolizer__free(sym);
	proc_table__free(pt);
	return ret;
}

int cmd_record(int argc, char **argv)
{
	struct record_args a = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	FILE *out = stdout;
	int ret;

	ret = parse_args(argc, argv, &a);
	if (ret)
		return ret > 0 ? 0 : EXIT_USAGE;
	if (a.output) {
		out = fopen(a.output, "w");
		if (!out) {
			cli_error("record", "cannot write '%s': %s", a.output, strerror(errno));
			return EXIT_USAGE;
		}
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	mem_budget__set_limit(a.memory_limit, AGENT_CACHE_PCT); /* 0: none */
	a.so.raw_held_bytes = (size_t)(a.memory_limit / 16);
	ret = record(&a, out);
	if (out != stdout && fclose(out) != 0 && !ret) {
		cli_error("record", "writing '%s' failed: %s", a.output, strerror(errno));
		ret = -EIO;
	}
	if (ret && a.output)
		unlink(a.output); /* no half-written profile left behind */
	return ret ? 1 : 0;
}
