/*
 * The agent's sampling loop: sleep on the BPF ring buffers until the next
 * deadline (they wake it for events and half-full sample buffers; a run of
 * events is taken in 100 ms batches, see AGENT_GATHER_NS), drain the
 * kernel's counts every second, and every interval build one profile of the
 * host, relabel it and queue it for the sender thread: encoded as pprof in the
 * spool (HTTP), or as a flat profile in the sink's queue (hearth run).
 *
 * A live window (/debug/pprof/profile?seconds=N) feeds a second collector with
 * the same samples for N seconds; it shares the process table and the
 * symbolizer, which only this thread touches, so no lock guards them.
 */
#include "agent_impl.h"
#include "base/base.h"
#include "java/java.h"
#include "offcpu/offcpu.h"
#include "python/python.h"
#include "v8/v8.h"
#include "ruby/ruby.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define AGENT_DRAIN_NS 1000000000LL
/* Process events and first samples wake the loop for each record (a new
 * process's maps are read while it still lives). When two such wakeups come
 * closer than this, the loop gathers: it naps this long and takes whatever came
 * in one go, until AGENT_GATHER_EMPTY naps in a row found nothing. Process churn
 * then costs ~10 wakeups a second instead of one per record (15-56/s measured on
 * this shared build machine, ~21/s on a CI runner: none of them hearth's own
 * work), and no record waits longer than this: the ~100 ms docs/architecture.md
 * promises for a maps read. At worst (two records, then silence just long enough
 * to stop gathering, again and again) that is (2 + 5) wakeups per 0.5 s, 14/s,
 * plus the deadlines. The rings outlast a nap: the samples ring wakes at half
 * full (~0.5 s of the largest records), the events ring holds thousands, and
 * the first-samples ring ~60 records, up to CPUs x Hz a second: a nap is cut
 * to fill at most half of it (sampler__max_away_ms: 148 ms at 99 Hz on 2 CPUs,
 * so 100 ms holds; 14 ms at -F 999). */
#define AGENT_GATHER_NS	   100000000LL
/* How far past the interval's end a live window (/debug/pprof/profile) may end
 * and still be answered before the interval's build: twice the last build plus
 * this. */
#define AGENT_LIVE_LEAD_NS 500000000LL
#define AGENT_GATHER_EMPTY 5

struct agent {
	struct agent_opts opts;
	struct proc_table *pt;
	struct symbolizer *sym;
	struct collector *col, *live_col;
	/* With --off-cpu (docs/offcpu.md): off-CPU blocks, and wall-clock time (on-CPU
	 * samples x period + blocks); NULL when off. */
	struct collector *off_col, *wall_col;
	struct sampler *s;
	struct agent_spool *sp;
	struct agent_sender *snd;
	char host[256], kernel[256];
	struct store_label labels[3]; /* __name__, host, kernel: a sink's series labels */
	/* live window, guarded by live_lock */
	pthread_mutex_t live_lock;
	pthread_cond_t live_cond;
	bool live_active, live_done, running;
	int64_t live_start, live_until; /* monotonic ns */
	int64_t live_t0;		/* realtime ns */
	struct profile *live_result;
	/* counters (relaxed atomics: read by HTTP threads) */
	uint64_t profiles, build_errors, drain_ns, build_ns, last_samples;
};

static void on_sample(void *ctx, const struct sampler_sample *s)
{
	struct agent *a = ctx;
	struct sampler_sample w;

	if (s->kind == HEARTH_RB_KIND_RUNNING) { /* CPU samples inside a walk: wall only */
		if (a->wall_col) {
			offcpu_wall_sample(s, 1000000000ull / (uint64_t)a->opts.so.hz, &w);
			collector__add(a->wall_col, &w);
		}
		return;
	}
	if (s->kind) { /* an off-CPU block (only with --off-cpu) */
		if (a->off_col) {
			collector__add(a->off_col, s);
			collector__add(a->wall_col, s);
		}
		return;
	}
	collector__add(a->col, s);
	if (a->wall_col) {
		offcpu_wall_sample(s, 1000000000ull / (uint64_t)a->opts.so.hz, &w);
		collector__add(a->wall_col, &w);
	}
	if (__atomic_load_n(&a->live_active, __ATOMIC_ACQUIRE))
		collector__add(a->live_col, s);
}

static void on_event(void *ctx, const struct sampler_event *e)
{
	struct agent *a = ctx;

	collector__event(a->col, e);
}

/* Appends "%XX"-escaped s to buf. */
static void url_escape(char *buf, size_t len, const char *s)
{
	size_t n = strlen(buf);

	for (; *s && n + 4 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.')
			buf[n++] = (char)c;
		else
			n += (size_t)snprintf(buf + n, len - n, "%%%02X", c);
	}
	buf[n] = '\0';
}

/* The /ingest query string of one profile: name=hearth{host=..,kernel=..}&from&until;
 * an off-CPU or wall profile also names its type (__profile_type__=...). */
static void ingest_query(const struct agent *a, const char *type, int64_t t0, int64_t dur,
			 char *buf, size_t len)
{
	char name[1024];

	if (type)
		snprintf(name, sizeof(name), "%s{%s=\"%s\",%s=\"%s\",%s=\"%s\"}", INGEST_AGENT_APP,
			 INGEST_HOST_LABEL, a->host, INGEST_KERNEL_LABEL, a->kernel,
			 STORE_PROFILE_TYPE_LABEL, type);
	else
		snprintf(name, sizeof(name), "%s{%s=\"%s\",%s=\"%s\"}", INGEST_AGENT_APP,
			 INGEST_HOST_LABEL, a->host, INGEST_KERNEL_LABEL, a->kernel);
	snprintf(buf, len, "format=pprof&spyName=hearth&sampleRate=%d&name=", a->opts.so.hz);
	url_escape(buf, len, name);
	snprintf(buf + strlen(buf), len - strlen(buf), "&from=%lld&until=%lld", (long long)t0,
		 (long long)(t0 + dur));
}

/* The literal of a profile's type (the sender keeps it past the profile). */
static const char *offcpu_type_literal(const char *type)
{
	if (!type)
		return NULL;
	return strcmp(type, OFFCPU_WALL_TYPE) ? OFFCPU_PROFILE_TYPE : OFFCPU_WALL_TYPE;
}

/* Queues the profile of [t0, t0 + dur) for the sender: flat for a sink, else
 * as a pprof with its /ingest query string in the spool. */
static int queue_profile(struct agent *a, const struct profile *p, int64_t t0, int64_t dur)
{
	struct profile_flat *f = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	char query[2048];
	int ret;

	if (a->opts.sink) {
		ret = profile__to_flat(p, &f);
		return ret ?: agent_sender__push_flat(a->snd, f, offcpu_type_literal(profile__type(p)),
						      t0, t0 + dur);
	}
	ret = pprof_encode(p, &buf, &len);
	if (!ret) {
		ingest_query(a, profile__type(p), t0, dur, query, sizeof(query));
		ret = agent_spool__push(a->sp, query, buf, len);
		agent_sender__kick(a->snd);
	}
	free(buf);
	return ret;
}

/* Builds one collector's profile of the interval and queues it. */
static int flush_one(struct agent *a, struct collector *col, int64_t t0, int64_t dur)
{
	struct profile *raw = collector__build(col, 1000000000 / a->opts.so.hz, t0, dur);
	struct profile *p = raw ? agent_relabel(a->pt, raw) : NULL;
	int ret = -ENOMEM;

	if (p && profile__n_samples(p) == 0)
		ret = 0; /* nothing waited: nothing to send */
	else if (p && !(ret = queue_profile(a, p, t0, dur)))
		__atomic_add_fetch(&a->profiles, 1, __ATOMIC_RELAXED);
	if (ret)
		__atomic_add_fetch(&a->build_errors, 1, __ATOMIC_RELAXED);
	profile__free(p);
	profile__free(raw);
	return ret;
}

/* Builds the interval's profile and queues it; with --off-cpu first the
 * off-CPU and wall-clock ones (the CPU build forgets the processes that exited). */
static int flush_interval(struct agent *a, int64_t t0, int64_t dur)
{
	int64_t b0 = base_clock_ns(CLOCK_MONOTONIC);
	int off_ret = a->off_col ? flush_one(a, a->off_col, t0, dur) : 0;
	int wall_ret = a->wall_col ? flush_one(a, a->wall_col, t0, dur) : 0;
	struct profile *raw = collector__build(a->col, 1000000000 / a->opts.so.hz, t0, dur);
	struct profile *p = raw ? agent_relabel(a->pt, raw) : NULL;
	int ret = -ENOMEM;

	__atomic_store_n(&a->build_ns, (uint64_t)(base_clock_ns(CLOCK_MONOTONIC) - b0),
			 __ATOMIC_RELAXED);
	if (p && profile__n_samples(p) == 0)
		ret = 0; /* an idle machine: nothing to send */
	else if (p && !(ret = queue_profile(a, p, t0, dur)))
		__atomic_add_fetch(&a->profiles, 1, __ATOMIC_RELAXED);
	if (ret)
		__atomic_add_fetch(&a->build_errors, 1, __ATOMIC_RELAXED);
	profile__free(p);
	profile__free(raw);
	symbolizer__expire_idle(a->sym, (uint64_t)base_clock_ns(CLOCK_MONOTONIC));
	if (a->opts.trim_memory)
		malloc_trim(0);
	return ret ?: off_ret ?: wall_ret;
}

/* Finishes a live window whose time is up. */
static void live_check(struct agent *a, int64_t now)
{
	pthread_mutex_lock(&a->live_lock);
	if (a->live_active && now >= a->live_until) {
		__atomic_store_n(&a->live_active, false, __ATOMIC_RELEASE);
		sampler__drain(a->s);
		a->live_result = collector__build(a->live_col, 1000000000 / a->opts.so.hz,
						  a->live_t0, now - a->live_start);
		a->live_done = true;
		pthread_cond_broadcast(&a->live_cond);
	}
	pthread_mutex_unlock(&a->live_lock);
}

/* When the interval's profile is built: at its end, or at the end of a live window
 * that ends within the build's time after it. A client of /debug/pprof/profile
 * waits only so long past its seconds (go tool pprof: half of them), and the build
 * of a busy host's interval can take seconds; the live window goes first. */
static int64_t flush_due(struct agent *a, int64_t start, int64_t interval)
{
	int64_t due = start + interval;
	int64_t lead = 2 * (int64_t)__atomic_load_n(&a->build_ns, __ATOMIC_RELAXED) +
		       AGENT_LIVE_LEAD_NS;

	pthread_mutex_lock(&a->live_lock);
	if (a->live_active && a->live_until >= due && a->live_until - due < lead)
		due = a->live_until;
	pthread_mutex_unlock(&a->live_lock);
	return due;
}

/* Milliseconds from now to the loop's next deadline: the next drain, the end of
 * the interval or of a live window. Between deadlines the thread sleeps in
 * sampler__poll, woken only by the ring buffers (events, a half-full sample
 * buffer) or by the unwinder's queued work, or naps while it gathers a run of
 * events (AGENT_GATHER_NS). */
static int next_wait_ms(struct agent *a, int64_t now, int64_t last_drain, int64_t start,
			int64_t interval)
{
	int64_t until = last_drain + AGENT_DRAIN_NS, due = flush_due(a, start, interval);

	if (due < until)
		until = due;
	pthread_mutex_lock(&a->live_lock);
	if (a->live_active && a->live_until < until)
		until = a->live_until;
	pthread_mutex_unlock(&a->live_lock);
	if (until <= now)
		return 0;
	return (int)((until - now + 999999) / 1000000);
}

/* Sleeps ms milliseconds (a signal ends it early: the caller checks its stop flag). */
static void nap_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* The timeout of the next poll: 0 after a nap when the loop is gathering (see
 * AGENT_GATHER_NS), napping first until the end of the gathering window or an
 * earlier deadline. Sets *napped. */
static int gather_wait(struct agent *a, int wait, int64_t now, int64_t gather_until,
		       bool *napped)
{
	int nap, due;

	*napped = false;
	if (now >= gather_until || wait == 0)
		return wait;
	nap = (int)((gather_until - now + 999999) / 1000000);
	if (nap > sampler__max_away_ms(a->s))
		nap = sampler__max_away_ms(a->s); /* the first-samples ring would fill */
	due = sampler__next_due_ms(a->s);
	if (wait > 0 && wait < nap)
		nap = wait;
	if (due >= 0 && due < nap)
		nap = due;
	if (nap > 0)
		nap_ms(nap);
	*napped = true;
	return 0;
}

int agent__run(struct agent *a, volatile sig_atomic_t *stop, double flush_s)
{
	int64_t start = base_clock_ns(CLOCK_MONOTONIC), t0 = base_clock_ns(CLOCK_REALTIME);
	int64_t last_drain = start, interval = (int64_t)(a->opts.interval_s * 1e9), now = start;
	int64_t gather_until = 0, last_prompt = INT64_MIN / 2;
	uint64_t prompt = sampler__prompt_records(a->s);
	int ret = 0, empty_naps = 0;

	__atomic_store_n(&a->running, true, __ATOMIC_RELEASE);
	while (!*stop && ret >= 0) {
		bool napped;
		int wait = gather_wait(a, next_wait_ms(a, now, last_drain, start, interval), now,
				       gather_until, &napped);

		ret = sampler__poll(a->s, wait);
		agent_mem_poll(a->pt, a->sym);
		now = base_clock_ns(CLOCK_MONOTONIC);
		if (sampler__prompt_records(a->s) != prompt) {
			/* records that wake per record: a second batch within the window,
			 * or more after a nap, starts (or goes on) gathering */
			if (napped || now - last_prompt < AGENT_GATHER_NS) {
				gather_until = now + AGENT_GATHER_NS;
				empty_naps = 0;
			}
			last_prompt = now;
			prompt = sampler__prompt_records(a->s);
		} else if (napped && now >= gather_until && ++empty_naps < AGENT_GATHER_EMPTY) {
			gather_until = now + AGENT_GATHER_NS; /* a whole nap, nothing came */
		}
		if (ret >= 0 && now - last_drain >= AGENT_DRAIN_NS) {
			ret = sampler__drain(a->s);
			__atomic_store_n(&a->drain_ns,
					 (uint64_t)(base_clock_ns(CLOCK_MONOTONIC) - now),
					 __ATOMIC_RELAXED);
			last_drain = now;
			agent_mem_tick(a->pt, a->sym);
		}
		live_check(a, now);
		if (ret >= 0 && now >= flush_due(a, start, interval)) {
			sampler__drain(a->s);
			flush_interval(a, t0, now - start);
			agent_mem_tick(a->pt, a->sym);
			start = now;
			t0 = base_clock_ns(CLOCK_REALTIME);
		}
	}
	sampler__raw_finish(a->s);
	if (ret >= 0 && sampler__drain(a->s) >= 0)
		flush_interval(a, t0, base_clock_ns(CLOCK_MONOTONIC) - start);
	__atomic_store_n(&a->running, false, __ATOMIC_RELEASE);
	live_check(a, INT64_MAX);
	agent_sender__stop(a->snd, flush_s);
	return ret < 0 ? ret : 0;
}

int agent__live_profile(void *agent, double seconds, struct profile **out)
{
	struct agent *a = agent;
	int ret = 0;

	*out = NULL;
	pthread_mutex_lock(&a->live_lock);
	if (!__atomic_load_n(&a->running, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&a->live_lock);
		return -ESHUTDOWN;
	}
	a->live_done = false;
	a->live_result = NULL;
	a->live_start = base_clock_ns(CLOCK_MONOTONIC);
	a->live_until = a->live_start + (int64_t)(seconds * 1e9);
	a->live_t0 = base_clock_ns(CLOCK_REALTIME);
	__atomic_store_n(&a->live_active, true, __ATOMIC_RELEASE);
	while (!a->live_done)
		pthread_cond_wait(&a->live_cond, &a->live_lock);
	*out = a->live_result;
	a->live_result = NULL;
	if (!*out)
		ret = -ENOMEM;
	pthread_mutex_unlock(&a->live_lock);
	return ret;
}

/* Resident set size in bytes from /proc/self/statm. */
static uint64_t rss_bytes(void)
{
	unsigned long long size, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%llu %llu", &size, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void gauge(FILE *f, const char *name, const char *type, const char *help, double v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

/* hearth_agent_send_failures_total, one line per reason. */
static void write_failures(struct agent *a, FILE *f)
{
	uint64_t n[AGENT_FAIL_MAX];

	agent_sender__failures(a->snd, n);
	fputs("# HELP hearth_agent_send_failures_total Failed delivery attempts (retried), by "
	      "reason.\n# TYPE hearth_agent_send_failures_total counter\n",
	      f);
	for (int i = 0; i < AGENT_FAIL_MAX; i++)
		fprintf(f, "hearth_agent_send_failures_total{reason=\"%s\"} %llu\n",
			agent_send_fail_name(i), (unsigned long long)n[i]);
}

/* The Python walk's counters (docs/python.md), when it is on. */
static void write_python(struct agent *a, FILE *f)
{
	static const char *const why[HEARTH_PY_STAT_MAX] = {
	    [HEARTH_PY_NO_TSTATE] = "no_thread_state", [HEARTH_PY_NO_FRAME] = "idle_in_c",
	    [HEARTH_PY_READ_FAIL] = "unreadable",      [HEARTH_PY_NOT_CODE] = "not_code",
	    [HEARTH_PY_TRUNCATED] = "truncated",
	};
	uint64_t py[HEARTH_PY_STAT_MAX];
	struct python_mgr_stats ms;

	if (sampler__python_stats(a->s, py))
		return;
	python_mgr__stats(sampler__python(a->s), &ms);
	gauge(f, "hearth_agent_python_processes", "gauge",
	      "CPython processes whose Python frames are walked now.", (double)ms.processes);
	gauge(f, "hearth_agent_python_unsupported_total", "counter",
	      "CPython processes of a version hearth has no offsets for (native frames only).",
	      (double)ms.unsupported);
	gauge(f, "hearth_agent_python_samples_total", "counter",
	      "Samples of walked CPython processes.", (double)py[HEARTH_PY_SAMPLES]);
	gauge(f, "hearth_agent_python_walked_total", "counter",
	      "Of those, samples with Python frames.", (double)py[HEARTH_PY_WALKED]);
	fputs("# HELP hearth_agent_python_stops_total Samples of CPython processes without (all "
	      "their) Python frames, by reason.\n# TYPE hearth_agent_python_stops_total counter\n",
	      f);
	for (int i = 0; i < HEARTH_PY_STAT_MAX; i++)
		if (why[i])
			fprintf(f, "hearth_agent_python_stops_total{reason=\"%s\"} %llu\n", why[i],
				(unsigned long long)py[i]);
}

/* The Java walk's counters (docs/java.md), when it is on. */
static void write_java(struct agent *a, FILE *f)
{
	static const char *const why[HEARTH_JAVA_STAT_MAX] = {
	    [HEARTH_JAVA_NO_BLOB] = "no_code_blob",
	    [HEARTH_JAVA_BAD_FRAME] = "bad_frame",
	    [HEARTH_JAVA_READ_FAIL] = "unreadable",
	    [HEARTH_JAVA_TRUNCATED] = "truncated",
	};
	uint64_t j[HEARTH_JAVA_STAT_MAX];
	struct java_mgr_stats ms;

	if (sampler__java_stats(a->s, j))
		return;
	java_mgr__stats(sampler__java(a->s), &ms);
	gauge(f, "hearth_agent_java_processes", "gauge", "JVMs whose Java frames are walked now.",
	      (double)ms.processes);
	gauge(f, "hearth_agent_java_samples_total", "counter", "Samples of walked JVMs.",
	      (double)j[HEARTH_JAVA_SAMPLES]);
	gauge(f, "hearth_agent_java_walked_total", "counter", "Of those, samples with Java frames.",
	      (double)j[HEARTH_JAVA_WALKED]);
	gauge(f, "hearth_agent_java_cache_bytes", "gauge",
	      "Bytes of the Java name cache (methods, nmethods' debug information).",
	      (double)ms.bytes);
	gauge(f, "hearth_agent_java_unnamed_total", "counter",
	      "Java frames that could not be named (unreadable or stale).", (double)ms.failed);
	fputs("# HELP hearth_agent_java_stops_total Java walks stopped, by reason.\n"
	      "# TYPE hearth_agent_java_stops_total counter\n",
	      f);
	for (int i = 0; i < HEARTH_JAVA_STAT_MAX; i++)
		if (why[i])
			fprintf(f, "hearth_agent_java_stops_total{reason=\"%s\"} %llu\n", why[i],
				(unsigned long long)j[i]);
}

/* The off-CPU recorder's counters (docs/offcpu.md), when it is on. */
static void write_offcpu(struct agent *a, FILE *f)
{
	uint64_t st[HEARTH_OFFCPU_STAT_MAX];

	if (sampler__offcpu_stats(a->s, st))
		return;
	gauge(f, "hearth_agent_offcpu_switches_total", "counter",
	      "Context switches of tracked threads seen by the off-CPU recorder.",
	      (double)st[HEARTH_OFFCPU_SWITCHES]);
	gauge(f, "hearth_agent_offcpu_blocks_total", "counter",
	      "Off-CPU blocks sent with a stack (each completed --off-cpu-min of time).",
	      (double)st[HEARTH_OFFCPU_BLOCKS]);
	gauge(f, "hearth_agent_offcpu_seconds_total", "counter",
	      "Off-CPU time sent.", (double)st[HEARTH_OFFCPU_SENT_NS] / 1e9);
	gauge(f, "hearth_agent_offcpu_short_blocks_total", "counter",
	      "Blocks that did not complete the minimum (their time waits per thread).",
	      (double)st[HEARTH_OFFCPU_SHORT]);
	gauge(f, "hearth_agent_offcpu_walk_samples_total", "counter",
	      "CPU samples taken inside a thread's own off-CPU walk: sent to the wall-clock "
	      "view as its on-CPU time with the walked stack (dropped from the CPU profile).",
	      (double)st[HEARTH_OFFCPU_WALK_SAMPLES]);
	fputs("# HELP hearth_agent_offcpu_dropped_total Off-CPU blocks lost, by reason.\n"
	      "# TYPE hearth_agent_offcpu_dropped_total counter\n", f);
	fprintf(f, "hearth_agent_offcpu_dropped_total{reason=\"no_task_storage\"} %llu\n",
		(unsigned long long)st[HEARTH_OFFCPU_NO_STORAGE]);
	fprintf(f, "hearth_agent_offcpu_dropped_total{reason=\"ringbuf_full\"} %llu\n",
		(unsigned long long)st[HEARTH_OFFCPU_RINGBUF_FULL]);
	fputs("# HELP hearth_agent_offcpu_degraded_total Off-CPU blocks sent with less of a "
	      "stack, by reason.\n# TYPE hearth_agent_offcpu_degraded_total counter\n", f);
	fprintf(f, "hearth_agent_offcpu_degraded_total{reason=\"leaf_only\"} %llu\n",
		(unsigned long long)st[HEARTH_OFFCPU_LEAF_ONLY]);
	fprintf(f, "hearth_agent_offcpu_degraded_total{reason=\"stack_lost\"} %llu\n",
		(unsigned long long)st[HEARTH_OFFCPU_STACK_LOST]);
	fprintf(f, "hearth_agent_offcpu_degraded_total{reason=\"frame_pointers\"} %llu\n",
		(unsigned long long)st[HEARTH_OFFCPU_FP_FALLBACK]);
}

/* The Ruby walk's counters (docs/ruby.md), when it is on. */
static void write_ruby(struct agent *a, FILE *f)
{
	static const char *const why[HEARTH_RB_STAT_MAX] = {
	    [HEARTH_RB_NO_EC] = "no_execution_context", [HEARTH_RB_NO_FRAME] = "no_ruby_frame",
	    [HEARTH_RB_READ_FAIL] = "unreadable",	[HEARTH_RB_BAD_STACK] = "bad_vm_stack",
	    [HEARTH_RB_TRUNCATED] = "truncated",
	};
	uint64_t rb[HEARTH_RB_STAT_MAX];
	struct ruby_mgr_stats ms;

	if (sampler__ruby_stats(a->s, rb))
		return;
	ruby_mgr__stats(sampler__ruby(a->s), &ms);
	gauge(f, "hearth_agent_ruby_processes", "gauge",
	      "CRuby processes whose Ruby frames are walked now.", (double)ms.processes);
	gauge(f, "hearth_agent_ruby_unsupported_total", "counter",
	      "CRuby processes of a version hearth has no offsets for (native frames only).",
	      (double)ms.unsupported);
	gauge(f, "hearth_agent_ruby_samples_total", "counter", "Samples of walked CRuby processes.",
	      (double)rb[HEARTH_RB_SAMPLES]);
	gauge(f, "hearth_agent_ruby_walked_total", "counter", "Of those, samples with Ruby frames.",
	      (double)rb[HEARTH_RB_WALKED]);
	gauge(f, "hearth_agent_ruby_iseq_failed_total", "counter",
	      "Ruby frames whose iseq could not be read (named unknown).", (double)ms.iseq_failed);
	fputs("# HELP hearth_agent_ruby_stops_total Samples of CRuby processes without (all "
	      "their) Ruby frames, by reason.\n# TYPE hearth_agent_ruby_stops_total counter\n",
	      f);
	for (int i = 0; i < HEARTH_RB_STAT_MAX; i++)
		if (why[i])
			fprintf(f, "hearth_agent_ruby_stops_total{reason=\"%s\"} %llu\n", why[i],
				(unsigned long long)rb[i]);
}

void agent__write_metrics(void *agent, FILE *f)
{
	struct agent *a = agent;
	struct agent_spool_stats ss;
	uint64_t drops[HEARTH_DROP_MAX], lost = 0;

	sampler__drops(a->s, drops);
	for (int i = 0; i < HEARTH_DROP_MAX; i++)
		if (sampler_drop_is_loss(i))
			lost += drops[i];
	if (a->opts.sink)
		agent_sender__sink_stats(a->snd, &ss);
	else
		agent_spool__stats(a->sp, &ss);
	gauge(f, "hearth_agent_samples_total", "counter", "Samples taken (after filters).",
	      (double)sampler__samples(a->s));
	gauge(f, "hearth_agent_samples_dropped_total", "counter", "Samples lost in the kernel.",
	      (double)lost);
	gauge(f, "hearth_agent_profiles_total", "counter", "Profiles built and queued.",
	      (double)__atomic_load_n(&a->profiles, __ATOMIC_RELAXED));
	gauge(f, "hearth_agent_drain_seconds", "gauge", "Duration of the last drain.",
	      (double)__atomic_load_n(&a->drain_ns, __ATOMIC_RELAXED) / 1e9);
	gauge(f, "hearth_agent_symbolize_seconds", "gauge",
	      "Duration of the last profile build (symbolization).",
	      (double)__atomic_load_n(&a->build_ns, __ATOMIC_RELAXED) / 1e9);
	gauge(f, "hearth_agent_spool_profiles", "gauge", "Profiles waiting to be sent.",
	      (double)ss.queued);
	gauge(f, "hearth_agent_spool_bytes", "gauge", "Bytes waiting to be sent.",
	      (double)ss.queued_bytes);
	gauge(f, "hearth_agent_spool_dropped_total", "counter",
	      "Profiles dropped because the spool was full.", (double)ss.dropped);
	gauge(f, "hearth_agent_spool_disk_errors_total", "counter",
	      "Spool file writes that failed (the profile was dropped).", (double)ss.disk_errors);
	gauge(f, "hearth_agent_rejected_total", "counter",
	      "Profiles the server refused as bad (400/413/415/422), not retried.",
	      (double)ss.rejected);
	gauge(f, "hearth_agent_sent_total", "counter", "Profiles delivered.", (double)ss.sent);
	write_failures(a, f);
	write_python(a, f);
	{ /* the V8 walk (docs/node.md), when it is on */
		uint64_t v8[HEARTH_V8_STAT_MAX];
		struct v8_mgr_stats vs;

		if (!sampler__v8_stats(a->s, v8)) {
			v8_mgr__stats(sampler__v8(a->s), &vs);
			v8_write_metrics(f, v8, &vs);
		}
	}
	write_java(a, f);
	write_offcpu(a, f);
	write_ruby(a, f);
	gauge(f, "hearth_agent_rss_bytes", "gauge", "Resident memory of this process.",
	      (double)rss_bytes());
	agent_mem_write_metrics(f, a->s);
}

static int open_parts(struct agent *a, char *err, size_t errlen)
{
	struct sampler_callbacks cb = {.sample = on_sample, .event = on_event, .ctx = a};
	int ret;

	a->pt = proc_table__new("/proc");
	a->sym = symbolizer__new(
	    &(struct sym_opts){.release_grace_ns = AGENT_SYM_GRACE_NS,
			       .mem_budget = true,
			       .cache_bytes = agent_mem_sym_bytes(a->opts.memory_limit)});
	a->col = (a->pt && a->sym) ? collector__new(a->pt, a->sym) : NULL;
	a->live_col = (a->pt && a->sym) ? collector__new(a->pt, a->sym) : NULL;
	if (a->opts.so.off_cpu && a->pt && a->sym) {
		a->off_col = collector__new(a->pt, a->sym);
		a->wall_col = collector__new(a->pt, a->sym);
		if (!a->off_col || !a->wall_col ||
		    collector__set_type(a->off_col, OFFCPU_PROFILE_TYPE) ||
		    collector__set_type(a->wall_col, OFFCPU_WALL_TYPE)) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	if (!a->col || !a->live_col) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = agent_spool_check_format(a->opts.spool_dir, err, errlen);
	if (ret)
		return ret;
	if (a->pt)
		proc_table__register_evictor(a->pt);
	ret = agent_spool__new(a->opts.spool_dir, agent_mem_spool_bytes(a->opts.memory_limit),
			       (a->opts.spool_mb ? a->opts.spool_mb : AGENT_DEFAULT_SPOOL_MB) << 20,
			       &a->sp);
	if (ret) {
		snprintf(err, errlen, "cannot use spool directory '%s': %s",
			 a->opts.spool_dir ? a->opts.spool_dir : "", strerror(-ret));
		return ret;
	}
	a->opts.so.raw_held_bytes = agent_mem_raw_bytes(a->opts.memory_limit);
	a->opts.so.ring_bytes_max = agent_mem_ring_bytes(a->opts.memory_limit);
	ret = sampler__open(&a->opts.so, &cb, &a->s, err, errlen);
	if (ret)
		return ret;
	collector__set_python(a->col, sampler__python(a->s));
	collector__set_python(a->live_col, sampler__python(a->s));
	collector__set_v8(a->col, sampler__v8(a->s));
	collector__set_v8(a->live_col, sampler__v8(a->s));
	collector__set_java(a->col, sampler__java(a->s));
	collector__set_java(a->live_col, sampler__java(a->s));
	if (a->off_col) {
		collector__set_python(a->off_col, sampler__python(a->s));
		collector__set_python(a->wall_col, sampler__python(a->s));
		collector__set_v8(a->off_col, sampler__v8(a->s));
		collector__set_v8(a->wall_col, sampler__v8(a->s));
		collector__set_java(a->off_col, sampler__java(a->s));
		collector__set_java(a->wall_col, sampler__java(a->s));
		collector__set_ruby(a->off_col, sampler__ruby(a->s));
		collector__set_ruby(a->wall_col, sampler__ruby(a->s));
	}
	collector__set_ruby(a->col, sampler__ruby(a->s));
	collector__set_ruby(a->live_col, sampler__ruby(a->s));
	ret = agent_sender__start(&a->opts, a->sp, a->labels, 3, &a->snd);
	if (ret)
		snprintf(err, errlen, "cannot start the sender thread: %s", strerror(-ret));
	return ret;
}

int agent__open(const struct agent_opts *opts, struct agent **out, char *err, size_t errlen)
{
	struct agent *a = calloc(1, sizeof(*a));
	struct utsname u;
	int ret;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	a->opts = *opts;
	if (a->opts.interval_s <= 0)
		a->opts.interval_s = AGENT_DEFAULT_INTERVAL_S;
	if (opts->host)
		snprintf(a->host, sizeof(a->host), "%s", opts->host);
	else if (gethostname(a->host, sizeof(a->host) - 1))
		snprintf(a->host, sizeof(a->host), "unknown");
	snprintf(a->kernel, sizeof(a->kernel), "%s", uname(&u) ? "unknown" : u.release);
	a->labels[0] = (struct store_label){INGEST_NAME_LABEL, INGEST_AGENT_APP};
	a->labels[1] = (struct store_label){INGEST_HOST_LABEL, a->host};
	a->labels[2] = (struct store_label){INGEST_KERNEL_LABEL, a->kernel};
	pthread_mutex_init(&a->live_lock, NULL);
	pthread_cond_init(&a->live_cond, NULL);
	if (!opts->sink && base_curl_init()) {
		agent__close(a);
		snprintf(err, errlen, "libcurl could not initialise");
		return -ENOMEM;
	}
	agent_mem_setup(a->opts.memory_limit, a->opts.memory_other, a->opts.trim_memory);
	ret = open_parts(a, err, errlen);
	if (ret) {
		agent__close(a);
		return ret;
	}
	agent_mem_started(a->opts.memory_limit, a->opts.trim_memory);
	*out = a;
	return 0;
}

void agent__close(struct agent *a)
{
	if (!a)
		return;
	agent_sender__free(a->snd);
	sampler__close(a->s);
	agent_spool__free(a->sp);
	collector__free(a->live_col);
	collector__free(a->col);
	collector__free(a->off_col);
	collector__free(a->wall_col);
	symbolizer__free(a->sym);
	proc_table__free(a->pt);
	pthread_cond_destroy(&a->live_cond);
	pthread_mutex_destroy(&a->live_lock);
	free(a);
}
