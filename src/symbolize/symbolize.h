/*
 * symbolize: (object, file offset) -> frames, and kernel address -> frame.
 *
 * Objects (executables, shared libraries) are identified by GNU build-id, or by
 * dev+inode+mtime when they have none; each is opened once and its symbol table
 * (.symtab, falling back to .dynsym) loaded once, shared by every process that
 * maps it. Results are cached by (object, offset) so each distinct address is
 * symbolized once per run.
 *
 * Address spaces: `off` is a file offset (proc_mapping__file_off); the symbolizer
 * turns it into an ELF virtual address through the PT_LOAD segment that holds it:
 *   vaddr = off - phdr.p_offset + phdr.p_vaddr
 * which is right for PIE executables, shared libraries and non-PIE executables.
 */
#ifndef HEARTH_SYMBOLIZE_H
#define HEARTH_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most frames (one function and its inlined callees) one address resolves to. */
#define SYM_MAX_FRAMES 16

struct sym_frame {
	const char *name;	 /* borrowed (lives as long as the symbolizer): display name */
	const char *system_name; /* borrowed: raw symbol name */
	const char *file;	 /* borrowed: source file, NULL when unknown */
	int line;		 /* 0 when unknown */
	bool inlined;		 /* inlined into the next frame */
};

struct sym_result {
	size_t n;				 /* 0 = not resolved (keep module+offset) */
	struct sym_frame frames[SYM_MAX_FRAMES]; /* [0] innermost */
};

struct sym_object;
struct symbolizer;

/* Default byte budget of the caches (--symbol-cache-mb). */
#define SYM_DEFAULT_CACHE_MB 256

struct sym_opts {
	const char *kallsyms_path; /* NULL = /proc/kallsyms */
	uint64_t cache_bytes;	 /* budget of symbol tables, DWARF and address cache; 0 = default */
	const char *debug_root;	 /* NULL = /usr/lib/debug (.build-id tree, debuglink) */
	const char *perfmap_dir; /* NULL = /tmp (perf-PID.map) */
	bool no_debuginfod;	 /* true: never ask debuginfod even with DEBUGINFOD_URLS */
	bool no_address_cache;	 /* true: keep no per-address results (a caller that keeps its
				  * own, like the symbolize CLI's text cache); objects still are */
	bool no_inlines;	 /* true: only the function the code is in is asked for, never the
				  * calls inlined into it (symbolize --no-inlines): DWARF's inlined
				  * subroutines are not indexed (a result has one DWARF frame) */
	uint64_t release_grace_ns; /* an object whose last process was forgotten keeps its
				    * tables, DWARF and cached addresses this long (still under
				    * the budget) for the next process of the same binary;
				    * 0 = released at once */
	/* true: also charge the process-wide ledger (src/base/membudget.h: symbol tables
	 * MEM_SYMBOLS, DWARF MEM_DWARF, the address cache MEM_ADDRS), register evictors
	 * that drop the least recently used (counted there), and skip loading what would
	 * pass its budget. The evictors run on whichever thread reclaims: the symbolizer
	 * must then be used by that thread only (the agent's loop). */
	bool mem_budget;
	/* where compressed debug sections are inflated once, to be mapped (process-wide;
	 * NULL = $XDG_CACHE_HOME/hearth/dwarf, else /var/cache/hearth/dwarf for root,
	 * else ~/.cache/hearth/dwarf; "" = nowhere: inflated in memory), and the cap on
	 * that directory's size (0 = 512 MiB); the least recently used files go first */
	const char *debug_cache_dir;
	uint64_t debug_cache_bytes;
};

struct sym_stats {
	uint64_t elf_opens;	    /* ELF files opened (each object once) */
	uint64_t elf_failures;	    /* objects that could not be read as ELF */
	uint64_t objects;	    /* distinct objects known */
	uint64_t cache_hits;	    /* (object, offset) lookups answered from the cache */
	uint64_t cache_misses;	    /* lookups that had to search a symbol table */
	uint64_t cache_evictions;   /* address-cache entries evicted for the budget */
	uint64_t object_evictions;  /* objects whose tables and DWARF were dropped */
	uint64_t object_reloads;    /* evicted objects read again */
	uint64_t object_releases;   /* objects freed when their last process was forgotten */
	uint64_t object_revivals;   /* idle objects (in their grace period) held again */
	uint64_t cache_bytes;	    /* accounted now: tables + DWARF + address cache */
	uint64_t cache_budget;	    /* the budget they stay under */
	uint64_t cache_entries;	    /* addresses cached now */
	uint64_t kernel_symbols;    /* kallsyms entries loaded (not in the budget: shared, one) */
	uint64_t dwarf_failures;    /* corrupt or unreadable DWARF / debug files */
	uint64_t debug_files;	    /* separate debug files used */
	uint64_t debuginfod_files;  /* of which fetched through debuginfod */
	uint64_t jit_hits;	    /* addresses named from perf maps */
	uint64_t perfmap_bad_lines; /* malformed perf map lines skipped */
	uint64_t budget_skips; /* symbol tables or DWARF not loaded: over the ledger's budget */
	uint64_t bus_faults;   /* mapped files that shrank under a lookup (SIGBUS caught) */
	uint64_t debug_cache_files; /* inflated debug files written (process-wide) */
};

/* NULL on ENOMEM. opts may be NULL. */
struct symbolizer *symbolizer__new(const struct sym_opts *opts);
/* Frees every object, table and cached result. NULL is a no-op. */
void symbolizer__free(struct symbolizer *s);

/*
 * The object behind a mapping. open_path is where to read it (e.g. /proc/PID/map_files/..),
 * path is its name as mapped (shown to users). dev/inode identify it as /proc/PID/maps
 * does (inode 0 = unknown); dev is a dev_t, makedev(major, minor) (proc_mapping__dev).
 * The same file gives the same object however often asked: identity is dev+inode plus
 * the file's mtime (one stat(2), repeated at most once a second per file, so asking per
 * frame is cheap), then the GNU build-id across names. open_path must be the mapped
 * inode: when it is gone or another file (a library replaced since), path is read if it
 * still is, else the object resolves nothing (rather than giving another file's names).
 * Never NULL except on ENOMEM: an unreadable file gives an object that resolves nothing.
 * Borrowed: valid until symbolizer__free.
 */
struct sym_object *symbolizer__object(struct symbolizer *s, const char *open_path, const char *path,
				      uint64_t dev, uint64_t inode);
/*
 * The object whose GNU build-id is bid (lower-case hex), for a caller that knows no
 * file of it (a profile from another host): an object already known by that build-id,
 * else the file at path when it is a readable regular file (not under /proc, /sys or
 * /dev) with that build-id, else the executable debuginfod serves (asked without
 * waiting: -EAGAIN while the fetch runs; symbolizer__wait_debuginfo waits), its debug
 * info then found as for any object (sym_object__settled says when). path names it to
 * users. *out borrowed like symbolizer__object's. 0, -EINVAL (bid not hex), -ENOENT
 * (nowhere to be had), -EAGAIN, -ENOMEM.
 */
int symbolizer__object_by_build_id(struct symbolizer *s, const char *bid, const char *path,
				   struct sym_object **out);
/* Name as mapped (path argument above). */
const char *sym_object__path(const struct sym_object *o);
/* Hex GNU build-id, "" when none. */
const char *sym_object__build_id(const struct sym_object *o);
/* False while o's debug info is still being fetched (debuginfod): its answers may
 * still get better, so a caller keeping answers of its own should not keep them yet. */
bool sym_object__settled(const struct sym_object *o);

/*
 * Frames for a file offset in obj: DWARF (file:line, inlined frames) when the object or
 * a debug file has it, else its symbol table. *out is borrowed: valid until the next
 * call on s (copy what you keep); (*out)->n == 0 when the offset has no symbol.
 * Returns 0, or -ENOMEM / -EINVAL (obj NULL).
 */
int symbolizer__resolve(struct symbolizer *s, struct sym_object *obj, uint64_t off,
			const struct sym_result **out);
/* The same for an ELF virtual address of obj (what addr2line takes). */
int symbolizer__resolve_vaddr(struct symbolizer *s, struct sym_object *obj, uint64_t vaddr,
			      const struct sym_result **out);
/*
 * JIT code of process pid from its perf map (perfmap_dir/perf-PID.map), re-read when it
 * has grown. *out as for symbolizer__resolve. 0 or -ENOMEM.
 */
int symbolizer__resolve_jit(struct symbolizer *s, uint32_t pid, uint64_t addr,
			    const struct sym_result **out);
/*
 * Records that process pid maps obj (asking again is a no-op): obj then counts pid
 * among its holders until symbolizer__forget_pid(pid). 0, -EINVAL (obj NULL), -ENOMEM,
 * or -ENOSPC past 65536 processes held (the object is then just not held: it stays
 * under the byte budget's eviction like any other).
 */
int symbolizer__hold(struct symbolizer *s, uint32_t pid, struct sym_object *obj);
/*
 * Releases what is held for process pid: its perf map, and its holds on objects. An
 * object whose last holder this was has its cached addresses, symbol table and DWARF
 * freed (counted in object_releases) at once, or, with sym_opts.release_grace_ns, once
 * it has stayed unheld that long (symbolizer__expire_idle); asked again after that, it
 * is read again. Call when the process has exited (or exec'd) and its samples have
 * been symbolized.
 */
void symbolizer__forget_pid(struct symbolizer *s, uint32_t pid);
/* Releases the objects whose grace period (sym_opts.release_grace_ns) has run out at
 * now_ns (CLOCK_MONOTONIC). symbolizer__forget_pid calls it too; a caller with no
 * process to forget calls it now and then (the agent: once per interval). */
void symbolizer__expire_idle(struct symbolizer *s, uint64_t now_ns);
/* Waits up to timeout_ms for pending debuginfod fetches and takes their results. */
void symbolizer__wait_debuginfo(struct symbolizer *s, int timeout_ms);
/* Frames for a kernel address from kallsyms (module symbols as "name [module]");
 * *out is valid until symbolizer__free. */
int symbolizer__resolve_kernel(struct symbolizer *s, uint64_t addr, const struct sym_result **out);

void symbolizer__stats(const struct symbolizer *s, struct sym_stats *out);

/* ---- batch: lines of addresses in, addr2line's answers out (sym_batch.c) ---- */

struct base_sbuf;

/* Which frames an answer shows. */
enum sym_frames_shown {
	SYM_FRAMES_INNERMOST, /* the innermost function (addr2line -f) */
	SYM_FRAMES_ALL,	      /* every frame, innermost first (addr2line -f -i) */
	SYM_FRAMES_PHYSICAL,  /* the outermost function (the one the code is in) at the
			       * innermost file:line (llvm-symbolizer --no-inlines) */
};

struct sym_batch_opts {
	struct sym_object *obj; /* borrowed: what hex lines are vaddrs of; NULL: none */
	enum sym_frames_shown frames;
	bool addresses;	   /* each address ("0x" and 16 digits) before its frames */
	size_t text_bytes; /* budget of the formatted answers kept */
};

struct sym_batch_stats {
	uint64_t hits, misses, resets; /* text cache: answers reused, made, and emptyings */
	size_t bytes, budget;
};

struct sym_batch;

/* A batch answering through s (borrowed: outlives the batch). 0, -EINVAL, -ENOMEM. */
int sym_batch__new(struct symbolizer *s, const struct sym_batch_opts *o, struct sym_batch **out);
void sym_batch__free(struct sym_batch *b);
/*
 * Answers every line read from in_fd onto out_fd, until EOF. Lines are a hex vaddr of
 * the batch's object ("0x401136", "401136") or FILE+0xOFF (a file offset in FILE);
 * anything else, and a line over 1 MiB, is answered "??". Output is written as answers
 * are made and before every read (an interactive caller gets its answer at once).
 * 0, -ENOMEM, or -errno of a read or write (*what says "read" or "write").
 */
int sym_batch__stream(struct sym_batch *b, int in_fd, int out_fd, const char **what);
/* The same for the lines of [in, in + len) (writable; left as found; the last line may
 * lack its newline), appended to out. 0 or -ENOMEM. */
int sym_batch__text(struct sym_batch *b, char *in, size_t len, struct base_sbuf *out);
void sym_batch__stats(const struct sym_batch *b, struct sym_batch_stats *out);

#endif /* HEARTH_SYMBOLIZE_H */
