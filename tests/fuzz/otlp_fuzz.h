/*
 * What fuzz_otlp and fuzz_otlp_json check of one OTLP body (included by both):
 * otlp_decode with the server's budget for a body of this size
 * (server_memory_budget, as /v1development/profiles gives it) must decode or fail
 * with one of the documented codes and a reason, leaving nothing; a decoded
 * request's models must flatten (what the server does next). A stub symbolizer
 * answers native frames, so that path runs too.
 */
#ifndef HEARTH_OTLP_FUZZ_H
#define HEARTH_OTLP_FUZZ_H

#include "profile/profile.h"
#include "server/server.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

static int otlp_fuzz_symbolize(void *ctx, const char *build_id, const char *file, uint64_t off,
			       struct otlp_frame *out, size_t max)
{
	(void)ctx;
	(void)file;
	if (!max || off % 3 == 0) /* some frames stay module+0xoff */
		return 0;
	out[0] = (struct otlp_frame){build_id, build_id, "", (int64_t)off};
	return 1;
}

static void otlp_fuzz_one(const uint8_t *data, size_t size, bool json)
{
	struct otlp_opts o = {.json = json,
			      .budget = server_memory_budget(size),
			      .symbolize = otlp_fuzz_symbolize};
	struct otlp_decoded d;
	char err[256];
	int r = otlp_decode(data, size, &o, &d, err, sizeof(err));

	if (r) {
		if ((r != -EINVAL && r != -EPROTO && r != -EFBIG && r != -E2BIG && r != -ENOMEM) ||
		    !err[0] || d.series || d.n_series)
			abort();
		return;
	}
	for (size_t i = 0; i < d.n_series; i++) {
		struct profile_flat *f = NULL;

		if (!d.series[i].profile || profile__to_flat(d.series[i].profile, &f))
			abort();
		profile_flat__free(f);
	}
	otlp_decoded__fini(&d);
}

#endif
