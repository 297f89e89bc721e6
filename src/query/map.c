/*
 * The query module's hash map ((u64, u64) -> dense index, linear probing) and
 * small helpers. Maps live for one request, so there is no deletion.
 */
#include "query_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = (a ^ 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;

	h ^= (b + 0x632be59bd9b4e019ull) * 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 31);
}

static int rehash(struct query_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024;
	struct query_map_slot *s = calloc(cap, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->slots[i].idx1)
			continue;
		size_t j = mix(m->slots[i].a, m->slots[i].b) & (cap - 1);
		while (s[j].idx1)
			j = (j + 1) & (cap - 1);
		s[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = s;
	m->cap = cap;
	return 0;
}

int query_map__get(struct query_map *m, uint64_t a, uint64_t b, size_t next, size_t *idx,
		   bool *added)
{
	size_t j;

	*added = false;
	if ((m->n + 1) * 2 > m->cap && rehash(m))
		return -ENOMEM;
	for (j = mix(a, b) & (m->cap - 1); m->slots[j].idx1; j = (j + 1) & (m->cap - 1))
		if (m->slots[j].a == a && m->slots[j].b == b) {
			*idx = m->slots[j].idx1 - 1;
			return 0;
		}
	m->slots[j] = (struct query_map_slot){a, b, next + 1};
	m->n++;
	*idx = next;
	*added = true;
	return 0;
}

void query_map__fini(struct query_map *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

int query_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 64;
	void *n;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 4)
			return -ENOMEM;
		c *= 2;
	}
	if (c > SIZE_MAX / elem)
		return -ENOMEM;
	n = realloc(*arr, c * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = c;
	return 0;
}

int query_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return code;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

void query_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}
