/*
 * sampler: BPF load/attach and kernel -> user transfer.
 *
 * Constraint: moving data, not sampling, is what costs (Pixie part 3). In map
 * mode a drain flips the program to the other map set, then empties the idle
 * set with BPF_MAP_LOOKUP_AND_DELETE_BATCH (one syscall per batch of keys) and
 * reads each distinct stack once before freeing it. In ring-buffer mode the
 * program never wakes us per sample: we poll on a timer and consume in bulk.
 *
 * With --unwind auto|dwarf the sampler also owns the table unwinder's manager
 * (src/unwind): process events feed it, and every poll and drain gives it a
 * bounded slice of time to build tables, off the sampling path.
 */
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "profile.skel.h"
#include "stackcache.h"
#include "java/java.h"
#include "python/python.h"
#include "v8/v8.h"
#include "ruby/ruby.h"
#include "unwind/unwind.h"

/* Entries drained per lookup-and-delete batch call. */
#define DRAIN_BATCH 4096
/* The samples ring buffer holds about a second of the largest records of every
 * CPU (the reader is woken at half full, and a profile build may keep it away
 * for a few hundred ms), within these bounds. Its pages count in the reader's
 * RSS twice (the data area is mapped twice), so it is not sized larger. */
#define SAMPLES_RB_MIN_BYTES (256u << 10)
#define SAMPLES_RB_MAX_BYTES (64u << 20)
/* In map mode the samples ring buffer only carries stack-id collisions. */
#define COLLISION_RB_BYTES (256u << 10)
/* Table building per poll/drain: bounded so sampling transfer is never starved. */
#define UNWIND_BUDGET_MS 20
/* A new process's first samples (struct hearth_raw_sample) wait this long at
 * most for a view that unwinds them to the outermost frame; then they are
 * walked with what there is. Its ring buffer holds ~60 of them (the reader is
 * woken at each one; its pages count twice in RSS: kept small). */
#define RAW_WAIT_MS  1500
#define RAW_RB_BYTES (1u << 20)
/* ... and at least this (sampler_opts.ring_bytes_max): ~15 records. */
#define RAW_RB_MIN_BYTES (256u << 10)
/* Bytes of raw samples held at once (their stack copies, as used). */
#define RAW_HELD_MAX_BYTES (16u << 20)

/* A raw sample held until its process's view is published. */
struct raw_held {
	double t_ms;		     /* when it arrived (CLOCK_MONOTONIC) */
	struct hearth_raw_sample *r; /* owned; stack holds r->stack_len bytes */
	size_t bytes;
	uint64_t gen; /* unwind_mgr__view_gen + 1 at the last try (0: none yet) */
};

struct sampler {
	struct profile_bpf *skel;
	struct sampler_callbacks cb;
	enum sampler_transfer transfer;
	int n_cpus;
	struct bpf_link **links; /* one per CPU (NULL where the CPU is offline) */
	int *pfds;		 /* perf event fds, -1 where offline */
	int n_possible;
	int cgroup_fd;
	struct ring_buffer *rb;
	struct hearth_count_key *keys; /* drain scratch, DRAIN_BATCH entries */
	__u64 *vals;
	struct stack_cache stacks; /* distinct stacks of one drain */
	struct sampler_drain_stats last;
	enum sampler_unwind unwind; /* FP when the table unwinder is off */
	struct unwind_mgr *uw;	    /* NULL when off */
	struct python_mgr *py;	    /* NULL when the Python walk is off */
	struct v8_mgr *v8;	    /* NULL when the V8 walk is off */
	struct java_mgr *java;	    /* NULL when the Java walk is off */
	struct ruby_mgr *rbm;	    /* NULL when the Ruby walk is off */
	struct raw_held *raw;	    /* first samples waiting for their view */
	size_t n_raw, cap_raw, raw_bytes;
	size_t raw_max; /* bound of raw_bytes (sampler_opts.raw_held_bytes) */
	__u32 raw_rb_bytes; /* the first samples' ring buffer's data area */
	uint64_t raw_stats[SAMPLER_RAW_STAT_MAX];
	uint64_t prompt; /* records of the rings that wake the reader for each one */
	int hz;
	bool off_cpu; /* the off-CPU programs are attached (docs/offcpu.md) */
};

/* ---- libbpf log capture: the verifier's reason goes into the error message ---- */

static char bpf_log[16384];
static size_t bpf_log_len;

static int capture_libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	int n;

	if (level == LIBBPF_DEBUG)
		return 0;
	if (bpf_log_len >= sizeof(bpf_log) - 1)
		return 0;
	n = vsnprintf(bpf_log + bpf_log_len, sizeof(bpf_log) - bpf_log_len, fmt, ap);
	if (n > 0)
		bpf_log_len += (size_t)n < sizeof(bpf_log) - bpf_log_len ? (size_t)n :
									 sizeof(bpf_log) - bpf_log_len - 1;
	return 0;
}

/* The verifier's reason: the line before its "processed N insns" summary, else the
 * last line libbpf printed. */
static const char *bpf_log_reason(void)
{
	char *end, *start;

	bpf_log[bpf_log_len] = '\0';
	end = strstr(bpf_log, "\nprocessed ");
	if (!end) {
		end = bpf_log + bpf_log_len;
		while (end > bpf_log && (end[-1] == '\n' || end[-1] == ' '))
			end--;
	}
	*end = '\0';
	start = strrchr(bpf_log, '\n');
	return start ? start + 1 : bpf_log;
}

/* ---- privileges ---- */

static bool has_cap(unsigned int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};

	if (syscall(SYS_capget, &hdr, data) != 0)
		return false;
	return data[cap / 32].effective & (1u << (cap % 32));
}

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static int check_privileges(char *err, size_t errlen)
{
	bool bpf = has_cap(CAP_BPF) || has_cap(CAP_SYS_ADMIN);
	bool perfmon = has_cap(CAP_PERFMON) || has_cap(CAP_SYS_ADMIN);

	if (bpf && perfmon)
		return 0;
	snprintf(err, errlen,
		 "hearth needs root or the capabilities CAP_BPF and CAP_PERFMON to sample the "
		 "system; missing %s%s%s",
		 bpf ? "" : "CAP_BPF", !bpf && !perfmon ? " and " : "", perfmon ? "" : "CAP_PERFMON");
	return -EPERM;
}

/* ---- CPUs and perf events ---- */

/* Reads a cpu list such as "0-3,5" from path into online[0..n). Count of CPUs or -errno. */
static int read_online_cpus(bool *online, int n)
{
	char buf[1024], *p = buf;
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	int count = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	while (*p && *p != '\n') {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			return -EINVAL;
		p = end;
		if (*p == '-')
			b = strtol(p + 1, &p, 10);
		for (long c = a; c <= b && c < n; c++, count++)
			online[c] = true;
		if (*p == ',')
			p++;
	}
	return count;
}

static int open_cpu_clock(int cpu, int hz)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		/* cpu-clock counts nanoseconds: a fixed period gives exactly hz and an
		 * exact pprof period, where freq mode would let the kernel adjust it. */
		.sample_period = 1000000000ull / (unsigned)hz,
	};

	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int attach_cpus(struct sampler *s, int hz, char *err, size_t errlen)
{
	bool *online = calloc((size_t)s->n_possible, sizeof(*online));
	int n, ret = 0;

	if (!online)
		return -ENOMEM;
	n = read_online_cpus(online, s->n_possible);
	if (n <= 0) {
		snprintf(err, errlen, "cannot read the online CPUs from /sys/devices/system/cpu/online");
		ret = n < 0 ? n : -ENODEV;
		goto cleanup;
	}
	for (int cpu = 0; cpu < s->n_possible; cpu++) {
		if (!online[cpu])
			continue;
		s->pfds[cpu] = open_cpu_clock(cpu, hz);
		if (s->pfds[cpu] < 0) {
			ret = -errno;
			snprintf(err, errlen, "perf_event_open(cpu-clock, cpu %d) failed: %s", cpu,
				 strerror(errno));
			goto cleanup;
		}
		s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.hearth_sample,
								s->pfds[cpu]);
		if (!s->links[cpu]) {
			ret = -errno;
			s->links[cpu] = NULL;
			snprintf(err, errlen, "attaching the BPF program to cpu %d failed: %s", cpu,
				 strerror(errno));
			goto cleanup;
		}
		s->n_cpus++;
	}
cleanup:
	free(online);
	return ret;
}

/* ---- ring buffers ---- */

static void on_maps_read(void *ctx, uint32_t pid, uint64_t pstart, bool remap)
{
	struct sampler *s = ctx;
	struct sampler_event e = {.kind = remap ? SAMPLER_EV_MAPS_REMAP : SAMPLER_EV_MAPS_READ,
				  .pid = pid, .pstart = pstart, .comm = ""};

	if (s->cb.event)
		s->cb.event(s->cb.ctx, &e);
}

static void raw_flush(struct sampler *s, bool force, uint32_t exit_pid);

static int on_event(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	const struct hearth_event *ev = data;
	struct sampler_event e;
	char comm[HEARTH_COMM_LEN + 1];

	if (size < sizeof(*ev))
		return 0;
	s->prompt++;
	if (ev->kind == HEARTH_EV_REMAP) { /* the unwinder's own: maps changed under a view */
		if (s->uw)
			unwind_mgr__remap(s->uw, ev->pid, ev->pstart, ev->remap.kind);
		return 0;
	}
	if (ev->kind == HEARTH_EV_UNWIND_PC) { /* a pc of a partial table without its FDE */
		if (s->uw)
			unwind_mgr__want_pc(s->uw, ev->want.obj, ev->want.vaddr);
		return 0;
	}
	if (ev->kind == HEARTH_EV_UNWIND_WANT) { /* a walk crossed an object without its table */
		if (s->uw)
			unwind_mgr__want(s->uw);
		return 0;
	}
	if (!s->cb.event)
		return 0;
	memcpy(comm, ev->comm, HEARTH_COMM_LEN);
	comm[HEARTH_COMM_LEN] = '\0';
	e.kind = ev->kind;
	e.pid = ev->pid;
	e.pstart = ev->pstart;
	e.comm = comm;
	if (s->uw && (ev->kind == HEARTH_EV_NEW || ev->kind == HEARTH_EV_EXEC))
		unwind_mgr__note(s->uw, ev->pid, ev->pstart);
	else if (s->uw && ev->kind == HEARTH_EV_EXIT) {
		raw_flush(s, false, ev->pid);
		unwind_mgr__exit(s->uw, ev->pid);
	}
	if (s->java && ev->kind == HEARTH_EV_NEW)
		java_mgr__note(s->java, ev->pid, ev->pstart);
	else if (s->java && ev->kind == HEARTH_EV_EXEC)
		java_mgr__exec(s->java, ev->pid, ev->pstart);
	else if (s->java && ev->kind == HEARTH_EV_EXIT)
		java_mgr__exit(s->java, ev->pid);
	if (s->py && ev->kind == HEARTH_EV_NEW)
		python_mgr__note(s->py, ev->pid, ev->pstart);
	else if (s->py && ev->kind == HEARTH_EV_EXEC)
		python_mgr__exec(s->py, ev->pid, ev->pstart);
	else if (s->py && ev->kind == HEARTH_EV_EXIT)
		python_mgr__exit(s->py, ev->pid);
	if (s->v8 && ev->kind == HEARTH_EV_NEW)
		v8_mgr__note(s->v8, ev->pid, ev->pstart);
	else if (s->v8 && ev->kind == HEARTH_EV_EXEC)
		v8_mgr__exec(s->v8, ev->pid, ev->pstart);
	else if (s->v8 && ev->kind == HEARTH_EV_EXIT)
		v8_mgr__exit(s->v8, ev->pid);
	if (s->rbm && ev->kind == HEARTH_EV_NEW)
		ruby_mgr__note(s->rbm, ev->pid, ev->pstart);
	else if (s->rbm && ev->kind == HEARTH_EV_EXEC)
		ruby_mgr__exec(s->rbm, ev->pid, ev->pstart);
	else if (s->rbm && ev->kind == HEARTH_EV_EXIT)
		ruby_mgr__exit(s->rbm, ev->pid);
	s->cb.event(s->cb.ctx, &e);
	return 0;
}

int sampler_parse_rb_sample(const void *data, size_t size, struct sampler_sample *out,
			    char comm[HEARTH_COMM_LEN + 1], char pcomm[HEARTH_COMM_LEN + 1])
{
	const struct hearth_rb_sample *r = data;
	const uint64_t *frames = (const uint64_t *)(r + 1);

	size_t n_words;
	uint64_t ns = 0;

	/* Lengths are checked one by one before they are added: no 32-bit wrap. */
	if (size < sizeof(*r) || r->ulen > HEARTH_RB_MAX_USER || r->klen > HEARTH_MAX_STACK ||
	    r->plen > HEARTH_PY_MAX_FRAMES)
		return -EINVAL;
	/* An off-CPU block carries its nanoseconds after the frames; a "running"
	 * record (CPU samples inside the thread's own off-CPU walk) their count. */
	n_words = (size_t)r->ulen + r->klen + 2 * (size_t)r->plen;
	if (r->kind && r->kind != HEARTH_RB_KIND_RUNNING &&
	    (HEARTH_RB_KIND_TYPE(r->kind) != HEARTH_RB_KIND_OFFCPU ||
	     HEARTH_RB_KIND_REASON(r->kind) >= HEARTH_OFFCPU_REASON_MAX))
		return -EINVAL;
	if (size < sizeof(*r) + 8 * (n_words + (r->kind ? 1 : 0)))
		return -EINVAL;
	if (r->kind)
		memcpy(&ns, frames + n_words, sizeof(ns));
	memcpy(comm, r->comm, HEARTH_COMM_LEN);
	comm[HEARTH_COMM_LEN] = '\0';
	memcpy(pcomm, r->pcomm, HEARTH_COMM_LEN);
	pcomm[HEARTH_COMM_LEN] = '\0';
	*out = (struct sampler_sample){
		.pid = r->pid,
		.tid = r->tid,
		.pstart = r->pstart,
		.comm = comm,
		.pcomm = pcomm,
		.n_user = r->ulen,
		.n_kernel = r->klen,
		.user = frames,
		.kernel = frames + r->ulen,
		.n_python = r->plen,
		.python = r->plen ? frames + r->ulen + r->klen : NULL,
		.count = r->kind ? ns : 1,
		.kind = r->kind,
	};
	return 0;
}

/* Ring-buffer samples, stack-helper and table-unwound alike (only the frames used
 * travel). A malformed record would be a program/ABI mismatch: skipped. */
static int on_rb_sample(void *ctx, void *data, size_t size)
{
	char comm[HEARTH_COMM_LEN + 1], pcomm[HEARTH_COMM_LEN + 1];
	struct sampler *s = ctx;
	struct sampler_sample smp;

	if (!s->cb.sample || sampler_parse_rb_sample(data, size, &smp, comm, pcomm) != 0)
		return 0;
	s->cb.sample(s->cb.ctx, &smp);
	return 0;
}

static double now_ms(void)
{
	return (double)base_clock_ns(CLOCK_MONOTONIC) / 1e6;
}

/* A new process's sample with a copy of its stack: held until its view is out. */
static int on_raw_sample(void *ctx, void *data, size_t size)
{
	const struct hearth_raw_sample *r = data;
	struct sampler *s = ctx;
	struct raw_held *h;
	size_t bytes;

	s->prompt++;
	if (size < sizeof(*r) || r->stack_len > HEARTH_RAW_STACK_BYTES ||
	    r->klen > HEARTH_RAW_MAX_KERNEL)
		return 0; /* program/ABI mismatch: skipped */
	bytes = offsetof(struct hearth_raw_sample, stack) + r->stack_len;
	if (s->raw_bytes + bytes > s->raw_max || s->n_raw == SIZE_MAX / sizeof(*s->raw)) {
		s->raw_stats[SAMPLER_RAW_DROPPED]++;
		return 0;
	}
	if (base_grow((void **)&s->raw, &s->cap_raw, s->n_raw + 1, sizeof(*s->raw))) {
		s->raw_stats[SAMPLER_RAW_DROPPED]++;
		return 0;
	}
	h = &s->raw[s->n_raw];
	h->r = malloc(bytes);
	if (!h->r) {
		s->raw_stats[SAMPLER_RAW_DROPPED]++;
		return 0;
	}
	memcpy(h->r, r, bytes);
	h->bytes = bytes;
	h->gen = 0;
	h->t_ms = now_ms();
	s->raw_bytes += bytes;
	s->n_raw++;
	return 0;
}

/* Walks one held sample and hands it on; false to keep it (its view is not
 * out yet, or does not reach the outermost frame yet, and it may still come). */
static bool raw_deliver(struct sampler *s, const struct raw_held *h, bool force)
{
	static const struct hearth_unwind_proc no_view; /* frame pointers alone */
	const struct hearth_raw_sample *r = h->r;
	char comm[HEARTH_COMM_LEN + 1], pcomm[HEARTH_COMM_LEN + 1];
	uint64_t frames[HEARTH_UNWIND_MAX_FRAMES];
	struct sampler_sample smp;
	bool complete = false;
	int n;

	n = unwind_mgr__walk(s->uw, r->pid, r->pstart, r->ip, r->sp, r->bp, r->stack, r->stack_len,
			     frames, HEARTH_UNWIND_MAX_FRAMES, &complete);
	if ((n < 0 || !complete) && !force)
		return false;
	if (n < 0) {
		n = (int)unwind_walk_copy(&no_view, NULL, NULL, r->ip, r->sp, r->bp, r->stack,
					  r->stack_len, frames, HEARTH_UNWIND_MAX_FRAMES,
					  &complete);
		s->raw_stats[SAMPLER_RAW_NO_VIEW]++;
	} else {
		s->raw_stats[complete ? SAMPLER_RAW_COMPLETE : SAMPLER_RAW_PARTIAL]++;
	}
	if (!s->cb.sample)
		return true;
	memcpy(comm, r->comm, HEARTH_COMM_LEN);
	comm[HEARTH_COMM_LEN] = '\0';
	memcpy(pcomm, r->pcomm, HEARTH_COMM_LEN);
	pcomm[HEARTH_COMM_LEN] = '\0';
	smp = (struct sampler_sample){
	    .pid = r->pid,
	    .tid = r->tid,
	    .pstart = r->pstart,
	    .comm = comm,
	    .pcomm = pcomm,
	    .n_user = (uint32_t)n,
	    .n_kernel = r->klen,
	    .user = frames,
	    .kernel = (const uint64_t *)r->kernel,
	    .count = 1,
	};
	s->cb.sample(s->cb.ctx, &smp);
	return true;
}

/* Hands on the held samples whose view is out (all of them when force, or once
 * they waited RAW_WAIT_MS; those of exit_pid, when not 0, now: its view is about
 * to go), keeping the others in arrival order. */
static void raw_flush(struct sampler *s, bool force, uint32_t exit_pid)
{
	double now = s->n_raw ? now_ms() : 0;
	bool batch = false;
	size_t w = 0;

	for (size_t i = 0; i < s->n_raw; i++) {
		struct raw_held *h = &s->raw[i];
		bool now_or_never =
		    force || now - h->t_ms >= RAW_WAIT_MS || (exit_pid && h->r->pid == exit_pid);
		/* + 1: never 0, the "not tried yet" of a held sample */
		uint64_t gen = unwind_mgr__view_gen(s->uw, h->r->pid, h->r->pstart) + 1;

		/* A walk is tried again only once its process's view has changed. */
		if (!now_or_never && h->gen == gen) {
			s->raw[w++] = *h;
			continue;
		}
		if (!batch) {
			unwind_mgr__walk_batch(s->uw, true);
			batch = true;
		}
		if (raw_deliver(s, h, now_or_never)) {
			s->raw_bytes -= h->bytes;
			free(h->r);
		} else {
			h->gen = gen;
			s->raw[w++] = *h;
		}
	}
	if (batch)
		unwind_mgr__walk_batch(s->uw, false);
	s->n_raw = w;
}

static int setup_ringbufs(struct sampler *s)
{
	/* Rings are consumed in the order added. First samples before events: an
	 * EXIT event walks the process's held ones before its view goes. */
	if (s->unwind != SAMPLER_UNWIND_FP) {
		s->rb =
		    ring_buffer__new(bpf_map__fd(s->skel->maps.rawstacks), on_raw_sample, s, NULL);
		if (!s->rb ||
		    ring_buffer__add(s->rb, bpf_map__fd(s->skel->maps.events), on_event, s) < 0)
			return -errno;
	} else {
		s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_event, s, NULL);
		if (!s->rb)
			return -errno;
	}
	/* Both modes: in map mode it carries samples whose stack id collided. */
	if (ring_buffer__add(s->rb, bpf_map__fd(s->skel->maps.samples), on_rb_sample, s) < 0)
		return -errno;
	return 0;
}

/* ---- open ---- */

/* Bytes of the samples ring buffer: a power of two (the kernel's rule). */
static __u32 samples_rb_bytes(const struct sampler *s, const struct sampler_opts *o)
{
	uint64_t want = (uint64_t)(s->n_possible > 0 ? s->n_possible : 1) * (uint64_t)o->hz *
			(sizeof(struct hearth_rb_sample) +
			 (HEARTH_RB_MAX_USER + HEARTH_MAX_STACK) * sizeof(__u64));
	__u32 bytes = SAMPLES_RB_MIN_BYTES;

	while (bytes < want && bytes < SAMPLES_RB_MAX_BYTES)
		bytes <<= 1;
	while (o->ring_bytes_max && bytes > o->ring_bytes_max && bytes > SAMPLES_RB_MIN_BYTES)
		bytes >>= 1;
	return bytes;
}

/* Bytes of the first samples' ring buffer (a power of two). */
static __u32 raw_rb_bytes(const struct sampler_opts *o)
{
	__u32 bytes = RAW_RB_BYTES;

	while (o->ring_bytes_max && bytes > o->ring_bytes_max && bytes > RAW_RB_MIN_BYTES)
		bytes >>= 1;
	return bytes;
}

/* Whether the kernel has the bpf_task_work_schedule_resume kfunc (6.18). */
static bool offcpu_has_task_work(void)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	bool has;

	if (!vmlinux)
		return false;
	has = btf__find_by_name_kind(vmlinux, "bpf_task_work_schedule_resume_impl",
				     BTF_KIND_FUNC) >= 0;
	btf__free(vmlinux);
	return has;
}

static int set_filters_before_load(struct sampler *s, const struct sampler_opts *o)
{
	struct profile_bpf *k = s->skel;
	bool rb = o->transfer == SAMPLER_TRANSFER_RINGBUF;
	bool uw = s->unwind != SAMPLER_UNWIND_FP;
	/* Table-unwound samples always go through the ring buffer (no stack ids). */
	__u32 rb_bytes = rb || uw || o->off_cpu ? samples_rb_bytes(s, o) : COLLISION_RB_BYTES;

	s->raw_rb_bytes = raw_rb_bytes(o);

	k->rodata->use_unwind = uw;
	k->rodata->use_python = o->python;
	k->rodata->use_v8 = o->node;
	k->rodata->use_java = o->java && uw;
	k->rodata->use_ruby = o->ruby;
	k->rodata->keep_idle = o->idle;
	k->rodata->filter_pid = o->n_pids > 0;
	k->rodata->filter_cgroup = o->cgroup_path != NULL;
	k->rodata->use_ringbuf = rb;
	k->rodata->samples_rb_size = rb_bytes;
	k->rodata->offcpu_min_ns = o->off_cpu_min_ns ? o->off_cpu_min_ns
						     : HEARTH_OFFCPU_DEFAULT_MIN_NS;
	/* Off: the scheduler programs are neither verified nor attached. */
	bpf_program__set_autoload(k->progs.hearth_offcpu_switch, o->off_cpu);
	bpf_program__set_autoload(k->progs.hearth_offcpu_wakeup_new, o->off_cpu);
	bpf_program__set_autoload(k->progs.hearth_offcpu_sys_exit, o->off_cpu);
	/* The user walk at rseq_update for threads with rseq; as a task work
	 * for the others where the kernel has it (6.18), else at sys_exit
	 * (docs/offcpu.md, "Cost"). */
	k->rodata->offcpu_use_tw = o->off_cpu && offcpu_has_task_work();
	bpf_program__set_autoload(k->progs.hearth_offcpu_rseq, o->off_cpu);
	/* The mode that is not used keeps its maps at the minimum size. */
	if (bpf_map__set_max_entries(k->maps.samples, rb_bytes) ||
	    (!uw && bpf_map__set_max_entries(k->maps.unwind_rows, 1)) ||
	    (!uw && bpf_map__set_max_entries(k->maps.unwind_procs, 1)) ||
	    (!uw && bpf_map__set_max_entries(k->maps.unwind_pending, 1)) ||
	    (!uw && bpf_map__set_max_entries(k->maps.unwind_heat, 1)) ||
	    (!uw && bpf_map__set_max_entries(k->maps.unwind_want_ns, 1)) ||
	    (!o->python && bpf_map__set_max_entries(k->maps.py_procs, 1)) ||
	    (!o->node && bpf_map__set_max_entries(k->maps.v8_procs, 1)) ||
	    (!(o->java && uw) && bpf_map__set_max_entries(k->maps.java_procs, 1)) ||
	    (!o->ruby && bpf_map__set_max_entries(k->maps.rb_procs, 1)) ||
	    bpf_map__set_max_entries(k->maps.rawstacks, uw ? s->raw_rb_bytes : 4096) ||
	    bpf_map__set_max_entries(k->maps.counts0, rb ? 1 : HEARTH_COUNTS_ENTRIES) ||
	    bpf_map__set_max_entries(k->maps.counts1, rb ? 1 : HEARTH_COUNTS_ENTRIES) ||
	    bpf_map__set_max_entries(k->maps.stacks0, rb ? 1 : HEARTH_STACKS_ENTRIES) ||
	    bpf_map__set_max_entries(k->maps.stacks1, rb ? 1 : HEARTH_STACKS_ENTRIES))
		return -EINVAL;
	return 0;
}

static int set_filters_after_load(struct sampler *s, const struct sampler_opts *o, char *err,
				  size_t errlen)
{
	__u8 one = 1;
	__u32 zero = 0;

	for (size_t i = 0; i < o->n_pids; i++) {
		if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.filter_pids), &o->pids[i], &one,
					BPF_ANY)) {
			snprintf(err, errlen, "cannot add pid %u to the filter: %s", o->pids[i],
				 strerror(errno));
			return -errno;
		}
	}
	if (!o->cgroup_path)
		return 0;
	s->cgroup_fd = open(o->cgroup_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->cgroup_fd < 0) {
		snprintf(err, errlen, "--cgroup %s: %s (give a cgroup v2 directory, e.g. "
				      "/sys/fs/cgroup/system.slice/foo.service)",
			 o->cgroup_path, strerror(errno));
		return -errno;
	}
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.filter_cgroups), &zero, &s->cgroup_fd,
				BPF_ANY)) {
		snprintf(err, errlen, "--cgroup %s is not a cgroup v2 directory: %s", o->cgroup_path,
			 strerror(errno));
		return -errno;
	}
	return 0;
}

static int load_skeleton_once(struct sampler *s, const struct sampler_opts *o, char *err,
			      size_t errlen)
{
	int ret;

	bpf_log_len = 0;
	libbpf_set_print(capture_libbpf_log);
	s->skel = profile_bpf__open();
	if (!s->skel) {
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	ret = set_filters_before_load(s, o);
	if (ret) {
		snprintf(err, errlen, "cannot size the BPF maps");
		return ret;
	}
	ret = profile_bpf__load(s->skel);
	if (ret) {
		snprintf(err, errlen, "loading the BPF program failed (%s); the kernel said: %s",
			 strerror(-ret), bpf_log_len ? bpf_log_reason() : "(nothing)");
		return ret;
	}
	return 0;
}

/* Loads; in auto mode a kernel that rejects the unwinder gets the fp program. */
static int load_skeleton(struct sampler *s, const struct sampler_opts *o, char *err,
			 size_t errlen)
{
	int ret;

	s->unwind = o->unwind;
	ret = load_skeleton_once(s, o, err, errlen);
	if (!ret || o->unwind != SAMPLER_UNWIND_AUTO)
		return ret;
	profile_bpf__destroy(s->skel);
	s->skel = NULL;
	s->unwind = SAMPLER_UNWIND_FP;
	return load_skeleton_once(s, o, err, errlen);
}

/* Chunks of unwind_rows the manager may use: all of them, or fewer when the
 * test knob HEARTH_UNWIND_CHUNKS says so (tests and benches that need a full
 * row map without filling 16 MiB of tables first). */
static uint32_t unwind_chunks(void)
{
	const char *env = getenv("HEARTH_UNWIND_CHUNKS");
	unsigned long n = env ? strtoul(env, NULL, 10) : 0;

	return n > 0 && n < HEARTH_UNWIND_DEFAULT_CHUNKS ? (uint32_t)n
							 : HEARTH_UNWIND_DEFAULT_CHUNKS;
}

/* The table manager over the loaded maps; auto mode falls back to fp without it. */
static int open_unwinder(struct sampler *s, char *err, size_t errlen)
{
	int ret;

	if (s->unwind == SAMPLER_UNWIND_FP)
		return 0;
	ret = unwind_mgr__new(bpf_map__fd(s->skel->maps.unwind_rows),
			      bpf_map__fd(s->skel->maps.unwind_procs), unwind_chunks(), &s->uw);
	if (ret && s->unwind == SAMPLER_UNWIND_DWARF) {
		snprintf(err, errlen, "cannot map the unwind table map: %s", strerror(-ret));
		return ret;
	}
	if (ret)
		s->unwind = SAMPLER_UNWIND_FP; /* no views are ever published: fp stacks */
	else {
		unwind_mgr__set_pending(s->uw, bpf_map__fd(s->skel->maps.unwind_pending));
		unwind_mgr__set_remap(s->uw, bpf_map__fd(s->skel->maps.unwind_remap));
		unwind_mgr__set_on_read(s->uw, on_maps_read, s);
		/* Tables on demand, by heat (docs/unwind.md); without the counters
		 * mapped, tables are loaded while there is room. */
		unwind_mgr__set_heat(s->uw, bpf_map__fd(s->skel->maps.unwind_heat));
	}
	return 0;
}

/* The off-CPU recorder's BTF tracepoints (bpf/offcpu.bpf.h). sys_exit, which
 * puts every syscall of the machine on the tracepoint path, only where
 * rseq_update cannot be attached; otherwise once a thread without rseq needs
 * it and the kernel has no BPF task work (offcpu_attach_exit). */
static int attach_offcpu(struct sampler *s, char *err, size_t errlen)
{
	struct profile_bpf *k = s->skel;

	k->links.hearth_offcpu_rseq = bpf_program__attach(k->progs.hearth_offcpu_rseq);
	if (!k->links.hearth_offcpu_rseq)
		k->links.hearth_offcpu_sys_exit =
			bpf_program__attach(k->progs.hearth_offcpu_sys_exit);
	k->links.hearth_offcpu_wakeup_new = bpf_program__attach(k->progs.hearth_offcpu_wakeup_new);
	k->links.hearth_offcpu_switch = bpf_program__attach(k->progs.hearth_offcpu_switch);
	if ((!k->links.hearth_offcpu_rseq && !k->links.hearth_offcpu_sys_exit) ||
	    !k->links.hearth_offcpu_wakeup_new || !k->links.hearth_offcpu_switch) {
		snprintf(err, errlen, "attaching the off-CPU programs to the sched_switch, "
				      "sched_wakeup_new and rseq_update (or sys_exit) BTF "
				      "tracepoints failed: %s",
			 strerror(errno));
		return -errno;
	}
	s->off_cpu = true;
	return 0;
}

/* Attaches sys_exit the first time a thread without rseq had a block pending
 * (bpf/offcpu.bpf.h, offcpu_want_exit); a failure is retried at the next drain. */
static void offcpu_attach_exit(struct sampler *s)
{
	struct profile_bpf *k = s->skel;

	if (!s->off_cpu || k->links.hearth_offcpu_sys_exit ||
	    !__atomic_load_n(&k->bss->offcpu_want_exit, __ATOMIC_RELAXED))
		return;
	k->links.hearth_offcpu_sys_exit = bpf_program__attach(k->progs.hearth_offcpu_sys_exit);
}

int sampler__open(const struct sampler_opts *o, const struct sampler_callbacks *cb,
		  struct sampler **out, char *err, size_t errlen)
{
	struct sampler *s = NULL;
	int ret;

	*out = NULL;
	if (o->hz < SAMPLER_MIN_HZ || o->hz > SAMPLER_MAX_HZ) {
		snprintf(err, errlen, "frequency %d Hz is out of range (%d-%d)", o->hz,
			 SAMPLER_MIN_HZ, SAMPLER_MAX_HZ);
		return -EINVAL;
	}
	ret = check_privileges(err, errlen);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cb = *cb;
	s->transfer = o->transfer;
	s->hz = o->hz;
	s->raw_max = o->raw_held_bytes && o->raw_held_bytes < RAW_HELD_MAX_BYTES ? o->raw_held_bytes
										 : RAW_HELD_MAX_BYTES;
	s->cgroup_fd = -1;
	s->n_possible = libbpf_num_possible_cpus();
	if (s->n_possible <= 0) {
		ret = -ENODEV;
		snprintf(err, errlen, "cannot count the possible CPUs");
		goto cleanup;
	}
	s->links = calloc((size_t)s->n_possible, sizeof(*s->links));
	s->pfds = malloc((size_t)s->n_possible * sizeof(*s->pfds));
	s->keys = malloc(DRAIN_BATCH * sizeof(*s->keys));
	s->vals = malloc(DRAIN_BATCH * sizeof(*s->vals));
	if (!s->links || !s->pfds || !s->keys || !s->vals) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	for (int i = 0; i < s->n_possible; i++)
		s->pfds[i] = -1;
	stack_cache__init(&s->stacks);

	ret = load_skeleton(s, o, err, errlen);
	if (ret)
		goto cleanup;
	ret = set_filters_after_load(s, o, err, errlen);
	if (ret)
		goto cleanup;
	ret = open_unwinder(s, err, errlen);
	if (ret)
		goto cleanup;
	/* Without its manager no process is described: native stacks, as before. */
	if (o->python && python_mgr__new(bpf_map__fd(s->skel->maps.py_procs), &s->py))
		s->py = NULL;
	if (o->node && v8_mgr__new(bpf_map__fd(s->skel->maps.v8_procs), &s->v8))
		s->v8 = NULL;
	if (o->java && s->unwind != SAMPLER_UNWIND_FP &&
	    java_mgr__new(bpf_map__fd(s->skel->maps.java_procs), &s->java))
		s->java = NULL;
	if (o->ruby && ruby_mgr__new(bpf_map__fd(s->skel->maps.rb_procs), &s->rbm))
		s->rbm = NULL;
	ret = setup_ringbufs(s);
	if (ret) {
		snprintf(err, errlen, "cannot set up the BPF ring buffers: %s", strerror(-ret));
		goto cleanup;
	}
	/* Lifecycle events first, so no exec/exit of a sampled process slips between. */
	s->skel->links.hearth_exec = bpf_program__attach(s->skel->progs.hearth_exec);
	s->skel->links.hearth_exit = bpf_program__attach(s->skel->progs.hearth_exit);
	if (!s->skel->links.hearth_exec || !s->skel->links.hearth_exit) {
		ret = -errno;
		snprintf(err, errlen, "attaching to the sched_process_exec/exit BTF tracepoints "
				      "failed: %s", strerror(errno));
		goto cleanup;
	}
	if (o->off_cpu) {
		ret = attach_offcpu(s, err, errlen);
		if (ret)
			goto cleanup;
	}
	ret = attach_cpus(s, o->hz, err, errlen);
	if (ret)
		goto cleanup;
	*out = s;
	return 0;
cleanup:
	sampler__close(s);
	return ret;
}

/* ---- drain (map mode) ---- */

/* Frames of a stack id, read once per drain; NULL on a missing id. */
static const uint64_t *drain_stack(struct sampler *s, int map_fd, __s32 id, size_t *n)
{
	const struct stack_cache_entry *e;
	uint64_t frames[HEARTH_MAX_STACK];

	*n = 0;
	if (id < 0)
		return NULL;
	e = stack_cache__get(&s->stacks, (uint32_t)id);
	if (!e) {
		memset(frames, 0, sizeof(frames));
		s->last.syscalls++;
		if (bpf_map_lookup_elem(map_fd, &id, frames) != 0)
			return NULL;
		e = stack_cache__put(&s->stacks, (uint32_t)id, frames, HEARTH_MAX_STACK);
		if (!e)
			return NULL;
		s->last.stacks++;
	}
	*n = e->n;
	return e->frames;
}

static void emit_key(struct sampler *s, int stacks_fd, const struct hearth_count_key *k,
		     __u64 count)
{
	char comm[HEARTH_COMM_LEN + 1], pcomm[HEARTH_COMM_LEN + 1];
	struct sampler_sample smp = {
		.pid = k->pid,
		.tid = k->tid,
		.pstart = k->pstart,
		.comm = comm,
		.pcomm = pcomm,
		.count = count,
	};

	memcpy(comm, k->comm, HEARTH_COMM_LEN);
	comm[HEARTH_COMM_LEN] = '\0';
	memcpy(pcomm, k->pcomm, HEARTH_COMM_LEN);
	pcomm[HEARTH_COMM_LEN] = '\0';
	smp.user = drain_stack(s, stacks_fd, k->ustack_id, &smp.n_user);
	smp.kernel = drain_stack(s, stacks_fd, k->kstack_id, &smp.n_kernel);
	if (s->cb.sample)
		s->cb.sample(s->cb.ctx, &smp);
}

/* Empties one counts map with batched lookup-and-delete. Count of keys or -errno. */
static int drain_counts(struct sampler *s, int counts_fd, int stacks_fd)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 batch = 0, n;
	bool first = true;
	int total = 0, ret;

	for (;;) {
		n = DRAIN_BATCH;
		ret = bpf_map_lookup_and_delete_batch(counts_fd, first ? NULL : &batch, &batch,
						      s->keys, s->vals, &n, &opts);
		s->last.syscalls++;
		if (ret < 0 && ret != -ENOENT)
			return ret;
		for (__u32 i = 0; i < n; i++)
			emit_key(s, stacks_fd, &s->keys[i], s->vals[i]);
		total += (int)n;
		if (ret == -ENOENT)
			break;
		first = false;
	}
	return total;
}

/* Frees every stack of the idle set: those we read, then any left behind. */
static void free_stacks(struct sampler *s, int stacks_fd)
{
	__u32 key, next;

	for (size_t i = 0; i < s->stacks.n; i++) {
		__u32 id = s->stacks.entries[i].id;

		bpf_map_delete_elem(stacks_fd, &id);
		s->last.syscalls++;
	}
	/* Stacks no drained key refers to (the other half of a dropped sample). */
	while (bpf_map_get_next_key(stacks_fd, NULL, &next) == 0) {
		key = next;
		s->last.syscalls += 2;
		if (bpf_map_delete_elem(stacks_fd, &key) != 0)
			break;
	}
	s->last.syscalls++;
}

int sampler__drain(struct sampler *s)
{
	struct profile_bpf *k = s->skel;
	__u32 idle_set;
	int counts_fd, stacks_fd, ret;
	struct timespec settle = { 0, 2 * 1000 * 1000 };

	memset(&s->last, 0, sizeof(s->last));
	offcpu_attach_exit(s);
	ring_buffer__consume(s->rb); /* events first: mappings before samples */
	if (s->uw) {
		unwind_mgr__work(s->uw, UNWIND_BUDGET_MS);
		raw_flush(s, false, 0);
	}
	if (s->py)
		python_mgr__work(s->py, UNWIND_BUDGET_MS);
	if (s->v8)
		v8_mgr__work(s->v8, UNWIND_BUDGET_MS);
	if (s->java)
		java_mgr__work(s->java, UNWIND_BUDGET_MS);
	if (s->rbm)
		ruby_mgr__work(s->rbm, UNWIND_BUDGET_MS);
	if (s->transfer == SAMPLER_TRANSFER_RINGBUF)
		return 0;
	idle_set = __atomic_load_n(&k->bss->active_set, __ATOMIC_RELAXED);
	__atomic_store_n(&k->bss->active_set, !idle_set, __ATOMIC_SEQ_CST);
	/* A program that read the old set just before the flip runs for microseconds
	 * in interrupt context; let it finish before we empty that set. */
	nanosleep(&settle, NULL);
	ring_buffer__consume(s->rb);
	counts_fd = bpf_map__fd(idle_set ? k->maps.counts1 : k->maps.counts0);
	stacks_fd = bpf_map__fd(idle_set ? k->maps.stacks1 : k->maps.stacks0);
	stack_cache__reset(&s->stacks);
	ret = drain_counts(s, counts_fd, stacks_fd);
	free_stacks(s, stacks_fd);
	if (ret >= 0)
		s->last.keys = (uint64_t)ret;
	return ret < 0 ? ret : 0;
}

int sampler__next_due_ms(const struct sampler *s)
{
	int due = s->uw ? unwind_mgr__next_due_ms(s->uw) : -1;
	int py_due = s->py ? python_mgr__next_due_ms(s->py) : -1;

	int rb_due = s->rbm ? ruby_mgr__next_due_ms(s->rbm) : -1;

	if (py_due >= 0 && (due < 0 || py_due < due))
		due = py_due;
	if (s->v8 && v8_mgr__next_due_ms(s->v8) == 0)
		due = 0;
	py_due = s->java ? java_mgr__next_due_ms(s->java) : -1;
	if (py_due >= 0 && (due < 0 || py_due < due))
		due = py_due;
	if (rb_due >= 0 && (due < 0 || rb_due < due))
		due = rb_due;
	return due;
}

uint64_t sampler__prompt_records(const struct sampler *s)
{
	return s->prompt;
}

int sampler__max_away_ms(const struct sampler *s)
{
	/* The first-samples ring is the one a reader away can fill: records of a
	 * fixed size (~60 in RAW_RB_BYTES, fewer under a ring bound), up to one per CPU per sample period
	 * while new processes run. Half of it, at that rate. The events ring holds
	 * thousands; the samples ring wakes at half full (a poll, not a nap). */
	int cpus = s->n_possible > 0 ? s->n_possible : 1;
	uint64_t recs = (s->raw_rb_bytes ? s->raw_rb_bytes : RAW_RB_BYTES) /
			(sizeof(struct hearth_raw_sample) + 8);

	if (!s->uw)
		return 1000;
	return (int)(1000 * recs / 2 / ((uint64_t)cpus * (uint64_t)(s->hz > 0 ? s->hz : 1)));
}

int sampler__poll(struct sampler *s, int timeout_ms)
{
	int due = sampler__next_due_ms(s), n;

	if (due >= 0 && (timeout_ms < 0 || due < timeout_ms))
		timeout_ms = due; /* a queued maps re-read is due before the caller's deadline */
	n = ring_buffer__poll(s->rb, timeout_ms);

	/* Tables for processes announced by this batch of events, off the sample path. */
	if (s->uw) {
		unwind_mgr__work(s->uw, UNWIND_BUDGET_MS);
		raw_flush(s, false, 0);
	}
	if (s->py)
		python_mgr__work(s->py, UNWIND_BUDGET_MS);
	if (s->v8)
		v8_mgr__work(s->v8, UNWIND_BUDGET_MS);
	if (s->java)
		java_mgr__work(s->java, UNWIND_BUDGET_MS);
	if (s->rbm)
		ruby_mgr__work(s->rbm, UNWIND_BUDGET_MS);
	if (n == -EINTR)
		return 0;
	return n;
}

/* ---- counters ---- */

static uint64_t percpu_sum(int fd, __u32 idx, int n_possible)
{
	__u64 vals[n_possible];
	uint64_t sum = 0;

	if (bpf_map_lookup_elem(fd, &idx, vals) != 0)
		return 0;
	for (int i = 0; i < n_possible; i++)
		sum += vals[i];
	return sum;
}

void sampler__drops(const struct sampler *s, uint64_t drops[HEARTH_DROP_MAX])
{
	int fd = bpf_map__fd(s->skel->maps.drops);

	for (int i = 0; i < HEARTH_DROP_MAX; i++)
		drops[i] = percpu_sum(fd, (__u32)i, s->n_possible);
}

int sampler__offcpu_stats(const struct sampler *s, uint64_t out[HEARTH_OFFCPU_STAT_MAX])
{
	int fd = bpf_map__fd(s->skel->maps.offcpu_stats);

	if (!s->off_cpu)
		return -ENOENT;
	for (int i = 0; i < HEARTH_OFFCPU_STAT_MAX; i++)
		out[i] = percpu_sum(fd, (__u32)i, s->n_possible);
	return 0;
}

uint64_t sampler__samples(const struct sampler *s)
{
	/* Per-CPU values of the scratch, each opening with struct hearth_cpu_stats;
	 * the kernel lays them out value_size rounded up to 8 apart. */
	size_t stride = (bpf_map__value_size(s->skel->maps.scratch) + 7) & ~(size_t)7;
	char *vals = calloc((size_t)s->n_possible, stride);
	__u32 zero = 0;
	uint64_t sum = 0;

	if (!vals)
		return 0;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.scratch), &zero, vals) == 0) {
		for (int i = 0; i < s->n_possible; i++) {
			struct hearth_cpu_stats cs;

			memcpy(&cs, vals + (size_t)i * stride, sizeof(cs));
			sum += cs.samples;
		}
	}
	free(vals);
	return sum;
}

void sampler__last_drain(const struct sampler *s, struct sampler_drain_stats *out)
{
	*out = s->last;
}

int sampler__prog_stats(const struct sampler *s, uint64_t *run_time_ns, uint64_t *run_cnt)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int ret = bpf_obj_get_info_by_fd(bpf_program__fd(s->skel->progs.hearth_sample), &info,
					  &len);

	if (ret)
		return ret;
	*run_time_ns = info.run_time_ns;
	*run_cnt = info.run_cnt;
	return 0;
}

enum sampler_unwind sampler__unwind(const struct sampler *s)
{
	return s->unwind;
}

int sampler__unwind_stats(const struct sampler *s, uint64_t uw[HEARTH_UW_STAT_MAX],
			  struct unwind_mgr_stats *ms)
{
	int fd;

	if (!s->uw)
		return -ENOENT;
	fd = bpf_map__fd(s->skel->maps.unwind_stats);
	for (__u32 i = 0; i < HEARTH_UW_STAT_MAX; i++)
		uw[i] = percpu_sum(fd, i, s->n_possible);
	if (ms) /* a copy the polling thread takes: /metrics reads it from another */
		unwind_mgr__stats_copy(s->uw, ms);
	return 0;
}

const struct unwind_mgr *sampler__unwind_mgr(const struct sampler *s)
{
	return s->uw;
}

struct java_mgr *sampler__java(const struct sampler *s)
{
	return s->java;
}

/* A walk's per-CPU counters (its stats map), summed over CPUs into out[0..n). */
static int walk_stats(const struct sampler *s, const struct bpf_map *map, __u32 n, uint64_t *out)
{
	int fd = bpf_map__fd(map);

	for (__u32 i = 0; i < n; i++)
		out[i] = percpu_sum(fd, i, s->n_possible);
	return 0;
}

int sampler__java_stats(const struct sampler *s, uint64_t out[HEARTH_JAVA_STAT_MAX])
{
	return s->java ? walk_stats(s, s->skel->maps.java_stats, HEARTH_JAVA_STAT_MAX, out) : -ENOENT;
}

struct python_mgr *sampler__python(const struct sampler *s)
{
	return s->py;
}

struct v8_mgr *sampler__v8(const struct sampler *s)
{
	return s->v8;
}

int sampler__v8_stats(const struct sampler *s, uint64_t out[HEARTH_V8_STAT_MAX])
{
	return s->v8 ? walk_stats(s, s->skel->maps.v8_stats, HEARTH_V8_STAT_MAX, out) : -ENOENT;
}

int sampler__python_stats(const struct sampler *s, uint64_t out[HEARTH_PY_STAT_MAX])
{
	return s->py ? walk_stats(s, s->skel->maps.py_stats, HEARTH_PY_STAT_MAX, out) : -ENOENT;
}

struct ruby_mgr *sampler__ruby(const struct sampler *s)
{
	return s->rbm;
}

int sampler__ruby_stats(const struct sampler *s, uint64_t out[HEARTH_RB_STAT_MAX])
{
	return s->rbm ? walk_stats(s, s->skel->maps.rb_stats, HEARTH_RB_STAT_MAX, out) : -ENOENT;
}

void sampler__raw_stats(const struct sampler *s, uint64_t out[SAMPLER_RAW_STAT_MAX])
{
	memcpy(out, s->raw_stats, sizeof(s->raw_stats));
}

void sampler__stop(struct sampler *s)
{
	for (int i = 0; s->pfds && i < s->n_possible; i++)
		if (s->pfds[i] >= 0)
			ioctl(s->pfds[i], PERF_EVENT_IOC_DISABLE, 0);
}

void sampler__raw_finish(struct sampler *s)
{
	if (s->uw) {
		ring_buffer__consume(s->rb);
		unwind_mgr__work(s->uw, UNWIND_BUDGET_MS);
		raw_flush(s, true, 0);
	}
}

int sampler__n_cpus(const struct sampler *s)
{
	return s->n_cpus;
}

bool sampler_drop_is_loss(int drop)
{
	return drop != HEARTH_DROP_USTACK_COLLISION && drop != HEARTH_DROP_KSTACK_COLLISION &&
	       drop != HEARTH_DROP_EVENT_LOST;
}

const char *sampler_drop_name(int drop)
{
	static const char *const names[HEARTH_DROP_MAX] = {
		[HEARTH_DROP_MAP_FULL] = "counts map full",
		[HEARTH_DROP_USTACK_COLLISION] = "user stack-id collisions (resent)",
		[HEARTH_DROP_KSTACK_COLLISION] = "kernel stack-id collisions (resent)",
		[HEARTH_DROP_USTACK_MISSING] = "user stack unreadable",
		[HEARTH_DROP_KSTACK_MISSING] = "kernel stack unreadable",
		[HEARTH_DROP_STACK_OTHER] = "other stack errors",
		[HEARTH_DROP_RINGBUF_FULL] = "ring buffer full",
		[HEARTH_DROP_EVENT_LOST] = "process events lost",
		[HEARTH_DROP_IN_OFFCPU_WALK] = "inside an off-CPU walk",
	};

	return drop >= 0 && drop < HEARTH_DROP_MAX ? names[drop] : "unknown";
}

void sampler__close(struct sampler *s)
{
	if (!s)
		return;
	for (int i = 0; s->links && i < s->n_possible; i++)
		bpf_link__destroy(s->links[i]);
	for (int i = 0; s->pfds && i < s->n_possible; i++)
		if (s->pfds[i] >= 0)
			close(s->pfds[i]);
	ring_buffer__free(s->rb);
	for (size_t i = 0; i < s->n_raw; i++)
		free(s->raw[i].r);
	free(s->raw);
	unwind_mgr__free(s->uw); /* before the maps it has mmap'ed go */
	python_mgr__free(s->py);
	v8_mgr__free(s->v8);
	java_mgr__free(s->java);
	ruby_mgr__free(s->rbm);
	profile_bpf__destroy(s->skel);
	if (s->cgroup_fd >= 0)
		close(s->cgroup_fd);
	stack_cache__fini(&s->stacks);
	free(s->links);
	free(s->pfds);
	free(s->keys);
	free(s->vals);
	free(s);
}
