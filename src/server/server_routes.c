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
    {.path = "/healthz",
     .methods = GET_HEAD,
     .open = true,
     .cls = SERVER_CLASS_INLINE,
     .limits = "no token, no body; answered on the event thread",
     .handler = h_healthz},
    {.path = "/ingest",
     .methods = SERVER_M_POST,
     .store = true,
     .max_body = SERVER_BODY_OPT,
     .cls = SERVER_CLASS_DECODE,
     .budget = server_memory_budget,
     .limits = "decode slot; memory 64 MiB + 128 B per body byte (≤ 1 GiB)",
     .handler = server_h_ingest},
    {.path = "/v1development/profiles",
     .methods = SERVER_M_POST,
     .store = true,
     .max_body = SERVER_BODY_OPT,
     .cls = SERVER_CLASS_DECODE,
     .budget = server_memory_budget,
     .limits = "decode slot; memory 64 MiB + 128 B per body byte (≤ 1 GiB)",
     .handler = server_h_otlp},
    {.path = "/api/targets",
     .methods = GET_HEAD,
     .cls = SERVER_CLASS_LIGHT,
     .limits = "light worker",
     .handler = server_h_targets},
    {.path = "/api/function-series",
     .methods = GET_HEAD,
     .store = true,
     .cls = SERVER_CLASS_QUERY,
     .limits = "query slot; the query limits below",
     .handler = server_h_fseries},
    {.path = "/api/",
     .methods = GET_HEAD,
     .store = true,
     .cls = SERVER_CLASS_QUERY,
     .limits = "query slot; the query limits below",
     .handler = server_h_api},
    {.path = "/debug/pprof/profile",
     .methods = GET_HEAD,
     .cls = SERVER_CLASS_INLINE,
     .limits = "waits `seconds` (≤ 600) suspended, no thread held; 4 at once",
     .handler = server_h_pprof},
    {.path = "/metrics",
     .methods = GET_HEAD,
     .cls = SERVER_CLASS_LIGHT,
     .limits = "light worker",
     .handler = server_h_metrics},
    {.path = "/metrics/functions",
     .methods = GET_HEAD,
     .store = true,
     .cls = SERVER_CLASS_QUERY,
     .limits = "query slot; k ≤ 100 (2k + 1 series), window ≤ 1 h",
     .handler = server_h_metrics_functions},
    {.path = "/querier.v1.QuerierService/",
     .methods = SERVER_M_POST,
     .store = true,
     .max_body = SERVER_QUERY_MAX_BODY,
     .cls = SERVER_CLASS_QUERY,
     .budget = server_memory_budget,
     .limits = "query slot; JSON or gzip decoded within 64 MiB + 128 B per body byte",
     .handler = server_h_connect,
     .reject = server_connect_reject},
    {.path = "/pyroscope/",
     .methods = GET_HEAD,
     .store = true,
     .cls = SERVER_CLASS_QUERY,
     .limits = "query slot; the query limits below",
     .handler = server_h_pyroscope},
    /* open: the UI's files hold no data, and login.html must load to take the token;
     * every request the UI makes for data goes to a route above, with the token */
    {.path = "/",
     .methods = GET_HEAD,
     .open = true,
     .store = true,
     .cls = SERVER_CLASS_LIGHT,
     .limits = "light worker; files of the web UI (no data: no token, so the login page loads)",
     .handler = server_h_web},
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
			return NULL; /* the agent's listener has no UI: any path is unknown */
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
	fputs("| route | methods | token | needs a store | body cap | runs on | limits |\n"
	      "|---|---|---|---|---|---|---|\n",
	      f);
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const struct server_route *rt = &routes[i];

		fprintf(f, "| `%s%s` | ", rt->path,
			rt->path[strlen(rt->path) - 1] == '/' ? "…" : "");
		methods_write(f, rt->methods);
		fprintf(f, " | %s | %s | ", rt->open ? "no" : "yes", rt->store ? "yes" : "no");
		if (rt->max_body == SERVER_BODY_OPT)
			fputs("`--max-body-mb` (64 MiB)", f);
		else if (rt->max_body == 0)
			fputs("none", f);
		else
			fprintf(f, "%zu KiB", rt->max_body >> 10);
		fprintf(f, " | %s | %s |\n", class_name(rt->cls), rt->limits);
	}
}
