/*
 * libFuzzer target for what /ingest parses from outside before anything is
 * stored: the series name (APP{k=v,...}), unix times, a multipart body, and
 * the folded / lines text profiles. Input layout: the first byte picks the
 * parser, the rest is its input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "server/server.h"

static char *cstr(const uint8_t *d, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, d, n);
		s[n] = '\0';
	}
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct server_labels l = {0};
	struct profile *p = NULL;
	const uint8_t *part;
	size_t part_len;
	char err[512], *s;
	int64_t ns;

	if (size < 1)
		return 0;
	s = cstr(data + 1, size - 1);
	if (!s)
		return 0;
	switch (data[0] % 5) {
	case 0:
		server_parse_name(s, &l, err, sizeof(err));
		server_labels__fini(&l);
		break;
	case 1:
		server_parse_unix_time(s, &ns);
		break;
	case 2:
		server_multipart_field("multipart/form-data; boundary=b", data + 1, size - 1,
				       "profile", &part, &part_len);
		break;
	case 3:
	case 4:
		if (profile_text_parse((const char *)data + 1, size - 1, data[0] % 5 == 4, 10000000,
				       &p, err, sizeof(err)) == 0)
			profile__free(p);
		break;
	}
	free(s);
	return 0;
}
