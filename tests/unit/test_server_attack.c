/*
 * The attack suite: every route of the server's table (server_routes) attacked with
 * the generic attacks, against a real `hearth server` process with a token — the
 * production build ($HEARTH), whose peak RSS is checked, then the ASan/UBSan build
 * ($HEARTH-asan, when built), which must survive all of it. Throughout, /healthz
 * must answer within 1 s from the attacking address.
 *
 *   unauthenticated  no token, a 60 MiB body announced: 401 from the headers
 *   wrong method     DELETE, and the other of GET/POST with a body announced: 405
 *   oversized        Content-Length one over the route's cap: 413 from the headers
 *   bomb             4 gzip bombs at once to each route that decodes a body: 4xx,
 *                    peak RSS within the decode budget × the route's slots
 *   slow headers     a byte every 250 ms: closed by the header deadline
 *   flood            SERVER_MAX_CONNECTIONS + 100 half-sent requests from one
 *                    address: new clients (from it too) still get in
 *   long profiles    4 /debug/pprof/profile?seconds=3 hold no thread: queries go on
 *
 * Figures are printed on the PASS lines.
 */
#include "unit.h"
#include "server/server.h"
#include "server/server_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOKEN "attack-suite-token"
#define AUTH  "Authorization: Bearer " TOKEN "\r\n"

struct srv {
	pid_t pid;
	int port;
	char dir[256];
	const char *bin;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* VmHWM (peak RSS) of pid in KiB, -1 if unreadable. */
static long peak_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Resets the peak RSS of pid to its current RSS (Linux's clear_refs "5"). */
static void reset_peak(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/clear_refs", (int)pid);
	if ((fd = open(path, O_WRONLY)) >= 0) {
		(void)!write(fd, "5", 1);
		close(fd);
	}
}

static int srv_start(struct srv *v, const char *bin)
{
	char path[512], buf[4096];
	int64_t end = now_ms() + 30000;
	FILE *f;

	v->bin = bin;
	snprintf(v->dir, sizeof(v->dir), "%s/srv-XXXXXX", unit_tmp_dir());
	if (!mkdtemp(v->dir))
		return -errno;
	snprintf(path, sizeof(path), "%s/token", v->dir);
	if (!(f = fopen(path, "w")))
		return -errno;
	fputs(TOKEN "\n", f);
	fclose(f);
	chmod(path, 0600);
	if ((v->pid = fork()) < 0)
		return -errno;
	if (v->pid == 0) {
		char data[300], log[300];

		snprintf(data, sizeof(data), "%s/data", v->dir);
		snprintf(log, sizeof(log), "%s/log", v->dir);
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(bin, bin, "server", "--data", data, "--listen", "127.0.0.1:0",
		      "--auth-token-file", path, (char *)NULL);
		_exit(127);
	}
	snprintf(path, sizeof(path), "%s/log", v->dir);
	while (now_ms() < end) {
		size_t n = 0;
		char *u;

		if ((f = fopen(path, "r"))) {
			n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
		}
		buf[n] = '\0';
		if ((u = strstr(buf, "http://127.0.0.1:")) && (v->port = atoi(u + 17)) > 0)
			return 0;
		if (waitpid(v->pid, NULL, WNOHANG) == v->pid)
			return -ECHILD;
		usleep(50000);
	}
	return -ETIMEDOUT;
}

/* SIGTERM, then waits for a clean exit (0). */
static int srv_stop(struct srv *v)
{
	int st = 0;

	if (v->pid <= 0)
		return 0;
	kill(v->pid, SIGTERM);
	if (waitpid(v->pid, &st, 0) != v->pid)
		return -1;
	v->pid = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int dial(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int send_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);

		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads until a status line and the end of the headers, or close/timeout: the
 * status, 0 when the server closed without one, -1 on timeout. */
static int read_status(int fd, int timeout_ms)
{
	char buf[2048];
	size_t n = 0;
	int64_t end = now_ms() + timeout_ms;

	while (n < sizeof(buf) - 1) {
		struct pollfd p = {fd, POLLIN, 0};
		int64_t left = end - now_ms();
		ssize_t got;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		got = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);
		if (got <= 0)
			break;
		n += (size_t)got;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	buf[n] = '\0';
	return !strncmp(buf, "HTTP/1.1 ", 9) ? atoi(buf + 9) : 0;
}

/* One request on a new connection: the status (see read_status). */
static int request(int port, const char *head, const void *body, size_t len, int timeout_ms)
{
	int fd = dial(port), st;

	if (fd < 0)
		return -2;
	if (send_all(fd, head, strlen(head)) || (len && send_all(fd, body, len))) {
		/* the server may answer and close before taking the whole body */
		st = read_status(fd, timeout_ms);
		close(fd);
		return st;
	}
	st = read_status(fd, timeout_ms);
	close(fd);
	return st;
}

/* /healthz's time in ms on a new connection, or -1 when it did not answer 200. */
static int64_t healthz_ms(int port)
{
	int64_t t0 = now_ms();
	int st = request(port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", NULL, 0, 5000);

	return st == 200 ? now_ms() - t0 : -1;
}

/* A concrete path of a route (a prefix route gets a real endpoint under it). */
static const char *route_path(const struct server_route *rt)
{
	if (!strcmp(rt->path, "/api/"))
		return "/api/labels";
	if (!strcmp(rt->path, "/querier.v1.QuerierService/"))
		return "/querier.v1.QuerierService/LabelNames";
	if (!strcmp(rt->path, "/pyroscope/"))
		return "/pyroscope/label-values?label=__name__";
	if (!strcmp(rt->path, "/"))
		return "/index.html";
	return rt->path;
}

static const char *route_method(const struct server_route *rt)
{
	return rt->methods & SERVER_M_POST ? "POST" : "GET";
}

/* The content type a route's body is decoded as. */
static const char *route_ctype(const struct server_route *rt)
{
	if (!strcmp(rt->path, "/v1development/profiles"))
		return "application/x-protobuf";
	if (!strncmp(rt->path, "/querier", 8))
		return "application/json";
	return "application/octet-stream";
}

static size_t route_cap(const struct server_route *rt)
{
	return rt->max_body == SERVER_BODY_OPT ? SERVER_DEFAULT_MAX_BODY : rt->max_body;
}

/* 401, 405 and 413, answered from the headers (the body is never sent). */
static int header_attacks(struct srv *v, const struct server_route *rt, char *why, size_t n)
{
	const char *path = route_path(rt), *m = route_method(rt);
	char head[1024];
	int st;

	if (!rt->open) {
		snprintf(head, sizeof(head),
			 "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: 62914560\r\n\r\n", m, path);
		if ((st = request(v->port, head, NULL, 0, 5000)) != 401)
			return snprintf(why, n, "unauthenticated: %d, want 401", st), -1;
	}
	snprintf(head, sizeof(head), "DELETE %s HTTP/1.1\r\nHost: x\r\n" AUTH "\r\n", path);
	if ((st = request(v->port, head, NULL, 0, 5000)) != 405)
		return snprintf(why, n, "DELETE: %d, want 405", st), -1;
	snprintf(head, sizeof(head),
		 "%s %s HTTP/1.1\r\nHost: x\r\n" AUTH "Content-Length: 62914560\r\n\r\n",
		 rt->methods & SERVER_M_POST ? "GET" : "POST", path);
	if ((st = request(v->port, head, NULL, 0, 5000)) != 405)
		return snprintf(why, n, "other method with a body: %d, want 405", st), -1;
	snprintf(head, sizeof(head),
		 "%s %s HTTP/1.1\r\nHost: x\r\n" AUTH
		 "Content-Type: %s\r\nContent-Length: %zu\r\n\r\n",
		 m, path, route_ctype(rt), route_cap(rt) + 1);
	if ((st = request(v->port, head, NULL, 0, 5000)) != 413)
		return snprintf(why, n, "Content-Length cap+1: %d, want 413", st), -1;
	return 0;
}

struct bomb_arg {
	int port;
	const char *head;
	const uint8_t *body;
	size_t len;
	int status;
};

static void *bomb_main(void *p)
{
	struct bomb_arg *a = p;

	a->status = request(a->port, a->head, a->body, a->len, 60000);
	return NULL;
}

#define BOMBS 4

/* BOMBS gzip bombs at once; every answer a 4xx; *peak_mb: the RSS they added. */
static int bomb_attack(struct srv *v, const struct server_route *rt, const uint8_t *bomb,
		       size_t blen, long *peak_mb, char *why, size_t n)
{
	char head[1024];
	struct bomb_arg a[BOMBS];
	pthread_t t[BOMBS];
	long base;

	snprintf(head, sizeof(head),
		 "POST %s%s HTTP/1.1\r\nHost: x\r\n" AUTH
		 "Content-Type: %s\r\nContent-Encoding: gzip\r\nContent-Length: %zu\r\n\r\n",
		 route_path(rt), strcmp(rt->path, "/ingest") ? "" : "?name=bomb&format=pprof",
		 route_ctype(rt), blen);
	reset_peak(v->pid);
	base = peak_kb(v->pid);
	for (int i = 0; i < BOMBS; i++) {
		a[i] = (struct bomb_arg){v->port, head, bomb, blen, 0};
		pthread_create(&t[i], NULL, bomb_main, &a[i]);
	}
	for (int i = 0; i < BOMBS; i++)
		pthread_join(t[i], NULL);
	*peak_mb = (peak_kb(v->pid) - base) / 1024;
	for (int i = 0; i < BOMBS; i++)
		if (a[i].status < 400 || a[i].status >= 500)
			return snprintf(why, n, "bomb %d: %d, want 4xx", i, a[i].status), -1;
	return 0;
}

struct slow {
	int fd;
	int64_t closed_ms; /* when the server closed it, 0 while open */
};

/* The server closed fd (end of file or reset) — a non-blocking check. */
static bool closed_by_server(int fd)
{
	char c;
	ssize_t r = recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);

	return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Trickles a byte to each slow connection and times /healthz every 250 ms until
 * told to stop: the slowest /healthz and when the server closed each trickle. */
struct watch {
	struct srv *v;
	struct slow *slow;
	size_t n;
	int64_t t0, worst_ms;
	int stop; /* atomic */
};

static void *watch_main(void *p)
{
	struct watch *w = p;

	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		int64_t h = healthz_ms(w->v->port);

		if (h < 0 || h > w->worst_ms)
			w->worst_ms = h < 0 ? 99999 : h;
		for (size_t i = 0; i < w->n; i++) {
			if (w->slow[i].closed_ms)
				continue;
			if (closed_by_server(w->slow[i].fd) ||
			    send(w->slow[i].fd, "X", 1, MSG_NOSIGNAL) < 0)
				w->slow[i].closed_ms = now_ms() - w->t0;
		}
		usleep(250000);
	}
	return NULL;
}

/* Whether the server is alive and answers /healthz. */
static bool alive(struct srv *v)
{
	return waitpid(v->pid, NULL, WNOHANG) == 0 && healthz_ms(v->port) >= 0;
}

static void run_suite(const char *bin, bool check_rss, int *unit_failed)
{
	size_t nroutes, blen = 0;
	const struct server_route *routes = server_routes(&nroutes);
	struct srv v = {0};
	struct slow slow[32] = {{0}};
	int *flood = NULL, nflood = 0;
	uint8_t *bomb = NULL;
	int64_t t0, last_close = 0;
	struct watch w = {0};
	pthread_t wt;
	bool watching = false;
	char why[256];
	int fails = 0;

	CHECKF(srv_start(&v, bin) == 0, "%s server did not start", bin);
	CHECK(nroutes <= sizeof(slow) / sizeof(slow[0]));

	/* slow headers: one trickle per route, all at once, checked while the rest runs */
	for (size_t i = 0; i < nroutes; i++) {
		char head[256];

		snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: x\r\n",
			 route_method(&routes[i]), route_path(&routes[i]));
		CHECK((slow[i].fd = dial(v.port)) >= 0);
		CHECK(send_all(slow[i].fd, head, strlen(head)) == 0);
	}
	t0 = now_ms();
	w = (struct watch){&v, slow, nroutes, t0, 0, 0};
	CHECK(pthread_create(&wt, NULL, watch_main, &w) == 0);
	watching = true;

	for (size_t i = 0; i < nroutes; i++) {
		if (header_attacks(&v, &routes[i], why, sizeof(why))) {
			fprintf(stderr, "  %s %s: %s\n", bin, routes[i].path, why);
			fails++;
		}
	}
	printf("%s attack_headers_%s (401/405/413 from the headers on %zu routes)\n",
	       fails ? "FAIL" : "PASS", check_rss ? "prod" : "asan", nroutes);

	/* bombs: 64 MiB of zeros in ~64 KiB of gzip to every route that decodes */
	CHECK((bomb = unit_gzip_zeros(64u << 20, &blen)) != NULL);
	for (size_t i = 0; i < nroutes; i++) {
		const struct server_route *rt = &routes[i];
		int slots =
		    rt->cls == SERVER_CLASS_DECODE ? SERVER_MAX_DECODES : SERVER_MAX_QUERIES;
		long added = 0, limit = (long)((rt->budget ? rt->budget(blen) : 0) >> 20) * slots;

		if (!rt->budget)
			continue;
		if (bomb_attack(&v, rt, bomb, blen, &added, why, sizeof(why))) {
			printf("FAIL attack_bomb %s: %s\n", rt->path, why);
			*unit_failed = 1;
			continue;
		}
		if (check_rss && added > limit) {
			printf("FAIL attack_bomb %s: peak RSS +%ld MiB over %d slots × budget = "
			       "%ld MiB\n",
			       rt->path, added, slots, limit);
			*unit_failed = 1;
			continue;
		}
		if (check_rss)
			printf("PASS attack_bomb %s (%d bombs of %zu KiB: 4xx; peak RSS +%ld MiB, "
			       "limit %ld MiB)\n",
			       rt->path, BOMBS, blen >> 10, added, limit);
		else /* ASan's shadow and quarantine: RSS says nothing of hearth's own */
			printf("PASS attack_bomb %s (%d bombs of %zu KiB: 4xx; the ASan build "
			       "survived)\n",
			       rt->path, BOMBS, blen >> 10);
	}

	/* long profiles hold no thread: queries and /healthz go on meanwhile */
	{
		int pf[SERVER_MAX_PROFILES_IN_FLIGHT];
		const char *ph =
		    "GET /debug/pprof/profile?seconds=3 HTTP/1.1\r\nHost: x\r\n" AUTH "\r\n";
		int64_t q0, qms, hms;
		int st, ok = 0;

		for (int i = 0; i < SERVER_MAX_PROFILES_IN_FLIGHT; i++) {
			pf[i] = dial(v.port);
			send_all(pf[i], ph, strlen(ph));
		}
		q0 = now_ms();
		st = request(v.port, "GET /api/labels HTTP/1.1\r\nHost: x\r\n" AUTH "\r\n", NULL, 0,
			     5000);
		qms = now_ms() - q0;
		hms = healthz_ms(v.port);
		for (int i = 0; i < SERVER_MAX_PROFILES_IN_FLIGHT; i++) {
			ok += read_status(pf[i], 15000) == 200;
			close(pf[i]);
		}
		printf("%s attack_long_profiles (%d profiles of 3 s answered 200 of %d; meanwhile "
		       "/api/labels %d in %lld ms, /healthz in %lld ms)\n",
		       st == 200 && qms <= 1000 && hms >= 0 && hms <= 1000 &&
			       ok == SERVER_MAX_PROFILES_IN_FLIGHT
			   ? "PASS"
			   : "FAIL",
		       ok, SERVER_MAX_PROFILES_IN_FLIGHT, st, (long long)qms, (long long)hms);
		if (!(st == 200 && qms <= 1000 && hms >= 0 && hms <= 1000 &&
		      ok == SERVER_MAX_PROFILES_IN_FLIGHT))
			*unit_failed = 1;
	}

	/* the trickles: closed by the header deadline (the sweeper looks every 100 ms) */
	while (now_ms() < t0 + (SERVER_HEADER_DEADLINE_S + 3) * 1000) {
		size_t open_n = 0;

		for (size_t i = 0; i < nroutes; i++)
			open_n += !__atomic_load_n(&slow[i].closed_ms, __ATOMIC_RELAXED);
		if (!open_n)
			break;
		usleep(100000);
	}
	for (size_t i = 0; i < nroutes; i++) {
		int64_t c = __atomic_load_n(&slow[i].closed_ms, __ATOMIC_RELAXED);

		if (!c || c > (SERVER_HEADER_DEADLINE_S + 3) * 1000) {
			printf("FAIL attack_slow_headers %s: still open %d s after its start\n",
			       routes[i].path, SERVER_HEADER_DEADLINE_S + 3);
			*unit_failed = 1;
		} else if (c < SERVER_HEADER_DEADLINE_S * 1000 - 500) {
			printf("FAIL attack_slow_headers %s: closed after %lld ms, before the "
			       "deadline\n",
			       routes[i].path, (long long)c);
			*unit_failed = 1;
		} else if (c > last_close) {
			last_close = c;
		}
	}
	printf("PASS attack_slow_headers_checked (%zu trickles, a byte every 250 ms; the last "
	       "closed after %lld ms, deadline %d s)\n",
	       nroutes, (long long)last_close, SERVER_HEADER_DEADLINE_S);

	/* flood: more half-sent requests than the server has connections */
	{
		struct rlimit rl;

		getrlimit(RLIMIT_NOFILE, &rl);
		if (rl.rlim_cur < 4096 && rl.rlim_max >= 4096) {
			rl.rlim_cur = 4096;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	CHECK((flood = calloc(SERVER_MAX_CONNECTIONS + 100, sizeof(int))) != NULL);
	for (; nflood < SERVER_MAX_CONNECTIONS + 100; nflood++) {
		if ((flood[nflood] = dial(v.port)) < 0)
			break;
		send_all(flood[nflood], "GET /healthz HTTP/1.1\r\nHo", 25);
	}
	{
		int64_t ms = healthz_ms(v.port);

		printf("%s attack_flood_healthz (%d half-sent requests from this address; "
		       "/healthz in %lld ms)\n",
		       ms >= 0 && ms <= 1000 ? "PASS" : "FAIL", nflood, (long long)ms);
		if (ms < 0 || ms > 1000)
			*unit_failed = 1;
	}
	for (int i = 0; i < nflood; i++)
		close(flood[i]);

	__atomic_store_n(&w.stop, 1, __ATOMIC_RELAXED);
	pthread_join(wt, NULL);
	watching = false;
	printf("%s attack_healthz_throughout (slowest /healthz %lld ms, limit 1000)\n",
	       w.worst_ms <= 1000 ? "PASS" : "FAIL", (long long)w.worst_ms);
	if (w.worst_ms > 1000)
		*unit_failed = 1;
	CHECKF(alive(&v), "%s died during the attacks (log in %s)", bin, v.dir);
	CHECKF(srv_stop(&v) == 0, "%s did not exit cleanly after SIGTERM (log in %s/log)", bin,
	       v.dir);
	CHECK(fails == 0);
cleanup:
	if (watching) {
		__atomic_store_n(&w.stop, 1, __ATOMIC_RELAXED);
		pthread_join(wt, NULL);
	}
	for (size_t i = 0; i < sizeof(slow) / sizeof(slow[0]); i++)
		if (slow[i].fd > 0)
			close(slow[i].fd);
	srv_stop(&v);
	free(flood);
	free(bomb);
}

TEST(attack_suite_production_build)
{
	const char *bin = getenv("HEARTH");

	CHECKF(bin && access(bin, X_OK) == 0, "HEARTH='%s' is not the hearth binary",
	       bin ? bin : "");
	run_suite(bin, true, unit_failed);
cleanup:;
}

TEST(attack_suite_asan_build)
{
	const char *hearth = getenv("HEARTH");
	char bin[512];

	CHECK(hearth != NULL);
	snprintf(bin, sizeof(bin), "%s-asan", hearth);
	CHECKF(access(bin, X_OK) == 0, "%s is not built (make build/hearth-asan)", bin);
	run_suite(bin, false, unit_failed);
cleanup:;
}
