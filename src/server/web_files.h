/*
 * The web UI's files, embedded in the binary at build time: tools/embed.c turns
 * every file under web/ into build/gen/web_files.c, a table of these entries.
 * The content type is chosen by web_content_type() (here, so the generator and
 * the server's --web-dir path agree on it).
 */
#ifndef HEARTH_SERVER_WEB_FILES_H
#define HEARTH_SERVER_WEB_FILES_H

#include <stddef.h>
#include <string.h>

struct web_file {
	const char *path;  /* "/index.html", "/js/app.js": the URL path */
	const char *ctype; /* Content-Type header value */
	const unsigned char *data;
	size_t len;
	const char *etag; /* quoted strong validator: a hash of data */
};

/* The table (build/gen/web_files.c); web_n_files entries, sorted by path. */
extern const struct web_file web_files[];
extern const size_t web_n_files;

/* Content-Type for a file name by its extension; octet-stream when unknown. */
static inline const char *web_content_type(const char *path)
{
	static const char *const types[][2] = {
	    {".html", "text/html; charset=utf-8"},
	    {".css", "text/css; charset=utf-8"},
	    {".js", "text/javascript; charset=utf-8"},
	    {".mjs", "text/javascript; charset=utf-8"},
	    {".json", "application/json"},
	    {".svg", "image/svg+xml"},
	    {".png", "image/png"},
	    {".ico", "image/x-icon"},
	    {".txt", "text/plain; charset=utf-8"},
	    {".woff2", "font/woff2"},
	};
	size_t n = strlen(path);

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		size_t e = strlen(types[i][0]);

		if (n > e && !strcmp(path + n - e, types[i][0]))
			return types[i][1];
	}
	return "application/octet-stream";
}

#endif
