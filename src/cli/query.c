/*
 * hearth query: the query API from the terminal, against a running server
 * (--server URL, GET /api/...) or directly on a data directory (--data DIR).
 *
 *   hearth query '{process="nginx"}' --from now-1h --format top
 */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "base/base.h"
#include "query/query.h"
#include "serve.h"
#include "query_text.h"

struct query_args {
	const char *selector, *from, *until, *format, *server, *data, *group_by, *step;
	const char *tls_ca; /* --tls-ca: CA of an https:// server; NULL = the system's */
	const char *output; /* -o FILE; NULL: stdout */
	bool json;	    /* --json: the API's JSON of tree, series, labels, timeline */
	/* --regressions: the window against --baseline (format "regressions") */
	bool regressions;
	const char *baseline, *kind, *normalize, *confidence;
	struct query_regressions_opts ro;
	double conf;
	long max_nodes;
	char token[1024];
	bool have_token;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hearth query [SELECTOR] [OPTIONS]\n"
		"\n"
		"SELECTOR is a Prometheus-style label selector, e.g. '{process=\"nginx\"}',\n"
		"'{host=~\"web-.*\", unit!=\"cron.service\"}' (default: everything).\n"
		"\n"
		"      --from TIME           start: now-1h (default), now-30m, yesterday,\n"
		"                            2026-11-27T10:00 (UTC unless +01:00 or Z follows),\n"
		"                            unix s/ms/us/ns\n"
		"      --until TIME          end (default now; today, 2026-11-27, ...)\n"
		"      --format FMT          top (default), folded, pprof, tree, series, labels,\n"
		"                            timeline; tree, series, labels and timeline as\n"
		"                            text tables\n"
		"      --json                tree, series, labels, timeline, regressions: the\n"
		"                            API's JSON\n"
		"                            instead (docs/api.md)\n"
		"  -o, --output FILE         write there instead of stdout (pprof is gzip:\n"
		"                            it needs -o or a redirection, not a terminal)\n"
		"      --max-nodes N         rows of top / nodes of tree\n"
		"      --group-by LABEL      timeline: one line per value of LABEL\n"
		"      --step DURATION       timeline: step (default: automatic);\n"
		"                            regressions: the series' step\n"
		"      --regressions         the functions whose self time per second changed\n"
		"                            beyond noise between the range and a baseline,\n"
		"                            largest change first (docs/regressions.md)\n"
		"      --baseline B          regressions: previous (the range of the same\n"
		"                            length just before; default), 1d or 7d (the\n"
		"                            same range a day or a week earlier)\n"
		"      --confidence C        regressions: 0.5 to 0.9999 (default 0.99), for\n"
		"                            the whole list (Bonferroni)\n"
		"      --kind K              regressions: self (default) or total\n"
		"      --normalize N         regressions: rate (time per second, default) or\n"
		"                            share (of the total)\n"
		"      --server URL          ask a running server (default http://127.0.0.1:4100)\n"
		"      --data DIR            read a data directory directly instead\n"
		"      --auth-token-file F   bearer token for the server\n"
		"      --tls-ca FILE         PEM CA certificate(s) that an https:// server's\n"
		"                            certificate must chain to (default: the system's)\n"
		"      --config FILE         settings file (default " CLI_CONFIG_DEFAULT ",\n"
		"                            if any; flags override it; see docs/config.md)\n"
		"      --print-config        print the effective settings and exit\n"
		"  -h, --help                this help\n");
}

enum {
	OPT_FROM = 256,
	OPT_UNTIL,
	OPT_FORMAT,
	OPT_MAXN,
	OPT_SERVER,
	OPT_DATA,
	OPT_TOKEN,
	OPT_GROUP,
	OPT_STEP,
	OPT_TLS_CA,
	OPT_JSON,
	OPT_REGRESSIONS,
	OPT_BASELINE,
	OPT_CONFIDENCE,
	OPT_KIND,
	OPT_NORMALIZE
};

const struct option cli_query_opts[] = {
    {"from", required_argument, NULL, OPT_FROM},
    {"until", required_argument, NULL, OPT_UNTIL},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"max-nodes", required_argument, NULL, OPT_MAXN},
    {"server", required_argument, NULL, OPT_SERVER},
    {"data", required_argument, NULL, OPT_DATA},
    {"auth-token-file", required_argument, NULL, OPT_TOKEN},
    {"group-by", required_argument, NULL, OPT_GROUP},
    {"step", required_argument, NULL, OPT_STEP},
    {"tls-ca", required_argument, NULL, OPT_TLS_CA},
    {"json", no_argument, NULL, OPT_JSON},
    {"regressions", no_argument, NULL, OPT_REGRESSIONS},
    {"baseline", required_argument, NULL, OPT_BASELINE},
    {"confidence", required_argument, NULL, OPT_CONFIDENCE},
    {"kind", required_argument, NULL, OPT_KIND},
    {"normalize", required_argument, NULL, OPT_NORMALIZE},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const char *const formats[] = {"top",	"folded", "pprof",   "tree",
				      "series", "labels", "timeline"};

/* The regressions' options (--baseline, --confidence, --kind, --normalize). */
static int parse_regress(int c, const char *arg, struct query_args *q)
{
	char *end;

	switch (c) {
	case OPT_BASELINE:
		if (query_baseline_parse(arg, &q->ro.baseline)) {
			cli_error("query", "--baseline: '%s' is not previous, 1d or 7d", arg);
			return -EINVAL;
		}
		q->baseline = arg;
		return 0;
	case OPT_CONFIDENCE:
		q->conf = strtod(arg, &end);
		if (!*arg || *end || !(q->conf >= QUERY_MIN_CONFIDENCE) ||
		    !(q->conf <= QUERY_MAX_CONFIDENCE)) {
			cli_error("query", "--confidence: '%s' is not a number from %g to %g", arg,
				  QUERY_MIN_CONFIDENCE, QUERY_MAX_CONFIDENCE);
			return -EINVAL;
		}
		q->confidence = arg;
		return 0;
	case OPT_KIND:
		if (strcmp(arg, "self") && strcmp(arg, "total")) {
			cli_error("query", "--kind: '%s' is neither self nor total", arg);
			return -EINVAL;
		}
		q->ro.total = !strcmp(arg, "total");
		q->kind = arg;
		return 0;
	case OPT_NORMALIZE:
		if (strcmp(arg, "rate") && strcmp(arg, "share")) {
			cli_error("query", "--normalize: '%s' is neither rate nor share", arg);
			return -EINVAL;
		}
		q->ro.share = !strcmp(arg, "share");
		q->normalize = arg;
		return 0;
	}
	return -EINVAL;
}

static int parse_one(int c, const char *arg, struct query_args *q)
{
	size_t i;

	switch (c) {
	case OPT_REGRESSIONS:
		q->regressions = true;
		return 0;
	case OPT_BASELINE:
	case OPT_CONFIDENCE:
	case OPT_KIND:
	case OPT_NORMALIZE:
		return parse_regress(c, arg, q);
	case OPT_FROM:
		q->from = arg;
		return 0;
	case OPT_UNTIL:
		q->until = arg;
		return 0;
	case OPT_SERVER:
		q->server = arg;
		return 0;
	case OPT_DATA:
		q->data = arg;
		return 0;
	case OPT_GROUP:
		q->group_by = arg;
		return 0;
	case OPT_STEP:
		q->step = arg;
		return 0;
	case OPT_TLS_CA:
		if (access(arg, R_OK)) {
			cli_error("query", "--tls-ca: cannot read '%s': %s", arg, strerror(errno));
			return -EINVAL;
		}
		q->tls_ca = arg;
		return 0;
	case OPT_JSON:
		q->json = true;
		return 0;
	case 'o':
		q->output = arg;
		return 0;
	case OPT_FORMAT:
		for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
			if (!strcmp(arg, formats[i]))
				break;
		if (i == sizeof(formats) / sizeof(formats[0])) {
			cli_error("query",
				  "--format: unknown format '%s' (top, folded, pprof, tree, "
				  "series, labels, timeline)",
				  arg);
			return -EINVAL;
		}
		q->format = arg;
		return 0;
	case OPT_MAXN:
		if (cli_parse_long(arg, 1, QUERY_MAX_NODES, &q->max_nodes)) {
			cli_error("query", "--max-nodes: '%s' is not a count from 1 to %d", arg,
				  QUERY_MAX_NODES);
			return -EINVAL;
		}
		return 0;
	case OPT_TOKEN:
		if (cli_read_token("query", arg, q->token, sizeof(q->token)))
			return -EINVAL;
		q->have_token = true;
		return 0;
	}
	return -EINVAL;
}

#define QUERY_OPTSTRING ":ho:"

/* Whether the format has a text form (query_text.c) besides the API's JSON. */
static bool is_text_format(const char *format)
{
	return !strcmp(format, "tree") || !strcmp(format, "series") || !strcmp(format, "labels") ||
	       !strcmp(format, "timeline") || !strcmp(format, "regressions");
}

static int parse_flags(int argc, char **argv, const struct option *opts, void *ctx)
{
	struct query_args *q = ctx;
	int c, ret;

	opterr = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, QUERY_OPTSTRING, opts)) != -1) {
		if (cli_getopt_failed("query", c, argc, argv))
			return -EINVAL;
		if (c == 'h') {
			usage(stdout);
			return CLI_DONE;
		}
		if ((ret = parse_one(c, optarg, q)))
			return ret;
	}
	if (optind < argc)
		q->selector = argv[optind++];
	if (optind < argc) {
		cli_error("query", "unexpected argument '%s' (one selector at most)", argv[optind]);
		return -EINVAL;
	}
	if (q->server && q->data) {
		cli_error("query", "give --server or --data, not both");
		return -EINVAL;
	}
	if (q->regressions && strcmp(q->format, "top")) {
		cli_error("query", "--regressions prints its own table (or --json), not --format %s",
			  q->format);
		return -EINVAL;
	}
	if (!q->regressions && (q->baseline || q->confidence || q->kind || q->normalize)) {
		cli_error("query", "--baseline, --confidence, --kind and --normalize go with "
				   "--regressions");
		return -EINVAL;
	}
	if (q->regressions)
		q->format = "regressions";
	if (q->json && !is_text_format(q->format)) {
		cli_error("query", "--json goes with --format tree, series, labels or timeline, not %s",
			  q->format);
		return -EINVAL;
	}
	return 0;
}

/* The config file's settings, then argv (cli.h has the return convention). */
static int parse_args(int argc, char **argv, struct query_args *q)
{
	return cli_parse("query", cli_query_opts, QUERY_OPTSTRING, argc, argv, parse_flags, q);
}

/* ---- against a data directory ---- */

static int local_profile(struct store *st, const struct query_request *r, const char *fmt,
			 FILE *out, char *err, size_t errlen)
{
	struct profile *p = NULL;
	int ret = query_profile(st, r, &p, err, errlen);

	if (ret)
		return ret;
	if (!strcmp(fmt, "pprof"))
		ret = pprof_write(p, out);
	else if (!strcmp(fmt, "folded"))
		ret = folded_write(p, out);
	else
		ret = top_write(p, out, r->max_nodes ? r->max_nodes : 40);
	profile__free(p);
	return ret;
}

/* The JSON of a listing, tree or timeline into out. 0 or as the query_*_json writer. */
static int local_json(struct store *st, const struct query_request *r, const struct query_args *q,
		      const char *fmt, FILE *out, char *err, size_t errlen)
{
	if (!strcmp(fmt, "series"))
		return query_series_json(st, r, out, err, errlen);
	if (!strcmp(fmt, "labels"))
		return query_labels_json(st, r, out, err, errlen);
	if (!strcmp(fmt, "tree"))
		return query_tree_json(st, r, out, err, errlen);
	if (!strcmp(fmt, "regressions"))
		return query_regressions_json(st, r, &q->ro, out, err, errlen);
	return query_timeline_json(st, r, out, err, errlen);
}

/* Text of a listing, tree or timeline: its JSON, rendered (one renderer for a
 * server's answers and the store's). */
static int local_text(struct store *st, const struct query_request *r, const struct query_args *q,
		      const char *fmt, FILE *out, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int ret = mem ? local_json(st, r, q, fmt, mem, err, errlen) : -ENOMEM;

	if (mem && fclose(mem) && !ret)
		ret = -ENOMEM;
	if (!ret)
		ret = query_text_render(fmt, buf, len, out, err, errlen);
	free(buf);
	return ret;
}

static int local_query(const struct query_args *q, FILE *out)
{
	struct query_request r = {
	    .query = q->selector,
	    .max_nodes = (size_t)q->max_nodes,
	    .group_by = q->group_by,
	    .confidence = q->conf};
	struct store_opts so = {.retention_ns = -1}; /* reading must never delete */
	struct store *st = NULL;
	char err[1024] = "";
	int ret;

	if (query_parse_range_named("--from", q->from, "--until", q->until,
				    (int64_t)time(NULL) * 1000000000, &r.from_ns, &r.until_ns, err,
				    sizeof(err)) ||
	    (q->step && base_duration_parse(q->step, &r.step_ns, err, sizeof(err)))) {
		cli_error("query", "%s", err);
		return EXIT_USAGE;
	}
	if (access(q->data, R_OK) != 0) { /* store__open would create it */
		cli_error("query", "--data: cannot read '%s': %s", q->data, strerror(errno));
		return EXIT_USAGE;
	}
	ret = store__open(q->data, &so, &st, err, sizeof(err));
	if (ret) {
		cli_error("query", "cannot open the store in '%s': %s", q->data, err);
		return 1;
	}
	if (is_text_format(q->format) && q->json)
		ret = local_json(st, &r, q, q->format, out, err, sizeof(err));
	else if (is_text_format(q->format))
		ret = local_text(st, &r, q, q->format, out, err, sizeof(err));
	else
		ret = local_profile(st, &r, q->format, out, err, sizeof(err));
	store__close(st);
	if (ret)
		cli_error("query", "%s", err[0] ? err : strerror(-ret));
	return ret == -EINVAL || ret == -E2BIG ? EXIT_USAGE : ret ? 1 : 0;
}

/* ---- against a server ---- */

struct answer {
	FILE *mem;
	size_t len;
};

/* An answer over QUERY_TEXT_MAX_BYTES stops the transfer (curl's write error). */
static size_t to_mem(char *p, size_t size, size_t n, void *ctx)
{
	struct answer *a = ctx;

	if (n > QUERY_TEXT_MAX_BYTES - a->len)
		return 0;
	a->len += n;
	return fwrite(p, size, n, a->mem);
}

/* Appends &key=escaped(value) to url when value is set. */
static void add_arg(CURL *c, char *url, size_t len, const char *key, const char *value)
{
	char *e;

	if (!value)
		return;
	e = curl_easy_escape(c, value, 0);
	if (e)
		snprintf(url + strlen(url), len - strlen(url), "&%s=%s", key, e);
	curl_free(e);
}

/* GET url into mem (with the bearer token when given); the HTTP status in *status. */
static CURLcode http_get(CURL *c, const struct query_args *q, const char *url, FILE *mem,
			 long *status)
{
	struct answer a = {.mem = mem};
	struct curl_slist *hdrs = NULL;
	char auth[1100];
	CURLcode rc;

	if (q->have_token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %.1000s", q->token);
		hdrs = curl_slist_append(hdrs, auth);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, to_mem);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
	if (q->tls_ca)
		curl_easy_setopt(c, CURLOPT_CAINFO, q->tls_ca);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(hdrs);
	return rc;
}

/* The server reads --from/--until by the same grammar: a bad one is said here,
 * naming the option, before any request. -EINVAL, said, or 0. */
static int check_range(const struct query_args *q)
{
	int64_t f, u;
	char err[512];

	if (!query_parse_range_named("--from", q->from, "--until", q->until,
				     (int64_t)time(NULL) * 1000000000, &f, &u, err, sizeof(err)))
		return 0;
	cli_error("query", "%s", err);
	return -EINVAL;
}

/* The answer to out: as it is, or as text (query_text.c). 0, or 1 after an error line. */
static int remote_output(const struct query_args *q, const char *body, size_t blen, FILE *out)
{
	char err[512] = "";

	if (!is_text_format(q->format) || q->json) {
		fwrite(body, 1, blen, out);
		return 0;
	}
	if (query_text_render(q->format, body, blen, out, err, sizeof(err))) {
		cli_error("query", "the server's answer: %s", err);
		return 1;
	}
	return 0;
}

static int remote_query(const struct query_args *q, FILE *out)
{
	const char *server = q->server ? q->server : "http://127.0.0.1:4100";
	const char *endpoint = !strcmp(q->format, "series")	? "series"
			       : !strcmp(q->format, "labels")	? "labels"
			       : !strcmp(q->format, "timeline") ? "timeline"
			       : q->regressions			? "regressions"
								: "profile";
	CURL *c = curl_easy_init();
	char url[8192], maxn[32], *body = NULL;
	size_t blen = 0;
	FILE *mem = open_memstream(&body, &blen);
	long status = 0;
	CURLcode rc = CURLE_FAILED_INIT;

	int ret;

	snprintf(url, sizeof(url), "%s/api/%s?format=%s", server, endpoint, q->format);
	if (c && mem) {
		add_arg(c, url, sizeof(url), "query", q->selector);
		add_arg(c, url, sizeof(url), "from", q->from);
		add_arg(c, url, sizeof(url), "until", q->until);
		add_arg(c, url, sizeof(url), "groupBy", q->group_by);
		add_arg(c, url, sizeof(url), "step", q->step);
		add_arg(c, url, sizeof(url), "baseline", q->baseline);
		add_arg(c, url, sizeof(url), "confidence", q->confidence);
		add_arg(c, url, sizeof(url), "kind", q->kind);
		add_arg(c, url, sizeof(url), "normalize", q->normalize);
		snprintf(maxn, sizeof(maxn), "%ld", q->max_nodes);
		add_arg(c, url, sizeof(url), "maxNodes", q->max_nodes ? maxn : NULL);
		rc = http_get(c, q, url, mem, &status);
	}
	if (mem)
		fclose(mem);
	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
		cli_error("query",
			  "no hearth server answers at %s (%s): start one with 'hearth run' "
			  "(or 'hearth server'), give its address with --server URL, or read a "
			  "data directory with --data DIR",
			  server, curl_easy_strerror(rc));
	else if (rc == CURLE_WRITE_ERROR)
		cli_error("query", "the answer of %s is over %d bytes", server,
			  QUERY_TEXT_MAX_BYTES);
	else if (rc != CURLE_OK)
		cli_error("query", "cannot reach %s: %s", url, curl_easy_strerror(rc));
	else if (status != 200)
		cli_error("query", "the server answered %ld: %.*s", status, (int)blen,
			  body ? body : "");
	ret = rc != CURLE_OK ? 1 : status == 400 ? EXIT_USAGE : status != 200 ? 1 : 0;
	if (!ret)
		ret = remote_output(q, body, blen, out);
	free(body);
	if (c)
		curl_easy_cleanup(c);
	return ret;
}

/* Runs the query into out (stdout or -o's file). The command's exit status. */
static int query_to(const struct query_args *q, FILE *out)
{
	if (q->data)
		return local_query(q, out);
	if (check_range(q))
		return EXIT_USAGE;
	if (base_curl_init()) {
		cli_error("query", "libcurl could not initialise");
		return EXIT_FAILURE;
	}
	return remote_query(q, out);
}

int cmd_query(int argc, char **argv)
{
	struct query_args q = {.format = "top"};
	FILE *out = stdout;
	int ret = parse_args(argc, argv, &q);

	if (ret)
		return ret > 0 ? 0 : EXIT_USAGE;
	if (!q.output && !strcmp(q.format, "pprof") && isatty(STDOUT_FILENO)) {
		cli_error("query",
			  "--format pprof is gzip-compressed protobuf, not for a terminal: give "
			  "-o FILE or redirect stdout (e.g. -o cpu.pb.gz)");
		return EXIT_USAGE;
	}
	if (q.output && !(out = fopen(q.output, "w"))) {
		cli_error("query", "-o: cannot write '%s': %s", q.output, strerror(errno));
		return EXIT_USAGE;
	}
	ret = query_to(&q, out);
	if (out != stdout && fclose(out) && !ret) {
		cli_error("query", "writing '%s' failed: %s", q.output, strerror(errno));
		ret = 1;
	}
	if (ret && q.output)
		unlink(q.output); /* no half answer left behind */
	return ret;
}
