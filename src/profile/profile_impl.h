/*
 * Private to src/profile/: the building blocks the model and its encoders share
 * (hashing, an open-addressing index, a string interner, a bump arena, a growing
 * string buffer) and the few model internals the pprof encoder needs (string ids).
 * Other modules include only profile.h.
 *
 * Every name here starts with profile_ so the module links next to the others
 * without clashes.
 */
#ifndef HEARTH_PROFILE_IMPL_H
#define HEARTH_PROFILE_IMPL_H

#include "profile.h"

#include <stdarg.h>

/* ---- arithmetic ---- */

/* a + b clamped to [INT64_MIN, INT64_MAX]: merged sample values never overflow (UB). */
static inline int64_t profile_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* a * b clamped to [INT64_MIN, INT64_MAX]: a count times a period never wraps. */
static inline int64_t profile_sat_mul(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_mul_overflow(a, b, &r))
		return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
	return r;
}

/* Grows *arr (of *cap elements of elem bytes) to hold at least need elements, doubling.
 * 0 or -ENOMEM (also when the byte size would overflow size_t). */
int profile_grow(void **arr, size_t *cap, size_t need, size_t elem);

/* FNV-1a over bytes, and a 64-bit mix for integers; seed with PROFILE_HASH_SEED. */
#define PROFILE_HASH_SEED 0xcbf29ce484222325ull
uint64_t profile_hash_bytes(uint64_t h, const void *p, size_t n);
uint64_t profile_hash_u64(uint64_t h, uint64_t v);

/* ---- open-addressing index: hash -> element index of the caller's array ---- */

struct profile_hidx {
	struct profile_hslot {
		uint64_t hash;
		size_t idx1; /* element index + 1; 0 = empty slot */
	} * slots;
	size_t cap; /* power of two or 0 */
	size_t n;
};

/* Says whether element idx of the caller's array equals key. */
typedef bool (*profile_eq_fn)(const void *ctx, size_t idx, const void *key);

/* Index of the first element with this hash for which eq says yes; SIZE_MAX when none. */
size_t profile_hidx__find(const struct profile_hidx *h, uint64_t hash, profile_eq_fn eq,
			  const void *ctx, const void *key);
/* Records element idx under hash (the caller checked it is new). 0 or -ENOMEM. */
int profile_hidx__insert(struct profile_hidx *h, uint64_t hash, size_t idx);
void profile_hidx__fini(struct profile_hidx *h);

/* ---- bump arena: many small blocks freed at once (an encoder run, a profile's records,
 * a string table) ---- */

struct profile_arena {
	struct profile_arena_block *head;
};

/* Zeroed memory of n * size bytes aligned for any type, or NULL (ENOMEM, overflow). */
void *profile_arena__alloc(struct profile_arena *a, size_t n, size_t size);
/* A copy of n * size bytes of src in the arena (n may be 0: a valid pointer), or NULL. */
void *profile_arena__copy(struct profile_arena *a, const void *src, size_t n, size_t size);
/* Room for n * size bytes at the arena's end, not taken: the next take of at most that
 * many bytes (profile_arena__take) returns the same pointer. NULL on ENOMEM. */
void *profile_arena__room(struct profile_arena *a, size_t n, size_t size);
/* n * size bytes of the arena, not zeroed, or NULL. */
void *profile_arena__take(struct profile_arena *a, size_t n, size_t size);
void profile_arena__fini(struct profile_arena *a);

/* ---- string interner: id 0 is always "" (the pprof string_table rule) ---- */

struct profile_strtab {
	char **strs; /* in the arena: pointers stay valid while the table grows */
	size_t n, cap;
	struct profile_hidx idx;
	struct profile_arena arena; /* the strings' bytes, freed all at once */
};

int profile_strtab__init(struct profile_strtab *st);
void profile_strtab__fini(struct profile_strtab *st);
/* Id of s (NULL is ""), adding a copy when new; -ENOMEM. */
int64_t profile_strtab__intern(struct profile_strtab *st, const char *s);
/* Id of s, or -ENOENT when it was never interned. */
int64_t profile_strtab__find(const struct profile_strtab *st, const char *s);

/* ---- growing string: errors are sticky and checked once at the end ---- */

struct profile_sbuf {
	char *s; /* owned, always NUL-terminated once anything was appended */
	size_t len, cap;
	int err; /* 0 or -ENOMEM */
};

void profile_sbuf__append(struct profile_sbuf *b, const char *s, size_t n);
void profile_sbuf__puts(struct profile_sbuf *b, const char *s);
__attribute__((format(printf, 2, 3))) void profile_sbuf__printf(struct profile_sbuf *b,
								const char *fmt, ...);
void profile_sbuf__fini(struct profile_sbuf *b);

/* ---- model internals used by the pprof codec ---- */

/* The profile's string table: ids 0..n-1, id 0 is "". */
size_t profile__n_strings(const struct profile *p);
const char *profile__string(const struct profile *p, size_t id);
/* String id of an interned string, -ENOENT when absent. */
int64_t profile__string_id(const struct profile *p, const char *s);
/* Interns s (NULL is "") and returns its string id, or -ENOMEM. */
int64_t profile__intern_string(struct profile *p, const char *s);
/* profile__function by string ids (name, system_name, filename); 0 when an id is
 * out of range or out of memory. */
uint64_t profile__function_by_sids(struct profile *p, const int64_t sids[3]);
/* A sample label by string ids: str 0 ("") makes it a numeric label (num). */
struct profile_label_sids {
	int64_t key, str, num;
};
/* profile__add_sample with labels given as string ids of p: the decoder interns a
 * file's string table once instead of every label of every sample. 0, -EINVAL
 * (bad location or string id), -ENOMEM. */
int profile__add_sample_sids(struct profile *p, const uint64_t *locs, size_t n_locs,
			     const int64_t values[PROFILE_N_VALUES],
			     const struct profile_label_sids *labels, size_t n_labels);
/* String ids of a mapping's file/build_id and a function's name/system_name/filename. */
int profile__mapping_sids(const struct profile *p, uint64_t id, int64_t *file, int64_t *build_id);
int profile__function_sids(const struct profile *p, uint64_t id, int64_t sids[3]);
/* Comment i as a string id. */
int64_t profile__comment_sid(const struct profile *p, size_t i);
/*
 * Like profile__location but keyed by (mapping_id, address, lines): a decoded pprof
 * may hold several locations at one address (address 0 is common) with different
 * lines, and they must stay apart.
 */
uint64_t profile__location_exact(struct profile *p, uint64_t mapping_id, uint64_t address,
				 const struct profile_line *lines, size_t n_lines);

/* Display name of a frame; inline_suffix false leaves PROFILE_INLINE_SUFFIX off
 * (top counts an inlined function under its own name, like pprof). */
const char *profile__frame_name_ex(const struct profile *p, const struct profile_location *loc,
				   size_t line, bool inline_suffix, char *buf, size_t len);

/* What kind of code a frame is, for colours. */
enum profile_frame_kind {
	PROFILE_FRAME_USER,
	PROFILE_FRAME_INLINE,
	PROFILE_FRAME_KERNEL,
	PROFILE_FRAME_UNKNOWN, /* not symbolized */
};
enum profile_frame_kind profile__frame_kind(const struct profile *p,
					    const struct profile_location *loc, size_t line);

/* Room for one frame name (longer names are truncated). */
#define PROFILE_NAME_MAX 1024

#endif /* HEARTH_PROFILE_IMPL_H */
