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

#endif /* HEARTH_QUERY_IMPL_H */
