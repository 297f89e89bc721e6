/*
 * hearth run: agent, server and store in one process — the default a new user
 * starts with. The agent's profiles go to the store through a local sink:
 * agent (profile__to_flat) → sender thread → run_sink → ingest__store →
 * store__append_flat, the path of /ingest after its decoding, with no HTTP,
 * query string or pprof in between. The server answers the query API, and
 * /debug/pprof/profile samples live.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "serve.h"
#include "ingest/ingest.h"

#define RUN_FLUSH_S	     5.0
/* The store's and queries' resident memory that --memory-limit does not
 * cover (docs/memory.md: hearth server on a fleet run's store, 28 MB VmHWM
 * after the web UI's queries). */
#define RUN_STORE_MEMORY (32ull << 20)
#define RUN_MAINTAIN_EVERY_S 60

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: hearth run [OPTIONS]\n"
	    "\n"
	    "Profiles the whole machine continuously into a local store and serves the\n"
	    "web UI at /, the query API, pprof endpoint and metrics (see docs/api.md).\n"
	    "Needs root.\n"
	    "\n"
	    "      --data DIR             store directory (default ./hearth-data; made\n"
	    "                             owner-only, mode 700)\n"
	    "      --store STORE          'local' (default: the store in --data) or\n"
	    "                             clickhouse://HOST:PORT/DATABASE (docs/clickhouse.md)\n"
	    "      --listen HOST:PORT     address to serve on (default 127.0.0.1:4100;\n"
	    "                             beyond loopback, use --auth-token-file)\n"
	    "      --retention DURATION   delete data older than this (default 7d)\n"
	    "      --max-disk SIZE        most disk the store may take, database and WAL\n"
	    "                             (e.g. 500M, 2G; default: no bound): past it the\n"
	    "                             oldest data is downsampled, then dropped\n"
	    "                             (docs/storage.md; not with ClickHouse)\n"
	    "      --auth-token-file F    require 'Authorization: Bearer TOKEN' (not on /healthz)\n"
	    "                             of every client; the web UI asks for it once\n"
	    "      --tls-cert FILE        serve HTTPS with this PEM certificate (chain)...\n"
	    "      --tls-key FILE         ...and its unencrypted PEM private key\n"
	    "      --web-dir DIR          serve the web UI from DIR instead of the copy built\n"
	    "                             into hearth (for UI development)\n"
	    "      --scrape-config FILE   also pull profiles from Go /debug/pprof endpoints\n"
	    "                             (YAML, as Parca and Prometheus; docs/scrape.md)\n"
	    "  -F, --freq HZ              samples per second per CPU, 1-10000 (default 99)\n"
	    "      --interval SECS        length of one stored profile (default 10)\n"
	    "      --host NAME            value of the host label (default: the hostname)\n"
	    "      --transfer MODE        ringbuf (default) or map\n"
	    "      --unwind MODE          auto (default), dwarf or fp, as in hearth record\n"
	    "      --python MODE          auto (default) or off, as in hearth record\n"
	    "      --node MODE            auto (default) or off, as in hearth record\n"
	    "      --java MODE            auto (default) or off, as in hearth record\n"
	    "      --ruby MODE            auto (default) or off, as in hearth record\n"
	    "      --idle                 keep samples of idle CPUs\n"
	    "      --memory-limit SIZE    ceiling on the profiler's resident memory (default\n"
	    "                             64M, at least 40M; the store and queries have their\n"
	    "                             own budget, docs/memory.md)\n"
	    "      --off-cpu              also store off-CPU (off_cpu) and wall-clock (wall)\n"
	    "                             profiles, by reason (docs/offcpu.md; off by default)\n"
	    "      --off-cpu-min DUR      off-CPU time sent with a stack per DUR a thread\n"
	    "                             waited for one reason (default 1ms)\n"
	    "      --log-level LEVEL      error, warn, info (default: startup lines) or debug\n"
	    "                             (also one line per HTTP request)\n"
	    "      --config FILE          settings file (default " CLI_CONFIG_DEFAULT ",\n"
	    "                             if any; flags override it; see docs/config.md)\n"
	    "      --print-config         print the effective settings and exit\n"
	    "  -h, --help                 this help\n");
}

struct run_args {
	struct cli_serve_args s;
	struct cli_agent_args a;
	struct server *srv; /* set before the first profile can be due */
	struct store *st;
	int64_t last_maintain;
};

/* The agent's sink, on its sender thread: the profile goes to the store as it
 * is (ingest__store, the path of /ingest after decoding), then the store's
 * background work when due. */
static int run_sink(void *ctx, struct ingest_request *req)
{
	struct run_args *r = ctx;
	struct server *srv = __atomic_load_n(&r->srv, __ATOMIC_ACQUIRE);
	struct store_append_result res = {0};
	char err[512];
	int ret;

	if (!srv)
		return -EAGAIN;
	ret = ingest__store(r->st, req, ingest_now_ns(), &res, err, sizeof(err));
	if (!ret)
		server__count_ingest(srv, res.samples);
	else if (ret != -ENOMEM)
		fprintf(stderr, "hearth run: storing a profile failed: %s\n", err);
	if (time(NULL) - r->last_maintain >= RUN_MAINTAIN_EVERY_S) {
		r->last_maintain = time(NULL); /* rollups and retention, off the sampling thread */
		store__maintain(r->st, (int64_t)r->last_maintain * 1000000000, NULL);
	}
	/* The caller's mistakes will not get better with retries: drop them. */
	if (ret == -EINVAL || ret == -E2BIG || ret == -EDQUOT || ret == -ERANGE || ret == -EDOM)
		return -EINVAL;
	return ret;
}

#define RUN_OPTSTRING ":h" CLI_AGENT_SHORT_OPTS

static int parse_flags(int argc, char **argv, const struct option *opts, void *ctx)
{
	struct run_args *r = ctx;
	int c, ret;

	opterr = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, RUN_OPTSTRING, opts)) != -1) {
		if (cli_getopt_failed("run", c, argc, argv))
			return -EINVAL;
		if (c == 'h') {
			usage(stdout);
			return CLI_DONE;
		}
		ret = cli_parse_serve_opt("run", c, optarg, &r->s);
		if (ret == 1)
			ret = cli_parse_agent_opt("run", c, optarg, &r->a);
		if (ret)
			return ret < 0 ? ret : -EINVAL;
	}
	if (optind < argc) {
		cli_error("run", "unexpected argument '%s' (see hearth run --help)", argv[optind]);
		return -EINVAL;
	}
	return cli_serve_check("run", &r->s);
}

/* The config file's settings, then argv (cli.h has the return convention). */
static int parse_args(int argc, char **argv, struct run_args *r)
{
	struct option opts[32];

	cli_merge_opts(cli_serve_long_opts, cli_agent_long_opts, opts, 32);
	return cli_parse("run", opts, RUN_OPTSTRING, argc, argv, parse_flags, r);
}

static int run_main(struct run_args *r)
{
	struct server *srv = NULL;
	struct agent *ag = NULL;
	char err[2048] = "", url[300];
	int ret;

	r->a.ao.sink = run_sink;
	r->a.ao.memory_other = RUN_STORE_MEMORY;
	r->a.ao.sink_ctx = r;
	ret = agent__open(&r->a.ao, &ag, err, sizeof(err));
	if (ret) {
		cli_error("run", "%s", err);
		cli_serve_close(&r->s, NULL);
		return 1;
	}
	r->s.so.live = agent__live_profile;
	r->s.so.metrics = agent__write_metrics;
	r->s.so.ctx = ag;
	if (cli_serve_open("run", &r->s, &r->st, &srv)) {
		agent__close(ag);
		return 1;
	}
	r->last_maintain = time(NULL);
	__atomic_store_n(&r->srv, srv, __ATOMIC_RELEASE);
	cli_listen_url(r->s.so.listen, server__port(srv), r->s.so.tls_cert_file != NULL, url, sizeof(url));
	cli_info("run",
		 "profiling this machine into %s; open %s\n"
		 "  e.g. curl '%s/api/profile?format=top&from=now-5m'\n"
		 "       go tool pprof -top '%s/debug/pprof/profile?seconds=5'",
		 r->s.store ? r->s.store : r->s.data, url, url, url);
	printf("%s\n", url);
	fflush(stdout);
	ret = agent__run(ag, &cli_stop, RUN_FLUSH_S);
	if (ret)
		cli_error("run", "reading samples from the kernel failed: %s", strerror(-ret));
	cli_serve_close(&r->s, srv);
	agent__close(ag);
	store__close(r->st);
	return ret ? 1 : 0;
}

int cmd_run(int argc, char **argv)
{
	struct run_args r = {.s = {.data = CLI_DEFAULT_DATA}};
	int ret;

	cli_agent_defaults(&r.a);
	ret = parse_args(argc, argv, &r);
	if (ret) {
		cli_serve_close(&r.s, NULL);
		return ret > 0 ? 0 : EXIT_USAGE;
	}
	cli_catch_stop_signals();
	return run_main(&r);
}
