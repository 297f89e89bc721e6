/*
 * The scraper: one thread per target, each asleep on a condition variable
 * (CLOCK_MONOTONIC) until its next scrape, so an idle scraper causes no
 * wakeups; a stop broadcast wakes them all, and a transfer in flight (the CPU
 * profile holds its request for most of the interval) is aborted through
 * libcurl's progress callback, which polls the stop flag about once a second.
 *
 * A scrape fetches each enabled profile of the target, decodes it once per
 * sample type (a flat profile holds one value per sample; the first
 * SCRAPE_MAX_SAMPLE_TYPES of them) and stores each as its own series through
 * ingest__store. Decodes take one of SCRAPE_MAX_DECODES process-wide slots and
 * stay within /ingest's memory budget for the body's size. What went wrong is kept per target
 * (health, last error) and counted per reason; a failed profile never stops the
 * target's other profiles, nor the next scrape.
 */
#include "scrape_impl.h"
#include "base/base.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Why a profile fetch failed: one counter each (hearth_scrape_failures_total). */
enum scrape_reason {
	REASON_CONNECT,	    /* refused, unreachable, name not resolved */
	REASON_TIMEOUT,	    /* no whole answer within the timeout */
	REASON_HTTP_STATUS, /* an answer other than 200 */
	REASON_TOO_LARGE,   /* a body over SCRAPE_MAX_BODY */
	REASON_DECODE,	    /* the body is not a pprof profile */
	REASON_STORE,	    /* the store refused it (e.g. the series limit) */
	REASON_OTHER,	    /* any other transfer error */
	REASON_N,
};
static const char *const reason_names[REASON_N] = {"connect", "timeout", "http_status", "too_large",
						   "decode",  "store",	 "other"};

enum health { HEALTH_UNKNOWN, HEALTH_UP, HEALTH_DOWN };
static const char *const health_names[] = {"unknown", "up", "down"};

/* The profile type of every scraped CPU profile (CONV16). */
#define SCRAPE_CPU_TYPE "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

struct target {
	struct scrape *s;
	const struct scrape_job_cfg *job;    /* borrowed from s->cfg */
	const struct scrape_target_cfg *cfg; /* borrowed from s->cfg */
	pthread_t thread;
	bool started;
	/* under s->lock: */
	enum health health;
	int64_t last_scrape_ns; /* realtime start of the last scrape; 0: none yet */
	int64_t last_duration_ns;
	char last_error[512];
	uint64_t scrapes, failures[REASON_N];
	uint64_t dropped_types;		  /* sample types past SCRAPE_MAX_SAMPLE_TYPES */
	bool types_logged[SCRAPE_N_KINDS]; /* the drop was logged for this profile */
};

struct scrape {
	struct scrape_config *cfg; /* owned */
	struct store *st;	   /* borrowed */
	size_t n;
	struct target *t;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* CLOCK_MONOTONIC: stop, or a target's next scrape */
	bool stop;	     /* under lock; read without it (atomically) by transfers */
};

/* snprintf that may cut (messages are bounded; gcc's truncation check is not
 * wanted there). */
__attribute__((format(printf, 3, 4))) static void say(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
}

/* ---- one HTTP GET ---- */

struct body {
	uint8_t *p;
	size_t n, cap;
	bool too_large;
};

static size_t on_data(char *data, size_t size, size_t n, void *ctx)
{
	struct body *b = ctx;
	size_t len = size * n;

	if (len > SCRAPE_MAX_BODY - b->n) {
		b->too_large = true;
		return 0; /* aborts the transfer */
	}
	if (b->n + len > b->cap && base_grow((void **)&b->p, &b->cap, b->n + len, 1))
		return 0;
	memcpy(b->p + b->n, data, len);
	b->n += len;
	return len;
}

static int on_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct scrape *s = ctx;

	(void)a, (void)b, (void)c, (void)d;
	return __atomic_load_n(&s->stop, __ATOMIC_RELAXED); /* non-zero aborts */
}

/* GETs url into body; -1 on success, else a reason with msg set. */
static int fetch(struct target *t, const char *url, long timeout_ms, struct body *body, char *msg,
		 size_t msglen)
{
	CURL *c = curl_easy_init();
	long status = 0;
	CURLcode rc;

	if (!c) {
		say(msg, msglen, "GET %s: out of memory", url);
		return REASON_OTHER;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for DNS timeouts */
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, t->s);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "hearth-scrape");
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	if (body->too_large) {
		say(msg, msglen, "GET %s: the answer is larger than %u MiB", url,
		    SCRAPE_MAX_BODY >> 20);
		return REASON_TOO_LARGE;
	}
	if (rc != CURLE_OK) {
		say(msg, msglen, "GET %s: %s", url, curl_easy_strerror(rc));
		if (rc == CURLE_OPERATION_TIMEDOUT)
			return REASON_TIMEOUT;
		if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
			return REASON_CONNECT;
		return REASON_OTHER;
	}
	if (status != 200) {
		say(msg, msglen, "GET %s: HTTP status %ld", url, status);
		return REASON_HTTP_STATUS;
	}
	return -1;
}

/* ---- one profile into the store ---- */

/* The decode slots (SCRAPE_MAX_DECODES), shared by every target of the process. */
static pthread_mutex_t decode_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t decode_free = PTHREAD_COND_INITIALIZER;
static int decodes_running;

/* Waits for a decode slot. No stop check: a decode is bounded (budget, body). */
static void decode_slot_get(void)
{
	pthread_mutex_lock(&decode_lock);
	while (decodes_running >= SCRAPE_MAX_DECODES)
		pthread_cond_wait(&decode_free, &decode_lock);
	decodes_running++;
	pthread_mutex_unlock(&decode_lock);
}

static void decode_slot_put(void)
{
	pthread_mutex_lock(&decode_lock);
	decodes_running--;
	pthread_cond_signal(&decode_free);
	pthread_mutex_unlock(&decode_lock);
}

/* The memory budget of decoding a body of len bytes (SCRAPE_MEM_BASE). */
static size_t decode_budget(size_t len)
{
	if (len > (SCRAPE_MEM_MAX - SCRAPE_MEM_BASE) / SCRAPE_MEM_PER_BODY_BYTE)
		return SCRAPE_MEM_MAX;
	return SCRAPE_MEM_BASE + len * SCRAPE_MEM_PER_BODY_BYTE;
}

/* A profile type field from the pprof's strings: "unknown" when empty or when it
 * would break the ':'-separated ID. */
static const char *type_field(const struct profile_flat *f, uint32_t sid)
{
	const char *v = sid < f->n_strings ? profile_flat__str(f, sid, NULL) : "";

	return *v && !strchr(v, ':') && strlen(v) < PROFILE_TYPE_FIELD_MAX ? v : "unknown";
}

/* NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT of sample type k of f. */
static void type_id(enum scrape_kind kind, const struct profile_flat *f, size_t k, char *out,
		    size_t len)
{
	struct profile_flat_value_type st = f->sample_types[k], pt = f->period_type;

	if (!pt.type && !pt.unit)
		pt = st; /* no period type: the sample type stands for it */
	snprintf(out, len, "%s:%s:%s:%s:%s", scrape_kind_name(kind), type_field(f, st.type),
		 type_field(f, st.unit), type_field(f, pt.type), type_field(f, pt.unit));
}

/* Stores f under the target's labels plus __profile_type__ = type. */
static int store_one(struct target *t, struct profile_flat *f, const char *type, int64_t start_ns,
		     char *msg, size_t msglen)
{
	struct store_label labels[SCRAPE_MAX_LABELS + 4];
	struct ingest_request req = {.labels = labels, .profile = f};
	bool has_service = false;
	size_t n = 0;
	char err[256];
	int e;

	labels[n++] = (struct store_label){"job", t->job->name};
	labels[n++] = (struct store_label){"instance", t->cfg->address};
	for (size_t i = 0; i < t->cfg->n_labels; i++) {
		labels[n++] = (struct store_label){t->cfg->labels[i].name, t->cfg->labels[i].value};
		has_service |= !strcmp(t->cfg->labels[i].name, INGEST_SERVICE_LABEL);
	}
	if (!has_service) /* CONV16: a scrape's service is its job */
		labels[n++] = (struct store_label){INGEST_SERVICE_LABEL, t->job->name};
	labels[n++] = (struct store_label){STORE_PROFILE_TYPE_LABEL, type};
	req.n_labels = n;
	if (f->time_ns <= 0)
		f->time_ns = start_ns; /* a snapshot without a time: when it was fetched */
	e = ingest__store(t->s->st, &req, ingest_now_ns(), NULL, err, sizeof(err));
	if (e)
		say(msg, msglen, "storing %s: %s", type, err);
	return e;
}

/* Counts the sample types of a profile past SCRAPE_MAX_SAMPLE_TYPES and, the first
 * time for this target and profile, logs how many and which were kept. */
static void note_dropped(struct target *t, enum scrape_kind kind, const char *url, size_t n_types,
			 const char *kept)
{
	bool first;

	pthread_mutex_lock(&t->s->lock);
	t->dropped_types += n_types - SCRAPE_MAX_SAMPLE_TYPES;
	first = !t->types_logged[kind];
	t->types_logged[kind] = true;
	pthread_mutex_unlock(&t->s->lock);
	if (first)
		fprintf(stderr,
			"hearth scrape: job %s instance %s: GET %s has %zu sample types; kept "
			"the first %d (%s), the rest counted in "
			"hearth_scrape_dropped_sample_types_total\n",
			t->job->name, t->cfg->address, url, n_types, SCRAPE_MAX_SAMPLE_TYPES, kept);
}

/* Decodes sample type k (-1: CPU's samples and time) of body into *f, in a decode
 * slot and within the budget. 0 or -errno with err set. */
static int decode_one(const struct body *body, int k, struct profile_flat **f, char *err,
		      size_t errlen)
{
	int e;

	decode_slot_get();
	e = pprof_decode_flat_value(body->p, body->n, decode_budget(body->n), k, f, err, errlen);
	decode_slot_put();
	return e;
}

/* Decodes and stores one fetched profile: -1, or a reason with msg set. */
static int store_profile(struct target *t, enum scrape_kind kind, const struct body *body,
			 int64_t start_ns, const char *url, char *msg, size_t msglen)
{
	struct profile_flat *f = NULL;
	char err[256], type[PROFILE_TYPE_FIELDS * PROFILE_TYPE_FIELD_MAX], kept[512] = "";
	size_t n_types = 1, n_kept = 1, kl = 0;
	int e = 0;

	for (size_t k = 0; k < n_kept && !e; k++) {
		e = decode_one(body, kind == SCRAPE_CPU ? -1 : (int)k, &f, err, sizeof(err));
		if (e) {
			say(msg, msglen, "GET %s: not a pprof profile: %s", url, err);
			return REASON_DECODE;
		}
		if (kind == SCRAPE_CPU) {
			snprintf(type, sizeof(type), "%s", SCRAPE_CPU_TYPE);
		} else {
			n_types = f->n_sample_types;
			n_kept = n_types < SCRAPE_MAX_SAMPLE_TYPES ? n_types : SCRAPE_MAX_SAMPLE_TYPES;
			type_id(kind, f, k, type, sizeof(type));
			if (kl < sizeof(kept))
				kl += (size_t)snprintf(kept + kl, sizeof(kept) - kl, "%s%s",
						       k ? ", " : "",
						       type_field(f, f->sample_types[k].type));
		}
		e = store_one(t, f, type, start_ns, msg, msglen);
		profile_flat__free(f);
	}
	if (!e && n_types > SCRAPE_MAX_SAMPLE_TYPES)
		note_dropped(t, kind, url, n_types, kept);
	return e ? REASON_STORE : -1;
}

/* ---- the scrape loop ---- */

/* Seconds of CPU profile a scrape asks for: the interval less 1 s, so that the
 * other profiles fit in it too (at least 1 s). */
static long cpu_seconds(const struct scrape_job_cfg *j)
{
	long s = (long)(j->interval_ns / 1000000000) - 1;

	return s < 1 ? 1 : s;
}

/* Fetches and stores one profile of t: -1, or the reason it failed (msg set). */
static int scrape_kind(struct target *t, enum scrape_kind kind, char *msg, size_t msglen)
{
	const struct scrape_job_cfg *j = t->job;
	const char *path = j->prof[kind].path;
	long timeout_ms = (long)(j->timeout_ns / 1000000);
	int64_t start_ns = ingest_now_ns();
	struct body body = {0};
	char url[1024];
	int r;

	if (kind == SCRAPE_CPU) {
		snprintf(url, sizeof(url), "%s://%s%s%cseconds=%ld", j->scheme, t->cfg->address,
			 path, strchr(path, '?') ? '&' : '?', cpu_seconds(j));
		timeout_ms += cpu_seconds(j) * 1000; /* the answer comes after the profile */
	} else {
		snprintf(url, sizeof(url), "%s://%s%s", j->scheme, t->cfg->address, path);
	}
	r = fetch(t, url, timeout_ms, &body, msg, msglen);
	if (r < 0)
		r = store_profile(t, kind, &body, start_ns, url, msg, msglen);
	free(body.p);
	return r;
}

static void scrape_once(struct target *t)
{
	struct scrape *s = t->s;
	int64_t t0 = ingest_now_ns(), m0 = base_clock_ns(CLOCK_MONOTONIC);
	char msg[512] = "", last[512] = "";
	int reasons[SCRAPE_N_KINDS], n_failed = 0;

	for (int k = 0; k < SCRAPE_N_KINDS; k++) {
		reasons[k] = -1;
		if (!t->job->prof[k].enabled || __atomic_load_n(&s->stop, __ATOMIC_RELAXED))
			continue;
		reasons[k] = scrape_kind(t, (enum scrape_kind)k, msg, sizeof(msg));
		if (reasons[k] >= 0) {
			n_failed++;
			say(last, sizeof(last), "%s: %s", scrape_kind_name(k), msg);
		}
	}
	pthread_mutex_lock(&s->lock);
	if (!s->stop) { /* an aborted transfer is not the target's fault */
		t->scrapes++;
		for (int k = 0; k < SCRAPE_N_KINDS; k++)
			if (reasons[k] >= 0)
				t->failures[reasons[k]]++;
		t->health = n_failed ? HEALTH_DOWN : HEALTH_UP;
		t->last_scrape_ns = t0;
		t->last_duration_ns = base_clock_ns(CLOCK_MONOTONIC) - m0;
		say(t->last_error, sizeof(t->last_error), "%s", last);
	}
	pthread_mutex_unlock(&s->lock);
}

static void *target_main(void *arg)
{
	struct target *t = arg;
	struct scrape *s = t->s;
	int64_t next = base_clock_ns(CLOCK_MONOTONIC);

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		struct timespec ts;
		int64_t now;

		pthread_mutex_unlock(&s->lock);
		scrape_once(t);
		pthread_mutex_lock(&s->lock);
		now = base_clock_ns(CLOCK_MONOTONIC);
		next += t->job->interval_ns;
		if (next < now) /* the scrape took longer than the interval: start again now */
			next = now;
		ts = base_ns_timespec(next);
		while (!s->stop && base_clock_ns(CLOCK_MONOTONIC) < next)
			pthread_cond_timedwait(&s->wake, &s->lock, &ts);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int scrape__new(struct scrape_config *cfg, struct store *st, struct scrape **out, char *err,
		size_t errlen)
{
	struct scrape *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	size_t n = scrape_config__n_targets(cfg), i = 0;

	*out = NULL;
	if (!s || !(s->t = calloc(n ? n : 1, sizeof(*s->t)))) {
		free(s);
		scrape_config__free(cfg);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->cfg = cfg;
	s->st = st;
	s->n = n;
	for (size_t j = 0; j < cfg->n_jobs; j++)
		for (size_t k = 0; k < cfg->jobs[j].n_targets; k++, i++)
			s->t[i] = (struct target){
			    .s = s, .job = &cfg->jobs[j], .cfg = &cfg->jobs[j].targets[k]};
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (base_curl_init()) { /* before any thread of ours uses curl */
		scrape__free(s);
		snprintf(err, errlen, "libcurl could not initialise");
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

int scrape__start(struct scrape *s, char *err, size_t errlen)
{
	for (size_t i = 0; i < s->n; i++) {
		int e = pthread_create(&s->t[i].thread, NULL, target_main, &s->t[i]);

		if (e) {
			snprintf(err, errlen, "cannot start a scrape thread for %s: %s",
				 s->t[i].cfg->address, strerror(e));
			return -e;
		}
		s->t[i].started = true;
	}
	return 0;
}

size_t scrape__n_targets(const struct scrape *s)
{
	return s ? s->n : 0;
}

void scrape__free(struct scrape *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	__atomic_store_n(&s->stop, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&s->wake);
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < s->n; i++)
		if (s->t[i].started)
			pthread_join(s->t[i].thread, NULL);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s->t);
	scrape_config__free(s->cfg);
	free(s);
}

/* ---- /api/targets and /metrics ---- */

static void json_time(FILE *out, int64_t ns)
{
	time_t sec = (time_t)(ns / 1000000000);
	struct tm tm;
	char buf[40];

	if (!ns || !gmtime_r(&sec, &tm)) {
		fputs("null", out);
		return;
	}
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(out, "\"%s.%03dZ\"", buf, (int)(ns / 1000000 % 1000));
}

static void target_json(const struct target *t, FILE *out)
{
	const struct scrape_job_cfg *j = t->job;
	uint64_t failures = 0;

	fputs("{\"job\":", out);
	base_json_string(out, j->name);
	fputs(",\"instance\":", out);
	base_json_string(out, t->cfg->address);
	fprintf(out, ",\"scrapeUrl\":\"%s://", j->scheme);
	fputs(t->cfg->address, out); /* checked: no quote or backslash (target_ok) */
	fputs("\",\"labels\":{", out);
	for (size_t i = 0; i < t->cfg->n_labels; i++) {
		if (i)
			fputc(',', out);
		base_json_string(out, t->cfg->labels[i].name);
		fputc(':', out);
		base_json_string(out, t->cfg->labels[i].value);
	}
	fputs("},\"profiles\":[", out);
	for (int k = 0, n = 0; k < SCRAPE_N_KINDS; k++) {
		if (!j->prof[k].enabled)
			continue;
		fprintf(out, "%s{\"name\":\"%s\",\"path\":", n++ ? "," : "", scrape_kind_name(k));
		base_json_string(out, j->prof[k].path);
		fputc('}', out);
	}
	fprintf(out, "],\"health\":\"%s\",\"lastScrape\":", health_names[t->health]);
	json_time(out, t->last_scrape_ns);
	fprintf(out, ",\"lastScrapeDurationMs\":%lld,\"lastError\":",
		(long long)(t->last_duration_ns / 1000000));
	base_json_string(out, t->last_error);
	for (int r = 0; r < REASON_N; r++)
		failures += t->failures[r];
	fprintf(out, ",\"intervalMs\":%lld,\"scrapes\":%llu,\"failures\":%llu}",
		(long long)(j->interval_ns / 1000000), (unsigned long long)t->scrapes,
		(unsigned long long)failures);
}

void scrape__targets_json(struct scrape *s, FILE *out)
{
	fputs("{\"activeTargets\":[", out);
	if (s) {
		pthread_mutex_lock(&s->lock);
		for (size_t i = 0; i < s->n; i++) {
			if (i)
				fputs(",\n", out);
			target_json(&s->t[i], out);
		}
		pthread_mutex_unlock(&s->lock);
	}
	fputs("]}\n", out);
}

/* A Prometheus label value: \ " and newline escaped. */
static void prom_value(FILE *out, const char *v)
{
	fputc('"', out);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', out);
		if (*v == '\n')
			fputs("\\n", out);
		else
			fputc(*v, out);
	}
	fputc('"', out);
}

static void prom_target(FILE *out, const struct target *t)
{
	fputs("{job=", out);
	prom_value(out, t->job->name);
	fputs(",instance=", out);
	prom_value(out, t->cfg->address);
}

void scrape__metrics(struct scrape *s, FILE *out)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	fputs("# HELP hearth_scrapes_total Scrapes of each target (all its profiles).\n"
	      "# TYPE hearth_scrapes_total counter\n",
	      out);
	for (size_t i = 0; i < s->n; i++) {
		fputs("hearth_scrapes_total", out);
		prom_target(out, &s->t[i]);
		fprintf(out, "} %llu\n", (unsigned long long)s->t[i].scrapes);
	}
	fputs("# HELP hearth_scrape_failures_total Profile fetches that failed, by reason.\n"
	      "# TYPE hearth_scrape_failures_total counter\n",
	      out);
	for (size_t i = 0; i < s->n; i++)
		for (int r = 0; r < REASON_N; r++) {
			fputs("hearth_scrape_failures_total", out);
			prom_target(out, &s->t[i]);
			fprintf(out, ",reason=\"%s\"} %llu\n", reason_names[r],
				(unsigned long long)s->t[i].failures[r]);
		}
	fprintf(out,
		"# HELP hearth_scrape_dropped_sample_types_total Sample types of scraped "
		"profiles not stored (past the first %d of a profile).\n"
		"# TYPE hearth_scrape_dropped_sample_types_total counter\n",
		SCRAPE_MAX_SAMPLE_TYPES);
	for (size_t i = 0; i < s->n; i++) {
		fputs("hearth_scrape_dropped_sample_types_total", out);
		prom_target(out, &s->t[i]);
		fprintf(out, "} %llu\n", (unsigned long long)s->t[i].dropped_types);
	}
	fputs("# HELP hearth_scrape_target_up Whether the last scrape of a target succeeded.\n"
	      "# TYPE hearth_scrape_target_up gauge\n",
	      out);
	for (size_t i = 0; i < s->n; i++) {
		fputs("hearth_scrape_target_up", out);
		prom_target(out, &s->t[i]);
		fprintf(out, "} %d\n", s->t[i].health == HEALTH_UP);
	}
	pthread_mutex_unlock(&s->lock);
}
