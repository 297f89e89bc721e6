/*
 * ingest__store: the rules every stored profile follows, then the store's one
 * append path, through the storage interface (struct store_backend), so every
 * backend receives the same checked profiles. No decoding happens here:
 * producers hand over a flat profile (a decoded pprof, a parsed text format,
 * or the agent's model through profile__to_flat), the same for all of them.
 */
#include "ingest.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

const char *const ingest_sample_labels[INGEST_N_SAMPLE_LABELS + 1] = {
    "pid", "comm", "process", "exe", "container", "unit", NULL};
_Static_assert(sizeof((const char *[])INGEST_SAMPLE_LABELS) / sizeof(const char *) ==
		   INGEST_N_SAMPLE_LABELS,
	       "INGEST_N_SAMPLE_LABELS counts INGEST_SAMPLE_LABELS");

static void set_err(char *err, size_t errlen, const char *msg, long long a, long long b)
{
	if (err && errlen)
		snprintf(err, errlen, msg, a, b);
}

int64_t ingest_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int ingest_check_time(const char *what, int64_t t, int64_t now_ns, char *err, size_t errlen)
{
	time_t sec = (time_t)(t / 1000000000);
	char when[32] = "?";
	struct tm tm;
	int64_t ahead;

	if (t <= 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s time %lld ns is not after 1970-01-01", what,
				 (long long)t);
		return -ERANGE;
	}
	if (t <= now_ns || __builtin_sub_overflow(t, now_ns, &ahead) ||
	    ahead <= INGEST_MAX_CLOCK_SKEW_NS)
		return 0;
	if (gmtime_r(&sec, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (err && errlen)
		snprintf(err, errlen,
			 "%s time %s is %lld s ahead of this server's clock, over the allowed "
			 "clock skew of %lld s",
			 what, when, (long long)(ahead / 1000000000),
			 (long long)(INGEST_MAX_CLOCK_SKEW_NS / 1000000000));
	return -ERANGE;
}

/* -EDOM when a sample value is below 0 (a CPU profile counts up from 0, and
 * negative samples would make totals shrink or go negative). */
static int check_values(const struct profile_flat *f, char *err, size_t errlen)
{
	for (size_t i = 0; i < f->n_samples; i++)
		for (int k = 0; k < PROFILE_N_VALUES; k++)
			if (f->samples[i].values[k] < 0) {
				set_err(err, errlen, "sample %lld has a negative value (%lld)",
					(long long)i, (long long)f->samples[i].values[k]);
				return -EDOM;
			}
	return 0;
}

/* The request's range into the profile's time, then the rules of docs/api.md. */
static int check_profile(struct ingest_request *req, int64_t now_ns, char *err, size_t errlen)
{
	struct profile_flat *f = req->profile;
	int ret;

	if (req->has_range) {
		if (req->from_ns > req->until_ns) {
			set_err(err, errlen, "'from' (%lld) is after 'until' (%lld)",
				(long long)req->from_ns, (long long)req->until_ns);
			return -EINVAL;
		}
		f->time_ns = req->from_ns;
		f->duration_ns = req->until_ns - req->from_ns;
	}
	ret = ingest_check_time("profile", f->time_ns, now_ns, err, errlen)
		  ?: check_values(f, err, errlen);
	if (ret)
		return ret;
	if (f->duration_ns < 0)
		f->duration_ns = 0;
	if (f->duration_ns > INGEST_MAX_PROFILE_DURATION_NS)
		f->duration_ns = INGEST_MAX_PROFILE_DURATION_NS;
	return 0;
}

/*
 * Appends the profile with its __profile_type__ label (CONV16: every producer
 * may name its type as a label) as the store's profile type, which the store
 * keeps beside the labels, not as one of them; no such label: the store's CPU type.
 */
static int append_typed(struct store_backend *b, const struct ingest_request *req,
			struct store_append_result *res, char *err, size_t errlen)
{
	struct store_label labels[INGEST_MAX_LABELS];
	const char *type = NULL;
	size_t n = 0;

	for (size_t i = 0; i < req->n_labels; i++) {
		if (strcmp(req->labels[i].name, STORE_PROFILE_TYPE_LABEL) == 0)
			type = req->labels[i].value;
		else
			labels[n++] = req->labels[i];
	}
	return b->ops->append_flat(b, req->profile, type, labels, n, res, err, errlen);
}

int ingest__store(struct store_backend *b, struct ingest_request *req, int64_t now_ns,
		  struct store_append_result *res, char *err, size_t errlen)
{
	int ret;

	if (err && errlen)
		*err = 0;
	if (!b || !req->profile) {
		if (err && errlen)
			snprintf(err, errlen, "no %s given", b ? "profile" : "store");
		return -EINVAL;
	}
	if (req->n_labels > INGEST_MAX_LABELS) {
		set_err(err, errlen, "%lld labels given, over the limit of %lld",
			(long long)req->n_labels, INGEST_MAX_LABELS);
		return -E2BIG;
	}
	ret = check_profile(req, now_ns, err, errlen);
	if (ret)
		return ret;
	return append_typed(b, req, res, err, errlen);
}
