/*
 * Private to src/symbolize: the sorted symbol table shared by ELF objects and the
 * kernel, the ELF reader and the kallsyms reader. Other modules include symbolize.h.
 */
#ifndef HEARTH_SYM_INTERNAL_H
#define HEARTH_SYM_INTERNAL_H

#include "base/base.h"
#include "object/object.h"
#include "symbolize/symbolize.h"

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An unsized symbol that is last in its region covers at most this much. */
#define SYM_UNSIZED_TAIL (64 * 1024)
/* More symbols than this in one table is not a real object; the rest are ignored. */
#define SYM_MAX_SYMBOLS (16u << 20)
/* A lookup's first search is over every SYM_TOP_STRIDE-th start (sym_table.top). */
#define SYM_TOP_STRIDE 16
/* name offset of a symbol that only ends the one before it (kernel "_etext"). */
#define SYM_NO_NAME UINT32_MAX

/* ---- sym_map.c: read-only mappings of file ranges, and the SIGBUS guard ---- */

/* A mapped range [p, p + len) of a file (p need not be page-aligned). */
struct sym_map {
	void *base; /* what mmap returned, NULL = none */
	size_t map_len;
	const char *p;
	uint64_t len;
};

/*
 * Maps [off, off + len) of fd (a file of file_size bytes) read-only, with mmap flags
 * (MAP_POPULATE) besides MAP_PRIVATE. 0, -ENOEXEC (the range is not inside the file),
 * -ENOTSUP (no SIGBUS guard could be installed), -errno.
 */
int sym_map__open(int fd, uint64_t file_size, uint64_t off, uint64_t len, int flags,
		  struct sym_map *m);
void sym_map__close(struct sym_map *m);
/* Reads of mapped bytes run under base_guard (src/base/busguard.c). */

/*
 * One function: [base + start, base + start + size). 12 bytes: a table spans less than
 * 4 GiB of addresses (a symbol past that is dropped), a function is shorter than 4 GiB.
 */
struct sym_entry {
	uint32_t start; /* minus sym_table.base */
	uint32_t size;
	uint32_t name; /* offset in sym_table.names: raw name, or SYM_NO_NAME */
};

/* A symbol's shared result (sym_table__result); r NULL: an empty slot. */
struct sym_result_slot {
	size_t i;
	struct sym_result *r;
};

/*
 * Sorted by start, non-overlapping starts; immutable once built, but for what lookups
 * fill in lazily (names copied out and demangled, results).
 */
struct sym_table {
	uint64_t base;		/* address of syms[0] */
	struct sym_entry *syms; /* owned */
	size_t n;
	/* owned: per symbol, the offset of its shown name ("f [module]") in names; NULL
	 * when every symbol shows its raw name (every object's table) */
	uint32_t *display;
	/* owned: syms[k * SYM_TOP_STRIDE].start, searched first (small enough to stay in
	 * cache; the entries of a big object are not); NULL for a small table */
	uint32_t *top;
	size_t n_top;
	/* the name blob: an ELF's string table mapped (map.base set: read only under a
	 * guard, never handed out), or names_owned */
	const char *names;
	uint64_t names_len;
	char *names_owned;
	struct sym_map map;
	bool broken; /* reading the mapping faulted: the table resolves nothing more */
	/* owned, lazily: per symbol, its names copied out on the first lookup that hit it
	 * (sym_table__names); NULL not yet */
	char **shown;
	uint64_t shown_bytes; /* the shown strings' allocations, for the account */
	/* where the names copied out live: chunks (owned, chained through their first
	 * word), and the room left in the newest */
	void *chunks;
	char *arena;
	size_t arena_left;
	/* which 4 KiB pages of the mapped names were read (bitmap, owned) and their bytes */
	uint64_t *touched;
	uint64_t touched_bytes;
	/* owned, lazily: one shared result per symbol hit, by its index (open addressing,
	 * at most half full: a kernel's 122k symbols of which a profile hits hundreds) */
	struct sym_result_slot *results;
	size_t n_results, cap_results;
};

static inline uint64_t sym_table__start(const struct sym_table *t, size_t i)
{
	return t->base + t->syms[i].start;
}

/* A symbol as read, before sorting and choosing among aliases. */
struct sym_raw {
	uint64_t start, size; /* size 0 = unknown: ends at the next symbol */
	uint64_t bound;	      /* nothing of it lies at or past this (section end) */
	uint32_t region;      /* ELF section index, or kernel module number (0 = core) */
	uint32_t name, display;
	uint8_t rank; /* which alias wins at one address: higher */
};

struct sym_builder {
	struct sym_raw *raw;
	size_t n, cap;
	char *names;
	size_t len, names_cap;
	bool adopted;	    /* names is a string table given whole (sym_builder__adopt_names) */
	struct sym_map map; /* or a string table mapped (sym_builder__adopt_map) */
};

/* Adds a symbol; display NULL = same as name, name NULL = an end marker. 0 or -ENOMEM. */
int sym_builder__add(struct sym_builder *b, const struct sym_raw *r, const char *name,
		     const char *display);
/*
 * Makes names[0, len) (malloc'd, names[len - 1] == '\0', len < SYM_NO_NAME) the name
 * blob of an empty builder, which takes it over: symbols are then added with
 * sym_builder__add_at, naming an offset in it, and the table keeps the blob as is.
 */
void sym_builder__adopt_names(struct sym_builder *b, char *names, size_t len);
/*
 * Makes the mapped string table m (of which offsets below m->len - 1 are names; the
 * last byte need not be NUL) the name blob of an empty builder, which takes it over.
 * Symbols are then added with sym_builder__add_at; building reads names only to break
 * ties, and must run under a base_guard.
 */
void sym_builder__adopt_map(struct sym_builder *b, struct sym_map *m);
/* Adds a symbol named by r->name (an offset < len in the adopted blob). 0 or -ENOMEM. */
int sym_builder__add_at(struct sym_builder *b, const struct sym_raw *r);
/* Room for n symbols in all (at most SYM_MAX_SYMBOLS), made at once. 0 or -ENOMEM. */
int sym_builder__reserve(struct sym_builder *b, size_t n);
/* Sorts, keeps one symbol per address, computes ends; b is emptied. 0 or -ENOMEM. */
int sym_builder__finish(struct sym_builder *b, struct sym_table *t);
/* t->top (the coarse index over t->syms) for a table big enough to want it.
 * 0 or -ENOMEM. */
int sym_table__top_index(struct sym_table *t);
void sym_builder__fini(struct sym_builder *b);

void sym_table__fini(struct sym_table *t);
/* Index of the named symbol holding addr, or -1 (none, or only an end marker). */
long sym_table__find(const struct sym_table *t, uint64_t addr);
/* The shared one-frame result for symbol i (from sym_table__find); NULL on ENOMEM. */
const struct sym_result *sym_table__result(struct sym_table *t, size_t i);
/*
 * Symbol i's raw name and its name demangled (the raw one when it does not demangle,
 * also when memory ran out), copied out of the table's mapping on the first call for i
 * (under a guard) and kept; valid until sym_table__fini. 0, -EIO (the mapped file
 * shrank: the table is broken from now on, and resolves nothing), -ENOMEM.
 */
int sym_table__names(struct sym_table *t, size_t i, const char **system_name, const char **name);
/*
 * Drops the pages of t's mapped names from this process's page tables (they stay in the
 * page cache; a name not yet copied out is read again from there). Returns the bytes
 * that were counted for them (0 when t has no mapping).
 */
uint64_t sym_table__drop_pages(struct sym_table *t);
/* Bytes t holds by design: entries, indexes, owned names, names copied out, and the
 * pages of its mapped names read so far (for the symbolizer's account). */
uint64_t sym_table__bytes(const struct sym_table *t);

/*
 * Asks for transparent huge pages (MADV_HUGEPAGE) on the 2 MiB-aligned part of a block
 * p[0, len) from malloc, before it is filled: one page fault per 2 MiB instead of one
 * per 4 KiB. Only for a block filled whole right away (a huge page is allocated whole).
 * Best effort: nothing changes for a small block, or when the kernel says no.
 */
void sym_hugepage_hint(void *p, size_t len);

/* What one ELF file yields; everything owned. */
struct sym_elf_info {
	struct sym_table table;
	/* data objects (STT_OBJECT) in executable sections, such as the constant tables of
	 * hand-written assembly: named only where no function of table is (what
	 * llvm-symbolizer shows there); a sampled PC never lands in them */
	struct sym_table data;
	bool damaged; /* a symbol table was unreadable; what could be read is kept */
	bool dynsym;  /* the table came from .dynsym (no .symtab functions) */
};

struct sym_elf; /* an open ELF file: fd + libelf handle */

/*
 * Opens path read-only (a regular file only). 0, -errno, or -ENOEXEC: not ELF, or its
 * header or program/section header tables do not fit in the file (truncated, corrupt).
 */
int sym_elf__open(const char *path, struct sym_elf **out);
void sym_elf__close(struct sym_elf *e);
/* Hex NT_GNU_BUILD_ID into hex ("" when none): object_elf_build_id of e. */
void sym_elf__build_id(struct sym_elf *e, char *hex, size_t len);
/* src/object's object of e (object__from_elf: dev and inode as mapped, 0 = fstat's).
 * 0, -errno. */
int sym_elf__object(struct sym_elf *e, uint64_t dev, uint64_t inode, struct object **out);
/*
 * Function symbols into info. 0, -ENOMEM, -ENOEXEC
 * (nothing usable); 0 with info->damaged when .symtab was corrupt but .dynsym was read.
 */
int sym_elf__load(struct sym_elf *e, struct sym_elf_info *info);
void sym_elf_info__fini(struct sym_elf_info *info);
/* What reading e's symbol table will need in memory at its peak (the build's temporary
 * arrays: 84 bytes a symbol), from its section headers: for the ledger. */
uint64_t sym_elf__index_bytes(struct sym_elf *e);

/* .gnu_debuglink name and CRC32. 0 or -ENOENT (none, or malformed). */
int sym_elf__debuglink(struct sym_elf *e, char *name, size_t len, uint32_t *crc);

/* Itanium C++ (_Z) and Rust (legacy _ZN..E, v0 _R) names demangled (malloc'd, the
 * caller frees); NULL for any other name, or one that does not demangle. */
char *sym_demangle(const char *sys);
/* sym_demangle.c: a _Z name of the plainest kind (no templates, operators, function
 * types...) demangled as libiberty prints it, malloc'd (NULL on ENOMEM), with
 * *declined false; NULL with *declined true for any other name (libiberty's then). */
char *sym_demangle_fast(const char *sys, bool *declined);

/* ---- sym_dwarf.c: DWARF lines and inlines, separate debug files ---- */
struct sym_dwarf;
/* Opens path's DWARF. 0, -ENOENT (no .debug_info, or unreadable), -EFBIG (compressed
 * sections to inflate past the memory ledger's budget), -ENOMEM, -errno. no_inlines:
 * inlined subroutines are not indexed (lookups give the function alone, at the same
 * file:line). */
int sym_dwarf__open(const char *path, bool no_inlines, struct sym_dwarf **out);
void sym_dwarf__close(struct sym_dwarf *d);
/* Bytes accounted for an open handle (its debug sections). */
uint64_t sym_dwarf__bytes(const struct sym_dwarf *d);
/* Drops the pages libdw read of a mapped file from our page tables (they stay in
 * the page cache; read again, they fault back in). */
void sym_dwarf__drop_pages(struct sym_dwarf *d);
/*
 * Frames for an ELF vaddr, innermost first, at most max. Strings are borrowed from d
 * (valid while open); system_name is the linkage name or the plain one ("??" when the
 * DIE has neither), name what to show: system_name demangled, else the plain DWARF
 * name, else system_name. Returns the count (0: no debug info covers vaddr), -EIO when
 * the DWARF is corrupt (said once, by the lookup that found it), or -ENOMEM.
 */
int sym_dwarf__lookup(struct sym_dwarf *d, uint64_t vaddr, struct sym_frame *frames, size_t max);
/* ROOT/.build-id/xx/rest.debug (ROOT NULL = /usr/lib/debug) into out when it exists
 * and carries build-id bid. 0, -ENOENT, or -ESTALE (exists, other build-id). */
int sym_debug__by_build_id(const char *root, const char *bid, char *out, size_t len);
/* The debuglink target of the file at path whose CRC32 is crc. 0 or -ENOENT. */
int sym_debug__by_debuglink(const char *root, const char *path, const char *name, uint32_t crc,
			    char *out, size_t len);

/* ---- sym_zcache.c: compressed debug sections inflated once into a file, mapped ---- */
#define SYM_ZCACHE_DEFAULT_BYTES (512ULL << 20)
struct Elf;
/* The cache directory (NULL: keep; "": no cache) and its size cap (0: keep). */
void sym_zcache__config(const char *dir, uint64_t cap_bytes);
/*
 * When elf (the file open as fd, mapped) has compressed .debug_* sections: the path of
 * a file holding them inflated (made now when missing) into out. 0, or -ENOENT (none
 * compressed, or no cache: use elf as it is), -EFBIG (inflating them would pass the
 * memory ledger's budget: use no DWARF of it), -errno.
 */
int sym_zcache__path(struct Elf *elf, int fd, char *out, size_t len);
/* Files written so far by this process, bytes in the directory at the last write. */
void sym_zcache__stats(uint64_t *made, uint64_t *used);

/* ---- sym_perfmap.c: /tmp/perf-PID.map of one process ---- */
struct sym_perfmap;
/* State for one pid's map at dir/perf-PID.map (dir NULL = /tmp); nothing read yet. */
struct sym_perfmap *sym_perfmap__new(const char *dir, uint32_t pid);
void sym_perfmap__free(struct sym_perfmap *m);
/* Reads what was appended since the last call (the file only grows). 0 or -errno. */
int sym_perfmap__refresh(struct sym_perfmap *m);
/* Name of the newest entry covering addr, borrowed until the next refresh; NULL if none. */
const char *sym_perfmap__find(const struct sym_perfmap *m, uint64_t addr);
/* Malformed lines skipped so far, entries held, bytes held. */
uint64_t sym_perfmap__bad_lines(const struct sym_perfmap *m);
size_t sym_perfmap__entries(const struct sym_perfmap *m);
uint64_t sym_perfmap__bytes(const struct sym_perfmap *m);

/* ---- sym_debuginfod.c: background fetches by build-id ---- */
struct sym_dbginfod;
/* A fetcher when DEBUGINFOD_URLS is set and non-empty, else NULL. */
struct sym_dbginfod *sym_dbginfod__new(void);
/* Stops the worker (an ongoing fetch is cancelled) and frees. NULL is a no-op. */
void sym_dbginfod__free(struct sym_dbginfod *d);
/*
 * Asks for bid's debug file without waiting. 0 and the cached file's path in out when
 * done, -EAGAIN while queued or fetching, -ENOENT when the servers do not have it.
 */
int sym_dbginfod__get(struct sym_dbginfod *d, const char *bid, char *out, size_t len);
/* The same for bid's executable (debuginfod's /buildid/BID/executable). */
int sym_dbginfod__get_exec(struct sym_dbginfod *d, const char *bid, char *out, size_t len);
/* Waits until no request is pending, at most timeout_ms. */
void sym_dbginfod__wait(struct sym_dbginfod *d, int timeout_ms);

/* Text symbols of a kallsyms file. 0 or -errno (-ENOENT also when it has no symbols). */
int sym_kallsyms__load(const char *path, struct sym_table *t);

#endif /* HEARTH_SYM_INTERNAL_H */
