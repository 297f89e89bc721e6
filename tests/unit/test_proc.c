/*
 * Tests for src/proc: the maps and stat parsers, the process table on a fake /proc tree
 * (pid reuse, exec, re-read on miss, exit and eviction), and one real child process.
 */
#include "base/membudget.h"
#include "proc/proc.h"
#include "unit.h"

#include <errno.h>
#include <gnu/libc-version.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t ns_per_tick(void)
{
	return 1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK);
}

/* Writes a printf-formatted file, creating parent directories. 0 or -1. */
static int write_file(const char *path, const char *fmt, ...)
{
	char dir[512], cmd[600];
	va_list ap;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", dir);
	if (system(cmd) != 0 || !(f = fopen(path, "w")))
		return -1;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	return fclose(f) == 0 ? 0 : -1;
}

/* A /proc/PID/stat line with the given comm and starttime (field 22). */
static int write_stat(const char *root, uint32_t pid, const char *comm, uint64_t ticks)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%u/stat", root, pid);
	return write_file(path,
			  "%u (%s) S 1 %u %u 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %" PRIu64
			  " 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n",
			  pid, comm, pid, pid, ticks);
}

static int write_maps(const char *root, uint32_t pid, const char *maps)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%u/maps", root, pid);
	return write_file(path, "%s", maps);
}

/* A fake root/PID with stat, maps, cgroup and an exe link. */
static int fake_process(const char *root, uint32_t pid, const char *comm, uint64_t ticks,
			const char *maps)
{
	char path[512];

	if (write_stat(root, pid, comm, ticks) || write_maps(root, pid, maps))
		return -1;
	snprintf(path, sizeof(path), "%s/%u/cgroup", root, pid);
	if (write_file(path, "1:name=systemd:/old\n0::/system.slice/fake.service\n"))
		return -1;
	snprintf(path, sizeof(path), "%s/%u/exe", root, pid);
	unlink(path);
	return symlink("/usr/bin/fake", path);
}

/* A fresh directory under the test tmp dir for one test's fake /proc. */
static const char *fake_root(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", unit_tmp_dir(), name);
	mkdir(buf, 0755);
	return buf;
}

static const char maps_a[] =
	"1000-2000 r--p 00000000 08:01 42                         /usr/bin/fake\n"
	"2000-5000 r-xp 00001000 08:01 42                         /usr/bin/fake\n"
	"7000-8000 rw-p 00000000 00:00 0 \n"
	"9000-a000 r-xp 00000000 08:01 43                         /lib/libgone.so (deleted)\n"
	"7ffd0000-7ffd2000 r-xp 00000000 00:00 0                  [vdso]\n";

TEST(maps_line_normal)
{
	struct proc_mapping m = { 0 };

	CHECK(proc_parse_maps_line("55d4a1a00000-55d4a1a22000 r-xp 00002000 fd:01 1234567    "
				   "                /usr/bin/cat\n",
				   &m) == 0);
	CHECK(m.start == 0x55d4a1a00000 && m.end == 0x55d4a1a22000);
	CHECK(m.pgoff == 0x2000 && m.dev_major == 0xfd && m.dev_minor == 1);
	CHECK(m.inode == 1234567 && m.exec && !m.deleted);
	CHECK_STREQ(m.path, "/usr/bin/cat");
	CHECK(proc_mapping__file_off(&m, 0x55d4a1a00010) == 0x2010);
	CHECK(proc_mapping__dev(&m) == makedev(0xfd, 1));
cleanup:
	proc_mapping__fini(&m);
}

TEST(maps_line_anonymous_and_pseudo)
{
	static const char *lines[] = {
		"7f0000000000-7f0000001000 rw-p 00000000 00:00 0",
		"7f0000000000-7f0000001000 rw-p 00000000 00:00 0\n",
		"7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n",
	};
	struct proc_mapping m = { 0 };

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		CHECKF(proc_parse_maps_line(lines[i], &m) == 0, "line %zu", i);
		CHECK(!m.exec && m.inode == 0);
		CHECK_STREQ(m.path, "");
		proc_mapping__fini(&m);
	}
	CHECK(proc_parse_maps_line("7ffd5e5f0000-7ffd5e5f2000 r-xp 00000000 00:00 0          "
				   "                [vdso]\n",
				   &m) == 0);
	CHECK(m.exec);
	CHECK_STREQ(m.path, "[vdso]");
	proc_mapping__fini(&m);
	CHECK(proc_parse_maps_line("7ffd5e5f0000-7ffd5e5f2000 rw-p 00000000 00:00 0 [anon:my name]",
				   &m) == 0);
	CHECK_STREQ(m.path, "[anon:my name]");
cleanup:
	proc_mapping__fini(&m);
}

TEST(maps_line_spaces_and_deleted)
{
	struct proc_mapping m = { 0 };

	CHECK(proc_parse_maps_line("1000-2000 r-xp 00000000 08:01 7      /tmp/my lib/lib x 1.so\n",
				   &m) == 0);
	CHECK_STREQ(m.path, "/tmp/my lib/lib x 1.so");
	CHECK(!m.deleted);
	proc_mapping__fini(&m);
	CHECK(proc_parse_maps_line("1000-2000 r-xp 00000000 00:01 9   /memfd:jit code (deleted)\n",
				   &m) == 0);
	CHECK_STREQ(m.path, "/memfd:jit code");
	CHECK(m.deleted && m.inode == 9);
	proc_mapping__fini(&m);
	/* Only the suffix counts: "(deleted)" alone or mid-path is a name. */
	CHECK(proc_parse_maps_line("1000-2000 r-xp 00000000 08:01 7 /a (deleted)/b", &m) == 0);
	CHECK_STREQ(m.path, "/a (deleted)/b");
	CHECK(!m.deleted);
cleanup:
	proc_mapping__fini(&m);
}

TEST(maps_line_malformed)
{
	static const char *bad[] = {
		"",
		"\n",
		"garbage",
		"1000 r-xp 00000000 08:01 7 /x",
		"1000-2000",
		"1000-2000 r-x 00000000 08:01 7 /x",
		"1000-2000 rwxq 00000000 08:01 7 /x",
		"1000-2000 abcd 00000000 08:01 7 /x",
		"2000-1000 r-xp 00000000 08:01 7 /x",
		"1000-1000 r-xp 00000000 08:01 7 /x",
		"1000-2000 r-xp zz 08:01 7 /x",
		"1000-2000 r-xp 00000000 0801 7 /x",
		"1000-2000 r-xp 00000000 08:01 /x",
		"1000-2000 r-xp 00000000 08:01 7x /x",
		"1000-2000 r-xp 00000000 08:01",
		"1000-2000  r-xp 00000000 08:01 7 /x",
		"-1000-2000 r-xp 00000000 08:01 7 /x",
		"0x1000-0x2000 r-xp 00000000 08:01 7 /x",
		"10000000000000000-20000000000000000 r-xp 00000000 08:01 7 /x",
		"1000-2000 r-xp 00000000 08:01 99999999999999999999 /x",
		"1000-2000 r-xp 00000000 100000000:01 7 /x",
		"1000-2000 r-xp 00000000 08:01 7 /x\nsecond line",
	};
	struct proc_mapping m;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err = proc_parse_maps_line(bad[i], &m);

		CHECKF(err == -EINVAL, "line %zu \"%s\" gave %d", i, bad[i], err);
		CHECK(m.path == NULL);
	}
cleanup:;
}

TEST(stat_weird_comm)
{
	char comm[64];
	const char *got = comm; /* CHECK_STREQ wants a pointer, not an array */
	uint64_t ticks = 0;

	CHECK(proc_parse_stat("1234 (a) b (c) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 "
			      "0 98765 1000000 200 18446744073709551615\n",
			      comm, sizeof(comm), &ticks) == 0);
	CHECK_STREQ(got, "a) b (c");
	CHECK(ticks == 98765);
	CHECK(proc_parse_stat("7 () R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0", comm,
			      sizeof(comm), &ticks) == 0);
	CHECK_STREQ(got, "");
	CHECK(ticks == 5);
	/* Truncated comm buffer, still parsed. */
	CHECK(proc_parse_stat("7 (abcdefgh) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 6 0", comm, 4,
			      &ticks) == 0);
	CHECK_STREQ(got, "abc");
	CHECK(ticks == 6);
	CHECK(proc_parse_stat("1234 a S 1 1", comm, sizeof(comm), &ticks) == -EINVAL);
	CHECK(proc_parse_stat("1234 (a) S 1 2 3", comm, sizeof(comm), &ticks) == -EINVAL);
	CHECK(proc_parse_stat("1234 (a) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 x 0", comm,
			      sizeof(comm), &ticks) == -EINVAL);
	CHECK(proc_parse_stat("", comm, sizeof(comm), &ticks) == -EINVAL);
cleanup:;
}

TEST(fake_tree_process)
{
	char rootbuf[256], path[512], buf[512];
	const char *root = fake_root("tree", rootbuf, sizeof(rootbuf));
	struct proc_table *pt = proc_table__new(root);
	struct proc_process *p;
	const struct proc_mapping *m, *del, *vdso;

	CHECK(pt);
	CHECK(fake_process(root, 100, "my (weird) comm", 777, maps_a) == 0);
	p = proc_table__lookup(pt, 100, 0);
	CHECK(p);
	CHECK(p->pid == 100 && p->start_ticks == 777 && !p->exited);
	CHECK_STREQ(p->comm, "my (weird) comm");
	CHECK_STREQ(p->exe, "/usr/bin/fake");
	CHECK_STREQ(p->cgroup, "/system.slice/fake.service");
	CHECK(p->n_maps == 5 && p->n_old_maps == 0);
	CHECK(proc_table__lookup(pt, 100, 777 * ns_per_tick() + 5) == p);
	CHECK(proc_table__count(pt) == 1);

	m = proc__find_mapping(pt, p, 0x2abc);
	CHECK(m && m->start == 0x2000 && m->exec);
	CHECK(proc_mapping__file_off(m, 0x2abc) == 0x1abc);
	CHECK(proc__find_mapping(pt, p, 0x1fff)->start == 0x1000);
	CHECK(proc__find_mapping(pt, p, 0x5000) == NULL);
	CHECK(proc__find_mapping(pt, p, 0xfff) == NULL);

	/* Object paths: no map_files or root in the fake tree -> the name itself... */
	CHECK_STREQ(proc__object_path(pt, p, m, buf, sizeof(buf)), "/usr/bin/fake");
	del = proc__find_mapping(pt, p, 0x9000); /* deleted: only through map_files */
	CHECK(del && del->deleted);
	CHECK(proc__object_path(pt, p, del, buf, sizeof(buf)) == NULL);
	vdso = proc__find_mapping(pt, p, 0x7ffd0000);
	CHECK(vdso && proc__object_path(pt, p, vdso, buf, sizeof(buf)) == NULL);
	/* ...root/PID/root/PATH when that exists... */
	snprintf(path, sizeof(path), "%s/100/root/usr/bin/fake", root);
	CHECK(write_file(path, "x") == 0);
	CHECK_STREQ(proc__object_path(pt, p, m, buf, sizeof(buf)), path);
	/* ...and map_files once it works (then trusted for every live mapping). */
	snprintf(path, sizeof(path), "%s/100/map_files/2000-5000", root);
	CHECK(write_file(path, "x") == 0);
	CHECK_STREQ(proc__object_path(pt, p, m, buf, sizeof(buf)), path);
	CHECK(proc__object_path(pt, p, m, buf, 10) == NULL);
	snprintf(path, sizeof(path), "%s/100/map_files/9000-a000", root);
	CHECK_STREQ(proc__object_path(pt, p, del, buf, sizeof(buf)), path);
	CHECK(proc__object_path(pt, p, vdso, buf, sizeof(buf)) == NULL);

	errno = 0;
	CHECK(proc_table__lookup(pt, 999, 0) == NULL && errno == ESRCH);
cleanup:
	proc_table__free(pt);
}

TEST(pid_reuse_is_a_different_process)
{
	char rootbuf[256];
	const char *root = fake_root("reuse", rootbuf, sizeof(rootbuf));
	struct proc_table *pt = proc_table__new(root);
	struct proc_process *a, *b;
	uint64_t nspt = ns_per_tick();

	CHECK(pt);
	CHECK(fake_process(root, 200, "first", 5000, maps_a) == 0);
	a = proc_table__lookup(pt, 200, 5000 * nspt);
	CHECK(a && a->start_ticks == 5000);

	/* The pid now runs another process with other mappings. */
	CHECK(write_stat(root, 200, "second", 6000) == 0);
	CHECK(write_maps(root, 200, "100000-200000 r-xp 00000000 08:01 99 /usr/bin/other\n") == 0);
	CHECK(proc_table__lookup(pt, 200, 5000 * nspt) == a); /* kept, not re-read */
	b = proc_table__lookup(pt, 200, 6000 * nspt + 123);
	CHECK(b && b != a);
	CHECK_STREQ(b->comm, "second");
	CHECK(b->n_maps == 1 && !b->exited);
	CHECK(a->exited); /* its pid runs someone else: the first one is gone */
	CHECK(proc_table__count(pt) == 2);
	CHECK(proc_table__lookup(pt, 200, 0) == b);

	/* Each keeps its own mappings; the exited one is never re-read. */
	CHECK(proc__find_mapping(pt, a, 0x2100) != NULL);
	CHECK(proc__find_mapping(pt, a, 0x100100) == NULL);
	CHECK(proc__find_mapping(pt, b, 0x100100) != NULL);

	/* A third start time we never saw, while the pid runs the second: unknown. */
	errno = 0;
	CHECK(proc_table__lookup(pt, 200, 7000 * nspt) == NULL && errno == ESRCH);
	CHECK(proc_table__count(pt) == 2);
cleanup:
	proc_table__free(pt);
}

TEST(exec_keeps_old_maps)
{
	char rootbuf[256];
	const char *root = fake_root("exec", rootbuf, sizeof(rootbuf));
	struct proc_table *pt = proc_table__new(root);
	struct proc_process *p;
	const struct proc_mapping *m;

	CHECK(pt);
	CHECK(fake_process(root, 300, "sh", 42, maps_a) == 0);
	p = proc_table__lookup(pt, 300, 42 * ns_per_tick());
	CHECK(p);
	CHECK(write_stat(root, 300, "python3", 42) == 0);
	CHECK(write_maps(root, 300, "400000-500000 r-xp 00000000 08:01 50 /usr/bin/python3\n") == 0);
	CHECK(proc_table__exec(pt, 300, 42 * ns_per_tick()) == 0);
	CHECK(p->n_maps == 1 && p->n_old_maps == 5);
	CHECK_STREQ(p->comm, "python3");
	m = proc__find_mapping(pt, p, 0x400100);
	CHECK(m);
	CHECK_STREQ(m->path, "/usr/bin/python3");
	m = proc__find_mapping(pt, p, 0x2100); /* pre-exec sample drained late */
	CHECK(m);
	CHECK_STREQ(m->path, "/usr/bin/fake");
	CHECK(proc_table__count(pt) == 1);
	/* exec of a process we never saw reads it fresh. */
	CHECK(fake_process(root, 301, "new", 43, maps_a) == 0);
	CHECK(proc_table__exec(pt, 301, 0) == 0);
	CHECK(proc_table__count(pt) == 2);
	CHECK(proc_table__exec(pt, 302, 0) == -ESRCH);
cleanup:
	proc_table__free(pt);
}

/* Monotonic milliseconds (the rate limit's clock). */
static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

TEST(reread_on_miss_is_rate_limited)
{
	char rootbuf[256], cmd[600];
	int64_t t0;
	bool miss, reread;
	const char *root = fake_root("reread", rootbuf, sizeof(rootbuf));
	struct proc_table *pt = proc_table__new(root);
	struct proc_process *p;

	CHECK(pt);
	CHECK(fake_process(root, 400, "dl", 1, maps_a) == 0);
	t0 = mono_ms();
	p = proc_table__lookup(pt, 400, 0);
	CHECK(p);
	/* A library dlopen'ed after we read the maps. */
	CHECK(write_maps(root, 400,
			 "1000-2000 r--p 00000000 08:01 42 /usr/bin/fake\n"
			 "600000-700000 r-xp 00000000 08:01 60 /usr/lib/libnew.so\n") == 0);
	miss = proc__find_mapping(pt, p, 0x600100) == NULL;
	/* just read: no re-read yet, when the miss came within the interval (100 ms;
	 * a loaded runner once took longer between the read and the miss) */
	CHECK(miss || mono_ms() - t0 >= 100);
	usleep(120 * 1000);
	/* the last read: this find's (after a miss that did not re-read), or at or
	 * after t0 (the miss above re-read) */
	if (miss)
		t0 = mono_ms();
	CHECK(proc__find_mapping(pt, p, 0x600100) != NULL);
	CHECK(p->n_maps == 2);
	CHECK(write_maps(root, 400, "800000-900000 r-xp 00000000 08:01 61 /usr/lib/libnew2.so\n") ==
	      0);
	/* a re-read here is right only when the interval had passed since the
	 * last read (a loaded runner); it replaces the maps with the line above */
	reread = proc__find_mapping(pt, p, 0x800100) != NULL;
	CHECK(!reread || mono_ms() - t0 >= 100);
	/* Once it is gone from /proc, a miss marks it exited and keeps the maps. */
	usleep(120 * 1000);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/400'", root);
	CHECK(system(cmd) == 0);
	CHECK(proc__find_mapping(pt, p, 0x900100) == NULL);
	CHECK(p->exited && p->n_maps == (reread ? 1 : 2));
	CHECK(proc__find_mapping(pt, p, reread ? 0x800100 : 0x600100) != NULL);
cleanup:
	proc_table__free(pt);
}

/* python3 sampled while ld.so still maps its libraries, then gone before the
 * drain: its samples in libc must still find libc. */
/* Removes p's fake /proc directory and marks it exited: true when its maps
 * still place 0x600100 in /usr/lib/libc.so.6 (what its samples need). */
static bool gone_still_maps_libc(struct proc_table *pt, const char *root, struct proc_process *p,
				 uint64_t ticks)
{
	const struct proc_mapping *m;
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%u'", root, p->pid);
	if (system(cmd) != 0)
		return false;
	proc_table__exit(pt, p->pid, ticks * ns_per_tick());
	m = proc__find_mapping(pt, p, 0x600100);
	return m && !strcmp(m->path, "/usr/lib/libc.so.6");
}

TEST(samples_outside_early_maps_reread_them_while_the_process_lives)
{
	char rootbuf[256];
	const char *root = fake_root("note", rootbuf, sizeof(rootbuf));
	struct proc_table *pt = proc_table__new(root);
	struct proc_process *p;
	uint64_t in_exe[] = {0x2100}, in_libc[] = {0x2100, 0x600100};

	CHECK(pt);
	CHECK(fake_process(root, 500, "python3", 7, maps_a) == 0);
	p = proc_table__lookup(pt, 500, 7 * ns_per_tick());
	CHECK(p && p->n_maps == 5);
	CHECK(write_maps(root, 500,
			 "1000-2000 r--p 00000000 08:01 42 /usr/bin/fake\n"
			 "2000-5000 r-xp 00001000 08:01 42 /usr/bin/fake\n"
			 "600000-700000 r-xp 00000000 08:01 60 /usr/lib/libc.so.6\n") == 0);
	usleep(15 * 1000);
	/* Every address mapped: nothing is read. */
	proc_table__note_addrs(pt, 500, 7 * ns_per_tick(), in_exe, 1);
	CHECK(p->n_maps == 5);
	/* One outside the maps: read now, before the exit. */
	proc_table__note_addrs(pt, 500, 7 * ns_per_tick(), in_libc, 2);
	CHECK(p->n_maps == 3);
	CHECK(gone_still_maps_libc(pt, root, p, 7));
	/* An exited or unknown process is never read. */
	proc_table__note_addrs(pt, 500, 7 * ns_per_tick(), (uint64_t[]){0x900000}, 1);
	proc_table__note_addrs(pt, 501, 0, (uint64_t[]){0x900000}, 1);
	CHECK(proc_table__count(pt) == 1);
cleanup:
	proc_table__free(pt);
}

/* A read of the unwinder's that a walk asked for (REMAP: a pc outside its view)
 * and that found a library mapped since re-reads ours too, settled or not; its
 * other reads do not, once ours are settled. */
TEST(unwinder_remap_read_rereads_settled_maps)
{
	char rootbuf[256];
	const char *root = fake_root("remap", rootbuf, sizeof(rootbuf));
	struct proc_table *pt = proc_table__new(root);
	struct proc_process *p;

	CHECK(pt);
	CHECK(fake_process(root, 520, "deepcfi", 11, maps_a) == 0);
	p = proc_table__lookup(pt, 520, 11 * ns_per_tick());
	CHECK(p && p->n_maps == 5);
	CHECK(write_maps(root, 520,
			 "1000-2000 r--p 00000000 08:01 42 /usr/bin/fake\n"
			 "2000-5000 r-xp 00001000 08:01 42 /usr/bin/fake\n"
			 "600000-700000 r-xp 00000000 08:01 60 /usr/lib/libc.so.6\n") == 0);
	proc_table__view_read(pt, 520, 11 * ns_per_tick(), false);
	CHECK(p->n_maps == 5);
	proc_table__view_read(pt, 520, 11 * ns_per_tick(), true);
	CHECK(p->n_maps == 3);
	CHECK(gone_still_maps_libc(pt, root, p, 11));
	/* An exited or unknown process is never read. */
	proc_table__view_read(pt, 520, 11 * ns_per_tick(), true);
	proc_table__view_read(pt, 521, 0, true);
	CHECK(p->n_maps == 3 && proc_table__count(pt) == 1);
cleanup:
	proc_table__free(pt);
}

/* The unwinder's own maps read re-reads ours only when ours were read inside
 * exec (the executable and ld.so mapped, no library yet). */
TEST(unwinder_read_rereads_maps_read_inside_exec)
{
	char rootbuf[256];
	const char *root = fake_root("viewread", rootbuf, sizeof(rootbuf));
	struct proc_table *pt = proc_table__new(root);
	struct proc_process *p, *q;
	static const char in_exec[] =
	    "1000-2000 r-xp 00000000 08:01 42 /usr/bin/deepcfi\n"
	    "7f0000-7f1000 r-xp 00001000 08:01 44 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n"
	    "7ffe000-7fff000 r-xp 00000000 00:00 0 [vdso]\n";
	static const char settled[] =
	    "1000-2000 r-xp 00000000 08:01 42 /usr/bin/deepcfi\n"
	    "600000-700000 r-xp 00000000 08:01 60 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	    "7f0000-7f1000 r-xp 00001000 08:01 44 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n";

	CHECK(pt);
	CHECK(fake_process(root, 530, "deepcfi", 12, in_exec) == 0);
	CHECK(fake_process(root, 531, "deepcfi", 13, settled) == 0);
	p = proc_table__lookup(pt, 530, 12 * ns_per_tick());
	q = proc_table__lookup(pt, 531, 13 * ns_per_tick());
	CHECK(p && p->n_maps == 3 && q && q->n_maps == 3);
	CHECK(write_maps(root, 530, settled) == 0);
	CHECK(write_maps(root, 531, "1000-2000 r-xp 00000000 08:01 42 /usr/bin/deepcfi\n") == 0);
	proc_table__view_read(pt, 530, 12 * ns_per_tick(), false);
	proc_table__view_read(pt, 531, 13 * ns_per_tick(), false);
	CHECK(proc__find_mapping(pt, p, 0x600100) &&
	      strstr(proc__find_mapping(pt, p, 0x600100)->path, "libc.so.6"));
	CHECK(q->n_maps == 3); /* settled: not read again */
	/* Read between exec's switch of image and its mapping of ld.so. */
	CHECK(fake_process(root, 532, "deepcfi", 14,
			   "1000-2000 r-xp 00000000 08:01 42 /usr/bin/deepcfi\n") == 0);
	p = proc_table__lookup(pt, 532, 14 * ns_per_tick());
	CHECK(p && p->n_maps == 1);
	CHECK(write_maps(root, 532, in_exec) == 0);
	proc_table__view_read(pt, 532, 14 * ns_per_tick(), false);
	CHECK(p->n_maps == 3);
cleanup:
	proc_table__free(pt);
}

/* A process whose stacks keep leaving its maps (garbage frame pointers) costs a
 * few re-reads, not one per sample. */
TEST(sample_rereads_are_bounded_per_process)
{
	char rootbuf[256];
	const char *root = fake_root("notecap", rootbuf, sizeof(rootbuf));
	struct proc_table *pt = proc_table__new(root);
	struct proc_process *p;
	uint64_t wild[] = {0xdead0000};
	int reads = 0;

	CHECK(pt);
	CHECK(fake_process(root, 510, "wild", 9, maps_a) == 0);
	p = proc_table__lookup(pt, 510, 0);
	CHECK(p);
	/* Before each note the maps file says something new: a re-read shows. */
	for (int i = 0; i < 20; i++) {
		char maps[128];

		snprintf(maps, sizeof(maps), "%x-%x r-xp 00000000 08:01 42 /usr/bin/fake\n",
			 0x1000 * (i + 1), 0x1000 * (i + 2));
		CHECK(write_maps(root, 510, maps) == 0);
		usleep(11 * 1000);
		proc_table__note_addrs(pt, 510, 0, wild, 1);
		if (p->n_maps == 1 && p->maps[0].start == 0x1000u * (i + 1))
			reads++;
	}
	CHECK(reads == 4);
cleanup:
	proc_table__free(pt);
}

TEST(exit_and_eviction)
{
	char rootbuf[256], cmd[600];
	const char *root = fake_root("evict", rootbuf, sizeof(rootbuf));
	struct proc_table *pt = proc_table__new(root);
	struct proc_process *p501, *p502, *p503;

	CHECK(pt);
	proc_table__set_limit(pt, 2);
	for (uint32_t pid = 501; pid <= 503; pid++)
		CHECK(fake_process(root, pid, "w", pid, maps_a) == 0);
	p501 = proc_table__lookup(pt, 501, 0);
	p502 = proc_table__lookup(pt, 502, 0);
	CHECK(p501 && p502);
	proc_table__exit(pt, 501, 501 * ns_per_tick());
	CHECK(p501->exited && !p502->exited);
	/* Exited 501 is still served from memory... */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/501' '%s/502'", root, root);
	CHECK(system(cmd) == 0);
	CHECK(proc_table__lookup(pt, 501, 501 * ns_per_tick()) == p501);
	/* ...and while its samples are still to be built, a new process takes the
	 * slot of a live one (502: read again from /proc at its next sample), not its:
	 * what an exited process held cannot be read again. */
	CHECK(proc_table__lookup(pt, 503, 0) != NULL);
	CHECK(proc_table__count(pt) == 2);
	CHECK(proc_table__lookup(pt, 501, 501 * ns_per_tick()) == p501);
	CHECK(proc_table__lookup(pt, 502, 0) == NULL); /* gone from /proc too */

	/* Once its samples are built, the exited one goes first, not live 503. */
	proc_table__built(pt, 501, 501 * ns_per_tick());
	CHECK(fake_process(root, 504, "w", 504, maps_a) == 0);
	p503 = proc_table__lookup(pt, 503, 0);
	CHECK(p503 && proc_table__lookup(pt, 504, 0) != NULL);
	CHECK(proc_table__count(pt) == 2);
	CHECK(proc_table__lookup(pt, 501, 501 * ns_per_tick()) == NULL);
	CHECK(proc_table__lookup(pt, 503, 0) == p503);

	/* With no exited process, the least recently used live one goes. */
	CHECK(fake_process(root, 505, "w", 505, maps_a) == 0);
	CHECK(proc_table__lookup(pt, 503, 0) == p503); /* 504 is now the oldest */
	CHECK(proc_table__lookup(pt, 505, 0) != NULL);
	CHECK(proc_table__lookup(pt, 503, 0) == p503);
	CHECK(proc_table__count(pt) == 2);
cleanup:
	proc_table__free(pt);
}

/* A child that only sleeps; same image as us, so our libc addresses are its too. */
static pid_t spawn_sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

TEST(real_child_process)
{
	struct proc_table *pt = proc_table__new("/proc");
	/* Not qsort: ASan intercepts that one, this one only libc defines. */
	uint64_t addr = (uint64_t)(uintptr_t)&gnu_get_libc_version;
	const struct proc_mapping *m, *m2;
	struct proc_process *p;
	pid_t pid = -1;
	char buf[512];

	CHECK(pt);
	pid = spawn_sleeper();
	CHECK(pid > 0);
	p = proc_table__lookup(pt, (uint32_t)pid, 0);
	CHECK(p && p->start_ticks > 0 && !p->exited);
	CHECK(p->comm[0] != '\0' && p->exe[0] == '/');
	CHECK(proc_table__lookup(pt, (uint32_t)pid, p->start_ticks * ns_per_tick() + 1) == p);
	CHECK(proc_table__lookup(pt, (uint32_t)pid, (p->start_ticks + 100) * ns_per_tick()) == NULL);
	m = proc__find_mapping(pt, p, addr);
	CHECK(m && m->exec && m->inode != 0);
	CHECKF(strstr(m->path, "libc") != NULL, "path %s", m->path);
	snprintf(buf, sizeof(buf), "/proc/%d/map_files/", pid);
	CHECK(proc__object_path(pt, p, m, buf, sizeof(buf)) != NULL);
	if (geteuid() == 0)
		CHECKF(strstr(buf, "/map_files/") != NULL, "object path %s", buf);

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	pid = -1;
	proc_table__exit(pt, p->pid, 0);
	CHECK(p->exited);
	m2 = proc__find_mapping(pt, p, addr);
	CHECK(m2 == m);
	CHECK(proc__object_path(pt, p, m, buf, sizeof(buf)) != NULL);
	CHECK(buf[0] == '/' && strstr(buf, "/map_files/") == NULL);
cleanup:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	proc_table__free(pt);
}

/* The one maps reader: sorted by start, malformed lines skipped, and a file far longer
 * than any real one read only up to the line cap. */
TEST(maps_reader_sorts_skips_and_caps)
{
	const char *text = "7f0000002000-7f0000003000 r-xp 00001000 08:01 42 /usr/lib/b.so\n"
			   "not a maps line\n"
			   "00400000-00401000 r-xp 00000000 08:01 7 /usr/bin/a\n";
	struct proc_mapping *maps = NULL, *none = NULL;
	size_t n = 0, n_big = 0;
	FILE *f = fmemopen((void *)text, strlen(text), "r"), *big = NULL;

	CHECK(f && proc_read_maps_file(f, &maps, &n) == 0);
	CHECK(n == 2 && maps[0].start == 0x400000 && strcmp(maps[1].path, "/usr/lib/b.so") == 0);
	proc_maps_free(maps, n);
	maps = NULL;
	/* one line more than the cap: the reader stops at the cap */
	big = tmpfile();
	CHECK(big);
	for (uint64_t i = 0; i <= PROC_MAPS_MAX_LINES; i++)
		fprintf(big, "%" PRIx64 "-%" PRIx64 " r--p 0 0:0 0\n", i * 2 + 2, i * 2 + 3);
	rewind(big);
	CHECK(proc_read_maps_file(big, &maps, &n_big) == 0);
	CHECKF(n_big == PROC_MAPS_MAX_LINES, "%zu", n_big);
	/* the live process's own maps, through the pid reader */
	proc_maps_free(maps, n_big);
	maps = NULL;
	n_big = 0;
	CHECK(proc_read_maps((uint32_t)getpid(), &maps, &n_big) == 0 && n_big > 2);
	CHECK(proc_read_maps(0x7fffffff, &none, &n) == -ENOENT && !none && !n);
cleanup:
	proc_maps_free(maps, n_big);
	if (f)
		fclose(f);
	if (big)
		fclose(big);
}

/* The table charges what it holds to MEM_PROCS; its evictor frees exited
 * processes first, and only inside proc_table__reclaim_point. */
TEST(memory_charged_and_evicted)
{
	char rootbuf[256];
	const char *root = fake_root("mem", rootbuf, sizeof(rootbuf));
	struct proc_table *pt = NULL;
	uint64_t used, one;

	mem_budget__reset();
	pt = proc_table__new(root);
	CHECK(pt);
	CHECK(fake_process(root, 200, "a", 10, maps_a) == 0);
	CHECK(fake_process(root, 201, "b", 11, maps_a) == 0);
	CHECK(proc_table__lookup(pt, 200, 0) && proc_table__lookup(pt, 201, 0));
	used = mem_budget__used(MEM_PROCS);
	one = used / 2;
	CHECKF(used == proc_table__bytes(pt) && one > 5 * sizeof(struct proc_mapping),
	       "charged %llu, table %zu", (unsigned long long)used, proc_table__bytes(pt));
	CHECK(proc_table__register_evictor(pt) == 0);
	/* outside a reclaim point the evictor frees nothing */
	CHECK(proc_table_evict(pt, 1) == 0);
	mem_budget__set_limit(1000, 100);
	CHECK(mem_budget__over());
	CHECK(mem_budget__reclaim() == 0 && proc_table__count(pt) == 2);
	/* 201 exited, its samples still to be built: live 200 goes first (read
	 * again from /proc at its next sample), though 201 exited */
	proc_table__exit(pt, 201, 0);
	CHECK(proc_table__reclaim_point(pt, 1) == one);
	CHECK(proc_table__count(pt) == 1 && mem_budget__evictions(MEM_PROCS) == 1);
	CHECK(proc_table__lookup(pt, 200, 0) && proc_table__count(pt) == 2);
	/* built: now the exited one goes first, though 200 is the most recently used */
	proc_table__built(pt, 201, 0);
	CHECK(proc_table__reclaim_point(pt, 1) == one);
	CHECK(proc_table__count(pt) == 1 && proc_table__lookup(pt, 200, 0));
	CHECK(mem_budget__evictions(MEM_PROCS) == 2 && mem_budget__used(MEM_PROCS) == one);
	/* by budget: 100 bytes cannot hold the live one either */
	mem_budget__set_limit(100, 100);
	CHECK(proc_table__reclaim_point(pt, 0) == one && proc_table__count(pt) == 0);
	CHECK(mem_budget__used(MEM_PROCS) == 0);
	/* a later lookup reads it again */
	CHECK(proc_table__lookup(pt, 200, 0) && mem_budget__used(MEM_PROCS) == one);
	proc_table__free(pt);
	pt = NULL;
	CHECK(mem_budget__used(MEM_PROCS) == 0);
cleanup:
	proc_table__free(pt);
	mem_budget__reset();
}
