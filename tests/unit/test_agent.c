/*
 * Tests of src/agent that need no BPF: container id and systemd unit from
 * cgroup paths, and the spool's bounds (memory, then disk, oldest dropped and
 * counted, files reloaded by the next run).
 */
#include "unit.h"

#include "agent/agent.h"
#include "agent/agent_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* CHECK_STREQ for arrays (its NULL test would not compile on an array). */
#define CHECK_BUFEQ(a, b) CHECKF(strcmp((a), (b)) == 0, "got \"%s\", want \"%s\"", (a), (b))

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

TEST(cgroup_container_and_unit)
{
	static const struct {
		const char *cgroup, *container, *unit;
	} cases[] = {
	    {"/system.slice/docker-" HEX64 ".scope", HEX64, ""},
	    {"/docker/" HEX64, HEX64, ""},
	    {"/kubepods.slice/kubepods-burstable.slice/kubepods-pod1.slice/cri-containerd-" HEX64
	     ".scope",
	     HEX64, ""},
	    {"/kubepods.slice/x.slice/crio-" HEX64 ".scope", HEX64, ""},
	    {"/machine.slice/libpod-" HEX64 ".scope", HEX64, ""},
	    {"/system.slice/nginx.service", "", "nginx.service"},
	    {"/user.slice/user-0.slice/session-3.scope", "", "session-3.scope"},
	    {"/", "", ""},
	    {"", "", ""},
	};
	char c[80], u[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		agent_cgroup_container(cases[i].cgroup, c, sizeof(c));
		agent_cgroup_unit(cases[i].cgroup, u, sizeof(u));
		CHECK_BUFEQ(c, cases[i].container);
		CHECK_BUFEQ(u, cases[i].unit);
	}
cleanup:;
}

static int pop_query(struct agent_spool *sp, char *q, size_t len)
{
	char *query = NULL;
	uint8_t *data = NULL;
	size_t n = 0;
	int ret = agent_spool__peek(sp, &query, &data, &n);

	if (!ret) {
		snprintf(q, len, "%s", query);
		agent_spool__pop(sp, true);
	}
	free(query);
	free(data);
	return ret;
}

TEST(spool_memory_only_drops_oldest)
{
	struct agent_spool *sp = NULL;
	struct agent_spool_stats st;
	uint8_t data[100] = {0};
	char q[64];

	CHECK(agent_spool__new(NULL, 250, 0, &sp) == 0);
	for (int i = 0; i < 5; i++) {
		snprintf(q, sizeof(q), "n=%d", i);
		CHECK(agent_spool__push(sp, q, data, sizeof(data)) == 0);
	}
	agent_spool__stats(sp, &st);
	CHECK(st.queued == 2 && st.dropped == 3);
	CHECK(pop_query(sp, q, sizeof(q)) == 0);
	CHECK_BUFEQ(q, "n=3");
	CHECK(pop_query(sp, q, sizeof(q)) == 0);
	CHECK_BUFEQ(q, "n=4");
	CHECK(pop_query(sp, q, sizeof(q)) == -ENOENT);
cleanup:
	agent_spool__free(sp);
}

TEST(spool_disk_and_reload)
{
	struct agent_spool *sp = NULL;
	struct agent_spool_stats st;
	uint8_t data[100];
	char q[64], dir[512];

	memset(data, 7, sizeof(data));
	snprintf(dir, sizeof(dir), "%s/spool", unit_tmp_dir());
	/* memory holds 2, disk 5: of 10 pushed, the 3 oldest are dropped */
	CHECK(agent_spool__new(dir, 250, 500, &sp) == 0);
	for (int i = 0; i < 10; i++) {
		snprintf(q, sizeof(q), "n=%d", i);
		CHECK(agent_spool__push(sp, q, data, sizeof(data)) == 0);
	}
	agent_spool__stats(sp, &st);
	CHECKF(st.queued == 7 && st.dropped == 3 && st.on_disk == 5, "%llu %llu %llu",
	       (unsigned long long)st.queued, (unsigned long long)st.dropped,
	       (unsigned long long)st.on_disk);
	CHECK(pop_query(sp, q, sizeof(q)) == 0);
	CHECK_BUFEQ(q, "n=3");
	agent_spool__free(sp); /* memory entries go to disk while they fit: n=8 does, n=9 not */
	sp = NULL;
	CHECK(agent_spool__new(dir, 250, 10000, &sp) == 0);
	agent_spool__stats(sp, &st);
	CHECKF(st.queued == 5, "%llu", (unsigned long long)st.queued);
	for (int i = 4; i < 9; i++) {
		char want[64];
		char *query = NULL;
		uint8_t *d = NULL;
		size_t n = 0;

		CHECK(agent_spool__peek(sp, &query, &d, &n) == 0);
		snprintf(want, sizeof(want), "n=%d", i);
		if (strcmp(query, want) || n != sizeof(data) || memcmp(d, data, n)) {
			fprintf(stderr, "  got %s (%zu bytes), want %s\n", query, n, want);
			free(query);
			free(d);
			CHECK(0);
		}
		free(query);
		free(d);
		agent_spool__pop(sp, true);
	}
	CHECK(pop_query(sp, q, sizeof(q)) == -ENOENT);
cleanup:
	agent_spool__free(sp);
}

TEST(relabel_adds_exe_drops_tid)
{
	struct proc_table *pt = proc_table__new("/proc");
	struct profile *src = profile__new(10), *dst = NULL;
	struct profile_sample s;
	struct profile_line ln = {0};
	uint64_t loc;
	int64_t v[PROFILE_N_VALUES] = {3, 30};
	struct profile_label labels[] = {
	    {.key = "pid", .num = getpid()},
	    {.key = "tid", .num = getpid()},
	    {.key = "comm", .str = "t"},
	    {.key = "process", .str = "test_agent"},
	};
	char exe[4096] = "";
	bool has_exe = false, has_tid = false;
	ssize_t n;

	CHECK(pt && src);
	CHECK((ln.function_id = profile__function(src, "f", "f", NULL)) != 0);
	CHECK((loc = profile__location(src, 0, 0x1000, &ln, 1)) != 0);
	CHECK(profile__add_sample(src, &loc, 1, v, labels, 4) == 0);
	CHECK((dst = agent_relabel(pt, src)) != NULL);
	CHECK(profile__n_samples(dst) == 1 && profile__total(dst, 0) == 3);
	CHECK(profile__sample(dst, 0, &s) == 0);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0);
	exe[n] = '\0';
	for (size_t i = 0; i < s.n_labels; i++) {
		has_tid |= !strcmp(s.labels[i].key, "tid");
		has_exe |= !strcmp(s.labels[i].key, "exe") && !strcmp(s.labels[i].str, exe);
	}
	CHECK(has_exe && !has_tid);
cleanup:
	profile__free(dst);
	profile__free(src);
	proc_table__free(pt);
}
