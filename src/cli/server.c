/*
 * hearth server: the store, the query API and Pyroscope-compatible ingest over
 * HTTP, until SIGINT/SIGTERM. Store maintenance (rollups, retention) runs from
 * this thread once a minute, never on a request.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "serve.h"
#include "ingest/ingest.h"
#include "query/query.h"
#include "server/server.h"
#include "store/store.h"
#include "base/base.h"

#define MAINTAIN_EVERY_S 60
/* malloc arenas of a serving process (M_ARENA_MAX) */
#define CLI_MALLOC_ARENAS 4

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: hearth server [OPTIONS]\n"
	    "\n"
	    "Stores profiles pushed by agents, Pyroscope-style clients and OTLP/HTTP\n"
	    "profile exporters (POST /v1development/profiles) and serves the web UI at /\n"
	    "and the query API (see docs/api.md).\n"
	    "\n"
	    "      --data DIR             store directory (default ./hearth-data; made\n"
	    "                             owner-only, mode 700)\n"
	    "      --store STORE          'local' (default: the store in --data) or\n"
	    "                             clickhouse://HOST:PORT/DATABASE (docs/clickhouse.md)\n"
	    "      --listen HOST:PORT     address to serve on (default 127.0.0.1:4100;\n"
	    "                             port 0 picks a free one; beyond loopback,\n"
	    "                             use --auth-token-file)\n"
	    "      --retention DURATION   delete data older than this (default 7d)\n"
	    "      --auth-token-file F    require 'Authorization: Bearer TOKEN' (not on /healthz)\n"
	    "                             of every client; the web UI asks for it once\n"
	    "      --tls-cert FILE        serve HTTPS with this PEM certificate (chain)...\n"
	    "      --tls-key FILE         ...and its unencrypted PEM private key\n"
	    "      --max-body-mb N        largest request body (default 64)\n"
	    "      --max-series N         most series the store accepts (default 100000)\n"
	    "      --max-disk SIZE        most disk the store may take, database and WAL\n"
	    "                             (e.g. 500M, 2G; default: no bound): past it the\n"
	    "                             oldest data is downsampled, then dropped\n"
	    "                             (docs/storage.md; not with ClickHouse)\n"
	    "      --web-dir DIR          serve the web UI from DIR instead of the copy built\n"
	    "                             into hearth (for UI development; no dotfiles, no\n"
	    "                             symlinks out of DIR)\n"
	    "      --scrape-config FILE   also pull profiles from Go /debug/pprof endpoints,\n"
	    "                             as Parca and Prometheus do (YAML; docs/scrape.md)\n"
	    "      --config FILE          settings file (default " CLI_CONFIG_DEFAULT ",\n"
	    "                             if any; flags override it; see docs/config.md)\n"
	    "      --print-config         print the effective settings and exit\n"
	    "  -h, --help                 this help\n");
}

enum {
	OPT_DATA = 256,
	OPT_LISTEN,
	OPT_RETENTION,
	OPT_TOKEN,
	OPT_MAX_BODY,
	OPT_MAX_SERIES,
	OPT_WEB_DIR,
	OPT_SCRAPE_CONFIG,
	OPT_STORE,
	OPT_MAX_DISK,
	OPT_TLS_CERT,
	OPT_TLS_KEY,
};

const struct option cli_serve_long_opts[] = {
    {"data", required_argument, NULL, OPT_DATA},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"retention", required_argument, NULL, OPT_RETENTION},
    {"auth-token-file", required_argument, NULL, OPT_TOKEN},
    {"max-body-mb", required_argument, NULL, OPT_MAX_BODY},
    {"max-series", required_argument, NULL, OPT_MAX_SERIES},
    {"web-dir", required_argument, NULL, OPT_WEB_DIR},
    {"scrape-config", required_argument, NULL, OPT_SCRAPE_CONFIG},
    {"store", required_argument, NULL, OPT_STORE},
    {"max-disk", required_argument, NULL, OPT_MAX_DISK},
    {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
    {"tls-key", required_argument, NULL, OPT_TLS_KEY},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/*
 * --max-disk: a count of bytes, or one with K, M, G or T after it (powers of
 * 1024; "B" or "iB" may follow: 500M, 2GiB), at least 1 MiB. 0 or -EINVAL.
 */
static int parse_disk_size(const char *s, uint64_t *out)
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
	return *out >= (1u << 20) ? 0 : -EINVAL;
}

int cli_serve_check(const char *cmd, const struct cli_serve_args *a)
{
	if (!a->so.tls_cert_file != !a->so.tls_key_file) {
		cli_error(cmd, "%s needs %s too: HTTPS takes a certificate and its key",
			  a->so.tls_cert_file ? "--tls-cert" : "--tls-key",
			  a->so.tls_cert_file ? "--tls-key" : "--tls-cert");
		return -EINVAL;
	}
	if (a->st.max_disk_bytes && store__is_clickhouse(a->store)) {
		cli_error(cmd,
			  "--max-disk bounds the embedded store only: a ClickHouse store's disk "
			  "is bounded by ClickHouse's own TTL and storage policies "
			  "(docs/clickhouse.md)");
		return -EINVAL;
	}
	return 0;
}

int cli_parse_serve_opt(const char *cmd, int c, const char *arg, struct cli_serve_args *a)
{
	char err[1024];
	struct stat sb;
	long v;

	switch (c) {
	case OPT_SCRAPE_CONFIG:
		scrape_config__free(a->scrape_cfg); /* given twice: the last wins */
		a->scrape_cfg = NULL;
		if (scrape_config__load(arg, &a->scrape_cfg, err, sizeof(err))) {
			cli_error(cmd, "--scrape-config: %s", err);
			return -EINVAL;
		}
		return 0;
	case OPT_DATA:
		a->data = arg;
		return 0;
	case OPT_STORE:
		if (strcmp(arg, "local") && !store__is_clickhouse(arg)) {
			cli_error(cmd,
				  "--store: '%s' is neither 'local' nor a "
				  "clickhouse://HOST:PORT/DATABASE URL",
				  arg);
			return -EINVAL;
		}
		a->store = arg;
		return 0;
	case OPT_LISTEN:
		a->so.listen = arg;
		return 0;
	case OPT_RETENTION:
		if (base_duration_parse(arg, &a->st.retention_ns, err, sizeof(err))) {
			cli_error(cmd, "--retention: '%s' is not a duration (e.g. 7d, 12h)", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_TOKEN:
		if (cli_read_token(cmd, arg, a->token, sizeof(a->token)))
			return -EINVAL;
		a->so.auth_token = a->token;
		return 0;
	case OPT_MAX_BODY:
		if (cli_parse_long(arg, 1, 4096, &v)) {
			cli_error(cmd, "--max-body-mb: '%s' is not a size from 1 to 4096 MiB", arg);
			return -EINVAL;
		}
		a->so.max_body = (size_t)v << 20;
		return 0;
	case OPT_MAX_SERIES:
		if (cli_parse_long(arg, 1, 100000000, &v)) {
			cli_error(cmd, "--max-series: '%s' is not a count from 1", arg);
			return -EINVAL;
		}
		a->st.max_series = (size_t)v;
		return 0;
	case OPT_MAX_DISK:
		if (parse_disk_size(arg, &a->st.max_disk_bytes)) {
			cli_error(
			    cmd,
			    "--max-disk: '%s' is not a size of at least 1M (e.g. 500M, 2G; K, "
			    "M, G and T are powers of 1024)",
			    arg);
			return -EINVAL;
		}
		return 0;
	case OPT_TLS_CERT:
	case OPT_TLS_KEY:
		if (access(arg, R_OK)) {
			cli_error(cmd, "--%s: cannot read '%s': %s",
				  c == OPT_TLS_CERT ? "tls-cert" : "tls-key", arg, strerror(errno));
			return -EINVAL;
		}
		*(c == OPT_TLS_CERT ? &a->so.tls_cert_file : &a->so.tls_key_file) = arg;
		return 0;
	case OPT_WEB_DIR:
		if (stat(arg, &sb) || !S_ISDIR(sb.st_mode)) {
			cli_error(cmd, "--web-dir: '%s' is not a directory", arg);
			return -EINVAL;
		}
		a->so.web_dir = arg;
		return 0;
	}
	return 1; /* not a serve option */
}

/* mkdir -p of the parents of dir (the store creates dir itself). */
static void make_parents(const char *dir)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s", dir);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755); /* errors show when the store opens dir */
		*p = '/';
	}
}

/* Starts the HTTP server on the open store *st (and the scraper of --scrape-config);
 * on failure the store is closed. 0 or -errno after an error line. */
static int start_server(const char *cmd, struct cli_serve_args *a, struct store **st,
			struct server **srv)
{
	char err[1024] = "";
	int ret;

	a->so.store = *st;
	if (a->scrape_cfg) {
		ret = scrape__new(a->scrape_cfg, *st, &a->scrape, err, sizeof(err));
		a->scrape_cfg = NULL; /* taken, also on failure */
		if (ret)
			goto fail;
		a->so.scrape = a->scrape;
	}
	ret = server__start(&a->so, srv, err, sizeof(err));
	if (ret)
		goto fail;
	/* after the server: /api/targets may be read as soon as the first scrape starts */
	ret = a->scrape ? scrape__start(a->scrape, err, sizeof(err)) : 0;
	if (ret) {
		cli_serve_close(a, *srv);
		*srv = NULL;
		goto fail;
	}
	return 0;
fail:
	cli_error(cmd, "%s", err);
	scrape__free(a->scrape);
	a->scrape = NULL;
	a->so.scrape = NULL;
	store__close(*st);
	*st = NULL;
	return ret;
}

/* The ClickHouse backend: nothing on local disk, so no --data directory. */
static int open_clickhouse(const char *cmd, struct cli_serve_args *a, struct store **st,
			   struct server **srv)
{
	char err[1024] = "";
	int ret;

	cli_warn_exposed(cmd, a->so.listen, a->so.auth_token, a->so.tls_cert_file != NULL);
	server_keep_freed_memory();
	mallopt(M_ARENA_MAX, CLI_MALLOC_ARENAS);
	a->st.sample_labels = ingest_sample_labels;
	ret = store__open_clickhouse(a->store, &a->st, st, err, sizeof(err));
	if (ret) {
		cli_error(cmd, "cannot open the store %s: %s", a->store, err);
		return ret;
	}
	return start_server(cmd, a, st, srv);
}

/* Opens the store and starts the HTTP server. 0 or -errno after an error line. */
int cli_serve_open(const char *cmd, struct cli_serve_args *a, struct store **st,
		   struct server **srv)
{
	char err[1024] = "";
	int ret;

	if (store__is_clickhouse(a->store))
		return open_clickhouse(cmd, a, st, srv);
	make_parents(a->data);
	cli_warn_exposed(cmd, a->so.listen, a->so.auth_token, a->so.tls_cert_file != NULL);
	if (cli_private_dir(cmd, a->data))
		return -EPERM;
	server_keep_freed_memory(); /* a server answers merge after merge */
	/* A handful of worker threads, each arena keeping up to 64 MiB freed (above):
	 * a few arenas bound that idle memory whatever the number of threads. */
	mallopt(M_ARENA_MAX, CLI_MALLOC_ARENAS);
	a->st.sample_labels = ingest_sample_labels; /* the agent's vocabulary */
	ret = store__open(a->data, &a->st, st, err, sizeof(err));
	if (ret) {
		cli_error(cmd, "cannot open the store in '%s': %s", a->data, err);
		return ret;
	}
	return start_server(cmd, a, st, srv);
}

void cli_serve_close(struct cli_serve_args *a, struct server *srv)
{
	server__stop(srv);
	scrape__free(a->scrape);
	a->scrape = NULL;
	a->so.scrape = NULL;
	scrape_config__free(a->scrape_cfg);
	a->scrape_cfg = NULL;
}

static int parse_flags(int argc, char **argv, const struct option *opts, void *ctx)
{
	struct cli_serve_args *a = ctx;
	int c, ret;

	opterr = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, ":h", opts)) != -1) {
		if (cli_getopt_failed("server", c, argc, argv))
			return -EINVAL;
		if (c == 'h') {
			usage(stdout);
			return CLI_DONE;
		}
		if ((ret = cli_parse_serve_opt("server", c, optarg, a)))
			return ret;
	}
	if (optind < argc) {
		cli_error("server", "unexpected argument '%s' (see hearth server --help)",
			  argv[optind]);
		return -EINVAL;
	}
	return cli_serve_check("server", a);
}

/* The config file's settings, then argv (cli.h has the return convention). */
static int parse_args(int argc, char **argv, struct cli_serve_args *a)
{
	return cli_parse("server", cli_serve_long_opts, ":h", argc, argv, parse_flags, a);
}

int cmd_server(int argc, char **argv)
{
	struct cli_serve_args a = {.data = CLI_DEFAULT_DATA};
	struct store *st = NULL;
	struct server *srv = NULL;
	char url[300];
	int ret = parse_args(argc, argv, &a);

	if (ret) {
		cli_serve_close(&a, NULL);
		return ret > 0 ? 0 : EXIT_USAGE;
	}
	cli_catch_stop_signals();
	if (cli_serve_open("server", &a, &st, &srv))
		return 1;

	cli_listen_url(a.so.listen, server__port(srv), a.so.tls_cert_file != NULL, url,
		       sizeof(url));
	fprintf(stderr, "hearth server: serving %s on %s\n", a.store ? a.store : a.data, url);
	if (a.scrape)
		fprintf(stderr, "hearth server: scraping %zu targets (%s/api/targets)\n",
			scrape__n_targets(a.scrape), url);
	while (!cli_stop) {
		cli_sleep_unless_stopped(MAINTAIN_EVERY_S);
		if (!cli_stop)
			store__maintain(st, (int64_t)time(NULL) * 1000000000, NULL);
	}
	cli_serve_close(&a, srv);
	store__close(st);
	return 0;
}
