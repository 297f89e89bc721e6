/*
 * sym_table: a sorted array of function symbols searched by address, built once per
 * object (or once for the kernel) and never changed after. (An object's data symbols
 * that lie in code make a second, small one: sym_elf_info.data.)
 *
 * Constraint: lookups are the hot path and tables can hold millions of symbols across
 * a system, so an entry is 24 bytes with names as offsets into one blob per table, and
 * the one-frame result handed to callers is made on first use, once per symbol.
 * First sight of a big object is paid by whoever asks first (a 100 MB binary has ~100k
 * symbols and ~7 MB of names), so building touches no name it need not: an ELF's
 * string table is taken whole as the blob (no copy), the sort reads names only to break
 * ties at one address, and a name is demangled when a lookup first returns it, then
 * kept with the table (and accounted with it).
 *
 * Where a symbol ends:
 *   sized (st_size > 0)        [start, start + size)
 *   unsized, next in region    [start, next.start)
 *   unsized, last of region    [start, min(next.start, start + SYM_UNSIZED_TAIL))
 * and never past its bound (the end of its ELF section).
 */
#include "symbolize/sym_internal.h"
#include "base/base.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* How many earlier symbols to try when addr is past the nearest one (nested symbols). */
#define SYM_LOOKBACK 4

/* 2 MiB: an x86-64 (and arm64 4K-granule) PMD, the transparent huge page size. */
#define SYM_HUGE_PAGE ((uintptr_t)2 << 20)

void sym_hugepage_hint(void *p, size_t len)
{
	uintptr_t lo = ((uintptr_t)p + SYM_HUGE_PAGE - 1) & ~(SYM_HUGE_PAGE - 1);
	uintptr_t hi = ((uintptr_t)p + len) & ~(SYM_HUGE_PAGE - 1);

	/* the range is inside the block, so no other block's memory changes now; glibc
	 * gives a block this big a mapping of its own (gone with it when freed), or a heap
	 * range, which keeps the flag after the free: later blocks there may get huge
	 * pages too, no harm beyond that */
	if (p && hi > lo)
		madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

/* Copies s into the blob; *off is where. 0 or -ENOMEM (also past 4 GiB of names). */
static int names_add(struct sym_builder *b, const char *s, uint32_t *off)
{
	size_t n = strlen(s) + 1;

	if (n >= SYM_NO_NAME || b->len >= SYM_NO_NAME - n)
		return -ENOMEM;
	/* per symbol: the call only when full */
	if (b->len + n > b->names_cap &&
	    base_grow((void **)&b->names, &b->names_cap, b->len + n, 1))
		return -ENOMEM;
	memcpy(b->names + b->len, s, n);
	*off = (uint32_t)b->len;
	b->len += n;
	return 0;
}

/* Room for one more symbol: 1, 0 when the table is full (the symbol is skipped),
 * or -ENOMEM. */
static int room_for_one(struct sym_builder *b)
{
	if (b->n >= SYM_MAX_SYMBOLS)
		return 0;
	if (b->n >= b->cap && base_grow((void **)&b->raw, &b->cap, b->n + 1, sizeof(*b->raw)))
		return -ENOMEM;
	return 1;
}

int sym_builder__add(struct sym_builder *b, const struct sym_raw *r, const char *name,
		     const char *display)
{
	struct sym_raw raw = *r;
	int err = room_for_one(b);

	if (err <= 0)
		return err;
	raw.name = raw.display = SYM_NO_NAME;
	if (name) {
		if ((err = names_add(b, name, &raw.name)))
			return err;
		raw.display = raw.name;
		if (display && (err = names_add(b, display, &raw.display)))
			return err;
	}
	b->raw[b->n++] = raw;
	return 0;
}

void sym_builder__adopt_names(struct sym_builder *b, char *names, size_t len)
{
	free(b->names);
	b->names = names;
	b->len = b->names_cap = len;
	b->adopted = true;
}

int sym_builder__reserve(struct sym_builder *b, size_t n)
{
	struct sym_raw *arr;

	n = n < SYM_MAX_SYMBOLS ? n : SYM_MAX_SYMBOLS;
	if (n <= b->cap)
		return 0;
	if (!(arr = realloc(b->raw, n * sizeof(*arr)))) /* layers: an exact size, not growth */
		return -ENOMEM;
	b->raw = arr;
	b->cap = n;
	/* filled by the caller's loop right after, most of it (its function symbols) */
	sym_hugepage_hint(arr, n * sizeof(*arr));
	return 0;
}

int sym_builder__add_at(struct sym_builder *b, const struct sym_raw *r)
{
	int room = room_for_one(b);

	if (room <= 0)
		return room;
	b->raw[b->n] = *r;
	b->raw[b->n++].display = r->name;
	return 0;
}

void sym_builder__adopt_map(struct sym_builder *b, struct sym_map *m)
{
	free(b->names);
	b->names = NULL;
	b->len = b->names_cap = 0;
	sym_map__close(&b->map);
	b->map = *m;
	memset(m, 0, sizeof(*m));
	b->adopted = true;
}

void sym_builder__fini(struct sym_builder *b)
{
	free(b->raw);
	free(b->names);
	sym_map__close(&b->map);
	memset(b, 0, sizeof(*b));
}

/* The leading '_' of r's name (what breaks ties), reading a mapped name in place. */
static size_t raw_underscores(const struct sym_builder *b, const struct sym_raw *r)
{
	const char *p;
	size_t n = 0, max;

	if (r->name == SYM_NO_NAME)
		return 0;
	if (!b->map.p)
		return strspn(b->names + r->name, "_");
	p = b->map.p + r->name;
	max = b->map.len - r->name;
	while (n < max && p[n] == '_')
		n++;
	return n;
}

/*
 * Whether r's name carries a symbol version: a .symtab spells a versioned definition
 * so ("clock_gettime@@GLIBC_2.17", "vfn@@V1"); .dynsym keeps versions apart.
 */
static bool raw_versioned(const struct sym_builder *b, const struct sym_raw *r)
{
	const char *p;
	size_t max;

	if (r->name == SYM_NO_NAME)
		return false;
	if (!b->map.p)
		return strchr(b->names + r->name, '@') != NULL;
	p = b->map.p + r->name;
	max = b->map.len - r->name;
	for (size_t n = 0; n < max && p[n]; n++)
		if (p[n] == '@')
			return true;
	return false;
}

/*
 * Whether later, a symbol at the same address as earlier and after it in the file,
 * wins over it: a higher rank, else a name without a version over one with (libc's
 * debug file: __clock_gettime, as its DWARF and llvm-symbolizer name it, not
 * clock_gettime@GLIBC_2.2.5), else fewer leading '_', else (a tie) yes: the last in
 * the file wins, as llvm-symbolizer picks, so the aliases that identical code folding
 * leaves (template instances, D1/D2 pairs) show the same name in both tools.
 */
static bool raw_wins(const struct sym_raw *later, const struct sym_raw *earlier,
		     const struct sym_builder *b)
{
	size_t ul, ue;
	bool vl, ve;

	/* names only for ties of rank: each one read is a cache miss on a big object */
	if (later->rank != earlier->rank)
		return later->rank > earlier->rank;
	vl = raw_versioned(b, later);
	ve = raw_versioned(b, earlier);
	if (vl != ve)
		return ve;
	ul = raw_underscores(b, later);
	ue = raw_underscores(b, earlier);
	return ul <= ue;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* End of r, whose successor by address (one symbol per address) is next (see file top). */
static uint64_t raw_end(const struct sym_raw *r, const struct sym_raw *next)
{
	uint64_t end;

	if (r->size)
		end = sat_add(r->start, r->size);
	else if (next && next->region == r->region)
		end = next->start;
	else
		end = min_u64(next ? next->start : UINT64_MAX, sat_add(r->start, SYM_UNSIZED_TAIL));
	return min_u64(end, r->bound);
}

/* How many symbols ahead a loop in address order asks for the raw one it will read. */
#define SYM_GATHER_AHEAD 16

/* A symbol's start and its index in the builder: what the sort moves. */
struct sym_key {
	uint64_t start, idx;
};

/* Radix sort digits: 11 bits (2048 counters, 16 KiB: in L1 with room), so the ~26
 * bits in which a big object's starts differ take 3 passes, not 4 of 8 bits. */
#define SYM_RADIX_BITS 11
#define SYM_RADIX      (1u << SYM_RADIX_BITS)
#define SYM_RADIX_MAX  ((64 + SYM_RADIX_BITS - 1) / SYM_RADIX_BITS)

/*
 * Stable LSD radix sort of k[0, n) by start, SYM_RADIX_BITS per pass, skipping the
 * digits all starts share. Every pass's counts are taken in one read of k before the
 * first. tmp has room for n. Returns whichever of k, tmp holds the result. A comparison
 * sort of the 40-byte raw symbols through a callback was ~10% of a big binary's first
 * sight. NULL on ENOMEM.
 */
static struct sym_key *key_sort(struct sym_key *k, struct sym_key *tmp, size_t n)
{
	uint32_t (*count)[SYM_RADIX]; /* per pass; 32 bits: n <= SYM_MAX_SYMBOLS */
	unsigned shift[SYM_RADIX_MAX], passes = 0;
	uint64_t diff = 0;

	for (size_t i = 1; i < n; i++)
		diff |= k[i].start ^ k[0].start;
	for (unsigned s = 0; s < 64; s += SYM_RADIX_BITS)
		if ((diff >> s) & (SYM_RADIX - 1))
			shift[passes++] = s;
	if (!passes || !(count = calloc(passes, sizeof(*count))))
		return passes ? NULL : k;
	for (size_t i = 0; i < n; i++)
		for (unsigned p = 0; p < passes; p++)
			count[p][(k[i].start >> shift[p]) & (SYM_RADIX - 1)]++;
	for (unsigned p = 0; p < passes; p++) {
		uint32_t pos = 0, *c = count[p];
		struct sym_key *swap;

		for (size_t v = 0; v < SYM_RADIX; v++) {
			uint32_t here = c[v];

			c[v] = pos;
			pos += here;
		}
		for (size_t i = 0; i < n; i++)
			tmp[c[(k[i].start >> shift[p]) & (SYM_RADIX - 1)]++] = k[i];
		swap = k;
		k = tmp;
		tmp = swap;
	}
	free(count);
	return k;
}

/*
 * b's symbols by start, one per address: the winner among each address's symbols
 * (raw_wins; the sort is stable, so they come in file order). Into *sorted (within
 * *keys, which the caller frees) the winners' keys; returns their count. -ENOMEM in
 * *err. The raw symbols are not moved: each page of a big object's arrays touched
 * for the first time costs a page fault, the larger part of reading its symbols.
 */
static size_t sort_unique(const struct sym_builder *b, struct sym_key **keys,
			  struct sym_key **sorted, int *err)
{
	struct sym_key *k;
	size_t m = 0;

	*err = 0;
	if (!(*keys = malloc((b->n ? b->n : 1) * 2 * sizeof(**keys)))) {
		*err = -ENOMEM;
		return 0;
	}
	sym_hugepage_hint(*keys, b->n * 2 * sizeof(**keys));
	for (size_t i = 0; i < b->n; i++)
		(*keys)[i] = (struct sym_key){b->raw[i].start, i};
	if (!(k = *sorted = key_sort(*keys, *keys + b->n, b->n))) {
		*err = -ENOMEM;
		return 0;
	}
	for (size_t i = 0, j; i < b->n; i = j) {
		struct sym_key best = k[i];

		/* the raw symbols are read in address order, which is not the file's: each a
		 * cache miss unless asked for ahead */
		if (i + SYM_GATHER_AHEAD < b->n)
			__builtin_prefetch(&b->raw[k[i + SYM_GATHER_AHEAD].idx]);
		for (j = i + 1; j < b->n && k[j].start == k[i].start; j++)
			if (raw_wins(&b->raw[k[j].idx], &b->raw[best.idx], b))
				best = k[j];
		k[m++] = best; /* m <= i: nothing unread is overwritten */
	}
	return m;
}

/* Copies the builder's name at off to dst + *pos; returns its offset in dst. */
static uint32_t move_name(const struct sym_builder *b, char *dst, size_t *pos, uint32_t off)
{
	size_t n = strlen(b->names + off) + 1, at = *pos;

	memcpy(dst + at, b->names + off, n);
	*pos += n;
	return (uint32_t)at;
}

/*
 * Copies only the names the kept entries use into t->names_owned, rewriting their
 * offsets; disp[i] is entry i's shown name in the builder (kept in t->display when
 * some entry's differs from its raw name). 0 or -ENOMEM.
 */
static int compact_names(const struct sym_builder *b, struct sym_table *t, uint32_t *disp)
{
	size_t len = 0, pos = 0;
	bool any_display = false;

	for (size_t i = 0; i < t->n; i++) {
		const struct sym_entry *e = &t->syms[i];

		if (e->name != SYM_NO_NAME)
			len += strlen(b->names + e->name) + 1;
		if (disp[i] != e->name) {
			len += strlen(b->names + disp[i]) + 1;
			any_display = true;
		}
	}
	t->names_owned = malloc(len ? len : 1);
	if (!t->names_owned)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		struct sym_entry *e = &t->syms[i];
		bool same = disp[i] == e->name;

		if (e->name == SYM_NO_NAME)
			continue;
		e->name = move_name(b, t->names_owned, &pos, e->name);
		disp[i] = same ? e->name : move_name(b, t->names_owned, &pos, disp[i]);
	}
	t->names = t->names_owned;
	t->names_len = len;
	if (any_display) {
		t->display = disp;
		return 1;
	}
	return 0;
}

/* t->top for a table big enough to want it. 0 or -ENOMEM. */
int sym_table__top_index(struct sym_table *t)
{
	if (t->n < 4 * SYM_TOP_STRIDE)
		return 0;
	t->n_top = (t->n + SYM_TOP_STRIDE - 1) / SYM_TOP_STRIDE;
	if (!(t->top = malloc(t->n_top * sizeof(*t->top))))
		return -ENOMEM;
	for (size_t k = 0; k < t->n_top; k++)
		t->top[k] = t->syms[k * SYM_TOP_STRIDE].start;
	return 0;
}

int sym_builder__finish(struct sym_builder *b, struct sym_table *t)
{
	struct sym_key *keys = NULL, *k = NULL;
	uint32_t *disp = NULL;
	size_t n;
	int err = 0;

	memset(t, 0, sizeof(*t));
	n = sort_unique(b, &keys, &k, &err);
	if (err)
		goto cleanup;
	t->syms = malloc((n ? n : 1) * sizeof(*t->syms));
	if (!t->syms || (!b->adopted && !(disp = malloc((n ? n : 1) * sizeof(*disp))))) {
		err = -ENOMEM;
		goto cleanup;
	}
	sym_hugepage_hint(t->syms, n * sizeof(*t->syms)); /* looked up at random */
	t->base = n ? b->raw[k[0].idx].start : 0;
	for (size_t i = 0; i < n; i++) {
		const struct sym_raw *r = &b->raw[k[i].idx];
		uint64_t end;

		if (i + SYM_GATHER_AHEAD < n) /* as in sort_unique */
			__builtin_prefetch(&b->raw[k[i + SYM_GATHER_AHEAD].idx]);
		end = raw_end(r, i + 1 < n ? &b->raw[k[i + 1].idx] : NULL);
		/* past 4 GiB from the first symbol: not a real object's code, dropped */
		if (end <= r->start || r->start - t->base > UINT32_MAX)
			continue;
		if (disp)
			disp[t->n] = r->display;
		t->syms[t->n++] = (struct sym_entry){
		    (uint32_t)(r->start - t->base),
		    end - r->start > UINT32_MAX ? UINT32_MAX : (uint32_t)(end - r->start), r->name};
	}
	/* The sort's keys and the raw entries are done with: freed before the names
	 * are compacted (kallsyms: 4 + 5 MB that were held beside the 3 MB copy of
	 * the names, the agent's start-up peak under --memory-limit). */
	free(keys);
	keys = NULL;
	free(b->raw);
	b->raw = NULL;
	b->n = b->cap = 0;
	if ((err = sym_table__top_index(t)))
		goto cleanup;
	if (b->map.p) { /* the string table mapped: kept whole, no name touched */
		t->map = b->map;
		memset(&b->map, 0, sizeof(b->map));
		t->names = t->map.p;
		t->names_len = t->map.len;
	} else if (b->adopted) { /* the string table as read: kept whole */
		t->names = t->names_owned = b->names;
		t->names_len = b->len;
		b->names = NULL;
	} else if ((err = compact_names(b, t, disp)) > 0) {
		disp = NULL; /* kept as t->display */
		err = 0;
	}
cleanup:
	free(keys);
	free(disp);
	if (err)
		sym_table__fini(t);
	sym_builder__fini(b);
	return err;
}

void sym_table__fini(struct sym_table *t)
{
	for (size_t i = 0; i < t->cap_results; i++)
		free(t->results[i].r);
	while (t->chunks) { /* the shown names live in them */
		void *next;

		memcpy(&next, t->chunks, sizeof(next));
		free(t->chunks);
		t->chunks = next;
	}
	free(t->shown);
	free(t->top);
	free(t->results);
	free(t->syms);
	free(t->display);
	free(t->names_owned);
	free(t->touched);
	sym_map__close(&t->map);
	memset(t, 0, sizeof(*t));
}

/*
 * The stretch [*lo, *hi) of syms that the search for rel (an address minus t->base)
 * can stay in, from t->top: syms[< lo].start <= rel < syms[>= hi].start. A lookup in a big object's
 * table then misses the cache on the few entries of one stretch, not at every halving of it all.
 */
static void top_bounds(const struct sym_table *t, uint32_t rel, size_t *lo, size_t *hi)
{
	size_t a = 0, b = t->n_top;

	while (a < b) { /* first k with top[k] > addr */
		size_t mid = a + (b - a) / 2;

		if (t->top[mid] <= rel)
			a = mid + 1;
		else
			b = mid;
	}
	*lo = a ? (a - 1) * SYM_TOP_STRIDE : 0;
	*hi = a * SYM_TOP_STRIDE < t->n ? a * SYM_TOP_STRIDE : t->n;
	/* the stretch's cache lines asked for at once: its halvings then wait for one
	 * memory round trip, not one each (they were most of a lookup's time) */
	for (const char *p = (const char *)&t->syms[*lo]; p < (const char *)&t->syms[*hi]; p += 64)
		__builtin_prefetch(p);
}

long sym_table__find(const struct sym_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;
	uint32_t rel;

	if (t->broken || !t->n || addr < t->base)
		return -1;
	if (addr - t->base > UINT32_MAX) /* no start is that far, nor any end */
		return -1;
	rel = (uint32_t)(addr - t->base);
	if (t->top)
		top_bounds(t, rel, &lo, &hi);
	/* Invariant: syms[< lo].start <= rel < syms[>= hi].start. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->syms[mid].start <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = 0; k < SYM_LOOKBACK && lo > k; k++) {
		const struct sym_entry *e = &t->syms[lo - 1 - k];

		if ((uint64_t)rel < (uint64_t)e->start + e->size)
			return e->name == SYM_NO_NAME ? -1 : (long)(lo - 1 - k);
	}
	return -1;
}

/* The slot of symbol i in t->results (or the empty one where it goes). */
static struct sym_result_slot *result_probe(struct sym_result_slot *s, size_t cap, size_t i)
{
	size_t k = (size_t)base_hash_u64(BASE_HASH_SEED, i) & (cap - 1);

	while (s[k].r && s[k].i != i)
		k = (k + 1) & (cap - 1); /* layers: key in the slot, as sym_dwarf.c's */
	return &s[k];
}

/* Room for one more result (the table kept at most half full). 0 or -ENOMEM. */
static int results_room(struct sym_table *t)
{
	struct sym_result_slot *s;
	size_t cap;

	if ((t->n_results + 1) * 2 <= t->cap_results)
		return 0;
	cap = t->cap_results ? t->cap_results * 2 : 256;
	if (!(s = calloc(cap, sizeof(*s))))
		return -ENOMEM;
	for (size_t k = 0; k < t->cap_results; k++)
		if (t->results[k].r)
			*result_probe(s, cap, t->results[k].i) = t->results[k];
	free(t->results);
	t->results = s;
	t->cap_results = cap;
	return 0;
}

/* For tables with owned names only (the kernel's): their strings are never mapped.
 * Kept by index in a hash, not an array of every symbol: an array's pages (1 MB for
 * 122k kernel symbols) all became resident as a profile's few hundred hits spread. */
const struct sym_result *sym_table__result(struct sym_table *t, size_t i)
{
	struct sym_result_slot *slot;
	struct sym_result *r;

	if (t->map.p)
		return NULL;
	if (t->cap_results && (slot = result_probe(t->results, t->cap_results, i))->r)
		return slot->r;
	if (results_room(t) || !(r = calloc(1, sizeof(*r))))
		return NULL;
	r->n = 1;
	r->frames[0].name = t->names + (t->display ? t->display[i] : t->syms[i].name);
	r->frames[0].system_name = t->names + t->syms[i].name;
	*result_probe(t->results, t->cap_results, i) = (struct sym_result_slot){i, r};
	t->n_results++;
	return r;
}

/*
 * The unit of the touched bitmap (the names' account): a fault on a mapped file maps
 * the pages around it that are in the page cache too (the kernel's fault-around,
 * 64 KiB aligned by default), so each 64 KiB of address space read counts whole.
 */
#define SYM_PAGE 65536u

/* Notes that the mapped bytes [off, off + len) of names were read. */
static void touch(struct sym_table *t, uint64_t off, uint64_t len)
{
	uintptr_t first = (uintptr_t)t->map.base / SYM_PAGE;
	uintptr_t at = (uintptr_t)(t->map.p + off);
	size_t pages = ((uintptr_t)t->map.base + t->map.map_len - 1) / SYM_PAGE - first + 1;

	if (!t->touched && !(t->touched = calloc((pages + 63) / 64, sizeof(uint64_t))))
		return;
	for (uint64_t pg = at / SYM_PAGE - first; pg <= (at + len) / SYM_PAGE - first && pg < pages;
	     pg++) {
		if (!(t->touched[pg / 64] & (1ULL << (pg % 64)))) {
			t->touched[pg / 64] |= 1ULL << (pg % 64);
			t->touched_bytes += SYM_PAGE; /* at most the map's size, give or take */
		}
	}
}

/*
 * Names block of one symbol: a uint32_t header (raw length, bit 31: a demangled name
 * follows), the raw name and its NUL, then the demangled one and its NUL.
 */
#define SYM_DEMANGLED 0x80000000u

/* Raw names up to this long are copied to the stack first (one allocation per name). */
#define SYM_NAME_STACK 4096

/*
 * Copies symbol i's raw name (len bytes, no NUL) out of t into dst, under a guard when
 * mapped (strnlen first: len 0 there measures it; dst NULL: only measure). 0, or -EIO
 * when the mapping faulted (t is broken from now on).
 */
static int copy_raw(struct sym_table *t, size_t i, char *dst, volatile size_t *len)
{
	uint64_t off = t->syms[i].name;
	struct base_guard g;

	if (!t->map.p) {
		if (!dst)
			*len = strlen(t->names + off);
		else
			memcpy(dst, t->names + off, *len);
		return 0;
	}
	base_guard_push(&g);
	if (sigsetjmp(g.jb, 0) == 0) {
		if (!dst)
			*len = strnlen(t->names + off, t->names_len - off);
		else
			memcpy(dst, t->names + off, *len);
	}
	base_guard_pop(&g);
	if (g.faulted) {
		t->broken = true;
		return -EIO;
	}
	if (!dst)
		touch(t, off, *len + 1);
	return 0;
}

/* The names copied out are allocated in chunks of this size (one per bigger name). */
#define SYM_ARENA_CHUNK ((size_t)64 << 10)

/* n bytes (4-aligned) from t's arena; NULL on ENOMEM. Freed with the table. */
static char *arena_alloc(struct sym_table *t, size_t n)
{
	size_t size;
	char *c;

	n = (n + 3) & ~(size_t)3;
	if (n > t->arena_left) {
		size = n + sizeof(void *) > SYM_ARENA_CHUNK ? n + sizeof(void *) : SYM_ARENA_CHUNK;
		if (!(c = malloc(size))) /* layers: an arena, freed whole with the table */
			return NULL;
		memcpy(c, &t->chunks, sizeof(void *));
		t->chunks = c;
		t->shown_bytes += size;
		if (size > SYM_ARENA_CHUNK) /* a big name's own: the newest chunk stays */
			return c + sizeof(void *);
		t->arena = c + sizeof(void *);
		t->arena_left = size - sizeof(void *);
	}
	c = t->arena;
	t->arena += n;
	t->arena_left -= n;
	return c;
}

/*
 * Symbol i's raw name into stack (NUL-terminated) in one pass when it is shorter than
 * the stack, under a guard when mapped: 1 with *len, 0 when it is longer (the caller
 * measures, then copies), -EIO when the mapping faulted (t is broken from now on).
 */
static int copy_short(struct sym_table *t, size_t i, char *stack, volatile size_t *len)
{
	uint64_t off = t->syms[i].name, max = t->names_len - off;
	size_t room = max < SYM_NAME_STACK ? (size_t)max : SYM_NAME_STACK;
	char *volatile end = NULL;
	struct base_guard g;

	if (!t->map.p) {
		end = memccpy(stack, t->names + off, '\0', room);
	} else {
		base_guard_push(&g);
		if (sigsetjmp(g.jb, 0) == 0)
			end = memccpy(stack, t->names + off, '\0', room);
		base_guard_pop(&g);
		if (g.faulted) {
			t->broken = true;
			return -EIO;
		}
	}
	if (end) {
		*len = (size_t)(end - stack) - 1;
	} else if (room == max && room < SYM_NAME_STACK) { /* the table ends unterminated */
		*len = room;
		stack[room] = '\0';
	} else {
		return 0;
	}
	if (t->map.p)
		touch(t, off, *len + 1);
	return 1;
}

/* Symbol i's names block (see SYM_DEMANGLED), made. NULL with *err. */
static char *names_block(struct sym_table *t, size_t i, int *err)
{
	char stack[SYM_NAME_STACK + 1], *raw = stack, *dem, *blk;
	volatile size_t len = 0;
	size_t dl;
	uint32_t hdr;
	int got = copy_short(t, i, stack, &len);

	if (got < 0) {
		*err = got;
		return NULL;
	}
	*err = 0;
	if (got)
		goto copied;
	if ((*err = copy_raw(t, i, NULL, &len)))
		return NULL;
	if (len >= SYM_DEMANGLED) {
		*err = -EIO;
		return NULL;
	}
	if (len >= sizeof(stack) && !(raw = malloc(len + 1))) {
		*err = -ENOMEM;
		return NULL;
	}
	if ((*err = copy_raw(t, i, raw, &len))) {
		if (raw != stack)
			free(raw);
		return NULL;
	}
	raw[len] = '\0';
copied:
	/* demangled from our copy: the demangler never reads the mapping. A NULL from
	 * sym_demangle may also be its ENOMEM: the raw name is kept then (never a wrong
	 * name, and not retried per lookup) */
	dem = sym_demangle(raw);
	dl = dem ? strlen(dem) + 1 : 0;
	hdr = (uint32_t)len | (dem ? SYM_DEMANGLED : 0);
	if ((blk = arena_alloc(t, sizeof(hdr) + len + 1 + dl))) {
		memcpy(blk, &hdr, sizeof(hdr));
		memcpy(blk + sizeof(hdr), raw, len + 1);
		if (dem)
			memcpy(blk + sizeof(hdr) + len + 1, dem, dl);
	} else {
		*err = -ENOMEM;
	}
	free(dem);
	if (raw != stack)
		free(raw);
	return blk;
}

uint64_t sym_table__drop_pages(struct sym_table *t)
{
	uint64_t was = t->touched_bytes;

	if (!t->map.base || !was)
		return 0;
	madvise(t->map.base, t->map.map_len, MADV_DONTNEED);
	memset(t->touched, 0,
	       ((((uintptr_t)t->map.base + t->map.map_len - 1) / SYM_PAGE -
		 (uintptr_t)t->map.base / SYM_PAGE + 1 + 63) /
		64) *
		   sizeof(uint64_t));
	t->touched_bytes = 0;
	return was;
}

int sym_table__names(struct sym_table *t, size_t i, const char **system_name, const char **name)
{
	char *blk;
	uint32_t hdr;
	int err;

	if (t->broken)
		return -EIO;
	if (!t->shown) {
		if (!(t->shown = calloc(t->n, sizeof(*t->shown))))
			return -ENOMEM;
		t->shown_bytes += malloc_usable_size(t->shown);
	}
	if (!(blk = t->shown[i])) {
		if (!(blk = names_block(t, i, &err)))
			return err;
		t->shown[i] = blk; /* in the arena: counted per chunk */
	}
	memcpy(&hdr, blk, sizeof(hdr));
	*system_name = blk + sizeof(uint32_t);
	*name = hdr & SYM_DEMANGLED ? *system_name + (hdr & ~SYM_DEMANGLED) + 1 : *system_name;
	return 0;
}

/* The kernel's lazily made results are not counted: its table is outside the budget,
 * and an object's table never makes any. */
uint64_t sym_table__bytes(const struct sym_table *t)
{
	return t->n * sizeof(*t->syms) + t->n_top * sizeof(*t->top) +
	       (t->display ? t->n * sizeof(*t->display) : 0) +
	       (t->names_owned ? malloc_usable_size(t->names_owned) : 0) + t->shown_bytes +
	       t->touched_bytes;
}
