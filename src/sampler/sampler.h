/*
 * sampler: loads hearth's BPF program, attaches it to one cpu-clock perf event
 * per online CPU, and moves what it records to user space — either by draining
 * the in-kernel counts with batched map operations or by consuming a ring buffer.
 *
 * The sampler knows nothing of symbols or profiles: it hands raw samples
 * {pid, tid, comm, user addrs, kernel addrs, count} and process events to callbacks.
 * struct sampler_sample and struct sampler_event are the one definition of both:
 * collect/ takes them as they are. This header includes only bpf/ ABI headers.
 */
#ifndef HEARTH_SAMPLER_H
#define HEARTH_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile_abi.h" /* bpf/: HEARTH_DROP_*, HEARTH_EV_* */
#include "v8_abi.h"	 /* bpf/: HEARTH_V8_* */
#include "java_abi.h"	 /* bpf/: HEARTH_JAVA_* */
#include "python_abi.h"	 /* bpf/: HEARTH_PY_* */
#include "offcpu_abi.h"	 /* bpf/: HEARTH_OFFCPU_*, HEARTH_RB_KIND_* */
#include "ruby_abi.h"	 /* bpf/: HEARTH_RB_* */
#include "unwind_abi.h"	 /* bpf/: HEARTH_UW_* */

#define SAMPLER_MIN_HZ	 1
#define SAMPLER_MAX_HZ	 10000
#define SAMPLER_MAX_PIDS 1024

enum sampler_transfer {
	SAMPLER_TRANSFER_MAP = 0, /* aggregate in BPF hash maps, drain in batches */
	SAMPLER_TRANSFER_RINGBUF, /* every sample through a BPF ring buffer */
};

enum sampler_unwind {
	SAMPLER_UNWIND_AUTO = 0, /* CFI tables where a process has them, else frame pointers */
	SAMPLER_UNWIND_DWARF,	 /* the same, but failing to load the unwinder is an error */
	SAMPLER_UNWIND_FP,	 /* the kernel's frame-pointer walker only (127 frames) */
};

struct sampler_opts {
	int hz;	   /* samples per second per CPU */
	bool idle; /* keep idle (pid 0) samples */
	enum sampler_transfer transfer;
	const uint32_t *pids; /* only these processes (all threads); NULL = all */
	size_t n_pids;
	const char *cgroup_path;    /* only tasks in this cgroup v2 directory (or below) */
	enum sampler_unwind unwind; /* user-stack unwinder (see docs/unwind.md) */
	/* Walk CPython processes' Python frames (docs/python.md). They travel with
	 * ring-buffer samples: with --transfer map and --unwind fp there are none. */
	bool python;
	/* Walk node processes' JavaScript frames (docs/node.md); ring-buffer samples. */
	bool node;
	/* Bound of the first samples' stack copies held until their process's
	 * tables are out (docs/memory.md); 0 = the default, 16 MiB; over it they
	 * are dropped and counted (SAMPLER_RAW_DROPPED). */
	size_t raw_held_bytes;
	/* Bound of each ring buffer's data area (the samples and the first
	 * samples' rings; their pages count twice in RSS): a power of two, at
	 * least 256 KiB; 0 = no bound beyond their own sizes (1 MiB each on 2
	 * CPUs at 99 Hz). --memory-limit sets it (docs/memory.md). */
	size_t ring_bytes_max;
	/* Walk HotSpot JVMs' Java frames (docs/java.md; table-unwound samples). */
	bool java;
	/* Record off-CPU blocks too (docs/offcpu.md): samples of kind
	 * HEARTH_RB_KIND_OFFCPU whose count is nanoseconds. Blocks shorter than
	 * off_cpu_min_ns (0: HEARTH_OFFCPU_DEFAULT_MIN_NS) are counted, not sent. */
	bool off_cpu;
	uint64_t off_cpu_min_ns;
	/* Walk CRuby processes' Ruby frames (docs/ruby.md), as python. */
	bool ruby;
};

/* A raw sample. Every pointer is borrowed for the callback's duration. */
struct sampler_sample {
	uint32_t pid, tid;
	uint64_t pstart;   /* process start, ns since boot (0 = unknown) */
	const char *comm;  /* thread name */
	const char *pcomm; /* process name when sampled (NULL or "": ask proc/) */
	size_t n_user, n_kernel;
	const uint64_t *user;	/* leaf first */
	const uint64_t *kernel; /* leaf first */
	size_t n_python;	/* Python frames: two words each (bpf/python_abi.h) */
	const uint64_t *python; /* leaf first: code object, instruction | HEARTH_PY_FRAME_ENTRY */
	uint64_t count; /* samples; nanoseconds for an off-CPU block */
	/* 0: on-CPU; HEARTH_RB_KIND_OFFCPU with its reason (bpf/offcpu_abi.h).
	 * User space may mark on-CPU samples HEARTH_RB_KIND_RUNNING (wall view). */
	uint16_t kind;
};

/* Event kinds of user space's own: the table unwinder has just read the
 * process's maps and published its view (unwind_mgr__set_on_read); _REMAP when
 * a walk asked for that read (a pc outside the view) and it found a change. */
#define SAMPLER_EV_MAPS_READ  0x100
#define SAMPLER_EV_MAPS_REMAP 0x101

struct sampler_event {
	/* HEARTH_EV_NEW / EXEC / EXIT, or SAMPLER_EV_MAPS_READ / _REMAP */
	uint32_t kind;
	uint32_t pid;
	uint64_t pstart;
	const char *comm; /* process name, borrowed */
};

struct sampler_callbacks {
	void (*sample)(void *ctx, const struct sampler_sample *s);
	void (*event)(void *ctx, const struct sampler_event *e);
	void *ctx;
};

struct sampler_drain_stats {
	uint64_t syscalls; /* bpf() calls made by the last drain */
	uint64_t keys;	   /* count-map entries drained */
	uint64_t stacks;   /* distinct stacks read */
};

struct sampler;

/*
 * Checks privileges, loads and attaches. On failure returns -errno and writes one
 * sentence into err (missing capability, verifier log excerpt, bad cgroup path...).
 */
int sampler__open(const struct sampler_opts *opts, const struct sampler_callbacks *cb,
		  struct sampler **out, char *err, size_t errlen);
/* Waits up to timeout_ms (-1: no limit) for ring-buffer data and hands it to the
 * callbacks; returns earlier when the unwinder has queued work due. Count or -errno.
 * The ring buffers wake the caller when events arrive or samples fill half the
 * buffer, so a long timeout costs no latency: loops sleep to their next deadline. */
int sampler__poll(struct sampler *s, int timeout_ms);
/* Milliseconds until the unwinder's or the Python manager's queued work is due
 * (a maps re-read), -1 when none is queued. */
int sampler__next_due_ms(const struct sampler *s);
/* Records so far of the rings that wake the reader for each one: process events
 * and first samples (stack copies). A caller that sees them come in quick
 * succession may stay away a little to take the next ones in one wakeup. */
uint64_t sampler__prompt_records(const struct sampler *s);
/* How long a reader may stay away from the rings (not polling: a nap) without
 * the first-samples ring filling at this sampler's rate: 148 ms at 99 Hz on 2
 * CPUs, 14 ms at 999 Hz. */
int sampler__max_away_ms(const struct sampler *s);
/* Moves everything counted so far to the callbacks (map mode; ring buffers are consumed too). */
int sampler__drain(struct sampler *s);
/* Sum over CPUs of the BPF drop counters. */
void sampler__drops(const struct sampler *s, uint64_t drops[HEARTH_DROP_MAX]);
/* Whether a drop counter counts lost samples (collisions are resent, events are not samples). */
bool sampler_drop_is_loss(int drop);
/* Samples that passed the filters so far (sum over CPUs). */
uint64_t sampler__samples(const struct sampler *s);
/* Syscall counts of the most recent drain. */
void sampler__last_drain(const struct sampler *s, struct sampler_drain_stats *out);
/* run_time_ns / run_cnt of the sampling program (needs kernel.bpf_stats_enabled=1). */
int sampler__prog_stats(const struct sampler *s, uint64_t *run_time_ns, uint64_t *run_cnt);
/* Unwinder in use: SAMPLER_UNWIND_FP when off (auto falls back when it cannot load). */
enum sampler_unwind sampler__unwind(const struct sampler *s);
struct unwind_mgr_stats;
/* Table-unwinder counters (sum over CPUs, HEARTH_UW_*) and table memory; -ENOENT when off.
 * Thread-safe: ms is the manager's figures as of the last poll or drain (tables
 * on demand: tables_loaded, tables_reloaded, tables_evicted, requests,
 * request_events, waiting_objects, parked_bytes, bpf_bytes_used / _budget...). */
int sampler__unwind_stats(const struct sampler *s, uint64_t uw[HEARTH_UW_STAT_MAX],
			  struct unwind_mgr_stats *ms);
/* A new process's first samples, sent with a copy of their stack before its
 * tables were published (bpf/unwind_abi.h, struct hearth_raw_sample), and how
 * each was walked in user space. */
enum sampler_raw_stat {
	SAMPLER_RAW_COMPLETE = 0, /* walked with its view to the outermost frame */
	SAMPLER_RAW_PARTIAL,	  /* walked with its view, but the walk stopped early */
	SAMPLER_RAW_NO_VIEW,	  /* no view came in time: walked with frame pointers */
	SAMPLER_RAW_DROPPED,	  /* not held: over the memory bound (counted, not sent) */
	SAMPLER_RAW_STAT_MAX,
};
void sampler__raw_stats(const struct sampler *s, uint64_t out[SAMPLER_RAW_STAT_MAX]);
/* Hands on every first sample still held (walked with what there is): call
 * before the last drain, while the sample callback is still valid. */
void sampler__raw_finish(struct sampler *s);
/* Stops the CPU samples (disables the perf events): a recording's end, before
 * its last drain, so that the profile holds every sample the counters count
 * (the unwinder's "table-unwound", the drops) and none taken after its time.
 * Off-CPU recording goes on. */
void sampler__stop(struct sampler *s);
/* The unwind table manager (figures in bench/tests), or NULL when off. Borrowed. */
const struct unwind_mgr *sampler__unwind_mgr(const struct sampler *s);
struct python_mgr;
/* The CPython manager (it names the Python frames of samples), or NULL when the
 * Python walk is off. Borrowed; thread-safe (src/python/python.h). */
struct python_mgr *sampler__python(const struct sampler *s);
/* The Python walk's counters (HEARTH_PY_*, sum over CPUs); -ENOENT when off. */
struct v8_mgr;
/* The V8 manager (names JS frames), NULL when the walk is off. Borrowed. */
struct v8_mgr *sampler__v8(const struct sampler *s);
/* The V8 walk's per-CPU counters summed (HEARTH_V8_*); -ENOENT when off. */
int sampler__v8_stats(const struct sampler *s, uint64_t out[HEARTH_V8_STAT_MAX]);
int sampler__python_stats(const struct sampler *s, uint64_t out[HEARTH_PY_STAT_MAX]);
struct java_mgr;
/* The HotSpot manager, or NULL when the Java walk is off (src/java/java.h). */
struct java_mgr *sampler__java(const struct sampler *s);
/* The Java walk's counters (HEARTH_JAVA_*, sum over CPUs); -ENOENT when off. */
int sampler__java_stats(const struct sampler *s, uint64_t out[HEARTH_JAVA_STAT_MAX]);
/* The off-CPU recorder's counters (HEARTH_OFFCPU_*, sum over CPUs); -ENOENT when off. */
int sampler__offcpu_stats(const struct sampler *s, uint64_t out[HEARTH_OFFCPU_STAT_MAX]);
struct ruby_mgr;
/* The CRuby manager, or NULL when the Ruby walk is off. Borrowed; thread-safe. */
struct ruby_mgr *sampler__ruby(const struct sampler *s);
/* The Ruby walk's counters (HEARTH_RB_*, sum over CPUs); -ENOENT when off. */
int sampler__ruby_stats(const struct sampler *s, uint64_t out[HEARTH_RB_STAT_MAX]);
/* Number of CPUs sampled. */
int sampler__n_cpus(const struct sampler *s);
/* Detaches and frees. NULL is a no-op. */
void sampler__close(struct sampler *s);

/*
 * One samples ring-buffer record (struct hearth_rb_sample, then ulen user, klen
 * kernel frames and plen two-word Python frames) as a sample of count 1 whose
 * frames point into data; comm and pcomm receive the NUL-terminated names.
 * -EINVAL when size is shorter than the lengths say or a length is over its bound
 * (HEARTH_RB_MAX_USER, HEARTH_MAX_STACK, HEARTH_PY_MAX_FRAMES).
 */
int sampler_parse_rb_sample(const void *data, size_t size, struct sampler_sample *out,
			    char comm[HEARTH_COMM_LEN + 1], char pcomm[HEARTH_COMM_LEN + 1]);

/* One-line description of a drop counter ("stack-id collisions (user)"...). */
const char *sampler_drop_name(int drop);

#endif /* HEARTH_SAMPLER_H */
