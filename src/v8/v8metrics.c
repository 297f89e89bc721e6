/*
 * v8metrics: the V8 walk's counters in Prometheus text, for the agent's /metrics.
 */
#include <stdio.h>

#include "v8/v8.h"

static void one(FILE *f, const char *name, const char *type, const char *help, uint64_t v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
		(unsigned long long)v);
}

void v8_write_metrics(FILE *f, const uint64_t st[HEARTH_V8_STAT_MAX], const struct v8_mgr_stats *ms)
{
	static const char *const why[HEARTH_V8_STAT_MAX] = {
	    [HEARTH_V8_READ_FAIL] = "unreadable",
	    [HEARTH_V8_BAD_FP] = "end_of_fp_chain",
	    [HEARTH_V8_TRUNCATED] = "truncated",
	};

	one(f, "hearth_agent_node_processes", "gauge",
	    "Node.js processes whose JavaScript frames are walked now.", ms->processes);
	one(f, "hearth_agent_node_unsupported_total", "counter",
	    "Node.js processes whose V8 build cannot be walked (pointer compression).",
	    ms->unsupported);
	one(f, "hearth_agent_node_samples_total", "counter", "Samples of walked node processes.",
	    st[HEARTH_V8_SAMPLES]);
	one(f, "hearth_agent_node_walked_total", "counter", "Of those, samples with JS frames.",
	    st[HEARTH_V8_WALKED]);
	one(f, "hearth_agent_node_frames_total", "counter", "JavaScript frames recorded.",
	    st[HEARTH_V8_FRAMES]);
	one(f, "hearth_agent_node_unknown_total", "counter",
	    "JavaScript frames whose function could not be named (moved or collected).",
	    ms->failed);
	fputs("# HELP hearth_agent_node_stops_total Walks of node samples, by how they ended.\n"
	      "# TYPE hearth_agent_node_stops_total counter\n",
	      f);
	for (int i = 0; i < HEARTH_V8_STAT_MAX; i++)
		if (why[i])
			fprintf(f, "hearth_agent_node_stops_total{reason=\"%s\"} %llu\n", why[i],
				(unsigned long long)st[i]);
}
