/*
 * unwind_mgr: the only writer of the unwind_rows and unwind_procs BPF maps.
 *
 * A process event (NEW/EXEC) queues the pid; unwind_mgr__work, called from the
 * user-space loop with a time budget, reads /proc/PID/maps (proc_read_maps,
 * proc/'s one capped reader), gets a table per
 * executable file mapping (built once, shared by build-id, refcounted), copies
 * new tables into the mmap'ed row array in whole chunks, then publishes the
 * process view. Rows are written before the view that points at them, so the
 * BPF walker never sees a half-written table. EXIT drops the view and puts the
 * tables. A table whose last process is gone stays loaded, idle, until its
 * chunks are needed (least recently idle first): a machine that starts the
 * same short-lived binaries again and again (gzip, cc1, a cron job) reuses
 * their tables instead of parsing .eh_frame for every process. Before an idle
 * table is reused, the file's mtime is checked against the one it was built
 * from, so a binary rebuilt in place under the same inode gets a new table.
 * Tables are found by src/object's identity: (dev, inode) as the mapping says,
 * then the GNU build-id across names. A table that finds no room in a full map
 * is not kept; its file is remembered with the chunks it needs and not built
 * again until room could hold it (issue 29: sorting such tables for every new
 * process was most of hearth's CPU on a busy host).
 *
 *   addr (process) --(- bias)--> vaddr (ELF) ; bias = start - off - (p_vaddr - p_offset)
 */
#include "unwind.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base/base.h"
#include "proc/proc.h"

/* A chunk of rows in bytes: page-aligned, so one can be mapped on its own. */
#define MGR_CHUNK_BYTES ((size_t)HEARTH_UNWIND_CHUNK_ROWS * sizeof(struct hearth_unwind_row))
_Static_assert(MGR_CHUNK_BYTES % 4096 == 0, "a chunk of unwind rows is whole pages");
/* Objects without a table remembered (by dev and inode), so a busy machine that
 * starts the same huge or table-less binary again does not rebuild it each time. */
#define MGR_NEG_ENTRIES 256
/* .eh_frame bytes per row is about 5 (libc, libcrypto, libclang-cpp); allow 8. */
#define MGR_CFI_BYTES_PER_ROW 8
/* Chunks freed by an eviction are not written for this long: a walk that copied
 * the view before it was re-published (microseconds) still reads the old rows. */
#define MGR_COOL_MS 5
/* Parked rows (evicted or without room, kept to be loaded without a build) are
 * bounded by a quarter of the row map's bytes (4 MiB by default), besides the
 * MEM_UNWIND ledger's evictor. */
/* The most chunks one object's table may take: half the row map. With tables
 * kept by heat a big hot object takes colder tables' room (not the hot ones'),
 * and one over a quarter (a generated or big C++ library of 300k+ rows) is no
 * longer "never fits"; libLLVM/libclang-cpp (~1M rows, the whole default map)
 * are still crossed with frame pointers. */
/* Chunks of the row map mapped at once to copy a table in or out (1 MiB). */
#define MGR_COPY_CHUNKS 16u
#define MGR_COPY_BYTES ((size_t)MGR_COPY_CHUNKS * MGR_CHUNK_BYTES)
#define MGR_OBJ_MAX_CHUNKS(m) ((m)->chunks / 2)
/* The last 1/MGR_PARTIAL_RESERVE_DIV of the row map (16 chunks of 256) is for
 * partial tables only (4 chunks at most each): an object whose whole table
 * finds no room, every table in its way as hot as it, still gets a partial
 * one (heat_tick, room_partial). */
#define MGR_PARTIAL_RESERVE_DIV 16
#define MGR_PARK_MAX(m) ((uint64_t)(m)->chunks * MGR_CHUNK_BYTES / 4)
/* With tables by heat, an object never built gets its table when a view maps
 * it only while at least 1/MGR_EAGER_FREE_DIV of the row map is free (else
 * on demand: obj_prepare). */
#define MGR_EAGER_FREE_DIV 4
/* Candidates weighed per policy tick at most (the hottest first). */
#define MGR_TICK_CANDIDATES 8
/* After a request, ticks keep coming (next_due_ms) for this long: every
 * UNWIND_HEAT_TICK_MS while ticks change something, every MGR_SLOW_TICK_MS
 * while they do not (objects waiting that are not hot enough cost little). */
#define MGR_WANT_WINDOW_MS 1000
#define MGR_SLOW_TICK_MS   1000 /* reached by doubling from UNWIND_HEAT_TICK_MS */
/* Requests bring a tick forward, but ticks are at least this far apart. */
#define MGR_TICK_MIN_MS 20
/* Chunk states in used[]. */
enum { CH_FREE = 0, CH_USED = 1, CH_COOL = 2 };

/* One object (file, by dev and inode) some view maps: its slot in unwind_heat
 * (its index in objs; 0 is never used) and its table, loaded or parked or none. */
struct uobj {
	uint64_t dev, inode; /* 0, 0: a free slot */
	struct unwind_table *t;
	uint32_t need;	  /* chunks its table needs (0: never built) */
	uint32_t views;	  /* mappings of published views that name it */
	double heat;	  /* frames walked in it, decayed */
	uint64_t seen;	  /* its unwind_heat counter at the last tick */
	bool waiting;	  /* frames landed in it while its table was not loaded */
	bool neg;	  /* no table can be had (no CFI, Go, too big...) */
	bool ever_loaded; /* its table was loaded once: a later load is a reload */
	bool partial;	  /* its whole table is over the cap: a partial one (partial.c) */
	bool for_room;	  /* partial because its whole table found no room (heat_tick) */
	bool no_partial;  /* no partial table can be had (no .eh_frame_hdr): waits for room */
	uint32_t pid;	  /* a process mapping it, and where: to open it by map_files */
	uint64_t start, end;
	char *path; /* as mapped; owned */
	/* since when its whole table finds no room (0: it does not wait) */
	double no_room_ms;
};

struct vmap {
	uint64_t start, end, pgoff;
	uint32_t slot; /* 0: no object (no table possible) */
};

struct proc_view {
	uint32_t pid;
	uint64_t pstart;
	struct vmap *maps; /* owned; n of them, by start */
	size_t n;
	uint64_t gen; /* unwind_mgr's gen when published: unique per publication */
	/* REMAP re-reads in a row that found this view unchanged, by the kind of
	 * memory their pc was in (enum hearth_remap_kind) */
	uint32_t remap_same[HEARTH_REMAP_KINDS];
};

struct pending {
	uint32_t pid;
	uint64_t pstart;
	double due_ms; /* not before this (CLOCK_MONOTONIC ms) */
	int rechecks;  /* re-reads still to schedule after this one */
	/* asked for by walks (REMAPs): the kinds of their pcs (1 << enum
	 * hearth_remap_kind), each backed off when nothing changed; 0: a plain read */
	unsigned remap;
};

/* A REMAP re-read that finds the view unchanged (the pc was JIT code, not a
 * library loaded since) holds the pid's next one of that kind (a pc in an
 * executable file mapping or not: enum hearth_remap_kind) off for MGR_REMAP_MIN_MS,
 * doubled at each such re-read in a row up to MGR_REMAP_MAX_MS; one that finds
 * a change starts over (BPF's own limit, 0.5 s). A node process, its leaves in
 * JIT code, costs a maps read every 10 s; a library dlopened meanwhile waits at
 * most that long for its view. */
#define MGR_REMAP_MIN_MS 1000.0
#define MGR_REMAP_MAX_MS 10000.0

/* A process announced by its first sample may be inside exec, before ld.so has
 * mapped its libraries: its maps are read again this long after each read, as
 * long as they look unsettled (the dynamic loader mapped, no library yet). A
 * library loaded later is caught by the BPF side's REMAP requests. The first
 * re-read comes at 10 ms, ld.so's usual work being 2-5 ms: a process of 80 ms
 * is then read with its libraries while it lives (and the process table with
 * it, unwind_mgr__set_on_read), where a first re-read at 100 ms found it gone. */
static const double mgr_recheck_ms[] = {10, 100, 500, 2000};
#define MGR_RECHECKS ((int)(sizeof(mgr_recheck_ms) / sizeof(mgr_recheck_ms[0])))

struct unwind_mgr {
	/* unwind_rows is written through a mapping of just the chunks being loaded,
	 * unmapped right after: a mapping of the whole array would count all of it
	 * (16 MiB by default) in hearth's RSS for as long as it runs. */
	int rows_fd, procs_fd;
	uint32_t chunks;		    /* chunks in unwind_rows */
	uint8_t used[HEARTH_UNWIND_CHUNKS]; /* CH_* */
	/* built tables, loaded or parked; found by a linear scan (a few hundred at
	 * most, scanned per object while a view is built, off the sample path) */
	struct unwind_table **tables;
	size_t n_tables, cap_tables;
	struct uobj *objs; /* by slot; objs[0] unused */
	size_t n_objs, cap_objs;
	struct proc_view *procs;
	size_t n_procs, cap_procs;
	struct pending *queue;
	size_t n_queue, cap_queue;
	/* files without a table: a lossy ring (the oldest forgotten), scanned */
	struct object_id neg[MGR_NEG_ENTRIES];
	size_t neg_next, n_neg;
	uint64_t builds, rebuilds, build_failed, no_room, reused;
	uint64_t loads, reloads, evictions, requests, request_events, ticks;
	uint64_t partial_requests, partial_reloads, partial_for_room;
	uint64_t parked_bytes;
	uint64_t tick; /* counts tables becoming idle: their LRU order */
	double build_ms;
	uint64_t gen; /* bumped when a view is published or dropped */
	/* heat: the unwind_heat counters (mapped read-only), or NULL */
	const volatile uint64_t *heat;
	double heat_ms, cool_until_ms, want_ms;
	double tick_every_ms; /* UNWIND_HEAT_TICK_MS, or MGR_SLOW_TICK_MS when idle */
	bool want;
	bool registered; /* MEM_UNWIND evictor */
	/* the figures as of the last work call, for other threads (/metrics) */
	pthread_mutex_t snap_lock;
	struct unwind_mgr_stats snap;
	/* ranges of unwind_rows mapped read-only for walks (unwind_mgr__walk_batch) */
	struct walk_range {
		uint32_t row_start, row_count;
		void *map;
		size_t len;
	} walk_maps[HEARTH_UNWIND_MAX_MAPPINGS];
	size_t n_walk_maps;
	bool walk_batch;
	int pending_fd; /* unwind_pending, or -1 */
	void (*on_read)(void *ctx, uint32_t pid, uint64_t pstart, bool remap); /* set_on_read */
	void *on_read_ctx;
	int remap_fd;	/* unwind_remap, or -1 */
	uint64_t remaps, remaps_unchanged;
};

static double mono_ms(void)
{
	return (double)base_clock_ns(CLOCK_MONOTONIC) / 1e6;
}

/* Room in *arr (elements of size sz) for n + 1. 0 or -ENOMEM. */
static int grow(void **arr, size_t *cap, size_t n, size_t sz)
{
	return base_grow(arr, cap, n + 1, sz);
}

int unwind_mgr__new(int rows_fd, int procs_fd, uint32_t chunks, struct unwind_mgr **out)
{
	struct unwind_mgr *m;
	void *probe;

	*out = NULL;
	if (chunks == 0 || chunks > HEARTH_UNWIND_CHUNKS)
		return -EINVAL;
	/* The array must be mmapable (BPF_F_MMAPABLE): find out now, not at the first load. */
	probe = mmap(NULL, MGR_CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, rows_fd, 0);
	if (probe == MAP_FAILED)
		return -errno;
	munmap(probe, MGR_CHUNK_BYTES);
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->chunks = chunks;
	m->rows_fd = rows_fd;
	m->pending_fd = -1;
	m->remap_fd = -1;
	m->procs_fd = procs_fd;
	m->n_objs = 1; /* slot 0: no object */
	pthread_mutex_init(&m->snap_lock, NULL);
	if (grow((void **)&m->objs, &m->cap_objs, 0, sizeof(*m->objs))) {
		free(m);
		return -ENOMEM;
	}
	memset(m->objs, 0, sizeof(*m->objs));
	*out = m;
	return 0;
}

/* ---- chunks and tables ---- */

static uint32_t table_need(const struct unwind_table *t)
{
	return (uint32_t)((t->rows.n + HEARTH_UNWIND_CHUNK_ROWS - 1) / HEARTH_UNWIND_CHUNK_ROWS);
}

static uint64_t rows_bytes(const struct unwind_table *t)
{
	return (uint64_t)t->rows.cap * sizeof(*t->rows.rows);
}

/* The heap rows of a table (built or parked) go: uncharged. */
static void table_free_rows(struct unwind_mgr *m, struct unwind_table *t)
{
	uint64_t b = rows_bytes(t);

	if (t->rows.rows) {
		m->parked_bytes -= b;
		mem_budget__charge(MEM_UNWIND, -(int64_t)b);
	}
	free(t->rows.rows);
	t->rows.rows = NULL;
	t->rows.cap = 0;
}

/* The chunks a table may use: all of them for a partial table, the map less
 * its reserve (MGR_PARTIAL_RESERVE_DIV) for a whole one. */
static uint32_t chunks_for(const struct unwind_mgr *m, bool partial)
{
	return partial ? m->chunks : m->chunks - m->chunks / MGR_PARTIAL_RESERVE_DIV;
}

/* First fit of `need` contiguous free chunks among the first `limit`; index or
 * -ENOSPC. */
static int chunks_alloc(struct unwind_mgr *m, uint32_t need, uint32_t limit)
{
	for (uint32_t i = 0, run = 0; i < limit; i++) {
		run = m->used[i] != CH_FREE ? 0 : run + 1;
		if (run == need)
			return (int)(i + 1 - need);
	}
	return -ENOSPC;
}

/* Copies a table's heap rows into chunks [first, first + need) and drops them. */
static int table_copy_in(struct unwind_mgr *m, struct unwind_table *t, uint32_t first)
{
	uint32_t need = table_need(t);
	size_t bytes = t->rows.n * sizeof(*t->rows.rows);

	/* A window of chunks at a time: the map's pages touched count in our RSS
	 * while mapped, so a 5 MB table mapped whole would add 5 MB to the peak
	 * besides its heap copy (--memory-limit holds VmHWM). */
	for (uint32_t c = 0; c < need; c += MGR_COPY_CHUNKS) {
		uint32_t k = need - c < MGR_COPY_CHUNKS ? need - c : MGR_COPY_CHUNKS;
		size_t off = (size_t)c * MGR_CHUNK_BYTES, len;
		void *dst = mmap(NULL, k * MGR_CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
				 m->rows_fd, (off_t)(first + c) * (off_t)MGR_CHUNK_BYTES);

		if (dst == MAP_FAILED)
			return -errno;
		len = bytes - off < k * MGR_CHUNK_BYTES ? bytes - off : k * MGR_CHUNK_BYTES;
		memcpy(dst, (const char *)t->rows.rows + off, len);
		munmap(dst, k * MGR_CHUNK_BYTES);
	}
	memset(m->used + first, CH_USED, need);
	t->chunks = need;
	t->row_start = first * HEARTH_UNWIND_CHUNK_ROWS;
	__atomic_thread_fence(__ATOMIC_RELEASE); /* rows before the view that uses them */
	/* The map is the copy from now on: keep the count, drop the heap rows. */
	table_free_rows(m, t);
	t->loaded_ms = (uint64_t)mono_ms();
	m->loads++;
	for (size_t i = 1, again = 0; i < m->n_objs; i++) {
		if (m->objs[i].t != t)
			continue;
		if (m->objs[i].ever_loaded && !again++)
			m->reloads++;
		m->objs[i].ever_loaded = true;
	}
	return 0;
}

/* Reads a loaded table's rows back into the heap (parked), charged. */
static int table_copy_out(struct unwind_mgr *m, struct unwind_table *t)
{
	size_t len = (size_t)t->chunks * MGR_CHUNK_BYTES, n = t->rows.n;
	void *src;

	t->rows.rows = malloc((n ? n : 1) * sizeof(*t->rows.rows));
	if (!t->rows.rows)
		return -ENOMEM;
	for (size_t off = 0; off < n * sizeof(*t->rows.rows); off += MGR_COPY_BYTES) {
		size_t w = len - off < MGR_COPY_BYTES ? len - off : MGR_COPY_BYTES;
		size_t want = n * sizeof(*t->rows.rows) - off;
		off_t at = (off_t)(t->row_start / HEARTH_UNWIND_CHUNK_ROWS) * (off_t)MGR_CHUNK_BYTES;

		src = mmap(NULL, w, PROT_READ, MAP_SHARED, m->rows_fd, at + (off_t)off);
		if (src == MAP_FAILED) {
			free(t->rows.rows);
			t->rows.rows = NULL;
			return -errno;
		}
		memcpy((char *)t->rows.rows + off, src, want < w ? want : w);
		munmap(src, w); /* a window at a time, as table_copy_in */
	}
	t->rows.cap = n ? n : 1;
	m->parked_bytes += rows_bytes(t);
	mem_budget__charge(MEM_UNWIND, (int64_t)rows_bytes(t));
	return 0;
}

/* An object's table becomes t (or none): refs and view counts follow. */
static void obj_set_table(struct uobj *o, struct unwind_table *t)
{
	if (o->t) {
		o->t->refs--;
		o->t->views -= o->views;
	}
	o->t = t;
	if (t) {
		t->refs++;
		t->views += o->views;
	}
}

/* An object gains (d > 0) or loses uses by published views. */
static void obj_views(struct uobj *o, int d)
{
	o->views += d;
	if (o->t)
		o->t->views += d;
}

/* Views (of processes) using a table: those of its objects. */
static uint64_t table_views(const struct unwind_mgr *m, const struct unwind_table *t)
{
	(void)m;
	return t->views; /* kept by obj_set_table and obj_views */
}

/* Frees a table whose objects no published view uses with it: its chunks now,
 * and its objects forget it (they keep the chunks it needs). */
static void table_drop(struct unwind_mgr *m, struct unwind_table *t)
{
	if (t->chunks)
		memset(m->used + t->row_start / HEARTH_UNWIND_CHUNK_ROWS, CH_FREE, t->chunks);
	for (size_t i = 1; i < m->n_objs; i++)
		if (m->objs[i].t == t)
			obj_set_table(&m->objs[i], NULL);
	for (size_t i = 0; i < m->n_tables; i++) {
		if (m->tables[i] == t) {
			m->tables[i] = m->tables[--m->n_tables];
			break;
		}
	}
	table_free_rows(m, t);
	mem_budget__charge(MEM_UNWIND, -(int64_t)(t->partial_next.cap * sizeof(*t->rows.rows)));
	unwind_table__free(t);
}

static void republish_table(struct unwind_mgr *m, const struct unwind_table *t);
static uint64_t park_trim(struct unwind_mgr *m, uint64_t max, bool counted);

/* Takes a loaded table out of the row map, its rows parked in memory (charged;
 * park_trim bounds them) so that loading it again needs no build. Chunks a
 * published view still names cool first (MGR_COOL_MS); an idle table's are
 * free at once. */
static void table_park(struct unwind_mgr *m, struct unwind_table *t, double now)
{
	uint32_t first = t->row_start / HEARTH_UNWIND_CHUNK_ROWS, n = t->chunks;
	uint64_t bytes = (uint64_t)t->rows.n * sizeof(*t->rows.rows);
	bool used = t->views > 0;
	/* Under --memory-limit, rows the caches' share has no room for are not
	 * copied out only to be evicted again: a 330k-row table is 4-7 MB of heap
	 * at once, the agent's largest transient at a 32M limit (docs/memory.md).
	 * The table goes as a failed copy does: built again when wanted. */
	bool skip = mem_budget__would_pass(bytes);

	if (!skip && table_copy_out(m, t)) {
		table_drop(m, t); /* not parked: built again when wanted */
		return;
	}
	t->chunks = 0;
	if (!used) {
		memset(m->used + first, CH_FREE, n);
	} else {
		republish_table(m, t);
		memset(m->used + first, CH_COOL, n);
		m->cool_until_ms = now + MGR_COOL_MS;
	}
	if (skip) {
		mem_budget__evicted(MEM_UNWIND, 1, bytes);
		table_drop(m, t); /* views no longer name it: chunks stay as set above */
	}
}

/* Parks the loaded table idle (no view uses it) the longest; false when none. */
static bool drop_oldest_idle(struct unwind_mgr *m)
{
	struct unwind_table *old = NULL;

	for (size_t i = 0; i < m->n_tables; i++) {
		struct unwind_table *t = m->tables[i];

		if (t->chunks && !table_views(m, t) && (!old || t->idle_tick < old->idle_tick))
			old = t;
	}
	if (!old)
		return false;
	table_park(m, old, mono_ms());
	return true;
}

/* Whether `need` chunks could be had from free chunks and idle tables' ones (the
 * same limits as table_load_now): a table is built without room only when
 * dropping idle ones could make it. */
static bool could_fit_idle(const struct unwind_mgr *m, uint32_t need, uint32_t limit)
{
	uint8_t avail[HEARTH_UNWIND_CHUNKS];

	if (need == 0 || need > MGR_OBJ_MAX_CHUNKS(m))
		return false;
	for (uint32_t i = 0; i < limit; i++)
		avail[i] = m->used[i] == CH_FREE;
	for (size_t i = 0; i < m->n_tables; i++) {
		const struct unwind_table *t = m->tables[i];

		if (t->chunks && !table_views(m, t))
			memset(avail + t->row_start / HEARTH_UNWIND_CHUNK_ROWS, 1, t->chunks);
	}
	for (uint32_t i = 0, run = 0; i < limit; i++) {
		run = avail[i] ? run + 1 : 0;
		if (run == need)
			return true;
	}
	return false;
}

/* Loads a table (heap rows) into free chunks, dropping idle tables (least
 * recently idle first) for room, never one a view uses. -ENOSPC when the map
 * has no room for it that way: the policy tick may make room by heat. */
static int table_load_now(struct unwind_mgr *m, struct unwind_table *t)
{
	uint32_t need = table_need(t);
	int first;

	/* One object may take at most half the map (MGR_OBJ_MAX_CHUNKS): a 1M-row
	 * libLLVM must not leave every other process on frame pointers. */
	if (need == 0 || need > MGR_OBJ_MAX_CHUNKS(m) || !t->rows.rows)
		return -ENOSPC;
	if (!could_fit_idle(m, need, chunks_for(m, t->partial)))
		return -ENOSPC;
	while ((first = chunks_alloc(m, need, chunks_for(m, t->partial))) < 0)
		if (!drop_oldest_idle(m))
			return -ENOSPC;
	return table_copy_in(m, t, (uint32_t)first);
}

/* Whether an idle table still describes the file at open_path (same mtime). */
static bool idle_still_valid(const struct unwind_table *t, const char *open_path)
{
	struct stat st;

	if (stat(open_path, &st))
		return false;
	return object_mtime_ns(&st) == t->obj->id.mtime_ns;
}

/* The table of this build-id (bid may be ""), or NULL. */
static struct unwind_table *table_by_build_id(struct unwind_mgr *m, const char *bid)
{
	for (size_t i = 0; i < m->n_tables && bid[0]; i++)
		if (!strcmp(m->tables[i]->obj->build_id, bid))
			return m->tables[i];
	return NULL;
}

static bool neg_has(const struct unwind_mgr *m, const struct object_id *file)
{
	for (size_t i = 0; i < m->n_neg; i++)
		if (object_id__same_file(&m->neg[i], file))
			return true;
	return false;
}

/* Remembers a file without a table (no CFI, Go without it, too big, not ELF). */
static void neg_add(struct unwind_mgr *m, const struct object_id *file)
{
	if (neg_has(m, file))
		return;
	m->neg[m->neg_next] = *file;
	m->neg_next = (m->neg_next + 1) % MGR_NEG_ENTRIES;
	if (m->n_neg < MGR_NEG_ENTRIES)
		m->n_neg++;
}

/* ---- objects (heat slots) ---- */

/* The slot of a file, made when new (recycling one no view uses); 0 when none. */
static uint32_t obj_get(struct unwind_mgr *m, const struct object_id *file, uint32_t pid,
			const struct proc_mapping *pm)
{
	size_t free_slot = 0;
	struct uobj *o;

	for (size_t i = 1; i < m->n_objs; i++) {
		o = &m->objs[i];
		if (o->dev == file->dev && o->inode == file->inode && (o->dev || o->inode))
			goto found;
		if (!free_slot && !o->views && !o->t)
			free_slot = i;
	}
	if (m->n_objs < HEARTH_UNWIND_MAX_OBJECTS &&
	    !grow((void **)&m->objs, &m->cap_objs, m->n_objs, sizeof(*m->objs))) {
		free_slot = m->n_objs++;
		memset(&m->objs[free_slot], 0, sizeof(*m->objs));
	} else if (!free_slot)
		return 0;
	o = &m->objs[free_slot];
	free(o->path);
	/* The counter keeps counting across owners: the new one starts from here. */
	*o = (struct uobj){.dev = file->dev, .inode = file->inode};
	o->seen = m->heat ? m->heat[free_slot] : 0;
found:
	if (!o->path || strcmp(o->path, pm->path)) {
		free(o->path);
		o->path = strdup(pm->path);
	}
	o->pid = pid;
	o->start = pm->start;
	o->end = pm->end;
	return (uint32_t)(o - m->objs);
}

/* Builds the table of an object (or shares the one of its build-id); NULL when
 * there is none. The table is not loaded. */
static struct unwind_table *obj_build(struct unwind_mgr *m, uint32_t slot)
{
	struct uobj *o = &m->objs[slot];
	struct object_id file = {.dev = o->dev, .inode = o->inode};
	size_t max_bytes =
	    (size_t)MGR_OBJ_MAX_CHUNKS(m) * HEARTH_UNWIND_CHUNK_ROWS * MGR_CFI_BYTES_PER_ROW;
	struct unwind_table *t, *same;
	char open_path[96];
	int err;

	snprintf(open_path, sizeof(open_path), "/proc/%u/map_files/%llx-%llx", o->pid,
		 (unsigned long long)o->start, (unsigned long long)o->end);
	err = o->partial ? -EFBIG : unwind_table__build(open_path, o->dev, o->inode, max_bytes, &t);
	if (!err && table_need(t) > MGR_OBJ_MAX_CHUNKS(m)) {
		m->build_ms += t->build_ms;
		unwind_table__free(t);
		err = -EFBIG;
	}
	/* Over the per-object cap: a partial table (docs/unwind.md "Partial tables"). */
	if (err == -EFBIG) {
		o->partial = true;
		err = unwind_table__build_partial(open_path, o->dev, o->inode, &t);
	}
	m->builds++;
	m->rebuilds += o->need != 0 && !o->for_room;
	if (err && o->for_room) {
		/* No partial table (no usable .eh_frame_hdr): its whole table waits
		 * for room, as before (it may fit, unlike one over the cap). */
		m->build_failed++;
		o->partial = o->for_room = false;
		o->no_partial = true;
		return NULL;
	}
	if (err) {
		m->build_failed++;
		/* Only what the file is says "never": not a process gone meanwhile. */
		if (err == -ENODATA || err == -ENOTSUP || err == -EFBIG || err == -ENOEXEC ||
		    err == -EINVAL) {
			neg_add(m, &file);
			o->neg = true;
		}
		return NULL;
	}
	m->build_ms += t->build_ms;
	free(t->path);
	t->path = strdup(o->path ? o->path : "");
	same = table_by_build_id(m, t->obj->build_id);
	if (same && !same->partial != !t->partial)
		same = NULL; /* a whole table is not a partial one: not shared */
	if (!t->path || same ||
	    grow((void **)&m->tables, &m->cap_tables, m->n_tables, sizeof(*m->tables))) {
		unwind_table__free(t);
		t = same; /* the same build-id under another path or inode */
		if (t) {
			obj_set_table(o, t);
			o->need = table_need(t);
		}
		return t;
	}
	m->parked_bytes += rows_bytes(t);
	mem_budget__charge(MEM_UNWIND, (int64_t)rows_bytes(t));
	m->tables[m->n_tables++] = t;
	t->idle_tick = ++m->tick;
	obj_set_table(o, t);
	o->need = table_need(t);
	return t;
}

/* ---- process views ---- */

static struct proc_view *view_find(struct unwind_mgr *m, uint32_t pid)
{
	for (size_t i = 0; i < m->n_procs; i++)
		if (m->procs[i].pid == pid)
			return &m->procs[i];
	return NULL;
}

/* The BPF value of a view: each mapping with its object's table, when loaded. */
static void view_value(const struct unwind_mgr *m, const struct proc_view *v,
		       struct hearth_unwind_proc *val)
{
	memset(val, 0, sizeof(*val));
	val->pstart = v->pstart;
	for (size_t i = 0; i < v->n && i < HEARTH_UNWIND_MAX_MAPPINGS; i++) {
		const struct vmap *vm = &v->maps[i];
		const struct unwind_table *t = vm->slot ? m->objs[vm->slot].t : NULL;
		struct hearth_unwind_mapping *mp = &val->m[val->n++];

		mp->start = vm->start;
		mp->end = vm->end;
		/* No heat slot (no counts, no requests) for an object that can never
		 * have a table: it is walked with frame pointers, as always. */
		mp->obj = m->heat && vm->slot && !m->objs[vm->slot].neg &&
				  m->objs[vm->slot].need <= MGR_OBJ_MAX_CHUNKS(m)
			      ? vm->slot
			      : 0;
		if (t && t->chunks) {
			mp->flags = t->partial ? HEARTH_UNWIND_MAP_PARTIAL : 0;
			mp->bias = vm->start - vm->pgoff - t->seg_delta;
			mp->row_start = t->row_start;
			mp->row_count = (uint32_t)t->rows.n;
		}
	}
}

/* A view's objects gain (+1) or lose (-1) its mappings' uses. */
static void view_count(struct unwind_mgr *m, const struct proc_view *v, int d)
{
	for (size_t i = 0; i < v->n; i++) {
		struct uobj *o = &m->objs[v->maps[i].slot];

		if (!v->maps[i].slot)
			continue;
		obj_views(o, d);
		if (d < 0 && o->t && o->t->chunks && !table_views(m, o->t))
			o->t->idle_tick = ++m->tick; /* idle from now */
	}
}

static void view_drop(struct unwind_mgr *m, struct proc_view *v)
{
	view_count(m, v, -1);
	free(v->maps);
	*v = m->procs[--m->n_procs];
}

/* Writes a view's value again (a table of it was loaded or evicted). */
static int view_republish(struct unwind_mgr *m, struct proc_view *v)
{
	struct hearth_unwind_proc *val = malloc(sizeof(*val));

	if (!val)
		return -ENOMEM;
	view_value(m, v, val);
	if (bpf_map_update_elem(m->procs_fd, &v->pid, val, BPF_EXIST)) {
		free(val);
		return -errno;
	}
	free(val);
	v->gen = ++m->gen; /* held first samples are walked again */
	/* Its gap (if any) is over: the next one may send stack copies again. */
	if (m->pending_fd >= 0)
		bpf_map_delete_elem(m->pending_fd, &v->pid);
	return 0;
}

/* Re-publishes every view that maps an object of table t. */
static void republish_table(struct unwind_mgr *m, const struct unwind_table *t)
{
	for (size_t i = 0; i < m->n_procs; i++) {
		struct proc_view *v = &m->procs[i];

		for (size_t k = 0; k < v->n; k++) {
			if (v->maps[k].slot && m->objs[v->maps[k].slot].t == t) {
				view_republish(m, v);
				break;
			}
		}
	}
}

/* Publishes a process's view (replacing an older one of the same pid). */
static int view_publish(struct unwind_mgr *m, uint32_t pid, uint64_t pstart, struct vmap *maps,
			size_t n)
{
	struct proc_view *old, nv = {.pid = pid, .pstart = pstart, .maps = maps, .n = n};
	struct hearth_unwind_proc *val = malloc(sizeof(*val));
	int err = 0;

	if (!val)
		return -ENOMEM;
	if (grow((void **)&m->procs, &m->cap_procs, m->n_procs, sizeof(*m->procs))) {
		err = -ENOMEM;
		goto cleanup;
	}
	view_value(m, &nv, val);
	if (bpf_map_update_elem(m->procs_fd, &pid, val, BPF_ANY)) {
		err = -errno;
		goto cleanup;
	}
	m->gen++;
	view_count(m, &nv, +1);	 /* before the old one's uses go: shared tables stay in use */
	old = view_find(m, pid); /* after the grow: the array may have moved */
	if (old)
		view_drop(m, old); /* after the update: the walker never sees a freed table */
	nv.gen = m->gen;
	m->procs[m->n_procs++] = nv;
cleanup:
	free(val);
	return err;
}

static uint32_t free_chunks(const struct unwind_mgr *m)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < m->chunks; i++)
		n += m->used[i] == CH_FREE;
	return n;
}

/* Gives an object of a new view its table if it can be had now without taking
 * room from a table in use: one loaded (an idle one taken back), one parked, or
 * one built (when its size is unknown or idle room could hold it). */
static void obj_prepare(struct unwind_mgr *m, uint32_t slot, bool loaded_only)
{
	struct uobj *o = &m->objs[slot];
	struct unwind_table *t = o->t;
	char open_path[96];

	if (o->neg)
		return;
	if (t && !table_views(m, t)) { /* idle, loaded or parked: still that file? */
		snprintf(open_path, sizeof(open_path), "/proc/%u/map_files/%llx-%llx", o->pid,
			 (unsigned long long)o->start, (unsigned long long)o->end);
		if (idle_still_valid(t, open_path)) {
			m->reused += t->chunks != 0;
			if (t->chunks)
				return;
			goto parked;
		}
		table_drop(m, t); /* the file changed under the same inode */
		t = NULL;
	}
	if (t && t->chunks)
		return;
parked:
	if (loaded_only)
		return;
	if (!t) {
		/* Built before, then evicted or without room: with tables by heat,
		 * only the policy builds it again, when its frames make it hot enough
		 * (heat_tick). Built again at every new view, a busy host's tables
		 * (3x the map) were built, found no room or pushed an idle one out,
		 * were parked, trimmed, and built again for the next process: 300+
		 * builds a minute, most of hearth's CPU on bench/fleet. Without
		 * heat: not again until it could fit. */
		if (o->need && (m->heat || !could_fit_idle(m, o->need, chunks_for(m, o->partial))))
			return;
		/* Never built: at once while the map has room to spare (a quiet
		 * host: a new process's tables are out before its first samples
		 * are walked); on a full map, only when a sample lands in it (a
		 * request, its samples sent with stack copies meanwhile). A build
		 * host maps hundreds of libraries no sample ever lands in: built
		 * at every new view, they were 9 builds of 10 on bench/fleet. */
		if (m->heat && free_chunks(m) < m->chunks / MGR_EAGER_FREE_DIV)
			return;
		t = obj_build(m, slot);
		if (!t || t->chunks)
			return;
	}
	/* A table that finds no room stays parked (park_trim drops the coldest
	 * past its bound; its size stays known, o->need): loaded when its object
	 * is hot enough to take a colder one's room (heat_tick), without a build. */
	if (table_load_now(m, t)) {
		m->no_room++;
		/* Parked at once within their bound: a new process of a host whose
		 * tables are 3x the map would otherwise hold every table built that
		 * found no room until the next tick (bench/fleet's genhot: 7 x 5 MB,
		 * the agent's peak RSS under --memory-limit). Its size stays known. */
		park_trim(m, MGR_PARK_MAX(m), false);
	}
}

/* Whether a view's mappings are vm[0..n). */
static bool view_same(const struct proc_view *v, const struct vmap *vm, size_t n)
{
	if (v->n != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (v->maps[i].start != vm[i].start || v->maps[i].end != vm[i].end ||
		    v->maps[i].pgoff != vm[i].pgoff || v->maps[i].slot != vm[i].slot)
			return false;
	return true;
}

/* A REMAP re-read found the view the same for the same-th time in a row: BPF
 * asks for none of that kind before MGR_REMAP_MIN_MS * 2^(same-1), at most
 * MGR_REMAP_MAX_MS. */
static void remap_hold(struct unwind_mgr *m, uint32_t pid, uint32_t kind, uint32_t same)
{
	struct hearth_remap_key key = {.pid = pid, .kind = kind};
	double ms = MGR_REMAP_MIN_MS;
	uint64_t next;

	for (uint32_t i = 1; i < same && ms < MGR_REMAP_MAX_MS; i++)
		ms *= 2;
	if (ms > MGR_REMAP_MAX_MS)
		ms = MGR_REMAP_MAX_MS;
	next = base_clock_ns(CLOCK_MONOTONIC) + (uint64_t)(ms * 1e6);
	if (m->remap_fd >= 0)
		bpf_map_update_elem(m->remap_fd, &key, &next, BPF_ANY);
}

/* Publishes the process's view from /proc/PID/maps. Returns 1 when the view looks
 * settled (no dynamic loader, or a library besides it and the executable: ld.so
 * has done its work), 0 when a re-read may find more, or -errno. remap: walks
 * asked for it (struct pending); a view read the same is then left as it is
 * and the next REMAP of those kinds held off (remap_hold). */
static int proc_build(struct unwind_mgr *m, uint32_t pid, uint64_t pstart, unsigned remap)
{
	struct vmap *vm = calloc(HEARTH_UNWIND_MAX_MAPPINGS, sizeof(*vm));
	struct proc_mapping *maps = NULL;
	struct proc_view *old;
	size_t n_maps = 0, n = 0;
	int err = -ENOMEM, loader = 0;

	if (!vm)
		goto cleanup;
	/* proc's one reader: malformed lines skipped (those mappings keep frame
	 * pointers), capped; -ENOENT when the process is already gone */
	err = proc_read_maps(pid, &maps, &n_maps);
	if (err)
		goto cleanup;
	/* The executable file mappings, in address order (the walker's search). */
	for (size_t i = 0; i < n_maps && n < HEARTH_UNWIND_MAX_MAPPINGS; i++) {
		struct object_id file = {.dev = proc_mapping__dev(&maps[i]),
					 .inode = maps[i].inode};

		if (!maps[i].exec || maps[i].path[0] != '/')
			continue;
		vm[n] = (struct vmap){maps[i].start, maps[i].end, maps[i].pgoff, 0};
		if (!neg_has(m, &file))
			vm[n].slot = obj_get(m, &file, pid, &maps[i]);
		loader |= proc_path_is_loader(maps[i].path);
		n++;
	}
	/* No executable mapping at all: the process is exiting (its mm is gone, its
	 * maps read empty). Keep the view it had: its last samples (and the first
	 * ones still held in user space) are walked with it. */
	if (!n) {
		err = -ESRCH;
		goto cleanup;
	}
	if (remap) {
		m->remaps++;
		old = view_find(m, pid);
		if (old && old->pstart == pstart && view_same(old, vm, n)) {
			m->remaps_unchanged++;
			for (uint32_t k = 0; k < HEARTH_REMAP_KINDS; k++)
				if (remap & 1u << k)
					remap_hold(m, pid, k, ++old->remap_same[k]);
			err = !loader || n > 2;
			goto cleanup;
		}
	}
	/* Tables the manager has first (idle ones taken back), built ones after,
	 * its objects counted as used meanwhile: making room for a new table never
	 * drops an idle one this process takes back a moment later (which would
	 * then be built again and find no room). */
	for (size_t k = 0; k < n; k++)
		if (vm[k].slot)
			obj_prepare(m, vm[k].slot, true);
	for (size_t k = 0; k < n; k++)
		if (vm[k].slot)
			obj_views(&m->objs[vm[k].slot], +1);
	for (size_t k = 0; k < n; k++)
		if (vm[k].slot)
			obj_prepare(m, vm[k].slot, false);
	for (size_t k = 0; k < n; k++)
		if (vm[k].slot)
			obj_views(&m->objs[vm[k].slot], -1);
	err = view_publish(m, pid, pstart, vm, n);
	if (!err) {
		vm = NULL;
		err = !loader || n > 2; /* executable + loader: ld.so still at work */
		/* Settled: its samples need no stack copies any more (BPF sends them
		 * while the process is pending, see unwind_mgr__set_pending). */
		if (err == 1 && m->pending_fd >= 0)
			bpf_map_delete_elem(m->pending_fd, &pid);
		if (m->on_read)
			m->on_read(m->on_read_ctx, pid, pstart, remap != 0);
	}
cleanup:
	free(vm);
	proc_maps_free(maps, n_maps);
	return err;
}

/* ---- heat: tables on demand (heat.c's policy) ---- */

/* Evicts a loaded table for a hotter object: its rows are parked (read back
 * into memory, charged), the views re-published without it, and its chunks
 * cool for MGR_COOL_MS before they are written again. */
static void table_evict_hot(struct unwind_mgr *m, struct unwind_table *t, double now)
{
	m->evictions++;
	table_park(m, t, now);
}

/* Parked tables hold at most as many bytes as the row map: the coldest go. */
static uint64_t park_trim(struct unwind_mgr *m, uint64_t max, bool counted)
{
	uint64_t freed = 0;

	while (m->parked_bytes > max) {
		struct unwind_table *cold = NULL;
		uint64_t b;

		for (size_t i = 0; i < m->n_tables; i++) {
			struct unwind_table *t = m->tables[i];

			if (!t->chunks && t->rows.rows && (!cold || t->heat < cold->heat))
				cold = t;
		}
		if (!cold)
			break;
		b = rows_bytes(cold);
		table_drop(m, cold);
		freed += b;
		if (counted)
			mem_budget__evicted(MEM_UNWIND, 1, b);
	}
	return freed;
}

static const struct uobj *sort_objs;

static int by_heat_desc(const void *a, const void *b)
{
	double x = sort_objs[*(const uint32_t *)a].heat, y = sort_objs[*(const uint32_t *)b].heat;

	return x > y ? -1 : x < y ? 1 : 0;
}

/* The loaded tables as the policy sees them (pinned: loaded moments ago), and
 * their indices in m->tables; tabs and idx have room for m->n_tables. */
static size_t heat_tabs(const struct unwind_mgr *m, double now, struct uheat_table *tabs,
			size_t *idx)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n_tables; i++) {
		const struct unwind_table *lt = m->tables[i];

		if (!lt->chunks)
			continue;
		tabs[n] = (struct uheat_table){lt->heat, lt->row_start / HEARTH_UNWIND_CHUNK_ROWS,
					       lt->chunks,
					       now - (double)lt->loaded_ms < UNWIND_HEAT_PIN_MS};
		idx[n++] = i;
	}
	return n;
}

/* A hot object whose whole table has found no room for UNWIND_HEAT_ROOM_WAIT_MS
 * (every table in its way is about as hot: heat.c's hysteresis keeps them)
 * gets a partial table instead (partial.c: the FDEs its samples land in, a
 * chunk or a few), so that no hot object is left without a table. Its whole
 * table, parked, goes. True when o is now partial, without a table: the
 * caller builds it. Before the wait is over (a shift of heat between two
 * objects resolves in about a second), false: it waits. */
static bool room_partial(struct unwind_mgr *m, struct uobj *o, double now)
{
	struct unwind_table *t = o->t;

	if (o->partial || o->no_partial)
		return false;
	if (!o->no_room_ms)
		o->no_room_ms = now;
	if (now - o->no_room_ms < UNWIND_HEAT_ROOM_WAIT_MS)
		return false;
	if (t) {
		obj_set_table(o, NULL);
		if (!t->refs)
			table_drop(m, t);
	}
	o->partial = o->for_room = true;
	o->no_room_ms = 0;
	m->partial_for_room++;
	return true;
}

/* One tick of the policy: heat from the BPF counters; then the hottest objects
 * that wait for a table get one, in free chunks or in those of colder tables. */
static void heat_tick(struct unwind_mgr *m, double now)
{
	double dt = m->heat_ms ? now - m->heat_ms : 0;
	uint32_t cand[MGR_TICK_CANDIDATES * 4], n_cand = 0;
	struct uheat_table *tabs = NULL;
	size_t *victims = NULL, *tab_idx = NULL;

	uint64_t loads0 = m->loads, evictions0 = m->evictions, requests0 = m->requests;

	m->heat_ms = now;
	m->ticks++;
	if (now >= m->cool_until_ms)
		for (uint32_t i = 0; i < m->chunks; i++)
			if (m->used[i] == CH_COOL)
				m->used[i] = CH_FREE;
	for (size_t i = 0; i < m->n_tables; i++)
		m->tables[i]->heat = 0;
	for (size_t i = 1; i < m->n_objs; i++) {
		struct uobj *o = &m->objs[i];
		uint64_t cur = m->heat[i], d = cur - o->seen;
		bool loaded = o->t && o->t->chunks;

		o->seen = cur;
		o->heat = unwind_heat_decay(o->heat, d, dt, UNWIND_HEAT_HALF_LIFE_MS);
		if (o->t)
			o->t->heat += o->heat;
		if (loaded) {
			o->waiting = false;
			o->no_room_ms = 0;
		} else if (d && (o->dev || o->inode)) {
			o->waiting = true;
			m->requests += d;
		}
		if (o->waiting && !o->views)
			o->waiting = false; /* no process maps it any more */
	}
	for (size_t i = 1; i < m->n_objs; i++) {
		const struct uobj *o = &m->objs[i];

		if (o->waiting && !o->neg && o->heat >= UNWIND_HEAT_MIN &&
		    n_cand < sizeof(cand) / sizeof(cand[0]))
			cand[n_cand++] = (uint32_t)i;
		else if (o->no_room_ms)
			m->objs[i].no_room_ms = 0; /* not waiting for room any more */
	}
	if (!n_cand) {
		m->tick_every_ms = UNWIND_HEAT_TICK_MS;
		return;
	}
	sort_objs = m->objs;
	qsort(cand, n_cand, sizeof(*cand), by_heat_desc);
	for (uint32_t c = 0; c < n_cand && c < MGR_TICK_CANDIDATES; c++) {
		struct uobj *o = &m->objs[cand[c]];
		struct unwind_table *t = o->t;
		size_t n_tabs = 0, n_vic = 0;
		long first;

		if (t && t->chunks)
			continue; /* shared by build-id with an object loaded this tick */
		/* Sized per candidate: a build or a drop changes the table list. */
		free(tabs);
		free(tab_idx);
		free(victims);
		tabs = calloc(m->n_tables + 2, sizeof(*tabs));
		tab_idx = calloc(m->n_tables + 2, sizeof(*tab_idx));
		victims = calloc(m->n_tables + 2, sizeof(*victims));
		if (!tabs || !tab_idx || !victims)
			goto cleanup;
		n_tabs = heat_tabs(m, now, tabs, tab_idx);
		/* Known size first: nothing is built that could not be placed. */
		if (!t && o->need) {
			if (o->need > MGR_OBJ_MAX_CHUNKS(m) ||
			    unwind_heat_place(m->used, chunks_for(m, o->partial), tabs, n_tabs,
					      o->need, o->heat, victims, &n_vic) < 0) {
				if (!room_partial(m, o, now))
					continue;
				n_tabs = heat_tabs(m, now, tabs, tab_idx); /* tables dropped */
			}
		}
		t = o->t;
		if (!t) {
			t = obj_build(m, cand[c]);
			if (!t)
				continue;
			if (t->chunks) { /* a loaded table of the same build-id: its views */
				o->waiting = false;
				republish_table(m, t);
				continue;
			}
			n_tabs = heat_tabs(m, now, tabs, tab_idx); /* one more table */
		}
		if (table_need(t) > MGR_OBJ_MAX_CHUNKS(m) || !t->rows.rows) {
			o->waiting = false; /* never fits: frame pointers it is */
			continue;
		}
		first = unwind_heat_place(m->used, chunks_for(m, t->partial), tabs, n_tabs,
					  table_need(t), o->heat, victims, &n_vic);
		if (first < 0 && room_partial(m, o, now)) {
			/* Its whole table waited long enough: a partial one now. */
			n_tabs = heat_tabs(m, now, tabs, tab_idx);
			t = obj_build(m, cand[c]);
			if (t && t->chunks) {
				o->waiting = false;
				republish_table(m, t);
			}
			if (!t || t->chunks || !t->rows.rows)
				continue;
			n_tabs = heat_tabs(m, now, tabs, tab_idx);
			first = unwind_heat_place(m->used, chunks_for(m, true), tabs, n_tabs,
						  table_need(t), o->heat, victims, &n_vic);
		}
		if (first < 0) {
			m->no_room++; /* parked, size known: loaded when hotter */
			continue;
		}
		if (n_vic) {
			/* Room by eviction: written once the freed chunks have cooled;
			 * the candidate, the hottest, is placed first at the next tick. */
			struct unwind_table **vt = calloc(n_vic, sizeof(*vt));

			if (!vt)
				break;
			/* the tables first: an eviction may drop one, reordering the list */
			for (size_t k = 0; k < n_vic; k++)
				vt[k] = m->tables[tab_idx[victims[k]]];
			for (size_t k = 0; k < n_vic; k++)
				table_evict_hot(m, vt[k], now);
			free(vt);
			break;
		}
		if (table_copy_in(m, t, (uint32_t)first) == 0) {
			o->waiting = false;
			republish_table(m, t);
		}
	}
cleanup:
	free(tabs);
	free(tab_idx);
	free(victims);
	park_trim(m, MGR_PARK_MAX(m), false);
	/* Nothing moved and no waiting object was hit since the last tick: look
	 * less often (twice as long each time, up to a second). An object that
	 * keeps being hit is weighed every tick until it is hot enough. */
	if (m->loads != loads0 || m->evictions != evictions0 || m->requests != requests0)
		m->tick_every_ms = UNWIND_HEAT_TICK_MS;
	else if ((m->tick_every_ms *= 2) > MGR_SLOW_TICK_MS)
		m->tick_every_ms = MGR_SLOW_TICK_MS;
}

/* MEM_UNWIND's evictor: parked tables, coldest first (they are built again
 * when their object is hot again). Runs on the thread that polls the sampler. */
static uint64_t mgr_evict(void *ctx, uint64_t want)
{
	struct unwind_mgr *m = ctx;

	return park_trim(m, m->parked_bytes > want ? m->parked_bytes - want : 0, true);
}

int unwind_mgr__set_heat(struct unwind_mgr *m, int heat_fd)
{
	void *p = mmap(NULL, HEARTH_UNWIND_MAX_OBJECTS * sizeof(uint64_t), PROT_READ, MAP_SHARED,
		       heat_fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	m->heat = p;
	for (size_t i = 1; i < m->n_objs; i++)
		m->objs[i].seen = m->heat[i];
	if (!m->registered && !mem_budget__register(MEM_UNWIND, 2, mgr_evict, m))
		m->registered = true;
	m->tick_every_ms = UNWIND_HEAT_TICK_MS;
	return 0;
}

void unwind_mgr__want_pc(struct unwind_mgr *m, uint32_t obj, uint64_t vaddr)
{
	struct uobj *o = obj && obj < m->n_objs ? &m->objs[obj] : NULL;

	m->partial_requests++;
	if (o && o->t && o->t->partial)
		unwind_partial__want(o->t->partial, vaddr);
}

/* A loaded partial table's next rows (t->partial_next) go into free chunks, its
 * views re-published before its old chunks cool: walks never meet a gap. With
 * no free run, colder tables are evicted for one (heat.c's rule; the rows wait
 * for the freed chunks to cool) and the old rows serve meanwhile. */
static void partial_place(struct unwind_mgr *m, struct unwind_table *t, double now)
{
	uint64_t loads = m->loads, reloads = m->reloads;
	struct cfi_rows old;
	uint32_t old_first = t->row_start / HEARTH_UNWIND_CHUNK_ROWS, old_n = t->chunks;
	uint32_t need = (uint32_t)((t->partial_next.n + HEARTH_UNWIND_CHUNK_ROWS - 1) /
				   HEARTH_UNWIND_CHUNK_ROWS);
	int first = chunks_alloc(m, need, m->chunks);

	if (first < 0) {
		struct uheat_table *tabs = calloc(m->n_tables + 1, sizeof(*tabs));
		size_t *victims = calloc(m->n_tables + 1, sizeof(*victims)), n_vic = 0;
		struct unwind_table **vt = calloc(m->n_tables + 1, sizeof(*vt));

		if (tabs && victims && vt) {
			for (size_t i = 0; i < m->n_tables; i++) {
				const struct unwind_table *lt = m->tables[i];

				tabs[i] = (struct uheat_table){
				    lt->heat, lt->row_start / HEARTH_UNWIND_CHUNK_ROWS, lt->chunks,
				    lt == t || now - (double)lt->loaded_ms < UNWIND_HEAT_PIN_MS};
				vt[i] = m->tables[i];
			}
			if (unwind_heat_place(m->used, m->chunks, tabs, m->n_tables, need, t->heat,
					      victims, &n_vic) >= 0)
				for (size_t k = 0; k < n_vic; k++)
					table_evict_hot(m, vt[victims[k]], now);
		}
		free(tabs);
		free(victims);
		free(vt);
		return; /* placed once the freed chunks have cooled, or a later try */
	}
	/* its rows now: heap rows (already charged) until copied in */
	old = t->rows; /* loaded: no heap rows, n its rows in the map */
	t->rows = t->partial_next;
	memset(&t->partial_next, 0, sizeof(t->partial_next));
	m->parked_bytes += rows_bytes(t);
	if (table_copy_in(m, t, (uint32_t)first)) { /* the old rows serve; tried again */
		m->parked_bytes -= rows_bytes(t);
		t->partial_next = t->rows;
		t->rows = old;
		return;
	}
	m->loads = loads; /* not a table load: the same table grew */
	m->reloads = reloads;
	m->partial_reloads++;
	republish_table(m, t);
	memset(m->used + old_first, t->views ? CH_COOL : CH_FREE, old_n);
	if (t->views)
		m->cool_until_ms = now + MGR_COOL_MS;
}

/* A partial table's FDE set changed (rows: finished, owned). Parked, its heap
 * rows are replaced (the policy loads it); loaded, they wait in partial_next
 * for partial_place. */
static void partial_set_rows(struct unwind_mgr *m, struct unwind_table *t, struct cfi_rows *rows,
			     double now)
{
	if (!t->chunks) {
		if (t->rows.rows)
			table_free_rows(m, t);
		t->rows = *rows;
		m->parked_bytes += rows_bytes(t);
		mem_budget__charge(MEM_UNWIND, (int64_t)rows_bytes(t));
		m->partial_reloads++;
		return;
	}
	mem_budget__charge(MEM_UNWIND, -(int64_t)(t->partial_next.cap * sizeof(*rows->rows)));
	cfi_rows__fini(&t->partial_next);
	t->partial_next = *rows;
	mem_budget__charge(MEM_UNWIND, (int64_t)(rows->cap * sizeof(*rows->rows)));
	partial_place(m, t, now);
}

/* Partial tables with pcs asked for, each written again at most every
 * UNWIND_PARTIAL_RELOAD_MS with the FDEs of all the pcs asked for since; and
 * those whose next rows wait for room. */
static void partial_work(struct unwind_mgr *m, double now)
{
	for (size_t i = 0; i < m->n_tables; i++) {
		struct unwind_table *t = m->tables[i];
		struct cfi_rows rows;

		if (!t->partial)
			continue;
		if (t->partial_next.n && !t->chunks) { /* parked meanwhile: its heap rows */
			struct cfi_rows next = t->partial_next;

			mem_budget__charge(MEM_UNWIND, -(int64_t)(next.cap * sizeof(*next.rows)));
			memset(&t->partial_next, 0, sizeof(t->partial_next));
			partial_set_rows(m, t, &next, now);
		} else if (t->partial_next.n && (!m->cool_until_ms || now >= m->cool_until_ms)) {
			partial_place(m, t, now);
		}
		if (!unwind_partial__pending(t->partial) ||
		    now - t->partial_ms < UNWIND_PARTIAL_RELOAD_MS)
			continue;
		t->partial_ms = now;
		if (unwind_partial__resolve(t->partial, (uint64_t)now, &rows) == 1)
			partial_set_rows(m, t, &rows, now);
	}
}

void unwind_mgr__want(struct unwind_mgr *m)
{
	m->want = true;
	m->want_ms = mono_ms();
	m->request_events++;
}

/* One entry per pid. A request for a pid already queued with the same start
 * joins it: the earlier due time, the rechecks of both, a REMAP only if both
 * are (an exec keeps the start: its read must publish even maps read the
 * same). So a REMAP that comes while a new process's re-reads are queued (a pc
 * in the vdso, or the old image's, before ld.so maps the libraries) keeps them:
 * were they replaced, a re-read finding the view unchanged would hold the next
 * REMAP back a second, and a process of a second would have its libc frames
 * walked without a table for most of its life (test_unwind_first). */
static void enqueue(struct unwind_mgr *m, uint32_t pid, uint64_t pstart, double due, int left,
		    unsigned remap)
{
	for (size_t i = 0; i < m->n_queue; i++) {
		struct pending *q = &m->queue[i];

		if (q->pid != pid)
			continue;
		if (q->pstart != pstart) {
			*q = (struct pending){pid, pstart, due, left, remap};
		} else {
			q->due_ms = due < q->due_ms ? due : q->due_ms;
			q->rechecks = left > q->rechecks ? left : q->rechecks;
			/* a plain read (a new image's, a recheck) always publishes */
			q->remap = q->remap && remap ? q->remap | remap : 0;
		}
		return;
	}
	if (grow((void **)&m->queue, &m->cap_queue, m->n_queue, sizeof(*m->queue)))
		return; /* the process keeps frame-pointer stacks */
	m->queue[m->n_queue++] = (struct pending){pid, pstart, due, left, remap};
}

void unwind_mgr__note(struct unwind_mgr *m, uint32_t pid, uint64_t pstart)
{
	enqueue(m, pid, pstart, 0, MGR_RECHECKS, 0);
}

void unwind_mgr__remap(struct unwind_mgr *m, uint32_t pid, uint64_t pstart, uint32_t kind)
{
	const struct proc_view *v = view_find(m, pid);

	if (kind >= HEARTH_REMAP_KINDS)
		kind = HEARTH_REMAP_OTHER;
	if (v && v->pstart == pstart)
		enqueue(m, pid, pstart, 0, 0, 1u << kind);
}

void unwind_mgr__exit(struct unwind_mgr *m, uint32_t pid)
{
	struct proc_view *v = view_find(m, pid);

	for (size_t i = 0; i < m->n_queue; i++) {
		if (m->queue[i].pid == pid) {
			m->queue[i] = m->queue[--m->n_queue];
			break;
		}
	}
	if (!v)
		return;
	bpf_map_delete_elem(m->procs_fd, &pid);
	view_drop(m, v);
	m->gen++;
}

/* The copy other threads read (unwind_mgr__stats_copy). */
static void snap_refresh(struct unwind_mgr *m)
{
	struct unwind_mgr_stats st;

	unwind_mgr__stats(m, &st);
	pthread_mutex_lock(&m->snap_lock);
	m->snap = st;
	pthread_mutex_unlock(&m->snap_lock);
}

void unwind_mgr__stats_copy(struct unwind_mgr *m, struct unwind_mgr_stats *out)
{
	pthread_mutex_lock(&m->snap_lock);
	*out = m->snap;
	pthread_mutex_unlock(&m->snap_lock);
}

int unwind_mgr__work(struct unwind_mgr *m, int budget_ms)
{
	double t0 = mono_ms();
	int done = 0;

	/* The policy first: a table asked for goes in before new processes' ones. */
	if (m->heat &&
	    ((m->want && t0 - m->heat_ms >= MGR_TICK_MIN_MS) ||
	     t0 - m->heat_ms >= m->tick_every_ms || (m->cool_until_ms && t0 >= m->cool_until_ms))) {
		m->want = false;
		heat_tick(m, t0);
		if (t0 >= m->cool_until_ms)
			m->cool_until_ms = 0;
	}

	partial_work(m, t0);
	/* FIFO among due entries: a busy machine cannot starve a process. */
	for (size_t i = 0; i < m->n_queue && (done == 0 || mono_ms() - t0 < budget_ms);) {
		struct pending p = m->queue[i];

		if (p.due_ms > t0) {
			i++;
			continue;
		}
		memmove(m->queue + i, m->queue + i + 1, (m->n_queue - i - 1) * sizeof(*m->queue));
		m->n_queue--;
		if (proc_build(m, p.pid, p.pstart, p.remap) == 0 && p.rechecks > 0)
			enqueue(m, p.pid, p.pstart,
				mono_ms() + mgr_recheck_ms[MGR_RECHECKS - p.rechecks],
				p.rechecks - 1, 0);
		done++;
	}
	snap_refresh(m);
	return done;
}

int unwind_mgr__next_due_ms(const struct unwind_mgr *m)
{
	double now = mono_ms(), first = -1;

	for (size_t i = 0; i < m->n_queue; i++)
		if (first < 0 || m->queue[i].due_ms < first)
			first = m->queue[i].due_ms;
	if (m->heat) {
		/* The policy's ticks: asked for now, freed chunks cooled, or requests
		 * came lately (objects waiting may get room as heat shifts). */
		double tick = -1;

		if (m->want)
			tick = m->heat_ms + MGR_TICK_MIN_MS;
		else if (m->cool_until_ms)
			tick = m->cool_until_ms;
		else if (now - m->want_ms < MGR_WANT_WINDOW_MS)
			tick = m->heat_ms + m->tick_every_ms;
		if (tick >= 0 && (first < 0 || tick < first))
			first = tick;
	}
	for (size_t i = 0; i < m->n_tables; i++) { /* partial tables with pcs asked for */
		const struct unwind_table *t = m->tables[i];
		double due = t->partial_ms + UNWIND_PARTIAL_RELOAD_MS;

		if (t->partial && t->partial_next.n) /* waits for room: at the next tick */
			due = m->heat_ms + UNWIND_HEAT_TICK_MS;
		else if (!t->partial || !unwind_partial__pending(t->partial))
			continue;
		if (first < 0 || due < first)
			first = due;
	}
	if (first < 0)
		return -1;
	return first <= now ? 0 : (int)(first - now) + 1;
}

void unwind_mgr__stats(const struct unwind_mgr *m, struct unwind_mgr_stats *o)
{
	memset(o, 0, sizeof(*o));
	o->reused = m->reused;
	o->procs = m->n_procs;
	o->chunks_total = m->chunks;
	for (size_t i = 0; i < m->chunks; i++)
		o->chunks_used += m->used[i] == CH_USED;
	o->user_bytes = sizeof(*m) + m->cap_tables * sizeof(*m->tables) +
			m->cap_procs * sizeof(*m->procs) + m->cap_queue * sizeof(*m->queue) +
			m->cap_objs * sizeof(*m->objs);
	for (size_t i = 0; i < m->n_tables; i++) {
		const struct unwind_table *t = m->tables[i];

		if (t->chunks) {
			o->rows += t->rows.n;
			if (table_views(m, t))
				o->tables++;
			else
				o->idle_tables++;
		} else {
			o->parked_tables++;
		}
		if (t->partial) {
			struct unwind_partial_stats ps;

			unwind_partial__stats(t->partial, &ps);
			o->partial_tables++;
			o->partial_fdes += ps.fdes;
			o->partial_fdes_added += ps.fdes_added;
			o->partial_fdes_dropped += ps.fdes_dropped;
			o->partial_not_covered += ps.not_covered;
			o->user_bytes += ps.heap_bytes;
		}
		o->user_bytes += sizeof(*t) + t->rows.cap * sizeof(*t->rows.rows) +
				 sizeof(*t->obj) + t->obj->n_segs * sizeof(*t->obj->segs) +
				 strlen(t->path) + 1;
	}
	for (size_t i = 1; i < m->n_objs; i++) {
		const struct uobj *ob = &m->objs[i];

		if (!ob->dev && !ob->inode)
			continue;
		o->objects++;
		o->waiting_objects += ob->waiting && !(ob->t && ob->t->chunks);
		if (ob->path)
			o->user_bytes += strlen(ob->path) + 1;
	}
	for (size_t i = 0; i < m->n_procs; i++)
		o->user_bytes += m->procs[i].n * sizeof(struct vmap);
	o->row_bytes = o->rows * sizeof(struct hearth_unwind_row);
	o->builds = m->builds;
	o->rebuilds = m->rebuilds;
	o->no_room_objects = o->waiting_objects;
	o->build_failed = m->build_failed;
	o->no_room = m->no_room;
	o->build_ms = m->build_ms;
	o->tables_loaded = m->loads;
	o->tables_evicted = m->evictions;
	o->tables_reloaded = m->reloads;
	o->requests = m->requests;
	o->request_events = m->request_events;
	o->parked_bytes = m->parked_bytes;
	o->bpf_bytes_used = o->chunks_used * MGR_CHUNK_BYTES;
	o->bpf_bytes_budget = (uint64_t)m->chunks * MGR_CHUNK_BYTES;
	o->heat_ticks = m->ticks;
	o->partial_requests = m->partial_requests;
	o->partial_reloads = m->partial_reloads;
	o->partial_for_room = m->partial_for_room;
	o->remaps = m->remaps;
	o->remaps_unchanged = m->remaps_unchanged;
}

const struct unwind_table *unwind_mgr__largest(const struct unwind_mgr *m)
{
	const struct unwind_table *best = NULL;

	for (size_t i = 0; i < m->n_tables; i++)
		if (!best || m->tables[i]->rows.n > best->rows.n)
			best = m->tables[i];
	return best;
}

const struct unwind_table *unwind_mgr__find_path(const struct unwind_mgr *m, const char *substr)
{
	for (size_t i = 0; i < m->n_tables; i++)
		if (strstr(m->tables[i]->path, substr))
			return m->tables[i];
	return NULL;
}

/* The rows of a mapping in the pages that hold them, mapped at r->map. */
static const struct hearth_unwind_row *range_rows(const struct walk_range *r)
{
	if (r->map == MAP_FAILED)
		return NULL;
	/* the rows start this far into their first page */
	return (const struct hearth_unwind_row *)((char *)r->map +
						  (size_t)r->row_start *
						      sizeof(struct hearth_unwind_row) % 4096);
}

/* unwind_rows_fn over the manager's rows: the pages holding a mapping's rows
 * are mapped the first time a walk of the batch needs them (not the whole
 * array: mapping it populates every page, 16 MiB by default, each time). */
static const struct hearth_unwind_row *mgr_rows_of(void *ctx,
						   const struct hearth_unwind_mapping *mp)
{
	struct unwind_mgr *m = ctx;
	struct walk_range *r;
	size_t first, end;

	for (size_t i = 0; i < m->n_walk_maps; i++)
		if (m->walk_maps[i].row_start == mp->row_start &&
		    m->walk_maps[i].row_count == mp->row_count)
			return range_rows(&m->walk_maps[i]);
	if (m->n_walk_maps == HEARTH_UNWIND_MAX_MAPPINGS ||
	    (uint64_t)mp->row_start + mp->row_count >
		(uint64_t)m->chunks * HEARTH_UNWIND_CHUNK_ROWS)
		return NULL;
	/* byte offset of the first row rounded down to a page, of the end up */
	first = (size_t)mp->row_start * sizeof(struct hearth_unwind_row) / 4096 * 4096;
	end = ((size_t)mp->row_start + mp->row_count) * sizeof(struct hearth_unwind_row);
	end = (end + 4095) / 4096 * 4096;
	r = &m->walk_maps[m->n_walk_maps++];
	*r = (struct walk_range){mp->row_start, mp->row_count, NULL, end - first};
	r->map = mmap(NULL, r->len, PROT_READ, MAP_SHARED, m->rows_fd, (off_t)first);
	return range_rows(r);
}

void unwind_mgr__walk_batch(struct unwind_mgr *m, bool start)
{
	m->walk_batch = start;
	if (start)
		return;
	for (size_t i = 0; i < m->n_walk_maps; i++)
		if (m->walk_maps[i].map != MAP_FAILED)
			munmap(m->walk_maps[i].map, m->walk_maps[i].len);
	m->n_walk_maps = 0;
}

int unwind_mgr__walk(struct unwind_mgr *m, uint32_t pid, uint64_t pstart, uint64_t pc, uint64_t sp,
		     uint64_t bp, const uint8_t *stack, size_t stack_len, uint64_t *frames,
		     size_t max_frames, bool *complete)
{
	const struct proc_view *v = view_find(m, pid);
	struct hearth_unwind_proc *val = NULL;
	bool own_batch = !m->walk_batch;
	int err;

	if (!v || v->pstart != pstart)
		return -ENOENT;
	val = malloc(sizeof(*val));
	if (!val)
		return -ENOMEM;
	if (bpf_map_lookup_elem(m->procs_fd, &pid, val) || val->pstart != pstart) {
		err = -ENOENT;
		goto cleanup;
	}
	if (own_batch)
		unwind_mgr__walk_batch(m, true);
	err = (int)unwind_walk_copy(val, mgr_rows_of, m, pc, sp, bp, stack, stack_len, frames,
				    max_frames, complete);
	if (own_batch)
		unwind_mgr__walk_batch(m, false);
cleanup:
	free(val);
	return err;
}

void unwind_mgr__set_on_read(struct unwind_mgr *m,
			     void (*fn)(void *ctx, uint32_t pid, uint64_t pstart, bool remap),
			     void *ctx)
{
	m->on_read = fn;
	m->on_read_ctx = ctx;
}

void unwind_mgr__set_pending(struct unwind_mgr *m, int pending_fd)
{
	m->pending_fd = pending_fd;
}

void unwind_mgr__set_remap(struct unwind_mgr *m, int remap_fd)
{
	m->remap_fd = remap_fd;
}

uint64_t unwind_mgr__view_gen(struct unwind_mgr *m, uint32_t pid, uint64_t pstart)
{
	const struct proc_view *v = view_find(m, pid);

	return v && v->pstart == pstart ? v->gen : 0;
}

void unwind_mgr__free(struct unwind_mgr *m)
{
	if (!m)
		return;
	unwind_mgr__walk_batch(m, false);
	while (m->n_procs)
		view_drop(m, &m->procs[m->n_procs - 1]);
	while (m->n_tables)
		table_drop(m, m->tables[m->n_tables - 1]);
	for (size_t i = 0; i < m->n_objs; i++)
		free(m->objs[i].path);
	if (m->registered)
		mem_budget__unregister(mgr_evict, m);
	if (m->heat)
		munmap((void *)m->heat, HEARTH_UNWIND_MAX_OBJECTS * sizeof(uint64_t));
	free(m->objs);
	pthread_mutex_destroy(&m->snap_lock);
	free(m->tables);
	free(m->procs);
	free(m->queue);
	free(m);
}
