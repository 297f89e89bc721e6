/*
 * libFuzzer target for the label-matcher regex engine (regex.c), directly and
 * through the selector parser. Input: PATTERN, then optionally a NUL and a
 * VALUE (at most FUZZ_REGEX_MAX_VALUE bytes). Any pattern must compile or be
 * refused with a message; a compiled one stays within QUERY_REGEX_MAX_PROG
 * and matches the value the same way through both paths.
 *
 * Time budget: compile and match are linear, so one input's CPU time must stay
 * under FUZZ_REGEX_BASE_MS plus FUZZ_REGEX_NS_PER_STEP for each (program
 * instruction x value rune) it matched: about ten times what the instrumented
 * build takes (~70 ns a step), whatever the machine's load (CPU time, not wall
 * time). More means a super-linear path, reported as a crash with the input.
 * libFuzzer's -timeout (fuzz_regex.timeout) catches a hang that never returns.
 */
#include "query/query.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FUZZ_REGEX_BASE_MS     50.0
#define FUZZ_REGEX_NS_PER_STEP 1000.0
#define FUZZ_REGEX_MAX_VALUE   256 /* bytes: the value */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The selector {v=~`pattern`} matched against value: 1, 0, or -1 when the
 * selector cannot carry the pattern or refused it. */
static int via_selector(const char *pattern, const char *value)
{
	struct store_label labels[] = {{"v", value}};
	struct store_series ser = {1, STORE_CPU_PROFILE_TYPE, 1, labels};
	struct query_selector *sel = NULL;
	char err[256], *q = NULL;
	int r = -1;

	if (strchr(pattern, '`') || asprintf(&q, "{v=~`%s`}", pattern) < 0)
		return -1;
	if (query_selector__parse(q, &sel, err, sizeof(err)) == 0)
		r = query_selector__match(sel, &ser);
	query_selector__free(sel);
	free(q);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *fixed[] = {"", "a", "nginx", "foo\nbar",
				      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaQ"};
	const uint8_t *nul = memchr(data, 0, size);
	size_t plen = nul ? (size_t)(nul - data) : size, vlen = nul ? size - plen - 1 : 0;
	struct query_regex *re = NULL;
	char *pat, *val, err[256] = "";
	double t0 = now_ms(), ms, steps = 0, budget;
	int e;

	if (plen > QUERY_MAX_REGEX_LEN + 16 || vlen > FUZZ_REGEX_MAX_VALUE)
		return 0;
	pat = strndup((const char *)data, plen);
	val = nul ? strndup((const char *)nul + 1, vlen) : NULL;
	if (!pat || (nul && !val))
		goto out;
	e = query_regex__compile(pat, &re, err, sizeof(err));
	if (e == 0) {
		if (query_regex__size(re) > QUERY_REGEX_MAX_PROG)
			abort();
		for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]) + 1; i++) {
			const char *v = i < sizeof(fixed) / sizeof(fixed[0]) ? fixed[i] : val;
			bool m;
			int s;

			if (!v)
				continue;
			m = query_regex__match(re, v, strlen(v));
			s = via_selector(pat, v);
			steps += 2.0 * (double)query_regex__size(re) * (double)(strlen(v) + 1);
			if (s >= 0 && s != m)
				abort(); /* the selector matched otherwise than the regex */
		}
	} else if ((e != -EINVAL && e != -ENOMEM) || !err[0] || re) {
		abort();
	}
	ms = now_ms() - t0;
	budget = FUZZ_REGEX_BASE_MS + steps * FUZZ_REGEX_NS_PER_STEP / 1e6;
	if (ms > budget) {
		fprintf(stderr, "fuzz_regex: one input took %.0f ms of CPU (budget %.0f ms): %s\n",
			ms, budget, pat);
		abort();
	}
out:
	query_regex__free(re);
	free(pat);
	free(val);
	return 0;
}
