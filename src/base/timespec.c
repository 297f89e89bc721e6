/*
 * The one time grammar: unix timestamps whose unit follows from their magnitude
 * (Pyroscope's clients send s, ms, µs or ns), "now" with an optional signed offset
 * ("now-1h30m"), and durations like "10s", "1h30m" or a plain number of seconds.
 * Every parser of times reads through it: /ingest, the /api/ queries, `hearth
 * query`, the scrape config's intervals and the CLI's durations. The UI's
 * web/js/timeparse.js mirrors it row for row (tests/unit/data/times.tsv).
 */
#include "base.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define NS_PER_S 1000000000ll

static int64_t unit_ns(const char **p)
{
	static const struct {
		const char *name;
		int64_t ns;
	} units[] = {
	    {"ms", 1000000ll},
	    {"us", 1000ll},
	    {"ns", 1},
	    {"s", NS_PER_S},
	    {"m", 60 * NS_PER_S},
	    {"h", 3600 * NS_PER_S},
	    {"d", 86400 * NS_PER_S},
	    {"w", 7 * 86400 * NS_PER_S},
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(units[i].name);

		if (strncmp(*p, units[i].name, n) == 0) {
			*p += n;
			return units[i].ns;
		}
	}
	return 0;
}

/* "1h30m", "10s", "500ms": a sum of number+unit terms; *p moves past them. */
static int parse_terms(const char **p, int64_t *out)
{
	int64_t total = 0;

	if (!(**p >= '0' && **p <= '9'))
		return -EINVAL;
	while (**p >= '0' && **p <= '9') {
		int64_t n = 0, u, t;

		for (; **p >= '0' && **p <= '9'; (*p)++)
			if (__builtin_mul_overflow(n, 10, &n) ||
			    __builtin_add_overflow(n, **p - '0', &n))
				return -EINVAL;
		u = unit_ns(p);
		if (!u || __builtin_mul_overflow(n, u, &t) ||
		    __builtin_add_overflow(total, t, &total))
			return -EINVAL;
	}
	*out = total;
	return 0;
}

static int bad(const char *what, const char *s, char *err, size_t errlen)
{
	if (err && errlen)
		snprintf(err, errlen,
			 "invalid %s \"%.64s\" (want now, now-1h30m, now+10m, or a unix time in s, "
			 "ms, us or ns up to 2262-04-11)",
			 what, s);
	return -EINVAL;
}

int base_time_parse_unix(const char *s, int64_t *out_ns)
{
	size_t n = s ? strlen(s) : 0;
	int64_t v = 0, mul;

	if (!n || n > 19 || strspn(s, "0123456789") != n)
		return -EINVAL;
	for (; *s; s++)
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *s - '0', &v))
			return -EINVAL;
	/* Magnitude tells the unit, as Pyroscope's clients send any of them: seconds
	 * stay below 1e11 until the year 5138, ms below 1e14 until 5138, and so on. */
	if (v < 100000000000ll)
		mul = NS_PER_S;
	else if (v < 100000000000000ll)
		mul = 1000000ll;
	else if (v < 100000000000000000ll)
		mul = 1000ll;
	else
		mul = 1;
	/* Past INT64_MAX ns (2262-04-11) is refused, never wrapped. */
	return __builtin_mul_overflow(v, mul, out_ns) ? -EINVAL : 0;
}

int base_time_parse(const char *s, int64_t now_ns, int64_t *out_ns, char *err, size_t errlen)
{
	const char *p;
	int64_t d;

	if (!s || !*s)
		return bad("time", "", err, errlen);
	if (strncmp(s, "now", 3) != 0)
		return base_time_parse_unix(s, out_ns) ? bad("time", s, err, errlen) : 0;
	p = s + 3;
	if (!*p) {
		*out_ns = now_ns;
		return 0;
	}
	if ((*p != '-' && *p != '+') || (p++, parse_terms(&p, &d)) || *p)
		return bad("time", s, err, errlen);
	if (s[3] == '-' ? __builtin_sub_overflow(now_ns, d, out_ns)
			: __builtin_add_overflow(now_ns, d, out_ns))
		return bad("time", s, err, errlen);
	return 0;
}

int base_duration_parse(const char *s, int64_t *out_ns, char *err, size_t errlen)
{
	const char *p = s;
	bool ok;

	if (s && *s && strspn(s, "0123456789") == strlen(s) && strlen(s) <= 10) {
		int64_t v = 0;

		for (; *p; p++)
			v = v * 10 + (*p - '0');
		/* ten digits of seconds can pass INT64_MAX ns: refused, not wrapped */
		ok = !__builtin_mul_overflow(v, NS_PER_S, out_ns);
	} else {
		ok = s && !parse_terms(&p, out_ns) && !*p;
	}
	if (!ok) {
		if (err && errlen)
			snprintf(err, errlen,
				 "invalid duration \"%.64s\" (want 10s, 1m, 1h30m, ..., under 292 "
				 "years)",
				 s ? s : "");
		return -EINVAL;
	}
	if (*out_ns <= 0) {
		if (err && errlen)
			snprintf(err, errlen, "duration \"%.64s\" must be positive", s);
		return -ERANGE; /* well-formed: *out_ns holds it, for a caller's own bounds */
	}
	return 0;
}
