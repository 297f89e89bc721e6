/*
 * Every route of the server and what the request pipeline (server.c) enforces for
 * it before its handler runs: the methods, whether the token is needed, the body
 * cap, the class of workers it runs on (which is its concurrency slot and its wait
 * limit) and the memory budget of its decoder.
 *
 * A route cannot be added without declaring these: the pipeline knows no other
 * table, tests/unit/test_server_attack.c attacks every entry with the generic
 * attacks (unauthenticated, wrong method, oversized, gzip bomb, slow headers), and
 * test_server's docs check compares server_limits_write's table with docs/api.md.
 */
#include "server_impl.h"
#include "server_connect.h"

#include <string.h>

static enum MHD_Result h_healthz(struct server *s, struct server_req *r)
{
	(void)s;
	return server_reply(r, 200, "application/json", strdup("{\"status\": \"ok\"}\n"), 17);
}

#define GET_HEAD (SERVER_M_GET | SERVER_M_HEAD)

/* Order matters: the first match wins, "/" (the web UI) is last. */
static const struct server_route routes[] = {
    {"/healthz", GET_HEAD, true, 0, SERVER_CLASS_INLINE, NULL,
     "no token, no body; answered on the event thread", h_healthz, NULL},
    {"/ingest", SERVER_M_POST, false, SERVER_BODY_OPT, SERVER_CLASS_DECODE, server_memory_budget,
     "decode slot; memory 64 MiB + 128 B per body byte (≤ 1 GiB)", server_h_ingest, NULL},
    {"/v1development/profiles", SERVER_M_POST, false, SERVER_BODY_OPT, SERVER_CLASS_DECODE,
     server_memory_budget, "decode slot; memory 64 MiB + 128 B per body byte (≤ 1 GiB)",
     server_h_otlp, NULL},
    {"/api/targets", GET_HEAD, false, 0, SERVER_CLASS_LIGHT, NULL, "light worker", server_h_targets,
     NULL},
    {"/api/", GET_HEAD, false, 0, SERVER_CLASS_QUERY, NULL, "query slot; the query limits below",
     server_h_api, NULL},
    {"/debug/pprof/profile", GET_HEAD, false, 0, SERVER_CLASS_INLINE, NULL,
     "waits `seconds` (≤ 600) suspended, no thread held; 4 at once", server_h_pprof, NULL},
    {"/metrics", GET_HEAD, false, 0, SERVER_CLASS_LIGHT, NULL, "light worker", server_h_metrics,
     NULL},
    {"/querier.v1.QuerierService/", SERVER_M_POST, false, SERVER_QUERY_MAX_BODY, SERVER_CLASS_QUERY,
     server_memory_budget, "query slot; JSON or gzip decoded within 64 MiB + 128 B per body byte",
     server_h_connect, server_connect_reject},
    {"/pyroscope/", GET_HEAD, false, 0, SERVER_CLASS_QUERY, NULL,
     "query slot; the query limits below", server_h_pyroscope, NULL},
    {"/", GET_HEAD, false, 0, SERVER_CLASS_LIGHT, NULL,
     "light worker; files of the web UI (with a store only)", server_h_web, NULL},
};

const struct server_route *server_routes(size_t *n)
{
	*n = sizeof(routes) / sizeof(routes[0]);
	return routes;
}

const struct server_route *server_route_find(const struct server *s, const char *url)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const struct server_route *rt = &routes[i];
		size_t n = strlen(rt->path);

		if (rt->path[n - 1] == '/' ? strncmp(url, rt->path, n) : strcmp(url, rt->path))
			continue;
		if (rt->handler == server_h_web && !s->store)
			return NULL; /* the agent's listener has no UI */
		return rt;
	}
	return NULL;
}

static void methods_write(FILE *f, unsigned m)
{
	fputs(m & SERVER_M_POST ? "POST" : "GET, HEAD", f);
}

static const char *class_name(enum server_class c)
{
	static const char *const names[SERVER_CLASS_MAX] = {"event thread", "light", "query",
							    "decode"};
	return names[c];
}

void server_limits_write(FILE *f)
{
	fputs("| route | methods | token | body cap | runs on | limits |\n"
	      "|---|---|---|---|---|---|\n",
	      f);
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const struct server_route *rt = &routes[i];

		fprintf(f, "| `%s%s` | ", rt->path,
			rt->path[strlen(rt->path) - 1] == '/' ? "…" : "");
		methods_write(f, rt->methods);
		fprintf(f, " | %s | ", rt->open ? "no" : "yes");
		if (rt->max_body == SERVER_BODY_OPT)
			fputs("`--max-body-mb` (64 MiB)", f);
		else if (rt->max_body == 0)
			fputs("none", f);
		else
			fprintf(f, "%zu KiB", rt->max_body >> 10);
		fprintf(f, " | %s | %s |\n", class_name(rt->cls), rt->limits);
	}
}
