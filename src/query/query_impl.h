/*
 * Private to src/query/: what its files share beyond query.h. Hash tables,
 * growth and saturating sums come from src/base (every sum of sample values in
 * the merge, tree, top and timeline saturates: a crafted profile may hold
 * INT64_MAX samples, and UBSan aborts on a wrap).
 */
#ifndef HEARTH_QUERY_IMPL_H
#define HEARTH_QUERY_IMPL_H

#include "base/base.h"
#include "query.h"

/* Writes one message into err (may be NULL); returns code. */
/* Whether two series profile types may be merged: both CPU (NULL counts as
 * CPU), or the same type. */
bool query_same_type(const char *a, const char *b);
int query_fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Gives a failure that has no message yet one ("WHAT failed: strerror"), and
 * returns code: the server shows err as the whole answer, and "" helps nobody. */
int query_explain(char *err, size_t errlen, int code, const char *what);

/*
 * A merge's selection (query.h's rule of one profile type), for the engines
 * outside query.c that scan rows themselves (fseries.c): the series ids to
 * give store__scan, and each series' group_by value.
 */
struct query_selected {
	size_t n;	 /* selected series */
	uint64_t *ids;	 /* owned; n, ascending (store__scan's order) */
	uint32_t *group; /* owned; n: the index in groups of each series' value */
	size_t n_groups; /* at most QUERY_MAX_GROUPS (more: -E2BIG) */
	size_t cap_groups; /* entries of groups */
	char **groups;	 /* owned: the group_by values ("" without the label, or
			  * without group_by: then one group) in first-met order */
	char *type;	 /* owned: the selection's profile type; NULL: CPU */
	/* owned: set by query_select when the request names pid, tid or comm (a
	 * matcher or group_by): those live in each stack's task location, so rows
	 * go through query_selected__row; NULL: every row of a series counts in its
	 * group (the cheap per-series path) */
	struct query_stack_tasks *tasks;
};
/* 0 or as query_timeline (-EINVAL for a bad selector, range or group_by);
 * *out cleared first and always to be finied. */
int query_select(struct store *s, const struct query_request *q, struct query_selected *out,
		 char *err, size_t errlen);
/*
 * The per-stack path: whether a row of selected series k and store stack
 * stack_id counts (the request's pid/tid/comm matchers pass its stack's task,
 * as query_stacks judges them), and its group in *g (group_by pid/tid/comm: the
 * task's value, when the stack has a task location). A stack the selection did
 * not hold when query_select resolved its tasks (appended since) does not count.
 */
bool query_selected__row(const struct query_selected *sel, size_t k, uint64_t stack_id,
			 uint32_t *g);
/* Index of series id in sel, or SIZE_MAX. */
size_t query_selected__find(const struct query_selected *sel, uint64_t id);
void query_selected__fini(struct query_selected *sel);

/*
 * query_stacks, and each stack's values[value_index] per time bucket: the
 * intervals of a diff's statistics (stats.c). Buckets are width_ns long (0:
 * query_buckets_width's), aligned to multiples of it since the epoch; a row
 * counts in the bucket its window starts in. The scan passes no MERGE hint
 * (ClickHouse keeps the windows apart) and allows rollups up to a bucket long.
 */
struct query_buckets {
	size_t k;		   /* buckets */
	int64_t start_ns, width_ns; /* bucket i covers [start + i*width, +width) */
	float *v;		   /* owned: qs->n x k; stack i's value in bucket b at v[i*k + b]
				    * (float: half the memory traffic; sums are doubles) */
	double *total;		   /* owned, k: the selection's value per bucket */
	double *wall_s;		   /* owned, k: a bucket with data: its seconds in [from, until) */
	double samples;		   /* the selection's values[0] */
};
/* The default width: the range over QUERY_STATS_INTERVALS, rounded up to 10 s,
 * 1 min, 10 min or 1 h multiples (the store's windows); step_ns > 0: step_ns. */
int64_t query_buckets_width(int64_t from_ns, int64_t until_ns, int64_t step_ns);
/* 0 or as query_stacks (-E2BIG over QUERY_MAX_POINTS buckets); both cleared
 * first and always to be finied. */
int query_stacks_buckets(struct store *s, const struct query_request *q, int64_t width_ns,
			 struct query_stacks *out, struct query_buckets *b, char *err,
			 size_t errlen);
void query_buckets__fini(struct query_buckets *b);

/* Tests only: build the diff's tree node by node (every node made, then pruned),
 * the reference its sorted build (tree.c) must answer as. */
extern bool query_diff_by_node;

/*
 * One side's functions per interval (stats.c): by top table row id, the
 * values per bucket of the stacks whose leaf is the function (self) and of
 * those it is on (total, once a stack), and their samples.
 */
struct fn_stats {
	size_t k;		 /* buckets */
	float *self, *total;	 /* owned: cap x k (float: see query_buckets) */
	double *self_n, *total_n; /* owned: samples per row */
	size_t *stamp;		 /* owned: the last stack counted into total */
	size_t cap, n_stacks;
};
int fn_stats__init(struct fn_stats *f, size_t k);
void fn_stats__fini(struct fn_stats *f);
/* Counts one stack: its frames' row ids (root first, leaf last), its value per
 * bucket (k entries) and its samples. 0 or -ENOMEM. */
int fn_stats__add(struct fn_stats *f, const size_t *rows, size_t n, const float *vec,
		  double samples);
/* The estimate of row r (0: a function the side does not have); x: scratch of
 * s->n entries. */
void fn_stats__estimate(const struct fn_stats *f, const struct query_stats_side *s, size_t r,
			bool total, enum query_norm norm, double *x, struct query_est *out);
/* The side of buckets b whose values are in unit (the merge's). */
void fn_stats__side(const struct query_buckets *b, const char *unit, enum query_norm norm,
		    struct query_stats_side *s);
/* "pp" or "<unit>/s" ("seconds/s" for nanoseconds). */
void fn_stats__unit(const char *unit, enum query_norm norm, char *out, size_t len);

/*
 * One side of a comparison by function (tree.c, for regress.c): the top table
 * of qs's stacks (values[value_index]; every row, at most QUERY_MAX_NODES; *top
 * cleared first and always to be finied) and, by its row ids, each function's
 * values per bucket of bk into f (fn_stats__init'ed with bk->k). 0 or -errno.
 */
int query_fn_side(struct store *s, const struct query_stacks *qs, const struct query_buckets *bk,
		  int value_index, struct query_top *top, struct fn_stats *f);

#endif /* HEARTH_QUERY_IMPL_H */
