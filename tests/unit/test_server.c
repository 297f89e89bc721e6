/*
 * Tests of src/server: request parsing (Pyroscope names, multipart), the text
 * profile parser it uses (src/profile/folded_parse.c), a real HTTP round trip
 * on a temporary store (folded ingest, query back, every bad input answered
 * 4xx JSON with nothing stored, auth, body limit), and the time rules of the
 * store path /ingest and hearth run share (clock skew, duration clamp).
 */
#include "unit.h"

#include "ingest/ingest.h"
#include "profile/profile.h"
#include "server/server.h"
#include "server/server_impl.h"
#include "store/store.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

TEST(parse_name)
{
	struct server_labels l = {0};
	char err[256];

	CHECK(server_parse_name("myapp{env=prod,region=\"eu\"}", &l, err, sizeof(err)) == 0);
	CHECK(l.n == 3);
	CHECK_STREQ(l.keys[0], INGEST_NAME_LABEL);
	CHECK_STREQ(l.vals[0], "myapp");
	CHECK_STREQ(l.keys[2], "region");
	CHECK_STREQ(l.vals[2], "eu");
	server_labels__fini(&l);
	CHECK(server_parse_name("plain", &l, err, sizeof(err)) == 0 && l.n == 1);
	server_labels__fini(&l);
	CHECK(server_parse_name("app{env=prod", &l, err, sizeof(err)) == -EINVAL);
	server_labels__fini(&l);
	CHECK(server_parse_name("app{1bad=x}", &l, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "1bad"));
	server_labels__fini(&l);
	CHECK(server_parse_name("app{novalue}", &l, err, sizeof(err)) == -EINVAL);
	server_labels__fini(&l);
	CHECK(server_parse_name("", &l, err, sizeof(err)) == -EINVAL);
cleanup:
	server_labels__fini(&l);
}

TEST(parse_name_too_many_labels)
{
	struct server_labels l = {0};
	char name[4096] = "app{", err[256];

	for (int i = 0; i < SERVER_MAX_LABELS + 1; i++)
		snprintf(name + strlen(name), sizeof(name) - strlen(name), "k%d=v,", i);
	strcat(name, "}");
	CHECK(server_parse_name(name, &l, err, sizeof(err)) == -E2BIG);
cleanup:
	server_labels__fini(&l);
}

TEST(multipart)
{
	const char *body = "--XyZ\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nnope\r\n"
			   "--XyZ\r\nContent-Disposition: form-data; name=\"profile\"; "
			   "filename=\"p\"\r\nContent-Type: application/octet-stream\r\n\r\n"
			   "DATA\r\n--XyZ--\r\n";
	const uint8_t *part;
	size_t n;

	CHECK(server_multipart_field("multipart/form-data; boundary=XyZ", (const uint8_t *)body,
				     strlen(body), "profile", &part, &n) == 0);
	CHECK(n == 4 && !memcmp(part, "DATA", 4));
	CHECK(server_multipart_field("multipart/form-data; boundary=XyZ", (const uint8_t *)body,
				     strlen(body), "missing", &part, &n) == -ENOENT);
	CHECK(server_multipart_field("multipart/form-data", (const uint8_t *)body, strlen(body),
				     "profile", &part, &n) == -EINVAL);
	CHECK(server_multipart_field("multipart/form-data; boundary=XyZ", (const uint8_t *)body, 30,
				     "profile", &part, &n) != 0);
cleanup:;
}

TEST(text_parse)
{
	const char *folded = "main;work;hot 7\nmain;work;cold 3\n\nmain;idle 0\r\n";
	struct profile *p = NULL;
	char err[256];

	CHECK(profile_text_parse(folded, strlen(folded), false, 10000000, &p, err, sizeof(err)) ==
	      0);
	CHECK(profile__total(p, 0) == 10);
	CHECK(profile__total(p, 1) == 100000000);
	CHECK(profile__n_functions(p) == 4);
	profile__free(p);
	p = NULL;
	CHECK(profile_text_parse("a;b\na;b\nc\n", 10, true, 10, &p, err, sizeof(err)) == 0);
	CHECK(profile__total(p, 0) == 3);
	profile__free(p);
	p = NULL;
	CHECK(profile_text_parse("a;b x\n", 6, false, 10, &p, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "line 1"));
	CHECK(profile_text_parse("ok 1\nno_count\n", 14, false, 10, &p, err, sizeof(err)) ==
	      -EINVAL);
	CHECK(strstr(err, "line 2"));
	CHECK(profile_text_parse(";;; 5\n", 6, false, 10, &p, err, sizeof(err)) == -EINVAL);
	CHECK(profile_text_parse("a\0b 1\n", 6, false, 10, &p, err, sizeof(err)) == -EINVAL);
	CHECK(p == NULL);
cleanup:
	profile__free(p);
}

/* The largest folded count (2^53) at sampleRate=1 (period 1 s): its cpu
 * nanoseconds (count x period) saturate at INT64_MAX, and so does the sum of two. */
TEST(text_parse_count_times_period_saturates)
{
	const char *big = "a;b 9007199254740992\na;c 9007199254740992\n";
	struct profile *p = NULL;
	struct profile_sample sm;
	char err[256];

	CHECKF(profile_text_parse(big, strlen(big), false, 1000000000, &p, err, sizeof(err)) == 0,
	       "%s", err);
	CHECK(profile__sample(p, 0, &sm) == 0 && sm.values[0] == 9007199254740992LL);
	CHECKF(sm.values[1] == INT64_MAX, "%lld", (long long)sm.values[1]);
	CHECK(profile__total(p, 1) == INT64_MAX);
	CHECK(profile__total(p, 0) == 2 * 9007199254740992LL);
cleanup:
	profile__free(p);
}

/* ---- HTTP round trip ---- */

struct http {
	long status;
	char *body;
	size_t len;
};

static size_t collect(char *p, size_t size, size_t n, void *ctx)
{
	struct http *h = ctx;
	char *b = realloc(h->body, h->len + size * n + 1);

	if (!b)
		return 0;
	memcpy(b + h->len, p, size * n);
	h->body = b;
	h->len += size * n;
	b[h->len] = '\0';
	return size * n;
}

/* GET (post == NULL) or POST to http://127.0.0.1:port + path. */
static int http_do(int port, const char *path, const void *post, size_t len, const char *auth,
		   struct http *h)
{
	CURL *c = curl_easy_init();
	struct curl_slist *hdrs = NULL;
	char url[4096];
	CURLcode rc;

	free(h->body);
	memset(h, 0, sizeof(*h));
	if (!c)
		return -ENOMEM;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (post) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
	}
	if (auth)
		hdrs = curl_slist_append(hdrs, auth);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &h->status);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
	return rc == CURLE_OK ? 0 : -EIO;
}

/* A 4xx JSON error naming `what`. */
static int is_error(const struct http *h, long status, const char *what)
{
	if (h->status != status || !h->body || strncmp(h->body, "{\"error\": \"", 11) ||
	    !strstr(h->body, what)) {
		fprintf(stderr, "  got %ld %s, want %ld naming '%s'\n", h->status,
			h->body ? h->body : "", status, what);
		return 0;
	}
	return 1;
}

static int stored_profiles(struct store *st)
{
	struct store_stats ss;

	return store__stats(st, &ss) ? -1 : (int)ss.profiles;
}

/* A gzip stream that inflates to `n` zero bytes (a decompression bomb), built in chunks. */
TEST(http_ingest_query_and_bad_input)
{
	struct store_opts so = {
	    .sample_labels = ingest_sample_labels, .no_fsync = true, .max_series = 50};
	struct server_opts o = {.listen = "127.0.0.1:0", .max_body = 1 << 20};
	struct store *st = NULL;
	struct server *srv = NULL;
	struct http h = {0};
	char err[512], dir[512], path[1024];
	const char *folded = "main;work;hot 7\nmain;work;cold 3\n";
	uint8_t *bomb = NULL, *big = NULL;
	size_t bomb_len = 0;
	int port;

	snprintf(dir, sizeof(dir), "%s/store-http", unit_tmp_dir());
	CHECK(store__open(dir, &so, &st, err, sizeof(err)) == 0);
	o.store = st;
	o.log = fopen("/dev/null", "w");
	CHECK(server__start(&o, &srv, err, sizeof(err)) == 0);
	port = server__port(srv);
	CHECK(port > 0);
	CHECK(http_do(port, "/healthz", NULL, 0, NULL, &h) == 0 && h.status == 200);
	CHECK(http_do(port, "/ingest?name=app{env=t}&from=1700000000&until=1700000010", folded,
		      strlen(folded), NULL, &h) == 0);
	CHECKF(h.status == 200, "%ld %s", h.status, h.body);
	CHECK(stored_profiles(st) == 1);
	CHECK(http_do(port,
		      "/api/"
		      "profile?format=folded&query=app%7Benv%3D%22t%22%7D&from=1699999990&until="
		      "1700000100",
		      NULL, 0, NULL, &h) == 0);
	CHECKF(h.status == 200 && strstr(h.body, "main;work;hot 7"), "%ld %s", h.status, h.body);
	CHECK(http_do(port, "/api/series?from=1699999990&until=1700000100", NULL, 0, NULL, &h) ==
	      0);
	CHECKF(h.status == 200 && strstr(h.body, "\"env\""), "%ld %s", h.status, h.body);

	/* Bad input: each answered 4xx JSON naming the problem, nothing stored. */
	CHECK(http_do(port, "/ingest?name=app&format=pprof", "garbage!", 8, NULL, &h) == 0);
	CHECK(is_error(&h, 400, "malformed pprof"));
	CHECK(http_do(port, "/ingest?name=app&format=pprof", "\x1f\x8b\x08\x00garbage", 12, NULL,
		      &h) == 0);
	CHECK(is_error(&h, 400, "pprof"));
	CHECK((bomb = unit_gzip_zeros(PPROF_MAX_INFLATED + (1u << 20), &bomb_len)) != NULL);
	{
		struct server *s2 = NULL;
		struct server_opts o2 = o;

		o2.max_body = 64 << 20;
		CHECK(server__start(&o2, &s2, err, sizeof(err)) == 0);
		CHECK(http_do(server__port(s2), "/ingest?name=app&format=pprof", bomb, bomb_len,
			      NULL, &h) == 0);
		server__stop(s2);
		CHECK(is_error(&h, 413, "memory budget"));
	}
	CHECK((big = calloc(1, (1 << 20) + 10)) != NULL);
	CHECK(http_do(port, "/ingest?name=app", big, (1 << 20) + 10, NULL, &h) == 0);
	CHECK(is_error(&h, 413, "over the limit"));
	CHECK(http_do(port, "/ingest?name=app&format=jpeg", folded, strlen(folded), NULL, &h) == 0);
	CHECK(is_error(&h, 400, "unknown format 'jpeg'"));
	CHECK(http_do(port, "/ingest?name=app&from=20&until=10", folded, strlen(folded), NULL,
		      &h) == 0);
	CHECK(is_error(&h, 400, "'from' is after 'until'"));
	CHECK(http_do(port,
		      "/ingest?name=app%7Bk0=1,k1=1,k2=1,k3=1,k4=1,k5=1,k6=1,k7=1,k8=1,k9=1,"
		      "k10=1,k11=1,k12=1,k13=1,k14=1,k15=1,k16=1,k17=1,k18=1,k19=1,k20=1,k21=1,"
		      "k22=1,k23=1,k24=1,k25=1,k26=1,k27=1,k28=1,k29=1,k30=1,k31=1,k32=1%7D",
		      folded, strlen(folded), NULL, &h) == 0);
	CHECK(is_error(&h, 400, "too many labels"));
	CHECK(http_do(port, "/ingest?name=app", "no count here\n", 14, NULL, &h) == 0);
	CHECK(is_error(&h, 400, "malformed folded"));
	CHECK(http_do(port, "/api/profile?query=%7Bprocess%3D%3D%22x%22%7D", NULL, 0, NULL, &h) ==
	      0);
	CHECK(is_error(&h, 400, ""));
	CHECK(http_do(port, "/api/profile?from=now&until=now-1h", NULL, 0, NULL, &h) == 0);
	CHECK(is_error(&h, 400, "after"));
	for (int i = 0; i < 60; i++) {
		snprintf(path, sizeof(path), "/ingest?name=many%%7Bi=%d%%7D", i);
		CHECK(http_do(port, path, folded, strlen(folded), NULL, &h) == 0);
		if (h.status != 200)
			break;
	}
	CHECK(is_error(&h, 429, "series"));
	CHECK(http_do(port, "/nope", NULL, 0, NULL, &h) == 0 && is_error(&h, 404, "/nope"));
	CHECK(http_do(port, "/metrics", NULL, 0, NULL, &h) == 0 && h.status == 200);
	CHECK(strstr(h.body, "hearth_rejected_requests_total{reason=\"body_too_large\"} 1"));
	CHECK(strstr(h.body, "hearth_store_series"));
	CHECK(strstr(h.body, "hearth_store_up{backend=\"embedded\"} 1\n"));
	/* Still serving, and nothing of the rejected requests was stored. */
	CHECK(http_do(port,
		      "/api/profile?format=folded&query=app%7B%7D&from=1699999990&until=1700000100",
		      NULL, 0, NULL, &h) == 0);
	CHECKF(h.status == 200 && strstr(h.body, "main;work;hot 7\n"), "%s", h.body);
cleanup:
	free(h.body);
	free(bomb);
	free(big);
	server__stop(srv);
	store__close(st);
	if (o.log)
		fclose(o.log);
}

/* A flat profile (as hearth run's agent hands over) of "main;hot 5" at t for dur. */
static struct profile_flat *flat_at(int64_t t, int64_t dur)
{
	struct profile *p = NULL;
	struct profile_flat *f = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	char err[256];

	if (profile_text_parse("main;hot 5\n", 11, false, 10000000, &p, err, sizeof(err)) == 0) {
		profile__set_time(p, t, dur);
		if (pprof_encode(p, &buf, &len) == 0)
			pprof_decode_flat(buf, len, &f, err, sizeof(err));
	}
	free(buf);
	profile__free(p);
	return f;
}

/* ingest__store of f under __name__=skew. */
static int ingest_skew(struct store *st, struct profile_flat *f, char *err, size_t errlen)
{
	static const struct store_label l[] = {{INGEST_NAME_LABEL, "skew"}};
	struct ingest_request req = {.labels = l, .n_labels = 1, .profile = f};

	return ingest__store(st, &req, ingest_now_ns(), NULL, err, errlen);
}

/*
 * The store path shared by /ingest and hearth run: a profile dated beyond the
 * clock skew is refused with a message naming its time; a huge duration
 * (2^62 ns) is clamped, so the chunk does not outlive the retention.
 */
TEST(store_path_refuses_future_times_and_clamps_durations)
{
	struct store_opts so = {.sample_labels = ingest_sample_labels,
				.no_fsync = true,
				.no_auto_rollup = true,
				.retention_ns = 3600 * 1000000000LL};
	struct server_opts o = {.listen = "127.0.0.1:0"};
	struct store *st = NULL;
	struct server *srv = NULL;
	struct profile_flat *f = NULL;
	struct timespec ts;
	char err[512], dir[512];
	int64_t now, h = 3600 * 1000000000LL;
	uint64_t deleted = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = ts.tv_sec * 1000000000LL + ts.tv_nsec;
	snprintf(dir, sizeof(dir), "%s/store-skew", unit_tmp_dir());
	CHECK(store__open(dir, &so, &st, err, sizeof(err)) == 0);
	o.store = st;
	o.log = fopen("/dev/null", "w");
	CHECK(server__start(&o, &srv, err, sizeof(err)) == 0);

	CHECK((f = flat_at(now + 24 * h, 10000000000LL)) != NULL);
	err[0] = 0;
	CHECKF(ingest_skew(st, f, err, sizeof(err)) == -ERANGE, "%s", err);
	CHECKF(strstr(err, "ahead of this server's clock") && strstr(err, "clock skew of 600 s"),
	       "%s", err);
	CHECK(stored_profiles(st) == 0);
	profile_flat__free(f);

	CHECK((f = flat_at(now + 5 * 60 * 1000000000LL, 10000000000LL)) != NULL);
	CHECKF(ingest_skew(st, f, err, sizeof(err)) == 0, "%s", err);
	profile_flat__free(f);
	CHECK((f = flat_at(now - 60 * 1000000000LL, 1LL << 62)) != NULL);
	CHECKF(ingest_skew(st, f, err, sizeof(err)) == 0, "%s", err);
	CHECK(stored_profiles(st) == 2);
	/* Two hours past retention both are gone: the 2^62 ns one was clamped. */
	CHECK(store__maintain(st, now + 3 * h, &deleted) == 0);
	CHECKF(deleted > 0 && stored_profiles(st) == 0, "deleted %llu, %d left",
	       (unsigned long long)deleted, stored_profiles(st));
cleanup:
	profile_flat__free(f);
	server__stop(srv);
	store__close(st);
	if (o.log)
		fclose(o.log);
}

TEST(http_auth)
{
	struct server_opts o = {.listen = "127.0.0.1:0", .auth_token = "s3cret"};
	struct server *srv = NULL;
	struct http h = {0};
	char err[256];

	o.log = fopen("/dev/null", "w");
	CHECK(server__start(&o, &srv, err, sizeof(err)) == 0);
	CHECK(http_do(server__port(srv), "/healthz", NULL, 0, NULL, &h) == 0 && h.status == 200);
	CHECK(http_do(server__port(srv), "/metrics", NULL, 0, NULL, &h) == 0);
	CHECK(is_error(&h, 401, "Bearer"));
	CHECK(http_do(server__port(srv), "/metrics", NULL, 0, "Authorization: Bearer wrong", &h) ==
	      0);
	CHECK(is_error(&h, 401, "Bearer"));
	CHECK(http_do(server__port(srv), "/metrics", NULL, 0, "Authorization: Bearer s3cret", &h) ==
	      0);
	CHECK(h.status == 200);
cleanup:
	free(h.body);
	server__stop(srv);
	if (o.log)
		fclose(o.log);
}

/* A listener without a store (the agent's) refuses the store's routes from the
 * headers, and still serves its own. */
TEST(listener_without_store)
{
	struct server_opts o = {.listen = "127.0.0.1:0"};
	struct server *srv = NULL;
	struct http h = {0};
	char err[256];
	static const char *const paths[] = {"/ingest", "/v1development/profiles",
					    "/querier.v1.QuerierService/LabelNames"};

	o.log = fopen("/dev/null", "w");
	CHECK(server__start(&o, &srv, err, sizeof(err)) == 0);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		CHECK(http_do(server__port(srv), paths[i], "{}", 2, NULL, &h) == 0);
		CHECKF(h.status == 404 && h.body && strstr(h.body, "no store"), "%s: %ld %s",
		       paths[i], h.status, h.body ? h.body : "");
		free(h.body);
		h.body = NULL;
	}
	CHECK(http_do(server__port(srv), "/api/labels", NULL, 0, NULL, &h) == 0);
	CHECK(is_error(&h, 404, "no store"));
	free(h.body);
	h.body = NULL;
	CHECK(http_do(server__port(srv), "/index.html", NULL, 0, NULL, &h) == 0);
	CHECK(is_error(&h, 404, "no such endpoint"));
	free(h.body);
	h.body = NULL;
	CHECK(http_do(server__port(srv), "/metrics", NULL, 0, NULL, &h) == 0 && h.status == 200);
cleanup:
	free(h.body);
	server__stop(srv);
	if (o.log)
		fclose(o.log);
}

/* --tls-cert and --tls-key: both or neither, each a readable PEM file; the error names it. */
TEST(tls_files)
{
	struct server_opts o = {.listen = "127.0.0.1:0", .tls_cert_file = "Makefile"};
	struct server *srv = NULL;
	char err[256] = "";

	CHECK(server__start(&o, &srv, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "--tls-cert needs --tls-key"));
	o.tls_key_file = "Makefile";
	CHECK(server__start(&o, &srv, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "'Makefile': not a PEM file"));
	o.tls_cert_file = "/nonexistent/cert.pem";
	CHECK(server__start(&o, &srv, err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "--tls-cert '/nonexistent/cert.pem'"));
cleanup:
	server__stop(srv);
}

TEST(bad_listen)
{
	struct server_opts o = {.listen = "nonsense"};
	struct server *srv = NULL;
	char err[256] = "";

	CHECK(server__start(&o, &srv, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "nonsense"));
cleanup:
	server__stop(srv);
}

/* docs/api.md's table of route limits is the route table's (server_limits_write):
 * a route added or changed without its docs fails here. */
TEST(docs_list_every_route_limit)
{
	char *doc = NULL, *want = NULL, *a, *b;
	size_t dlen = 0, wlen = 0;
	FILE *f = fopen("docs/api.md", "r"), *m = open_memstream(&want, &wlen);

	CHECK(f && m);
	doc = malloc(1 << 20);
	CHECK(doc);
	dlen = fread(doc, 1, (1 << 20) - 1, f);
	doc[dlen] = '\0';
	server_limits_write(m);
	fclose(m);
	m = NULL;
	CHECK((a = strstr(doc, "<!-- routes:begin")) && (a = strchr(a, '\n')));
	CHECK((b = strstr(a, "<!-- routes:end -->")));
	*b = '\0';
	CHECKF(!strcmp(a + 1, want),
	       "docs/api.md's route table differs from the code's; put this there:\n%s", want);
cleanup:
	if (f)
		fclose(f);
	if (m)
		fclose(m);
	free(doc);
	free(want);
}

/* Which URL paths may name a web UI file (the check behind the 400 answer). */
TEST(web_paths)
{
	static const char *const ok[] = {"/",	  "/index.html", "/js/app.js",	 "/a/b/c.css",
					 "/x..y", "/x.",	 "/img/a.b.png", "/js/"};
	/* dotfiles too: a --web-dir checkout holds .git/ */
	static const char *const bad[] = {
	    "",		 "index.html", "//",	       "/js//app.js",
	    "/.",	 "/..",	       "/../x",	       "/js/../../etc/passwd",
	    "/./x",	 "/js/.",      "/js/..",       "/a/./b",
	    "/.well",	 "/..x",       "/.git/config", "/.env",
	    "/a/.hidden"};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		CHECKF(server_web_path_ok(ok[i]), "'%s' refused", ok[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECKF(!server_web_path_ok(bad[i]), "'%s' accepted", bad[i]);
cleanup:;
}

/* The bearer token check: the whole token, nothing more or less, of any length. */
TEST(token_compare)
{
	char longtok[SERVER_MAX_TOKEN + 16], hdr[SERVER_MAX_TOKEN + 32];

	CHECK(server_token_ok("Bearer s3cret", "s3cret"));
	CHECK(!server_token_ok("Bearer s3cre", "s3cret"));
	CHECK(!server_token_ok("Bearer s3cret2", "s3cret"));
	CHECK(!server_token_ok("Bearer S3cret", "s3cret"));
	CHECK(!server_token_ok("Bearer ", "s3cret"));
	CHECK(!server_token_ok("bearer s3cret", "s3cret"));
	CHECK(!server_token_ok("s3cret", "s3cret"));
	CHECK(!server_token_ok(NULL, "s3cret"));
	/* the longest token there can be, and one byte past it in the header */
	memset(longtok, 'k', SERVER_MAX_TOKEN - 1);
	longtok[SERVER_MAX_TOKEN - 1] = '\0';
	snprintf(hdr, sizeof(hdr), "Bearer %s", longtok);
	CHECK(server_token_ok(hdr, longtok));
	snprintf(hdr, sizeof(hdr), "Bearer %sk", longtok);
	CHECK(!server_token_ok(hdr, longtok));
cleanup:;
}

/* Which --listen addresses are loopback only (the others warn without a token). */
TEST(listen_loopback)
{
	static const char *const lo[] = {"127.0.0.1:4100", "127.5.6.7:0", "localhost:80",
					 "[::1]:4100", "[::ffff:127.0.0.1]:1"};
	static const char *const wide[] = {":4100",	    "0.0.0.0:4100", "[::]:4100",
					   "10.0.0.1:4100", "[fe80::1]:1",  "garbage"};

	CHECK(server_listen_is_loopback(NULL)); /* the default */
	for (size_t i = 0; i < sizeof(lo) / sizeof(lo[0]); i++)
		CHECKF(server_listen_is_loopback(lo[i]), "'%s' not loopback", lo[i]);
	for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]); i++)
		CHECKF(!server_listen_is_loopback(wide[i]), "'%s' loopback", wide[i]);
cleanup:;
}
