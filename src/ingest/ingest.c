/*
 * ingest__store: the rules every stored profile follows, then the store's one
 * append path, store__append_flat (struct store_ops: either backend), so every
 * backend receives the same checked profiles. No decoding happens here:
 * producers hand over a flat profile (a decoded pprof, a parsed text format,
 * or the agent's model through profile__to_flat), the same for all of them.
 */
#include "ingest.h"
#include "base/base.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const ingest_sample_labels[INGEST_N_SAMPLE_LABELS + 1] = {
    PROFILE_LABEL_PID,	     PROFILE_LABEL_COMM, PROFILE_LABEL_PROCESS, PROFILE_LABEL_EXE,
    PROFILE_LABEL_CONTAINER, PROFILE_LABEL_UNIT, INGEST_SERVICE_LABEL,	INGEST_REASON_LABEL,
    NULL};
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
	return base_clock_ns(CLOCK_REALTIME);
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

/* ---- default labels (ingest.h, INGEST_SERVICE_LABEL) ---- */

/* The labels of a request with the defaults filled in. */
struct defaults {
	struct store_label l[INGEST_MAX_LABELS + 1]; /* borrowed strings */
	size_t n;
	const char *type;
	bool per_sample; /* service_name from each sample (hearth's agent) */
	/* The relabelled flat profile when per_sample (arrays owned, the rest borrowed). */
	struct profile_flat f;
	char *str_buf;
	uint32_t *str_off;
	struct profile_flat_label *labels;
	struct profile_flat_sample *samples;
};

static void defaults_fini(struct defaults *d)
{
	free(d->str_buf);
	free(d->str_off);
	free(d->labels);
	free(d->samples);
}

static const char *label_of(const struct store_label *l, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(l[i].name, name))
			return l[i].value;
	return NULL;
}

/* Index of string s in f, or f->n_strings when it has none. */
static size_t find_string(const struct profile_flat *f, const char *s)
{
	for (size_t i = 0; i < f->n_strings; i++)
		if (!strcmp(profile_flat__str(f, i, NULL), s))
			return i;
	return f->n_strings;
}

/* The sample's string label named key (string index), or 0 (the empty string). */
static uint32_t sample_str(const struct profile_flat *f, const struct profile_flat_sample *smp,
			   size_t key)
{
	for (uint32_t i = 0; i < smp->n_labels; i++) {
		const struct profile_flat_label *l = &f->labels[smp->label_off + i];

		if (l->key == key && l->str)
			return l->str;
	}
	return 0;
}

/* d->f: f with the string INGEST_SERVICE_LABEL (added when missing). */
static int add_service_string(struct defaults *d, const struct profile_flat *f, size_t *key)
{
	size_t len = f->n_strings ? f->str_off[f->n_strings] : 0,
	       add = sizeof(INGEST_SERVICE_LABEL);

	*key = find_string(f, INGEST_SERVICE_LABEL);
	if (*key < f->n_strings)
		return 0;
	if (f->n_strings >= UINT32_MAX - 1 || len > UINT32_MAX - add)
		return -E2BIG;
	d->str_buf = malloc(len + add);
	d->str_off = malloc((f->n_strings + 2) * sizeof(*d->str_off));
	if (!d->str_buf || !d->str_off)
		return -ENOMEM;
	if (len)
		memcpy(d->str_buf, f->str_buf, len);
	memcpy(d->str_buf + len, INGEST_SERVICE_LABEL, add);
	if (f->n_strings)
		memcpy(d->str_off, f->str_off, (f->n_strings + 1) * sizeof(*d->str_off));
	else
		d->str_off[0] = 0;
	d->str_off[f->n_strings + 1] = (uint32_t)(len + add);
	d->f.str_buf = d->str_buf;
	d->f.str_off = d->str_off;
	d->f.n_strings = f->n_strings + 1;
	return 0;
}

/*
 * d->f: f whose samples carry INGEST_SERVICE_LABEL = their unit, else process,
 * else comm (samples with none of them, or with a service_name already, are
 * left as they are: the series label, the app name, applies).
 */
static int label_samples(struct defaults *d, const struct profile_flat *f)
{
	static const char *const from[] = {PROFILE_LABEL_UNIT, PROFILE_LABEL_PROCESS,
					   PROFILE_LABEL_COMM};
	size_t key, keys[3], at = 0;
	int ret;

	d->f = *f;
	if ((ret = add_service_string(d, f, &key)))
		return ret;
	for (size_t i = 0; i < 3; i++)
		keys[i] = find_string(f, from[i]);
	if (f->n_labels > SIZE_MAX / sizeof(*d->labels) - f->n_samples)
		return -E2BIG;
	d->labels = malloc((f->n_labels + f->n_samples + 1) * sizeof(*d->labels));
	d->samples = malloc((f->n_samples + 1) * sizeof(*d->samples));
	if (!d->labels || !d->samples)
		return -ENOMEM;
	for (size_t i = 0; i < f->n_samples; i++) {
		struct profile_flat_sample smp = f->samples[i];
		uint32_t v = 0;

		memcpy(d->labels + at, f->labels + smp.label_off,
		       smp.n_labels * sizeof(*d->labels));
		smp.label_off = (uint32_t)at;
		at += smp.n_labels;
		for (size_t k = 0; k < 3 && !v; k++)
			v = keys[k] < f->n_strings ? sample_str(f, &f->samples[i], keys[k]) : 0;
		if (v && (key >= f->n_strings || !sample_str(f, &f->samples[i], key))) {
			d->labels[at++] = (struct profile_flat_label){(uint32_t)key, v, 0};
			smp.n_labels++;
		}
		d->samples[i] = smp;
	}
	d->f.labels = d->labels;
	d->f.n_labels = at;
	d->f.samples = d->samples;
	return 0;
}

/* The request's labels without __profile_type__ (its value is the type), plus
 * service_name when missing; the agent's samples relabelled. */
static int fill_defaults(const struct ingest_request *req, struct defaults *d, char *err,
			 size_t errlen)
{
	const char *app = label_of(req->labels, req->n_labels, INGEST_NAME_LABEL);

	d->type = profile_flat__type(req->profile) ?: STORE_CPU_PROFILE_TYPE;
	for (size_t i = 0; i < req->n_labels; i++) {
		if (strcmp(req->labels[i].name, STORE_PROFILE_TYPE_LABEL)) {
			d->l[d->n++] = req->labels[i];
			continue;
		}
		if (!req->labels[i].value || !*req->labels[i].value) {
			if (err && errlen)
				snprintf(err, errlen, "label __profile_type__ is empty");
			return -EINVAL;
		}
		d->type = req->labels[i].value;
	}
	if (label_of(d->l, d->n, INGEST_SERVICE_LABEL))
		return 0;
	d->per_sample = !app || !strcmp(app, INGEST_AGENT_APP);
	d->l[d->n++] = (struct store_label){INGEST_SERVICE_LABEL, app ? app : "unknown_service"};
	return d->per_sample ? label_samples(d, req->profile) : 0;
}

int ingest__store(struct store *s, struct ingest_request *req, int64_t now_ns,
		  struct store_append_result *res, char *err, size_t errlen)
{
	struct defaults d = {0};
	int ret;

	if (err && errlen)
		*err = 0;
	if (!s || !req->profile) {
		if (err && errlen)
			snprintf(err, errlen, "no %s given", s ? "profile" : "store");
		return -EINVAL;
	}
	if (req->n_labels > INGEST_MAX_LABELS) {
		set_err(err, errlen, "%lld labels given, over the limit of %lld",
			(long long)req->n_labels, INGEST_MAX_LABELS);
		return -E2BIG;
	}
	ret = check_profile(req, now_ns, err, errlen) ?: fill_defaults(req, &d, err, errlen);
	if (ret == -ENOMEM || ret == -E2BIG)
		set_err(err, errlen, "no memory to relabel the profile's %lld samples",
			(long long)req->profile->n_samples, 0);
	if (!ret) /* d.f was copied after check_profile set the time in place */
		ret = store__append_flat(s, d.per_sample ? &d.f : req->profile, d.type, d.l, d.n,
					 res, err, errlen);
	defaults_fini(&d);
	return ret;
}
