/*
 * libFuzzer target for OTLP/JSON profiles requests alone (otlp_decode with
 * .json, src/profile/otlp_json.c then otlp_decode.c): the whole input is the
 * body, so the JSON dictionary (fuzz_otlp_json.dict: both spellings of every
 * field) and a JSON corpus work on it undiluted; fuzz_otlp covers protobuf and
 * JSON behind a mode byte. The checks are otlp_fuzz.h's.
 */
#include "otlp_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	otlp_fuzz_one(data, size, true);
	return 0;
}
