/*
 * Tests of src/agent that need no BPF: container id and systemd unit from
 * cgroup paths, and the spool's bounds (memory, then disk, oldest dropped and
 * counted, files reloaded by the next run).
 */
#include "unit.h"

#include "agent/agent.h"
#include "agent/agent_impl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
	uint64_t id = 0;
	int ret = agent_spool__peek(sp, &id, &query, &data, &n);

	if (!ret) {
		snprintf(q, len, "%s", query);
		if (agent_spool__pop(sp, id, true))
			ret = -ESRCH; /* the entry peeked was not there to pop */
	}
	free(query);
	free(data);
	return ret;
}

/* Counts the files in dir whose name starts with prefix. */
static int count_files(const char *dir, const char *prefix)
{
	char cmd[1024];
	int n = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ls -a '%s' | grep -c '^%s'", dir, prefix);
	if ((p = popen(cmd, "r"))) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	return n;
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
		uint64_t id = 0;

		CHECK(agent_spool__peek(sp, &id, &query, &d, &n) == 0);
		snprintf(want, sizeof(want), "n=%d", i);
		if (strcmp(query, want) || n != sizeof(data) || memcmp(d, data, n)) {
			fprintf(stderr, "  got %s (%zu bytes), want %s\n", query, n, want);
			free(query);
			free(d);
			CHECK(0);
		}
		free(query);
		free(d);
		CHECK(agent_spool__pop(sp, id, true) == 0);
	}
	CHECK(pop_query(sp, q, sizeof(q)) == -ENOENT);
cleanup:
	agent_spool__free(sp);
}

TEST(relabel_adds_exe_moves_task_into_stack)
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
	bool has_exe = false, has_tid = false, has_comm = false;
	struct profile_location tl;
	struct profile_mapping tm;
	struct profile_function tf;
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
		has_comm |= !strcmp(s.labels[i].key, "comm");
		has_exe |= !strcmp(s.labels[i].key, "exe") && !strcmp(s.labels[i].str, exe);
	}
	CHECK(has_exe && !has_tid && !has_comm);
	/* pid, tid and the thread's name live in the stack's task location */
	CHECK(s.n_locs == 2 && profile__get_location(dst, s.locs[1], &tl) == 0);
	CHECK(profile__get_mapping(dst, tl.mapping_id, &tm) == 0);
	CHECK_STREQ(tm.file, PROFILE_TASK_MAPPING);
	CHECK(tl.address == PROFILE_TASK_ADDR(getpid(), getpid()) && tl.n_lines == 1);
	CHECK(profile__get_function(dst, tl.lines[0].function_id, &tf) == 0);
	CHECK_STREQ(tf.name, "t");
cleanup:
	profile__free(dst);
	profile__free(src);
	proc_table__free(pt);
}

/* Issue 17: a Python code object's lines are locations at one address (the
 * code object's); relabelling keeps them apart. It refused the profile before,
 * so hearth run stored no sample of a Python process. */
TEST(relabel_keeps_locations_sharing_an_address)
{
	struct proc_table *pt = proc_table__new("/proc");
	struct profile *src = profile__new(10), *dst = NULL;
	struct profile_location l;
	struct profile_line ln[2] = {{0}, {0}};
	uint64_t loc[2], mid;
	int64_t v[PROFILE_N_VALUES] = {1, 10};
	struct profile_label labels[] = {{.key = "pid", .num = getpid()}};

	CHECK(pt && src);
	CHECK((mid = profile__mapping(src, 0, 0, 0, PROFILE_PYTHON_MAPPING, NULL)) != 0);
	CHECK((ln[0].function_id = profile__function(src, "app.hot", "app.hot", "app.py")) != 0);
	ln[1] = ln[0];
	ln[0].line = 12;
	ln[1].line = 13;
	for (int i = 0; i < 2; i++) {
		CHECK((loc[i] = profile__location_exact(src, mid, 0x7f0000001000, &ln[i], 1)) != 0);
		CHECK(profile__add_sample(src, &loc[i], 1, v, labels, 1) == 0);
	}
	CHECK(loc[0] != loc[1]);
	CHECK((dst = agent_relabel(pt, src)) != NULL);
	CHECK(profile__n_samples(dst) == 2 && profile__total(dst, 0) == 2);
	CHECK(profile__get_location(dst, loc[1], &l) == 0);
	CHECK(l.n_lines == 1 && l.lines[0].line == 13);
cleanup:
	profile__free(dst);
	profile__free(src);
	proc_table__free(pt);
}

/* Issue 12 item 10: a push that drops the entry the sender is delivering must
 * not make the sender's pop remove the next (unsent) entry. Interleaves push,
 * peek, pop and drop, in memory and then with entries on disk. */
TEST(spool_pop_after_drop_keeps_next)
{
	struct agent_spool *sp = NULL;
	struct agent_spool_stats st;
	uint8_t data[100] = {0};
	char *query = NULL, q[64], dir[512];
	uint8_t *d = NULL;
	size_t n = 0;
	uint64_t id_a = 0, id_b = 0;

	CHECK(agent_spool__new(NULL, 250, 0, &sp) == 0);
	CHECK(agent_spool__push(sp, "n=A", data, sizeof(data)) == 0);
	CHECK(agent_spool__push(sp, "n=B", data, sizeof(data)) == 0);
	CHECK(agent_spool__peek(sp, &id_a, &query, &d, &n) == 0);
	CHECK_STREQ(query, "n=A");
	CHECK(agent_spool__push(sp, "n=C", data, sizeof(data)) == 0); /* drops A */
	CHECK(agent_spool__pop(sp, id_a, true) == -ENOENT);	      /* A was delivered */
	CHECK(agent_spool__pop(sp, id_a, true) == -ENOENT);	      /* twice: still nothing */
	agent_spool__stats(sp, &st);
	CHECKF(st.queued == 2 && st.dropped == 1, "%llu queued %llu dropped",
	       (unsigned long long)st.queued, (unsigned long long)st.dropped);
	free(query);
	free(d);
	query = NULL;
	d = NULL;
	/* peek B, a push drops nothing, pop B: exactly B goes */
	CHECK(agent_spool__peek(sp, &id_b, &query, &d, &n) == 0);
	CHECK_STREQ(query, "n=B");
	CHECK(id_b != id_a);
	CHECK(agent_spool__pop(sp, id_b, true) == 0);
	CHECK(agent_spool__push(sp, "n=D", data, sizeof(data)) == 0);
	CHECK(pop_query(sp, q, sizeof(q)) == 0);
	CHECK_BUFEQ(q, "n=C");
	CHECK(pop_query(sp, q, sizeof(q)) == 0);
	CHECK_BUFEQ(q, "n=D");
	CHECK(pop_query(sp, q, sizeof(q)) == -ENOENT);
	agent_spool__free(sp);
	sp = NULL;
	free(query);
	free(d);
	query = NULL;
	d = NULL;

	/* on disk: memory 1 entry, disk 2; the peeked disk entry is dropped by pushes */
	snprintf(dir, sizeof(dir), "%s/spool_interleave", unit_tmp_dir());
	CHECK(agent_spool__new(dir, 150, 250, &sp) == 0);
	CHECK(agent_spool__push(sp, "n=A", data, sizeof(data)) == 0);
	CHECK(agent_spool__push(sp, "n=B", data, sizeof(data)) == 0); /* A to disk */
	CHECK(agent_spool__peek(sp, &id_a, &query, &d, &n) == 0);
	CHECK_STREQ(query, "n=A");
	CHECK(agent_spool__push(sp, "n=C", data, sizeof(data)) == 0); /* B to disk */
	CHECK(agent_spool__push(sp, "n=D", data, sizeof(data)) == 0); /* C to disk, A dropped */
	CHECK(agent_spool__pop(sp, id_a, false) == -ENOENT);
	agent_spool__stats(sp, &st);
	CHECKF(st.queued == 3 && st.on_disk == 2 && st.dropped == 1 && st.rejected == 1,
	       "%llu queued %llu on disk %llu dropped", (unsigned long long)st.queued,
	       (unsigned long long)st.on_disk, (unsigned long long)st.dropped);
	for (int i = 0; i < 3; i++) {
		char want[8];

		snprintf(want, sizeof(want), "n=%c", 'B' + i);
		CHECK(pop_query(sp, q, sizeof(q)) == 0);
		CHECK_BUFEQ(q, want);
	}
	CHECK(pop_query(sp, q, sizeof(q)) == -ENOENT);
	CHECK(count_files(dir, "spool-") == 0);
cleanup:
	free(query);
	free(d);
	agent_spool__free(sp);
}

/* When the spool directory cannot be written, memory still stays within its
 * bound: the oldest memory entry is dropped and counted. */
TEST(spool_memory_bound_when_disk_fails)
{
	struct agent_spool *sp = NULL;
	struct agent_spool_stats st;
	uint8_t data[100] = {0};
	char dir[512], moved[600];

	snprintf(dir, sizeof(dir), "%s/spool_gone", unit_tmp_dir());
	snprintf(moved, sizeof(moved), "%s.moved", dir);
	CHECK(agent_spool__new(dir, 1000, 1 << 20, &sp) == 0);
	for (int i = 0; i < 15; i++) /* 5 go to disk */
		CHECK(agent_spool__push(sp, "n=x", data, sizeof(data)) == 0);
	CHECK(rename(dir, moved) == 0); /* every write to dir now fails (even as root) */
	for (int i = 0; i < 500; i++)
		CHECK(agent_spool__push(sp, "n=x", data, sizeof(data)) == 0);
	agent_spool__stats(sp, &st);
	/* 5 on disk + 10 in memory; the other 500 were dropped as they came */
	CHECKF(st.queued_bytes - st.on_disk * 100 <= 1000 && st.dropped == 500 && st.on_disk == 5 &&
		   st.disk_errors == 500,
	       "%llu bytes queued, %llu dropped, %llu on disk", (unsigned long long)st.queued_bytes,
	       (unsigned long long)st.dropped, (unsigned long long)st.on_disk);
cleanup:
	agent_spool__free(sp);
}

/* A one-thread loopback HTTP server for the sender tests: answers the first
 * n_status requests with statuses[i], then 204; counts the requests. */
struct fake_server {
	int fd, port;
	pthread_t thread;
	const int *statuses;
	int n_status;
	int requests; /* atomic */
	volatile int stop;
};

/* Reads one request (headers and Content-Length body); 0 or -1. */
static int fake_read_request(int c)
{
	char buf[65536];
	size_t got = 0, want = 0;
	char *end = NULL;

	while (!end || got < want) {
		ssize_t r = read(c, buf + got, sizeof(buf) - 1 - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
		buf[got] = '\0';
		if (!end && (end = strstr(buf, "\r\n\r\n"))) {
			char *cl = strcasestr(buf, "content-length:");

			want = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
			if (want >= sizeof(buf))
				return -1;
		}
	}
	return 0;
}

static void *fake_main(void *arg)
{
	struct fake_server *fs = arg;

	for (int i = 0; i < 200 && !fs->stop; i++) { /* bounded: 200 requests or 10 s idle */
		struct pollfd pfd = {.fd = fs->fd, .events = POLLIN};
		char resp[128];
		int c, k, status;

		if (poll(&pfd, 1, 50) <= 0) {
			i--;
			continue;
		}
		if ((c = accept(fs->fd, NULL, NULL)) < 0)
			continue;
		if (fake_read_request(c) == 0) {
			k = __atomic_fetch_add(&fs->requests, 1, __ATOMIC_SEQ_CST);
			status = k < fs->n_status ? fs->statuses[k] : 204;
			snprintf(resp, sizeof(resp),
				 "HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
				 status);
			if (write(c, resp, strlen(resp)) < 0)
				k = 0;
		}
		close(c);
	}
	return NULL;
}

static int fake_start(struct fake_server *fs, const int *statuses, int n)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);

	memset(fs, 0, sizeof(*fs));
	fs->statuses = statuses;
	fs->n_status = n;
	if ((fs->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return -errno;
	if (bind(fs->fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fs->fd, 8) ||
	    getsockname(fs->fd, (struct sockaddr *)&sa, &sl) ||
	    pthread_create(&fs->thread, NULL, fake_main, fs)) {
		close(fs->fd);
		return -EIO;
	}
	fs->port = ntohs(sa.sin_port);
	return 0;
}

static void fake_stop(struct fake_server *fs)
{
	fs->stop = 1;
	pthread_join(fs->thread, NULL);
	close(fs->fd);
}

/* Runs a sender against a fake server answering `statuses` then 204, with one
 * profile queued; waits up to 10 s for the spool to empty. */
static int send_one(const int *statuses, int n, struct agent_spool_stats *st, int *requests,
		    uint64_t fails[AGENT_FAIL_MAX], FILE *log)
{
	struct fake_server fs;
	struct agent_opts opts = {0};
	struct agent_spool *sp = NULL;
	struct agent_sender *snd = NULL;
	uint8_t data[64] = {1, 2, 3};
	char url[64];
	int ret;

	if ((ret = fake_start(&fs, statuses, n)))
		return ret;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", fs.port);
	opts.server_url = url;
	opts.log = log;
	if (!(ret = agent_spool__new(NULL, 1 << 20, 0, &sp)) &&
	    !(ret = agent_spool__push(sp, "name=t", data, sizeof(data))) &&
	    !(ret = agent_sender__start(&opts, sp, NULL, 0, &snd))) {
		agent_sender__kick(snd);
		agent_sender__stop(snd, 10.0);
		agent_spool__stats(sp, st);
		agent_sender__failures(snd, fails);
	}
	agent_sender__free(snd);
	agent_spool__free(sp);
	fake_stop(&fs);
	*requests = fs.requests;
	return ret;
}

/* A 401 or 403 is a token problem the server side can fix: the profile is kept
 * and retried, and arrives once the server takes it. */
TEST(sender_retries_auth_failures)
{
	static const int statuses[] = {401, 403};
	struct agent_spool_stats st = {0};
	uint64_t fails[AGENT_FAIL_MAX] = {0};
	int requests = 0;
	char logbuf[1024] = "";
	FILE *log = tmpfile();

	CHECK(log != NULL);
	CHECK(send_one(statuses, 2, &st, &requests, fails, log) == 0);
	rewind(log);
	logbuf[fread(logbuf, 1, sizeof(logbuf) - 1, log)] = '\0';
	/* one line for the refused token (not one per retry), one when it goes through */
	CHECKF(strstr(logbuf, "refused the token (HTTP 401)") && !strstr(logbuf, "HTTP 403") &&
		   strstr(logbuf, "delivering again"),
	       "log: %s", logbuf);
	CHECKF(st.sent == 1 && st.rejected == 0 && st.queued == 0 && requests == 3,
	       "sent %llu rejected %llu queued %llu after %d requests", (unsigned long long)st.sent,
	       (unsigned long long)st.rejected, (unsigned long long)st.queued, requests);
	CHECKF(fails[AGENT_FAIL_AUTH] == 2 && fails[AGENT_FAIL_SERVER] == 0 &&
		   fails[AGENT_FAIL_CONNECT] == 0,
	       "auth %llu server %llu connect %llu", (unsigned long long)fails[AGENT_FAIL_AUTH],
	       (unsigned long long)fails[AGENT_FAIL_SERVER],
	       (unsigned long long)fails[AGENT_FAIL_CONNECT]);
	CHECK_STREQ(agent_send_fail_name(AGENT_FAIL_AUTH), "auth");
cleanup:
	if (log)
		fclose(log);
}

/* A 400, 413 or 422 says the profile itself is bad: dropped and counted at once. */
TEST(sender_drops_bad_profiles)
{
	static const int codes[] = {400, 413, 422};

	for (int i = 0; i < 3; i++) {
		struct agent_spool_stats st = {0};
		uint64_t fails[AGENT_FAIL_MAX] = {0};
		int requests = 0;

		CHECK(send_one(&codes[i], 1, &st, &requests, fails, NULL) == 0);
		CHECKF(st.sent == 0 && st.rejected == 1 && st.queued == 0 && requests == 1,
		       "%d: sent %llu rejected %llu queued %llu after %d requests", codes[i],
		       (unsigned long long)st.sent, (unsigned long long)st.rejected,
		       (unsigned long long)st.queued, requests);
	}
cleanup:;
}

static int n_fsyncs;

static int count_fsync(int fd)
{
	n_fsyncs++;
	return fsync(fd);
}

static int fail_fsync(int fd)
{
	(void)fd;
	errno = EIO;
	return -1;
}

/* A spool file reaches the disk before it counts as spooled: the file and its
 * directory are fsynced; when that fails the entry is not on disk, no file is
 * left behind, and memory still keeps its bound. */
TEST(spool_files_fsynced)
{
	struct agent_spool *sp = NULL;
	struct agent_spool_stats st;
	uint8_t data[100] = {0};
	char dir[512];

	snprintf(dir, sizeof(dir), "%s/spool_sync", unit_tmp_dir());
	n_fsyncs = 0;
	agent_spool_fsync = count_fsync;
	CHECK(agent_spool__new(dir, 250, 1 << 20, &sp) == 0);
	for (int i = 0; i < 5; i++) /* 3 go to disk */
		CHECK(agent_spool__push(sp, "n=x", data, sizeof(data)) == 0);
	agent_spool__stats(sp, &st);
	CHECKF(st.on_disk == 3 && n_fsyncs >= 6, "%llu on disk, %d fsyncs",
	       (unsigned long long)st.on_disk, n_fsyncs);
	agent_spool_fsync = fail_fsync;
	for (int i = 0; i < 5; i++)
		CHECK(agent_spool__push(sp, "n=y", data, sizeof(data)) == 0);
	agent_spool__stats(sp, &st);
	CHECKF(st.on_disk == 3 && st.queued == 5 && st.dropped == 5, "%llu on disk, %llu queued",
	       (unsigned long long)st.on_disk, (unsigned long long)st.queued);
	CHECK(count_files(dir, "spool-") == 3);
cleanup:
	agent_spool_fsync = fsync;
	agent_spool__free(sp);
}

/* A crash between writing a spool file's temporary and renaming it leaves a
 * .tmp file: the next run removes it (it was never counted as spooled) instead
 * of keeping it on disk for ever. */
TEST(spool_reload_removes_temp_files)
{
	struct agent_spool *sp = NULL;
	struct agent_spool_stats st;
	char dir[512], path[700];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/spool_tmp", unit_tmp_dir());
	CHECK(agent_spool__new(dir, 1000, 1000, &sp) == 0);
	agent_spool__free(sp);
	sp = NULL;
	snprintf(path, sizeof(path), "%s/spool-%020d.bin.tmp", dir, 7);
	CHECK((f = fopen(path, "w")) != NULL);
	fputs("hearth-spool 1\nn=half", f);
	fclose(f);
	CHECK(agent_spool__new(dir, 1000, 1000, &sp) == 0);
	agent_spool__stats(sp, &st);
	CHECK(st.queued == 0);
	CHECK(count_files(dir, "spool-") == 0);
cleanup:
	agent_spool__free(sp);
}

/* Files a previous run left that are not spool files (another magic, a header
 * without its query line, an empty file) are dropped and counted on reload; the
 * good file among them is still sent, body intact. */
TEST(spool_reload_drops_unreadable_files)
{
	static const char *const bad[] = {"not a spool\nq\nbody", "hearth-spool 1\n", ""};
	struct agent_spool *sp = NULL;
	struct agent_spool_stats st;
	char dir[512], path[1024], q[64];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/spool-bad", unit_tmp_dir());
	CHECK(agent_spool__new(dir, 1000, 10000, &sp) == 0);
	agent_spool__free(sp); /* made the directory */
	sp = NULL;
	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/spool-%020d.bin", dir, i + 1);
		CHECK((f = fopen(path, "w")) != NULL);
		fputs(i < 3 ? bad[i] : "hearth-spool 1\nn=good\nbody", f);
		fclose(f);
	}
	CHECK(agent_spool__new(dir, 1000, 10000, &sp) == 0);
	CHECK(pop_query(sp, q, sizeof(q)) == 0);
	CHECK_BUFEQ(q, "n=good");
	CHECK(pop_query(sp, q, sizeof(q)) == -ENOENT);
	agent_spool__stats(sp, &st);
	CHECKF(st.dropped == 3, "%llu", (unsigned long long)st.dropped);
cleanup:
	agent_spool__free(sp);
}
