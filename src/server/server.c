/*
 * The HTTP server core: the request pipeline every route goes through, on
 * libmicrohttpd's one epoll event thread (handlers run on workers, server_pool.c),
 * bearer-token auth, HTTPS (GnuTLS, when given a certificate), JSON errors and one
 * structured (logfmt) log line per request.
 *
 * The pipeline, declared per route in server_routes.c: on the headers alone, before
 * any body byte, the token (all but /healthz), the route, the method and an
 * announced Content-Length over the route's body cap; the 401/404/405/413 is queued
 * on the first call of the access handler, so libmicrohttpd answers (and sends no
 * "100 Continue") without reading the body. Otherwise the body is read completely (or
 * counted and discarded past the cap) before the handler runs, so a handler sees
 * either all of it or a 413; then the route's memory budget is computed and the
 * handler runs on its class's workers (its slot). The connection limits are in
 * server.h ("Limits").
 */
#include "server_impl.h"
#include "base/base.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <zlib.h>

#define SERVER_DEFAULT_LISTEN "127.0.0.1:4100"
/* Longest request path a log line shows (escaped). */
#define SERVER_LOG_PATH_MAX 512
/* Text answers at least this big are gzipped for clients that accept it: the
 * web UI's 100,000-node tree is ~6 MiB of JSON, ~1.3 MiB gzipped at level 1
 * (~50 ms of CPU), which matters on anything slower than loopback. */
#define SERVER_GZIP_MIN	  (256u << 10)
#define SERVER_GZIP_LEVEL 1

int64_t server_now_ns(void)
{
	return base_clock_ns(CLOCK_REALTIME);
}

/* Request durations and deadlines. */
static int64_t mono_ns(void)
{
	return base_clock_ns(CLOCK_MONOTONIC);
}

void server_log(struct server *s, const char *level, const char *fmt, ...)
{
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	va_list ap;

	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	flockfile(s->log);
	fprintf(s->log, "ts=%s level=%s ", ts, level);
	va_start(ap, fmt);
	vfprintf(s->log, fmt, ap);
	va_end(ap);
	fputc('\n', s->log);
	fflush(s->log);
	funlockfile(s->log);
}

/* Whether to gzip this answer: big, text, and the client said gzip (not ;q=0). */
static bool want_gzip(struct server_req *r, const char *ctype, size_t len)
{
	const char *ae = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Accept-Encoding");
	const char *g = ae ? strstr(ae, "gzip") : NULL;

	if (len < SERVER_GZIP_MIN || !g)
		return false;
	if (!strncmp(g + 4, ";q=", 3) && strtod(g + 7, NULL) <= 0) /* "gzip;q=0": refused */
		return false;
	return !strncmp(ctype, "text/", 5) || !strcmp(ctype, "application/json") ||
	       !strcmp(ctype, "image/svg+xml");
}

/* gzip of buf into a malloc'd *out. 0 or -ENOMEM. */
static int gzip_buf(const char *buf, size_t len, char **out, size_t *out_len)
{
	z_stream z = {0};
	size_t cap;
	int err = 0;

	*out = NULL;
	if (deflateInit2(&z, SERVER_GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY))
		return -ENOMEM;
	cap = deflateBound(&z, len) + 32; /* + the gzip header and trailer */
	if (len > UINT_MAX || cap > UINT_MAX || !(*out = malloc(cap))) {
		err = -ENOMEM;
		goto cleanup;
	}
	z.next_in = (Bytef *)buf;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)*out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		err = -ENOMEM;
		goto cleanup;
	}
	*out_len = z.total_out;
cleanup:
	deflateEnd(&z);
	if (err) {
		free(*out);
		*out = NULL;
	}
	return err;
}

enum MHD_Result server_reply(struct server_req *r, unsigned status, const char *ctype, char *buf,
			     size_t len)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	bool gz = false;
	char *z;
	size_t zlen;

	if (want_gzip(r, ctype, len) && gzip_buf(buf, len, &z, &zlen) == 0) {
		free(buf);
		buf = z;
		len = zlen;
		gz = true;
	}
	resp = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(buf);
		return MHD_NO;
	}
	if (gz)
		MHD_add_response_header(resp, "Content-Encoding", "gzip");
	if (len >= SERVER_GZIP_MIN || gz)
		MHD_add_response_header(resp, "Vary", "Accept-Encoding");
	MHD_add_response_header(resp, "Content-Type", ctype);
	ret = server_queue(r, status, resp);
	r->bytes_out = len;
	return ret;
}

enum MHD_Result server_queue(struct server_req *r, unsigned status, struct MHD_Response *resp)
{
	if (r->resp) /* a second answer: the first one stands */
		MHD_destroy_response(r->resp);
	r->resp = resp;
	r->status = status;
	return MHD_YES;
}

/* Queues r's answer, if it has one, on the event thread (the access handler). */
static enum MHD_Result answer(struct server_req *r, enum MHD_Result ret)
{
	if (r->resp) {
		ret = MHD_queue_response(r->conn, r->status, r->resp);
		MHD_destroy_response(r->resp);
		r->resp = NULL;
	}
	return r->close ? MHD_NO : ret;
}

enum MHD_Result server_reply_mem(struct server_req *r, unsigned status, const char *ctype,
				 struct server_mem *m)
{
	if (fclose(m->f) != 0) {
		free(m->buf);
		return server_error(r, 500, SERVER_REJ_INTERNAL, "out of memory writing the reply");
	}
	m->f = NULL;
	return server_reply(r, status, ctype, m->buf, m->len);
}

int server_mem__open(struct server_mem *m)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	return m->f ? 0 : -ENOMEM;
}

void server_mem__discard(struct server_mem *m)
{
	if (m->f)
		fclose(m->f);
	free(m->buf);
	m->f = NULL;
	m->buf = NULL;
}

enum MHD_Result server_error(struct server_req *r, unsigned status, enum server_reject why,
			     const char *fmt, ...)
{
	char msg[1024];
	struct server_mem m;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->route && r->route->reject)
		return r->route->reject(r, status, why, msg);
	snprintf(r->error, sizeof(r->error), "%.255s", msg); /* escaped when logged */
	server_metrics__reject(&r->srv->metrics, why);
	if (server_mem__open(&m))
		return MHD_NO;
	fputs("{\"error\": ", m.f);
	base_json_string(m.f, msg);
	fputs("}\n", m.f);
	return server_reply_mem(r, status, "application/json", &m);
}

const char *server_arg(struct server_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

/*
 * Copies a token or header value into a zero-padded SERVER_MAX_TOKEN buffer; its
 * length (SIZE_MAX when too long to be any valid token) goes to *len. Every byte
 * of the input is read up to the buffer's size, whatever its content.
 */
static void pad_token(const char *s, unsigned char out[SERVER_MAX_TOKEN], size_t *len)
{
	size_t n = strnlen(s, SERVER_MAX_TOKEN);

	memset(out, 0, SERVER_MAX_TOKEN);
	memcpy(out, s, n);
	*len = n < SERVER_MAX_TOKEN ? n : SIZE_MAX;
}

bool server_token_ok(const char *header, const char *token)
{
	unsigned char a[SERVER_MAX_TOKEN], b[SERVER_MAX_TOKEN];
	size_t na, nb;
	unsigned diff = 0;

	if (!header || strncmp(header, "Bearer ", 7) != 0)
		return false;
	pad_token(header + 7, a, &na);
	pad_token(token, b, &nb);
	/* every byte of both buffers is compared: the time says nothing of where
	 * they differ, nor of the token's length */
	for (size_t i = 0; i < SERVER_MAX_TOKEN; i++)
		diff |= (unsigned)(a[i] ^ b[i]);
	diff |= (unsigned)(na != nb) | (unsigned)(na == SIZE_MAX);
	return diff == 0;
}

static bool authorized(struct server *s, struct MHD_Connection *conn)
{
	if (!s->token)
		return true;
	return server_token_ok(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"),
			       s->token);
}

size_t server_memory_budget(size_t body_len)
{
	if (body_len > (SERVER_MEM_MAX - SERVER_MEM_BASE) / SERVER_MEM_PER_BODY_BYTE)
		return SERVER_MEM_MAX;
	return SERVER_MEM_BASE + body_len * SERVER_MEM_PER_BODY_BYTE;
}

/*
 * Writes s into out (size n, n > 4) for a logfmt value: printable ASCII as is,
 * every other byte, '"' and '\\' (and ' ' unless the value is quoted) as \xHH, so
 * a request cannot forge a line or a field of the log. Cut at max input bytes
 * ("..." then).
 */
static const char *log_escape(const char *s, bool quoted, char *out, size_t n, size_t max)
{
	size_t o = 0, i = 0;

	for (; s[i] && i < max && o + 5 < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || (c == ' ' && !quoted) || c >= 0x7f || c == '"' || c == '\\')
			o += (size_t)snprintf(out + o, n - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	if (s[i] && o + 4 <= n)
		o += (size_t)snprintf(out + o, n - o, "...");
	out[o] = '\0';
	return out;
}

/* First allocation of a request body. */
#define SERVER_BODY_MIN 65536

/* Appends an upload chunk, or counts it as overflow past the route's cap. */
static void take_body(struct server_req *r, const char *data, size_t n)
{
	if (r->too_large || r->len + n > r->max_body) {
		r->too_large = true;
		return;
	}
	/* At least SERVER_BODY_MIN at first: most uploads fit in one allocation. */
	if (base_grow((void **)&r->body, &r->cap,
		      r->len + n > SERVER_BODY_MIN ? r->len + n : SERVER_BODY_MIN, 1)) {
		r->too_large = true;
		return;
	}
	memcpy(r->body + r->len, data, n);
	r->len += n;
}

static enum MHD_Result too_large(struct server_req *r)
{
	if (!r->max_body)
		return server_error(r, 413, SERVER_REJ_TOO_LARGE, "%.200s takes no request body",
				    r->url);
	return server_error(r, 413, SERVER_REJ_TOO_LARGE,
			    "request body is over the limit of %zu bytes for %.200s", r->max_body,
			    r->route->path);
}

static bool method_ok(const struct server_route *rt, const char *method)
{
	return (!strcmp(method, "GET") && (rt->methods & SERVER_M_GET)) ||
	       (!strcmp(method, "HEAD") && (rt->methods & SERVER_M_HEAD)) ||
	       (!strcmp(method, "POST") && (rt->methods & SERVER_M_POST));
}

/*
 * What the headers alone decide, on the access handler's first call: the token, the
 * route, the method and an announced body over the route's cap. The reply is queued
 * before any upload data, so the body is never read (nor a "100 Continue" sent).
 * MHD_YES with nothing queued when the request may go on.
 */
static enum MHD_Result check_headers(struct server *s, struct server_req *r)
{
	const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Length");
	const char *te = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Transfer-Encoding");
	const struct server_route *rt = r->route = server_route_find(s, r->url);
	char *end;
	unsigned long long n;

	if (!(rt && rt->open) && !authorized(s, r->conn))
		return server_error(r, 401, SERVER_REJ_UNAUTHORIZED,
				    "missing or wrong 'Authorization: Bearer' token");
	if (!rt)
		return server_error(r, 404, SERVER_REJ_NOT_FOUND, "no such endpoint '%.200s'",
				    r->url);
	if (rt->store && !s->store) /* the agent's listener: before any body byte */
		return server_error(r, 404, SERVER_REJ_NOT_FOUND, "this listener has no store");
	if (!method_ok(rt, r->method))
		return server_error(r, 405, SERVER_REJ_METHOD, "%.200s takes %s, not %.20s", r->url,
				    rt->methods & SERVER_M_POST ? "POST" : "GET or HEAD",
				    r->method);
	r->max_body = rt->max_body == SERVER_BODY_OPT ? s->max_body : rt->max_body;
	if (cl && *cl) {
		errno = 0;
		n = strtoull(cl, &end, 10);
		if (errno == ERANGE || n > r->max_body)
			return too_large(r);
	}
	if (!r->max_body && te && *te) /* a chunked body where none is taken */
		return too_large(r);
	return MHD_YES;
}

/* The body is complete: run the handler here (INLINE) or hand it to its class. */
static enum MHD_Result dispatch(struct server *s, struct server_req *r)
{
	const struct server_route *rt = r->route;

	r->dispatched = true;
	if (r->too_large)
		return too_large(r);
	r->budget = rt->budget ? rt->budget(r->len) : 0;
	server_conn__dispatched(r);
	if (rt->cls == SERVER_CLASS_INLINE)
		return rt->handler(s, r);
	if (server_defer(r, rt->cls, 0, rt->handler))
		return server_error(r, 503, SERVER_REJ_BUSY,
				    "the server is stopping; retry on another instance");
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *data_size, void **con_cls)
{
	struct server *s = cls;
	struct server_req *r = *con_cls;
	enum MHD_Result ret;

	(void)version;
	if (!r) {
		if (!(r = calloc(1, sizeof(*r))))
			return MHD_NO;
		r->srv = s;
		r->conn = conn;
		r->url = url;
		r->method = method;
		r->t0 = mono_ns();
		*con_cls = r;
		server_conn__busy(r);
		return answer(r, check_headers(s, r));
	}
	if (r->resp || r->close) /* a worker's answer, after the connection's resume */
		return answer(r, MHD_YES);
	if (r->status) { /* answered from the headers: the body is not wanted */
		*data_size = 0;
		return MHD_YES;
	}
	if (*data_size) {
		/* a body trickling in past its deadline: close the connection */
		if (mono_ns() - r->t0 > (int64_t)SERVER_BODY_DEADLINE_S * 1000000000) {
			snprintf(r->error, sizeof(r->error),
				 "no answer: the body took more than %d s", SERVER_BODY_DEADLINE_S);
			return MHD_NO;
		}
		take_body(r, data, *data_size);
		*data_size = 0;
		return MHD_YES;
	}
	if (r->dispatched) /* resumed without an answer: a handler's bug */
		return answer(r, server_error(r, 500, SERVER_REJ_INTERNAL, "no answer was made"));
	ret = dispatch(s, r);
	/* deferred: a worker owns r until it resumes the connection */
	return r->deferred ? ret : answer(r, ret);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct server *s = cls;
	struct server_req *r = *con_cls;
	char method[64], path[SERVER_LOG_PATH_MAX * 4 + 8], error[sizeof(r->error) * 4 + 8];

	(void)conn;
	if (!r)
		return;
	if (!r->status && !r->error[0]) /* closed before an answer: say why */
		snprintf(r->error, sizeof(r->error), "no answer: %s",
			 toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED
			     ? "the connection was idle too long"
			 : toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT
			     ? "the client went away"
			     : "the connection was closed");
	server_metrics__request(&s->metrics, r->status, mono_ns() - r->t0, r->is_query);
	/* the path comes %-decoded: a "%0A" in it must not start a line of its own */
	log_escape(r->method, false, method, sizeof(method), 15);
	log_escape(r->url, false, path, sizeof(path), SERVER_LOG_PATH_MAX);
	if (r->status >= 400 || !r->status)
		server_log(s, "warn",
			   "method=%s path=%s status=%u dur_ms=%.1f bytes_in=%zu error=\"%s\"",
			   method, path, r->status, (double)(mono_ns() - r->t0) / 1e6, r->len,
			   log_escape(r->error, true, error, sizeof(error), sizeof(r->error)));
	else
		server_log(s, "info",
			   "method=%s path=%s status=%u dur_ms=%.1f bytes_in=%zu bytes_out=%zu",
			   method, path, r->status, (double)(mono_ns() - r->t0) / 1e6, r->len,
			   r->bytes_out);
	if (r->profile_slot)
		__atomic_sub_fetch(&s->profiles_in_flight, 1, __ATOMIC_RELAXED);
	server_conn__idle(r);
	if (r->resp)
		MHD_destroy_response(r->resp);
	free(r->body);
	free(r);
	*con_cls = NULL;
}

/* "HOST:PORT" (IPv4 or [IPv6]) into a socket address. 0 or -EINVAL. */
static int parse_listen(const char *listen, struct sockaddr_storage *ss, socklen_t *sl)
{
	char host[128];
	const char *colon = strrchr(listen, ':');
	char *end;
	long port;

	if (!colon || (size_t)(colon - listen) >= sizeof(host))
		return -EINVAL;
	port = strtol(colon + 1, &end, 10);
	if (*end || colon[1] == '\0' || port < 0 || port > 65535)
		return -EINVAL;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - listen), listen);
	memset(ss, 0, sizeof(*ss));
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

		host[strlen(host) - 1] = '\0';
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*sl = sizeof(*a6);
		return inet_pton(AF_INET6, host + 1, &a6->sin6_addr) == 1 ? 0 : -EINVAL;
	}
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;

	a4->sin_family = AF_INET;
	a4->sin_port = htons((uint16_t)port);
	*sl = sizeof(*a4);
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	return inet_pton(AF_INET, host[0] ? host : "0.0.0.0", &a4->sin_addr) == 1 ? 0 : -EINVAL;
}

bool server_listen_is_loopback(const char *listen)
{
	struct sockaddr_storage ss;
	socklen_t sl;

	if (!listen)
		listen = SERVER_DEFAULT_LISTEN;
	if (parse_listen(listen, &ss, &sl))
		return false;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	const struct in6_addr *a6 = &((struct sockaddr_in6 *)&ss)->sin6_addr;

	return IN6_IS_ADDR_LOOPBACK(a6) || (IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127);
}

/*
 * Reads a PEM file of at most SERVER_TLS_MAX_FILE bytes into a malloc'd,
 * NUL-terminated *out. 0, -EFBIG, -EINVAL (no "-----BEGIN " in it), -errno.
 */
static int read_pem(const char *path, char **out)
{
	FILE *f = fopen(path, "re");
	size_t n;
	int err = 0;

	*out = NULL;
	if (!f)
		return -errno;
	if (!(*out = malloc(SERVER_TLS_MAX_FILE + 1))) {
		err = -ENOMEM;
		goto cleanup;
	}
	n = fread(*out, 1, SERVER_TLS_MAX_FILE + 1, f);
	if (ferror(f))
		err = -EIO;
	else if (n > SERVER_TLS_MAX_FILE)
		err = -EFBIG;
	else if (((*out)[n] = '\0'), !strstr(*out, "-----BEGIN "))
		err = -EINVAL;
cleanup:
	fclose(f);
	if (err) {
		free(*out);
		*out = NULL;
	}
	return err;
}

/* --tls-cert and --tls-key into s->tls_cert and s->tls_key. 0 or -errno, err says why. */
static int load_tls(struct server *s, char *err, size_t errlen)
{
	const char *files[2] = {s->opts.tls_cert_file, s->opts.tls_key_file};
	const char *flags[2] = {"--tls-cert", "--tls-key"};
	char **bufs[2] = {&s->tls_cert, &s->tls_key};

	if (!files[0] != !files[1]) {
		snprintf(err, errlen, "%s needs %s too: HTTPS takes a certificate and its key",
			 files[0] ? flags[0] : flags[1], files[0] ? flags[1] : flags[0]);
		return -EINVAL;
	}
	for (int i = 0; files[0] && i < 2; i++) {
		int ret = read_pem(files[i], bufs[i]);

		if (ret) {
			snprintf(err, errlen, "%s '%s': %s", flags[i], files[i],
				 ret == -EFBIG	  ? "larger than 1 MiB"
				 : ret == -EINVAL ? "not a PEM file (no '-----BEGIN ' line)"
						  : strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* libmicrohttpd's error log: kept while the daemon starts (why a certificate was
 * refused); afterwards dropped, as without a logger (a client's failed handshake). */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct server *s = cls;
	size_t n;

	if (__atomic_load_n(&s->started, __ATOMIC_ACQUIRE) || s->start_err[0])
		return; /* the first message is the cause */
	vsnprintf(s->start_err, sizeof(s->start_err), fmt, ap);
	n = strlen(s->start_err);
	while (n && (s->start_err[n - 1] == '\n' || s->start_err[n - 1] == '.'))
		s->start_err[--n] = '\0';
}

static int start_daemon(struct server *s, const char *listen, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	/* one epoll event thread: a connection costs no thread (server_pool.c) */
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
	const union MHD_DaemonInfo *info;
	struct MHD_OptionItem tls[] = {
	    {MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert},
	    {MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key},
	    {MHD_OPTION_END, 0, NULL},
	};

	if (parse_listen(listen, &ss, &sl)) {
		snprintf(err, errlen, "--listen: '%s' is not HOST:PORT (e.g. 127.0.0.1:4100)",
			 listen);
		return -EINVAL;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (s->tls_cert) {
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			snprintf(err, errlen,
				 "--tls-cert: this libmicrohttpd was built without TLS (GnuTLS)");
			return -ENOTSUP;
		}
		flags |= MHD_USE_TLS | MHD_USE_ERROR_LOG;
	} else {
		tls[0].option = MHD_OPTION_END;
	}
	errno = 0;
	s->d = MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
	    MHD_OPTION_SOCK_ADDR, &ss, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
	    MHD_OPTION_NOTIFY_CONNECTION, server_pool__notify, s, MHD_OPTION_CONNECTION_LIMIT,
	    (unsigned)SERVER_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)SERVER_IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
	    (size_t)SERVER_CONN_MEMORY, MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
	if (!s->d && s->tls_cert && (strstr(s->start_err, "TLS") || strstr(s->start_err, "x509"))) {
		/* a refused certificate or key: libmicrohttpd said which (GnuTLS's words) */
		snprintf(err, errlen,
			 "cannot start HTTPS with --tls-cert '%s' and --tls-key '%s': %s",
			 s->opts.tls_cert_file, s->opts.tls_key_file, s->start_err);
		return -EINVAL;
	}
	if (!s->d) {
		snprintf(err, errlen, "cannot listen on %s: %s", listen,
			 strerror(errno ? errno : EADDRINUSE));
		return -EADDRINUSE;
	}
	__atomic_store_n(&s->started, true, __ATOMIC_RELEASE);
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : 0;
	return 0;
}

/*
 * Room for SERVER_MAX_CONNECTIONS sockets beside the store's files: a soft limit of
 * open files under that (1024 is common) is raised toward the hard limit, as Go's
 * runtime does; otherwise accept(2) fails with EMFILE before the connection table
 * is full and the eviction of idle connections never starts.
 */
static void raise_nofile(void)
{
	struct rlimit rl;
	rlim_t want = SERVER_MAX_CONNECTIONS + 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
	setrlimit(RLIMIT_NOFILE, &rl);
}

int server__start(const struct server_opts *opts, struct server **out, char *err, size_t errlen)
{
	struct server *s = calloc(1, sizeof(*s));
	int ret;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->opts = *opts;
	s->store = opts->store;
	s->max_body = opts->max_body ? opts->max_body : SERVER_DEFAULT_MAX_BODY;
	s->log = opts->log ? opts->log : stderr;
	s->token = opts->auth_token;
	if (s->token && strlen(s->token) >= SERVER_MAX_TOKEN) {
		snprintf(err, errlen, "the auth token is over %d bytes", SERVER_MAX_TOKEN - 1);
		free(s);
		return -EINVAL;
	}
	/* --web-dir resolved once: a file it serves must resolve to below it */
	if (opts->web_dir && !(s->web_root = realpath(opts->web_dir, NULL))) {
		ret = -errno;
		snprintf(err, errlen, "--web-dir '%s': %s", opts->web_dir, strerror(errno));
		free(s);
		return ret;
	}
	ret = load_tls(s, err, errlen);
	if (ret) {
		free(s->tls_cert);
		free(s->tls_key);
		free(s->web_root);
		free(s);
		return ret;
	}
	raise_nofile();
	pthread_mutex_init(&s->live_lock, NULL);
	server_metrics__init(&s->metrics);
	ret = server_pool__start(s);
	if (ret)
		snprintf(err, errlen, "cannot start the server's threads: %s", strerror(-ret));
	else
		ret = start_daemon(s, opts->listen ? opts->listen : SERVER_DEFAULT_LISTEN, err,
				   errlen);
	if (ret) {
		server_pool__free(s);
		pthread_mutex_destroy(&s->live_lock);
		free(s->tls_cert);
		free(s->tls_key);
		free(s->web_root);
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

int server__port(const struct server *s)
{
	return s->port;
}

void server__stop(struct server *s)
{
	if (!s)
		return;
	__atomic_store_n(&s->stopping, true, __ATOMIC_RELAXED);
	/* every suspended connection resumed first: MHD_stop_daemon panics on one */
	server_pool__drain(s);
	MHD_stop_daemon(s->d);
	server_pool__free(s);
	pthread_mutex_destroy(&s->live_lock);
	server_otlp__stop(s);
	free(s->tls_cert);
	free(s->tls_key);
	free(s->web_root);
	free(s);
}

void server_keep_freed_memory(void)
{
	/* setting either also turns off glibc's dynamic adjustment of both */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
}
