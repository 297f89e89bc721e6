/*
 * libFuzzer target for the scrape config (scrape_config__parse, src/scrape/
 * scrape_config.c: libyaml's document API, then hearth's checks): any input must
 * parse or fail with a message naming "x.yaml:LINE:", never crash, leak or read
 * out of bounds; a config it accepts must hold what the scraper relies on
 * (named jobs, intervals in range, timeouts within them, HOST:PORT targets,
 * paths starting with '/').
 */
#include "scrape/scrape.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check(const struct scrape_config *c)
{
	size_t n = 0;

	for (size_t i = 0; i < c->n_jobs; i++) {
		const struct scrape_job_cfg *j = &c->jobs[i];

		if (!j->name || !*j->name || !j->scheme ||
		    j->interval_ns < SCRAPE_MIN_INTERVAL_NS ||
		    j->interval_ns > SCRAPE_MAX_INTERVAL_NS || j->timeout_ns > j->interval_ns ||
		    j->timeout_ns <= 0)
			abort();
		for (int k = 0; k < SCRAPE_N_KINDS; k++)
			if (!j->prof[k].path || j->prof[k].path[0] != '/')
				abort();
		for (size_t t = 0; t < j->n_targets; t++, n++)
			if (!strchr(j->targets[t].address, ':') ||
			    j->targets[t].n_labels > SCRAPE_MAX_LABELS)
				abort();
	}
	if (n != scrape_config__n_targets(c) || n > SCRAPE_MAX_TARGETS)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scrape_config *c = NULL;
	char err[512] = "";
	int e = scrape_config__parse("x.yaml", (const char *)data, size, &c, err, sizeof(err));

	if (e == 0)
		check(c);
	else if (c || strncmp(err, "x.yaml:", 7) != 0)
		abort();
	scrape_config__free(c);
	return 0;
}
