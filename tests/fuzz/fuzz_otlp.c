/*
 * libFuzzer target for otlp_decode, the parser of OTLP profiles requests
 * (POST /v1development/profiles): the first byte picks the encoding (even:
 * protobuf, odd: OTLP/JSON), the rest is the body. Any input must decode or
 * fail with one of the documented codes and a reason, leaving nothing; a
 * decoded request's models must flatten (what the server does next). A stub
 * symbolizer answers every native frame, so that path runs too.
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
	/* the server's budget for a body of this size (/v1development/profiles) */
	struct otlp_opts o = {.budget = server_memory_budget(size), .symbolize = stub_symbolize};
	struct otlp_decoded d;
	char err[256];
	int r;

	if (size < 1)
		return 0;
	o.json = data[0] & 1;
	r = otlp_decode(data + 1, size - 1, &o, &d, err, sizeof(err));
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
