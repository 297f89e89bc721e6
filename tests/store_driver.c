/*
 * A tiny driver of src/store for the crash test (tests/integration/
 * test_store_crash.sh): `ingest` appends profiles through the same decode +
 * append path as /ingest (pprof_encode → pprof_decode → store__append, fsync on)
 * and prints "ACK i" only after store__append returned 0; `verify` reopens the
 * store and checks that every acknowledged profile is there with its exact total.
 *
 *   store_driver ingest DIR START_S N     profile i at START_S + 10 i, i+1 samples
 *   store_driver verify DIR START_S N     exit 0 when profiles 0..N-1 are all there
 */
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
	struct profile *d = NULL;
	uint8_t *buf = NULL;
	size_t len;
	int e = pprof_encode(p, &buf, &len) ?: pprof_decode(buf, len, &d, err, errlen);

	if (!e)
		e = store__append(s, d, NULL, extra, 1, NULL, err, errlen);
	free(buf);
	profile__free(d);
	return e;
}

static int ingest(struct store *s, int64_t start, long n)
{
	char err[256];

	for (long i = 0; i < n; i++) {
		struct profile *p = make(start, i);
		int e = p ? append_wire(s, p, err, sizeof(err)) : -ENOMEM;

		profile__free(p);
		if (e) {
			fprintf(stderr, "append %ld: %s\n", i, err);
			return 1;
		}
		printf("ACK %ld\n", i);
		fflush(stdout);
	}
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

	if (argc != 5 || (strcmp(argv[1], "ingest") && strcmp(argv[1], "verify"))) {
		fprintf(stderr, "usage: store_driver ingest|verify DIR START_S N\n");
		return 2;
	}
	if (store__open(argv[2], NULL, &s, err, sizeof(err))) {
		fprintf(stderr, "open: %s\n", err);
		return 1;
	}
	if (argv[1][0] == 'i')
		rc = ingest(s, atoll(argv[3]), atol(argv[4]));
	else
		rc = verify(s, atoll(argv[3]), atol(argv[4]));
	store__close(s);
	return rc;
}
