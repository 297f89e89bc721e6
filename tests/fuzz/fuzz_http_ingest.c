/*
 * libFuzzer target for what /ingest parses from outside before anything is
 * stored: the series name (APP{k=v,...}), unix times, a multipart body, and
 * the folded / lines text profiles; and the web UI's path check, against an
 * independent segment split. Input layout: the first byte picks the parser,
 * the rest is its input.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "base/base.h"
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

/* Whether path has an empty segment or one starting with ".", splitting on '/' the plain way. */
static bool has_bad_segment(const char *path)
{
	const char *seg = path + 1, *end;

	for (;; seg = end + 1) {
		size_t n;

		end = strchr(seg, '/');
		n = end ? (size_t)(end - seg) : strlen(seg);
		if ((n == 0 && end) || (n && seg[0] == '.')) /* empty, or a dot segment/file */
			return true;
		if (!end)
			return false;
	}
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
	switch (data[0] % 6) {
	case 0:
		server_parse_name(s, &l, err, sizeof(err));
		server_labels__fini(&l);
		break;
	case 1:
		base_time_parse(s, 0, &ns, err, sizeof(err));
		break;
	case 2:
		server_multipart_field("multipart/form-data; boundary=b", data + 1, size - 1,
				       "profile", &part, &part_len);
		break;
	case 3:
	case 4:
		/* within the budget /ingest gives the body (server_memory_budget) */
		if (profile_text_parse_budget((const char *)data + 1, size - 1, data[0] % 6 == 4,
					      10000000, server_memory_budget(size), &p, err,
					      sizeof(err)) == 0)
			profile__free(p);
		break;
	case 5: /* accepted exactly when it starts with '/' and every segment is plain */
		if (server_web_path_ok(s) != (s[0] == '/' && !has_bad_segment(s)))
			abort();
		break;
	}
	free(s);
	return 0;
}
