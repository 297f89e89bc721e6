/*
 * Tests of collect/: raw samples of this very process (addresses of functions in
 * the test binary and in libc) are aggregated and symbolized into a profile with
 * the right names, labels, kernel frames and module+offset fallbacks.
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collect/collect.h"
#include "python/python.h"
#include "python/python_impl.h"
#include "unit.h"

__attribute__((noinline)) int collect_test_leaf(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) int collect_test_caller(int x)
{
	return collect_test_leaf(x) + 2;
}

static const char *name_at(const struct profile *p, const struct profile_sample *s, size_t i,
			   char *buf, size_t len)
{
	struct profile_location loc;

	if (i >= s->n_locs || profile__get_location(p, s->locs[i], &loc) || loc.n_lines == 0)
		return "";
	return profile__frame_name(p, &loc, loc.n_lines - 1, buf, len);
}

static const char *label_str(const struct profile_sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_labels; i++)
		if (!strcmp(s->labels[i].key, key))
			return s->labels[i].str;
	return NULL;
}

static const char *write_kallsyms(void)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/kallsyms", unit_tmp_dir());
	f = fopen(path, "w");
	if (!f)
		return NULL;
	fprintf(f, "ffffffff81000000 T _stext\nffffffff81001000 T do_syscall_64\n"
		   "ffffffff81002000 T entry_SYSCALL_64\nffffffff81003000 T _etext\n");
	fclose(f);
	return path;
}

/* A collector over this machine's /proc, with its proc table and symbolizer. */
struct fixture {
	struct proc_table *pt;
	struct symbolizer *sym;
	struct collector *c;
	struct profile *p; /* the test's built profile, freed on close */
};

static struct collector *fixture_open(struct fixture *f, const struct sym_opts *so)
{
	f->p = NULL;
	f->pt = proc_table__new("/proc");
	f->sym = symbolizer__new(so);
	f->c = f->pt && f->sym ? collector__new(f->pt, f->sym) : NULL;
	return f->c;
}

static void fixture_close(struct fixture *f)
{
	profile__free(f->p);
	collector__free(f->c);
	symbolizer__free(f->sym);
	proc_table__free(f->pt);
}

/* A sample of this process, thread "tester", with n user frames. */
static struct sampler_sample own_sample(const uint64_t *user, size_t n, uint64_t count)
{
	return (struct sampler_sample){ .pid = (uint32_t)getpid(), .tid = (uint32_t)getpid(),
					.comm = "tester", .n_user = n, .user = user, .count = count };
}

TEST(collect_symbolizes_own_process)
{
	struct sym_opts so = {.kallsyms_path = write_kallsyms()};
	struct fixture f;
	struct collector *c = fixture_open(&f, &so);
	struct profile_sample s;
	struct collect_stats st;
	char buf[256];
	/* leaf first: an address inside the leaf, then a return address into the caller */
	uint64_t user[2] = {(uint64_t)(uintptr_t)collect_test_leaf + 2,
			    (uint64_t)(uintptr_t)collect_test_caller + 5};
	uint64_t kernel[2] = {0xffffffff81001010ull, 0xffffffff81002008ull};
	struct sampler_sample cs = own_sample(user, 2, 3);

	CHECK(c);
	collector__event(c, &(struct sampler_event){.kind = HEARTH_EV_NEW, .pid = cs.pid});
	CHECK(collector__add(c, &cs) == 0);
	CHECK(collector__add(c, &cs) == 0); /* identical: aggregated */
	cs.n_kernel = 2;
	cs.kernel = kernel;
	CHECK(collector__add(c, &cs) == 0);
	collector__stats(c, &st);
	CHECK(st.entries == 2 && st.samples == 9);

	f.p = collector__build(c, 10000000, 1, 2);
	CHECK(f.p);
	CHECK(profile__n_samples(f.p) == 2);
	CHECK(profile__total(f.p, 0) == 9);
	CHECK(profile__total(f.p, 1) == 9 * 10000000ll);
	for (size_t i = 0; i < 2; i++) {
		CHECK(profile__sample(f.p, i, &s) == 0);
		CHECK_STREQ(label_str(&s, "comm"), "tester");
		CHECK(label_str(&s, "process") != NULL);
		if (s.n_locs == 2) {
			CHECK_STREQ(name_at(f.p, &s, 0, buf, sizeof(buf)), "collect_test_leaf");
			CHECK_STREQ(name_at(f.p, &s, 1, buf, sizeof(buf)), "collect_test_caller");
		} else {
			CHECK(s.n_locs == 4);
			CHECK_STREQ(name_at(f.p, &s, 0, buf, sizeof(buf)), "do_syscall_64_[k]");
			CHECK_STREQ(name_at(f.p, &s, 1, buf, sizeof(buf)), "entry_SYSCALL_64_[k]");
			CHECK_STREQ(name_at(f.p, &s, 2, buf, sizeof(buf)), "collect_test_leaf");
		}
	}
	collector__stats(c, &st);
	CHECK(st.entries == 0); /* build forgets what it built */
cleanup:
	fixture_close(&f);
}

TEST(collect_keeps_module_and_offset_when_unresolved)
{
	struct fixture f;
	struct collector *c = fixture_open(&f, NULL);
	struct profile_sample s;
	char buf[256];
	void *anon = malloc(1 << 20); /* heap: a mapping with no file */
	uint64_t user[2] = {(uint64_t)(uintptr_t)anon + 64, 0x10 /* in no mapping */};
	struct sampler_sample cs = own_sample(user, 2, 1);

	CHECK(c && anon);
	collector__event(c, &(struct sampler_event){.kind = HEARTH_EV_NEW, .pid = cs.pid});
	CHECK(collector__add(c, &cs) == 0);
	f.p = collector__build(c, 1000, 0, 0);
	CHECK(f.p && profile__sample(f.p, 0, &s) == 0 && s.n_locs == 2);
	/* the heap is "[heap]" or anonymous: named after it, never a bare [unknown] */
	name_at(f.p, &s, 0, buf, sizeof(buf));
	CHECKF(strstr(buf, "+0x") && strncmp(buf, "[unknown]", 9) != 0, "%s", buf);
	name_at(f.p, &s, 1, buf, sizeof(buf));
	CHECKF(strncmp(buf, "[unknown] 0x", 12) == 0, "%s", buf);
cleanup:
	free(anon);
	fixture_close(&f);
}

/* A return address 0 ends the user stack: what the kernel's frame-pointer walk
 * read past it is dropped, and the sample adds up with the same stack without
 * that tail (before: "[unknown] 0x0" and the garbage beyond it, seen in Go's
 * gogo as it switches stacks). */
TEST(collect_user_stack_ends_at_return_address_zero)
{
	struct fixture f;
	struct collector *c = fixture_open(&f, NULL);
	struct profile_sample s;
	struct collect_stats st;
	char buf[256];
	uint64_t user[5] = {(uint64_t)(uintptr_t)collect_test_leaf + 2,
			    (uint64_t)(uintptr_t)collect_test_caller + 5, 0, 0x7f0000001234ull,
			    (uint64_t)(uintptr_t)collect_test_caller + 5};
	struct sampler_sample cs = own_sample(user, 5, 1);

	CHECK(c);
	collector__event(c, &(struct sampler_event){.kind = HEARTH_EV_NEW, .pid = cs.pid});
	CHECK(collector__add(c, &cs) == 0);
	cs.n_user = 2;
	CHECK(collector__add(c, &cs) == 0);
	cs.n_user = 3; /* ending in the 0 itself */
	CHECK(collector__add(c, &cs) == 0);
	collector__stats(c, &st);
	CHECKF(st.entries == 1 && st.samples == 3, "entries %llu", (unsigned long long)st.entries);
	f.p = collector__build(c, 1000, 0, 0);
	CHECK(f.p && profile__n_samples(f.p) == 1 && profile__sample(f.p, 0, &s) == 0);
	CHECKF(s.n_locs == 2, "%zu locations", (size_t)s.n_locs);
	CHECK_STREQ(name_at(f.p, &s, 0, buf, sizeof(buf)), "collect_test_leaf");
	CHECK_STREQ(name_at(f.p, &s, 1, buf, sizeof(buf)), "collect_test_caller");
	/* a leaf at 0 (a jump to a null pointer) is still the sample's leaf */
	user[0] = 0;
	cs.n_user = 2;
	CHECK(collector__add(c, &cs) == 0);
	profile__free(f.p);
	f.p = collector__build(c, 1000, 0, 0);
	CHECK(f.p && profile__sample(f.p, 0, &s) == 0 && s.n_locs == 2);
cleanup:
	fixture_close(&f);
}

/* Samples that differ only where entry_matches says "the same" (a NULL or ""
 * process name, NULL or non-NULL pointers to no frames) add up into one entry,
 * and thousands of distinct ones each keep their own count across the index's
 * growth. */
TEST(collect_aggregates_equal_samples_once)
{
	struct fixture f;
	struct collector *c = fixture_open(&f, NULL);
	struct collect_stats st;
	uint64_t none[1] = {0};
	struct sampler_sample a = {.pid = 0, .tid = 0, .comm = "swapper", .count = 1};
	struct sampler_sample b = a;
	const uint32_t n = 3000;

	CHECK(c);
	b.pcomm = "";
	b.user = none;
	b.kernel = none;
	CHECK(collector__add(c, &a) == 0);
	CHECK(collector__add(c, &b) == 0);
	collector__stats(c, &st);
	CHECKF(st.entries == 1 && st.samples == 2, "entries %llu", (unsigned long long)st.entries);
	for (uint32_t round = 0; round < 2; round++) {
		for (uint32_t i = 0; i < n; i++) {
			struct sampler_sample s = {.pid = 0, .tid = i, .comm = "t", .count = i + 1};

			CHECK(collector__add(c, &s) == 0);
		}
	}
	collector__stats(c, &st);
	CHECK(st.entries == 1 + n && st.dropped == 0);
	f.p = collector__build(c, 1, 0, 0);
	CHECK(f.p && profile__n_samples(f.p) == 1 + n);
	/* 2 for the first entry, then twice 1..n */
	CHECK(profile__total(f.p, 0) == 2 + (int64_t)n * (n + 1));
cleanup:
	fixture_close(&f);
}

/* Sample counts saturate: two adds of INT64_MAX samples stay INT64_MAX samples
 * and INT64_MAX nanoseconds, never a negative or wrapped total (before: the
 * count wrapped and count x period overflowed, which UBSan aborts on). */
TEST(collect_counts_saturate)
{
	struct fixture f;
	struct collector *c = fixture_open(&f, NULL);
	struct sampler_sample s = {.comm = "swapper", .count = INT64_MAX};
	struct collect_stats st;

	CHECK(c);
	CHECK(collector__add(c, &s) == 0);
	s.count = UINT64_MAX;
	CHECK(collector__add(c, &s) == 0);
	collector__stats(c, &st);
	CHECK(st.entries == 1 && st.samples == UINT64_MAX);
	f.p = collector__build(c, 10000000, 0, 0);
	CHECK(f.p && profile__n_samples(f.p) == 1);
	CHECKF(profile__total(f.p, 0) == INT64_MAX, "%lld", (long long)profile__total(f.p, 0));
	CHECKF(profile__total(f.p, 1) == INT64_MAX, "%lld", (long long)profile__total(f.p, 1));
cleanup:
	fixture_close(&f);
}

/* Issue 17: a CPython 3.12 process (pyenv's) blocked in outer -> middle -> hot.
 * Its real code objects, with two evaluation-loop runs marked by hand (hot and
 * middle ran in the innermost _PyEval_EvalFrameDefault, outer and <module> in
 * the next), spliced into a native stack: each run takes the place of its
 * native evaluation-loop frame, the C frame between them stays between, and
 * the frames are named module.function with file and line. */
TEST(collect_splices_python_frames_into_native_ones)
{
	static const char script[] =
	    "import sys\n"
	    "def hot():\n    print('ready', flush=True)\n    sys.stdin.read()\n"
	    "def middle():\n    hot()\n"
	    "def outer():\n    middle()\n"
	    "outer()\n";
	static struct py_walk_thread th[4];
	char py[512], path[600], buf[4][256];
	struct fixture f = {0};
	struct python_mgr *m = NULL;
	struct python_mgr_stats st;
	struct profile_sample s;
	struct py_target t;
	struct py_offsets o;
	uint64_t words[8], user[4];
	struct sampler_sample smp;
	int in[2] = {-1, -1}, out[2] = {-1, -1};
	pid_t pid = -1;
	char line[16] = "";
	FILE *sf;

	snprintf(py, sizeof(py), "%s/versions/3.12.1/bin/python3.12",
		 getenv("PYENV_ROOT") ? getenv("PYENV_ROOT") : "/root/.pyenv");
	CHECKF(access(py, X_OK) == 0, "%s is missing (pyenv's interpreters are part of these "
				      "machines)", py);
	snprintf(path, sizeof(path), "%s/pysplice.py", unit_tmp_dir());
	CHECK((sf = fopen(path, "w")) != NULL);
	fputs(script, sf);
	fclose(sf);
	CHECK(pipe(in) == 0 && pipe(out) == 0);
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execl(py, py, path, (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	close(in[0]);
	close(out[1]);
	in[0] = out[1] = -1;
	/* Up to the newline: an unbuffered python (PYTHONUNBUFFERED=1) writes "ready"
	 * and "\n" apart. */
	for (size_t k = 0;
	     k + 1 < sizeof(line) && read(out[0], line + k, 1) == 1 && line[k] != '\n'; k++)
		;
	CHECKF(strcmp(line, "ready\n") == 0, "the script printed '%s'", line);
	CHECK(python_mgr__new(-1, &m) == 0);
	python_mgr__note(m, (uint32_t)pid, 1);
	for (int i = 0; i < 200 && python_mgr__next_due_ms(m) >= 0; i++) {
		python_mgr__work(m, 50);
		usleep(10000);
	}
	python_mgr__stats(m, &st);
	CHECK(st.processes == 1);
	CHECK(py_probe_target((uint32_t)pid, &t) == 0 && py_offsets_from_process(&t, &o) == 0);
	CHECK(py_walk(&t, &o, th, 4) >= 1 && th[0].n_frames >= 4);
	/* hot, middle | outer, <module>: leaf first, entries marked by hand */
	for (int i = 0; i < 4; i++) {
		words[2 * i] = th[0].frames[i].code;
		words[2 * i + 1] = th[0].frames[i].instr;
	}
	words[3] |= HEARTH_PY_FRAME_ENTRY;
	words[7] |= HEARTH_PY_FRAME_ENTRY;
	/* native: eval (leaf), a C frame, eval, a root frame (return addresses + 1) */
	user[0] = t.eval_start + 16;
	user[1] = 0x1000 + 1;
	user[2] = t.eval_start + 32 + 1;
	user[3] = 0x2000 + 1;
	CHECK(fixture_open(&f, &(struct sym_opts){0}) != NULL);
	collector__set_python(f.c, m);
	smp = (struct sampler_sample){.pid = (uint32_t)pid, .tid = (uint32_t)pid, .pstart = 1,
				      .comm = "python3.12", .n_user = 4, .user = user,
				      .n_python = 4, .python = words, .count = 3};
	CHECK(collector__add(f.c, &smp) == 0);
	CHECK((f.p = collector__build(f.c, 10000000, 0, 0)) != NULL);
	CHECK(profile__n_samples(f.p) == 1 && profile__sample(f.p, 0, &s) == 0);
	CHECKF(s.n_locs == 6, "%zu locations", s.n_locs);
	CHECK_STREQ(name_at(f.p, &s, 0, buf[0], sizeof(buf[0])), "pysplice.hot");
	CHECK_STREQ(name_at(f.p, &s, 1, buf[1], sizeof(buf[1])), "pysplice.middle");
	CHECK(strstr(name_at(f.p, &s, 2, buf[2], sizeof(buf[2])), "0x1000") != NULL);
	CHECK_STREQ(name_at(f.p, &s, 3, buf[3], sizeof(buf[3])), "pysplice.outer");
	CHECK_STREQ(name_at(f.p, &s, 4, buf[0], sizeof(buf[0])), "pysplice.<module>");
	CHECK(strstr(name_at(f.p, &s, 5, buf[1], sizeof(buf[1])), "0x2000") != NULL);
	{
		struct profile_location loc;
		struct profile_mapping map;
		struct profile_function fn;

		CHECK(profile__get_location(f.p, s.locs[0], &loc) == 0 && loc.n_lines == 1);
		CHECK(loc.lines[0].line == 4); /* sys.stdin.read() */
		CHECK(profile__get_function(f.p, loc.lines[0].function_id, &fn) == 0);
		CHECK_STREQ(fn.filename, path);
		CHECK(profile__get_mapping(f.p, loc.mapping_id, &map) == 0);
		CHECK_STREQ(map.file, PROFILE_PYTHON_MAPPING);
	}
	/* Without the manager, Python frames are dropped: the native stack as is. */
	profile__free(f.p);
	f.p = NULL;
	collector__set_python(f.c, NULL);
	CHECK(collector__add(f.c, &smp) == 0);
	CHECK((f.p = collector__build(f.c, 10000000, 0, 0)) != NULL);
	CHECK(profile__sample(f.p, 0, &s) == 0 && s.n_locs == 4);
cleanup:
	if (in[1] >= 0)
		close(in[1]);
	if (out[0] >= 0)
		close(out[0]);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	fixture_close(&f);
	python_mgr__free(m);
}
