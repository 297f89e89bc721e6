/*
 * A tiny driver of src/store for the crash test (tests/integration/
 * test_store_crash.sh): `ingest` appends profiles through the same decode +
 * append path as /ingest (pprof_encode → pprof_decode_flat → store__append_flat, fsync
 * on) and prints "ACK i" only after the append returned 0; `verify` reopens the
 * store and checks that every acknowledged profile is there with its exact total.
 *
 *   store_driver ingest DIR START_S N     profile i at START_S + 10 i, i+1 samples
 *   store_driver verify DIR START_S N     exit 0 when profiles 0..N-1 are all there
 *
 * `churn` is a long-lived host whose processes come and go, compressed: profile
 * i (pid i, its own function; i+1 samples) at START_S + 3600 i, each followed by
 * store__maintain (rollups, garbage collection, a retention of 1 h) under a limit
 * of CHURN_MAX_SERIES series, which only the garbage collection keeps it under.
 * `churn-verify` reopens after a kill -9: the last acknowledged profile is
 * there, no stored key names a lost id, the series are within the limit, and a
 * new process is accepted and read back.
 *
 *   store_driver churn DIR START_S N
 *   store_driver churn-verify DIR START_S ACKED
 */
#include "ingest/ingest.h"
#include "query/query.h"
#include "store/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S 1000000000LL

/* Profile i: i+1 samples of one stack unique to i (so a lost one is visible). */
static struct profile *make(int64_t start, long i)
{
	struct profile *p = profile__new(10000000);
	char name[32];

	if (!p)
		return NULL;
	snprintf(name, sizeof(name), "fn_%ld", i % 1000);
	profile__set_time(p, (start + 10 * i) * S, 10 * S);
	struct profile_line l = {profile__function(p, name, name, "x.c"), 1};
	uint64_t loc = profile__location(p, 0, 0x1000 + (uint64_t)(i % 1000), &l, 1);
	int64_t v[2] = {i + 1, (i + 1) * 10000000};
	struct profile_label lab[] = {{"process", "driver", 0}, {"pid", NULL, i % 7}};

	if (!loc || profile__add_sample(p, &loc, 1, v, lab, 2)) {
		profile__free(p);
		return NULL;
	}
	return p;
}

/* Through the wire format, as /ingest sees it. */
static int append_wire(struct store *s, const struct profile *p, char *err, size_t errlen)
{
	struct store_label extra[] = {{"host", "crash-test"}};
	struct profile_flat *d = NULL;
	uint8_t *buf = NULL;
	size_t len;
	int e = pprof_encode(p, &buf, &len) ?: pprof_decode_flat(buf, len, &d, err, errlen);

	if (!e)
		e = store__append_flat(s, d, NULL, extra, 1, NULL, err, errlen);
	free(buf);
	profile_flat__free(d);
	return e;
}

/* Appends profiles 0..n-1 made by `make`, printing "ACK i" after each one the store
 * took; with `maintain`, runs maintenance (retention, GC) at each profile's hour. */
static int append_all(struct store *s, int64_t start, long n,
		      struct profile *(*make_one)(int64_t, long), bool maintain)
{
	char err[256];

	for (long i = 0; i < n; i++) {
		struct profile *p = make_one(start, i);
		int e = p ? append_wire(s, p, err, sizeof(err)) : -ENOMEM;

		profile__free(p);
		if (e) {
			fprintf(stderr, "append %ld: %s\n", i, err);
			return 1;
		}
		printf("ACK %ld\n", i);
		fflush(stdout);
		e = maintain ? store__maintain(s, (start + 3600 * i + 1) * S, NULL) : 0;
		if (e) {
			fprintf(stderr, "maintain after %ld: %s\n", i, strerror(-e));
			return 1;
		}
	}
	return 0;
}

#define CHURN_MAX_SERIES 20

static const struct store_opts ingest_opts = {.sample_labels = ingest_sample_labels};
static const struct store_opts churn_opts = {.sample_labels = ingest_sample_labels, .retention_ns = 3600 * S,
					     .max_series = CHURN_MAX_SERIES};

/* Profile i of the churn: one process, pid i, a function of its own. */
static struct profile *make_churn(int64_t start, long i)
{
	struct profile *p = profile__new(10000000);
	char name[32];

	if (!p)
		return NULL;
	snprintf(name, sizeof(name), "proc_fn_%ld", i);
	profile__set_time(p, (start + 3600 * i) * S, 10 * S);
	struct profile_line l = {profile__function(p, name, name, "churn.c"), 1};
	uint64_t loc = profile__location(p, 0, 0x1000 + (uint64_t)i, &l, 1);
	int64_t v[2] = {i + 1, (i + 1) * 10000000};
	struct profile_label lab[] = {{"process", "churn", 0}, {"pid", NULL, i}};

	if (!loc || profile__add_sample(p, &loc, 1, v, lab, 2)) {
		profile__free(p);
		return NULL;
	}
	return p;
}

/* Total samples of pid's process in the hour of profile i. */
static int64_t churn_total(struct store *s, int64_t start, long i, long pid)
{
	char sel[64], err[256];
	struct query_request q = {.query = sel,
				  .from_ns = (start + 3600 * i) * S,
				  .until_ns = (start + 3600 * i + 10) * S};
	struct profile *p = NULL;
	int64_t t;

	snprintf(sel, sizeof(sel), "{pid=\"%ld\"}", pid);
	if (query_profile(s, &q, &p, err, sizeof(err))) {
		fprintf(stderr, "query %ld: %s\n", i, err);
		return -1;
	}
	t = profile__total(p, 0);
	profile__free(p);
	return t;
}

static int churn_verify(struct store *s, int64_t start, long acked)
{
	struct store_stats st;
	struct profile *p = NULL;
	char err[256];
	long last = acked - 1, fresh = acked + 1;
	int64_t t;
	int e;

	if ((t = churn_total(s, start, last, last)) != last + 1) {
		fprintf(stderr, "profile %ld: total %lld, want %ld\n", last, (long long)t,
			last + 1);
		return 1;
	}
	store__stats(s, &st);
	if (st.series > CHURN_MAX_SERIES) {
		fprintf(stderr, "%llu series, over the limit\n", (unsigned long long)st.series);
		return 1;
	}
	/* a new process an hour later: accepted, and read back */
	p = make_churn(start, fresh);
	e = p ? append_wire(s, p, err, sizeof(err)) : -ENOMEM;
	profile__free(p);
	if (e) {
		fprintf(stderr, "new process after %ld profiles: %s\n", acked, err);
		return 1;
	}
	if ((t = churn_total(s, start, fresh, fresh)) != fresh + 1) {
		fprintf(stderr, "new process: total %lld, want %ld\n", (long long)t, fresh + 1);
		return 1;
	}
	printf("churn verified: %ld acknowledged, %llu live series\n", acked,
	       (unsigned long long)st.series);
	return 0;
}

static int verify(struct store *s, int64_t start, long n)
{
	char err[256];
	int bad = 0;

	for (long i = 0; i < n; i++) {
		struct query_request q = {.query = "{host=\"crash-test\"}",
					  .from_ns = (start + 10 * i) * S,
					  .until_ns = (start + 10 * i) * S + 1};
		struct profile *p = NULL;

		if (query_profile(s, &q, &p, err, sizeof(err))) {
			fprintf(stderr, "query %ld: %s\n", i, err);
			return 1;
		}
		if (profile__total(p, 0) != i + 1) {
			fprintf(stderr, "profile %ld: total %lld, want %ld\n", i,
				(long long)profile__total(p, 0), i + 1);
			bad++;
		}
		profile__free(p);
	}
	printf("verified %ld profiles, %d missing or wrong\n", n, bad);
	return bad != 0;
}

int main(int argc, char **argv)
{
	struct store *s = NULL;
	char err[256];
	int rc;

	bool is_churn = argc == 5 && !strncmp(argv[1], "churn", 5);

	if (argc != 5 || (strcmp(argv[1], "ingest") && strcmp(argv[1], "verify") &&
			  strcmp(argv[1], "churn") && strcmp(argv[1], "churn-verify"))) {
		fprintf(stderr,
			"usage: store_driver ingest|verify|churn|churn-verify DIR START_S N\n");
		return 2;
	}
	if (store__open(argv[2], is_churn ? &churn_opts : &ingest_opts, &s, err, sizeof(err))) {
		fprintf(stderr, "open: %s\n", err);
		return 1;
	}
	if (!strcmp(argv[1], "ingest"))
		rc = append_all(s, atoll(argv[3]), atol(argv[4]), make, false);
	else if (!strcmp(argv[1], "verify"))
		rc = verify(s, atoll(argv[3]), atol(argv[4]));
	else if (!strcmp(argv[1], "churn"))
		rc = append_all(s, atoll(argv[3]), atol(argv[4]), make_churn, true);
	else
		rc = churn_verify(s, atoll(argv[3]), atol(argv[4]));
	store__close(s);
	return rc;
}
