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

#endif /* HEARTH_QUERY_IMPL_H */
