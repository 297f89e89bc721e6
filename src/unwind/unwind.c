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
/* Files whose table was built but found no room, remembered with the chunks it
 * needs (a lossy ring, the oldest forgotten): 16 bytes of identity and 4 of size
 * each, 24 KiB in all; the PyTorch host of issue 29 had 544 such objects. */
#define MGR_NOROOM_ENTRIES 1024
/* Idle tables kept at most (besides the room they take in unwind_rows). */
#define MGR_IDLE_MAX 512

struct proc_view {
	uint32_t pid;
	uint64_t pstart;
	struct unwind_table **tables; /* one ref each; owned array */
	size_t n;
	uint64_t gen; /* unwind_mgr's gen when published: unique per publication */
};

struct pending {
	uint32_t pid;
	uint64_t pstart;
	double due_ms; /* not before this (CLOCK_MONOTONIC ms) */
	int rechecks;  /* re-reads still to schedule after this one */
};

/* A process announced by its first sample may be inside exec, before ld.so has
 * mapped its libraries: its maps are read again this long after each read, as
 * long as they look unsettled (the dynamic loader mapped, no library yet). A
 * library loaded later is caught by the BPF side's REMAP requests. */
static const double mgr_recheck_ms[] = {100, 500, 2000};
#define MGR_RECHECKS ((int)(sizeof(mgr_recheck_ms) / sizeof(mgr_recheck_ms[0])))

struct unwind_mgr {
	/* unwind_rows is written through a mapping of just the chunks being loaded,
	 * unmapped right after: a mapping of the whole array would count all of it
	 * (16 MiB by default) in hearth's RSS for as long as it runs. */
	int rows_fd, procs_fd;
	uint32_t chunks; /* chunks in unwind_rows */
	uint8_t used[HEARTH_UNWIND_CHUNKS];
	/* live and idle tables; found by a linear scan, not a base_hmap: a few hundred at
	 * most, scanned per mapping while a view is built, off the sample path */
	struct unwind_table **tables;
	size_t n_tables, cap_tables;
	struct proc_view *procs;
	size_t n_procs, cap_procs;
	struct pending *queue;
	size_t n_queue, cap_queue;
	/* files without a table: a lossy ring (the oldest forgotten), scanned */
	struct object_id neg[MGR_NEG_ENTRIES];
	size_t neg_next, n_neg;
	/* files whose table did not fit when built: not built again until a run of
	 * free or idle chunks could hold it (noroom_could_fit) */
	struct noroom {
		uint64_t dev, inode;
		uint32_t need; /* chunks the table needs */
	} noroom[MGR_NOROOM_ENTRIES];
	size_t noroom_next, n_noroom;
	uint64_t builds, rebuilds, build_failed, no_room, reused;
	uint64_t tick; /* counts tables becoming idle: their LRU order */
	size_t n_idle;
	double build_ms;
	uint64_t gen; /* bumped when a view is published or dropped */
	/* ranges of unwind_rows mapped read-only for walks (unwind_mgr__walk_batch) */
	struct walk_range {
		uint32_t row_start, row_count;
		void *map;
		size_t len;
	} walk_maps[HEARTH_UNWIND_MAX_MAPPINGS];
	size_t n_walk_maps;
	bool walk_batch;
	int pending_fd; /* unwind_pending, or -1 */
};

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
	m->procs_fd = procs_fd;
	*out = m;
	return 0;
}

/* ---- chunks ---- */

/* First fit of `need` contiguous free chunks; index or -ENOSPC. */
static int chunks_alloc(struct unwind_mgr *m, uint32_t need)
{
	for (uint32_t i = 0, run = 0; i < m->chunks; i++) {
		run = m->used[i] ? 0 : run + 1;
		if (run == need) {
			memset(m->used + i + 1 - need, 1, need);
			return (int)(i + 1 - need);
		}
	}
	return -ENOSPC;
}

static bool evict_oldest_idle(struct unwind_mgr *m);

/* Copies a table into the row map (first ref). -ENOSPC when the map is full. */
static int table_load(struct unwind_mgr *m, struct unwind_table *t)
{
	uint32_t need =
	    (uint32_t)((t->rows.n + HEARTH_UNWIND_CHUNK_ROWS - 1) / HEARTH_UNWIND_CHUNK_ROWS);
	void *dst;
	int first;

	/* One object may take at most a quarter of the map: a 1M-row libLLVM must
	 * not leave every other process on frame pointers. */
	if (need == 0 || need > m->chunks / 4)
		return -ENOSPC;
	/* Make room by evicting idle tables, least recently used first. */
	while ((first = chunks_alloc(m, need)) < 0)
		if (!evict_oldest_idle(m))
			return first;
	dst = mmap(NULL, need * MGR_CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, m->rows_fd,
		   (off_t)first * (off_t)MGR_CHUNK_BYTES);
	if (dst == MAP_FAILED) {
		memset(m->used + first, 0, need);
		return -errno;
	}
	t->chunks = need;
	t->row_start = (uint32_t)first * HEARTH_UNWIND_CHUNK_ROWS;
	memcpy(dst, t->rows.rows, t->rows.n * sizeof(*t->rows.rows));
	munmap(dst, need * MGR_CHUNK_BYTES);
	__atomic_thread_fence(__ATOMIC_RELEASE); /* rows before the view that uses them */
	/* The map is the copy from now on: keep the count, drop the heap rows. */
	free(t->rows.rows);
	t->rows.rows = NULL;
	t->rows.cap = 0;
	return 0;
}

/* Frees a table and its chunks (idle or not: the caller has no view using it). */
static void table_evict(struct unwind_mgr *m, struct unwind_table *t)
{
	memset(m->used + t->row_start / HEARTH_UNWIND_CHUNK_ROWS, 0, t->chunks);
	for (size_t i = 0; i < m->n_tables; i++) {
		if (m->tables[i] == t) {
			m->tables[i] = m->tables[--m->n_tables];
			break;
		}
	}
	if (t->refs == 0)
		m->n_idle--;
	unwind_table__free(t);
}

/* Evicts the table idle the longest; false when none is idle. */
static bool evict_oldest_idle(struct unwind_mgr *m)
{
	struct unwind_table *old = NULL;

	for (size_t i = 0; i < m->n_tables; i++) {
		struct unwind_table *t = m->tables[i];

		if (t->refs == 0 && (!old || t->idle_tick < old->idle_tick))
			old = t;
	}
	if (!old)
		return false;
	table_evict(m, old);
	return true;
}

/* Drops a view's ref; the last one leaves the table loaded and idle. */
static void table_put(struct unwind_mgr *m, struct unwind_table *t)
{
	if (!t || --t->refs > 0)
		return;
	t->idle_tick = ++m->tick;
	m->n_idle++;
	if (m->n_idle > MGR_IDLE_MAX)
		evict_oldest_idle(m);
}

/* Whether an idle table still describes the file at open_path (same mtime). */
static bool idle_still_valid(const struct unwind_table *t, const char *open_path)
{
	struct stat st;

	if (stat(open_path, &st))
		return false;
	return object_mtime_ns(&st) == t->obj->id.mtime_ns;
}

/* ---- tables ---- */

/* The table of this file (dev and inode; file may be NULL), else of this build-id
 * (bid may be NULL or ""). */
static struct unwind_table *table_find(struct unwind_mgr *m, const struct object_id *file,
				       const char *bid)
{
	for (size_t i = 0; i < m->n_tables; i++) {
		struct unwind_table *t = m->tables[i];

		if ((file && object_id__same_file(&t->obj->id, file)) ||
		    (bid && bid[0] && !strcmp(t->obj->build_id, bid)))
			return t;
	}
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

/* The no-room entry of a file, or NULL. */
static struct noroom *noroom_find(struct unwind_mgr *m, const struct object_id *file)
{
	for (size_t i = 0; i < m->n_noroom; i++)
		if (m->noroom[i].dev == file->dev && m->noroom[i].inode == file->inode)
			return &m->noroom[i];
	return NULL;
}

/* Remembers (or updates) a file whose table needs `need` chunks and found none. */
static void noroom_add(struct unwind_mgr *m, const struct object_id *file, uint32_t need)
{
	struct noroom *e = noroom_find(m, file);

	if (!e) {
		e = &m->noroom[m->noroom_next];
		m->noroom_next = (m->noroom_next + 1) % MGR_NOROOM_ENTRIES;
		if (m->n_noroom < MGR_NOROOM_ENTRIES)
			m->n_noroom++;
	}
	*e = (struct noroom){file->dev, file->inode, need};
}

static void noroom_del(struct unwind_mgr *m, struct noroom *e)
{
	/* the last entry moves into the hole; the freed slot is the next written */
	*e = m->noroom[--m->n_noroom];
	m->noroom_next = m->n_noroom % MGR_NOROOM_ENTRIES;
}

/* Whether table_load could place `need` chunks now: a run of chunks that are
 * free or held by idle tables (which it evicts). The same limits as
 * table_load, so a table built after a yes loads, and one not built stays
 * out: a table without room is built again only when room has appeared. */
static bool noroom_could_fit(const struct unwind_mgr *m, uint32_t need)
{
	uint8_t avail[HEARTH_UNWIND_CHUNKS];

	if (need == 0 || need > m->chunks / 4)
		return false;
	for (uint32_t i = 0; i < m->chunks; i++)
		avail[i] = !m->used[i];
	for (size_t i = 0; i < m->n_tables; i++) {
		const struct unwind_table *t = m->tables[i];

		if (t->refs == 0)
			memset(avail + t->row_start / HEARTH_UNWIND_CHUNK_ROWS, 1, t->chunks);
	}
	for (uint32_t i = 0, run = 0; i < m->chunks; i++) {
		run = avail[i] ? run + 1 : 0;
		if (run == need)
			return true;
	}
	return false;
}

/* Builds (or shares) the table of a mapped file and takes a ref; NULL if none. */
static struct unwind_table *table_get(struct unwind_mgr *m, const char *open_path, const char *path,
				      const struct object_id *file)
{
	struct unwind_table *t = table_find(m, file, NULL), *same;
	struct noroom *nr;
	size_t max_bytes = (size_t)m->chunks / 4 * HEARTH_UNWIND_CHUNK_ROWS * MGR_CFI_BYTES_PER_ROW;
	int err;

	if (t && t->refs == 0) {
		if (idle_still_valid(t, open_path)) {
			m->n_idle--;
			m->reused++;
			goto ref;
		}
		table_evict(m, t); /* the file changed under the same inode */
		t = NULL;
	}
	if (t)
		goto ref;
	if (neg_has(m, file))
		return NULL;
	/* Built before and found no room: not again until it could fit. */
	nr = noroom_find(m, file);
	if (nr && !noroom_could_fit(m, nr->need))
		return NULL;
	err = unwind_table__build(open_path, file->dev, file->inode, max_bytes, &t);
	m->builds++;
	m->rebuilds += nr != NULL;
	if (err) {
		m->build_failed++;
		/* Only what the file is says "never": not a process gone meanwhile. */
		if (err == -ENODATA || err == -ENOTSUP || err == -EFBIG || err == -ENOEXEC ||
		    err == -EINVAL)
			neg_add(m, file);
		return NULL;
	}
	m->build_ms += t->build_ms;
	free(t->path);
	t->path = strdup(path);
	same = table_find(m, NULL, t->obj->build_id);
	if (!t->path || same ||
	    grow((void **)&m->tables, &m->cap_tables, m->n_tables, sizeof(*m->tables))) {
		unwind_table__free(t);
		t = same; /* the same build-id under another path or inode */
		if (!t)
			return NULL;
		if (t->refs == 0)
			m->n_idle--;
		goto ref;
	}
	if (table_load(m, t)) {
		m->no_room++;
		/* Remembered with its size, not built (parsed, sorted: 73% of
		 * hearth's CPU on a busy host, issue 29) again for every process
		 * and re-read that maps it until chunks are freed or idle enough
		 * to hold it; one that never fits (more than a quarter of the
		 * map) is never built again. */
		noroom_add(m, file,
			   (uint32_t)((t->rows.n + HEARTH_UNWIND_CHUNK_ROWS - 1) /
				      HEARTH_UNWIND_CHUNK_ROWS));
		unwind_table__free(t);
		return NULL;
	}
	nr = noroom_find(m, file);
	if (nr)
		noroom_del(m, nr);
	m->tables[m->n_tables++] = t;
ref:
	t->refs++;
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

static void view_drop(struct unwind_mgr *m, struct proc_view *v)
{
	for (size_t i = 0; i < v->n; i++)
		table_put(m, v->tables[i]);
	free(v->tables);
	*v = m->procs[--m->n_procs];
}

/* The table of a mapping of /proc/PID/maps (a ref), or NULL. With loaded_only,
 * only a table the manager has (in use or idle): NULL, and *skipped set, if not. */
static struct unwind_table *mapping_table(struct unwind_mgr *m, uint32_t pid,
					  const struct proc_mapping *pm, bool loaded_only,
					  bool *skipped)
{
	struct object_id file = {.dev = proc_mapping__dev(pm), .inode = pm->inode};
	char open_path[96];

	*skipped = loaded_only && !table_find(m, &file, NULL);
	if (*skipped)
		return NULL;
	snprintf(open_path, sizeof(open_path), "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)pm->start, (unsigned long long)pm->end);
	return table_get(m, open_path, pm->path, &file);
}

/* One mapping into val (and its table, maybe NULL, into tabs). */
static void add_mapping(const struct proc_mapping *pm, struct unwind_table *t,
			struct hearth_unwind_proc *val, struct unwind_table **tabs)
{
	struct hearth_unwind_mapping *mp = &val->m[val->n];

	mp->start = pm->start;
	mp->end = pm->end;
	mp->bias = t ? pm->start - pm->pgoff - t->seg_delta : 0;
	mp->row_start = t ? t->row_start : 0;
	mp->row_count = t ? (uint32_t)t->rows.n : 0;
	tabs[val->n++] = t;
}

/* Publishes a process's view (replacing an older one of the same pid). */
static int view_publish(struct unwind_mgr *m, const struct hearth_unwind_proc *val, uint32_t pid,
			struct unwind_table **tabs)
{
	struct proc_view *old = view_find(m, pid), nv = {.pid = pid, .pstart = val->pstart};

	if (bpf_map_update_elem(m->procs_fd, &pid, val, BPF_ANY))
		return -errno;
	m->gen++;
	if (old)
		view_drop(m, old); /* after the update: the walker never sees a freed table */
	if (grow((void **)&m->procs, &m->cap_procs, m->n_procs, sizeof(*m->procs)))
		return -ENOMEM;
	nv.tables = tabs;
	nv.n = val->n;
	nv.gen = m->gen;
	m->procs[m->n_procs++] = nv;
	return 0;
}

/* Whether a mapped path is the dynamic loader (glibc's or musl's). */
static bool maps_loader(const char *path)
{
	return strstr(path, "/ld-linux") || strstr(path, "/ld-musl");
}

/* Publishes the process's view from /proc/PID/maps. Returns 1 when the view looks
 * settled (no dynamic loader, or a library besides it and the executable: ld.so
 * has done its work), 0 when a re-read may find more, or -errno. */
static int proc_build(struct unwind_mgr *m, uint32_t pid, uint64_t pstart)
{
	struct hearth_unwind_proc *val = calloc(1, sizeof(*val));
	struct unwind_table **tabs = calloc(HEARTH_UNWIND_MAX_MAPPINGS, sizeof(*tabs));
	struct proc_mapping *maps = NULL;
	size_t n_maps = 0, idx[HEARTH_UNWIND_MAX_MAPPINGS], n_idx = 0;
	bool later[HEARTH_UNWIND_MAX_MAPPINGS];
	int err = -ENOMEM, loader = 0;

	if (!val || !tabs)
		goto cleanup;
	/* proc's one reader: malformed lines skipped (those mappings keep frame
	 * pointers), capped; -ENOENT when the process is already gone */
	err = proc_read_maps(pid, &maps, &n_maps);
	if (err)
		goto cleanup;
	val->pstart = pstart;
	/* The executable file mappings, in address order (the walker's search). */
	for (size_t i = 0; i < n_maps && n_idx < HEARTH_UNWIND_MAX_MAPPINGS; i++)
		if (maps[i].exec && maps[i].path[0] == '/')
			idx[n_idx++] = i;
	/* Tables the manager has first, built ones after: making room for a new
	 * table must not evict an idle one this process takes back a moment later
	 * (which would then be built again and find no room). */
	for (size_t k = 0; k < n_idx; k++)
		tabs[k] = mapping_table(m, pid, &maps[idx[k]], true, &later[k]);
	for (size_t k = 0; k < n_idx; k++)
		if (later[k])
			tabs[k] = mapping_table(m, pid, &maps[idx[k]], false, &later[k]);
	for (size_t k = 0; k < n_idx; k++) {
		add_mapping(&maps[idx[k]], tabs[k], val, tabs);
		loader |= maps_loader(maps[idx[k]].path);
	}
	/* No executable mapping at all: the process is exiting (its mm is gone, its
	 * maps read empty). Keep the view it had: its last samples (and the first
	 * ones still held in user space) are walked with it. */
	if (!val->n) {
		err = -ESRCH;
		goto cleanup;
	}
	err = view_publish(m, val, pid, tabs);
	if (!err) {
		tabs = NULL;
		err = !loader || n_idx > 2; /* executable + loader: ld.so still at work */
		/* Settled: its samples need no stack copies any more (BPF sends them
		 * while the process is pending, see unwind_mgr__set_pending). */
		if (err == 1 && m->pending_fd >= 0)
			bpf_map_delete_elem(m->pending_fd, &pid);
	}
cleanup:
	if (tabs && val)
		for (uint32_t i = 0; i < val->n; i++)
			table_put(m, tabs[i]);
	free(tabs);
	free(val);
	proc_maps_free(maps, n_maps);
	return err;
}

static double mono_ms(void)
{
	return (double)base_clock_ns(CLOCK_MONOTONIC) / 1e6;
}

static void enqueue(struct unwind_mgr *m, uint32_t pid, uint64_t pstart, double due, int left)
{
	for (size_t i = 0; i < m->n_queue; i++) {
		if (m->queue[i].pid == pid) {
			m->queue[i] = (struct pending){pid, pstart, due, left};
			return;
		}
	}
	if (grow((void **)&m->queue, &m->cap_queue, m->n_queue, sizeof(*m->queue)))
		return; /* the process keeps frame-pointer stacks */
	m->queue[m->n_queue++] = (struct pending){pid, pstart, due, left};
}

void unwind_mgr__note(struct unwind_mgr *m, uint32_t pid, uint64_t pstart)
{
	enqueue(m, pid, pstart, 0, MGR_RECHECKS);
}

void unwind_mgr__remap(struct unwind_mgr *m, uint32_t pid, uint64_t pstart)
{
	const struct proc_view *v = view_find(m, pid);

	if (v && v->pstart == pstart)
		enqueue(m, pid, pstart, 0, 0);
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

int unwind_mgr__work(struct unwind_mgr *m, int budget_ms)
{
	double t0 = mono_ms();
	int done = 0;

	/* FIFO among due entries: a busy machine cannot starve a process. */
	for (size_t i = 0; i < m->n_queue && (done == 0 || mono_ms() - t0 < budget_ms);) {
		struct pending p = m->queue[i];

		if (p.due_ms > t0) {
			i++;
			continue;
		}
		memmove(m->queue + i, m->queue + i + 1, (m->n_queue - i - 1) * sizeof(*m->queue));
		m->n_queue--;
		if (proc_build(m, p.pid, p.pstart) == 0 && p.rechecks > 0)
			enqueue(m, p.pid, p.pstart,
				mono_ms() + mgr_recheck_ms[MGR_RECHECKS - p.rechecks],
				p.rechecks - 1);
		done++;
	}
	return done;
}

int unwind_mgr__next_due_ms(const struct unwind_mgr *m)
{
	double now = mono_ms(), first = -1;

	for (size_t i = 0; i < m->n_queue; i++)
		if (first < 0 || m->queue[i].due_ms < first)
			first = m->queue[i].due_ms;
	if (first < 0)
		return -1;
	return first <= now ? 0 : (int)(first - now) + 1;
}

void unwind_mgr__stats(const struct unwind_mgr *m, struct unwind_mgr_stats *o)
{
	memset(o, 0, sizeof(*o));
	o->tables = m->n_tables - m->n_idle;
	o->idle_tables = m->n_idle;
	o->reused = m->reused;
	o->procs = m->n_procs;
	o->chunks_total = m->chunks;
	for (size_t i = 0; i < m->chunks; i++)
		o->chunks_used += m->used[i];
	o->user_bytes = sizeof(*m) + m->cap_tables * sizeof(*m->tables) +
			m->cap_procs * sizeof(*m->procs) + m->cap_queue * sizeof(*m->queue);
	for (size_t i = 0; i < m->n_tables; i++) {
		const struct unwind_table *t = m->tables[i];

		o->rows += t->rows.n;
		o->user_bytes += sizeof(*t) + t->rows.cap * sizeof(*t->rows.rows) +
				 sizeof(*t->obj) + t->obj->n_segs * sizeof(*t->obj->segs) +
				 strlen(t->path) + 1;
	}
	for (size_t i = 0; i < m->n_procs; i++)
		o->user_bytes += HEARTH_UNWIND_MAX_MAPPINGS * sizeof(void *);
	o->row_bytes = o->rows * sizeof(struct hearth_unwind_row);
	o->builds = m->builds;
	o->rebuilds = m->rebuilds;
	o->no_room_objects = m->n_noroom;
	o->build_failed = m->build_failed;
	o->no_room = m->no_room;
	o->build_ms = m->build_ms;
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

void unwind_mgr__set_pending(struct unwind_mgr *m, int pending_fd)
{
	m->pending_fd = pending_fd;
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
		table_evict(m, m->tables[m->n_tables - 1]);
	free(m->tables);
	free(m->procs);
	free(m->queue);
	free(m);
}
