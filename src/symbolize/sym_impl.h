/*
 * The symbolizer's state, private to src/symbolize and shared by the files that make
 * it: symbolize.c (identities, objects, the lookup itself, kernel, lifecycle),
 * sym_cache.c (the address cache and the byte budget), sym_jit.c (perf maps by pid),
 * sym_hold.c (which processes hold which objects). See symbolize.c's top comment.
 */
#ifndef HEARTH_SYM_IMPL_H
#define HEARTH_SYM_IMPL_H

#include "base/base.h"
#include "symbolize/sym_internal.h"

#include <string.h>

#define SYM_RECHECK_NS	     (1000ULL * 1000 * 1000)
#define SYM_CACHE_MIN_SLOTS  1024
#define SYM_JIT_MAX	     1024 /* perf maps held (pids); the oldest goes first */
#define SYM_JIT_RECHECK_NS   (1000ULL * 1000 * 1000)
#define SYM_HASH_MIN_BUCKETS 256
#define SYM_PROC_BUCKETS     4096
#define SYM_PROC_MAX	     65536 /* processes holding objects; past it, holds are not kept */

/* DWARF's name of a function, by its symbol's start (sym_object.dnames). */
struct sym_dname {
	uint64_t start;
	char *name;	   /* owned */
	char *system_name; /* owned; NULL: the same as name */
};

struct sym_object {
	char *path;		  /* owned: name as mapped, shown to users */
	struct object *obj;	  /* one ref: src/object's identity, build-id and PT_LOAD
				   * segments; NULL when the file could not be read as ELF */
	bool loaded;		  /* its ELF was read (else it resolves nothing) */
	bool heavy;		  /* symbols (and DWARF) in memory; else re-read */
	bool debug_pending;	  /* debuginfod was asked; its answer not seen yet */
	bool debug_deferred;	  /* first read skipped for the budget: debug info not yet
				   * looked for */
	struct sym_elf_info info; /* segments and symbols, owned */
	struct sym_dwarf *dwarf;  /* owned: DWARF of the file or its debug file */
	char *load_path;	  /* owned: the file read, to re-read after eviction */
	char *debug_path;	  /* owned: separate debug file in use, NULL = none */
	char *debuglink;	  /* owned: .gnu_debuglink name, NULL = none */
	uint32_t debuglink_crc;
	uint32_t gen; /* bumped when its debug info arrives late */
	uint32_t polls;
	uint64_t bytes;				/* accounted: table + DWARF while heavy */
	uint64_t sym_bytes, dwarf_bytes;	/* of which symbol tables, DWARF */
	uint64_t want_bytes; /* estimated cost of its symbol table (ledger checks) */
	uint32_t holders;			/* processes that map it (symbolizer__hold) */
	uint64_t idle_since_ns;			/* unheld since (grace period), 0 = not idle */
	struct sym_object *idle_prev, *idle_next; /* idle objects, oldest first */
	struct sym_centry *centries;		/* its address-cache entries (onext list) */
	/* DWARF's names of the functions looked up, by their symbol's start, kept with
	 * the symbols (sym_dname_*): an object whose DWARF is evicted goes on naming
	 * them as DWARF did, not by their symbols (libc's DWARF names __clock_gettime
	 * what its symbols name clock_gettime; a diff across the eviction listed it). */
	struct sym_dname *dnames;
	size_t n_dnames, cap_dnames;
	struct base_hmap dname_idx;
	uint64_t dname_bytes;
	struct sym_object *lru_prev, *lru_next; /* heavy objects, most recent first */
	struct sym_object *next;		/* every object, for symbolizer__free */
};

/* One name of an object: (dev, inode, mtime), or the open path when nothing else. */
struct sym_ident {
	struct object_id id;	/* src/object's identity; dev == inode == 0: by path */
	bool stat_ok;		/* id.mtime_ns came from stat(2) */
	uint64_t checked_ns;	/* when mtime was last compared with the file */
	char *path;		/* owned; the key only when dev == inode == 0 */
	struct sym_object *obj; /* borrowed from the object list */
	struct sym_ident *next; /* hash chain */
};

/*
 * The objects one process maps, as the caller said (symbolizer__hold): each holds one
 * reference on them until symbolizer__forget_pid. Arrays, not sets: a process maps tens
 * to a few hundred objects, and a linear scan of pointers is cheaper than hashing them.
 */
struct sym_proc {
	uint32_t pid;
	uint32_t n, cap;
	struct sym_object **objs; /* owned array; the objects are the list's */
	struct sym_proc *next;	  /* hash chain */
};

/* The perf map of one process. */
struct sym_jit {
	uint32_t pid;
	uint64_t checked_ns;
	struct sym_perfmap *map; /* owned */
	struct sym_jit *next;
};

/* Chained, not a base_hmap: ident_current needs every version of one file (all
 * identities with its dev and inode), which a find-first index cannot list. */
struct sym_ident_hash {
	struct sym_ident **buckets; /* owned chains */
	size_t n_buckets, count;    /* n_buckets: a power of two */
};

/* Objects with a build-id, found by it: a base_hmap over an array (objects are never
 * removed before symbolizer__free). */
struct sym_bid_index {
	struct sym_object **objs; /* owned array; the objects are the list's */
	size_t n, cap;
	struct base_hmap index;
};

struct symbolizer {
	char *kallsyms_path;
	struct sym_object *objects;
	struct sym_ident_hash idents;	/* by dev+inode (or path) */
	struct sym_bid_index build_ids; /* objects by build-id */
	char *debug_root;		/* NULL = /usr/lib/debug */
	char *perfmap_dir;		/* NULL = /tmp */
	struct sym_dbginfod *dbginfod;	/* owned, NULL when DEBUGINFOD_URLS is unset */
	struct sym_object *lru_head, *lru_tail;
	struct sym_centry **buckets; /* owned entries, chained */
	size_t n_buckets, cache_used;
	struct sym_centry *c_head, *c_tail; /* address-cache LRU, most recent first */
	uint64_t budget, obj_bytes, cache_bytes;
	uint64_t sym_bytes, dwarf_bytes; /* obj_bytes split: symbol tables, DWARF */
	bool mem_budget;		 /* sym_opts.mem_budget: charged to the ledger */
	const struct sym_centry *last_entry; /* what the last resolve handed out: never */
	const struct sym_object *last_obj;   /* evicted by another thread's reclaim */
	struct sym_jit *jits;
	size_t n_jits;
	struct sym_proc **procs; /* owned chains, by pid; SYM_PROC_BUCKETS */
	size_t n_procs;
	uint64_t release_grace_ns;		   /* sym_opts.release_grace_ns */
	struct sym_object *idle_head, *idle_tail; /* unheld objects in their grace period */
	struct sym_result scratch; /* what the last resolve handed out */
	bool no_address_cache;	   /* sym_opts.no_address_cache */
	bool no_inlines;	   /* sym_opts.no_inlines */
	char *scratch_text;	   /* owned: scratch's strings, without an address cache */
	size_t scratch_cap;
	struct sym_table kernel;
	bool kernel_loaded;
	struct sym_result unresolved; /* n == 0, handed out for every miss */
	struct sym_stats stats;
};

/* One cached answer: (object, vaddr) -> copied frames (sym_cache.c). */
struct sym_centry {
	struct sym_centry *hnext, *prev, *next; /* hash chain; LRU list */
	struct sym_centry *onext, *oprev;	/* entries of the same object */
	struct sym_object *obj;
	uint64_t vaddr;
	uint32_t gen, n;
	uint32_t bytes;
	bool referenced; /* hit since it last reached the LRU tail: gets a second chance */
	struct sym_frame frames[]; /* strings follow, owned by the entry */
};

/* CLOCK_MONOTONIC in ns. */
uint64_t sym_now_ns(void);

/* ---- sym_cache.c: the address cache and the byte budget ---- */

/* o is the most recently used heavy object. */
void sym_lru_touch(struct symbolizer *s, struct sym_object *o);
/* Recomputes what o holds in memory and moves the difference into s's account. */
void sym_object_account(struct symbolizer *s, struct sym_object *o);
/* The file pages an object's lookups made resident (mapped names, DWARF) leave
 * our page tables: under the memory ledger, when resolving moves to another
 * object (one object's pages resident at a time, not every object's of a flush). */
void sym_object_drop_pages(struct symbolizer *s, struct sym_object *o);
/* Drops o's symbols and DWARF (re-read on next use); segments stay. */
void sym_object_unload(struct symbolizer *s, struct sym_object *o);
/* DWARF named vaddr's function f (the outermost frame): kept for the symbol holding
 * vaddr, if o has one and it was not kept yet. Accounted with the symbols. */
void sym_dname_keep(struct sym_object *o, uint64_t vaddr, const struct sym_frame *f);
/* f, the symbol table's frame for vaddr, renamed as DWARF named it before, if kept;
 * the strings are o's (valid until its symbols are dropped). */
void sym_dname_apply(const struct sym_object *o, uint64_t vaddr, struct sym_frame *f);
/* Forgets the kept names (with the symbols). */
void sym_dname_free(struct sym_object *o);
struct sym_centry *sym_centry_find(struct symbolizer *s, const struct sym_object *o, uint64_t v);
void sym_centry_remove(struct symbolizer *s, struct sym_centry *e);
/* A new entry holding copies of f[0, n). NULL on ENOMEM. */
struct sym_centry *sym_centry_new(struct sym_object *o, uint64_t v, const struct sym_frame *f,
				  size_t n);
void sym_centry_insert(struct symbolizer *s, struct sym_centry *e);
/* Evicts until the account fits the budget. */
void sym_budget_enforce(struct symbolizer *s);
/* Registers s's evictors with the ledger (sym_opts.mem_budget); unregisters, and
 * uncharges what s still holds. */
void sym_ledger_register(struct symbolizer *s);
void sym_ledger_unregister(struct symbolizer *s);
/* Whether loading bytes more may go ahead: under the ledger's budget, after evicting
 * s's own least recently used objects if needed (always true without mem_budget). */
bool sym_ledger_room(struct symbolizer *s, uint64_t bytes);

/* ---- sym_jit.c ---- */

/* Drops pid's perf map. */
void sym_jit_forget(struct symbolizer *s, uint32_t pid);

/* ---- sym_hold.c ---- */

/* Frees every process's holds (symbolizer__free). */
void sym_holds_free(struct symbolizer *s);

/* Bytes of p with its NUL; 0 for NULL. */
static inline size_t str_room(const char *p)
{
	return p ? strlen(p) + 1 : 0;
}

/* Copies p's room bytes (str_room(p), its NUL included) into *pos; NULL for NULL. */
static inline const char *str_put_n(char **pos, const char *p, size_t room)
{
	char *d = *pos;

	if (!p)
		return NULL;
	memcpy(d, p, room);
	*pos += room;
	return d;
}

#endif /* HEARTH_SYM_IMPL_H */
