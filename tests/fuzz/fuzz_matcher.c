/*
 * libFuzzer target for the label-selector parser (query_selector__parse): the
 * input is a selector as an HTTP client would send it. Any input must parse or
 * fail with -EINVAL/-E2BIG and a message, never crash, leak or hang; a parsed
 * selector is matched against a fixed series to exercise the compiled regexes.
 */
#include "query/query.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store_label labels[] = {{"comm", "nginx"}, {"host", "a"}, {"pid", "42"}};
	struct store_series ser = {1, STORE_CPU_PROFILE_TYPE, 3, labels};
	struct query_selector *sel = NULL;
	char err[256] = "";
	char *s;
	int e;

	if (size > QUERY_MAX_SELECTOR_LEN + 16)
		return 0;
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	e = query_selector__parse(s, &sel, err, sizeof(err));
	if (e == 0)
		(void)query_selector__match(sel, &ser);
	else if ((e != -EINVAL && e != -E2BIG && e != -ENOMEM) || !err[0] || sel)
		abort();
	query_selector__free(sel);
	free(s);
	return 0;
}
