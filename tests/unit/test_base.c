/*
 * Unit tests for src/base/: growth refuses sizes that would overflow, the hash
 * index finds what was inserted and nothing else after removals (checked against
 * a brute-force model over a random churn), the interner keeps ids stable, the
 * arena aligns and copies, saturating arithmetic clamps at both ends, hex digits
 * are read as such and nothing else is, varints round-trip, and the protobuf
 * reader walks every wire type and refuses what reaches past its message.
 */
#include "base/base.h"
#include "unit.h"

#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

TEST(grow_doubles_and_refuses_overflow)
{
	uint64_t *a = NULL;
	size_t cap = 0;

	CHECK(base_grow((void **)&a, &cap, 1, sizeof(*a)) == 0);
	CHECK(cap == BASE_GROW_MIN);
	CHECK(base_grow((void **)&a, &cap, 100, sizeof(*a)) == 0);
	CHECK(cap == 128);
	a[99] = 7; /* room really is there (ASan) */
	CHECK(base_grow((void **)&a, &cap, 50, sizeof(*a)) == 0 && cap == 128);
	/* a count whose byte size overflows size_t: refused, array untouched */
	CHECK(base_grow((void **)&a, &cap, SIZE_MAX / 4, sizeof(*a)) == -ENOMEM);
	CHECK(base_grow((void **)&a, &cap, SIZE_MAX, 1) == -ENOMEM);
	CHECK(cap == 128 && a[99] == 7);
cleanup:
	free(a);
}

TEST(saturating_arithmetic_clamps)
{
	CHECK(base_sat_add(INT64_MAX, 1) == INT64_MAX);
	CHECK(base_sat_add(INT64_MIN, -1) == INT64_MIN);
	CHECK(base_sat_add(40, 2) == 42);
	CHECK(base_sat_mul(INT64_MAX / 2, 3) == INT64_MAX);
	CHECK(base_sat_mul(INT64_MAX / 2, -3) == INT64_MIN);
	CHECK(base_sat_mul(-6, 7) == -42);
	CHECK(base_sat_addu(UINT64_MAX - 1, 5) == UINT64_MAX);
	CHECK(base_sat_addu(1, 2) == 3);
cleanup:;
}

TEST(hex_digits_and_nothing_else)
{
	static const char digits[] = "0123456789abcdefABCDEF";

	for (int c = 0; c < 256; c++) {
		const char *at = c ? strchr(digits, c) : NULL;
		int want = !at		      ? -1
			   : at - digits < 16 ? (int)(at - digits)
					      : (int)(at - digits) - 6;

		CHECKF(base_hex_digit((char)c) == want, "%d: %d, want %d", c,
		       base_hex_digit((char)c), want);
	}
cleanup:;
}

TEST(hash_spreads_and_depends_on_every_byte)
{
	char buf[33] = "abcdefghijklmnopqrstuvwxyz012345";
	uint64_t h0 = base_hash_bytes(BASE_HASH_SEED, buf, 32);

	for (int i = 0; i < 32; i++) {
		buf[i] ^= 1;
		CHECKF(base_hash_bytes(BASE_HASH_SEED, buf, 32) != h0, "byte %d does not count", i);
		buf[i] ^= 1;
	}
	/* the length counts: "a" and "a\0" differ */
	CHECK(base_hash_bytes(BASE_HASH_SEED, "a", 1) != base_hash_bytes(BASE_HASH_SEED, "a\0", 2));
	CHECK(base_hash_u64(1, 2) != base_hash_u64(2, 1));
cleanup:;
}

struct model {
	uint64_t key[4096];
	bool live[4096];
};

static bool key_eq(const void *ctx, size_t idx, const void *key)
{
	return ((const struct model *)ctx)->key[idx] == *(const uint64_t *)key;
}

/* Deliberately poor hash (many collisions) so probe runs are long and the
 * backward shift of removal is exercised across wrap-around. */
static uint64_t weak_hash(uint64_t k)
{
	return (k % 61) * 0x9e3779b97f4a7c15ull;
}

TEST(hmap_matches_a_model_under_churn)
{
	struct base_hmap h = {0};
	struct model *m = calloc(1, sizeof(*m));
	unsigned seed = 12345;

	CHECK(m);
	for (size_t i = 0; i < 4096; i++)
		m->key[i] = i * 7919 + 1;
	for (int round = 0; round < 20000; round++) {
		size_t i = (size_t)rand_r(&seed) % 4096;
		uint64_t hash = weak_hash(m->key[i]);
		size_t got = base_hmap__find(&h, hash, key_eq, m, &m->key[i]);

		CHECKF(got == (m->live[i] ? i : SIZE_MAX), "round %d key %zu: found %zu", round, i,
		       got);
		if (m->live[i]) {
			CHECK(base_hmap__remove(&h, hash, i) == 0);
			m->live[i] = false;
		} else {
			CHECK(base_hmap__insert(&h, hash, i) == 0);
			m->live[i] = true;
		}
	}
	size_t n = 0;
	for (size_t i = 0; i < 4096; i++) {
		size_t got = base_hmap__find(&h, weak_hash(m->key[i]), key_eq, m, &m->key[i]);

		CHECK(got == (m->live[i] ? i : SIZE_MAX));
		n += m->live[i];
	}
	CHECK(h.n == n);
	CHECK(base_hmap__remove(&h, 1, 4095) == -ENOENT); /* no key hashes to 1 */
	/* renumber: the caller moves a live element k into a free place j */
	size_t k = 0, j = 0;
	while (k < 4096 && !m->live[k])
		k++;
	while (j < 4096 && m->live[j])
		j++;
	CHECK(k < 4096 && j < 4096);
	m->key[j] = m->key[k];
	m->key[k] = 0;
	CHECK(base_hmap__renumber(&h, weak_hash(m->key[j]), k, j) == 0);
	CHECK(base_hmap__find(&h, weak_hash(m->key[j]), key_eq, m, &m->key[j]) == j);
	CHECK(base_hmap__renumber(&h, weak_hash(m->key[j]), k, j) == -ENOENT);
	base_hmap__clear(&h);
	CHECK(h.n == 0 &&
	      base_hmap__find(&h, weak_hash(m->key[1]), key_eq, m, &m->key[1]) == SIZE_MAX);
cleanup:
	base_hmap__fini(&h);
	free(m);
}

TEST(strtab_ids_are_stable)
{
	struct base_strtab st;
	char name[32];

	CHECK(base_strtab__init(&st) == 0);
	CHECK(base_strtab__find(&st, "") == 0 && base_strtab__intern(&st, NULL) == 0);
	for (int i = 1; i <= 1000; i++) {
		snprintf(name, sizeof(name), "fn_%d", i);
		CHECK(base_strtab__intern(&st, name) == i);
	}
	CHECK(base_strtab__intern(&st, "fn_500") == 500);
	CHECK_STREQ(st.strs[777], "fn_777");
	CHECK(base_strtab__find(&st, "nope") == -ENOENT);
cleanup:
	base_strtab__fini(&st);
}

TEST(arena_aligns_copies_and_counts)
{
	struct base_arena a = {0};
	struct base_sbuf b = {0};
	char *p;

	for (int i = 0; i < 1000; i++) {
		p = base_arena__alloc(&a, 1, 3 + i % 50);
		CHECK(p && ((uintptr_t)p % alignof(max_align_t)) == 0 && p[0] == 0);
	}
	p = base_arena__copy(&a, "hello", 6, 1);
	CHECK_STREQ(p, "hello");
	CHECK(base_arena__copy(&a, NULL, 0, 1) != NULL);
	CHECK(base_arena__alloc(&a, SIZE_MAX / 2, 4) == NULL); /* overflow: refused */
	CHECK(base_arena__bytes(&a) >= 1000 * 16);
	base_sbuf__printf(&b, "%d-%s", 42, "x");
	base_sbuf__puts(&b, "!");
	CHECK(b.err == 0);
	CHECK_STREQ(b.s, "42-x!");
cleanup:
	base_arena__fini(&a);
	base_sbuf__fini(&b);
}

/* The monotonic clock moves forward by at least what we slept; the real-time
 * clock agrees with time(2) to the second. */
TEST(clock_ns_reads_both_clocks)
{
	struct timespec nap = {0, 2 * 1000 * 1000};
	int64_t m0 = base_clock_ns(CLOCK_MONOTONIC), m1, r = base_clock_ns(CLOCK_REALTIME);
	int64_t t = (int64_t)time(NULL);

	nanosleep(&nap, NULL);
	m1 = base_clock_ns(CLOCK_MONOTONIC);
	CHECKF(m1 - m0 >= 2000000, "%lld ns", (long long)(m1 - m0));
	CHECKF(r / 1000000000 >= t - 1 && r / 1000000000 <= t + 1, "%lld vs %lld", (long long)r,
	       (long long)t);
cleanup:;
}

TEST(json_string_escapes_quotes_backslashes_and_controls)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f);
	base_json_string(f, "a\"b\\c\n\x01" "d\xc3\xa9");
	fclose(f);
	f = NULL;
	CHECK_STREQ(buf, "\"a\\\"b\\\\c\\u000a\\u0001d\xc3\xa9\"");
cleanup:
	if (f)
		fclose(f);
	free(buf);
}

TEST(grow_zeroed_zeroes_only_what_it_adds)
{
	uint32_t *a = NULL;
	size_t cap = 0;

	CHECK(base_grow_zeroed((void **)&a, &cap, 3, sizeof(*a)) == 0 && cap == BASE_GROW_MIN);
	for (size_t i = 0; i < cap; i++)
		CHECK(a[i] == 0);
	a[5] = 42;
	CHECK(base_grow_zeroed((void **)&a, &cap, 100, sizeof(*a)) == 0 && cap == 128);
	CHECK(a[5] == 42);
	for (size_t i = BASE_GROW_MIN; i < cap; i++)
		CHECKF(a[i] == 0, "a[%zu] = %u", i, a[i]);
	CHECK(base_grow_zeroed((void **)&a, &cap, SIZE_MAX / 2, sizeof(*a)) == -ENOMEM && cap == 128);
cleanup:
	free(a);
}

/* ---- base_json_cost ---- */

/* Heap in use: what ASan's allocator counts (requested bytes) under ASan, glibc's
 * chunks otherwise. */
#if defined(__SANITIZE_ADDRESS__)
/* from <sanitizer/allocator_interface.h>, which gcc does not install here */
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t heap_now(void)
{
	return __sanitizer_get_current_allocated_bytes();
}
#else
#include <malloc.h>
static size_t heap_now(void)
{
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
}
#endif

/* "[" elem "," ... "]" of n copies, or "{" "\"kNNNNNN\":" elem ... "}" with keys. */
static char *json_repeat(const char *elem, size_t n, bool keys)
{
	size_t el = strlen(elem), at = 0;
	char *b = malloc(n * (el + 12) + 3);

	if (!b)
		return NULL;
	b[at++] = keys ? '{' : '[';
	for (size_t i = 0; i < n; i++) {
		if (i)
			b[at++] = ',';
		if (keys)
			at += (size_t)sprintf(b + at, "\"k%07zu\":", i);
		memcpy(b + at, elem, el);
		at += el;
	}
	b[at++] = keys ? '}' : ']';
	b[at] = 0;
	return b;
}

#include <json-c/json.h>

/* The price is an upper bound of the heap json-c really takes, and within 3x of
 * it for the shapes that cost the most per byte (the measurements json_cost.c
 * cites, redone against the library linked here). */
TEST(json_cost_bounds_json_c_tree)
{
	static const struct {
		const char *elem;
		size_t n;
		bool keys;
	} shapes[] = {
	    {"{}", 100000, false},	{"[]", 100000, false},	  {"1", 100000, false},
	    {"1.5", 100000, false},	{"\"x\"", 100000, false}, {"true", 100000, false},
	    {"null", 100000, false},	{"{\"a\":1}", 50000, false},
	    {"{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9,\"j\":1,"
	     "\"k\":1,\"l\":1}",
	     20000, false},
	    {"\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"", 50000, false},
	    {"null", 100000, true},	{"[1,2,3]", 20000, true},
	};
	char *b = NULL;

	for (size_t i = 0; i < sizeof(shapes) / sizeof(*shapes); i++) {
		struct base_json_cost c;
		struct json_tokener *tok;
		json_object *o;
		size_t before, used, len;

		CHECK((b = json_repeat(shapes[i].elem, shapes[i].n, shapes[i].keys)));
		len = strlen(b);
		CHECK(base_json_cost(b, len, &c) == 0);
		before = heap_now();
		CHECK((tok = json_tokener_new_ex(32)));
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
		o = json_tokener_parse_ex(tok, b, (int)len);
		used = heap_now() - before;
		json_tokener_free(tok);
		json_object_put(o);
		CHECK(o != NULL);
		printf("  json_cost %-12.12s x%zu%s: json-c %.1f B/byte of text, priced %.1f\n",
		       shapes[i].elem, shapes[i].n, shapes[i].keys ? " (members)" : "",
		       (double)used / (double)len, (double)c.bytes / (double)len);
		CHECKF(c.bytes >= used, "%s: priced %zu < %zu used", shapes[i].elem, c.bytes, used);
		CHECKF(c.bytes <= 3 * used + 8192 || used < len, "%s: priced %zu, used %zu",
		       shapes[i].elem, c.bytes, used);
		free(b);
		b = NULL;
	}
cleanup:
	free(b);
}

TEST(json_cost_counts_strings_keys_and_depth)
{
	struct base_json_cost c;
	/* a ']' and a '{' inside strings, an escaped quote: none is structure */
	const char *t = "{\"a]\":[\"x\\\"{\", 12, true, null, {\"b\":[]}]}";
	char deep[BASE_JSON_COST_DEPTH + 2];

	CHECK(base_json_cost(t, strlen(t), &c) == 0);
	CHECKF(c.values == 8, "%zu", c.values); /* {} [] "x.." 12 true null {} [] */
	CHECK(c.max_depth == 4);
	/* [{},{},{}]: the array, three objects, three slots, the tokener's buffer */
	CHECK(base_json_cost("[{},{},{}]", 10, &c) == 0);
	CHECKF(c.bytes == 144 + 3 * (784 + 16) + 4096, "%zu", c.bytes);
	/* unterminated text is priced, not refused (json-c refuses it) */
	CHECK(base_json_cost("[\"abc", 5, &c) == 0 && c.values == 2);
	memset(deep, '[', sizeof(deep));
	CHECK(base_json_cost(deep, BASE_JSON_COST_DEPTH, &c) == 0);
	CHECK(base_json_cost(deep, sizeof(deep), &c) == -E2BIG);
cleanup:;
}

TEST(varint_round_trips_and_refuses_truncation)
{
	const uint64_t vals[] = {0, 1, 127, 128, 300, UINT32_MAX, (uint64_t)1 << 63, UINT64_MAX};
	uint8_t buf[BASE_VARINT_MAX + 8], *e;
	const uint8_t *p;
	uint64_t v;

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		e = base_varint_put(buf, vals[i]);
		CHECK((size_t)(e - buf) == base_varint_len(vals[i]));
		/* read with room to spare (no per-byte check) and with none (every byte checked) */
		p = buf;
		CHECK(base_varint_get(&p, buf + sizeof(buf), &v) == 0 && v == vals[i] && p == e);
		p = buf;
		CHECK(base_varint_get(&p, e, &v) == 0 && v == vals[i] && p == e);
		p = buf;
		CHECK(base_varint_get(&p, e - 1, &v) == -EINVAL); /* one byte short */
	}
	CHECK(base_varint_len(UINT64_MAX) == BASE_VARINT_MAX);
	/* 300 is ac 02 (the protobuf guide's example) */
	CHECK(base_varint_put(buf, 300) - buf == 2 && buf[0] == 0xac && buf[1] == 0x02);
	/* eleven continuation bytes: longer than any 64-bit varint */
	memset(buf, 0x80, sizeof(buf));
	p = buf;
	CHECK(base_varint_get(&p, buf + sizeof(buf), &v) == -EINVAL);
	CHECK(base_varint_count(buf, buf + sizeof(buf)) == 0);
	CHECK(base_zigzag(0) == 0 && base_zigzag(-1) == 1 && base_zigzag(1) == 2);
	CHECK(base_zigzag(INT64_MIN) == UINT64_MAX && base_unzigzag(UINT64_MAX) == INT64_MIN);
	CHECK(base_unzigzag(base_zigzag(-12345)) == -12345);
cleanup:;
}

TEST(pb_reader_walks_fields_and_stays_in_bounds)
{
	/* field 1 varint 150; field 2 "hi"; field 3 fixed64 1; field 4 fixed32 7;
	 * field 5 packed varints {1, 300}; field 6 one unpacked varint 9 */
	const uint8_t msg[] = {0x08, 0x96, 0x01, 0x12, 0x02, 'h', 'i', 0x19, 1, 0, 0, 0, 0, 0, 0, 0,
			       0x25, 7, 0, 0, 0, 0x2a, 0x03, 0x01, 0xac, 0x02, 0x30, 0x09};
	struct base_pb b = {msg, msg + sizeof(msg)}, sub, vals;
	uint32_t field, v32;
	unsigned wt;
	uint64_t v;
	size_t n;

	CHECK(base_pb__next(&b, &field, &wt) == 1 && field == 1 && wt == BASE_PB_VARINT);
	CHECK(base_pb__varint(&b, &v) == 0 && v == 150);
	CHECK(base_pb__next(&b, &field, &wt) == 1 && field == 2 && wt == BASE_PB_LEN);
	CHECK(base_pb__len(&b, &sub) == 0 && sub.end - sub.p == 2 && sub.p[0] == 'h');
	CHECK(base_pb__next(&b, &field, &wt) == 1 && field == 3 && wt == BASE_PB_I64);
	CHECK(base_pb__fixed64(&b, &v) == 0 && v == 1);
	CHECK(base_pb__next(&b, &field, &wt) == 1 && field == 4 && wt == BASE_PB_I32);
	CHECK(base_pb__fixed32(&b, &v32) == 0 && v32 == 7);
	CHECK(base_pb__next(&b, &field, &wt) == 1 && field == 5);
	CHECK(base_pb__repeated(&b, wt, BASE_PB_VARINT, &vals, &n) == 0 && n == 2);
	CHECK(base_pb__varint(&vals, &v) == 0 && v == 1);
	CHECK(base_pb__varint(&vals, &v) == 0 && v == 300 && vals.p == vals.end);
	CHECK(base_pb__next(&b, &field, &wt) == 1 && field == 6);
	CHECK(base_pb__repeated(&b, wt, BASE_PB_VARINT, &vals, &n) == 0 && n == 1);
	CHECK(base_pb__varint(&vals, &v) == 0 && v == 9);
	CHECK(base_pb__next(&b, &field, &wt) == 0); /* the end */

	/* a length past the end, a truncated fixed64, a group, field number 0 */
	const uint8_t bad_len[] = {0x12, 0x05, 'h'}, bad_fixed[] = {0x19, 1, 2}, group[] = {0x0b},
		      zero[] = {0x00, 0x01};
	b = (struct base_pb){bad_len, bad_len + sizeof(bad_len)};
	CHECK(base_pb__next(&b, &field, &wt) == 1 && base_pb__len(&b, &sub) == -EINVAL);
	b = (struct base_pb){bad_fixed, bad_fixed + sizeof(bad_fixed)};
	CHECK(base_pb__next(&b, &field, &wt) == 1 && base_pb__skip(&b, wt) == -EINVAL);
	b = (struct base_pb){group, group + sizeof(group)};
	CHECK(base_pb__next(&b, &field, &wt) == 1 && base_pb__skip(&b, wt) == -EINVAL);
	b = (struct base_pb){zero, zero + sizeof(zero)};
	CHECK(base_pb__next(&b, &field, &wt) == -EINVAL);

	/* packed bodies that are not whole elements; a wire type a repeated varint cannot have */
	const uint8_t half_varint[] = {0x02, 0x01, 0x80}, odd_fixed[] = {0x03, 1, 2, 3},
		      fixed32[] = {1, 0, 0, 0};
	b = (struct base_pb){half_varint, half_varint + sizeof(half_varint)};
	CHECK(base_pb__repeated(&b, BASE_PB_LEN, BASE_PB_VARINT, &vals, &n) == -EINVAL);
	b = (struct base_pb){odd_fixed, odd_fixed + sizeof(odd_fixed)};
	CHECK(base_pb__repeated(&b, BASE_PB_LEN, BASE_PB_I64, &vals, &n) == -EINVAL);
	b = (struct base_pb){fixed32, fixed32 + sizeof(fixed32)};
	CHECK(base_pb__repeated(&b, BASE_PB_I32, BASE_PB_VARINT, &vals, &n) == -EPROTO);
cleanup:;
}

/* The one time grammar (its full table is tests/unit/data/times.tsv, read by
 * test_query): the forms each former parser accepted all still parse here. */
TEST(time_grammar_serves_queries_scrape_and_cli)
{
	const int64_t s = 1000000000ll;
	char err[160];
	int64_t t;

	CHECK(base_time_parse("now-1h", 7200 * s, &t, err, sizeof(err)) == 0 && t == 3600 * s);
	CHECK(base_time_parse("1700000000", 0, &t, err, sizeof(err)) == 0 && t == 1700000000 * s);
	CHECK(base_time_parse("tomorrow", 0, &t, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "\"tomorrow\"") && strstr(err, "now-1h30m"), "%s", err);
	/* Prometheus durations (the scrape config's): ms s m h d w terms */
	CHECK(base_duration_parse("1m30s", &t, NULL, 0) == 0 && t == 90 * s);
	CHECK(base_duration_parse("500ms", &t, NULL, 0) == 0 && t == s / 2);
	CHECK(base_duration_parse("1w", &t, NULL, 0) == 0 && t == 7 * 86400 * s);
	/* a plain number of seconds (the CLI's and the API's) */
	CHECK(base_duration_parse("60", &t, NULL, 0) == 0 && t == 60 * s);
	/* zero is well-formed (a caller applies its own bounds); nonsense is not */
	CHECK(base_duration_parse("0s", &t, err, sizeof(err)) == -ERANGE && t == 0);
	CHECK(base_duration_parse("10 seconds", &t, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "\"10 seconds\""), "%s", err);
	CHECK(base_duration_parse("106752d", &t, NULL, 0) == -EINVAL); /* past INT64_MAX ns */
cleanup:;
}

TEST(grow_max_stops_at_its_ceiling)
{
	uint32_t *a = NULL;
	size_t cap = 0;

	CHECK(base_grow_max((void **)&a, &cap, 20, sizeof(*a), 100) == 0 && cap == 32);
	/* 64 would double to 128: the capacity stops at the ceiling, 100 */
	CHECK(base_grow_max((void **)&a, &cap, 65, sizeof(*a), 100) == 0 && cap == 100);
	a[99] = 1; /* the room is there (ASan) */
	/* one past the ceiling: refused, the array kept */
	CHECK(base_grow_max((void **)&a, &cap, 101, sizeof(*a), 100) == -E2BIG);
	CHECK(cap == 100 && a[99] == 1);
	CHECK(base_grow_max((void **)&a, &cap, 100, sizeof(*a), 100) == 0 && cap == 100);
	free(a);
	a = NULL;
	cap = 0;
	CHECK(base_grow_max((void **)&a, &cap, 3, sizeof(*a), 5) == 0 && cap == 5);
cleanup:
	free(a);
}

/* DWARF 5 §7.6's examples (Tables 7.6 and 7.7), and what a varint refuses: padding. */
TEST(leb128_reads_dwarf_examples_and_padding)
{
	const uint8_t u[] = {0x02, 0x7f, 0x80, 0x01, 0x81, 0x01, 0x82, 0x01, 0xb9, 0x64},
		      s[] = {0x02, 0x7e, 0xff, 0x00, 0x81, 0x7f, 0x80, 0x01, 0x80, 0x7f};
	const uint64_t uw[] = {2, 127, 128, 129, 130, 12857};
	const int64_t sw[] = {2, -2, 127, -127, 128, -128};
	uint8_t padded[16];
	const uint8_t *p = u, *q;
	uint64_t v;
	int64_t sv;

	for (size_t i = 0; i < 6; i++)
		CHECK(base_uleb128_get(&p, u + sizeof(u), &v) == 0 && v == uw[i]);
	CHECK(p == u + sizeof(u));
	p = s;
	for (size_t i = 0; i < 6; i++)
		CHECKF(base_sleb128_get(&p, s + sizeof(s), &sv) == 0 && sv == sw[i], "%zu", i);
	/* 1 padded to 16 bytes: longer than any varint, still one LEB128 */
	memset(padded, 0x80, sizeof(padded));
	padded[0] = 0x81;
	padded[15] = 0x00;
	p = padded;
	CHECK(base_uleb128_get(&p, padded + sizeof(padded), &v) == 0 && v == 1);
	CHECK(p == padded + sizeof(padded));
	/* truncated: refused, the position kept */
	q = p = padded;
	CHECK(base_uleb128_get(&p, padded + 15, &v) == -EINVAL && p == q);
	CHECK(base_sleb128_get(&p, padded + 15, &sv) == -EINVAL && p == q);
cleanup:;
}
