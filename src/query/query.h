/*
 * query: label matchers + time range over the store → labels, label values,
 * series, a merged profile, a flame tree, a top table, a diff of two selections
 * and a timeline. Each answer is a typed result (struct query_strings,
 * query_series_list, query_tree, query_top, query_diff, query_timeline) that
 * every writer renders from: hearth's JSON (the query_*_json writers below,
 * served by /api and printed by `hearth query`), Pyroscope's flamebearer and
 * the Connect messages (src/server). No writer reads another's output back.
 *
 * Selector syntax (Prometheus): `{a="x", b!="y", c=~"re", d!~"re"}` and
 * `name{...}` (sugar for `__name__="name"`); `{}`, "" and NULL select every
 * series. Regexes are RE2 syntax, anchored at both ends like Prometheus.
 * Values are double-quoted with \" \\ \n \t escapes (single quotes and
 * backquotes also accepted).
 *
 * Return contract: 0 on success, -errno on failure, with one sentence naming
 * the problem in err (err may be NULL). Caller's mistakes (map to HTTP 400):
 *   -EINVAL  invalid selector, time, step, group label or from > until
 *   -E2BIG   a request over a documented limit (matchers, selector length,
 *            timeline points or groups)
 * Anything else (-ENOMEM, -EIO) is the server's problem (5xx).
 */
#ifndef HEARTH_QUERY_H
#define HEARTH_QUERY_H

#include "base/base.h"
#include "profile/profile.h"
#include "store/store.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Limits of a selector. */
#define QUERY_MAX_SELECTOR_LEN 4096
#define QUERY_MAX_MATCHERS     32
/*
 * Regexes of =~ / !~ matchers (regex.c): RE2 syntax, linear-time matching.
 * Longest pattern, deepest group nesting, largest count of x{n,m}, and most
 * instructions of the compiled program (x{n} makes n copies of x); over any of
 * them the selector is refused (-EINVAL) with a message naming the limit.
 */
#define QUERY_MAX_REGEX_LEN	1024
#define QUERY_REGEX_MAX_NESTING 100
#define QUERY_REGEX_MAX_REPEAT	1000
#define QUERY_REGEX_MAX_PROG	4096
/*
 * Memory one selector may spend remembering its regexes' answers per distinct
 * label value (many series share a value: job, env, ...), so that a query
 * matches each distinct value once and not once per series. Past it, values
 * are matched without being remembered.
 */
#define QUERY_REGEX_MEMO_BYTES (1u << 20)
/* Default and ceiling of maxNodes (tree, top, diff). */
#define QUERY_DEFAULT_MAX_NODES 2048
#define QUERY_MAX_NODES		262144 /* the web UI draws 100,000-node trees */
/* Timeline: at most this many steps and groups (more: -E2BIG). */
#define QUERY_MAX_POINTS 11000
#define QUERY_MAX_GROUPS 1000
/* Default range when a request gives none: the last hour. */
#define QUERY_DEFAULT_RANGE_NS (3600ll * 1000000000ll)

/* ---- regular expressions (regex.c) ---- */

/*
 * A compiled regex, matched against a whole value (anchored at both ends) in
 * time O(len(value) x program size). See regex.c for the syntax. Not
 * thread-safe: a compiled regex holds its match scratch (no allocation when
 * matching); one per thread.
 */
struct query_regex;

/* 0, or -EINVAL (err names the problem and its offset, or the limit), -ENOMEM. */
int query_regex__compile(const char *pattern, struct query_regex **out, char *err, size_t errlen);
/* Whether all of s[0, len) matches. */
bool query_regex__match(const struct query_regex *re, const char *s, size_t len);
/* Instructions of the compiled program. */
size_t query_regex__size(const struct query_regex *re);
/* NULL is a no-op. */
void query_regex__free(struct query_regex *re);

/* ---- selectors ---- */

enum query_op { QUERY_OP_EQ, QUERY_OP_NEQ, QUERY_OP_RE, QUERY_OP_NRE };

struct query_matcher {
	char *name;  /* owned */
	char *value; /* owned, unescaped */
	enum query_op op;
	struct query_regex *re; /* owned; compiled value for RE/NRE, else NULL */
};

struct query_memo;

struct query_selector {
	size_t n;
	struct query_matcher *m; /* owned, n entries */
	/* owned: the regex matchers' answers per (matcher, value), at most
	 * QUERY_REGEX_MEMO_BYTES; NULL without regex matchers. Filled while
	 * matching (a selector is used by one thread, as its regexes are). */
	struct query_memo *memo;
};

/*
 * Parses a selector. 0, -EINVAL (err names the position and what was expected,
 * or the bad regex), -E2BIG (over QUERY_MAX_SELECTOR_LEN / QUERY_MAX_MATCHERS),
 * -ENOMEM. s may be NULL or "" (matches everything). *out is freed by the caller.
 */
int query_selector__parse(const char *s, struct query_selector **out, char *err, size_t errlen);
void query_selector__free(struct query_selector *sel);
/* Whether the labels (a missing label counts as "") and the profile type (as
 * STORE_PROFILE_TYPE_LABEL) satisfy every matcher. */
bool query_selector__match(const struct query_selector *sel, const struct store_series *ser);
/* The same over the =~ / !~ matchers only (regex true) or the = / != ones only:
 * the cheap ones can run under the store's lock, the regexes after it. */
bool query_selector__match_some(const struct query_selector *sel, const struct store_series *ser,
				bool regex);
/*
 * pid, tid and comm (query_task_label) live in each stack's task location on
 * stores written since issue 30 (PROFILE_TASK_MAPPING: pid and tid in its
 * address, the thread's name as its function), not in series labels: a matcher
 * on them is skipped by query_selector__match(_some) for a series without that
 * label, and applied per stack by query_selector__match_task, whose values are
 * the stack's ("" when it has no task location).
 */
struct query_task {
	bool present;	       /* the stack has a task location */
	char pid[24], tid[24]; /* decimal; "" when not present */
	const char *comm;      /* borrowed (the profile that named it); "" when unknown */
};
bool query_task_label(const char *name);
/* t's value of task label name ("" for another name). */
const char *query_task__value(const struct query_task *t, const char *name);
bool query_selector__has_task(const struct query_selector *sel);
bool query_selector__match_task(const struct query_selector *sel, const struct query_task *t);
/* Regex matches the selector ran so far (values answered from its memo are not
 * counted): the work a query did, for tests and benchmarks. */
uint64_t query_selector__regex_runs(const struct query_selector *sel);

/* ---- time ---- */

/* Parses from/until (NULL or "": until-1h / now) with base_time_parse and checks
 * from <= until. from_name/until_name are the parameters as the user wrote them
 * ("leftfrom", "--until"), for the message: 0 or -EINVAL ("until: invalid time
 * …", "from (…) is after until (…)"). */
int query_parse_range_named(const char *from_name, const char *from, const char *until_name,
			    const char *until, int64_t now_ns, int64_t *from_ns, int64_t *until_ns,
			    char *err, size_t errlen);
/* query_parse_range_named with the names "from" and "until". */
int query_parse_range(const char *from, const char *until, int64_t now_ns, int64_t *from_ns,
		      int64_t *until_ns, char *err, size_t errlen);

/* ---- requests ---- */

struct query_request {
	const char *query; /* selector text; NULL/""/"{}" = every series */
	/* n_queries selectors instead of query (Connect's matchers, for the
	 * listings): a series matching any of them is selected, in one pass over
	 * the series; at most QUERY_MAX_MATCHERS (more: -E2BIG). 0: query alone. */
	const char *const *queries;
	size_t n_queries;
	int64_t from_ns, until_ns; /* [from, until); from > until is -EINVAL */
	size_t
	    max_nodes;	 /* tree/top/diff; 0 = QUERY_DEFAULT_MAX_NODES; capped at QUERY_MAX_NODES */
	int value_index; /* which sample value: 0 samples (default), 1 cpu nanoseconds */
	int64_t step_ns; /* timeline; 0 = auto (about 1000 points, multiple of 10 s) */
	const char *group_by; /* timeline; NULL/"" = one group of everything */
	size_t top_rows;      /* tree: also the top table (query_top_json's object) as "top",
			       * at most this many rows; 0 = no top; capped at QUERY_MAX_NODES */
	/* tree/top/diff: group_by also makes a root level of one node per value of
	 * that label, named "LABEL=VALUE" ("LABEL=" without it); pid, tid and comm
	 * come from the stacks' task locations (also on the timeline and function
	 * series, which then sum per stack). expand_unnamed: frames without a name
	 * one per address ("libz.so.1+0x1f0"); false: one per object
	 * ("libz.so.1 [no symbols]", profile__set_group_unnamed). */
	bool expand_unnamed;
	double confidence;    /* diff, regressions: 0 = QUERY_DEFAULT_CONFIDENCE */
	int normalize;	      /* diff: enum query_norm (0 = share) */
	int64_t interval_ns;  /* diff, regressions: the statistics' interval width, at
			       * least 1 s; 0 = query_buckets_width's of the range */
};

/* ---- typed results ---- */

/* "samples", "nanoseconds", "bytes", ...: a profile type's unit fits. */
#define QUERY_UNIT_MAX 64
/* A tree node's module when unknown. */
#define QUERY_NONE UINT32_MAX

/* Label names or values: sorted, distinct. */
struct query_strings {
	size_t n;
	char **v; /* owned */
};
void query_strings__fini(struct query_strings *l);

/* One series of a listing: its profile type and labels (sorted by name). */
struct query_series {
	char *type; /* owned */
	size_t n;
	struct store_label *labels; /* owned, with their strings */
};
struct query_series_list {
	size_t n;
	struct query_series *s; /* owned, in the store's order */
};
void query_series_list__fini(struct query_series_list *l);

/* A top table: profile/top.c's rows (pprof -top's functions, self and total). */
struct query_top {
	char unit[QUERY_UNIT_MAX];
	int64_t total;	      /* of the whole merge */
	size_t n;	      /* rows kept (at most the request's limit) */
	struct top_row *rows; /* owned; sorted by self, then total, then name */
	char *pool;	      /* owned: the rows' names */
};
void query_top__fini(struct query_top *t);
/* The typed table of a table counted elsewhere (t's rows, values[value_index]),
 * at most max_nodes rows (0: QUERY_DEFAULT_MAX_NODES). 0 or -ENOMEM; *out
 * cleared first and always to be finied. */
int query_top__from(struct query_top *out, const struct top *t, int value_index, size_t max_nodes);

/*
 * A flame tree, pruned to the request's max_nodes: nodes in pre-order (a node,
 * then its kept children's subtrees, largest total first), nodes[0] the root
 * "total". A diff's nodes carry both selections (slot 0 left, 1 right); one
 * selection's carry 0 in slot 1. A pruned child's value stays in its parent's
 * total, so a total may exceed self + the children's totals.
 */
struct query_node {
	uint32_t name;	 /* index in names */
	uint32_t module; /* index in names: the mapping's file basename, "[kernel]";
			  * QUERY_NONE: unknown */
	uint32_t depth;	 /* the root's is 0 */
	uint32_t n_kids; /* kept children */
	int64_t self[2], total[2];
};
struct base_strtab;
struct query_tree {
	char unit[QUERY_UNIT_MAX];
	bool diff;
	size_t n_nodes;
	struct query_node *nodes; /* owned */
	size_t n_names;
	char *const *names;	 /* borrowed from own (or from whoever made the tree) */
	struct base_strtab *own; /* owned: the names; NULL when the maker owns them */
	bool has_top;		 /* one selection's tree asked with q->top_rows: */
	struct query_top top;	 /* its top table, at most top_rows rows */
};
void query_tree__fini(struct query_tree *t);

/* ---- statistics of a diff (stats.c; docs/regressions.md says them in words) ---- */

#define QUERY_DEFAULT_CONFIDENCE 0.99
#define QUERY_MIN_CONFIDENCE	 0.5
#define QUERY_MAX_CONFIDENCE	 0.9999
/* A side's range is cut into about this many intervals (buckets of whole stored
 * windows) for the between-interval variance; see query_buckets_width. */
#define QUERY_STATS_INTERVALS 16

/* share: percentage points of the side's total; rate: value per wall second
 * (nanoseconds: seconds per second). */
enum query_norm { QUERY_NORM_SHARE, QUERY_NORM_RATE };
enum query_verdict { QUERY_NOISE, QUERY_UP, QUERY_DOWN };

/* One side of a comparison: its intervals (n; entries with wall_s <= 0 are
 * intervals without data, skipped). Borrowed arrays. */
struct query_stats_side {
	size_t n;
	const double *total;  /* the selection's value per interval */
	const double *wall_s; /* seconds per interval */
	double samples;	      /* the selection's samples (values[0]) over all intervals */
	double scale;	      /* rate: factor into the unit shown (1e-9 for nanoseconds) */
};
/* A function's estimate on one side, in the normalisation's unit. */
struct query_est {
	double value;	    /* share (pp) or rate */
	double var;	    /* max(between-interval, Poisson) */
	double half_sample; /* half a sample, in the unit (the continuity correction) */
	double df;	    /* the variance's degrees of freedom: n - 1 when the
			     * between-interval part is the larger, else infinite */
	size_t intervals;   /* intervals with data */
	bool empty;	    /* the side has no data: nothing to compare */
	bool poisson_only;  /* fewer than 2 intervals: Poisson variance alone */
};
/* A function's change from a to b. */
struct query_change {
	double left, right, change, low, high;
	enum query_verdict verdict; /* UP: low > 0; DOWN: high < 0 */
};

/* The standard normal quantile: x with P(Z <= x) = p, 0 < p < 1 (bisection on
 * erfc: accurate to 1e-12). */
double query_normal_quantile(double p);
/* The two-sided z of a confidence (0.99: 2.5758...). */
double query_confidence_z(double confidence);
/* A function's estimate on side s from its value per interval (x, s->n entries)
 * and its samples over the side. */
void query_stats__estimate(const struct query_stats_side *s, const double *x, double samples,
			   enum query_norm norm, struct query_est *out);
/* right - left with its interval at z (query_confidence_z): change ± (z' *
 * sqrt(var_a + var_b) + half a sample per side), z' the Student t quantile
 * for z at the Welch-Satterthwaite degrees of freedom (Cornish-Fisher, two
 * terms; z itself when both variances are Poisson's); an empty side gives
 * NOISE and the interval [min(0, change), max(0, change)]. */
void query_stats__compare(const struct query_est *a, const struct query_est *b, double z,
			  struct query_change *out);
const char *query_verdict_name(enum query_verdict v);
/* "share" / "rate" into *out; -EINVAL for anything else. */
int query_norm_parse(const char *s, enum query_norm *out);

/*
 * A diff's per-function table over the two whole merges (not the pruned tree):
 * each function named by either, self and total on each side (top's
 * definitions), and the changes right - left: of the values, and of the self
 * share of its side's total in percentage points (what the web UI ranks by).
 */
struct query_diff_row {
	const char *name;		   /* in the diff's pool */
	int64_t self[2], total[2];	   /* [0] left, [1] right */
	int64_t self_change, total_change; /* right - left (saturating) */
	double share_change;		   /* 100 * (self[1]/right - self[0]/left) */
	size_t id[2];			   /* the function's row in each side's top table; 0: none */
	struct query_change self_diff, total_diff; /* in the diff's normalisation */
};
struct query_diff {
	struct query_tree tree;	     /* diff true */
	int64_t total[2];	     /* left and right totals */
	size_t n_rows;		     /* at most left's top_rows, or without it max_nodes */
	struct query_diff_row *rows; /* owned; significant self changes first (largest
				      * |self_diff.change| first), then largest
				      * |share_change|, largest |self_change|, then by name */
	char *pool;		     /* owned: the rows' names */
	/* the significance of the changes (stats.c) */
	double confidence;
	enum query_norm normalize;
	char stats_unit[QUERY_UNIT_MAX + 8]; /* "pp" or "<unit>/s" ("seconds/s" for ns) */
	size_t intervals[2];
	double seconds[2]; /* wall seconds of each side's intervals with data */
};
void query_diff__fini(struct query_diff *d);

/* A timeline: totals per step and group (see query_timeline_json). */
struct query_timeline_group {
	char *group;	 /* owned: the group_by label's value, "" without it */
	int64_t total;	 /* of its values */
	int64_t *values; /* owned, n_points */
};
struct query_timeline {
	char unit[QUERY_UNIT_MAX];
	int64_t from_ns, until_ns, step_ns;
	size_t n_points, n_groups;
	struct query_timeline_group *groups; /* owned; groups with data, by total desc */
};
void query_timeline__fini(struct query_timeline *t);

/*
 * The engine's answers as typed results; each 0 or as the matching JSON writer
 * below (which renders exactly these), *out cleared first and always to be
 * finied (also on failure).
 */
int query_labels(struct store *s, const struct query_request *q, struct query_strings *out,
		 char *err, size_t errlen);
int query_label_values(struct store *s, const char *name, const struct query_request *q,
		       struct query_strings *out, char *err, size_t errlen);
int query_series(struct store *s, const struct query_request *q, struct query_series_list *out,
		 char *err, size_t errlen);
int query_tree(struct store *s, const struct query_request *q, struct query_tree *out, char *err,
	       size_t errlen);
int query_top(struct store *s, const struct query_request *q, struct query_top *out, char *err,
	      size_t errlen);
int query_diff(struct store *s, const struct query_request *left, const struct query_request *right,
	       struct query_diff *out, char *err, size_t errlen);
int query_timeline(struct store *s, const struct query_request *q, struct query_timeline *out,
		   char *err, size_t errlen);

/*
 * hearth's JSON of each typed result (result.c), the shapes documented with the
 * query_*_json functions below, which are the engine's answer then these. Each
 * ends with a newline but query_top__write_json (an object, also nested).
 * 0 or -ENOMEM.
 */
int query_strings__write_json(const struct query_strings *l, FILE *out);
/* `["s", …]` of v[0..n), no newline: query_strings__write_json's array, for a
 * writer's own list of names. */
void query_json_strings(FILE *out, char *const *v, size_t n);
int query_series_list__write_json(const struct query_series_list *l, FILE *out);
int query_tree__write_json(const struct query_tree *t, FILE *out);
int query_top__write_json(const struct query_top *t, FILE *out);
int query_diff__write_json(const struct query_diff *d, FILE *out);
int query_timeline__write_json(const struct query_timeline *t, FILE *out);

/* JSON `["name", ...]`: sorted label names of the series matching q in its range
 * (series with no data in the range are left out), plus STORE_PROFILE_TYPE_LABEL. */
int query_labels_json(struct store *s, const struct query_request *q, FILE *out, char *err,
		      size_t errlen);
/* JSON `["value", ...]`: sorted distinct values of label `name` (same selection). */
int query_label_values_json(struct store *s, const char *name, const struct query_request *q,
			    FILE *out, char *err, size_t errlen);
/* JSON `[{"profileType":"…","labels":{"k":"v",…}}, …]`: matching series with data in range. */
int query_series_json(struct store *s, const struct query_request *q, FILE *out, char *err,
		      size_t errlen);

/*
 * Profile types in merges (profile, stacks, tree, top, diff, timeline): a
 * selector without a __profile_type__ matcher selects CPU series only (types
 * starting with PROFILE_CPU_TYPE_PREFIX: the agent's and scraped CPU alike),
 * and a selection whose series are of several types is refused (-EINVAL,
 * naming two of them): a memory profile is never summed with a CPU one. The
 * merge's values then have the unit of that type (profile__unit): the JSON
 * "unit" and the pprof sample type follow it. Listings (labels, label values,
 * series) show every type.
 */

/*
 * Merges every matching series over the range into one new profile (the caller
 * frees it): samples keep the series' INGEST_SAMPLE_LABELS as labels, so
 * folded_write shows the process, and time/duration are the range. Task
 * locations (PROFILE_TASK_MAPPING) are stripped: a stack's task becomes the
 * sample labels pid and tid (numbers) and comm, and the request's pid/tid/comm
 * matchers drop the stacks they refuse. A selection
 * with no data gives an empty profile (0 samples), not an error. Encode it with
 * pprof_encode / folded_write / top_write.
 */
int query_profile(struct store *s, const struct query_request *q, struct profile **out, char *err,
		  size_t errlen);

/*
 * A merge without sample labels, for the outputs that do not show them (tree,
 * top, diff): every distinct stack of the matching series over the range once,
 * with its values summed over series and chunks, as store location ids. Rows
 * are summed in an array indexed by store stack id; each distinct stack is then
 * expanded once; no profile is built (the writers name each store location
 * once, through a store_builder).
 */
struct query_stacks {
	size_t n;	/* distinct stacks, in the order the scan first met them */
	uint64_t *ids;	/* store stack ids */
	size_t *off;	/* n + 1 offsets: stack i is locs[off[i] .. off[i+1]), leaf first */
	uint64_t *locs; /* store location ids */
	int64_t (*v)[PROFILE_N_VALUES];
	int64_t period_ns; /* values[1] / values[0] of the first stack with samples */
	char *type;	   /* owned: the series' profile type; NULL for CPU (see below) */
	/* Task locations are stripped. With group_by, each stack ends (root side)
	 * with a group location: id group_loc0 + g for group g, named groups[g]
	 * ("LABEL=VALUE"); not a store id (the writers name it themselves). */
	uint64_t group_loc0;
	struct base_strtab groups; /* id 0 unused ("") */
	bool group_unnamed;	   /* !expand_unnamed of the request */
};
/* 0 or as query_profile; *out is cleared first and must be finied (also on failure). */
int query_stacks(struct store *s, const struct query_request *q, struct query_stacks *out,
		 char *err, size_t errlen);
void query_stacks__fini(struct query_stacks *qs);
/* Sum of values[vi] over the stacks (saturating, as profile__total). */
int64_t query_stacks__total(const struct query_stacks *qs, int vi);

/*
 * JSON flame tree of the request's merge by stack (query_stacks), root first:
 *   {"unit":"samples"|"nanoseconds","total":N,"tree":
 *     {"name":"total","self":N,"total":N,"children":[{"name":..., ...}, ...]}}
 * Children are sorted by total, descending. Only the max_nodes nodes of largest
 * total are kept (0 = QUERY_DEFAULT_MAX_NODES); a dropped child's value stays
 * in its parent's total, so a total may exceed self + the children's totals.
 * Frames are named as query_profile then folded_write would name them. With
 * q->top_rows, the answer also holds "top": query_top_json's object (at most
 * top_rows rows) of the same merge, which the web UI shows beside the tree (one
 * merge for both).
 */
int query_tree_json(struct store *s, const struct query_request *q, FILE *out, char *err,
		    size_t errlen);

/*
 * JSON top table of the request's merge by stack: profile/top.c's rows (the
 * same functions, self and total as `pprof -top`, top_write), counting
 * values[value_index], over the whole merge (not a pruned tree):
 *   {"unit":…,"total":N,"rows":[{"name":…,"self":N,"total":N}, …]}
 * sorted by self, then total, then name; at most max_nodes rows.
 */
int query_top_json(struct store *s, const struct query_request *q, FILE *out, char *err,
		   size_t errlen);

/*
 * Diff of two selections as one tree over the union of their stacks, and the
 * per-function table (query_diff_row) over their whole merges:
 *   {"unit":…,"left":N,"right":N,"tree":{"name":"total","self":[l,r],"total":[l,r],
 *     "children":[…]},
 *    "functions":[{"name":…,"self":[l,r],"total":[l,r],"selfChange":N,
 *      "totalChange":N,"shareChange":PP}, …]}
 * Node pruning as in query_tree_json, ranked by max(left, right); at most
 * top_rows functions (without it max_nodes), significant self changes first
 * (largest |selfDiff.change|), then largest |shareChange| first. Each row also
 * has "selfDiff" and "totalDiff": {"left","right","change","low","high",
 * "verdict":"up"|"down"|"noise"} in the normalisation's unit, and the answer,
 * after "functions", "significance": {"confidence","normalize","unit",
 * "intervals":[l,r],"seconds":[l,r],"note"} (stats.c, docs/regressions.md).
 * max_nodes, top_rows, value_index, confidence and normalize come from `left`.
 */
int query_diff_json(struct store *s, const struct query_request *left,
		    const struct query_request *right, FILE *out, char *err, size_t errlen);

/* ---- regressions: a window against a baseline (regress.c) ---- */

#define QUERY_REGRESSIONS_DEFAULT_LIMIT 50
#define QUERY_REGRESSIONS_MAX_LIMIT	1000

/* previous: the window of the same length just before; 1d, 7d: the window that
 * long earlier; range: the options' base_from_ns/base_until_ns. */
enum query_baseline { QUERY_BASELINE_PREVIOUS, QUERY_BASELINE_1D, QUERY_BASELINE_7D,
		      QUERY_BASELINE_RANGE };
/* "previous", "1d", "7d" into *out; -EINVAL for anything else. */
int query_baseline_parse(const char *s, enum query_baseline *out);

/* What to compare; zeroed: the previous window, self, rate, 50 rows. */
struct query_regressions_opts {
	enum query_baseline baseline;
	int64_t base_from_ns, base_until_ns; /* QUERY_BASELINE_RANGE: [from, until) */
	bool total;			     /* total instead of self */
	bool share;			     /* share of the total instead of rate */
	size_t limit;			     /* 0: default; capped at QUERY_REGRESSIONS_MAX_LIMIT */
};

struct query_regression {
	const char *name;	  /* in the answer's pool */
	struct query_change c;	  /* left: the baseline's, right: the window's */
	double relative;	  /* change / before; NAN when before is 0 */
	double *values;		  /* owned: the series, n_times values */
	size_t id[2];		  /* its row in each side's top table (0: none) */
};
struct query_regressions {
	char unit[QUERY_UNIT_MAX + 8]; /* "pp" or "<unit>/s" ("seconds/s" for ns) */
	bool total, share;
	double confidence;
	size_t tested;		     /* functions with data (of the kind) on either side */
	int64_t from_ns, until_ns;   /* the window */
	int64_t base_from_ns, base_until_ns;
	size_t intervals[2];	     /* [0] baseline, [1] window: intervals with data */
	char note[512];
	size_t n;		     /* rows: significant ones, largest |change| first */
	struct query_regression *rows; /* owned */
	char *pool;		     /* owned: the rows' names */
	size_t n_times;
	int64_t *times; /* owned: the series' points (starts, ns), both sides' */
};
void query_regressions__fini(struct query_regressions *r);

/*
 * The functions whose self (or total) time changed beyond noise between the
 * baseline and the window q->from_ns..until_ns, with Bonferroni's correction
 * over the functions tested (the chance that any unchanged function is listed
 * is at most 1 - confidence): each side as a diff's (query_stacks_buckets of its
 * range, fn_stats, query_stats__compare at the z of 1 - (1 - confidence) /
 * tested). Each row's series covers both sides at q->step_ns rounded up to a
 * whole interval (0: an interval). A side without data is not an error: no rows,
 * and the note says which side is empty. q->confidence (0: default) and
 * q->value_index as the diff's. 0 or as query_diff; *out always to be finied.
 */
int query_regressions(struct store *s, const struct query_request *q,
		      const struct query_regressions_opts *o, struct query_regressions *out,
		      char *err, size_t errlen);
/*
 * {"unit":…,"normalize":"rate"|"share","kind":"self"|"total","confidence":C,
 *  "tested":N,"window":{"from":NS,"until":NS,"intervals":n},
 *  "baseline":{"from":NS,"until":NS,"intervals":n},"note":"…",
 *  "functions":[{"name":…,"before":a,"after":b,"change":…,"low":…,"high":…,
 *    "verdict":"up"|"down","relative":R|null,"series":{"times":[NS…],"values":[…]}},…]}
 */
int query_regressions__write_json(const struct query_regressions *r, FILE *out);
int query_regressions_json(struct store *s, const struct query_request *q,
			   const struct query_regressions_opts *o, FILE *out, char *err,
			   size_t errlen);

/*
 * Timeline: totals per step, per value of group_by (series without the label
 * are grouped under ""):
 *   {"unit":…,"from":MS,"until":MS,"step":MS,
 *    "groups":[{"group":"value","values":[N, …]}, …]}
 * values[i] covers [from + i*step, from + (i+1)*step); a chunk counts in the
 * step its window starts in (rollups are used only when no longer than the
 * step). Groups without data are left out; the rest sorted by total, descending.
 * -E2BIG over QUERY_MAX_POINTS steps or QUERY_MAX_GROUPS groups;
 * -EINVAL for an invalid group_by label name.
 */
int query_timeline_json(struct store *s, const struct query_request *q, FILE *out, char *err,
			size_t errlen);

/* ---- one function's series (fseries.c) ---- */

/* A function name's length, and a call site's frames, at most (more: -E2BIG). */
#define QUERY_MAX_FUNCTION_LEN 1024
#define QUERY_MAX_CALL_SITE    256
/* Values (groups x points) of one function series at most (more: -E2BIG). Its
 * memory is a merge's (query_stacks), a byte per store stack id and two values
 * per cell: it does not grow with range / step (fseries.c). */
#define QUERY_FS_MAX_CELLS (1 << 20)

enum query_fs_kind { QUERY_FS_TOTAL, QUERY_FS_SELF };
/* value: the unit's raw sum per step; share: percent of the selection's total in
 * the step; rate: per second of the step (nanoseconds become CPU seconds/s). */
enum query_fs_norm { QUERY_FS_VALUE, QUERY_FS_SHARE, QUERY_FS_RATE };

/*
 * What to follow: a function, or (function NULL) a call-site path.
 *   function: exact name as the top table shows it (query_top_json's rows). A
 *     stack counts for total when the function appears in it (once, however
 *     many times: recursion), for self when it is the leaf frame (top's
 *     definitions).
 *   call_site: frame names from the root, as the flame tree names them (Connect's
 *     StackTraceSelector: Pyroscope's "stack traces having the prefix"). A stack
 *     counts for total when its frames start with the path, for self when they
 *     are exactly the path (the flame graph node's total and self).
 */
struct query_fseries_request {
	const char *function;
	const char *const *call_site;
	size_t n_call_site; /* at most QUERY_MAX_CALL_SITE */
	enum query_fs_kind kind;
	enum query_fs_norm normalize;
	/* true: count the selection's natural value (CPU: nanoseconds, else
	 * values[0]) instead of q->value_index */
	bool natural_value;
};

struct query_fseries_group {
	char *group;	 /* owned: the group_by value; "" without group_by */
	int64_t *values; /* owned, n_points: the function's raw sum per step */
	int64_t *totals; /* owned, n_points: the group's total per step */
};
struct query_fseries {
	char unit[QUERY_UNIT_MAX];     /* of the normalised numbers: raw unit, "%", "<unit>/s" */
	char raw_unit[QUERY_UNIT_MAX]; /* of values and totals */
	char *function;		       /* owned: the function, or the call site's last frame */
	enum query_fs_kind kind;
	enum query_fs_norm normalize;
	int64_t from_ns, until_ns, step_ns;
	size_t n_points; /* point i covers [from + i*step, from + (i+1)*step), up to until */
	size_t n_groups; /* every group_by value of the selection; at least one */
	struct query_fseries_group *groups; /* owned, in first-met order */
};
void query_fseries__fini(struct query_fseries *fs);
/* Start of point i (ns). */
int64_t query_fseries__time(const struct query_fseries *fs, size_t i);
/* Raw sum v of point i as fs->normalize says (total: the group's total there). */
double query_fseries__norm(const struct query_fseries *fs, size_t i, int64_t v, int64_t total);
/* kind ("self"|"total", NULL/"": total) and normalize ("value"|"share"|"rate",
 * NULL/"": value) into fr. 0 or -EINVAL naming the bad value. */
int query_fseries_parse(const char *kind, const char *normalize,
			struct query_fseries_request *fr, char *err, size_t errlen);

/*
 * The series of one function (or call site) over q's range at q's step (0: the
 * timeline's automatic step), per group of q->group_by. Steps and the selection
 * as query_timeline (a chunk counts in the step its window starts in); -E2BIG
 * over QUERY_MAX_POINTS steps or QUERY_FS_MAX_CELLS values; -EINVAL for a
 * missing or bad function / call site. A function no stack holds is a series
 * of zeros, not an error.
 */
int query_fseries(struct store *s, const struct query_request *q,
		  const struct query_fseries_request *fr, struct query_fseries *out, char *err,
		  size_t errlen);
/*
 * /api/function-series's JSON (the first group; the API has no group_by):
 *   {"unit":…,"function":…,"kind":"self"|"total","normalize":"value"|"share"|"rate",
 *    "from":NS,"until":NS,"step":NS,"times":[NS,…],"values":[…],"totals":[…]}
 * times are the steps' starts; values and totals normalised alike (value:
 * integers; share: the total is 100 where the step has data).
 */
int query_fseries__write_json(const struct query_fseries *fs, FILE *out);
int query_fseries_json(struct store *s, const struct query_request *q,
		       const struct query_fseries_request *fr, FILE *out, char *err,
		       size_t errlen);

#endif /* HEARTH_QUERY_H */
