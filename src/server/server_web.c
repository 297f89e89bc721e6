/*
 * The web UI's static files: GET/HEAD of any path that no other route takes.
 * By default from the table embedded at build time (web_files.h, generated
 * from web/), or from a directory on disk (--web-dir, for UI development: edit,
 * reload, no rebuild).
 *
 * Constraint: a URL must never name a file outside the UI. libmicrohttpd hands
 * us the path %-decoded, so a ".." segment is refused whatever its spelling, as
 * is every dotfile (.git/, .env); on disk only regular files are served, and
 * only when their real path (symlinks resolved) is below the directory's.
 */
#include "server_impl.h"
#include "web_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SERVER_WEB_CSP                                                                             \
	"default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "             \
	"object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

/* Largest file --web-dir serves (the UI's files are a few hundred KiB). */
#define SERVER_WEB_MAX_FILE (64u << 20)

bool server_web_path_ok(const char *path)
{
	if (path[0] != '/')
		return false;
	for (const char *p = path; *p; p++) {
		if (*p != '/')
			continue;
		/* p[1] starts a segment: refuse "" and any starting with '.' ("..", ".git") */
		if (p[1] == '/' || p[1] == '.')
			return false;
	}
	return true;
}

static int by_path(const void *key, const void *elem)
{
	return strcmp(key, ((const struct web_file *)elem)->path);
}

/* Replies with a file; data is static (embedded) or malloc'd and taken over. */
static enum MHD_Result reply_file(struct server_req *r, const char *ctype, const void *data,
				  size_t len, bool owned, const char *etag)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(
	    len, (void *)data, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	const char *inm = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "If-None-Match");
	unsigned status = 200;
	enum MHD_Result ret;

	if (!resp) {
		if (owned)
			free((void *)data);
		return MHD_NO;
	}
	/* no-cache: the browser revalidates every time, so a new build shows at once */
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	MHD_add_response_header(resp, "Content-Type", ctype);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	/* The UI loads only its own files and talks only to this server; colours are
	 * inline style attributes, the favicon a data: URL. */
	MHD_add_response_header(resp, "Content-Security-Policy", SERVER_WEB_CSP);
	if (etag) {
		MHD_add_response_header(resp, "ETag", etag);
		if (inm && !strcmp(inm, etag)) {
			MHD_destroy_response(resp);
			resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
			if (!resp)
				return MHD_NO;
			MHD_add_response_header(resp, "Cache-Control", "no-cache");
			MHD_add_response_header(resp, "ETag", etag);
			status = 304;
			len = 0;
		}
	}
	ret = server_queue(r, status, resp);
	r->bytes_out = len;
	return ret;
}

/*
 * Reads root/path (a regular file whose real path is below root, itself a real
 * path) into a malloc'd buffer. 0, -ENOENT (also for a symlink leading out of
 * root), -EFBIG, -errno.
 */
static int read_disk_file(const char *root, const char *path, char **buf, size_t *len)
{
	char full[4096], *real;
	size_t rl = strlen(root);
	struct stat st;
	ssize_t n = 0;
	size_t got = 0;
	int fd, err = 0;

	*buf = NULL;
	if ((size_t)snprintf(full, sizeof(full), "%s%s", root, path) >= sizeof(full))
		return -ENAMETOOLONG;
	if (!(real = realpath(full, NULL)))
		return errno == ENOTDIR || errno == ENOENT ? -ENOENT : -errno;
	/* below root: root's path then '/' (root "/" is its own prefix) */
	if (strncmp(real, root, rl) || (real[rl] != '/' && !(rl == 1 && root[0] == '/'))) {
		free(real);
		return -ENOENT;
	}
	/* O_NONBLOCK: the open of a FIFO waits for a writer, which held the request's
	 * thread and then the server's shutdown; fstat below refuses it (and sockets,
	 * devices) and a regular file reads the same either way. */
	fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	free(real);
	if (fd < 0)
		return errno == ENOTDIR || errno == ELOOP ? -ENOENT : -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err = -ENOENT; /* a directory, FIFO or device is not a page */
		goto cleanup;
	}
	if ((size_t)st.st_size > SERVER_WEB_MAX_FILE) {
		err = -EFBIG;
		goto cleanup;
	}
	if (!(*buf = malloc((size_t)st.st_size + 1))) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (got < (size_t)st.st_size && (n = read(fd, *buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	if (n < 0)
		err = -errno;
	*len = got;
cleanup:
	if (err) {
		free(*buf);
		*buf = NULL;
	}
	close(fd);
	return err;
}

static enum MHD_Result from_disk(struct server *s, struct server_req *r, const char *path)
{
	char *buf;
	size_t len = 0;
	int err = read_disk_file(s->web_root, path, &buf, &len);

	if (err == -ENOENT)
		return server_error(r, 404, SERVER_REJ_NOT_FOUND, "no such endpoint '%.200s'",
				    r->url);
	if (err)
		return server_error(r, 500, SERVER_REJ_INTERNAL,
				    "cannot read '%.200s' from %.200s: %s", path, s->opts.web_dir,
				    strerror(-err));
	return reply_file(r, web_content_type(path), buf, len, true, NULL);
}

enum MHD_Result server_h_web(struct server *s, struct server_req *r)
{
	const char *path = strcmp(r->url, "/") ? r->url : "/index.html";
	const struct web_file *f;

	if (!server_web_path_ok(path))
		return server_error(r, 400, SERVER_REJ_BAD_PARAM,
				    "path '%.200s' is not allowed (no empty segments, none "
				    "starting with '.')",
				    r->url);
	if (s->opts.web_dir)
		return from_disk(s, r, path);
	f = bsearch(path, web_files, web_n_files, sizeof(*web_files), by_path);
	if (!f && !strcmp(path, "/index.html"))
		return server_error(r, 404, SERVER_REJ_NOT_FOUND,
				    "this hearth was built without the web UI (web/index.html); "
				    "the API is under /api (docs/api.md)");
	if (!f)
		return server_error(r, 404, SERVER_REJ_NOT_FOUND, "no such endpoint '%.200s'",
				    r->url);
	return reply_file(r, f->ctype, f->data, f->len, false, f->etag);
}
