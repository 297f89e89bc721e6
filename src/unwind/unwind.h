/*
 * unwind: DWARF CFI (.eh_frame / .debug_frame) -> compact per-object unwind
 * tables for the BPF walker in bpf/profile.bpf.c, and the per-process view
 * (address range -> table, load bias) it searches. See docs/unwind.md.
 *
 * Three layers, each usable alone:
 *  - cfi_parse: bytes of one CFI section -> rows sorted by pc (no I/O; fuzzed);
 *  - unwind_table: one ELF object's table, found by its src/object identity
 *    (dev, inode as mapped; mtime) or build-id;
 *  - unwind_mgr: the only writer of the unwind_rows/unwind_procs BPF maps:
 *    one table per object (dev, inode; build-id) shared across processes, rows
 *    in fixed-size chunks, the tables of the objects samples land in kept by
 *    heat: when the map is full the coldest make room for a hotter one
 *    (heat.c's policy, docs/unwind.md "Tables by heat").
 * x86-64 only: the register numbers and rule kinds live in cfi.c and
 * bpf/unwind_abi.h.
 */
#ifndef HEARTH_UNWIND_H
#define HEARTH_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "object/object.h"
#include "unwind_abi.h" /* bpf/: struct hearth_unwind_row, limits */

/* Rows of one object, sorted by pc, no two consecutive rows with the same rule. */
struct cfi_rows {
	struct hearth_unwind_row *rows; /* owned */
	size_t n, cap;
	size_t unsupported; /* rows marked HEARTH_CFA_UNSUPPORTED */
	size_t fdes;	    /* FDEs evaluated */
};

/*
 * Parses one CFI section: buf holds its bytes, sec_vaddr is where it is loaded
 * (for pc-relative pointers), is_eh selects .eh_frame (else .debug_frame) format.
 * Appends rows to out (unsorted until cfi_rows__finish). Returns 0 or -EINVAL on
 * malformed input (rows of the FDEs before the error are kept), -ENOMEM.
 */
int cfi_parse(const uint8_t *buf, size_t len, uint64_t sec_vaddr, bool is_eh, struct cfi_rows *out);
/* cfi_parse of a section mapped read-only from its file (MAP_PRIVATE, never
 * written): the pages parsed leave this process's RSS as the parse goes on
 * (a 2.5 MiB .eh_frame beside its 4 MB of rows: docs/memory.md). */
int cfi_parse_mapped(const uint8_t *buf, size_t len, uint64_t sec_vaddr, bool is_eh,
		     struct cfi_rows *out);
/* Parses the one .eh_frame FDE at byte off of buf (its CIE found from it, all
 * within buf): its rows and the gap row at its end are appended to out. 0 (no
 * row when the FDE is empty or discarded), -EINVAL when off holds no FDE, -ENOMEM. */
int cfi_parse_fde_at(const uint8_t *buf, size_t len, uint64_t sec_vaddr, size_t off,
		     struct cfi_rows *out);
/* Appends one row (unsorted until cfi_rows__finish). 0 or -ENOMEM. */
int cfi_rows__push(struct cfi_rows *r, const struct hearth_unwind_row *row);
/* Sorts, drops rows shadowed by a row at the same pc, merges equal neighbours. */
void cfi_rows__finish(struct cfi_rows *r);
void cfi_rows__fini(struct cfi_rows *r);

struct unwind_table {
	struct object *obj; /* one ref: identity (mtime when built), build-id, segments */
	char *path;	    /* path it was built from (unwind_mgr: as mapped); owned */
	struct cfi_rows rows;
	uint64_t seg_delta; /* p_vaddr - p_offset of the executable PT_LOAD */
	double build_ms;    /* time spent building */
	/* Set by unwind_mgr: */
	int refs;	    /* objects (files) whose table it is (build-id shared) */
	uint32_t views;	    /* mappings of published views that use it (0: idle) */
	uint64_t idle_tick; /* when it last became idle (LRU among idle tables) */
	uint32_t row_start; /* first row in unwind_rows */
	uint32_t chunks;    /* chunks allocated; 0 = not loaded: its rows are in rows.rows
			     * (parked: evicted, kept in memory to be loaded again) */
	uint64_t loaded_ms; /* when it was last loaded (pinned for UNWIND_HEAT_PIN_MS) */
	double heat;	    /* its objects' heat, at the last tick */
	struct unwind_partial *partial; /* owned; set: a partial table (partial.c) */
	double partial_ms;		/* when its rows were last written again */
	struct cfi_rows partial_next;	/* loaded: its next rows, waiting for room */
};

/* ---- heat.c: which tables to keep (pure; tests/unit/test_unwind_heat.c) ---- */

/* Half-life of an object's heat (frames walked in it), and the policy's tick. */
#define UNWIND_HEAT_HALF_LIFE_MS 1000.0
#define UNWIND_HEAT_TICK_MS	 100
/* A loaded table is evicted for a candidate only when heat * HYST + MARGIN is
 * below the candidate's heat, and not within PIN_MS of its load. */
#define UNWIND_HEAT_HYST   1.5
#define UNWIND_HEAT_MARGIN 1.0
#define UNWIND_HEAT_PIN_MS 1000
/* A hot object whose whole table finds no room this long (every table in its
 * way about as hot) gets a partial table instead (unwind.c, room_partial). */
#define UNWIND_HEAT_ROOM_WAIT_MS 3000
/* Heat an object without a table needs before its table is built and loaded. */
#define UNWIND_HEAT_MIN 1.0

/* heat decayed over dt_ms, plus hits. */
double unwind_heat_decay(double heat, uint64_t hits, double dt_ms, double half_life_ms);
/* Whether a table of heat victim_heat may give its room to one of cand_heat. */
bool unwind_heat_may_evict(double victim_heat, double cand_heat);
/* A loaded table as the policy sees it. */
struct uheat_table {
	double heat;
	uint32_t first, chunks; /* chunks [first, first + chunks) of the map */
	bool pinned;		/* loaded moments ago: not evicted */
};
/* Where a table of need chunks goes in a map of n_chunks (used[i] != 0: taken,
 * by a table of tabs or otherwise): the first chunk, or -1 when it cannot go
 * anywhere, even by evicting. When free chunks do not suffice, the tables to
 * evict first (indices into tabs, coldest first, each may_evict for cand_heat
 * and not pinned) are written to victims (room for n_tabs) and counted in
 * *n_victims; nothing is evicted when no set of such victims makes room. */
long unwind_heat_place(const uint8_t *used, uint32_t n_chunks, const struct uheat_table *tabs,
		       size_t n_tabs, uint32_t need, double cand_heat, size_t *victims,
		       size_t *n_victims);

/* Builds the table of the ELF file at path; dev and inode name it as the mapping
 * does (0, 0: as fstat says; see object__from_elf). max_cfi_bytes (0 = no limit) skips,
 * before any parsing, objects whose CFI section is larger (-EFBIG): about 5 bytes
 * of .eh_frame make a row, so the caller can refuse what could never fit.
 * Returns 0 or -errno: -ENODATA when it has no CFI (or no executable segment),
 * -ENOTSUP for Go binaries, -EFBIG, -ENOEXEC when not a 64-bit ELF, -EINVAL when
 * its CFI is malformed; an open(2) error as is. */
int unwind_table__build(const char *path, uint64_t dev, uint64_t inode, size_t max_cfi_bytes,
			struct unwind_table **out);
void unwind_table__free(struct unwind_table *t);

/* ---- partial.c: partial tables (docs/unwind.md "Partial tables") ----
 * An object whose whole table is over the per-object cap gets a table of just
 * the FDEs samples were seen in: a pc that no loaded FDE covers is asked for by
 * the BPF walker (HEARTH_EV_UNWIND_PC), its FDE found through .eh_frame_hdr's
 * binary-search table and parsed alone (both sections mapped, not copied), and
 * the table reloaded at most every UNWIND_PARTIAL_RELOAD_MS with a batch of
 * them. At most UNWIND_PARTIAL_MAX_ROWS rows: past it the FDEs asked for least
 * recently go (asked for again if still hot). */
#define UNWIND_PARTIAL_RELOAD_MS 250
#define UNWIND_PARTIAL_MAX_ROWS	 (4 * HEARTH_UNWIND_CHUNK_ROWS - 1)
#define UNWIND_PARTIAL_MAX_WANTS 256 /* pcs queued between two reloads */

struct unwind_partial_stats {
	uint64_t fdes, rows;	/* loaded now */
	uint64_t wants;		/* pcs asked for */
	uint64_t fdes_added;	/* FDEs parsed and added */
	uint64_t fdes_dropped;	/* dropped for the cap (least recently asked for) */
	uint64_t not_covered;	/* pcs asked for that no FDE covers */
	uint64_t heap_bytes;	/* FDE rows held (charged as MEM_UNWIND) */
	uint64_t bus_faults;	/* 1: the file shrank under its mapping (SIGBUS
				 * caught); the table reads nothing more */
};

/* The partial table of the ELF file at path (named dev, inode as for
 * unwind_table__build): .eh_frame_hdr (version 1, a datarel sdata4 table) and
 * .eh_frame are mapped read-only; its rows are one row at vaddr 0 (no FDE yet).
 * 0 or -errno: -ENODATA without a usable .eh_frame_hdr. */
int unwind_table__build_partial(const char *path, uint64_t dev, uint64_t inode,
				struct unwind_table **out);
void unwind_partial__free(struct unwind_partial *p);
/* A walk met vaddr without a loaded FDE: queued (false when the queue is full
 * or its FDE is loaded already). */
bool unwind_partial__want(struct unwind_partial *p, uint64_t vaddr);
/* Whether pcs are queued. */
bool unwind_partial__pending(const struct unwind_partial *p);
/* Resolves the queued pcs into FDEs (each parsed alone), drops the least
 * recently asked for past the cap, and when the FDE set changed writes its
 * rows, finished, to *out (owned by the caller, charged by it) and returns 1;
 * 0 when nothing changed; -errno. now_ms orders FDEs by recency. */
int unwind_partial__resolve(struct unwind_partial *p, uint64_t now_ms, struct cfi_rows *out);
void unwind_partial__stats(const struct unwind_partial *p, struct unwind_partial_stats *out);

struct unwind_mgr_stats {
	uint64_t tables, procs; /* tables in use by a process view */
	uint64_t idle_tables; /* tables no process uses, kept in unwind_rows until room is needed */
	uint64_t reused;      /* idle tables taken back by a new process (no rebuild) */
	uint64_t rows, row_bytes; /* rows in use in unwind_rows */
	uint64_t chunks_used, chunks_total;
	uint64_t user_bytes; /* heap held by tables and process views */
	uint64_t builds;     /* tables built (parsed and sorted), failed ones included */
	uint64_t rebuilds;   /* builds of a file remembered without room, once room appeared */
	uint64_t build_failed;
	uint64_t no_room;	  /* loads that found no room in unwind_rows (not hot enough) */
	uint64_t no_room_objects; /* = waiting_objects (kept for the older readers) */
	double build_ms;	  /* total build time */
	/* Tables on demand (docs/unwind.md "Tables by heat"): */
	uint64_t tables_loaded;	   /* loads of a table into unwind_rows (first or again) */
	uint64_t tables_evicted;   /* tables evicted from unwind_rows for a hotter object */
	uint64_t tables_reloaded;  /* loads of an object whose table was loaded before */
	uint64_t requests;	   /* frames walked in an object without its table loaded */
	uint64_t request_events;   /* wake-ups asking for tables (HEARTH_EV_UNWIND_WANT) */
	uint64_t waiting_objects;  /* objects samples landed in, without their table loaded */
	uint64_t objects;	   /* objects (files) tracked, with a heat slot */
	uint64_t parked_tables;	   /* evicted tables kept in memory (reloaded without a build) */
	uint64_t parked_bytes;	   /* their rows (charged as MEM_UNWIND) */
	uint64_t bpf_bytes_used;   /* unwind_rows chunks in use, in bytes */
	uint64_t bpf_bytes_budget; /* unwind_rows chunks the manager may use, in bytes */
	uint64_t heat_ticks;	   /* policy ticks run */
	/* Partial tables (docs/unwind.md "Partial tables"): */
	uint64_t partial_tables;	/* objects with a partial table now */
	uint64_t partial_fdes;		/* FDEs loaded in them */
	uint64_t partial_requests;	/* pcs asked for (HEARTH_EV_UNWIND_PC events) */
	uint64_t partial_fdes_added;	/* FDEs parsed and added */
	uint64_t partial_fdes_dropped;	/* FDEs dropped for the cap */
	uint64_t partial_not_covered;	/* pcs asked for that no FDE covers */
	uint64_t partial_reloads;	/* partial tables written to the row map again */
	uint64_t partial_for_room;	/* objects given a partial table: whole one had no room */
	/* Maps re-read because a walk met a pc outside its view (REMAP): */
	uint64_t remaps;	   /* re-reads */
	uint64_t remaps_unchanged; /* of them, the view read the same (backed off) */
};

struct unwind_mgr;

/* rows_fd: the unwind_rows array map (mmapable, chunks * HEARTH_UNWIND_CHUNK_ROWS
 * rows, chunks <= HEARTH_UNWIND_CHUNKS), procs_fd: unwind_procs. Neither is owned.
 * Returns 0 or -errno. */
int unwind_mgr__new(int rows_fd, int procs_fd, uint32_t chunks, struct unwind_mgr **out);
void unwind_mgr__free(struct unwind_mgr *m);
/* A process appeared or exec'ed: queue it for (re)building its view. */
void unwind_mgr__note(struct unwind_mgr *m, uint32_t pid, uint64_t pstart);
/* The walker met a pc outside the view (a leaf, or a caller a table step led
 * to) in memory of that kind (enum hearth_remap_kind): re-read the maps soon
 * (no re-checks scheduled). BPF rate-limits these per pid and kind; a re-read
 * that finds the view unchanged (a JIT's code) holds the next one of that kind
 * off longer, doubling up to MGR_REMAP_MAX_MS (unwind_mgr__set_remap). */
void unwind_mgr__remap(struct unwind_mgr *m, uint32_t pid, uint64_t pstart, uint32_t kind);
/* A process exited: drop its view and put its tables. */
void unwind_mgr__exit(struct unwind_mgr *m, uint32_t pid);
/* Processes queued work for at most budget_ms (at least one process). Returns
 * the number of processes handled. */
int unwind_mgr__work(struct unwind_mgr *m, int budget_ms);
/* Milliseconds until the earliest queued job is due (0: now), -1 when none is queued:
 * the caller's loop sleeps that long at most, and no longer polls on a timer. */
int unwind_mgr__next_due_ms(const struct unwind_mgr *m);
/* The figures now (the thread that calls work). */
void unwind_mgr__stats(const struct unwind_mgr *m, struct unwind_mgr_stats *out);
/* The figures as of the last unwind_mgr__work call: thread-safe (/metrics). */
void unwind_mgr__stats_copy(struct unwind_mgr *m, struct unwind_mgr_stats *out);
/* Largest table by rows and its build time (for the figures), or NULL. */
const struct unwind_table *unwind_mgr__largest(const struct unwind_mgr *m);
const struct unwind_table *unwind_mgr__find_path(const struct unwind_mgr *m, const char *substr);

/* The rows of a mapping of a view (its row_count rows, from row_start), or NULL
 * when they cannot be had (the mapping is then crossed with frame pointers). */
typedef const struct hearth_unwind_row *(*unwind_rows_fn)(void *ctx,
							  const struct hearth_unwind_mapping *m);
/*
 * Walks a copied user stack (stack holds stack_len bytes from process address
 * sp) from the registers pc, sp, bp, with the view and rows the BPF walker
 * uses, as it would (src/unwind/uwalk.c). Writes at most max_frames pcs to
 * frames (leaf first) and returns how many; *complete says whether the walk
 * ended at an outermost frame (END row). Any read outside the copy ends it.
 * view->n == 0 walks with frame pointers alone (rows_of is then not called).
 */
size_t unwind_walk_copy(const struct hearth_unwind_proc *view, unwind_rows_fn rows_of,
			void *rows_ctx, uint64_t pc, uint64_t sp, uint64_t bp, const uint8_t *stack,
			size_t stack_len, uint64_t *frames, size_t max_frames, bool *complete);
/* unwind_walk_copy with the view published for (pid, pstart). Returns the frame
 * count, -ENOENT while no view of that process is published, or -errno. */
int unwind_mgr__walk(struct unwind_mgr *m, uint32_t pid, uint64_t pstart, uint64_t pc, uint64_t sp,
		     uint64_t bp, const uint8_t *stack, size_t stack_len, uint64_t *frames,
		     size_t max_frames, bool *complete);
/* pending_fd: the unwind_pending map (not owned). A process whose view looks
 * settled (its libraries mapped) is taken out of it: from then on a walk that
 * meets a pc outside its view (JIT code, the vdso) sends no stack copy. */
void unwind_mgr__set_pending(struct unwind_mgr *m, int pending_fd);
/* fn(ctx, pid, pstart, remap) after each read of a process's maps that
 * published its view (a first read, a recheck, or with remap a REMAP's read that
 * found a change), from inside unwind_mgr__work: the process table follows
 * (proc_table__view_read), which a short-lived process needs before it exits. */
void unwind_mgr__set_on_read(struct unwind_mgr *m,
			     void (*fn)(void *ctx, uint32_t pid, uint64_t pstart, bool remap),
			     void *ctx);
/* remap_fd: the unwind_remap map (struct hearth_remap_key -> earliest next
 * REMAP of that kind, CLOCK_MONOTONIC ns; not owned). Without it re-reads are never backed off. */
void unwind_mgr__set_remap(struct unwind_mgr *m, int remap_fd);
/* heat_fd: the unwind_heat array (mmapable, HEARTH_UNWIND_MAX_OBJECTS counters;
 * not owned). Without it no object gets a heat slot: tables are loaded while
 * there is room, as before on-demand tables. 0 or -errno. */
int unwind_mgr__set_heat(struct unwind_mgr *m, int heat_fd);
/* A walk met vaddr of object slot obj, whose table is partial, without its
 * FDE (HEARTH_EV_UNWIND_PC): queued for the next reload of that table. */
void unwind_mgr__want_pc(struct unwind_mgr *m, uint32_t obj, uint64_t vaddr);
/* A walk asked for a table (HEARTH_EV_UNWIND_WANT): run the policy now. */
void unwind_mgr__want(struct unwind_mgr *m);
/* Between start and stop, the rows walks read stay mapped (each mapping's rows
 * are mapped when a walk first needs them): a batch of walks maps libc once. */
void unwind_mgr__walk_batch(struct unwind_mgr *m, bool start);
/* Which publication of (pid, pstart)'s view is current (0: none): a walk that
 * stopped early can only go further once it has changed. */
uint64_t unwind_mgr__view_gen(struct unwind_mgr *m, uint32_t pid, uint64_t pstart);

#endif /* HEARTH_UNWIND_H */
