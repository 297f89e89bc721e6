/*
 * hearth agent: samples the whole machine continuously and pushes one gzipped
 * pprof per interval to a server's /ingest; a small loopback listener serves
 * the agent's own /metrics and /debug/pprof/profile. Runs until SIGINT/SIGTERM,
 * then sends what is spooled for a few seconds and keeps the rest on disk.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "serve.h"
#include "offcpu/offcpu.h"

#define AGENT_DEFAULT_LISTEN	"127.0.0.1:4101"
#define AGENT_DEFAULT_SPOOL_DIR "/var/lib/hearth/agent-spool"
#define AGENT_FLUSH_S		5.0
#define AGENT_MAX_INTERVAL_S	3600.0

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hearth agent --server URL [OPTIONS]\n"
		"\n"
		"Samples on-CPU stacks of every process continuously and pushes one profile per\n"
		"interval to a hearth server (or any Pyroscope-compatible /ingest). Needs root.\n"
		"\n"
		"      --server URL           where to push (e.g. http://127.0.0.1:4100, or\n"
		"                             https://SERVER:4100 for a server with --tls-cert)\n"
		"      --tls-ca FILE          PEM CA certificate(s) that an https:// server's\n"
		"                             certificate must chain to (default: the system's)\n"
		"      --auth-token-file F    send 'Authorization: Bearer TOKEN' with every push,\n"
		"                             and require it on the --listen endpoints\n"
		"  -F, --freq HZ              samples per second per CPU, 1-10000 (default 99)\n"
		"      --interval SECS        length of one profile (default 10)\n"
		"      --host NAME            value of the host label (default: the hostname)\n"
		"      --spool-dir DIR        where unsent profiles wait on disk\n"
		"                             (default " AGENT_DEFAULT_SPOOL_DIR ")\n"
		"      --spool-mb N           disk bound of the spool, oldest dropped first "
		"(default 64)\n"
		"      --listen HOST:PORT     the agent's /metrics and /debug/pprof/profile\n"
		"                             (default " AGENT_DEFAULT_LISTEN "; 'off' disables)\n"
		"      --transfer MODE        ringbuf (default) or map, as in hearth record\n"
		"      --unwind MODE          auto (default), dwarf or fp, as in hearth record\n"
		"      --python MODE          auto (default): Python frames of CPython 3.10-3.13\n"
		"                             processes; off: their native frames only\n"
		"      --node MODE            auto (default): JavaScript frames of Node.js\n"
		"                             processes (docs/node.md); off: native frames only\n"
		"      --java MODE            auto (default): Java frames of HotSpot JVMs; off:\n"
		"                             their native frames only (docs/java.md)\n"
		"      --off-cpu              also push off-CPU (off_cpu) and wall-clock (wall)\n"
		"                             profiles: where threads wait, by reason\n"
		"                             (docs/offcpu.md; off by default: its cost grows\n"
		"                             with context switches and syscalls)\n"
		"      --off-cpu-min DUR      off-CPU time sent with a stack per DUR a thread\n"
		"                             waited for one reason (default 1ms; ns/us/ms/s)\n"
		"      --ruby MODE            auto (default): Ruby frames of CRuby 3.1 processes;\n"
		"                             off: their native frames only\n"
		"      --idle                 keep samples of idle CPUs\n"
		"      --memory-limit SIZE    ceiling on hearth's resident memory (default 64M;\n"
		"                             at least 40M): caches evict to stay under it\n"
		"                             (docs/memory.md)\n"
		"      --log-level LEVEL      error, warn, info (default: startup lines) or debug\n"
		"                             (also one line per HTTP request)\n"
		"      --config FILE          settings file (default " CLI_CONFIG_DEFAULT ",\n"
		"                             if any; flags override it; see docs/config.md)\n"
		"      --print-config         print the effective settings and exit\n"
		"  -h, --help                 this help\n");
}

enum {
	OPT_INTERVAL = 300,
	OPT_HOST,
	OPT_TRANSFER,
	OPT_IDLE,
	OPT_UNWIND,
	OPT_PYTHON,
	OPT_NODE,
	OPT_JAVA,
	OPT_OFFCPU,
	OPT_OFFCPU_MIN,
	OPT_SERVER,
	OPT_ATOKEN,
	OPT_SPOOL_DIR,
	OPT_SPOOL_MB,
	OPT_ALISTEN,
	OPT_TLS_CA,
	OPT_ALOG_LEVEL,
	OPT_MEMORY_LIMIT,
	OPT_RUBY
};

const struct option cli_agent_long_opts[] = {
    {"freq", required_argument, NULL, 'F'},
    {"interval", required_argument, NULL, OPT_INTERVAL},
    {"host", required_argument, NULL, OPT_HOST},
    {"transfer", required_argument, NULL, OPT_TRANSFER},
    {"idle", no_argument, NULL, OPT_IDLE},
    {"unwind", required_argument, NULL, OPT_UNWIND},
    {"python", required_argument, NULL, OPT_PYTHON},
    {"node", required_argument, NULL, OPT_NODE},
    {"memory-limit", required_argument, NULL, OPT_MEMORY_LIMIT},
    {"java", required_argument, NULL, OPT_JAVA},
    {"off-cpu", no_argument, NULL, OPT_OFFCPU},
    {"off-cpu-min", required_argument, NULL, OPT_OFFCPU_MIN},
    {"ruby", required_argument, NULL, OPT_RUBY},
    {NULL, 0, NULL, 0},
};

const struct option cli_agent_only_opts[] = {
    {"server", required_argument, NULL, OPT_SERVER},
    {"auth-token-file", required_argument, NULL, OPT_ATOKEN},
    {"spool-dir", required_argument, NULL, OPT_SPOOL_DIR},
    {"spool-mb", required_argument, NULL, OPT_SPOOL_MB},
    {"listen", required_argument, NULL, OPT_ALISTEN},
    {"tls-ca", required_argument, NULL, OPT_TLS_CA},
    {"log-level", required_argument, NULL, OPT_ALOG_LEVEL},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

void cli_agent_defaults(struct cli_agent_args *a)
{
	a->ao.so.hz = 99;
	a->ao.so.transfer = SAMPLER_TRANSFER_RINGBUF; /* docs/architecture.md, "Transfer modes" */
	a->ao.so.node = true;			      /* docs/node.md */
	a->ao.so.java = true;			      /* docs/java.md */
	a->ao.so.python = true;			      /* docs/python.md */
	a->ao.so.ruby = true;			      /* docs/ruby.md */
	a->ao.interval_s = AGENT_DEFAULT_INTERVAL_S;
	a->ao.trim_memory = true; /* an always-on process keeps only what it uses */
	a->ao.memory_limit = AGENT_DEFAULT_MEMORY_LIMIT; /* docs/memory.md */
}

/*
 * --memory-limit: a count of bytes, or one with K, M, G or T after it (powers of
 * 1024; "B" or "iB" may follow: 32M, 64MB, 1GiB), as --max-disk. 0 or -EINVAL.
 */
int cli_parse_mem_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
	if (u) {
		shift = 10 * (int)(u - units + 1);
		end += strcmp(end + 1, "iB") ? 1 : 3;
	}
	if (!strcmp(end, "B"))
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

void cli_merge_opts(const struct option *a, const struct option *b, struct option *out, size_t n)
{
	size_t k = 0;

	for (; a->name && k + 1 < n; a++)
		out[k++] = *a;
	for (; b->name && k + 1 < n; b++)
		out[k++] = *b;
	memset(&out[k], 0, sizeof(out[k]));
}

int cli_parse_agent_opt(const char *cmd, int c, const char *arg, struct cli_agent_args *a)
{
	long v;

	switch (c) {
	case 'F':
		if (cli_parse_long(arg, SAMPLER_MIN_HZ, SAMPLER_MAX_HZ, &v)) {
			cli_error(cmd, "-F: '%s' is not a frequency from %d to %d Hz", arg,
				  SAMPLER_MIN_HZ, SAMPLER_MAX_HZ);
			return -EINVAL;
		}
		a->ao.so.hz = (int)v;
		return 0;
	case OPT_INTERVAL:
		if (cli_parse_seconds(arg, AGENT_MAX_INTERVAL_S, &a->ao.interval_s) ||
		    a->ao.interval_s < 0.5) {
			cli_error(cmd,
				  "--interval: '%s' is not a duration from 0.5 to 3600 seconds",
				  arg);
			return -EINVAL;
		}
		return 0;
	case OPT_HOST:
		if (!*arg || strlen(arg) > 255) {
			cli_error(cmd, "--host: give a name of 1 to 255 characters");
			return -EINVAL;
		}
		a->ao.host = arg;
		return 0;
	case OPT_TRANSFER:
		if (strcmp(arg, "map") && strcmp(arg, "ringbuf")) {
			cli_error(cmd, "--transfer: unknown mode '%s' (map, ringbuf)", arg);
			return -EINVAL;
		}
		a->ao.so.transfer =
		    strcmp(arg, "map") ? SAMPLER_TRANSFER_RINGBUF : SAMPLER_TRANSFER_MAP;
		return 0;
	case OPT_IDLE:
		a->ao.so.idle = true;
		return 0;
	case OPT_UNWIND: {
		int mode;

		if (cli_parse_unwind(cmd, arg, &mode))
			return -EINVAL;
		a->ao.so.unwind = (enum sampler_unwind)mode;
		return 0;
	}
	case OPT_PYTHON:
		return cli_parse_python(cmd, arg, &a->ao.so.python);
	case OPT_NODE:
		return cli_parse_node(cmd, arg, &a->ao.so.node);
	case OPT_MEMORY_LIMIT:
		if (cli_parse_mem_size(arg, &a->ao.memory_limit)) {
			cli_error(cmd,
				  "--memory-limit: '%s' is not a size (e.g. 40M, 64MB, 1G; K, M, G, "
				  "T are powers of 1024)",
				  arg);
			return -EINVAL;
		}
		if (a->ao.memory_limit < AGENT_MIN_MEMORY_LIMIT) {
			cli_error(cmd,
				  "--memory-limit: '%s' is below the floor of %lluM: the program, "
				  "its BPF maps, the kernel's symbols and its largest transient "
				  "(a profile built and symbolized) need that much (docs/memory.md)",
				  arg, AGENT_MIN_MEMORY_LIMIT >> 20);
			return -EINVAL;
		}
		return 0;
	case OPT_JAVA:
		return cli_parse_java(cmd, arg, &a->ao.so.java);
	case OPT_OFFCPU:
		a->ao.so.off_cpu = true;
		return 0;
	case OPT_OFFCPU_MIN:
		if (offcpu_parse_duration(arg, &a->ao.so.off_cpu_min_ns)) {
			cli_error(cmd, "--off-cpu-min: '%s' is not a duration from 1us to 10s (a "
				       "number with ns, us, ms or s; ms when none)", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_RUBY:
		return cli_parse_ruby(cmd, arg, &a->ao.so.ruby);
	}
	return 1;
}

struct agent_cli {
	struct cli_agent_args a;
	const char *listen;
};

static int agent_only_opt(int c, const char *arg, struct agent_cli *ac)
{
	long v;

	switch (c) {
	case OPT_SERVER:
		if (strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8)) {
			cli_error("agent", "--server: '%s' is not an http:// or https:// URL", arg);
			return -EINVAL;
		}
		ac->a.ao.server_url = arg;
		return 0;
	case OPT_ATOKEN:
		if (cli_read_token("agent", arg, ac->a.token, sizeof(ac->a.token)))
			return -EINVAL;
		ac->a.ao.auth_token = ac->a.token;
		return 0;
	case OPT_SPOOL_DIR:
		ac->a.ao.spool_dir = arg;
		return 0;
	case OPT_SPOOL_MB:
		if (cli_parse_long(arg, 1, 1 << 20, &v)) {
			cli_error("agent", "--spool-mb: '%s' is not a size in MiB (1 or more)",
				  arg);
			return -EINVAL;
		}
		ac->a.ao.spool_mb = (size_t)v;
		return 0;
	case OPT_ALISTEN:
		if (strcmp(arg, "off") && cli_check_listen("agent", arg))
			return -EINVAL;
		ac->listen = arg;
		return 0;
	case OPT_TLS_CA:
		if (access(arg, R_OK)) {
			cli_error("agent", "--tls-ca: cannot read '%s': %s", arg, strerror(errno));
			return -EINVAL;
		}
		ac->a.ao.tls_ca = arg;
		return 0;
	case OPT_ALOG_LEVEL: {
		enum server_log_level l;

		return cli_parse_log_level("agent", arg, &l);
	}
	}
	return -EINVAL;
}

#define AGENT_OPTSTRING ":h" CLI_AGENT_SHORT_OPTS

static int parse_flags(int argc, char **argv, const struct option *opts, void *ctx)
{
	struct agent_cli *ac = ctx;
	int c, ret;

	opterr = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, AGENT_OPTSTRING, opts)) != -1) {
		if (cli_getopt_failed("agent", c, argc, argv))
			return -EINVAL;
		if (c == 'h') {
			usage(stdout);
			return CLI_DONE;
		}
		ret = cli_parse_agent_opt("agent", c, optarg, &ac->a);
		if (ret == 1)
			ret = agent_only_opt(c, optarg, ac);
		if (ret)
			return ret;
	}
	if (optind < argc) {
		cli_error("agent", "unexpected argument '%s' (see hearth agent --help)",
			  argv[optind]);
		return -EINVAL;
	}
	if (!ac->a.ao.server_url) {
		cli_error("agent",
			  "--server URL is required (e.g. --server http://127.0.0.1:4100)");
		return -EINVAL;
	}
	return 0;
}

/* The config file's settings, then argv (cli.h has the return convention). */
static int parse_args(int argc, char **argv, struct agent_cli *ac)
{
	struct option opts[32];

	cli_merge_opts(cli_agent_long_opts, cli_agent_only_opts, opts, 32);
	return cli_parse("agent", opts, AGENT_OPTSTRING, argc, argv, parse_flags, ac);
}

static int agent_main(struct agent_cli *ac)
{
	struct agent *ag = NULL;
	struct server *srv = NULL;
	/* the listener takes the token the agent pushes with: its live profiles and
	 * metrics are no less private than the server's */
	struct server_opts so = {.listen = ac->listen,
				 .auth_token = ac->a.ao.auth_token,
				 .live = agent__live_profile,
				 .metrics = agent__write_metrics,
				 .log_level = cli_log_level};
	char err[2048] = "", url[300];
	int ret;

	ret = agent__open(&ac->a.ao, &ag, err, sizeof(err));
	if (ret) {
		cli_error("agent", "%s", err);
		return 1;
	}
	so.ctx = ag;
	if (strcmp(ac->listen, "off")) {
		/* no note on clear text: this listener has no TLS option, and its
		 * loopback default is the advice */
		cli_warn_exposed("agent", ac->listen, so.auth_token, true);
		ret = server__start(&so, &srv, err, sizeof(err));
		if (ret) {
			cli_error("agent", "%s", err);
			agent__close(ag);
			return 1;
		}
		cli_listen_url(ac->listen, server__port(srv), false, url, sizeof(url));
		cli_info("agent", "metrics on %s/metrics; pushing to %s every %g s", url,
			 ac->a.ao.server_url, ac->a.ao.interval_s);
	}
	ret = agent__run(ag, &cli_stop, AGENT_FLUSH_S);
	if (ret)
		cli_error("agent", "reading samples from the kernel failed: %s", strerror(-ret));
	server__stop(srv);
	agent__close(ag);
	return ret ? 1 : 0;
}

int cmd_agent(int argc, char **argv)
{
	struct agent_cli ac = {.listen = AGENT_DEFAULT_LISTEN};
	int ret;

	cli_agent_defaults(&ac.a);
	ac.a.ao.spool_dir = AGENT_DEFAULT_SPOOL_DIR;
	ret = parse_args(argc, argv, &ac);
	if (ret)
		return ret > 0 ? 0 : EXIT_USAGE;
	cli_catch_stop_signals();
	return agent_main(&ac);
}
