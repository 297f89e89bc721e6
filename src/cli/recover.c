/*
 * hearth recover: salvage a store that no longer opens (SQLite finds a page of
 * its database corrupt) into a new data directory, copying every row that can
 * still be read and dropping what names lost rows (store__salvage). The
 * damaged directory's database is only read. Then it proves the result: every
 * kind of query (labels, series, tree, top, timeline, profile, diff) runs over
 * all of the new store's data, per profile type; exit 0 only when all answer,
 * so that a "recovered" store never fails its first query (issue 30).
 */
#include "cli.h"
#include "query/query.h"
#include "serve.h"
#include "store/store.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: hearth recover --data DIR --to NEWDIR\n"
		   "\n"
		   "Copies what can still be read of the store in DIR (whose database is\n"
		   "damaged: hearth refuses to open it) into a new store in NEWDIR, drops from\n"
		   "it what names lost data (rows of lost stacks or series), then runs every\n"
		   "kind of query over all of it. Prints what was copied and what was dropped.\n"
		   "Exits 0 when every query answers: then start hearth with --data NEWDIR;\n"
		   "1 with the reason when the store could not be made readable or nothing\n"
		   "could be saved. DIR's database is not changed; no hearth may hold DIR or\n"
		   "NEWDIR meanwhile. See docs/storage.md, Recovery.\n"
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

/* The distinct profile types of the store's series. */
struct types {
	char *v[64];
	size_t n;
	bool more; /* over 64: the rest are not checked one by one */
};

static int add_type(void *ctx, const struct store_series *ser)
{
	struct types *t = ctx;

	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i], ser->profile_type))
			return 0;
	if (t->n == sizeof(t->v) / sizeof(*t->v)) {
		t->more = true;
		return 0;
	}
	return (t->v[t->n] = strdup(ser->profile_type)) ? (t->n++, 0) : -ENOMEM;
}

/* Runs every kind of query over [q->from_ns, q->until_ns) of q->query; what
 * names the first one that failed. 0 or its error. */
static int query_all(struct store *st, const struct query_request *q, FILE *sink,
		     const char **what, char *err, size_t errlen)
{
	struct query_request left = *q, right = *q, tq = *q;
	struct profile *p = NULL;
	int e;

	left.until_ns = right.from_ns = q->from_ns + (q->until_ns - q->from_ns) / 2;
	tq.top_rows = 20;
	e = query_labels_json(st, q, sink, err, errlen);
	if ((*what = "labels", e) ||
	    (*what = "series", e = query_series_json(st, q, sink, err, errlen)) ||
	    (*what = "tree", e = query_tree_json(st, &tq, sink, err, errlen)) ||
	    (*what = "top", e = query_top_json(st, q, sink, err, errlen)) ||
	    (*what = "timeline", e = query_timeline_json(st, q, sink, err, errlen)) ||
	    (*what = "diff", e = query_diff_json(st, &left, &right, sink, err, errlen)))
		return e;
	*what = "profile";
	e = query_profile(st, q, &p, err, errlen);
	profile__free(p);
	return e;
}

/* Opens the new store and queries all of it (see the file's comment). 0, or 1
 * after an error line naming the query that failed. */
static int prove(const char *to)
{
	struct store_opts so = {.retention_ns = -1}; /* nothing deleted before it is read */
	struct store *st = NULL;
	struct store_stats stats;
	struct types types = {.n = 0};
	char err[1024] = "", sel[512];
	const char *what = "open";
	FILE *sink = fopen("/dev/null", "w");
	int e = sink ? store__open(to, &so, &st, err, sizeof(err)) : -errno;

	if (!e && !(e = store__stats(st, &stats)))
		e = store__series_foreach(st, add_type, &types);
	for (size_t i = 0; !e && i <= types.n; i++) {
		/* the whole range: a rollup's window may start up to 6 h before the
		 * oldest raw chunk; then each type alone (a merge takes one) */
		struct query_request q = {
		    .query = sel,
		    .from_ns = stats.oldest_ns > 6 * 3600 * 1000000000ll
				   ? stats.oldest_ns - 6 * 3600 * 1000000000ll
				   : 0,
		    .until_ns = stats.newest_ns + 2 * 3600 * 1000000000ll};

		if (i == types.n) { /* the listings over every type at once */
			q.query = NULL;
			what = "labels";
			e = query_labels_json(st, &q, sink, err, sizeof(err));
			what = e ? what : "series";
			e = e ?: query_series_json(st, &q, sink, err, sizeof(err));
			break;
		}
		snprintf(sel, sizeof(sel), "{%s=\"%s\"}", STORE_PROFILE_TYPE_LABEL, types.v[i]);
		e = query_all(st, &q, sink, &what, err, sizeof(err));
	}
	if (e)
		cli_error("recover",
			  "the new store in '%s' is not readable: its %s query failed: %s; "
			  "nothing in it can be trusted",
			  to, what, err[0] ? err : strerror(-e));
	store__close(st);
	for (size_t i = 0; i < types.n; i++)
		free(types.v[i]);
	if (sink)
		fclose(sink);
	return e ? 1 : 0;
}

static void print_result(const char *to, const struct store_salvage_result *r)
{
	printf("hearth recover: %llu rows copied to %s (%llu chunks); %llu unreadable "
	       "stretches skipped, %llu tables unreadable\n",
	       (unsigned long long)r->rows, to, (unsigned long long)r->chunks,
	       (unsigned long long)r->holes, (unsigned long long)r->lost_tables);
	printf("hearth recover: dropped %llu stored keys that name lost data, %llu rows "
	       "(%lld samples) whose stack or series was lost; %llu chunks rewritten, "
	       "%llu dropped, %llu quarantined; %llu rollup windows to rebuild; "
	       "%llu series kept\n",
	       (unsigned long long)r->dropped_keys, (unsigned long long)r->dropped_rows,
	       (long long)r->dropped_samples, (unsigned long long)r->chunks_rewritten,
	       (unsigned long long)r->chunks_dropped, (unsigned long long)r->chunks_quarantined,
	       (unsigned long long)r->windows_pending, (unsigned long long)r->series);
}

int cmd_recover(int argc, char **argv)
{
	const char *data = NULL, *to = NULL;
	struct store_salvage_result res;
	char err[1024];
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
	print_result(to, &res);
	if (res.chunks == res.chunks_dropped + res.chunks_quarantined) {
		cli_error("recover",
			  "no profile data could be saved (%llu chunks read%s): '%s' holds no "
			  "profile",
			  (unsigned long long)res.chunks,
			  res.lost_tables ? ", some tables unreadable" : "", to);
		return 1;
	}
	if (prove(to))
		return 1;
	printf("hearth recover: every query reads the new store; start hearth with --data %s\n",
	       to);
	return 0;
}
