/*
 * The query's time range: from/until parameters read with base's one time grammar
 * (base_time_parse), the default range when they are absent. A refusal names the
 * parameter as the user wrote it, so a page or a script can tell which one is wrong.
 */
#include "query.h"
#include "base/base.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

/* One time into *out_ns; the message starts with the parameter's name. */
static int parse_one(const char *name, const char *s, int64_t now_ns, int64_t *out_ns, char *err,
		     size_t errlen)
{
	char why[384];
	int e = base_time_parse(s, now_ns, out_ns, why, sizeof(why));

	if (e && err && errlen)
		snprintf(err, errlen, "%s: %s", name, why);
	return e;
}

int query_parse_range_named(const char *from_name, const char *from, const char *until_name,
			    const char *until, int64_t now_ns, int64_t *from_ns, int64_t *until_ns,
			    char *err, size_t errlen)
{
	int e;

	if (!until || !*until)
		*until_ns = now_ns;
	else if ((e = parse_one(until_name, until, now_ns, until_ns, err, errlen)))
		return e;
	if (!from || !*from) {
		/* until 1677-09-21 (INT64_MIN ns) and no from: the range starts there */
		if (__builtin_sub_overflow(*until_ns, QUERY_DEFAULT_RANGE_NS, from_ns))
			*from_ns = INT64_MIN;
	} else if ((e = parse_one(from_name, from, now_ns, from_ns, err, errlen)))
		return e;
	if (*from_ns > *until_ns) {
		if (err && errlen)
			snprintf(err, errlen, "%s (%.64s) is after %s (%.64s)", from_name, from,
				 until_name, until && *until ? until : "now");
		return -EINVAL;
	}
	return 0;
}

int query_parse_range(const char *from, const char *until, int64_t now_ns, int64_t *from_ns,
		      int64_t *until_ns, char *err, size_t errlen)
{
	return query_parse_range_named("from", from, "until", until, now_ns, from_ns, until_ns, err,
				       errlen);
}
