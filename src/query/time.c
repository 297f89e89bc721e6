/*
 * The query's time range: from/until parameters read with base's one time grammar
 * (base_time_parse), the default range when they are absent.
 */
#include "query.h"
#include "base/base.h"

#include <errno.h>
#include <stdio.h>

int query_parse_range(const char *from, const char *until, int64_t now_ns, int64_t *from_ns,
		      int64_t *until_ns, char *err, size_t errlen)
{
	int e;

	if (!until || !*until)
		*until_ns = now_ns;
	else if ((e = base_time_parse(until, now_ns, until_ns, err, errlen)))
		return e;
	if (!from || !*from)
		*from_ns = *until_ns - QUERY_DEFAULT_RANGE_NS;
	else if ((e = base_time_parse(from, now_ns, from_ns, err, errlen)))
		return e;
	if (*from_ns > *until_ns) {
		if (err && errlen)
			snprintf(err, errlen, "from (%.64s) is after until (%.64s)", from,
				 until && *until ? until : "now");
		return -EINVAL;
	}
	return 0;
}
