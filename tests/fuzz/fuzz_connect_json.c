/*
 * libFuzzer target for the Connect API's JSON requests (pbjson_decode,
 * server_pbjson.c): the input is a request body as Grafana's browser app would
 * send it, decoded as SelectSeriesRequest (strings, int64, double, enum,
 * repeated and nested message fields). Any input must decode or fail with
 * -EINVAL and a message, never crash, leak or hang; a decoded message is
 * encoded back to exercise the writer.
 */
#include "querier.pb-c.h"
#include "server/server_connect.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ProtobufCMessage *m = NULL;
	char err[256] = "";
	FILE *f;
	int e;

	if (size > 1 << 16)
		return 0;
	e = pbjson_decode(&querier__v1__select_series_request__descriptor, (const char *)data, size,
			  &m, err, sizeof(err));
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
	return 0;
}
