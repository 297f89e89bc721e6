/*
 * proc: what hearth knows of each sampled process — its memory mappings from
 * /proc/PID/maps, its names and start time — kept after the process exits so
 * late-drained samples still symbolize, and told apart from a later process
 * that reuses the pid (by start time) or from its own pre-exec image.
 *
 * Address spaces: `addr` is a process virtual address; a mapping turns it into
 * a file offset with proc_mapping__file_off().
 *
 * Bounded: at most PROC_MAX_PROCESSES entries; exited processes are evicted first.
 */
#ifndef HEARTH_PROC_H
#define HEARTH_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/sysmacros.h>

#define PROC_MAX_PROCESSES 65536

struct proc_mapping {
	uint64_t start, end; /* [start, end) process addresses */
	uint64_t pgoff;	     /* file offset of start */
	uint32_t dev_major, dev_minor;
	uint64_t inode;	     /* 0 for anonymous mappings */
	bool exec;	     /* 'x' permission */
	bool deleted;	     /* maps said "PATH (deleted)": the file was unlinked or replaced */
	char *path;	     /* owned; "" for anonymous, "[vdso]", "[stack]"... as in maps,
			      * without the " (deleted)" suffix (see `deleted`) */
};

/* File offset of a process address inside the mapping: off = addr - start + pgoff. */
static inline uint64_t proc_mapping__file_off(const struct proc_mapping *m, uint64_t addr)
{
	return addr - m->start + m->pgoff;
}

/* The mapping's device as a dev_t (what stat(2) calls st_dev), for symbolizer__object(). */
static inline uint64_t proc_mapping__dev(const struct proc_mapping *m)
{
	return makedev(m->dev_major, m->dev_minor);
}

struct proc_process {
	uint32_t pid;
	uint64_t start_ticks; /* /proc/PID/stat field 22, clock ticks since boot */
	char *comm;	      /* owned; process (group leader) name */
	char *exe;	      /* owned; /proc/PID/exe target, "" when unreadable */
	char *cgroup;	      /* owned; cgroup v2 path from /proc/PID/cgroup ("0::..."), "" if none */
	bool exited;	      /* no longer running: mappings are what was last read */
	size_t n_maps;
	struct proc_mapping *maps; /* owned, sorted by start */
	size_t n_old_maps;
	struct proc_mapping *old_maps; /* owned: mappings before the last exec, tried second */
};

struct proc_table;

/* proc_root is "/proc" normally (tests point it elsewhere). NULL on ENOMEM. */
struct proc_table *proc_table__new(const char *proc_root);
void proc_table__free(struct proc_table *pt);

/*
 * Looks up the process with this pid and start time (ns since boot as BPF reads it
 * from task->start_boottime; 0 = "whatever runs as pid now"), reading /proc and adding
 * it on first sight. Not a refcount: there is nothing to put.
 * Returns NULL (errno set) when the process is unknown and cannot be read (ESRCH),
 * e.g. it exited before we saw it, or (pstart_ns != 0) pid now runs a different process
 * and we never saw the one asked for.
 * The pointer stays valid until proc_table__free, or until the entry is evicted: that
 * happens only inside a later proc_table__lookup that adds a process to a full table, and
 * takes an exited process whose samples are built first, then the least recently used
 * live one, and one whose samples are still to be built last (proc_table__built).
 */
struct proc_process *proc_table__lookup(struct proc_table *pt, uint32_t pid,
				       uint64_t pstart_ns);
/* The process called exec: keep the current mappings as old_maps and re-read. 0 or -errno. */
int proc_table__exec(struct proc_table *pt, uint32_t pid, uint64_t pstart_ns);
/* The process exited: mark it, keep its mappings. */
void proc_table__exit(struct proc_table *pt, uint32_t pid, uint64_t pstart_ns);
/* The samples of pid, exited, are built: its entry may be evicted before live ones. */
void proc_table__built(struct proc_table *pt, uint32_t pid, uint64_t pstart_ns);

/*
 * A live process's sample with these user addresses has just arrived: when one is
 * outside every mapping read so far (the maps were read while ld.so still mapped
 * libraries, or a library was loaded since), re-reads them now, while the process
 * can still be read, so that its samples symbolize after it exits. Known processes
 * only (nothing is read for an unknown pid); a few re-reads per process, rate-
 * limited. Cheap when every address is mapped: one binary search per address.
 */
void proc_table__note_addrs(struct proc_table *pt, uint32_t pid, uint64_t pstart_ns,
			    const uint64_t *addrs, size_t n);

/*
 * The table unwinder has just read this process's maps. Re-reads ours, the
 * process living, when they were read inside exec (ld.so mapped and no library
 * yet, or the executable alone), or when remap (a walk met a pc outside the
 * unwinder's view and its read found a library mapped since). The unwinder reads
 * 10, 100, 500 and 2000 ms after a read inside exec, and at its REMAPs; ours, made
 * at the EXEC event, would otherwise name none of libc's frames of a process gone
 * before its samples reach the collector (proc_table__note_addrs is then too
 * late): 80 ms processes had an unnamed frame in 3 of 4 samples.
 */
void proc_table__view_read(struct proc_table *pt, uint32_t pid, uint64_t pstart_ns, bool remap);

/*
 * Mapping that holds addr: searches maps, then old_maps; on a miss in a live process
 * re-reads /proc/PID/maps once (rate-limited) and searches again. NULL when none.
 */
const struct proc_mapping *proc__find_mapping(struct proc_table *pt, struct proc_process *p,
					      uint64_t addr);

/*
 * A path through which the mapped object can be opened: /proc/PID/map_files/S-E while
 * the process lives (works for deleted files and other mount namespaces), else
 * /proc/PID/root/PATH, else PATH. Writes into buf; returns buf or NULL if none fits.
 * A deleted file is only reachable through map_files (PATH may now name a newer file);
 * anonymous and pseudo mappings ("[vdso]") have no path: NULL.
 * Whether map_files can be followed (CAP_SYS_ADMIN) is probed once per table, then
 * trusted without a syscall; without it, /proc/PID/root/PATH costs one access(2).
 */
const char *proc__object_path(const struct proc_table *pt, const struct proc_process *p,
			      const struct proc_mapping *m, char *buf, size_t len);

/*
 * Parses one /proc/PID/maps line (a trailing newline is allowed). 0, or -EINVAL when
 * malformed (out is then zeroed and owns nothing), or -ENOMEM. out->path is malloc'd.
 */
int proc_parse_maps_line(const char *line, struct proc_mapping *out);
/* Frees what proc_parse_maps_line() allocated in m (not m itself). */
void proc_mapping__fini(struct proc_mapping *m);

/* Caps on one read of a maps file: vm.max_map_count defaults to 65530 lines, and a
 * line is at most a PATH_MAX path and ~80 bytes more; anything far beyond is not a
 * real maps file, and what lies past a cap is not read. */
#define PROC_MAPS_MAX_LINES (1u << 20)
#define PROC_MAPS_MAX_BYTES (64u << 20)

/*
 * The one reader of /proc/PID/maps text: the mappings of f, malloc'd (free with
 * proc_maps_free), sorted by start. Malformed lines are skipped (a kernel format
 * change must not make a whole process unsymbolizable); reading stops at
 * PROC_MAPS_MAX_LINES lines or PROC_MAPS_MAX_BYTES bytes. 0 (possibly with *n_out
 * 0: a kernel thread or an exiting process), -EIO or -ENOMEM.
 */
int proc_read_maps_file(FILE *f, struct proc_mapping **out, size_t *n_out);
/* proc_read_maps_file of /proc/PID/maps. Also -ENOENT (no such process), -EACCES. */
int proc_read_maps(uint32_t pid, struct proc_mapping **out, size_t *n_out);
/* Frees n mappings and the array (NULL is a no-op). */
void proc_maps_free(struct proc_mapping *maps, size_t n);
/* Whether a mapped path is the dynamic loader (glibc's or musl's): mapped with
 * the executable and no library yet, a process was read inside exec. */
bool proc_path_is_loader(const char *path);

/*
 * Parses /proc/PID/stat text: the comm between the first '(' and the last ')' (it may
 * hold spaces and parentheses) into comm (truncated to comm_len - 1), and field 22,
 * starttime, into *start_ticks. 0 or -EINVAL.
 */
int proc_parse_stat(const char *buf, char *comm, size_t comm_len, uint64_t *start_ticks);

/* Lower the process bound below PROC_MAX_PROCESSES (tests use it to exercise eviction). */
void proc_table__set_limit(struct proc_table *pt, size_t max_processes);

/* Number of processes in the table (for stats and tests). */
size_t proc_table__count(const struct proc_table *pt);

/*
 * Memory (docs/memory.md): the table charges what it holds to MEM_PROCS of the
 * ledger (base/membudget.h). proc_table__register_evictor makes the calling
 * thread the table's owner and registers its evictor (exited processes first,
 * least recently used first). The evictor frees entries only inside
 * proc_table__reclaim_point on the owner thread, where the caller holds no
 * proc_process pointer: it runs mem_budget__reclaim (want == 0) or asks the
 * evictors for want bytes (mem_budget__reclaim_bytes). Returns the bytes freed.
 */
int proc_table__register_evictor(struct proc_table *pt);
uint64_t proc_table__reclaim_point(struct proc_table *pt, uint64_t want);
uint64_t proc_table_evict(void *ctx, uint64_t want);
/* Heap bytes the table holds (what it charges). */
size_t proc_table__bytes(const struct proc_table *pt);

#endif /* HEARTH_PROC_H */
