/*
 * libFuzzer target for pprof_decode, the parser of pprof files and HTTP pushes:
 * any input must decode or fail with -EINVAL/-EFBIG and a reason, never crash,
 * leak or trip UBSan. A decoded profile is encoded again and decoded once more,
 * which must succeed: the encoder has to accept everything the decoder builds.
 * The flat decoder /ingest uses runs first on the server's budget for a body of
 * this size (server_memory_budget), which fuzz_pprof.limits holds libFuzzer to.
 */
#include "profile/profile.h"
#include "server/server.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = NULL, *again = NULL;
	struct profile_flat *f = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	char err[256];
	int r;

	/* /ingest's decoder, on the server's budget for a body of this size: it must
	 * answer within it (the limits file holds libFuzzer to that budget) */
	r = pprof_decode_flat_budget(data, size, server_memory_budget(size), &f, err, sizeof(err));
	if (r && ((r != -EINVAL && r != -EFBIG && r != -ENOMEM) || !err[0] || f))
		abort();
	profile_flat__free(f);
	/* the model decoder (files, the CLI): bounded by PPROF_MAX_INFLATED and the input */
	r = pprof_decode(data, size, &p, err, sizeof(err));
	if (r) {
		if ((r != -EINVAL && r != -EFBIG && r != -ENOMEM) || !err[0] || p)
			abort();
		return 0;
	}
	if (pprof_encode(p, &buf, &len) == 0 &&
	    pprof_decode(buf, len, &again, err, sizeof(err)) != 0)
		abort();
	profile__free(again);
	free(buf);
	profile__free(p);
	return 0;
}
