/*
 * libFuzzer target for OTLP/JSON profiles requests alone (otlp_decode with
 * .json, src/profile/otlp_json.c then otlp_decode.c): the whole input is the
 * body, so the JSON dictionary (fuzz_otlp_json.dict: both spellings of every
 * field) and a JSON corpus work on it undiluted; fuzz_otlp covers protobuf and
 * JSON behind a mode byte. The decode gets the server's budget for a body of
 * this size (server_memory_budget), as /v1development/profiles gives it. Any
 * input must decode or fail with a documented code and a reason, leaving nothing;
 * a decoded request's models must flatten (what the server does next). A stub
 * symbolizer answers native frames, so that path runs too.
 */
#include "profile/profile.h"
#include "server/server.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int stub_symbolize(void *ctx, const char *build_id, const char *file, uint64_t off,
			  struct otlp_frame *out, size_t max)
{
	(void)ctx;
	(void)file;
	if (!max || off % 3 == 0) /* some frames stay module+0xoff */
		return 0;
	out[0] = (struct otlp_frame){build_id, build_id, "", (int64_t)off};
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct otlp_opts o = {
	    .json = true, .budget = server_memory_budget(size), .symbolize = stub_symbolize};
	struct otlp_decoded d;
	char err[256];
	int r = otlp_decode(data, size, &o, &d, err, sizeof(err));

	if (r) {
		if ((r != -EINVAL && r != -EPROTO && r != -EFBIG && r != -E2BIG && r != -ENOMEM) ||
		    !err[0] || d.series || d.n_series)
			abort();
		return 0;
	}
	for (size_t i = 0; i < d.n_series; i++) {
		struct profile_flat *f = NULL;

		if (!d.series[i].profile || profile__to_flat(d.series[i].profile, &f))
			abort();
		profile_flat__free(f);
	}
	otlp_decoded__fini(&d);
	return 0;
}
