/*
 * libFuzzer target for the one time grammar (base_time_parse, and through
 * query_parse_range_named the API's from/until): the first 8 input bytes are
 * "now" in ns (any int64, so today/yesterday and the offsets meet both ends of
 * the range), the rest the time as a client sends it. Any input must parse or
 * fail with -EINVAL and a message naming the parameter, never crash, overflow
 * (UBSan) or answer differently twice.
 */
#include "base/base.h"
#include "query/query.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512] = "", err2[512] = "", *s;
	int64_t now, t = 0, t2 = 0, f, u;
	int e, e2;

	if (size < 8 || size > 8 + 256)
		return 0;
	memcpy(&now, data, 8);
	s = malloc(size - 8 + 1);
	if (!s)
		return 0;
	memcpy(s, data + 8, size - 8);
	s[size - 8] = 0;
	e = base_time_parse(s, now, &t, err, sizeof(err));
	e2 = base_time_parse(s, now, &t2, err2, sizeof(err2));
	if ((e != 0 && e != -EINVAL) || e != e2 || (!e && t != t2) || (e && !err[0]))
		abort();
	/* "" is an absent parameter there (the default range), not a time */
	e = query_parse_range_named("leftfrom", s, "leftuntil", s, now, &f, &u, err, sizeof(err));
	if (*s && (e ? (e != -EINVAL || strncmp(err, "leftuntil: ", 11)) : (f != t || u != t)))
		abort();
	free(s);
	return 0;
}
