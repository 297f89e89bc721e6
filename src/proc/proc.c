/*
 * proc: the process table — pid + start time -> what /proc said about that process.
 *
 * Constraints:
 *  - Samples are drained after the fact, so a process is kept when it exits (marked
 *    `exited`) and a pid reused by a new process is a different entry: entries are keyed
 *    by (pid, start_ticks), the kernel's own identity for a process across pid reuse.
 *  - Every read of /proc/PID goes through one directory fd opened on /proc/PID: if the
 *    pid dies and is reused while we read, the fd still names the old process (its files
 *    then fail with ESRCH) instead of silently mixing two processes.
 *  - Bounded: at most PROC_MAX_PROCESSES entries; exited ones are evicted first, least
 *    recently used first (two LRU lists). /proc is read on first sight, on exec, and on
 *    a mapping miss at most once per PROC_REREAD_INTERVAL_NS per process; also when a
 *    live process's new stack leaves its mappings (a first read during ld.so's start,
 *    before libc was mapped), a few times per process (proc_table__note_addrs), and
 *    after the table unwinder's reads of maps ours may lack (proc_table__view_read).
 */
#include "proc/proc.h"
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROC_REREAD_INTERVAL_NS (100ULL * 1000 * 1000)
/* Re-reads of a live process's maps asked by its samples as they arrive (see
 * proc_table__note_addrs): at most this many per process, this often. */
#define PROC_NOTE_REREADS 4
#define PROC_NOTE_INTERVAL_NS (10ULL * 1000 * 1000)
#define PROC_INITIAL_BUCKETS 1024
#define PROC_MAX_BUCKETS 65536
#define PROC_STAT_MAX 4096
#define PROC_COMM_MAX 64

/* Whether /proc/PID/map_files links can be followed (CAP_SYS_ADMIN), learnt once. */
enum proc_probe {
	PROC_PROBE_UNKNOWN,
	PROC_PROBE_WORKS,
	PROC_PROBE_DENIED,
};

struct proc_entry {
	struct proc_process p;	      /* first: &e->p is what callers hold */
	struct proc_entry *hnext;     /* hash chain; buckets are keyed by pid alone */
	struct proc_entry *lprev;     /* LRU list: pt->live or pt->exited, oldest first */
	struct proc_entry *lnext;
	uint64_t maps_read_ns;	      /* CLOCK_MONOTONIC of the last maps read attempt */
	uint32_t note_rereads;	      /* re-reads asked by proc_table__note_addrs */
	uint64_t used;		      /* pt->clock at the last use, to pick among same-pid */
	size_t bytes;		      /* heap held, as charged to MEM_PROCS */
	bool awaiting;		      /* exited, its samples not yet built: evicted last */
};

struct proc_list {
	struct proc_entry *head, *tail;
};

struct proc_table {
	char *root;		  /* owned: "/proc" or a test tree */
	uint64_t ns_per_tick;	  /* 1e9 / sysconf(_SC_CLK_TCK) */
	size_t max_processes;
	/* Chained by pid, not a base_hmap: a reused pid has several entries (the old
	 * process and the new one), and table_find looks at all of them. */
	struct proc_entry **buckets; /* owned array; entries owned through the lists */
	size_t n_buckets;	  /* power of two */
	size_t count;
	uint64_t clock;
	struct proc_list live, exited;
	/* owned; a cache written through the const table proc__object_path is given */
	enum proc_probe *map_files;
	size_t bytes; /* sum of the entries' bytes (charged to MEM_PROCS) */
	/* The evictor frees entries only on the owner thread inside
	 * proc_table__reclaim_point (no proc_process pointer is held then). */
	bool evict_ok;
	pthread_t owner;
	uint64_t evictions;
};

/* Callers hold &e->p; p is the first member, so this is the entry. */
static struct proc_entry *entry_of(struct proc_process *p)
{
	return (struct proc_entry *)p;
}

static uint64_t now_ns(void)
{
	return (uint64_t)base_clock_ns(CLOCK_MONOTONIC);
}

/* ticks = ns / (1e9 / CLK_TCK), as the kernel's nsec_to_clock_t() does for stat field 22. */
static uint64_t proc_ns_to_ticks(const struct proc_table *pt, uint64_t ns)
{
	return ns / pt->ns_per_tick;
}

/* ---- mapping arrays ---- */

void proc_maps_free(struct proc_mapping *maps, size_t n)
{
	if (!maps)
		return;
	for (size_t i = 0; i < n; i++)
		proc_mapping__fini(&maps[i]);
	free(maps);
}

static int mapping_cmp(const void *a, const void *b)
{
	const struct proc_mapping *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The mapping holding addr in a start-sorted array, or NULL. */
static const struct proc_mapping *maps_find(const struct proc_mapping *maps, size_t n,
					    uint64_t addr)
{
	size_t lo = 0, hi = n;

	/* Invariant: every maps[< lo].start <= addr, every maps[>= hi].start > addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= maps[lo - 1].end)
		return NULL;
	return &maps[lo - 1];
}

/* Appends m to *maps (at most PROC_MAPS_MAX_LINES). 0 or -ENOMEM. */
static int maps_push(struct proc_mapping **maps, size_t *n, size_t *cap,
		     const struct proc_mapping *m)
{
	if (base_grow_max((void **)maps, cap, *n + 1, sizeof(**maps), PROC_MAPS_MAX_LINES))
		return -ENOMEM;
	(*maps)[(*n)++] = *m;
	return 0;
}

/* ---- reading /proc/PID ---- */

static FILE *fopen_at(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

int proc_read_maps_file(FILE *f, struct proc_mapping **out, size_t *n_out)
{
	struct proc_mapping *maps = NULL, m;
	size_t n = 0, cap = 0, line_cap = 0, bytes = 0;
	char *line = NULL;
	ssize_t len;
	int err = 0;

	*out = NULL;
	*n_out = 0;
	while (n < PROC_MAPS_MAX_LINES && bytes < PROC_MAPS_MAX_BYTES &&
	       (len = getline(&line, &line_cap, f)) > 0) {
		bytes += (size_t)len;
		err = proc_parse_maps_line(line, &m);
		if (err == -EINVAL) {
			err = 0;
			continue;
		}
		if (!err && (err = maps_push(&maps, &n, &cap, &m)))
			proc_mapping__fini(&m);
		if (err)
			break;
	}
	if (!err && ferror(f))
		err = -EIO;
	free(line);
	if (err) {
		proc_maps_free(maps, n);
		return err;
	}
	if (n) /* kernel threads have no mappings: qsort(NULL, 0) is undefined */
		qsort(maps, n, sizeof(*maps), mapping_cmp);
	*out = maps;
	*n_out = n;
	return 0;
}

/* The mappings in dirfd/maps (dirfd: an open /proc/PID). 0 or -errno. */
static int read_maps(int dirfd, struct proc_mapping **out, size_t *n_out)
{
	FILE *f = fopen_at(dirfd, "maps");
	int err;

	if (!f)
		return -errno;
	err = proc_read_maps_file(f, out, n_out);
	fclose(f);
	return err;
}

int proc_read_maps(uint32_t pid, struct proc_mapping **out, size_t *n_out)
{
	char path[64];
	FILE *f;
	int err;

	*out = NULL;
	*n_out = 0;
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	err = proc_read_maps_file(f, out, n_out);
	fclose(f);
	return err;
}

static int read_stat(int dirfd, char *comm, size_t comm_len, uint64_t *start_ticks)
{
	char buf[PROC_STAT_MAX];
	int fd = openat(dirfd, "stat", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	return proc_parse_stat(buf, comm, comm_len, start_ticks);
}

/* The exe link target, "" when unreadable; NULL on ENOMEM. */
static char *read_exe(int dirfd)
{
	char buf[PATH_MAX];
	ssize_t n = readlinkat(dirfd, "exe", buf, sizeof(buf) - 1);

	buf[n > 0 ? n : 0] = '\0';
	return strdup(buf);
}

/* The cgroup v2 path (line "0::PATH"), "" when none; NULL on ENOMEM. */
static char *read_cgroup(int dirfd)
{
	FILE *f = fopen_at(dirfd, "cgroup");
	char *line = NULL, *res;
	size_t cap = 0;
	bool found = false;

	while (f && !found && getline(&line, &cap, f) > 0)
		found = strncmp(line, "0::", 3) == 0;
	if (found)
		line[strcspn(line, "\n")] = '\0';
	res = strdup(found ? line + 3 : "");
	free(line);
	if (f)
		fclose(f);
	return res;
}

/* Opens root/PID as a directory fd. fd or -errno. */
static int open_pid_dir(const struct proc_table *pt, uint32_t pid)
{
	char path[PATH_MAX];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%" PRIu32, pt->root, pid) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static size_t maps_bytes(const struct proc_mapping *maps, size_t n)
{
	size_t b = n * sizeof(*maps);

	for (size_t i = 0; i < n; i++)
		b += maps[i].path ? strlen(maps[i].path) + 1 : 0;
	return b;
}

static size_t str_bytes(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

/* Re-measures e after it changed and charges the difference (MEM_PROCS). */
static void entry_account(struct proc_table *pt, struct proc_entry *e)
{
	size_t b = sizeof(*e) + maps_bytes(e->p.maps, e->p.n_maps) +
		   maps_bytes(e->p.old_maps, e->p.n_old_maps) + str_bytes(e->p.comm) +
		   str_bytes(e->p.exe) + str_bytes(e->p.cgroup);

	mem_budget__charge(MEM_PROCS, (int64_t)b - (int64_t)e->bytes);
	pt->bytes = pt->bytes + b - e->bytes;
	e->bytes = b;
}

/* e leaves the table: its bytes are no longer charged. */
static void entry_unaccount(struct proc_table *pt, struct proc_entry *e)
{
	mem_budget__charge(MEM_PROCS, -(int64_t)e->bytes);
	pt->bytes -= e->bytes;
	e->bytes = 0;
}

static void process_fini(struct proc_process *p)
{
	proc_maps_free(p->maps, p->n_maps);
	proc_maps_free(p->old_maps, p->n_old_maps);
	free(p->comm);
	free(p->exe);
	free(p->cgroup);
}

static void entry_free(struct proc_entry *e)
{
	if (!e)
		return;
	process_fini(&e->p);
	free(e);
}

/* Names and mappings of the process behind dirfd into a zeroed e->p. 0 or -errno. */
static int entry_fill(struct proc_table *pt, struct proc_entry *e, int dirfd)
{
	char comm[PROC_COMM_MAX];
	int err = read_stat(dirfd, comm, sizeof(comm), &e->p.start_ticks);

	if (err)
		return err == -EINVAL ? -ESRCH : err;
	/* A kernel thread or a zombie has no maps; an empty table is re-read on a miss. */
	err = read_maps(dirfd, &e->p.maps, &e->p.n_maps);
	if (err == -ENOMEM)
		return err;
	e->maps_read_ns = now_ns();
	e->used = ++pt->clock;
	e->p.comm = strdup(comm);
	e->p.exe = read_exe(dirfd);
	e->p.cgroup = read_cgroup(dirfd);
	if (!e->p.comm || !e->p.exe || !e->p.cgroup)
		return -ENOMEM;
	return 0;
}

/* A new entry for whatever runs as pid now. NULL with *err = -errno. */
static struct proc_entry *entry_read(struct proc_table *pt, uint32_t pid, int *err)
{
	struct proc_entry *e = NULL;
	int dirfd = open_pid_dir(pt, pid);

	if (dirfd < 0) {
		*err = dirfd == -ENOENT ? -ESRCH : dirfd;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		*err = -ENOMEM;
		goto cleanup;
	}
	e->p.pid = pid;
	*err = entry_fill(pt, e, dirfd);
	if (*err) {
		entry_free(e);
		e = NULL;
	}
cleanup:
	close(dirfd);
	return e;
}

/* ---- the table: hash chains by pid, LRU lists by state ---- */

static size_t bucket_of(size_t n_buckets, uint32_t pid)
{
	return (size_t)(pid * 2654435761u) & (n_buckets - 1);
}

static void list_remove(struct proc_list *l, struct proc_entry *e)
{
	*(e->lprev ? &e->lprev->lnext : &l->head) = e->lnext;
	*(e->lnext ? &e->lnext->lprev : &l->tail) = e->lprev;
	e->lprev = e->lnext = NULL;
}

static void list_append(struct proc_list *l, struct proc_entry *e)
{
	e->lprev = l->tail;
	e->lnext = NULL;
	*(l->tail ? &l->tail->lnext : &l->head) = e;
	l->tail = e;
}

static struct proc_list *list_of(struct proc_table *pt, const struct proc_entry *e)
{
	return e->p.exited ? &pt->exited : &pt->live;
}

static void entry_touch(struct proc_table *pt, struct proc_entry *e)
{
	e->used = ++pt->clock;
	list_remove(list_of(pt, e), e);
	list_append(list_of(pt, e), e);
}

static void entry_mark_exited(struct proc_table *pt, struct proc_entry *e)
{
	if (e->p.exited)
		return;
	list_remove(&pt->live, e);
	e->p.exited = true;
	list_append(&pt->exited, e);
}

/*
 * The entry for (pid, ticks); with any_start, the live entry for pid, else its most
 * recently used exited one. NULL when none.
 */
static struct proc_entry *table_find(struct proc_table *pt, uint32_t pid, uint64_t ticks,
				     bool any_start)
{
	struct proc_entry *e, *best = NULL;

	for (e = pt->buckets[bucket_of(pt->n_buckets, pid)]; e; e = e->hnext) {
		if (e->p.pid != pid)
			continue;
		if (!any_start) {
			if (e->p.start_ticks == ticks)
				return e;
		} else if (!e->p.exited) {
			return e;
		} else if (!best || e->used > best->used) {
			best = e;
		}
	}
	return best;
}

static void table_remove(struct proc_table *pt, struct proc_entry *e)
{
	struct proc_entry **pp = &pt->buckets[bucket_of(pt->n_buckets, e->p.pid)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	list_remove(list_of(pt, e), e);
	pt->count--;
}

/* Doubles the bucket array (best effort: on ENOMEM chains just get longer). */
static void table_grow(struct proc_table *pt)
{
	size_t n = pt->n_buckets * 2;
	struct proc_entry **b, *e, *next;

	if (n > PROC_MAX_BUCKETS || !(b = calloc(n, sizeof(*b))))
		return;
	for (size_t i = 0; i < pt->n_buckets; i++) {
		for (e = pt->buckets[i]; e; e = next) {
			next = e->hnext;
			e->hnext = b[bucket_of(n, e->p.pid)];
			b[bucket_of(n, e->p.pid)] = e;
		}
	}
	free(pt->buckets);
	pt->buckets = b;
	pt->n_buckets = n;
}

/*
 * The entry to free first when the table must shrink: an exited process whose
 * samples are built, oldest first; then (pass MEM_PASS_LIVE on) a live one,
 * least recently used (read again from /proc at its next sample); last (pass
 * MEM_PASS_ALL) an exited one whose samples are still to be built (what it
 * holds cannot be read again: its last samples would lose their names). NULL
 * when the pass allows none.
 */
static struct proc_entry *evict_victim(struct proc_table *pt, enum mem_pass pass)
{
	for (struct proc_entry *e = pt->exited.head; e; e = e->lnext)
		if (!e->awaiting)
			return e;
	if (pass >= MEM_PASS_LIVE && pt->live.head)
		return pt->live.head;
	return pass >= MEM_PASS_ALL ? pt->exited.head : NULL;
}

/*
 * Adds a freshly read entry. Any other live entry with its pid is a process that has
 * exited (a pid runs one process at a time). Makes room by evicting when full.
 */
static void table_insert(struct proc_table *pt, struct proc_entry *fresh)
{
	struct proc_entry *e;
	size_t b;

	for (e = pt->buckets[bucket_of(pt->n_buckets, fresh->p.pid)]; e; e = e->hnext)
		if (e->p.pid == fresh->p.pid)
			entry_mark_exited(pt, e);
	while (pt->count >= pt->max_processes && pt->count > 0) {
		e = evict_victim(pt, MEM_PASS_ALL);
		table_remove(pt, e);
		entry_unaccount(pt, e);
		entry_free(e);
	}
	if (pt->count >= pt->n_buckets)
		table_grow(pt);
	b = bucket_of(pt->n_buckets, fresh->p.pid);
	fresh->hnext = pt->buckets[b];
	pt->buckets[b] = fresh;
	list_append(list_of(pt, fresh), fresh);
	pt->count++;
	entry_account(pt, fresh);
}

/*
 * The MEM_PROCS evictor: frees entries in evict_victim's order, as far as the
 * reclaim's pass allows, until want bytes are freed. Only on the owner thread
 * inside proc_table__reclaim_point, where no caller holds a proc_process.
 */
uint64_t proc_table_evict(void *ctx, uint64_t want)
{
	struct proc_table *pt = ctx;
	enum mem_pass pass = mem_budget__reclaim_pass();
	uint64_t freed = 0, n = 0;
	struct proc_entry *e;

	if (!pt->evict_ok || !pthread_equal(pt->owner, pthread_self()))
		return 0;
	while (freed < want && (e = evict_victim(pt, pass))) {
		size_t b = e->bytes;

		table_remove(pt, e);
		entry_unaccount(pt, e);
		entry_free(e);
		freed += b;
		n++;
	}
	pt->evictions += n;
	if (n)
		mem_budget__evicted(MEM_PROCS, n, freed);
	return freed;
}

int proc_table__register_evictor(struct proc_table *pt)
{
	pt->owner = pthread_self();
	return mem_budget__register_by_pass(MEM_PROCS, 1, proc_table_evict, pt);
}

uint64_t proc_table__reclaim_point(struct proc_table *pt, uint64_t want)
{
	uint64_t freed;

	pt->owner = pthread_self();
	pt->evict_ok = true;
	freed = want ? mem_budget__reclaim_bytes(want) : mem_budget__reclaim();
	pt->evict_ok = false;
	return freed;
}

size_t proc_table__bytes(const struct proc_table *pt)
{
	return pt->bytes;
}

struct proc_table *proc_table__new(const char *proc_root)
{
	struct proc_table *pt = calloc(1, sizeof(*pt));
	long hz = sysconf(_SC_CLK_TCK);

	if (!pt)
		return NULL;
	pt->root = strdup(proc_root ? proc_root : "/proc");
	pt->n_buckets = PROC_INITIAL_BUCKETS;
	pt->buckets = calloc(pt->n_buckets, sizeof(*pt->buckets));
	pt->ns_per_tick = 1000000000ULL / (uint64_t)(hz > 0 ? hz : 100);
	pt->max_processes = PROC_MAX_PROCESSES;
	pt->map_files = calloc(1, sizeof(*pt->map_files));
	if (!pt->root || !pt->buckets || !pt->map_files) {
		proc_table__free(pt);
		return NULL;
	}
	return pt;
}

void proc_table__free(struct proc_table *pt)
{
	struct proc_entry *e, *next;

	if (!pt)
		return;
	mem_budget__unregister(proc_table_evict, pt);
	mem_budget__charge(MEM_PROCS, -(int64_t)pt->bytes);
	for (e = pt->live.head; e; e = next) {
		next = e->lnext;
		entry_free(e);
	}
	for (e = pt->exited.head; e; e = next) {
		next = e->lnext;
		entry_free(e);
	}
	free(pt->buckets);
	free(pt->root);
	free(pt->map_files);
	free(pt);
}

void proc_table__set_limit(struct proc_table *pt, size_t max_processes)
{
	if (max_processes > 0 && max_processes < PROC_MAX_PROCESSES)
		pt->max_processes = max_processes;
}

size_t proc_table__count(const struct proc_table *pt)
{
	return pt->count;
}

/*
 * Reads what runs as pid now and adds it, unless pstart_ns names another process.
 * Returns the entry, or NULL with errno set. `known` is our best stale entry, if any,
 * returned when the process cannot be read at all.
 */
static struct proc_entry *table_load(struct proc_table *pt, uint32_t pid, uint64_t pstart_ns,
				     struct proc_entry *known)
{
	int err;
	struct proc_entry *fresh = entry_read(pt, pid, &err), *same;

	if (!fresh) {
		errno = err == -ENOMEM ? ENOMEM : ESRCH;
		return known;
	}
	if (pstart_ns && fresh->p.start_ticks != proc_ns_to_ticks(pt, pstart_ns)) {
		entry_free(fresh); /* the pid was reused: the process asked for is gone */
		errno = ESRCH;
		return NULL;
	}
	same = table_find(pt, pid, fresh->p.start_ticks, false);
	if (same) { /* e.g. marked exited but still a zombie in /proc */
		entry_free(fresh);
		return same;
	}
	table_insert(pt, fresh);
	return fresh;
}

struct proc_process *proc_table__lookup(struct proc_table *pt, uint32_t pid, uint64_t pstart_ns)
{
	bool any = pstart_ns == 0;
	struct proc_entry *e = table_find(pt, pid, proc_ns_to_ticks(pt, pstart_ns), any);

	/* "Whatever runs as pid now" is not an exited entry: look at /proc first. */
	if (!e || (any && e->p.exited))
		e = table_load(pt, pid, pstart_ns, e);
	if (!e)
		return NULL;
	entry_touch(pt, e);
	return &e->p;
}

static void swap_ptr(char **a, char **b)
{
	char *t = *a;

	*a = *b;
	*b = t;
}

/*
 * Moves fresh's mappings into p; with exec, p's current mappings become old_maps and
 * its names are replaced too. fresh is left holding whatever p gave up, to be freed.
 */
static void process_take(struct proc_process *p, struct proc_process *fresh, bool exec)
{
	struct proc_mapping *maps = p->maps;
	size_t n = p->n_maps;

	p->maps = fresh->maps;
	p->n_maps = fresh->n_maps;
	fresh->maps = NULL;
	fresh->n_maps = 0;
	if (exec) {
		fresh->old_maps = p->old_maps;
		fresh->n_old_maps = p->n_old_maps;
		p->old_maps = maps;
		p->n_old_maps = n;
		swap_ptr(&p->comm, &fresh->comm);
		swap_ptr(&p->exe, &fresh->exe);
		swap_ptr(&p->cgroup, &fresh->cgroup);
	} else {
		fresh->maps = maps;
		fresh->n_maps = n;
	}
}

/*
 * Re-reads e's mappings (and names, with exec: see process_take). If /proc/PID is gone
 * or is another process now, e is marked exited. An empty read (a zombie) keeps what
 * we had. 0 or -errno.
 */
static int entry_reload(struct proc_table *pt, struct proc_entry *e, bool exec)
{
	struct proc_entry fresh = { 0 };
	int err, dirfd = open_pid_dir(pt, e->p.pid);

	e->maps_read_ns = now_ns();
	if (dirfd < 0) {
		err = dirfd == -ENOMEM ? -ENOMEM : -ESRCH;
		goto cleanup;
	}
	err = entry_fill(pt, &fresh, dirfd);
	close(dirfd);
	if (!err && fresh.p.start_ticks != e->p.start_ticks)
		err = -ESRCH;
	if (!err && fresh.p.n_maps > 0) {
		process_take(&e->p, &fresh.p, exec);
		entry_account(pt, e);
	}
cleanup:
	if (err && err != -ENOMEM)
		entry_mark_exited(pt, e);
	process_fini(&fresh.p);
	return err;
}

int proc_table__exec(struct proc_table *pt, uint32_t pid, uint64_t pstart_ns)
{
	bool any = pstart_ns == 0;
	struct proc_entry *e = table_find(pt, pid, proc_ns_to_ticks(pt, pstart_ns), any);

	if (!e || (any && e->p.exited)) /* first sight: /proc shows the new image */
		return proc_table__lookup(pt, pid, pstart_ns) ? 0 : -errno;
	if (e->p.exited)
		return -ESRCH;
	entry_touch(pt, e);
	return entry_reload(pt, e, true);
}

void proc_table__exit(struct proc_table *pt, uint32_t pid, uint64_t pstart_ns)
{
	struct proc_entry *e = table_find(pt, pid, proc_ns_to_ticks(pt, pstart_ns),
					  pstart_ns == 0);

	if (e) {
		entry_mark_exited(pt, e);
		e->awaiting = true;
	}
}

void proc_table__built(struct proc_table *pt, uint32_t pid, uint64_t pstart_ns)
{
	struct proc_entry *e = table_find(pt, pid, proc_ns_to_ticks(pt, pstart_ns),
					  pstart_ns == 0);

	if (e && e->p.exited)
		e->awaiting = false;
}

const struct proc_mapping *proc__find_mapping(struct proc_table *pt, struct proc_process *p,
					      uint64_t addr)
{
	struct proc_entry *e = entry_of(p);
	const struct proc_mapping *m = maps_find(p->maps, p->n_maps, addr);

	if (m)
		return m;
	/* New mapping since we looked (dlopen, JIT)? Ask /proc, but not on every miss. */
	if (!p->exited && now_ns() - e->maps_read_ns >= PROC_REREAD_INTERVAL_NS) {
		entry_reload(pt, e, false);
		m = maps_find(p->maps, p->n_maps, addr);
		if (m)
			return m;
	}
	return maps_find(p->old_maps, p->n_old_maps, addr);
}

bool proc_path_is_loader(const char *path)
{
	return strstr(path, "/ld-linux") || strstr(path, "/ld-musl");
}

/* Whether p's maps may have been read inside exec: the dynamic loader and at
 * most one other executable file mapped (the executable), no library yet; or
 * the executable alone (a read between exec's switch to the new image and its
 * mapping of ld.so: seen in 1 of ~200 80-ms processes, whose ld.so and libc
 * frames then went unnamed). A static executable also reads as the latter, and
 * costs one more read per read of the unwinder, which reads it once. */
static bool maps_unsettled(const struct proc_process *p)
{
	size_t files = 0;
	bool loader = false;

	for (size_t i = 0; i < p->n_maps; i++) {
		const char *path = p->maps[i].path;

		if (!p->maps[i].exec || path[0] != '/')
			continue;
		files++;
		loader |= proc_path_is_loader(path);
	}
	return files <= 1 || (loader && files <= 2);
}

void proc_table__view_read(struct proc_table *pt, uint32_t pid, uint64_t pstart_ns, bool remap)
{
	struct proc_entry *e = table_find(pt, pid, proc_ns_to_ticks(pt, pstart_ns), pstart_ns == 0);

	if (e && !e->p.exited && (remap || maps_unsettled(&e->p)))
		entry_reload(pt, e, false);
}

void proc_table__note_addrs(struct proc_table *pt, uint32_t pid, uint64_t pstart_ns,
			    const uint64_t *addrs, size_t n)
{
	struct proc_entry *e = table_find(pt, pid, proc_ns_to_ticks(pt, pstart_ns), pstart_ns == 0);

	if (!e || e->p.exited || e->note_rereads >= PROC_NOTE_REREADS ||
	    now_ns() - e->maps_read_ns < PROC_NOTE_INTERVAL_NS)
		return;
	for (size_t i = 0; i < n; i++) {
		if (!maps_find(e->p.maps, e->p.n_maps, addrs[i])) {
			e->note_rereads++;
			entry_reload(pt, e, false);
			return;
		}
	}
}

/* Whether snprintf's result n fit in a buffer of len bytes. */
static bool format_fits(size_t len, int n)
{
	return n >= 0 && (size_t)n < len;
}

static bool readable(const char *path)
{
	return faccessat(AT_FDCWD, path, R_OK, AT_EACCESS) == 0;
}

/*
 * Whether map_files paths work. Following one needs CAP_SYS_ADMIN, which does not change
 * per file, so it is probed until known and then trusted: an access(2) per frame would
 * cost ~3 us. A link that vanished since (the process just died) fails at open time;
 * the symbolizer then falls back to the mapped name when it is still the same inode.
 */
static bool map_files_usable(const struct proc_table *pt, const char *path)
{
	if (*pt->map_files == PROC_PROBE_UNKNOWN) {
		if (readable(path))
			*pt->map_files = PROC_PROBE_WORKS;
		else if (errno == EPERM || errno == EACCES)
			*pt->map_files = PROC_PROBE_DENIED;
		else
			return false; /* this link is gone; ask again next time */
	}
	return *pt->map_files == PROC_PROBE_WORKS;
}

const char *proc__object_path(const struct proc_table *pt, const struct proc_process *p,
			      const struct proc_mapping *m, char *buf, size_t len)
{
	bool absolute = m->path && m->path[0] == '/';

	if (!buf || len == 0 || (m->inode == 0 && !absolute))
		return NULL; /* anonymous, [vdso], [heap]... */
	if (!p->exited && *pt->map_files != PROC_PROBE_DENIED &&
	    format_fits(len, snprintf(buf, len, "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64,
				      pt->root, p->pid, m->start, m->end)) &&
	    map_files_usable(pt, buf))
		return buf;
	/* By name only if the name still means the mapped file. */
	if (m->deleted || !absolute)
		return NULL;
	if (!p->exited &&
	    format_fits(len,
			snprintf(buf, len, "%s/%" PRIu32 "/root%s", pt->root, p->pid, m->path)) &&
	    readable(buf))
		return buf;
	if (format_fits(len, snprintf(buf, len, "%s", m->path)))
		return buf;
	return NULL;
}
