/*
 * The one time grammar: unix timestamps whose unit follows from their magnitude
 * (Pyroscope's clients send s, ms, µs or ns), ISO-8601 dates and times
 * ("2026-11-27", "2026-11-27T10:00", "2026-11-27T10:00:00.5+01:00"; UTC where no
 * zone is written), the anchors "now", "today" and "yesterday" (midnight UTC)
 * with an optional signed offset ("now-1h30m", "today+9h"), and durations like
 * "10s", "1h30m" or a plain number of seconds. Every parser of times reads
 * through it: /ingest, the /api/ queries, `hearth query`, the scrape config's
 * intervals and the CLI's durations. The UI's web/js/timeparse.js mirrors it row
 * for row (tests/unit/data/times.tsv); only the UI reads a time without a zone,
 * and today/yesterday, in the browser's local time.
 */
#include "base.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define NS_PER_S   1000000000ll
#define NS_PER_DAY (86400 * NS_PER_S)

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
			 "invalid %s \"%.64s\" (want now, now-1h30m, today, yesterday+9h, "
			 "2026-11-27, 2026-11-27T10:00:00Z (UTC unless a zone is given, e.g. "
			 "+01:00), or a unix time in s, ms, us or ns; up to 2262-04-11)",
			 what, s);
	return -EINVAL;
}

/* Exactly n digits at *p into *out; *p moves past them. */
static bool fixed_digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++, (*p)++) {
		if (**p < '0' || **p > '9')
			return false;
		v = v * 10 + (**p - '0');
	}
	*out = v;
	return true;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar: count in
 * 400-year eras (146097 days each) of years that start in March, so that the
 * leap day is the last day of its year and month lengths follow 153/5. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : len[m - 1];
}

/* "Z", "+01:00", "-0530", "+01" (or nothing: UTC) into seconds east of UTC. */
static bool parse_zone(const char **p, int *east_s)
{
	int sign, h, m = 0;

	*east_s = 0;
	if (**p == 'Z') {
		(*p)++;
		return true;
	}
	if (**p != '+' && **p != '-')
		return true;
	sign = **p == '-' ? -1 : 1;
	(*p)++;
	if (!fixed_digits(p, 2, &h) || h > 23)
		return false;
	if (**p == ':')
		(*p)++; /* +01:00, else +0100 or +01 */
	if (((*p)[-1] == ':' || (**p >= '0' && **p <= '9')) && !fixed_digits(p, 2, &m))
		return false;
	if (m > 59)
		return false;
	*east_s = sign * (h * 3600 + m * 60);
	return true;
}

/* ".5", ".123456789" (1 to 9 digits) into ns; none: 0. */
static bool parse_fraction(const char **p, int64_t *ns)
{
	int64_t scale = NS_PER_S;
	int n = 0;

	*ns = 0;
	if (**p != '.')
		return true;
	for ((*p)++; **p >= '0' && **p <= '9'; (*p)++, n++) {
		if (n == 9)
			return false;
		scale /= 10;
		*ns += (**p - '0') * scale;
	}
	return n > 0;
}

/*
 * ISO-8601's extended form (RFC 3339 and its shorter cousins): YYYY-MM-DD, then
 * optionally [T or space]HH:MM[:SS[.fraction]][Z or ±HH[:MM]]. A date alone is
 * its midnight; no zone is UTC. Calendar fields are checked (no 2026-02-30,
 * no 24:00, no leap second); the instant must fit INT64 ns.
 */
static int parse_iso(const char *s, int64_t *out_ns)
{
	const char *p = s;
	int y, mo, d, h = 0, mi = 0, sec = 0, east = 0;
	int64_t frac = 0, t;

	if (!fixed_digits(&p, 4, &y) || *p++ != '-' || !fixed_digits(&p, 2, &mo) || *p++ != '-' ||
	    !fixed_digits(&p, 2, &d))
		return -EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
		return -EINVAL;
	if (*p == 'T' || *p == ' ') {
		p++;
		if (!fixed_digits(&p, 2, &h) || *p++ != ':' || !fixed_digits(&p, 2, &mi))
			return -EINVAL;
		if (*p == ':' && !(p++, fixed_digits(&p, 2, &sec) && parse_fraction(&p, &frac)))
			return -EINVAL;
		if (h > 23 || mi > 59 || sec > 59 || !parse_zone(&p, &east))
			return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - east;
	if (t < 0 && frac) { /* borrow a second, so the first instant of 1677 fits too */
		t += 1;
		frac -= NS_PER_S;
	}
	if (__builtin_mul_overflow(t, NS_PER_S, &t) || __builtin_add_overflow(t, frac, out_ns))
		return -EINVAL;
	return 0;
}

/* The anchor s starts with ("now", "today", "yesterday") as ns; *p past it. */
static bool parse_anchor(const char *s, int64_t now_ns, const char **p, int64_t *out_ns)
{
	int64_t day = now_ns / NS_PER_DAY - (now_ns % NS_PER_DAY < 0); /* floor */

	if (!strncmp(s, "now", 3)) {
		*p = s + 3;
		*out_ns = now_ns;
		return true;
	}
	if (!strncmp(s, "today", 5)) {
		*p = s + 5;
		return !__builtin_mul_overflow(day, NS_PER_DAY, out_ns);
	}
	if (!strncmp(s, "yesterday", 9)) {
		*p = s + 9;
		return !__builtin_mul_overflow(day - 1, NS_PER_DAY, out_ns);
	}
	return false;
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
	int64_t at, d;
	char sign;

	if (!s || !*s)
		return bad("time", "", err, errlen);
	if (s[0] >= '0' && s[0] <= '9') {
		if (!base_time_parse_unix(s, out_ns) || !parse_iso(s, out_ns))
			return 0;
		return bad("time", s, err, errlen);
	}
	if (!parse_anchor(s, now_ns, &p, &at))
		return bad("time", s, err, errlen);
	if (!*p) {
		*out_ns = at;
		return 0;
	}
	if (*p != '-' && *p != '+')
		return bad("time", s, err, errlen);
	sign = *p++;
	if (parse_terms(&p, &d) || *p ||
	    (sign == '-' ? __builtin_sub_overflow(at, d, out_ns)
			 : __builtin_add_overflow(at, d, out_ns)))
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
