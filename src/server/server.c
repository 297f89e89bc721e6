/*
 * The HTTP server core: libmicrohttpd daemon (one thread per connection, so a
 * /debug/pprof/profile?seconds=30 waits without blocking other requests), body
 * accumulation bounded by max_body, bearer-token auth, routing, JSON errors and
 * one structured (logfmt) log line per request.
 *
 * A request body is read completely (or counted and discarded past the limit)
 * before the handler runs, so a handler sees either all of it or a 413.
 */
#include "server_impl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <zlib.h>

#define SERVER_DEFAULT_LISTEN  "127.0.0.1:4100"
#define SERVER_MAX_CONNECTIONS 128
#define SERVER_CONN_TIMEOUT_S  120
/* Text answers at least this big are gzipped for clients that accept it: the
 * web UI's 100,000-node tree is ~6 MiB of JSON, ~1.3 MiB gzipped at level 1
 * (~50 ms of CPU), which matters on anything slower than loopback. */
#define SERVER_GZIP_MIN	  (256u << 10)
#define SERVER_GZIP_LEVEL 1

int64_t server_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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

/* Writes s as a JSON string (quotes included). */
void server_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20)
			fprintf(f, "\\u%04x", *c);
		else
			fputc(*c, f);
	}
	fputc('"', f);
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
	ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	r->status = status;
	r->bytes_out = len;
	return ret;
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
	snprintf(r->error, sizeof(r->error), "%.255s", msg);
	for (char *c = r->error; *c; c++) /* keeps the logfmt line parseable */
		if (*c == '"' || *c == '\n')
			*c = '\'';
	server_metrics__reject(&r->srv->metrics, why);
	if (server_mem__open(&m))
		return MHD_NO;
	fputs("{\"error\": ", m.f);
	server_json_str(m.f, msg);
	fputs("}\n", m.f);
	return server_reply_mem(r, status, "application/json", &m);
}

const char *server_arg(struct server_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* Constant-time comparison of the Authorization header against "Bearer TOKEN". */
static bool authorized(struct server *s, struct MHD_Connection *conn)
{
	const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	size_t n;
	unsigned char diff = 0;

	if (!s->token)
		return true;
	if (!h || strncmp(h, "Bearer ", 7) != 0)
		return false;
	h += 7;
	n = strlen(s->token);
	if (strlen(h) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(h[i] ^ s->token[i]);
	return diff == 0;
}

/* Appends an upload chunk, or counts it as overflow past max_body. */
static void take_body(struct server *s, struct server_req *r, const char *data, size_t n)
{
	if (r->too_large || r->len + n > s->max_body) {
		r->too_large = true;
		return;
	}
	if (r->len + n > r->cap) {
		size_t cap = r->cap ? r->cap : 65536;
		uint8_t *b;

		while (cap < r->len + n)
			cap *= 2;
		if (!(b = realloc(r->body, cap))) {
			r->too_large = true;
			return;
		}
		r->body = b;
		r->cap = cap;
	}
	memcpy(r->body + r->len, data, n);
	r->len += n;
}

static enum MHD_Result dispatch(struct server *s, struct server_req *r)
{
	if (r->too_large)
		return server_error(r, 413, SERVER_REJ_TOO_LARGE,
				    "request body is over the limit of %zu bytes", s->max_body);
	if (strcmp(r->url, "/healthz") && !authorized(s, r->conn))
		return server_error(r, 401, SERVER_REJ_UNAUTHORIZED,
				    "missing or wrong 'Authorization: Bearer' token");
	return server_route(s, r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *data_size, void **con_cls)
{
	struct server *s = cls;
	struct server_req *r = *con_cls;

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
		return MHD_YES;
	}
	if (*data_size) {
		take_body(s, r, data, *data_size);
		*data_size = 0;
		return MHD_YES;
	}
	return dispatch(s, r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct server *s = cls;
	struct server_req *r = *con_cls;

	(void)conn;
	(void)toe;
	if (!r)
		return;
	server_metrics__request(&s->metrics, r->status, mono_ns() - r->t0, r->is_query);
	if (r->status >= 400)
		server_log(s, "warn",
			   "method=%s path=%s status=%u dur_ms=%.1f bytes_in=%zu error=\"%s\"",
			   r->method, r->url, r->status, (double)(mono_ns() - r->t0) / 1e6, r->len,
			   r->error);
	else
		server_log(s, "info",
			   "method=%s path=%s status=%u dur_ms=%.1f bytes_in=%zu bytes_out=%zu",
			   r->method, r->url, r->status, (double)(mono_ns() - r->t0) / 1e6, r->len,
			   r->bytes_out);
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

static int start_daemon(struct server *s, const char *listen, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
	const union MHD_DaemonInfo *info;

	if (parse_listen(listen, &ss, &sl)) {
		snprintf(err, errlen, "--listen: '%s' is not HOST:PORT (e.g. 127.0.0.1:4100)",
			 listen);
		return -EINVAL;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, &ss,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)SERVER_MAX_CONNECTIONS,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)SERVER_CONN_TIMEOUT_S,
				MHD_OPTION_END);
	if (!s->d) {
		snprintf(err, errlen, "cannot listen on %s: %s", listen,
			 strerror(errno ? errno : EADDRINUSE));
		return -EADDRINUSE;
	}
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : 0;
	return 0;
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
	pthread_mutex_init(&s->live_lock, NULL);
	server_metrics__init(&s->metrics);
	ret = start_daemon(s, opts->listen ? opts->listen : SERVER_DEFAULT_LISTEN, err, errlen);
	if (ret) {
		pthread_mutex_destroy(&s->live_lock);
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
	MHD_stop_daemon(s->d);
	pthread_mutex_destroy(&s->live_lock);
	free(s);
}
