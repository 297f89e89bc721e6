/*
 * One function over time, for people and for Prometheus:
 *   GET /api/function-series  a function's self or total per step (query_fseries)
 *   GET /metrics/functions    the top-k functions by self over the last window,
 *                             as gauges in the Prometheus text format (0.0.4)
 * Both are thin wrappers around src/query. The metrics endpoint is what a
 * Prometheus scrape (with `params:`) turns into alertable series; its cost to
 * Prometheus is bounded by k: at most 2k + 1 series per selector.
 */
#include "server_impl.h"
#include "base/base.h"
#include "query/query.h"
#include "server_connect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Defaults and bounds of /metrics/functions. */
#define FMETRICS_DEFAULT_K	10
#define FMETRICS_MAX_K		100
#define FMETRICS_DEFAULT_WINDOW (60ll * 1000000000ll)
#define FMETRICS_MAX_WINDOW	(3600ll * 1000000000ll)

static enum MHD_Result fs_failed(struct server_req *r, int ret, const char *err)
{
	if (ret == -EINVAL || ret == -E2BIG)
		return server_error(r, 400, SERVER_REJ_BAD_QUERY, "%s", err);
	if (ret == -EHOSTDOWN)
		return server_error(r, 503, SERVER_REJ_BUSY,
				    "query failed: the store's ClickHouse did not answer or failed "
				    "(%s); retry later",
				    err[0] ? err : strerror(-ret));
	return server_error(r, 500, SERVER_REJ_INTERNAL, "query failed: %s",
			    err[0] ? err : strerror(-ret));
}

/* query/from/until/step of /api/function-series into q (as /api/timeline's). */
static int series_args(struct server_req *r, struct query_request *q, char *err, size_t errlen)
{
	const char *step = server_arg(r, "step");
	char why[256] = "";

	q->query = server_arg(r, "query");
	if (query_parse_range(server_arg(r, "from"), server_arg(r, "until"), server_now_ns(),
			      &q->from_ns, &q->until_ns, err, errlen))
		return -EINVAL;
	if (step && *step && base_duration_parse(step, &q->step_ns, why, sizeof(why))) {
		snprintf(err, errlen, "step: %s", why[0] ? why : "not a duration above 0");
		return -EINVAL;
	}
	return 0;
}

enum MHD_Result server_h_fseries(struct server *s, struct server_req *r)
{
	struct query_request q = {0};
	struct query_fseries_request fr = {0};
	struct server_mem m;
	char err[512] = "";
	int ret;

	r->is_query = true;
	fr.function = server_arg(r, "function");
	ret = series_args(r, &q, err, sizeof(err))
		  ?: query_fseries_parse(server_arg(r, "kind"), server_arg(r, "normalize"), &fr,
					 err, sizeof(err));
	if (ret)
		return fs_failed(r, ret, err);
	if (!fr.function || !*fr.function)
		return server_error(r, 400, SERVER_REJ_BAD_PARAM,
				    "function is required: a name as the top table shows it");
	if (server_mem__open(&m))
		return server_error(r, 500, SERVER_REJ_INTERNAL, "out of memory");
	ret = query_fseries_json(s->store, &q, &fr, m.f, err, sizeof(err));
	if (ret) {
		server_mem__discard(&m);
		return fs_failed(r, ret, err);
	}
	return server_reply_mem(r, 200, "application/json", &m);
}

/* ---- /metrics/functions ---- */

/* A label value in the text format: backslash, double quote and newline escaped. */
static void prom_label(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* Which value a selector's merge counts: a CPU selection (no __profile_type__
 * matcher, or a CPU type) its nanoseconds, any other type its values[0], as
 * Connect does (pyro_value_index). */
static int natural_index(const char *query, int *vi, char *err, size_t errlen)
{
	struct query_selector *sel = NULL;
	int ret = query_selector__parse(query, &sel, err, errlen);

	*vi = 1;
	for (size_t i = 0; !ret && i < sel->n; i++)
		if (!strcmp(sel->m[i].name, STORE_PROFILE_TYPE_LABEL))
			*vi = sel->m[i].op == QUERY_OP_EQ ? pyro_value_index(sel->m[i].value) : 0;
	query_selector__free(sel);
	return ret;
}

/* The HELP text's kind of seconds of a selector naming the off-CPU or wall type,
 * else NULL. */
static const char *off_cpu_kind(const char *query)
{
	if (query && strstr(query, PROFILE_OFF_CPU_TYPE))
		return ", in seconds of off-CPU time";
	if (query && strstr(query, PROFILE_WALL_TYPE))
		return ", in seconds of wall-clock time";
	return NULL;
}

/* k and window of the request. 0 or -EINVAL with err naming the parameter. */
static int metrics_args(struct server_req *r, size_t *k, int64_t *window, char *err, size_t errlen)
{
	const char *ks = server_arg(r, "k"), *ws = server_arg(r, "window");
	char *end;
	long n;

	*k = FMETRICS_DEFAULT_K;
	*window = FMETRICS_DEFAULT_WINDOW;
	if (ks && *ks) {
		n = strtol(ks, &end, 10);
		if (*end || n < 1 || n > FMETRICS_MAX_K) {
			snprintf(err, errlen, "k '%.32s' is not a number from 1 to %d", ks,
				 FMETRICS_MAX_K);
			return -EINVAL;
		}
		*k = (size_t)n;
	}
	if (ws && *ws &&
	    (base_duration_parse(ws, window, NULL, 0) || *window < 1000000000ll ||
	     *window > FMETRICS_MAX_WINDOW)) {
		snprintf(err, errlen, "window '%.32s' is not a duration from 1s to 1h", ws);
		return -EINVAL;
	}
	return 0;
}

/* One gauge family: HELP, TYPE, then a sample per row (self or total). cpu:
 * values in seconds; secs: what kind (", in CPU seconds", ", in seconds of
 * off-CPU time"). */
static void metrics_family(FILE *f, const struct query_top *t, const char *sel, bool cpu,
			   const char *secs, bool self, double per)
{
	const char *what = self ? "self" : "total";

	fprintf(f,
		"# HELP hearth_function_%s_%sper_second %s time of the top functions by self "
		"(the top table's %s), per second of the window%s.\n",
		what, cpu ? "seconds_" : "", self ? "Self" : "Total", what, cpu ? secs : "");
	fprintf(f, "# TYPE hearth_function_%s_%sper_second gauge\n", what, cpu ? "seconds_" : "");
	for (size_t i = 0; i < t->n; i++) {
		fprintf(f, "hearth_function_%s_%sper_second{selector=", what,
			cpu ? "seconds_" : "");
		prom_label(f, sel);
		fputs(",function=", f);
		prom_label(f, t->rows[i].name);
		if (!cpu) {
			fputs(",unit=", f);
			prom_label(f, t->unit);
		}
		fprintf(f, "} %.9g\n", (double)(self ? t->rows[i].self : t->rows[i].total) / per);
	}
}

static void metrics_write(FILE *f, const struct query_top *t, const char *sel, bool cpu,
			  const char *secs, double per)
{
	metrics_family(f, t, sel, cpu, secs, true, per);
	metrics_family(f, t, sel, cpu, secs, false, per);
	fprintf(f,
		"# HELP hearth_selection_%sper_second The selector's whole value per second of "
		"the window%s.\n# TYPE hearth_selection_%sper_second gauge\n"
		"hearth_selection_%sper_second{selector=",
		cpu ? "seconds_" : "", cpu ? secs : "", cpu ? "seconds_" : "", cpu ? "seconds_" : "");
	prom_label(f, sel);
	if (!cpu) {
		fputs(",unit=", f);
		prom_label(f, t->unit);
	}
	fprintf(f, "} %.9g\n", (double)t->total / per);
}

enum MHD_Result server_h_metrics_functions(struct server *s, struct server_req *r)
{
	struct query_request q = {.query = server_arg(r, "query")};
	struct query_top t = {0};
	struct server_mem m;
	char err[512] = "";
	int64_t window;
	size_t k;
	const char *secs;
	bool cpu;
	int ret;

	r->is_query = true;
	ret = metrics_args(r, &k, &window, err, sizeof(err))
		  ?: natural_index(q.query, &q.value_index, err, sizeof(err));
	if (ret)
		return fs_failed(r, ret, err);
	q.until_ns = server_now_ns();
	q.from_ns = q.until_ns - window;
	q.max_nodes = k;
	if ((ret = query_top(s->store, &q, &t, err, sizeof(err)))) {
		query_top__fini(&t);
		return fs_failed(r, ret, err);
	}
	/* CPU time, and the off-CPU and wall-clock types' time (issue 28), in seconds */
	cpu = !strcmp(t.unit, "nanoseconds") && q.value_index == 1;
	secs = ", in CPU seconds";
	if (!strcmp(t.unit, "nanoseconds") && q.value_index == 0 && off_cpu_kind(q.query)) {
		cpu = true;
		secs = off_cpu_kind(q.query);
	}
	if (server_mem__open(&m)) {
		query_top__fini(&t);
		return server_error(r, 500, SERVER_REJ_INTERNAL, "out of memory");
	}
	metrics_write(m.f, &t, q.query && *q.query ? q.query : "{}", cpu, secs,
		      (double)window / 1e9 * (cpu ? 1e9 : 1));
	query_top__fini(&t);
	return server_reply_mem(r, 200, "text/plain; version=0.0.4", &m);
}
