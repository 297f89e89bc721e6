/*
 * libFuzzer target for hearth query's text form (query_text_render,
 * src/cli/query_text.c): the input is a server's answer, which the CLI trusts no
 * more than any other input. The first byte picks the format (labels, series,
 * timeline, tree), the rest is the answer. Any input must render or fail with
 * -EINVAL and a message, never crash, hang or read out of bounds.
 */
#include "cli/query_text.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const formats[] = {"labels", "series", "timeline", "tree"};
	FILE *out = fopen("/dev/null", "w");
	char err[512];
	int ret;

	if (!out || size < 1) {
		if (out)
			fclose(out);
		return 0;
	}
	ret = query_text_render(formats[data[0] % 4], (const char *)data + 1, size - 1, out, err,
				sizeof(err));
	if (ret && ret != -EINVAL && ret != -ENOMEM)
		abort();
	fclose(out);
	return 0;
}
