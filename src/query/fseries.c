/*
 * One function's time series (query_fseries, query.h): per step of a range,
 * the value of the stacks in which a function appears (total) or is the leaf
 * (self), or that pass through a call-site path from the root (Connect's
 * stack_trace_selector), beside the selection's total per step.
 *
 * The constraint is memory. Summing each (stack, step) as the rows come, then
 * naming the stacks, keeps a row per stack and step with data: on the bench
 * store (a 64-CPU host, 15,700 rows a profile) 5.6 million rows, 135 MiB and
 * 0.9 s for one hour in 10 s steps, growing with range / step. So the series
 * is made in two passes, each bounded as a merge or a timeline is:
 *   1. query_stacks, the merge by stack over the range (the database sums it
 *      on ClickHouse): the distinct stacks and their locations; each is named
 *      once, through a store_builder, and classified (holds the function, ends
 *      in it) into a byte per store stack id;
 *   2. a scan keeping time (no merge hint; the embedded store uses no rollup
 *      longer than the step, as the timeline), adding each row to its step's
 *      total, and to the function's value when its stack's class says so.
 *      A request naming pid, tid or comm (a matcher or group_by) judges each
 *      row by its stack's task location (query_selected__row) instead of its
 *      series alone.
 * Memory: the merge's, a byte per store stack id up to the largest met, and
 * two values per step and group (QUERY_FS_MAX_CELLS). A stack appended
 * between the passes is unknown to the first: it counts in the total only.
 * Names are the top table's (a function inlined somewhere counts under its own
 * name) for a function, the flame tree's for a call-site path, so that the
 * name a user clicked in either view is the name matched.
 */
#include "query_impl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FS_NAME_MAX 1024 /* a frame name's room, as the tree's */

/* A stack's class: bit FS_IN when it counts for total, FS_LEAF for self. */
enum { FS_IN = 1, FS_LEAF = 2 };

/* The second pass: totals and the function's values per (group, step). */
struct fs_scan {
	const struct query_selected *sel;
	int64_t from, step;
	size_t points;
	int vi;
	unsigned want;	    /* FS_IN (total) or FS_LEAF (self) */
	const uint8_t *cls; /* borrowed: per store stack id, its FS_* class */
	size_t n_cls;	    /* entries of cls (ids past it: appended since, no class) */
	int64_t *totals;    /* n_groups x points */
	int64_t *values;    /* n_groups x points */
};

static int on_fs_rows(void *ctx, const struct store_row *rows, size_t n)
{
	struct fs_scan *f = ctx;

	for (size_t i = 0; i < n; i++) {
		size_t s = query_selected__find(f->sel, rows[i].series_id), c;
		int64_t at = (rows[i].time_ns - f->from) / f->step, v = rows[i].values[f->vi];
		uint64_t id = rows[i].stack_id;
		uint32_t g;

		if (s == SIZE_MAX || rows[i].time_ns < f->from || at < 0 || (size_t)at >= f->points)
			continue;
		g = f->sel->group[s];
		/* pid/tid/comm named: the stack's task decides (query_impl.h) */
		if (f->sel->tasks && !query_selected__row(f->sel, s, id, &g))
			continue;
		c = (size_t)g * f->points + (size_t)at;
		f->totals[c] = base_sat_add(f->totals[c], v);
		if (id < f->n_cls && (f->cls[id] & f->want))
			f->values[c] = base_sat_add(f->values[c], v);
	}
	return 0;
}

/* ---- naming and classifying the distinct stacks ---- */

struct fs_namer {
	struct profile *p;	 /* owned: the locations named */
	struct store_builder *b; /* owned */
	const struct query_fseries_request *fr;
	/* function mode: per store location id, 1 + its FS_* bits (0: not yet) */
	uint8_t *loc_bits;
	size_t cap_bits;
	char buf[FS_NAME_MAX];
};

/* Location id (store) as p's location. 0, -ENOENT/-EUCLEAN (the store's), -ENOMEM. */
static int fs_location(struct fs_namer *nm, uint64_t id, struct profile_location *loc)
{
	uint64_t pid;
	int e = store_builder__location(nm->b, id, &pid);

	if (!e && profile__get_location(nm->p, pid, loc))
		e = -EUCLEAN;
	return e;
}

/* Line l of loc by the top table's name: no inline suffix (top.c, pprof). */
static const char *top_name(struct fs_namer *nm, const struct profile_location *loc, size_t l)
{
	const char *name = profile__frame_name(nm->p, loc, l, nm->buf, sizeof(nm->buf));
	size_t n = strlen(name), k = sizeof(PROFILE_INLINE_SUFFIX) - 1;

	if (l + 1 < loc->n_lines && n >= k && !strcmp(name + n - k, PROFILE_INLINE_SUFFIX)) {
		if (name != nm->buf)
			snprintf(nm->buf, sizeof(nm->buf), "%s", name);
		nm->buf[n - k] = '\0';
		return nm->buf;
	}
	return name;
}

/* FS_* bits of store location id for the function: FS_IN when any of its lines
 * is the function, FS_LEAF when its innermost line (lines[0]) is. */
static int loc_bits(struct fs_namer *nm, uint64_t id, unsigned *bits)
{
	struct profile_location loc;
	size_t n;
	int e;

	if (id < nm->cap_bits && nm->loc_bits[id]) {
		*bits = nm->loc_bits[id] - 1u;
		return 0;
	}
	if ((e = fs_location(nm, id, &loc)))
		return e;
	*bits = 0;
	n = loc.n_lines ? loc.n_lines : 1;
	for (size_t l = 0; l < n; l++)
		if (!strcmp(top_name(nm, &loc, l), nm->fr->function))
			*bits |= FS_IN | (l == 0 ? FS_LEAF : 0);
	if (id < SIZE_MAX / 2 &&
	    !base_grow_zeroed((void **)&nm->loc_bits, &nm->cap_bits, (size_t)id + 1, 1))
		nm->loc_bits[id] = (uint8_t)(*bits + 1);
	return 0;
}

/* A stack (store location ids, leaf first) for the function: total when it
 * appears anywhere (once, however often), self when it is the leaf frame. */
static int class_function(struct fs_namer *nm, const uint64_t *locs, size_t n, unsigned *cls)
{
	unsigned bits;
	int e = 0;

	*cls = 0;
	for (size_t i = 0; !e && i < n && !(*cls & FS_IN); i++)
		if (!(e = loc_bits(nm, locs[i], &bits)))
			*cls |= bits & FS_IN;
	if (!e && n && !(e = loc_bits(nm, locs[0], &bits)))
		*cls |= bits & FS_LEAF;
	return e;
}

/* A stack for the call-site path, its frames named as the flame tree names them
 * (root first, a location's outer line first): FS_IN when the path is a prefix
 * of its frames, FS_LEAF when the path is all of them. */
static int class_path(struct fs_namer *nm, const uint64_t *locs, size_t n, unsigned *cls)
{
	const struct query_fseries_request *fr = nm->fr;
	size_t k = 0, frames = 0;
	int e;

	*cls = 0;
	for (size_t i = n; i-- > 0;) {
		struct profile_location loc;
		size_t nl;

		if ((e = fs_location(nm, locs[i], &loc)))
			return e;
		nl = loc.n_lines ? loc.n_lines : 1;
		frames += nl;
		for (size_t l = nl; l-- > 0 && k < fr->n_call_site; k++)
			if (strcmp(profile__frame_name(nm->p, &loc, l, nm->buf, sizeof(nm->buf)),
				   fr->call_site[k]))
				return 0;
		if (k == fr->n_call_site && frames > k)
			break; /* a prefix, and more frames: no need to name them */
	}
	if (k == fr->n_call_site)
		*cls = FS_IN | (frames == k ? FS_LEAF : 0);
	return 0;
}

/* *cls (calloc'd, *n_cls entries): per store stack id of qs, its FS_* class. */
static int classify(const struct query_stacks *qs, struct fs_namer *nm, uint8_t **cls,
		    size_t *n_cls)
{
	uint64_t max = 0;
	int e = 0;

	for (size_t i = 0; i < qs->n; i++)
		max = qs->ids[i] > max ? qs->ids[i] : max;
	if (max >= SIZE_MAX / 2 || !(*cls = calloc((size_t)max + 1, 1)))
		return -ENOMEM;
	*n_cls = (size_t)max + 1;
	for (size_t i = 0; !e && i < qs->n; i++) {
		const uint64_t *locs = qs->locs + qs->off[i];
		size_t n = qs->off[i + 1] - qs->off[i];
		unsigned c = 0;

		e = nm->fr->function ? class_function(nm, locs, n, &c)
				     : class_path(nm, locs, n, &c);
		(*cls)[qs->ids[i]] = (uint8_t)c;
	}
	return e;
}

/* ---- the answer ---- */

static int check_fseries_request(const struct query_fseries_request *fr, char *err, size_t errlen)
{
	if (!fr->function == !fr->n_call_site)
		return query_fail(err, errlen, -EINVAL,
				  fr->function ? "give a function or a call site, not both"
					       : "function is required (a name as the top table "
						 "shows it)");
	if (fr->function && !*fr->function)
		return query_fail(err, errlen, -EINVAL,
				  "function is empty (a name as the top table shows it)");
	if (fr->function && strlen(fr->function) > QUERY_MAX_FUNCTION_LEN)
		return query_fail(err, errlen, -E2BIG,
				  "function is %zu bytes long, over the limit of %d",
				  strlen(fr->function), QUERY_MAX_FUNCTION_LEN);
	if (fr->n_call_site > QUERY_MAX_CALL_SITE)
		return query_fail(err, errlen, -E2BIG,
				  "the call site has %zu frames, over the limit of %d",
				  fr->n_call_site, QUERY_MAX_CALL_SITE);
	for (size_t i = 0; i < fr->n_call_site; i++)
		if (!fr->call_site[i] || strlen(fr->call_site[i]) > QUERY_MAX_FUNCTION_LEN)
			return query_fail(err, errlen, -EINVAL,
					  "call site frame %zu is missing or longer than %d bytes",
					  i, QUERY_MAX_FUNCTION_LEN);
	if ((unsigned)fr->kind > QUERY_FS_SELF || (unsigned)fr->normalize > QUERY_FS_RATE)
		return query_fail(err, errlen, -EINVAL, "unknown kind or normalize");
	return 0;
}

/* Steps of the range (as the timeline's: auto is about 1000, a multiple of 10 s). */
static int fs_steps(const struct query_request *q, int64_t *step, size_t *points, char *err,
		    size_t errlen)
{
	int64_t range, ten = 10ll * 1000000000ll;

	if (__builtin_sub_overflow(q->until_ns, q->from_ns, &range) || range < 0)
		return query_fail(err, errlen, -EINVAL, "from is after until, or too far from it");
	*step = q->step_ns > 0	     ? q->step_ns
		: range / 1000 < ten ? ten
				     : (range / 1000 + ten - 1) / ten * ten;
	*points = (size_t)(range / *step + (range % *step != 0));
	if (*points > QUERY_MAX_POINTS)
		return query_fail(
		    err, errlen, -E2BIG,
		    "%zu steps of %g s, over the limit of %d points: use a larger step", *points,
		    (double)*step / 1e9, QUERY_MAX_POINTS);
	return 0;
}

/* The unit of the answer's numbers: the value's, "%" of a share, "<unit>/s" of a
 * rate (nanoseconds as seconds/s: CPU seconds per second). */
static void fs_unit(struct query_fseries *out, const char *raw)
{
	snprintf(out->raw_unit, sizeof(out->raw_unit), "%s", raw);
	if (out->normalize == QUERY_FS_SHARE)
		snprintf(out->unit, sizeof(out->unit), "%%");
	else if (out->normalize == QUERY_FS_RATE)
		snprintf(out->unit, sizeof(out->unit), "%.40s/s",
			 strcmp(raw, "nanoseconds") ? raw : "seconds");
	else
		snprintf(out->unit, sizeof(out->unit), "%s", raw);
}

/* The result's groups: values and totals of f. */
static int fs_result(const struct fs_scan *f, const struct query_selected *sel,
		     struct query_fseries *out)
{
	size_t ng = sel->n_groups ? sel->n_groups : 1, bytes = f->points * sizeof(int64_t);

	if (!(out->groups = calloc(ng, sizeof(*out->groups))))
		return -ENOMEM;
	for (size_t g = 0; g < ng; g++, out->n_groups++) {
		struct query_fseries_group *gr = &out->groups[g];

		gr->group = strdup(sel->n_groups ? sel->groups[g] : "");
		gr->values = malloc(bytes + sizeof(int64_t));
		gr->totals = malloc(bytes + sizeof(int64_t));
		if (!gr->group || !gr->values || !gr->totals) {
			out->n_groups++;
			return -ENOMEM;
		}
		memcpy(gr->values, f->values + g * f->points, bytes);
		memcpy(gr->totals, f->totals + g * f->points, bytes);
	}
	return 0;
}

/* The second pass: the selection's rows per step into f (its classes set). */
static int fs_scan_run(struct store *s, const struct query_request *q, struct fs_scan *f,
		       const struct query_selected *sel, char *err, size_t errlen)
{
	size_t ng = sel->n_groups ? sel->n_groups : 1;

	if (ng > QUERY_FS_MAX_CELLS / (f->points ? f->points : 1))
		return query_fail(err, errlen, -E2BIG,
				  "%zu groups of %zu points, over the limit of %d values: use a "
				  "larger step or fewer groups",
				  sel->n_groups, f->points, QUERY_FS_MAX_CELLS);
	f->totals = calloc(ng * f->points + 1, sizeof(*f->totals));
	f->values = calloc(ng * f->points + 1, sizeof(*f->values));
	if (!f->totals || !f->values)
		return -ENOMEM;
	if (!sel->n)
		return 0;
	return store__scan(
	    s, &(struct store_scan_query){sel->ids, sel->n, q->from_ns, q->until_ns, f->step, 0},
	    on_fs_rows, f);
}

/* The first pass: the distinct stacks of the range, named and classified. */
static int fs_classes(struct store *s, const struct query_request *q, struct fs_namer *nm,
		      const char *type, uint8_t **cls, size_t *n_cls, char *err, size_t errlen)
{
	struct query_request nq = *q;
	struct query_stacks qs;
	int e;

	/* the groups are the selection's (pass 2); classes need the stacks alone,
	 * without the group location group_by would end each with */
	nq.group_by = NULL;
	e = query_stacks(s, &nq, &qs, err, errlen);

	if (!e && !(nm->p = profile__new(0)))
		e = -ENOMEM;
	e = e ?: profile__set_type(nm->p, type) ?: store_builder__new(s, nm->p, &nm->b);
	e = e ?: classify(&qs, nm, cls, n_cls);
	query_stacks__fini(&qs);
	return e;
}

int query_fseries(struct store *s, const struct query_request *q,
		  const struct query_fseries_request *fr, struct query_fseries *out, char *err,
		  size_t errlen)
{
	struct query_selected sel;
	struct fs_scan f = {.sel = &sel, .from = q->from_ns};
	struct fs_namer nm = {.fr = fr};
	uint8_t *cls = NULL;
	int e;

	memset(out, 0, sizeof(*out));
	memset(&sel, 0, sizeof(sel));
	out->kind = fr->kind;
	out->normalize = fr->normalize;
	out->from_ns = q->from_ns;
	out->until_ns = q->until_ns;
	e = check_fseries_request(fr, err, errlen) ?: query_select(s, q, &sel, err, errlen)
		?: fs_steps(q, &f.step, &f.points, err, errlen);
	if (e)
		goto cleanup;
	f.vi = fr->natural_value ? (sel.type ? 0 : 1) : q->value_index;
	f.want = fr->kind == QUERY_FS_SELF ? FS_LEAF : FS_IN;
	out->step_ns = f.step;
	out->n_points = f.points;
	e = fs_classes(s, q, &nm, sel.type, &cls, &f.n_cls, err, errlen);
	f.cls = cls;
	e = e ?: fs_scan_run(s, q, &f, &sel, err, errlen) ?: fs_result(&f, &sel, out);
	if (!e) {
		fs_unit(out, profile__unit(nm.p, f.vi));
		out->function =
		    strdup(fr->function ? fr->function : fr->call_site[fr->n_call_site - 1]);
		e = out->function ? 0 : -ENOMEM;
	}
cleanup:
	free(cls);
	free(nm.loc_bits);
	store_builder__free(nm.b);
	profile__free(nm.p);
	free(f.totals);
	free(f.values);
	query_selected__fini(&sel);
	return query_explain(err, errlen, e, "the function series");
}

void query_fseries__fini(struct query_fseries *fs)
{
	for (size_t g = 0; g < fs->n_groups; g++) {
		free(fs->groups[g].group);
		free(fs->groups[g].values);
		free(fs->groups[g].totals);
	}
	free(fs->groups);
	free(fs->function);
	memset(fs, 0, sizeof(*fs));
}

int64_t query_fseries__time(const struct query_fseries *fs, size_t i)
{
	return fs->from_ns + (int64_t)i * fs->step_ns;
}

double query_fseries__norm(const struct query_fseries *fs, size_t i, int64_t v, int64_t total)
{
	int64_t t0 = query_fseries__time(fs, i), t1 = t0 + fs->step_ns;
	double secs;

	switch (fs->normalize) {
	case QUERY_FS_SHARE:
		return total ? 100.0 * (double)v / (double)total : 0;
	case QUERY_FS_RATE:
		/* per second of the step; the last step ends at until */
		secs = (double)((t1 < fs->until_ns ? t1 : fs->until_ns) - t0) / 1e9;
		if (!strcmp(fs->raw_unit, "nanoseconds"))
			secs *= 1e9; /* CPU seconds per second */
		return secs > 0 ? (double)v / secs : 0;
	default:
		return (double)v;
	}
}

static const char *const kind_names[] = {"total", "self"};
static const char *const norm_names[] = {"value", "share", "rate"};

int query_fseries_parse(const char *kind, const char *normalize, struct query_fseries_request *fr,
			char *err, size_t errlen)
{
	size_t i;

	fr->kind = QUERY_FS_TOTAL;
	fr->normalize = QUERY_FS_VALUE;
	for (i = 0; kind && *kind && i < 2 && strcmp(kind, kind_names[i]); i++)
		;
	if (kind && *kind && i == 2)
		return query_fail(err, errlen, -EINVAL, "kind '%.32s' is not self or total", kind);
	fr->kind = kind && *kind ? (enum query_fs_kind)i : QUERY_FS_TOTAL;
	for (i = 0; normalize && *normalize && i < 3 && strcmp(normalize, norm_names[i]); i++)
		;
	if (normalize && *normalize && i == 3)
		return query_fail(err, errlen, -EINVAL,
				  "normalize '%.32s' is not value, share or rate", normalize);
	fr->normalize = normalize && *normalize ? (enum query_fs_norm)i : QUERY_FS_VALUE;
	return 0;
}

/* A double as JSON: the shortest of %.15g and %.17g that reads back the same. */
static void put_double(FILE *out, double d)
{
	char buf[32];

	if (!isfinite(d))
		d = 0;
	snprintf(buf, sizeof(buf), "%.15g", d);
	if (strtod(buf, NULL) != d)
		snprintf(buf, sizeof(buf), "%.17g", d);
	fputs(buf, out);
}

static void put_values(FILE *out, const struct query_fseries *fs, const int64_t *v,
		       const int64_t *tot)
{
	for (size_t i = 0; i < fs->n_points; i++) {
		if (i)
			fputc(',', out);
		if (fs->normalize == QUERY_FS_VALUE)
			fprintf(out, "%lld", (long long)v[i]);
		else
			put_double(out, query_fseries__norm(fs, i, v[i], tot[i]));
	}
}

int query_fseries__write_json(const struct query_fseries *fs, FILE *out)
{
	const struct query_fseries_group *g = fs->n_groups ? &fs->groups[0] : NULL;

	fputs("{\"unit\":", out);
	base_json_string(out, fs->unit);
	fputs(",\"function\":", out);
	base_json_string(out, fs->function ? fs->function : "");
	fprintf(out,
		",\"kind\":\"%s\",\"normalize\":\"%s\",\"from\":%lld,\"until\":%lld,\"step\":%lld",
		kind_names[fs->kind], norm_names[fs->normalize], (long long)fs->from_ns,
		(long long)fs->until_ns, (long long)fs->step_ns);
	fputs(",\"times\":[", out);
	for (size_t i = 0; i < fs->n_points; i++)
		fprintf(out, i ? ",%lld" : "%lld", (long long)query_fseries__time(fs, i));
	fputs("],\"values\":[", out);
	if (g)
		put_values(out, fs, g->values, g->totals);
	fputs("],\"totals\":[", out);
	if (g)
		put_values(out, fs, g->totals, g->totals);
	fputs("]}\n", out);
	return ferror(out) ? -ENOMEM : 0;
}

int query_fseries_json(struct store *s, const struct query_request *q,
		       const struct query_fseries_request *fr, FILE *out, char *err, size_t errlen)
{
	struct query_fseries fs;
	int e = query_fseries(s, q, fr, &fs, err, errlen);

	e = e ?: query_fseries__write_json(&fs, out);
	query_fseries__fini(&fs);
	return e;
}
