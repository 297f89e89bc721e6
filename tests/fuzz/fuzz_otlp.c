/*
 * libFuzzer target for otlp_decode, the parser of OTLP profiles requests
 * (POST /v1development/profiles): the first byte picks the encoding (even:
 * protobuf, odd: OTLP/JSON), the rest is the body; the checks are otlp_fuzz.h's.
 */
#include "otlp_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	otlp_fuzz_one(data + 1, size - 1, data[0] & 1);
	return 0;
}
