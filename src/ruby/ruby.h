/*
 * ruby: names the Ruby frames of running CRuby processes (3.1; docs/ruby.md).
 *
 * The manager recognises CRuby processes (a mapped libruby-3.X.so exporting the
 * `ruby_current_ec` thread-local and `ruby_version`), works out where the BPF walk
 * finds each thread's execution context and the structure offsets of the version
 * (bpf/ruby_abi.h), and publishes one struct hearth_rb_proc per process into the
 * `rb_procs` map. It then turns the (iseq, pc) pairs the walk records into names,
 * files and lines by reading the iseqs from the process (process_vm_readv), cached
 * per (process, iseq), charged to MEM_RUBY and evicted least recently used first.
 *
 * Thread-safe: one mutex guards the manager.
 */
#ifndef HEARTH_RUBY_H
#define HEARTH_RUBY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruby_abi.h" /* bpf/ */

#define RUBY_NAME_MAX 256
#define RUBY_FILE_MAX 512

struct ruby_mgr;

/* procs_fd: the BPF `rb_procs` map, or -1 (nothing is published: tests). */
int ruby_mgr__new(int procs_fd, struct ruby_mgr **out);
void ruby_mgr__free(struct ruby_mgr *m);

/* Lifecycle, as python_mgr's (src/python/python.h). */
void ruby_mgr__note(struct ruby_mgr *m, uint32_t pid, uint64_t pstart);
void ruby_mgr__exec(struct ruby_mgr *m, uint32_t pid, uint64_t pstart);
void ruby_mgr__exit(struct ruby_mgr *m, uint32_t pid);
void ruby_mgr__forget(struct ruby_mgr *m, uint32_t pid, uint64_t pstart);
/* Probes queued processes for at most budget_ms. Number probed or -errno. */
int ruby_mgr__work(struct ruby_mgr *m, int budget_ms);
/* Milliseconds until work has something due, -1 when nothing is queued. */
int ruby_mgr__next_due_ms(const struct ruby_mgr *m);

struct ruby_frame {
	char name[RUBY_NAME_MAX]; /* "Worker#hot_a" (a method of a named class), else the
				   * iseq's label: "block in outer", "<main>" */
	char file[RUBY_FILE_MAX]; /* its path */
	int64_t line;		  /* the pc's line, else the first line, else 0 */
};

/* Names one recorded frame (word0: an iseq, or a method entry; pos: the pc, with
 * HEARTH_RB_POS_CME for a method entry; the record's words without kind and
 * ENTRY). 0, -ENOENT (process not described), -EIO (unreadable, not what it
 * was, or a pc outside the method's iseq: never a name it does not have). */
int ruby_mgr__resolve(struct ruby_mgr *m, uint32_t pid, uint64_t pstart, uint64_t word0,
		      uint64_t pos, struct ruby_frame *out);
/* Reads and caches a frame's object not cached yet, while the process lives. */
int ruby_mgr__warm(struct ruby_mgr *m, uint32_t pid, uint64_t pstart, uint64_t word0, uint64_t pos);
/* Whether pc lies in that process's interpreter loop (vm_exec_core): Ruby frames
 * replace it in stacks. */
bool ruby_mgr__is_vm(struct ruby_mgr *m, uint32_t pid, uint64_t pstart, uint64_t pc);

struct ruby_mgr_stats {
	uint64_t processes;   /* described now */
	uint64_t probed;      /* probes run */
	uint64_t unsupported; /* CRuby of a version with no offsets here */
	uint64_t not_ready;   /* probes retried */
	uint64_t iseq_cached; /* iseqs read and cached */
	uint64_t iseq_failed; /* iseq reads that failed (unknown frames) */
	uint64_t evicted;     /* cached iseqs evicted (memory budget) */
};
void ruby_mgr__stats(struct ruby_mgr *m, struct ruby_mgr_stats *out);

#endif /* HEARTH_RUBY_H */
