/*
 * The agent's memory ceiling (--memory-limit, docs/memory.md): sizes what is
 * sized at start from the limit, runs the ledger's reclaim on the sampling
 * thread (where no cache entry is held), watches resident memory, and writes the
 * memory health lines of /metrics.
 *
 * The split of the limit (64 MiB by default), measured on this machine
 * (bench/fleet, docs/memory.md): AGENT_CACHE_PCT (40%) for the caches that grow
 * with the host (symbols, DWARF, addresses, processes, unwind tables built in
 * user space, runtime name caches, the in-memory spool); the rest is the
 * program, libraries, BPF maps mapped into the process (ring buffers, the
 * unwind rows it touches), profile building and malloc's slack.
 */
#include "agent_impl.h"
#include "base/base.h"
#include "sampler/sampler.h"
#include "symbolize/symbolize.h"
#include "unwind/unwind.h"

#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* The RSS watch: past RSS_HIGH of the limit, the caches are asked for what
 * brings RSS back to RSS_LOW of it (and malloc gives freed memory back). */
#define RSS_HIGH_PCT 85
#define RSS_LOW_PCT  70
/* ... at most this often (a cache emptied every second would be rebuilt every
 * second: CPU spent for memory the caches may not even hold). */
#define RSS_TIGHTEN_EVERY_NS (5 * 1000000000LL)
/* A cache that grew past the budget between ticks is trimmed at the next
 * wake of the sampling thread, at most this often (an evictor that cannot
 * free anything must not be asked at every ring-buffer wake). */
#define RECLAIM_MIN_GAP_NS (100 * 1000000LL)

static uint64_t n_tightens;
static uint64_t rss_other; /* agent_mem_setup's `other` */
static bool policy;	   /* agent_mem_setup's `process_policy` */
/* The symbolizer's counters as of the last tick: only the sampling thread
 * touches the symbolizer, /metrics reads this copy. */
static pthread_mutex_t sym_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sym_stats sym_snap;
static bool sym_snapped;

size_t agent_mem_spool_bytes(uint64_t limit)
{
	if (!limit || limit / 16 > AGENT_SPOOL_MEM_BYTES)
		return AGENT_SPOOL_MEM_BYTES;
	return (size_t)(limit / 16);
}

size_t agent_mem_raw_bytes(uint64_t limit)
{
	/* limit/16: 4 MiB at 64M, ~250 copies of 16 KiB, over a second of new
	 * processes' first samples on every CPU at 99 Hz */
	return (size_t)(limit / 16);
}

size_t agent_mem_ring_bytes(uint64_t limit)
{
	/* limit/64 as a power of two: 1 MiB from 64M (the rings' own size on 2
	 * CPUs at 99 Hz), 512 KiB at 32M-63M; each ring's pages count twice in
	 * RSS (its data area is mapped twice) */
	size_t b = 256u << 10;

	if (!limit)
		return 0;
	while ((uint64_t)b * 2 <= limit / 64)
		b *= 2;
	return b;
}

uint64_t agent_mem_sym_bytes(uint64_t limit)
{
	/* Its own bound is the whole caches' share: the ledger arbitrates between
	 * kinds, the symbolizer's budget only stops it growing past the share. */
	return limit ? limit / 100 * AGENT_CACHE_PCT : 0;
}

void agent_mem_setup(uint64_t limit, uint64_t other, bool process_policy)
{
	mem_budget__set_limit(limit, AGENT_CACHE_PCT);
	rss_other = other;
	policy = process_policy;
	if (limit && process_policy) {
		/* Big transient buffers (a debug section inflated, a table sorted)
		 * go straight back to the kernel when freed instead of leaving holes
		 * in the heap, and threads share two arenas instead of one each. */
		mallopt(M_MMAP_THRESHOLD, 256 * 1024);
		mallopt(M_ARENA_MAX, 2);
	}
}

/* One mapping of /proc/self/smaps, as far as agent_mem_drop_file_pages needs it. */
struct vma {
	uintptr_t lo, hi;
	bool candidate; /* private, not writable, a file's */
	uint64_t rss_kb, anon_kb;
};

static uint64_t drop_vma(const struct vma *v)
{
	/* a mapping that never was writable and holds no anonymous (copied) page:
	 * dropping its pages loses nothing, they come back from the page cache */
	if (!v->candidate || v->anon_kb || !v->rss_kb)
		return 0;
	if (madvise((void *)v->lo, v->hi - v->lo, MADV_DONTNEED))
		return 0;
	return v->rss_kb << 10;
}

uint64_t agent_mem_drop_file_pages(void)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	struct vma v = {0};
	uint64_t dropped = 0, kb;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;
		char perms[5];
		int path = 0;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s %*s %*s %*s %n", &lo, &hi, perms,
			   &path) == 3) {
			dropped += drop_vma(&v);
			v = (struct vma){.lo = lo, .hi = hi};
			/* r-xp or r--p of a file that is still there: libraries' code and
			 * read-only data, hearth's own, objects the symbolizer mapped; not
			 * RELRO (it holds relocated, copied pages: anon_kb), not BPF maps
			 * (anon_inode), not a deleted file */
			v.candidate = path && line[path] == '/' && perms[1] != 'w' &&
				      perms[3] == 'p' && !strstr(line + path, " (deleted)");
		} else if (sscanf(line, "Rss: %" SCNu64, &kb) == 1) {
			v.rss_kb = kb;
		} else if (sscanf(line, "Anonymous: %" SCNu64, &kb) == 1) {
			v.anon_kb = kb;
		}
	}
	dropped += drop_vma(&v);
	fclose(f);
	return dropped;
}

uint64_t agent_mem_size_caches(uint64_t limit, uint64_t fixed)
{
	uint64_t most = limit / 100 * AGENT_CACHE_PCT, share, usable;

	if (!limit)
		return 0;
	/* an eighth of the limit is left free: the caches pass their share
	 * between two reclaims, the RSS watch acts at 85% */
	usable = limit - limit / 8;
	share = usable > fixed + AGENT_TRANSIENT_BYTES ? usable - fixed - AGENT_TRANSIENT_BYTES : 0;
	if (share > most)
		share = most;
	if (share < AGENT_MIN_CACHE_BYTES)
		share = AGENT_MIN_CACHE_BYTES;
	mem_budget__set_cache_budget(share);
	return share;
}

/* What agent_mem_started takes as the agent's fixed part in hearth run. */
#define AGENT_RUN_FIXED_BYTES (16ull << 20)

void agent_mem_started(uint64_t limit, bool process_policy)
{
	uint64_t fixed;

	if (!limit)
		return;
	if (process_policy)
		agent_mem_drop_file_pages(); /* what start-up alone touched */
	fixed = mem_budget__rss();
	/* hearth run: the store's pages are in this RSS too, and have their own
	 * allowance (rss_other); the agent's part measured alone is 10-11 MiB */
	if (rss_other && fixed > AGENT_RUN_FIXED_BYTES)
		fixed = AGENT_RUN_FIXED_BYTES;
	agent_mem_size_caches(limit, fixed);
}

void agent_mem_tick(struct proc_table *pt, struct symbolizer *sym)
{
	static int64_t last_tighten;
	uint64_t limit = mem_budget__limit(), rss, used, want;
	int64_t now = base_clock_ns(CLOCK_MONOTONIC);
	struct sym_stats ss;

	if (sym) {
		symbolizer__stats(sym, &ss);
		pthread_mutex_lock(&sym_lock);
		sym_snap = ss;
		sym_snapped = true;
		pthread_mutex_unlock(&sym_lock);
	}
	if (!limit)
		return;
	if (mem_budget__over())
		proc_table__reclaim_point(pt, 0);
	if (now - last_tighten < RSS_TIGHTEN_EVERY_NS)
		return;
	rss = mem_budget__rss();
	rss = rss > rss_other ? rss - rss_other : 0; /* the agent's part */
	if (rss <= limit / 100 * RSS_HIGH_PCT)
		return;
	last_tighten = now;
	/* What is resident beyond the caches (program, BPF maps, malloc's slack)
	 * is not theirs to give: they give at most half of what they hold, and
	 * malloc gives back what was freed. */
	used = mem_budget__used_total();
	want = rss - limit / 100 * RSS_LOW_PCT;
	if (want > used / 2)
		want = used / 2;
	__atomic_add_fetch(&n_tightens, 1, __ATOMIC_RELAXED);
	if (want)
		proc_table__reclaim_point(pt, want);
	malloc_trim(0);
	if (policy)
		agent_mem_drop_file_pages(); /* code and mapped objects' pages in use come back */
}

void agent_mem_poll(struct proc_table *pt, struct symbolizer *sym)
{
	static int64_t last;
	int64_t now;

	if (!mem_budget__over())
		return;
	now = base_clock_ns(CLOCK_MONOTONIC);
	if (now - last < RECLAIM_MIN_GAP_NS)
		return;
	last = now;
	agent_mem_tick(pt, sym);
}

static void line(FILE *f, const char *name, const char *type, const char *help, double v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

static void write_unwind(FILE *f, const struct sampler *s)
{
	uint64_t uw[HEARTH_UW_STAT_MAX];
	struct unwind_mgr_stats ms;

	if (sampler__unwind_stats(s, uw, &ms))
		return;
	line(f, "hearth_agent_unwind_tables", "gauge",
	     "Unwind tables in BPF that a process uses now.", (double)ms.tables);
	line(f, "hearth_agent_unwind_idle_tables", "gauge",
	     "Unwind tables in BPF no process uses (kept until room is needed).",
	     (double)ms.idle_tables);
	line(f, "hearth_agent_unwind_table_bytes", "gauge",
	     "Bytes of unwind rows in the BPF table map in use.", (double)ms.row_bytes);
	line(f, "hearth_agent_unwind_chunks_used", "gauge", "Chunks of the BPF unwind rows in use.",
	     (double)ms.chunks_used);
	line(f, "hearth_agent_unwind_chunks", "gauge", "Chunks of the BPF unwind rows in all.",
	     (double)ms.chunks_total);
	line(f, "hearth_agent_unwind_user_bytes", "gauge",
	     "Heap held by unwind tables and process views in user space.", (double)ms.user_bytes);
	line(f, "hearth_agent_unwind_builds_total", "counter",
	     "Unwind tables built (parsed and sorted).", (double)ms.builds);
	line(f, "hearth_agent_unwind_no_room_total", "counter",
	     "Unwind table builds that found no room in BPF.", (double)ms.no_room);
	line(f, "hearth_agent_unwind_no_room_objects", "gauge",
	     "Objects whose unwind table has no room in BPF now.", (double)ms.no_room_objects);
	line(f, "hearth_agent_unwind_tables_loaded_total", "counter",
	     "Unwind tables loaded into BPF (first loads and reloads).", (double)ms.tables_loaded);
	line(f, "hearth_agent_unwind_tables_reloaded_total", "counter",
	     "Unwind tables loaded again after an eviction (copied from the parked copy).",
	     (double)ms.tables_reloaded);
	line(f, "hearth_agent_unwind_tables_evicted_total", "counter",
	     "Unwind tables evicted from BPF to make room for hotter objects.",
	     (double)ms.tables_evicted);
	line(f, "hearth_agent_unwind_requests_total", "counter",
	     "Requests from BPF for the table of an object samples landed in.",
	     (double)ms.requests);
	line(f, "hearth_agent_unwind_waiting_objects", "gauge",
	     "Objects whose table waits for room in BPF now.", (double)ms.waiting_objects);
	line(f, "hearth_agent_unwind_parked_bytes", "gauge",
	     "Bytes of built tables parked in user space, out of BPF.", (double)ms.parked_bytes);
	line(f, "hearth_agent_unwind_bpf_bytes", "gauge", "Bytes of the BPF unwind table map in use.",
	     (double)ms.bpf_bytes_used);
	line(f, "hearth_agent_unwind_partial_tables", "gauge",
	     "Objects over the per-object cap with a partial unwind table (hot FDEs only).",
	     (double)ms.partial_tables);
	line(f, "hearth_agent_unwind_partial_fdes", "gauge", "FDEs loaded in partial unwind tables.",
	     (double)ms.partial_fdes);
	line(f, "hearth_agent_unwind_partial_requests_total", "counter",
	     "Requests from BPF for the FDE of a pc in an object with a partial table.",
	     (double)ms.partial_requests);
	line(f, "hearth_agent_unwind_partial_reloads_total", "counter",
	     "Partial unwind tables written to BPF again with more FDEs.",
	     (double)ms.partial_reloads);
	line(f, "hearth_agent_unwind_partial_for_room_total", "counter",
	     "Objects given a partial unwind table because their whole table found no room.",
	     (double)ms.partial_for_room);
	line(f, "hearth_agent_unwind_remaps_total", "counter",
	     "Maps re-read because a walk met a pc outside its process's view.", (double)ms.remaps);
	line(f, "hearth_agent_unwind_remaps_unchanged_total", "counter",
	     "Of those re-reads, the ones that found nothing new (the next is held off longer).",
	     (double)ms.remaps_unchanged);
	line(f, "hearth_agent_unwind_bpf_budget_bytes", "gauge",
	     "Bytes of the BPF unwind table map in all.", (double)ms.bpf_bytes_budget);
	line(f, "hearth_agent_unwind_samples_total", "counter", "Samples unwound with tables.",
	     (double)uw[HEARTH_UW_SAMPLES]);
	line(f, "hearth_agent_unwind_complete_total", "counter",
	     "Table-unwound samples whose walk reached the outermost frame.",
	     (double)uw[HEARTH_UW_END]);
	line(f, "hearth_agent_unwind_fp_frames_total", "counter",
	     "Frames taken with frame pointers (object without a table).",
	     (double)uw[HEARTH_UW_FP_FRAMES]);
}

void agent_mem_write_metrics(FILE *f, const struct sampler *s)
{
	struct sym_stats ss;
	bool have_sym;

	line(f, "hearth_memory_limit_bytes", "gauge",
	     "The --memory-limit on resident memory (0: none).", (double)mem_budget__limit());
	line(f, "hearth_memory_cache_budget_bytes", "gauge",
	     "Bytes the caches may hold together (their share of the limit).",
	     (double)mem_budget__cache_budget());
	line(f, "hearth_memory_rss_bytes", "gauge", "Resident memory of this process (VmRSS).",
	     (double)mem_budget__rss());
	line(f, "hearth_memory_peak_rss_bytes", "gauge",
	     "Peak resident memory of this process (VmHWM).", (double)mem_budget__peak_rss());
	fputs("# HELP hearth_memory_cache_bytes Bytes the caches hold, by kind.\n"
	      "# TYPE hearth_memory_cache_bytes gauge\n",
	      f);
	for (int k = 0; k < MEM_KIND_MAX; k++)
		fprintf(f, "hearth_memory_cache_bytes{kind=\"%s\"} %llu\n", mem_kind_name(k),
			(unsigned long long)mem_budget__used(k));
	fputs("# HELP hearth_memory_evictions_total Cache entries evicted to stay under the "
	      "limit, by kind.\n# TYPE hearth_memory_evictions_total counter\n",
	      f);
	for (int k = 0; k < MEM_KIND_MAX; k++)
		fprintf(f, "hearth_memory_evictions_total{kind=\"%s\"} %llu\n", mem_kind_name(k),
			(unsigned long long)mem_budget__evictions(k));
	fputs("# HELP hearth_memory_evicted_bytes_total Bytes evicted to stay under the limit, by "
	      "kind.\n# TYPE hearth_memory_evicted_bytes_total counter\n",
	      f);
	for (int k = 0; k < MEM_KIND_MAX; k++)
		fprintf(f, "hearth_memory_evicted_bytes_total{kind=\"%s\"} %llu\n",
			mem_kind_name(k), (unsigned long long)mem_budget__evicted_bytes(k));
	line(f, "hearth_memory_reclaims_total", "counter",
	     "Times the caches were asked to give memory back.", (double)mem_budget__reclaims());
	line(f, "hearth_agent_mapped_file_faults_total", "counter",
	     "Reads of a mapped object file that shrank under hearth (SIGBUS caught; that "
	     "file's table is read no more).",
	     (double)base_guard_faults());
	line(f, "hearth_memory_rss_tightens_total", "counter",
	     "Times resident memory neared the limit and the caches were asked for more.",
	     (double)__atomic_load_n(&n_tightens, __ATOMIC_RELAXED));
	pthread_mutex_lock(&sym_lock);
	ss = sym_snap;
	have_sym = sym_snapped;
	pthread_mutex_unlock(&sym_lock);
	if (have_sym) {
		line(f, "hearth_agent_symbolizer_cache_bytes", "gauge",
		     "Symbol tables, DWARF and address cache held by the symbolizer.",
		     (double)ss.cache_bytes);
		line(f, "hearth_agent_symbolizer_cache_budget_bytes", "gauge",
		     "The symbolizer's own byte budget.", (double)ss.cache_budget);
		line(f, "hearth_agent_symbolizer_object_evictions_total", "counter",
		     "Objects whose symbol tables and DWARF were dropped for the budget.",
		     (double)ss.object_evictions);
		line(f, "hearth_agent_symbolizer_object_reloads_total", "counter",
		     "Evicted objects read again.", (double)ss.object_reloads);
	}
	if (s)
		write_unwind(f, s);
}
