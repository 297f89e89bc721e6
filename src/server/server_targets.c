/*
 * GET /api/targets: the scrape targets of --scrape-config and how their last
 * scrape went (src/scrape keeps the state; this file only serves it). Without
 * a scrape config the list is empty, not a 404, so a client need not know how
 * the server was started.
 */
#include "server_impl.h"

#include <string.h>

enum MHD_Result server_h_targets(struct server *s, struct server_req *r)
{
	struct server_mem mem;

	if (server_mem__open(&mem))
		return server_error(r, 500, SERVER_REJ_INTERNAL, "out of memory");
	scrape__targets_json(s->opts.scrape, mem.f);
	return server_reply_mem(r, 200, "application/json", &mem);
}
