/*
 * The base layer: the few generic building blocks every module uses, so that
 * growth, hashing, hash tables, arenas and clamped arithmetic are written once.
 *
 *   base_grow      geometric array growth with overflow-checked sizes, up to a
 *                  stated ceiling (base_grow_max)
 *   base_sat_*     saturating 64-bit arithmetic (sample values never wrap)
 *   base_hex_digit the value of one hex digit (every hex parser's step)
 *   base_hash_*    one hash over bytes and one 64-bit mix
 *   base_hmap      open-addressing index: hash -> element index of the caller's
 *                  array (the caller owns keys and values; the map owns slots)
 *   base_arena     bump arena: many small blocks freed at once
 *   base_sbuf      growing string with a sticky error
 *   base_strtab    string interner (id 0 is always "")
 *   base_clock_ns  a clock read as nanoseconds
 *   base_curl_init libcurl's global init, once per process
 *   base_time_parse, base_duration_parse  the one time grammar ("now-1h", unix
 *                  times in s/ms/us/ns, ISO-8601, today/yesterday, "1h30m")
 *   base_varint_*  varints and zigzag (protobuf's and the store's encoding), and
 *                  DWARF's LEB128 (base_uleb128_get, base_sleb128_get)
 *   base_pb        a bounds-checked protobuf wire reader (tags, varints, fixed32/64,
 *                  length-delimited fields, packed repeated scalars)
 *   base_json_string  a string as a JSON literal
 *   base_json_cost    what json-c's tree of a JSON text will take, before parsing
 *   base_guard     reads of a mapped file that survive the file shrinking (SIGBUS)
 *
 * Nothing here knows any other hearth module: every module may include it, it
 * includes no module. Every name starts with base_.
 */
#ifndef HEARTH_BASE_H
#define HEARTH_BASE_H

#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* ---- arrays ---- */

/* Grows *arr (of *cap elements of elem bytes) to hold at least need elements:
 * the capacity doubles from BASE_GROW_MIN, and the byte size is checked for
 * overflow. *arr and *cap are left unchanged on failure. 0 or -ENOMEM. */
#define BASE_GROW_MIN 16
int base_grow(void **arr, size_t *cap, size_t need, size_t elem);
/* base_grow up to a ceiling of max elements: need > max is refused with -E2BIG
 * (nothing changed), and the doubling stops at max, so *cap never passes it. An
 * input-driven array states its bound here. 0, -E2BIG or -ENOMEM. */
int base_grow_max(void **arr, size_t *cap, size_t need, size_t elem, size_t max);
/* base_grow, with the elements it adds zeroed (arrays indexed by id, where 0 means
 * "none yet"). 0 or -ENOMEM. */
int base_grow_zeroed(void **arr, size_t *cap, size_t need, size_t elem);

/* ---- varints: unsigned LEB128 (protobuf "varint"), and zigzag for signed values ---- */

/* The most bytes a 64-bit varint takes. */
#define BASE_VARINT_MAX 10

/* Writes v at b (room for BASE_VARINT_MAX bytes); returns the new end. */
static inline uint8_t *base_varint_put(uint8_t *b, uint64_t v)
{
	while (v >= 0x80) {
		*b++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*b++ = (uint8_t)v;
	return b;
}

/* Bytes base_varint_put writes for v (1 to BASE_VARINT_MAX). */
static inline size_t base_varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >>= 7)
		n++;
	return n;
}

/* A varint with at least BASE_VARINT_MAX bytes at *p: no byte is bounds-checked
 * (the hot case: packed location ids). Use base_varint_get. */
static inline __attribute__((always_inline)) int base_varint_get_fast(const uint8_t **p,
								      uint64_t *out)
{
	const uint8_t *q = *p;
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t c = *q++;

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*p = q;
			*out = v;
			return 0;
		}
	}
	return -EINVAL;
}

/* A varint near the end of its message: every byte checked. Inline too: small
 * messages (a sample, a line) are read entirely through it. */
static inline int base_varint_get_slow(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	const uint8_t *q = *p;
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64 && q < end; shift += 7) {
		uint8_t c = *q++;

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*p = q;
			*out = v;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * Reads a varint from [*p, end) into *out and moves *p past it. 0, or -EINVAL when
 * it is truncated or longer than BASE_VARINT_MAX bytes (*p kept). Bits above 64 in
 * a 10th byte are dropped, as protobuf does.
 */
static inline int base_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	return end - *p >= BASE_VARINT_MAX ? base_varint_get_fast(p, out)
					   : base_varint_get_slow(p, end, out);
}

/* Varints that end in [p, end): the bytes with the high bit clear, counted 8 at a
 * time. A packed field's element count, before reading it. */
size_t base_varint_count(const uint8_t *p, const uint8_t *end);

/*
 * DWARF's LEB128 (DWARF 5 §7.6): a varint's 7-bit groups, but of any length
 * (producers pad), the bits past 64 dropped; signed values are sign-extended from
 * the last byte's 0x40 bit. 0 or -EINVAL when [*p, end) ends inside one (*p kept).
 */
int base_uleb128_get(const uint8_t **p, const uint8_t *end, uint64_t *out);
int base_sleb128_get(const uint8_t **p, const uint8_t *end, int64_t *out);

/* Zigzag (protobuf sint64): small magnitudes of either sign take few varint bytes. */
static inline uint64_t base_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t base_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* ---- protobuf wire reader (protobuf.dev/programming-guides/encoding) ---- */

/* Wire types; groups (3, 4) are refused everywhere. */
enum { BASE_PB_VARINT = 0, BASE_PB_I64 = 1, BASE_PB_LEN = 2, BASE_PB_I32 = 5 };

/* A message's bytes not read yet: [p, end). Every read checks end; the input may be
 * anything. Borrowed: the caller's buffer. */
struct base_pb {
	const uint8_t *p, *end;
};

static inline int base_pb__varint(struct base_pb *b, uint64_t *v)
{
	return base_varint_get(&b->p, b->end, v);
}

/* Little-endian fixed-width values. 0 or -EINVAL (truncated). */
int base_pb__fixed64(struct base_pb *b, uint64_t *v);
int base_pb__fixed32(struct base_pb *b, uint32_t *v);
/* The body of a length-delimited field as its own reader, b moved past it. 0 or
 * -EINVAL (bad or truncated length). Inline, as base_pb__next: called per field. */
static inline int base_pb__len(struct base_pb *b, struct base_pb *sub)
{
	uint64_t n;

	if (base_pb__varint(b, &n) || n > (uint64_t)(b->end - b->p))
		return -EINVAL;
	sub->p = b->p;
	sub->end = b->p + n;
	b->p += n;
	return 0;
}
/* Skips one field's value of wire type wt. 0 or -EINVAL (truncated, or a group). */
int base_pb__skip(struct base_pb *b, unsigned wt);
/*
 * The next field's tag: 1 with *field (1 to 2^29-1) and *wt set, 0 at the end of
 * the message, -EINVAL for a bad tag. Loop: while ((r = base_pb__next(...)) > 0).
 */
static inline int base_pb__next(struct base_pb *b, uint32_t *field, unsigned *wt)
{
	uint64_t t;

	*field = 0; /* set on every path: callers read them only on 1 */
	*wt = 0;
	if (b->p >= b->end)
		return 0;
	if (base_pb__varint(b, &t) || (t >> 3) == 0 || (t >> 3) > 0x1fffffff)
		return -EINVAL;
	*field = (uint32_t)(t >> 3);
	*wt = (unsigned)(t & 7);
	return 1;
}
/*
 * A repeated scalar field whose elements have wire type elem_wt (BASE_PB_VARINT,
 * BASE_PB_I64 or BASE_PB_I32), met with wire type wt: packed (BASE_PB_LEN, the
 * whole body) or one element (elem_wt). *vals reads the elements (with
 * base_pb__varint or base_pb__fixed*), *n says how many there are, so the caller
 * can make room once. 0, -EPROTO for any other wire type, -EINVAL when malformed
 * (a bad length, a packed body that is not whole elements).
 */
int base_pb__repeated(struct base_pb *b, unsigned wt, unsigned elem_wt, struct base_pb *vals,
		      size_t *n);

/* ---- saturating arithmetic ---- */

/* a + b clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t base_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* a - b clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t base_sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* a * b clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t base_sat_mul(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_mul_overflow(a, b, &r))
		return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
	return r;
}

/* a + b clamped to UINT64_MAX. */
static inline uint64_t base_sat_addu(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* ---- text ---- */

/* Value + 1 of each hex digit byte, 0 for every other byte (a table: parsers call it
 * per byte on hot paths). */
extern const unsigned char base_hex_table[256];

/* 0-15 for [0-9a-fA-F], -1 for any other byte. */
static inline int base_hex_digit(char c)
{
	return (int)base_hex_table[(unsigned char)c] - 1;
}

/* Writes s as a JSON string literal: quotes, \" and \\ escaped, control bytes as
 * \u00XX; other bytes as they are (the caller's strings are UTF-8 or opaque). */
void base_json_string(FILE *out, const char *s);

/* Nesting base_json_cost follows (deeper: -E2BIG); the decoders allow less. */
#define BASE_JSON_COST_DEPTH 64
struct base_json_cost {
	size_t bytes;	    /* heap json-c 0.16 takes for the text's tree: an upper bound */
	size_t values;	    /* values of every kind (containers included, keys not) */
	unsigned max_depth; /* deepest nesting of objects and arrays */
};
/*
 * Prices the tree json-c would build of buf[0, len) (in strict mode), without
 * building it: a decoder compares out->bytes with its memory budget before
 * json_tokener runs. Malformed text is priced too (json-c refuses it later, and
 * costs no more on the way). 0, or -E2BIG when nested deeper than
 * BASE_JSON_COST_DEPTH (json-c with a lower depth refuses it). Saturates at
 * SIZE_MAX.
 */
int base_json_cost(const char *buf, size_t len, struct base_json_cost *out);

/* ---- hashing ---- */

#define BASE_HASH_SEED 0x9e3779b97f4a7c15ull

/* The mix: h combined with v (splitmix64's finaliser of h ^ v), every input bit
 * reaching every output bit. Chain it for several integers. */
static inline uint64_t base_hash_u64(uint64_t h, uint64_t v)
{
	uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* n bytes at p hashed into h, 8 bytes at a time. In memory only: never stored. */
uint64_t base_hash_bytes(uint64_t h, const void *p, size_t n);

/* ---- open-addressing hash index ---- */

/* Slots hold (hash, element index + 1); the caller's arrays hold the keys, so one
 * index type serves every key type. Linear probing, load kept under 3/4 (a probe
 * always ends at an empty slot); removal shifts the run back (no tombstones). */
struct base_hmap {
	struct base_hmap_slot {
		uint64_t hash;
		size_t idx1; /* element index + 1; 0 = empty slot */
	} * slots;	     /* owned */
	size_t cap;	     /* power of two, or 0 before the first insert */
	size_t n;
};

/* Says whether element idx of the caller's array equals key. */
typedef bool (*base_eq_fn)(const void *ctx, size_t idx, const void *key);

/* Index of the first element with this hash for which eq says yes; SIZE_MAX when
 * none. Inline so that a constant eq is inlined into the probe loop. */
static inline size_t base_hmap__find(const struct base_hmap *h, uint64_t hash, base_eq_fn eq,
				     const void *ctx, const void *key)
{
	if (!h->cap)
		return SIZE_MAX;
	for (size_t i = hash & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
		const struct base_hmap_slot *s = &h->slots[i];

		if (!s->idx1)
			return SIZE_MAX;
		if (s->hash == hash && eq(ctx, s->idx1 - 1, key))
			return s->idx1 - 1;
	}
}

/* Records element idx under hash (the caller checked that it is new). 0 or -ENOMEM. */
int base_hmap__insert(struct base_hmap *h, uint64_t hash, size_t idx);
/* Forgets element idx recorded under hash; -ENOENT when it is not there. */
int base_hmap__remove(struct base_hmap *h, uint64_t hash, size_t idx);
/* Renumbers element from (under hash) as to, e.g. when the caller moves its last
 * element into a freed place. -ENOENT when from is not there. */
int base_hmap__renumber(struct base_hmap *h, uint64_t hash, size_t from, size_t to);
/* Empties the index, keeping its slots for reuse. */
void base_hmap__clear(struct base_hmap *h);
void base_hmap__fini(struct base_hmap *h);

/* ---- bump arena ---- */

struct base_arena {
	struct base_arena_block *head; /* owned: the newest block first */
};

/* Zeroed memory of n * size bytes aligned for any type, or NULL (ENOMEM, overflow). */
void *base_arena__alloc(struct base_arena *a, size_t n, size_t size);
/* A copy of n * size bytes of src in the arena (n may be 0: a valid pointer), or NULL. */
void *base_arena__copy(struct base_arena *a, const void *src, size_t n, size_t size);
/* Room for n * size bytes at the arena's end, not taken: the next take of at most that
 * many bytes (base_arena__take) returns the same pointer. NULL on ENOMEM. */
void *base_arena__room(struct base_arena *a, size_t n, size_t size);
/* n * size bytes of the arena, not zeroed, or NULL. */
void *base_arena__take(struct base_arena *a, size_t n, size_t size);
/* Bytes the arena holds from malloc (its blocks). */
size_t base_arena__bytes(const struct base_arena *a);
void base_arena__fini(struct base_arena *a);

/* ---- growing string: errors are sticky and checked once at the end ---- */

struct base_sbuf {
	char *s; /* owned, always NUL-terminated once anything was appended */
	size_t len, cap;
	int err; /* 0 or -ENOMEM */
};

void base_sbuf__append(struct base_sbuf *b, const char *s, size_t n);
void base_sbuf__puts(struct base_sbuf *b, const char *s);
__attribute__((format(printf, 2, 3))) void base_sbuf__printf(struct base_sbuf *b, const char *fmt,
							     ...);
void base_sbuf__fini(struct base_sbuf *b);

/* ---- string interner: id 0 is always "" (the pprof string_table rule) ---- */

struct base_strtab {
	char **strs; /* owned array; the strings live in the arena, so pointers stay
		      * valid while the table grows */
	size_t n, cap;
	struct base_hmap idx;
	struct base_arena arena; /* the strings' bytes, freed all at once */
};

int base_strtab__init(struct base_strtab *st);
void base_strtab__fini(struct base_strtab *st);
/* Id of s (NULL is ""), adding a copy when new; -ENOMEM. */
int64_t base_strtab__intern(struct base_strtab *st, const char *s);
/* Id of s, or -ENOENT when it was never interned. */
int64_t base_strtab__find(const struct base_strtab *st, const char *s);

/* ---- the time grammar (timespec.c) ---- */

/*
 * A unix timestamp (only digits, at most 19) to ns; its magnitude tells the
 * unit: below 1e11 seconds, below 1e14 ms, below 1e17 µs, else ns. -EINVAL for
 * anything else and for a time past INT64_MAX ns (2262-04-11), never wrapped.
 */
int base_time_parse_unix(const char *s, int64_t *out_ns);
/*
 * Parses a time: an anchor "now", "today" or "yesterday" (midnight UTC of
 * now_ns's day, or of the day before) with an optional offset ("now-1h",
 * "now+10m", "today+9h30m": units ns us ms s m h d w, whole numbers), an
 * ISO-8601 date or time ("2026-11-27", "2026-11-27T10:00", "2026-11-27 10:00:05.25",
 * "2026-11-27T10:00:00+01:00"; UTC where no zone is given), or a unix timestamp
 * (base_time_parse_unix). 0 or -EINVAL (err, when not NULL, names the value and
 * what is accepted); a time outside INT64 ns is refused, never wrapped.
 */
int base_time_parse(const char *s, int64_t now_ns, int64_t *out_ns, char *err, size_t errlen);
/* A duration: "10s", "1m", "1h30m", "500ms" (a sum of whole-number terms of ns us
 * ms s m h d w), or a plain number of seconds, under INT64_MAX ns. 0; -ERANGE for
 * a well-formed duration that is 0 (*out_ns holds it); -EINVAL for anything else.
 * err, when not NULL, names the value and what is accepted. */
int base_duration_parse(const char *s, int64_t *out_ns, char *err, size_t errlen);

/* ---- libcurl ---- */

/* libcurl's global init, run once per process whoever calls first (pthread_once),
 * never undone (curl_once.c says why). Every module calls it before its first curl
 * handle. 0, or -ENOMEM when libcurl could not initialise. */
int base_curl_init(void);

/* ---- clocks ---- */

/* Clock clk (CLOCK_MONOTONIC, CLOCK_REALTIME, ...) in nanoseconds: the one place a
 * timespec becomes a count of ns. */
int64_t base_clock_ns(clockid_t clk);
/* ns as a timespec: e.g. the absolute deadline base_clock_ns(clk) + timeout for
 * pthread_cond_timedwait on a clk condition variable. */
struct timespec base_ns_timespec(int64_t ns);

/* ---- mapped files: the SIGBUS guard (busguard.c) ---- */

/*
 * A guard around reads of mapped file bytes:
 *	struct base_guard g;
 *	base_guard_push(&g);
 *	if (sigsetjmp(g.jb, 0) == 0) { ...reads of mapped bytes... }
 *	base_guard_pop(&g);
 *	if (g.faulted) ...the file shrank: what was read is not to be trusted...
 * A SIGBUS inside (the file was truncated under the mapping) jumps back to the
 * sigsetjmp with g.faulted set. Inside, only locals declared volatile (or memory
 * reached through pointers) keep what was written there, and nothing but mapped bytes
 * may fault: no call that holds a lock (malloc is fine only because it reads no
 * mapped bytes and so cannot be left half-way by a jump). Guards nest per thread.
 * base_guard_ready() must have returned true first (it installs the handler once).
 */
struct base_guard {
	sigjmp_buf jb;
	struct base_guard *prev;
	volatile bool faulted;
};
extern _Thread_local struct base_guard *base_guard_top;

static inline void base_guard_push(struct base_guard *g)
{
	g->prev = base_guard_top;
	g->faulted = false;
	base_guard_top = g;
}

static inline void base_guard_pop(struct base_guard *g)
{
	base_guard_top = g->prev;
}

/* Whether the SIGBUS handler is in place (installs it on the first call). */
bool base_guard_ready(void);
/* SIGBUS faults caught by guards so far (process-wide). */
uint64_t base_guard_faults(void);

/* The process-wide memory ledger (--memory-limit, docs/memory.md). */
#include "base/membudget.h"

#endif
