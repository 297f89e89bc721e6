/*
 * Tests for src/v8 on Debian's node (V8 11.3): the v8dbg_* metadata read from the
 * executable, the BPF description made of it, and names of live functions: a node
 * child prints its functions' SharedFunctionInfo addresses (%DebugPrint, with
 * --allow-natives-syntax) and waits; the manager names them from its memory and
 * checks every name again (another object at the address: unknown, counted).
 */
#include "collect/collect.h"
#include "proc/proc.h"
#include "profile/profile.h"
#include "sampler/sampler.h"
#include "symbolize/symbolize.h"
#include "base/membudget.h"
#include "v8/v8.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NODE "/usr/bin/node"

static int parse_file(const char *path, struct v8_meta *m)
{
	struct stat sb;
	void *img;
	int fd = open(path, O_RDONLY), ret;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb)) {
		close(fd);
		return -errno;
	}
	img = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (img == MAP_FAILED)
		return -errno;
	ret = v8_meta_parse(img, (size_t)sb.st_size, m);
	munmap(img, (size_t)sb.st_size);
	return ret;
}

TEST(v8_meta_from_node)
{
	struct v8_meta m;
	struct hearth_v8_proc d;

	CHECKF(parse_file(NODE, &m) == 0, "%s: not parsed", NODE);
	CHECK(m.fp_function == -16 && m.fp_context == -8);
	CHECK(m.fp_bytecode_array == -32 && m.fp_bytecode_offset == -40);
	CHECK(m.heap_tag == 1 && m.heap_tag_mask == 3 && m.tagged_size == 8);
	CHECK(m.smi_shift_size == 31);
	CHECK(m.jsfunction_shared == 24 && m.map_instance_type == 12 && m.heap_map == 0);
	CHECK(m.type_sfi == 262 && m.type_bytecode == 191 && m.type_script == 167);
	CHECK(m.type_scope_info == 261);
	v8_meta_describe(&m, 42, &d);
	CHECK(d.pstart == 42 && d.smi_shift == 32 && d.type_sfi == 262 && d.fp_function == -16);
cleanup:;
}

TEST(v8_meta_not_v8)
{
	struct v8_meta m;
	uint8_t junk[256] = {0x7f, 'E', 'L', 'F', 2};
	static uint64_t aligned[64];

	CHECK(parse_file("/bin/true", &m) == -ENOENT);
	CHECK(v8_meta_parse(junk, 3, &m) == -EINVAL);
	memcpy(aligned, junk, sizeof(junk));
	CHECK(v8_meta_parse((uint8_t *)aligned, sizeof(aligned), &m) == -EINVAL);
cleanup:;
}

/* The table V8 11.3 built for
 *   function lines(n) {\n  let a = 0;\n  a += n;\n  a *= 2;\n  return a + 1;\n}
 * whose --print-bytecode listing gives (bytecode offset, script offset): (0, 30),
 * (2, 35), (4, 40 expression), (11, 45), (15, 64), (18, 68); the first entry is
 * the function-entry position (offset -1, script offset 14). */
TEST(v8_source_positions)
{
	static const uint8_t t[] = {0x01, 0x3c, 0x02, 0x40, 0x04, 0x14, 0x05,
				    0x14, 0x0e, 0x14, 0x08, 0x4c, 0x06, 0x10};
	static const int64_t want[19] = {30, 30, 35, 35, 40, 40, 40, 40, 40, 40,
					 40, 45, 45, 45, 45, 64, 64, 64, 68};

	for (int64_t off = 0; off < 19; off++)
		CHECKF(v8_position_at(t, sizeof(t), off) == want[off], "offset %lld: %lld",
		       (long long)off, (long long)v8_position_at(t, sizeof(t), off));
	CHECK(v8_position_at(t, sizeof(t), -1) == 14);
	CHECK(v8_position_at(t, 0, 5) == -1);
	CHECK(v8_position_at((const uint8_t *)"\x80\x80", 2, 5) == -1); /* cut short */
cleanup:;
}

static const char script[] =
    "function hotAlpha(n) { let s = 0; for (let i = 0; i < n; i++) s += i; return s; }\n"
    "const anon = (function () { let c = 1; return () => c + 1; })();\n"
    "  function second(x) {\n"
    "    return x + 1;\n"
    "  }\n"
    "for (let i = 0; i < 50; i++) { hotAlpha(10); anon(); second(1); }\n"
    "%DebugPrint(hotAlpha); %DebugPrint(anon); %DebugPrint(second);\n"
    "console.log('ready');\n"
    "setTimeout(() => {}, 60000);\n";

/* The SFI addresses the child printed ("- shared_info: 0x... <SharedFunctionInfo"). */
static int read_sfis(const char *out, uint64_t *sfi, int max)
{
	FILE *f = fopen(out, "r");
	char line[512];
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "- shared_info: 0x");

		if (p)
			sfi[n++] = strtoull(p + 15, NULL, 16);
	}
	fclose(f);
	return n;
}

TEST(v8_names_live_functions)
{
	char js[256], out[256], cmd[1024], name[V8_NAME_MAX], want[512];
	struct v8_mgr *m = NULL;
	struct v8_mgr_stats st;
	uint64_t sfi[3] = {0};
	pid_t pid = -1;
	FILE *f;
	int n = 0;

	snprintf(js, sizeof(js), "%s/v8names.js", unit_tmp_dir());
	snprintf(out, sizeof(out), "%s/v8names.out", unit_tmp_dir());
	f = fopen(js, "w");
	CHECK(f && fputs(script, f) >= 0);
	fclose(f);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		snprintf(cmd, sizeof(cmd), "exec %s --allow-natives-syntax %s > %s 2>&1", NODE, js,
			 out);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 300 && (n = read_sfis(out, sfi, 3)) < 3; i++)
		nanosleep(&(struct timespec){0, 50000000}, NULL);
	CHECKF(n == 3, "%d shared_info lines from node", n);
	CHECK(v8_mgr__new(-1, &m) == 0);
	v8_mgr__note(m, (uint32_t)pid, 7);
	CHECK(v8_mgr__work(m, 1000) == 1);
	v8_mgr__stats(m, &st);
	CHECK(st.processes == 1);

	CHECK(v8_mgr__resolve(m, (uint32_t)pid, 7, sfi[0],
			      HEARTH_V8_POS(0x1234, 3, HEARTH_V8_FT_INTERPRETED), name,
			      sizeof(name)) == 0);
	snprintf(want, sizeof(want), "JS:~hotAlpha %s:1:18", js);
	CHECKF(strcmp(name, want) == 0, "got \"%s\", want \"%s\"", name, want);
	/* cached: the same name, checked again against the object */
	CHECK(v8_mgr__resolve(m, (uint32_t)pid, 7, sfi[0],
			      HEARTH_V8_POS(0, 0, HEARTH_V8_FT_COMPILED), name, sizeof(name)) == 0);
	snprintf(want, sizeof(want), "JS:*hotAlpha %s:1:18", js);
	CHECKF(strcmp(name, want) == 0, "got \"%s\", want \"%s\"", name, want);
	CHECK(v8_mgr__resolve(m, (uint32_t)pid, 7, sfi[1], 0, name, sizeof(name)) == 0);
	snprintf(want, sizeof(want), "JS:*(anonymous) %s:2:47", js);
	CHECKF(strcmp(name, want) == 0, "got \"%s\", want \"%s\"", name, want);
	CHECK(v8_mgr__resolve(m, (uint32_t)pid, 7, sfi[2], 0, name, sizeof(name)) == 0);
	snprintf(want, sizeof(want), "JS:*second %s:3:18", js);
	CHECKF(strcmp(name, want) == 0, "got \"%s\", want \"%s\"", name, want);
	/* the current line of an interpreted frame: second's first bytecode is its
	 * `return` (line 4); not interpreted: no line */
	CHECKF(v8_mgr__line(m, (uint32_t)pid, 7, sfi[2],
			    HEARTH_V8_POS(0, 0, HEARTH_V8_FT_INTERPRETED)) == 4,
	       "line %lld",
	       (long long)v8_mgr__line(m, (uint32_t)pid, 7, sfi[2],
				       HEARTH_V8_POS(0, 0, HEARTH_V8_FT_INTERPRETED)));
	CHECK(v8_mgr__line(m, (uint32_t)pid, 7, sfi[2],
			   HEARTH_V8_POS(0, 0, HEARTH_V8_FT_COMPILED)) == 0);
	/* not an SFI (its map's address): unknown, counted */
	CHECK(v8_mgr__resolve(m, (uint32_t)pid, 7, sfi[0] + 8, 0, name, sizeof(name)) == -EIO);
	v8_mgr__stats(m, &st);
	CHECK(st.failed == 1 && st.cached == 3);
	/* another process start under the pid: not described */
	CHECK(v8_mgr__resolve(m, (uint32_t)pid, 8, sfi[0], 0, name, sizeof(name)) == -ENOENT);
	/* The names are charged to MEM_NODE and given back to the budget. */
	CHECK(mem_budget__used(MEM_NODE) > 0);
	mem_budget__set_limit(100, 100); /* 100 bytes for the caches */
	mem_budget__reclaim();
	mem_budget__set_limit(0, 100);
	v8_mgr__stats(m, &st);
	CHECKF(st.evicted == 3 && mem_budget__used(MEM_NODE) == 0, "evicted %llu, %llu bytes left",
	       (unsigned long long)st.evicted, (unsigned long long)mem_budget__used(MEM_NODE));
	CHECK(v8_mgr__resolve(m, (uint32_t)pid, 7, sfi[0], 0, name, sizeof(name)) == 0);
	snprintf(want, sizeof(want), "JS:*hotAlpha %s:1:18", js);
	CHECKF(strcmp(name, want) == 0, "got \"%s\", want \"%s\"", name, want);
	/* The collector puts each JS frame in place of the native frame with its pc
	 * (low 32 bits), and JS frames the native walk did not reach at the root. */
	{
		struct proc_table *pt = proc_table__new("/proc");
		struct symbolizer *sym = symbolizer__new(&(struct sym_opts){0});
		struct collector *c = pt && sym ? collector__new(pt, sym) : NULL;
		struct profile *p = NULL;
		struct profile_sample s;
		struct profile_location loc;
		uint64_t user[4] = {0x7f0070001234, 0x5001, 0x7f0070002000, 0x6001};
		uint64_t words[6] = {
		    sfi[0],
		    HEARTH_RT_WORD1(HEARTH_RT_V8, HEARTH_V8_POS(0x70001234, 3, HEARTH_V8_FT_INTERPRETED)),
		    sfi[2],
		    HEARTH_RT_WORD1(HEARTH_RT_V8, HEARTH_V8_POS(0x70002000, 0, HEARTH_V8_FT_COMPILED)),
		    sfi[1],
		    HEARTH_RT_WORD1(HEARTH_RT_V8, HEARTH_V8_POS(0x1, 0, HEARTH_V8_FT_BASELINE)),
		};
		struct sampler_sample smp = {.pid = (uint32_t)pid,
					     .tid = (uint32_t)pid,
					     .pstart = 7,
					     .comm = "node",
					     .n_user = 4,
					     .user = user,
					     .n_python = 3,
					     .python = words,
					     .count = 2};
		const char *want_at[5] = {"JS:~hotAlpha ", NULL, "JS:*second ", NULL,
					  "JS:^(anonymous) "};
		int ok = c != NULL;

		if (ok) {
			collector__set_v8(c, m);
			ok = collector__add(c, &smp) == 0 &&
			     (p = collector__build(c, 10000000, 0, 0)) != NULL &&
			     profile__n_samples(p) == 1 && profile__sample(p, 0, &s) == 0 &&
			     s.n_locs == 5;
		}
		for (size_t i = 0; ok && i < 5; i++) {
			char buf[V8_NAME_MAX];
			const char *nm = "";

			if (!profile__get_location(p, s.locs[i], &loc) && loc.n_lines)
				nm =
				    profile__frame_name(p, &loc, loc.n_lines - 1, buf, sizeof(buf));
			if (want_at[i] ? strncmp(nm, want_at[i], strlen(want_at[i]))
				       : !strncmp(nm, "JS:", 3)) {
				fprintf(stderr, "  frame %zu: %s\n", i, nm);
				ok = 0;
			}
		}
		profile__free(p);
		collector__free(c);
		symbolizer__free(sym);
		proc_table__free(pt);
		CHECK(ok);
	}
	/* gone: the cache is trusted until forget */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	v8_mgr__exit(m, (uint32_t)pid);
	CHECK(v8_mgr__resolve(m, (uint32_t)pid, 7, sfi[2], 0, name, sizeof(name)) == 0);
	snprintf(want, sizeof(want), "JS:*second %s:3:18", js);
	CHECKF(strcmp(name, want) == 0, "got \"%s\", want \"%s\"", name, want);
	v8_mgr__forget(m, (uint32_t)pid, 7);
	CHECK(v8_mgr__resolve(m, (uint32_t)pid, 7, sfi[2], 0, name, sizeof(name)) == -ENOENT);
	pid = -1;
cleanup:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	v8_mgr__free(m);
}
