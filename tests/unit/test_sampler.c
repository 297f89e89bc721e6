/*
 * Tests of sampler/: real BPF on real perf events (needs root, as CI is).
 * A forked child spins; the sampler, filtered to it, must see its samples with
 * user stacks, announce it (NEW) and its exit (EXIT), in both transfer modes,
 * and drain with batched map operations.
 * test-runner: serial (it needs idle CPUs for its idle samples)
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sampler/sampler.h"
#include "sampler/stackcache.h"
#include "unit.h"

struct seen {
	uint32_t want_pid;
	uint64_t samples, other_pid, with_user, idle;
	int news, exits;
};

static void on_sample(void *ctx, const struct sampler_sample *s)
{
	struct seen *w = ctx;

	if (s->pid == 0)
		w->idle += s->count;
	if (s->pid != w->want_pid) {
		w->other_pid += s->count;
		return;
	}
	w->samples += s->count;
	if (s->n_user > 0)
		w->with_user += s->count;
}

static void on_event(void *ctx, const struct sampler_event *e)
{
	struct seen *w = ctx;

	if (e->pid != w->want_pid)
		return;
	if (e->kind == HEARTH_EV_NEW)
		w->news++;
	if (e->kind == HEARTH_EV_EXIT)
		w->exits++;
}

static pid_t spin_child(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		volatile unsigned long x = 0;

		for (;;)
			x++;
	}
	return pid;
}

/* CPU time a process has used so far, in ms (its CPU-time clock). */
static double proc_cpu_ms(pid_t pid)
{
	clockid_t c;
	struct timespec ts;

	if (clock_getcpuclockid(pid, &c) || clock_gettime(c, &ts))
		return -1;
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Samples of pid 0 that a peer, perf record -a -e cpu-clock -F 999, takes over 3 s
 * while s is polled (and drained) the whole time; -1 when perf fails. */
static int peer_idle_samples(struct sampler *s, const struct seen *w)
{
	char data[512], cmd[700], line[64];
	pid_t pid;
	int status = 0, n = 0;
	FILE *f;

	snprintf(data, sizeof(data), "%s/idle.perf.data", unit_tmp_dir());
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execlp("perf", "perf", "record", "-q", "-a", "-e", "cpu-clock", "-F", "999", "-o",
		       data, "--", "sleep", "3", (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	/* Until perf exits, with a deadline: sampler__poll returns as soon as records
	 * are ready (at 999 Hz, often at once), so a count of polls is no clock. */
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	time_t deadline = now.tv_sec + 30, next_drain = now.tv_sec + 1;
	pid_t done;

	while ((done = waitpid(pid, &status, WNOHANG)) == 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec >= deadline)
			break;
		sampler__poll(s, 100);
		if (now.tv_sec >= next_drain && !w->idle) {
			sampler__drain(s);
			next_drain = now.tv_sec + 1;
		}
	}
	if (done != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "perf script -F pid -i '%s' 2>/dev/null", data);
	if (!(f = popen(cmd, "r")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		int p;

		n += sscanf(line, "%d", &p) == 1 && p == 0;
	}
	return pclose(f) == 0 ? n : -1;
}

static void run_for(struct sampler *s, int ms)
{
	for (int t = 0; t < ms; t += 100) {
		sampler__poll(s, 100);
		if (t % 500 == 400)
			sampler__drain(s);
	}
	sampler__drain(s);
}

static void check_mode(int *unit_failed, enum sampler_transfer mode)
{
	struct seen w = { 0 };
	struct sampler_callbacks cb = { on_sample, on_event, &w };
	struct sampler *s = NULL;
	char err[1024] = "";
	uint32_t pid;
	struct sampler_opts o = { .hz = 499, .transfer = mode, .pids = &pid, .n_pids = 1 };
	pid_t child = spin_child();
	double cpu0, cpu;

	CHECK(child > 0);
	pid = (uint32_t)child;
	w.want_pid = pid;
	CHECKF(sampler__open(&o, &cb, &s, err, sizeof(err)) == 0, "%s", err);
	/* One spinning thread at 499 Hz: sampled until it has had 600 ms of CPU (at most
	 * 15 s: a loaded machine gives it less), so the expected count comes from its
	 * own CPU clock, not from the wall time. cpu-clock samples a running task every
	 * 1/499 s of its CPU time; a quarter less allows for the window's ends. */
	cpu0 = proc_cpu_ms(child);
	for (int t = 0; t < 150 && proc_cpu_ms(child) - cpu0 < 600; t++)
		run_for(s, 100);
	cpu = proc_cpu_ms(child) - cpu0;
	run_for(s, 0);
	CHECKF(cpu >= 600, "the child had only %.0f ms of CPU in 15 s", cpu);
	CHECKF(w.samples >= 0.75 * cpu * 499 / 1000, "%llu samples for %.0f ms of CPU at 499 Hz",
	       (unsigned long long)w.samples, cpu);
	CHECKF(w.other_pid == 0, "%llu samples of other pids passed the filter",
	       (unsigned long long)w.other_pid);
	CHECKF(w.with_user * 10 >= w.samples * 9, "%llu of %llu with user stacks",
	       (unsigned long long)w.with_user, (unsigned long long)w.samples);
	CHECK(w.news == 1);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	child = 0;
	run_for(s, 300);
	CHECKF(w.exits == 1, "%d exit events", w.exits);
cleanup:
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	sampler__close(s);
}

TEST(sampler_map_mode_sees_filtered_process)
{
	check_mode(unit_failed, SAMPLER_TRANSFER_MAP);
}

TEST(sampler_ringbuf_mode_sees_filtered_process)
{
	check_mode(unit_failed, SAMPLER_TRANSFER_RINGBUF);
}

TEST(sampler_drain_is_batched)
{
	struct seen w = { 0 };
	struct sampler_callbacks cb = { on_sample, on_event, &w };
	struct sampler *s = NULL;
	struct sampler_drain_stats st;
	struct sampler_opts o = { .hz = 999, .idle = true };
	char err[1024] = "";
	uint64_t drops[HEARTH_DROP_MAX];
	int peer_idle = 0;

	CHECKF(sampler__open(&o, &cb, &s, err, sizeof(err)) == 0, "%s", err);
	for (int t = 0; t < 10; t++)
		sampler__poll(s, 100);
	CHECK(sampler__drain(s) == 0);
	sampler__last_drain(s, &st);
	/* System-wide with idle: many distinct keys. One lookup-and-delete batch call
	 * per 4096 keys (+1 for the terminating ENOENT), plus two calls per distinct
	 * stack (read, free) and the sweep. */
	CHECKF(st.keys > 0, "no keys drained");
	CHECKF(st.syscalls <= (st.keys / 4096 + 2) + 2 * st.stacks + 1 + 2 * st.stacks,
	       "%llu syscalls for %llu keys, %llu stacks", (unsigned long long)st.syscalls,
	       (unsigned long long)st.keys, (unsigned long long)st.stacks);
	/* Idle samples need a CPU that idles while the kernel samples it. The truth is
	 * a peer recording the same window: perf record -a -e cpu-clock at 999 Hz, and
	 * its samples of pid 0. (On these VMs the kernel's cpu-clock fires in idle on
	 * CPU 0 only, for perf and bpftrace alike: with CPU 0 busy there are no idle
	 * samples for anyone. /proc/stat's idle time cannot tell that apart.) */
	if (!w.idle)
		peer_idle = peer_idle_samples(s, &w);
	if (!w.idle)
		CHECK(sampler__drain(s) == 0);
	CHECKF(peer_idle >= 0, "perf record -a failed: perf is a test dependency");
	CHECKF(w.idle > 0 || peer_idle < 20,
	       "--idle kept no pid 0 samples while perf recorded %d of them at the same time",
	       peer_idle);
	if (!w.idle)
		fprintf(stderr, "  note: no CPU idle under sampling: perf saw %d idle samples too\n",
			peer_idle);
	sampler__drops(s, drops);
	CHECK(drops[HEARTH_DROP_MAP_FULL] == 0);
cleanup:
	sampler__close(s);
}

TEST(sampler_skips_idle_by_default)
{
	struct seen w = { 0 };
	struct sampler_callbacks cb = { on_sample, on_event, &w };
	struct sampler *s = NULL;
	struct sampler_opts o = { .hz = 999 };
	char err[1024] = "";

	CHECKF(sampler__open(&o, &cb, &s, err, sizeof(err)) == 0, "%s", err);
	run_for(s, 500);
	CHECKF(w.idle == 0, "%llu idle samples", (unsigned long long)w.idle);
cleanup:
	sampler__close(s);
}

TEST(sampler_rejects_bad_frequency_and_cgroup)
{
	struct sampler_callbacks cb = { 0 };
	struct sampler *s = NULL;
	struct sampler_opts o = { .hz = 0 };
	char err[1024] = "";

	CHECK(sampler__open(&o, &cb, &s, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "out of range") != NULL);
	o.hz = 99;
	o.cgroup_path = "/nonexistent/cgroup";
	err[0] = '\0';
	CHECK(sampler__open(&o, &cb, &s, err, sizeof(err)) == -ENOENT);
	CHECKF(strstr(err, "/nonexistent/cgroup") != NULL, "%s", err);
	CHECK(s == NULL);
cleanup:
	sampler__close(s);
}

/* A ring-buffer record as the BPF program writes it: header, user frames, kernel frames. */
static size_t make_record(uint64_t *buf, uint32_t ulen, uint32_t klen)
{
	struct hearth_rb_sample h = { .pid = 42, .tid = 43, .pstart = 7, .ulen = ulen, .klen = klen };

	memcpy(h.comm, "worker-thread-nm", HEARTH_COMM_LEN); /* 16 bytes, no NUL */
	memcpy(h.pcomm, "proc", 5);
	memcpy(buf, &h, sizeof(h));
	for (uint32_t i = 0; i < ulen + klen; i++)
		buf[sizeof(h) / 8 + i] = i < ulen ? 0x400000 + i : 0xffffffff81000000ull + i;
	return sizeof(h) + 8 * (size_t)(ulen + klen);
}

TEST(sampler_parses_variable_length_records)
{
	static uint64_t buf[(sizeof(struct hearth_rb_sample) / 8) + HEARTH_RB_MAX_USER +
			    HEARTH_MAX_STACK + 1];
	char comm[HEARTH_COMM_LEN + 1], pcomm[HEARTH_COMM_LEN + 1];
	struct sampler_sample smp;
	size_t size;

	/* A shallow user-mode sample: only its 3 frames travel. */
	size = make_record(buf, 3, 0);
	CHECK(size == 56 + 3 * 8);
	CHECK(sampler_parse_rb_sample(buf, size, &smp, comm, pcomm) == 0);
	CHECK(smp.pid == 42 && smp.tid == 43 && smp.pstart == 7 && smp.count == 1);
	CHECK(smp.n_user == 3 && smp.n_kernel == 0);
	CHECK(smp.user[0] == 0x400000 && smp.user[2] == 0x400002);
	CHECK_STREQ(smp.comm, "worker-thread-nm");
	CHECK_STREQ(smp.pcomm, "proc");

	/* Kernel frames follow the user ones; the deepest table-unwound stack fits. */
	size = make_record(buf, HEARTH_RB_MAX_USER, HEARTH_MAX_STACK);
	CHECK(sampler_parse_rb_sample(buf, size, &smp, comm, pcomm) == 0);
	CHECK(smp.n_user == HEARTH_RB_MAX_USER && smp.n_kernel == HEARTH_MAX_STACK);
	CHECK(smp.user[HEARTH_RB_MAX_USER - 1] == 0x400000 + HEARTH_RB_MAX_USER - 1);
	CHECK(smp.kernel[0] == 0xffffffff81000000ull + HEARTH_RB_MAX_USER);

	/* A kernel thread's sample: no user frames. */
	size = make_record(buf, 0, 5);
	CHECK(sampler_parse_rb_sample(buf, size, &smp, comm, pcomm) == 0);
	CHECK(smp.n_user == 0 && smp.n_kernel == 5 && smp.kernel[4] == 0xffffffff81000004ull);

	/* Shorter than its lengths say, shorter than a header, or lengths out of
	 * bounds: refused, never read past the record. */
	size = make_record(buf, 3, 2);
	CHECK(sampler_parse_rb_sample(buf, size - 8, &smp, comm, pcomm) == -EINVAL);
	CHECK(sampler_parse_rb_sample(buf, 55, &smp, comm, pcomm) == -EINVAL);
	make_record(buf, HEARTH_RB_MAX_USER + 1, 0);
	CHECK(sampler_parse_rb_sample(buf, sizeof(buf), &smp, comm, pcomm) == -EINVAL);
	make_record(buf, 0, HEARTH_MAX_STACK + 1);
	CHECK(sampler_parse_rb_sample(buf, sizeof(buf), &smp, comm, pcomm) == -EINVAL);
	/* The largest lengths the fields hold must not pass the size check. */
	((struct hearth_rb_sample *)buf)->ulen = 0xffff;
	((struct hearth_rb_sample *)buf)->klen = 2;
	CHECK(sampler_parse_rb_sample(buf, sizeof(buf), &smp, comm, pcomm) == -EINVAL);
cleanup:;
}

/* Python frames (two words each) travel after the kernel frames; a count over
 * HEARTH_PY_MAX_FRAMES, or a record shorter than its Python words, is refused. */
TEST(sampler_parses_python_frames)
{
	static uint64_t buf[(sizeof(struct hearth_rb_sample) / 8) + 4 + 2 +
			    2 * (HEARTH_PY_MAX_FRAMES + 1)];
	char comm[HEARTH_COMM_LEN + 1], pcomm[HEARTH_COMM_LEN + 1];
	struct hearth_rb_sample *h = (struct hearth_rb_sample *)buf;
	struct sampler_sample smp;
	uint64_t *py = buf + sizeof(*h) / 8 + 4 + 2;
	size_t size = make_record(buf, 4, 2);

	CHECK(sampler_parse_rb_sample(buf, size, &smp, comm, pcomm) == 0);
	CHECK(smp.n_python == 0 && smp.python == NULL);
	h->plen = 3;
	for (int i = 0; i < 3; i++) {
		py[2 * i] = 0x7f0000001000ull + 0x100 * (uint64_t)i;
		py[2 * i + 1] = 0x7f0000002000ull | (i == 2 ? HEARTH_PY_FRAME_ENTRY : 0);
	}
	CHECK(sampler_parse_rb_sample(buf, size + 48, &smp, comm, pcomm) == 0);
	CHECK(smp.n_user == 4 && smp.n_kernel == 2 && smp.n_python == 3);
	CHECK(smp.kernel[1] == 0xffffffff81000005ull);
	CHECK(smp.python[0] == 0x7f0000001000ull && smp.python[4] == 0x7f0000001200ull);
	CHECK(smp.python[5] & HEARTH_PY_FRAME_ENTRY);
	CHECK(sampler_parse_rb_sample(buf, size + 40, &smp, comm, pcomm) == -EINVAL);
	h->plen = HEARTH_PY_MAX_FRAMES + 1;
	CHECK(sampler_parse_rb_sample(buf, sizeof(buf), &smp, comm, pcomm) == -EINVAL);
cleanup:;
}

/* The drain's stack cache: each id once, frames up to the first zero, ids kept in
 * insertion order (the order the drain frees them in), empty again after reset. */
TEST(sampler_stack_cache_keeps_each_id_once)
{
	struct stack_cache c;
	uint64_t frames[HEARTH_MAX_STACK] = {0};
	const struct stack_cache_entry *e;
	const uint32_t n_ids = 5000; /* past several growths of the index */

	stack_cache__init(&c);
	for (int round = 0; round < 2; round++) {
		for (uint32_t i = 0; i < n_ids; i++) {
			uint32_t id = i * 7919u; /* ids of a stack map: sparse, 0 included */

			for (uint32_t f = 0; f < HEARTH_MAX_STACK; f++)
				frames[f] = f < i % 9 ? 0x1000 + id + f : 0;
			CHECK(!stack_cache__get(&c, id));
			e = stack_cache__put(&c, id, frames, HEARTH_MAX_STACK);
			CHECK(e && e->id == id && e->n == i % 9);
		}
		CHECK(c.n == n_ids);
		for (uint32_t i = 0; i < n_ids; i++) {
			uint32_t id = i * 7919u;

			e = stack_cache__get(&c, id);
			CHECK(e && e->id == id && e->n == i % 9);
			CHECK(e->n == 0 || (e->frames[0] == 0x1000 + id &&
					    e->frames[e->n - 1] == 0x1000 + id + e->n - 1));
			CHECK(c.entries[i].id == id);
		}
		CHECK(!stack_cache__get(&c, 1)); /* never put */
		stack_cache__reset(&c);
		CHECK(c.n == 0 && !stack_cache__get(&c, 7919u));
	}
cleanup:
	stack_cache__fini(&c);
}
