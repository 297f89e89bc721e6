/*
 * Tests for src/python on real interpreters: pyenv's CPython 3.10-3.13 (under
 * $PYENV_ROOT, /root/.pyenv by default) and Debian's /usr/bin/python3.11 run a script
 * with known functions (outer -> Ünïcode.middle -> hot, blocked reading stdin, and a
 * worker thread w_outer -> w_hot_λ blocked reading a pipe). The probe, the offsets, the
 * reference walk, the thread-state slot and the names and lines resolve() gives are
 * checked against what the interpreter prints of itself (thread ids, co_lines()) and
 * against the script's text (marker comments give the expected lines). A missing
 * interpreter fails the test: CI has them all.
 */
#include "python/python_impl.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char script_text[] =
    "import os, sys, threading\n"
    "\n"
    "def w_hot_\xce\xbb(fd):\n"
    "    os.read(fd, 1)  #@w_hot\n"
    "\n"
    "def w_outer(fd):\n"
    "    w_hot_\xce\xbb(fd)  #@w_outer\n"
    "\n"
    "def hot():\n"
    "    os.read(0, 1)  #@hot\n"
    "\n"
    "class \xc3\x9cn\xc3\xaf"
    "code:\n"
    "    def middle(self):\n"
    "        hot()  #@middle\n"
    "\n"
    "def outer():\n"
    "    \xc3\x9cn\xc3\xaf"
    "code().middle()  #@outer\n"
    "\n"
    "def lines_fn(n):\n"
    "    total = 0\n"
    "    for i in range(n):\n"
    "        if i % 2:\n"
    "            total += i\n"
    "        else:\n"
    "            total -= 1\n"
    "    try:\n"
    "        total //= n\n"
    "    except ZeroDivisionError:\n"
    "        total = -1\n"
    "    return [total,\n"
    "            n]\n"
    "\n"
    "r2, w2 = os.pipe()\n"
    "t = threading.Thread(target=w_outer, args=(r2,), name='worker')\n"
    "t.start()\n"
    "v = sys.version_info\n"
    "print('version', v.major, v.minor, v.micro)\n"
    "code = lines_fn.__code__\n"
    "print('code', id(code), code.co_firstlineno)\n"
    "for s, e, l in code.co_lines():\n"
    "    print('range', s, e, -1 if l is None else l)\n"
    "print('thread main', threading.get_ident(), threading.get_native_id())\n"
    "print('thread worker', t.ident, t.native_id)\n"
    "print('ready', flush=True)\n"
    "outer()  #@module\n"
    "os.write(w2, b'x')\n"
    "t.join()\n";

#define PY_MAX_RANGES 256

/* CHECK_STREQ of a char array (its address is never NULL). */
#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *str_ = (a);                                                            \
		CHECK_STREQ(str_, b);                                                              \
	} while (0)

/* A running script and what it printed. */
struct pyrun {
	pid_t pid;
	int in_fd; /* its stdin: closing it lets hot() return */
	FILE *out;
	uint32_t version; /* sys.version_info as major << 16 | minor << 8 | micro */
	uint64_t code;	  /* id(lines_fn.__code__) */
	int64_t firstlineno;
	size_t n_ranges;
	struct {
		int64_t start, end, line;
	} ranges[PY_MAX_RANGES];
	uint64_t ident[2], native[2]; /* main, worker */
};

static const char *pyenv_root(void)
{
	const char *r = getenv("PYENV_ROOT");

	return r && r[0] ? r : "/root/.pyenv";
}

/* The interpreters every test runs on (a missing one fails the test). */
static const struct {
	const char *rel; /* under pyenv's root, or absolute */
	uint16_t layout;
} interpreters[] = {
    {"versions/3.10.13/bin/python3.10", HEARTH_PY_LAYOUT_310},
    {"versions/3.11.7/bin/python3.11", HEARTH_PY_LAYOUT_311},
    {"versions/3.12.1/bin/python3.12", HEARTH_PY_LAYOUT_312},
    {"versions/3.13.0/bin/python3.13", HEARTH_PY_LAYOUT_313},
    {"/usr/bin/python3.11", HEARTH_PY_LAYOUT_311},
};
#define N_INTERPRETERS (sizeof(interpreters) / sizeof(interpreters[0]))

static void interpreter_path(size_t i, char *buf, size_t len)
{
	if (interpreters[i].rel[0] == '/')
		snprintf(buf, len, "%s", interpreters[i].rel);
	else
		snprintf(buf, len, "%s/%s", pyenv_root(), interpreters[i].rel);
}

static const char *script_path(void)
{
	static char path[300];

	if (!path[0]) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/hearth_pyprobe.py", unit_tmp_dir());
		f = fopen(path, "w");
		if (!f || fputs(script_text, f) < 0 || fclose(f) != 0)
			path[0] = '\0';
	}
	return path;
}

/* The line of the script holding "#@tag". */
static int64_t marker_line(const char *tag)
{
	char want[64];
	const char *p;
	int64_t line = 1;

	snprintf(want, sizeof(want), "#@%s\n", tag);
	p = strstr(script_text, want);
	if (!p)
		return -1;
	for (const char *q = script_text; q < p; q++)
		line += *q == '\n';
	return line;
}

/* Starts argv with stdin and stdout piped to us. 0 or -1. */
static int spawn(char *const argv[], pid_t *pid, int *in_fd, FILE **out)
{
	int in[2], outp[2];

	if (pipe(in))
		return -1;
	if (pipe(outp)) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	*pid = fork();
	if (*pid == 0) {
		dup2(in[0], 0);
		dup2(outp[1], 1);
		close(in[1]);
		close(outp[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(outp[1]);
	if (*pid < 0) {
		close(in[1]);
		close(outp[0]);
		return -1;
	}
	*in_fd = in[1];
	*out = fdopen(outp[0], "r");
	return *out ? 0 : -1;
}

static void pyrun_stop(struct pyrun *r)
{
	if (r->in_fd > 0)
		close(r->in_fd);
	if (r->out)
		fclose(r->out);
	if (r->pid > 0) {
		/* a clean exit within 2 s (hot returns, the worker is released), else kill */
		for (int i = 0; i < 200; i++) {
			if (waitpid(r->pid, NULL, WNOHANG) == r->pid) {
				r->pid = 0;
				break;
			}
			usleep(10000);
		}
		if (r->pid > 0) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, NULL, 0);
		}
	}
	memset(r, 0, sizeof(*r));
}

/* Runs the script under interpreter i and reads what it prints up to "ready". */
static int pyrun_start(size_t i, struct pyrun *r)
{
	char python[PATH_MAX], line[256];
	char *argv[] = {python, "-E", (char *)script_path(), NULL};

	memset(r, 0, sizeof(*r));
	interpreter_path(i, python, sizeof(python));
	if (access(python, X_OK) != 0) {
		fprintf(stderr, "  %s is missing (pyenv's versions are needed here)\n", python);
		return -1;
	}
	if (!argv[2][0] || spawn(argv, &r->pid, &r->in_fd, &r->out))
		return -1;
	while (fgets(line, sizeof(line), r->out)) {
		unsigned a, b, c;
		uint64_t x, y;
		long long s, e, l;

		if (sscanf(line, "version %u %u %u", &a, &b, &c) == 3)
			r->version = a << 16 | b << 8 | c;
		else if (sscanf(line, "code %" SCNu64 " %lld", &x, &l) == 2) {
			r->code = x;
			r->firstlineno = l;
		} else if (sscanf(line, "range %lld %lld %lld", &s, &e, &l) == 3 &&
			   r->n_ranges < PY_MAX_RANGES) {
			r->ranges[r->n_ranges].start = s;
			r->ranges[r->n_ranges].end = e;
			r->ranges[r->n_ranges++].line = l;
		} else if (sscanf(line, "thread main %" SCNu64 " %" SCNu64, &x, &y) == 2) {
			r->ident[0] = x;
			r->native[0] = y;
		} else if (sscanf(line, "thread worker %" SCNu64 " %" SCNu64, &x, &y) == 2) {
			r->ident[1] = x;
			r->native[1] = y;
		} else if (strcmp(line, "ready\n") == 0) {
			return 0;
		}
	}
	fprintf(stderr, "  %s: the script ended before it was ready\n", python);
	return -1;
}

/* The names (qualname) of a walked thread's frames, read from the process. */
static int frame_qualname(const struct pyrun *r, const struct py_target *t,
			  const struct py_offsets *o, const struct py_walk_frame *f, char *buf,
			  size_t len, int64_t *line)
{
	struct py_code_info info;
	int err = py_read_code((uint32_t)r->pid, o, t->code_type, f->code, &info);

	if (err)
		return err;
	snprintf(buf, len, "%s", info.qualname);
	*line = py_code_line(o, &info, f->code, f->instr);
	py_code_info__fini(&info);
	return 0;
}

/* Whether the thread's innermost frames are these (leaf first), at these lines. */
static bool thread_is(const struct pyrun *r, const struct py_target *t, const struct py_offsets *o,
		      const struct py_walk_thread *th, const char *const *names,
		      const char *const *tags, size_t n)
{
	if (th->n_frames < n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char q[PYTHON_NAME_MAX];
		int64_t line;

		if (frame_qualname(r, t, o, &th->frames[i], q, sizeof(q), &line) ||
		    strcmp(q, names[i]) != 0 || line != marker_line(tags[i]))
			return false;
	}
	return true;
}

static const char *const main_names[] = {"hot",
					 "\xc3\x9cn\xc3\xaf"
					 "code.middle",
					 "outer", "<module>"};
/* 3.10's code objects have co_name only: no class in the name */
static const char *const main_names_310[] = {"hot", "middle", "outer", "<module>"};
static const char *const main_tags[] = {"hot", "middle", "outer", "module"};
static const char *const worker_names[] = {"w_hot_\xce\xbb", "w_outer"};
static const char *const worker_tags[] = {"w_hot", "w_outer"};

/* Walks until both threads are blocked where the script blocks them (at most 5 s).
 * Index of the main and worker threads in *th, or -1. */
static int walk_until_blocked(const struct pyrun *r, const struct py_target *t,
			      const struct py_offsets *o, struct py_walk_thread *th, size_t max,
			      int *main_i, int *worker_i)
{
	for (int tries = 0; tries < 500; tries++) {
		int n = py_walk(t, o, th, max);

		*main_i = *worker_i = -1;
		for (int i = 0; i < n; i++) {
			if (thread_is(r, t, o, &th[i],
				      o->layout == HEARTH_PY_LAYOUT_310 ? main_names_310
									: main_names,
				      main_tags, 4))
				*main_i = i;
			if (thread_is(r, t, o, &th[i], worker_names, worker_tags, 2))
				*worker_i = i;
		}
		if (*main_i >= 0 && *worker_i >= 0)
			return n;
		if (tries == 499) /* a failing test shows what it saw */
			for (int i = 0; i < n; i++)
				for (size_t k = 0; k < th[i].n_frames; k++) {
					char q[256] = "?";
					int64_t line = 0;

					frame_qualname(r, t, o, &th[i].frames[k], q, sizeof(q),
						       &line);
					fprintf(stderr,
						"thread %d frame %zu %s:%" PRId64 " instr %" PRIx64
						"\n",
						i, k, q, line, th[i].frames[k].instr);
				}
		usleep(10000);
	}
	return -1;
}

TEST(python_probe_finds_each_version)
{
	for (size_t i = 0; i < N_INTERPRETERS; i++) {
		struct pyrun r;
		struct py_target t;
		struct py_offsets table, o;
		int err;

		CHECK(pyrun_start(i, &r) == 0);
		err = py_probe_target((uint32_t)r.pid, &t);
		CHECKF(err == 0, "%s: %s", interpreters[i].rel, python_strerror(err));
		CHECKF(t.version == r.version, "%s: version %06x, want %06x", interpreters[i].rel,
		       t.version, r.version);
		CHECK(t.runtime && t.code_type && t.eval_start && t.eval_end > t.eval_start);
		err = py_offsets_from_process(&t, &o);
		CHECKF(err == 0, "%s: %s", interpreters[i].rel, python_strerror(err));
		CHECK(o.layout == interpreters[i].layout);
		/* the table agrees with what the binary says (tp_members; 3.13's debug
		 * offsets): every field */
		CHECK(py_offsets_for_version(t.version, &table) == 0);
		CHECKF(memcmp(&table, &o, sizeof(o)) == 0, "%s: the table differs from the binary",
		       interpreters[i].rel);
	cleanup:
		pyrun_stop(&r);
		if (*unit_failed)
			return;
	}
}

TEST(python_walk_threads_and_tss_slot)
{
	static struct py_walk_thread th[8];

	for (size_t i = 0; i < N_INTERPRETERS; i++) {
		struct pyrun r;
		struct py_target t;
		struct py_offsets o;
		struct hearth_py_proc desc;
		int n, mi, wi;

		CHECK(pyrun_start(i, &r) == 0);
		CHECK(py_probe_target((uint32_t)r.pid, &t) == 0);
		CHECK(py_offsets_from_process(&t, &o) == 0);
		n = walk_until_blocked(&r, &t, &o, th, 8, &mi, &wi);
		CHECKF(n >= 2, "%s: no thread blocked in hot/w_hot", interpreters[i].rel);
		/* threads are the ones the script names */
		CHECK(th[mi].thread_id == r.ident[0] && th[wi].thread_id == r.ident[1]);
		if (o.ts_native_thread_id != PY_NO_OFF)
			CHECK(th[mi].native_thread_id == r.native[0] &&
			      th[wi].native_thread_id == r.native[1]);
		/* outer frame of each evaluation call: every frame in 3.10; in 3.11+ the
		 * frames called from Python code share their caller's evaluation loop */
		CHECK(th[mi].frames[th[mi].n_frames - 1].entry);
		if (o.layout == HEARTH_PY_LAYOUT_310)
			CHECK(th[mi].frames[0].entry);
		else
			CHECK(!th[mi].frames[0].entry);
		/* the word at the thread pointer + tss_slot is that thread's PyThreadState */
		CHECK(py_describe(&t, &o, 1, &desc) == 0);
		for (int k = 0; k < 2; k++) {
			const struct py_walk_thread *w = &th[k ? wi : mi];
			uint64_t ts = 0;

			CHECK(py_read((uint32_t)r.pid, w->thread_id + desc.tss_slot, &ts, 8) == 0);
			CHECKF(ts == w->tstate, "%s: tss gives %" PRIx64 ", want %" PRIx64,
			       interpreters[i].rel, ts, w->tstate);
		}
		CHECK(desc.layout == o.layout && desc.version == t.version &&
		      desc.code_type == t.code_type && desc.f_instr == o.f_instr);
	cleanup:
		pyrun_stop(&r);
		if (*unit_failed)
			return;
	}
}

/* Runs the manager's work until a process is described (at most 2 s). */
static int mgr_wait(struct python_mgr *m)
{
	struct python_mgr_stats st;

	for (int i = 0; i < 200; i++) {
		int n = python_mgr__work(m, 50);

		if (n < 0)
			return n;
		python_mgr__stats(m, &st);
		if (st.processes)
			return 0;
		if (python_mgr__next_due_ms(m) < 0)
			return -ENOENT; /* given up on */
		usleep(10000);
	}
	return -ETIMEDOUT;
}

static int mgr_describe(struct python_mgr *m, uint32_t pid)
{
	python_mgr__note(m, pid, 1);
	return mgr_wait(m);
}

TEST(python_resolve_names_and_lines)
{
	static struct py_walk_thread th[8];
	struct python_mgr *m = NULL;

	for (size_t i = 0; i < N_INTERPRETERS; i++) {
		struct pyrun r;
		struct py_target t;
		struct py_offsets o;
		struct python_frame f;
		struct python_mgr_stats st;
		int mi, wi, err;
		uint32_t pid;

		CHECK(pyrun_start(i, &r) == 0);
		pid = (uint32_t)r.pid;
		CHECK(python_mgr__new(-1, &m) == 0);
		CHECK(mgr_describe(m, pid) == 0);
		CHECK(py_probe_target(pid, &t) == 0 && py_offsets_from_process(&t, &o) == 0);
		CHECK(walk_until_blocked(&r, &t, &o, th, 8, &mi, &wi) >= 2);
		for (size_t k = 0; k < 4; k++) {
			const struct py_walk_frame *w = &th[mi].frames[k];
			char want[PYTHON_NAME_MAX];

			snprintf(
			    want, sizeof(want), "hearth_pyprobe.%s",
			    (o.layout == HEARTH_PY_LAYOUT_310 ? main_names_310 : main_names)[k]);
			CHECK(python_mgr__resolve(m, pid, 1, w->code,
						  w->instr | (w->entry ? HEARTH_PY_FRAME_ENTRY : 0),
						  &f) == 0);
			CHECK_STR(f.name, want);
			CHECK_STR(f.file, script_path());
			CHECKF(f.line == marker_line(main_tags[k]), "%s: %s line %" PRId64,
			       interpreters[i].rel, f.name, f.line);
		}
		CHECK(python_mgr__resolve(m, pid, 1, th[wi].frames[0].code, th[wi].frames[0].instr,
					  &f) == 0);
		CHECK_STR(f.name, "hearth_pyprobe.w_hot_\xce\xbb");
		CHECK(f.line == marker_line("w_hot"));
		/* a cached frame resolves the same again */
		CHECK(python_mgr__resolve(m, pid, 1, th[wi].frames[0].code, th[wi].frames[0].instr,
					  &f) == 0);
		CHECK_STR(f.name, "hearth_pyprobe.w_hot_\xce\xbb");
		/* the evaluation loop's range, and nothing outside it */
		CHECK(python_mgr__is_eval(m, pid, 1, t.eval_start));
		CHECK(python_mgr__is_eval(m, pid, 1, t.eval_end - 1));
		CHECK(!python_mgr__is_eval(m, pid, 1, t.eval_end));
		CHECK(!python_mgr__is_eval(m, pid, 2, t.eval_start)); /* another process */
		/* bad input: not a code object (unmapped, the runtime's address), another
		 * start time, an undescribed pid */
		CHECK(python_mgr__resolve(m, pid, 1, 8, 0, &f) == -EIO);
		CHECK(python_mgr__resolve(m, pid, 1, t.runtime, 0, &f) == -EIO);
		CHECK(python_mgr__resolve(m, pid, 1, t.code_type, 0, &f) == -EIO);
		CHECK(python_mgr__resolve(m, pid, 2, th[mi].frames[0].code, 0, &f) == -ENOENT);
		CHECK(python_mgr__resolve(m, pid + 100000, 1, th[mi].frames[0].code, 0, &f) ==
		      -ENOENT);
		python_mgr__stats(m, &st);
		CHECK(st.processes == 1 && st.code_cached == 5 && st.code_failed == 3);
		/* exited: what was read stays until forget; anything else is -EIO */
		pyrun_stop(&r);
		python_mgr__exit(m, pid);
		python_mgr__stats(m, &st);
		CHECK(st.processes == 0);
		err = python_mgr__resolve(m, pid, 1, th[mi].frames[0].code, 0, &f);
		CHECKF(err == 0, "%s: after exit: %s", interpreters[i].rel, python_strerror(err));
		CHECK_STR(f.name, "hearth_pyprobe.hot");
		/* a sample taken while it exits announces it again (same start time):
		 * what was learnt stays; only an exec starts over */
		python_mgr__note(m, pid, 1);
		CHECK(python_mgr__next_due_ms(m) == -1);
		CHECK(python_mgr__resolve(m, pid, 1, th[mi].frames[0].code, 0, &f) == 0);
		CHECK(python_mgr__is_eval(m, pid, 1, t.eval_start));
		CHECK(python_mgr__resolve(m, pid, 1, th[mi].frames[3].code + 16, 0, &f) == -EIO);
		/* forgetting another process that had this pid changes nothing */
		python_mgr__forget(m, pid, 7);
		CHECK(python_mgr__resolve(m, pid, 1, th[mi].frames[0].code, 0, &f) == 0);
		python_mgr__forget(m, pid, 1);
		CHECK(python_mgr__resolve(m, pid, 1, th[mi].frames[0].code, 0, &f) == -ENOENT);
	cleanup:
		pyrun_stop(&r);
		python_mgr__free(m);
		m = NULL;
		if (*unit_failed)
			return;
	}
}

TEST(python_line_tables_match_co_lines)
{
	for (size_t i = 0; i < N_INTERPRETERS; i++) {
		struct pyrun r;
		struct py_target t;
		struct py_offsets o;
		struct py_code_info info = {0};
		size_t checked = 0;

		CHECK(pyrun_start(i, &r) == 0);
		CHECK(py_probe_target((uint32_t)r.pid, &t) == 0);
		CHECK(py_offsets_from_process(&t, &o) == 0);
		CHECK(py_read_code((uint32_t)r.pid, &o, t.code_type, r.code, &info) == 0);
		CHECK_STR(info.qualname, "lines_fn");
		CHECK(info.firstlineno == r.firstlineno);
		CHECK(r.n_ranges > 8);
		for (size_t k = 0; k < r.n_ranges; k++) {
			for (int64_t off = r.ranges[k].start; off < r.ranges[k].end; off += 2) {
				int64_t got = o.layout == HEARTH_PY_LAYOUT_310
						  ? py_line_310(info.linetable, info.linetable_len,
								info.firstlineno, off)
						  : py_line_311(info.linetable, info.linetable_len,
								info.firstlineno, off);
				uint64_t instr = o.layout == HEARTH_PY_LAYOUT_310
						     ? (uint64_t)(off / 2)
						     : r.code + o.co_code_adaptive + (uint64_t)off;
				int64_t want = r.ranges[k].line;

				CHECKF(got == want,
				       "%s: offset %" PRId64 ": line %" PRId64
				       ", co_lines says %" PRId64,
				       interpreters[i].rel, off, got, want);
				/* a frame's line: the same, firstlineno where there is none */
				CHECK(py_code_line(&o, &info, r.code, instr) ==
				      (want < 0 ? info.firstlineno : want));
				checked++;
			}
		}
		CHECK(checked > 20);
		/* past the end, before the start */
		CHECK(py_code_line(&o, &info, r.code,
				   o.layout == HEARTH_PY_LAYOUT_310 ? 0xffffffffu : r.code) ==
		      info.firstlineno);
	cleanup:
		py_code_info__fini(&info);
		pyrun_stop(&r);
		if (*unit_failed)
			return;
	}
}

TEST(python_line_tables_bad_input)
{
	static const uint8_t truncated[] = {0xf0 | 0x80, 0x41}; /* long form cut short */
	static const uint8_t not_entry[] = {0x01, 0x02};
	static const uint8_t odd[] = {4, 1, 6};

	/* long form, a line delta of 2^41 - 1: no int line, and no overflow in the sum */
	static const uint8_t huge[] = {0xf0, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x3f, 0, 0, 0};

	CHECK(py_line_311(huge, sizeof(huge), 10, 0) == -1);
	CHECK(py_line_311(truncated, sizeof(truncated), 10, 0) == -1);
	CHECK(py_line_311(not_entry, sizeof(not_entry), 10, 0) == -1);
	CHECK(py_line_311(NULL, 0, 10, 0) == -1);
	CHECK(py_line_311(not_entry, sizeof(not_entry), 10, -2) == -1);
	CHECK(py_line_310(odd, sizeof(odd), 10, 2) == 11);
	CHECK(py_line_310(odd, sizeof(odd), 10, 4) == -1); /* the lone byte is no pair */
cleanup:;
}

TEST(python_frame_names)
{
	char buf[PYTHON_NAME_MAX];

	py_frame_name("/srv/app/worker.py", "Job.run", buf, sizeof(buf));
	CHECK_STR(buf, "worker.Job.run");
	py_frame_name("/usr/lib/python3/json/__init__.py", "loads", buf, sizeof(buf));
	CHECK_STR(buf, "json.loads");
	py_frame_name("/srv/app/worker.py", "<module>", buf, sizeof(buf));
	CHECK_STR(buf, "worker.<module>");
	py_frame_name("<frozen importlib._bootstrap>", "_find_and_load", buf, sizeof(buf));
	CHECK_STR(buf, "<frozen importlib._bootstrap>._find_and_load");
	py_frame_name("__init__.py", "f", buf, sizeof(buf));
	CHECK_STR(buf, "__init__.f");
	py_frame_name("", "f", buf, sizeof(buf));
	CHECK_STR(buf, "f");
cleanup:;
}

static pthread_key_t other_key;

static void *tss_thread(void *arg)
{
	uint64_t off = *(uint64_t *)arg;
	uintptr_t tp = (uintptr_t)pthread_self();

	pthread_setspecific(other_key, &other_key);
	return *(void **)(tp + off) == (void *)&other_key ? arg : NULL;
}

TEST(python_tss_offset_in_own_threads)
{
	pthread_key_t key;
	pthread_t thr;
	uint64_t off = 0;
	void *ret = NULL;
	int made = 0;

	CHECK(pthread_key_create(&key, NULL) == 0);
	made = 1;
	CHECK(pthread_setspecific(key, &key) == 0);
	CHECK(py_tss_offset((uint32_t)key, &off) == 0);
	CHECK(*(void **)((uintptr_t)pthread_self() + off) == (void *)&key);
	/* another thread, another key */
	CHECK(pthread_key_create(&other_key, NULL) == 0);
	made = 2;
	CHECK(py_tss_offset((uint32_t)other_key, &off) == 0);
	CHECK(pthread_create(&thr, NULL, tss_thread, &off) == 0);
	CHECK(pthread_join(thr, &ret) == 0 && ret == &off);
	/* glibc's second level is not followed */
	CHECK(py_tss_offset(32, &off) == -PYTHON_E_TSS_KEY);
cleanup:
	if (made > 1)
		pthread_key_delete(other_key);
	if (made)
		pthread_key_delete(key);
}

/* Starts argv with a stdin pipe we hold (the program waits on it) and waits, at
 * most 10 s, for the line "ready" the program prints once it has loaded and
 * initialised: a mapped libc is not enough (an interpreter probed while ld.so
 * or its own start-up still runs can look unsupported for the wrong reason). */
static int hold(char *const argv[], pid_t *pid, int *in_fd, FILE **out)
{
	char line[512];
	struct pollfd pfd;

	if (spawn(argv, pid, in_fd, out))
		return -1;
	pfd.fd = fileno(*out);
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 10000) != 1 || !fgets(line, sizeof(line), *out))
		return -1;
	return strcmp(line, "ready\n") == 0 ? 0 : -1;
}

static void release(pid_t pid, int in_fd, FILE *out)
{
	if (in_fd > 0)
		close(in_fd);
	if (out)
		fclose(out);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

TEST(python_not_python_and_unsupported)
{
	char py39[PATH_MAX], py27[PATH_MAX];
	char *sleep_argv[] = {"/bin/sh", "-c", "echo ready; read x", NULL};
	char *py39_argv[] = {py39, "-c", "import sys; print('ready'); sys.stdout.flush(); sys.stdin.read()", NULL};
	char *py27_argv[] = {py27, "-c", "import sys; print('ready'); sys.stdout.flush(); sys.stdin.read()", NULL};
	pid_t pid[3] = {0};
	int in_fd[3] = {0};
	FILE *out[3] = {0};
	struct py_target t;
	struct python_mgr *m = NULL;
	struct python_mgr_stats st;

	snprintf(py39, sizeof(py39), "%s/versions/3.9.18/bin/python3.9", pyenv_root());
	snprintf(py27, sizeof(py27), "%s/versions/2.7.18/bin/python2.7", pyenv_root());
	CHECKF(access(py39, X_OK) == 0 && access(py27, X_OK) == 0, "%s, %s missing", py39, py27);
	CHECK(hold(sleep_argv, &pid[0], &in_fd[0], &out[0]) == 0);
	CHECK(hold(py39_argv, &pid[1], &in_fd[1], &out[1]) == 0);
	CHECK(hold(py27_argv, &pid[2], &in_fd[2], &out[2]) == 0);
	CHECK(py_probe_target((uint32_t)pid[0], &t) == -PYTHON_E_NOT_PYTHON);
	CHECK(py_probe_target((uint32_t)pid[1], &t) == -PYTHON_E_UNSUPPORTED);
	CHECKF(t.version == 0x030912, "3.9.18 read as %06x", t.version);
	CHECK(py_probe_target((uint32_t)pid[2], &t) == -PYTHON_E_UNSUPPORTED);
	CHECK(t.version >> 8 == 0x0207);
	/* the manager counts them, publishes nothing, keeps nothing queued */
	CHECK(python_mgr__new(-1, &m) == 0);
	for (int i = 0; i < 3; i++)
		python_mgr__note(m, (uint32_t)pid[i], 1);
	CHECK(python_mgr__next_due_ms(m) == 0);
	CHECK(python_mgr__work(m, 1000) == 3);
	python_mgr__stats(m, &st);
	CHECK(st.processes == 0 && st.probed == 3 && st.unsupported == 2 && st.not_ready == 0);
	CHECK(python_mgr__next_due_ms(m) == -1);
	CHECK(!python_mgr__is_eval(m, (uint32_t)pid[1], 1, 0x1000));
cleanup:
	python_mgr__free(m);
	for (int i = 0; i < 3; i++)
		release(pid[i], in_fd[i], out[i]);
}

TEST(python_dead_process)
{
	struct py_target t;
	struct python_mgr *m = NULL;
	struct python_frame f;
	struct python_mgr_stats st;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	CHECK(pid > 0);
	CHECK(waitpid(pid, NULL, 0) == pid);
	CHECK(py_probe_target((uint32_t)pid, &t) == -ESRCH);
	CHECK(python_mgr__new(-1, &m) == 0);
	python_mgr__note(m, (uint32_t)pid, 1);
	CHECK(python_mgr__work(m, 100) == 1);
	python_mgr__stats(m, &st);
	CHECK(st.processes == 0 && python_mgr__next_due_ms(m) == -1);
	CHECK(python_mgr__resolve(m, (uint32_t)pid, 1, 0x1000, 0, &f) == -ENOENT);
	/* noted then gone before the probe: nothing left */
	python_mgr__note(m, (uint32_t)pid, 1);
	python_mgr__exit(m, (uint32_t)pid);
	CHECK(python_mgr__next_due_ms(m) == -1);
cleanup:
	python_mgr__free(m);
}

/* Starts argv stopped right after its exec (ptrace), before ld.so has mapped its
 * libraries or the interpreter has initialised: what the sampler sees of a process
 * started after the agent. */
static pid_t spawn_stopped_at_exec(char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return -1;
	}
	return pid;
}

TEST(python_probe_retries_until_ready)
{
	char py312[PATH_MAX];
	char *debian_argv[] = {"/usr/bin/python3.11", "-c", "import time; time.sleep(30)", NULL};
	char *pyenv_argv[] = {py312, "-c", "import time; time.sleep(30)", NULL};
	char *const *argvs[] = {debian_argv, pyenv_argv};
	struct python_mgr *m = NULL;
	pid_t pid = -1;

	snprintf(py312, sizeof(py312), "%s/versions/3.12.1/bin/python3.12", pyenv_root());
	for (int k = 0; k < 2; k++) {
		struct python_mgr_stats st;
		int err;

		CHECKF(access(argvs[k][0], X_OK) == 0, "%s missing", argvs[k][0]);
		pid = spawn_stopped_at_exec(argvs[k]);
		CHECK(pid > 0);
		CHECK(python_mgr__new(-1, &m) == 0);
		python_mgr__note(m, (uint32_t)pid, 1);
		CHECK(python_mgr__work(m, 100) == 1);
		python_mgr__stats(m, &st);
		/* static python3.11: its interpreter not initialised; pyenv's: libpython
		 * not mapped yet. Either way it is tried again soon, not given up */
		CHECK(st.processes == 0 && st.probed == 1);
		if (k == 0)
			CHECK(st.not_ready == 1);
		err = python_mgr__next_due_ms(m);
		CHECKF(err > 0 && err <= 10, "next probe in %d ms", err);
		CHECK(ptrace(PTRACE_DETACH, pid, NULL, NULL) == 0);
		err = mgr_wait(m); /* on the backoff's schedule */
		CHECKF(err == 0, "%s: %s", argvs[k][0], python_strerror(err));
		python_mgr__stats(m, &st);
		CHECK(st.processes == 1 && st.probed >= 2 && st.unsupported == 0);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
		python_mgr__free(m);
		m = NULL;
	}
cleanup:
	python_mgr__free(m);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

TEST(python_resolve_notices_reused_address)
{
	struct python_mgr *m = NULL;

	for (size_t i = 0; i < N_INTERPRETERS; i++) {
		struct pyrun r;
		struct py_target t;
		struct py_offsets o;
		struct python_frame f;
		struct python_mgr_stats st;
		uint64_t before_start;
		int32_t moved;
		struct iovec local = {&moved, sizeof(moved)}, remote;

		CHECK(pyrun_start(i, &r) == 0);
		CHECK(python_mgr__new(-1, &m) == 0);
		CHECK(mgr_describe(m, (uint32_t)r.pid) == 0);
		CHECK(py_probe_target((uint32_t)r.pid, &t) == 0 &&
		      py_offsets_from_process(&t, &o) == 0);
		/* a frame that has not started yet: its line is co_firstlineno */
		before_start = o.layout == HEARTH_PY_LAYOUT_310 ? 0xffffffffu : r.code;
		CHECK(python_mgr__resolve(m, (uint32_t)r.pid, 1, r.code, before_start, &f) == 0);
		CHECK_STR(f.name, "hearth_pyprobe.lines_fn");
		CHECK(f.line == r.firstlineno);
		/* another code object at the same address, as far as the checksum can tell:
		 * co_firstlineno changes under the cache's feet */
		moved = (int32_t)r.firstlineno + 1000;
		remote.iov_base = (void *)(uintptr_t)(r.code + o.co_firstlineno);
		remote.iov_len = sizeof(moved);
		CHECK(process_vm_writev(r.pid, &local, 1, &remote, 1, 0) == sizeof(moved));
		CHECK(python_mgr__resolve(m, (uint32_t)r.pid, 1, r.code, before_start, &f) == 0);
		CHECKF(f.line == r.firstlineno + 1000, "%s: line %" PRId64 " from a stale entry",
		       interpreters[i].rel, f.line);
		python_mgr__stats(m, &st);
		CHECK(st.code_cached == 2 && st.code_failed == 0);
	cleanup:
		pyrun_stop(&r);
		python_mgr__free(m);
		m = NULL;
		if (*unit_failed)
			return;
	}
}
