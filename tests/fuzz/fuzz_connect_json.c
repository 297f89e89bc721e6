/*
 * libFuzzer target for the Connect API's JSON requests (pbjson_decode,
 * server_pbjson.c): the input is a request body as Grafana's browser app would
 * send it, decoded as each request message the server takes (server_connect.c's
 * method table: strings, int64, double, enums, repeated and nested messages), so
 * one input reaches every field table. Any input must decode or fail with -EINVAL
 * or -ENOMEM and a message, never crash, leak or hang; a decoded message is
 * encoded back to exercise the writer.
 *
 * pbjson_decode takes no memory budget yet; the server's for a body of this size
 * is server_memory_budget(len), and fuzz_connect_json.limits gives libFuzzer that
 * for the largest input (max_len) plus ASan's own.
 */
#include "querier.pb-c.h"
#include "server/server_connect.h"
#include "types.pb-c.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The request types of server_connect.c's methods. */
static const ProtobufCMessageDescriptor *const requests[] = {
    &querier__v1__profile_types_request__descriptor,
    &types__v1__label_names_request__descriptor,
    &types__v1__label_values_request__descriptor,
    &querier__v1__series_request__descriptor,
    &querier__v1__select_merge_stacktraces_request__descriptor,
    &querier__v1__select_merge_profile_request__descriptor,
    &querier__v1__select_series_request__descriptor,
    &types__v1__get_profile_stats_request__descriptor,
};

static void one(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t size)
{
	ProtobufCMessage *m = NULL;
	char err[256] = "";
	FILE *f;
	int e = pbjson_decode(d, (const char *)data, size, &m, err, sizeof(err));

	if (e == 0) {
		f = fopen("/dev/null", "w");
		if (f) {
			(void)pbjson_encode(m, f);
			fclose(f);
		}
		protobuf_c_message_free_unpacked(m, NULL);
	} else if ((e != -EINVAL && e != -ENOMEM) || !err[0] || m) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 16)
		return 0;
	for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++)
		one(requests[i], data, size);
	return 0;
}
