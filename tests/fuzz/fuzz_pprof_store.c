/*
 * libFuzzer target for the pprof ingest path of /ingest:
 * pprof_decode_flat + store__append_flat, checked against the model's way in
 * (pprof_decode + store__append, which stores profile__to_flat of the model)
 * on a second store fed the same inputs in the same order: the model round
 * trip must not change what is stored. Any input must decode or fail cleanly, and every decoded one must
 * get the same answer from both stores: the same error, or the same rows,
 * samples and series. Never a crash, a leak or a UBSan report.
 */
#include "ingest/ingest.h"
#include "profile/profile.h"
#include "server/server.h"
#include "store/store.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct store *flat_store, *model_store;
static char root[] = "/tmp/hearth-fuzz-store-XXXXXX";
static int64_t next_t = 1700000000ll * 1000000000ll;

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void cleanup(void)
{
	store__close(flat_store);
	store__close(model_store);
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static struct store *open_store(const char *name)
{
	struct store_opts o = {.sample_labels = ingest_sample_labels, .no_fsync = true, .max_series = 1000};
	struct store *s = NULL;
	char dir[128], err[256];

	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	if (store__open(dir, &o, &s, err, sizeof(err)))
		abort();
	return s;
}

static void setup(void)
{
	if (flat_store)
		return;
	if (!mkdtemp(root))
		abort();
	flat_store = open_store("flat");
	model_store = open_store("model");
	atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store_label extra[] = {{"host", "fuzz"}};
	struct store_append_result rf = {0}, rm = {0};
	struct profile_flat *f = NULL;
	struct profile *p = NULL;
	char err[256];
	int ef, em;

	setup();
	/* as /ingest decodes it: on the server's budget for a body of this size */
	if (pprof_decode_flat_budget(data, size, server_memory_budget(size), &f, err, sizeof(err)))
		return 0; /* fuzz_pprof checks the decoder's answers */
	if (pprof_decode(data, size, &p, err, sizeof(err)))
		abort(); /* the same checks: the model path must decode it too */
	f->time_ns = next_t;
	f->duration_ns = 10000000000ll;
	profile__set_time(p, next_t, 10000000000ll);
	next_t += 10000000000ll;
	ef = store__append_flat(flat_store, f, NULL, extra, 1, &rf, err, sizeof(err));
	em = store__append(model_store, p, NULL, extra, 1, &rm, err, sizeof(err));
	if (ef != em || (!ef && memcmp(&rf, &rm, sizeof(rf)) != 0))
		abort();
	profile_flat__free(f);
	profile__free(p);
	return 0;
}
