/*
 * collect: the wiring between raw samples and a profile. Aggregates raw samples
 * (identical process/thread/stacks add up), keeps the process table current from
 * process events, and on demand symbolizes everything into a profile.
 *
 * Used by `hearth record` (one profile at the end) and by the agent, which also
 * serves `hearth run` (one profile per interval). It takes the sampler's own
 * sample and event structs (sampler/sampler.h): the sampler sits below and knows
 * nothing of this module. Symbolization happens only in collector__build, off the
 * sampling path, and each distinct address is resolved once (symbolizer cache).
 */
#ifndef HEARTH_COLLECT_H
#define HEARTH_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "proc/proc.h"
#include "sampler/sampler.h"
#include "symbolize/symbolize.h"

/* Bound on distinct (process, thread, stacks) entries held between builds. */
#define COLLECT_MAX_ENTRIES (1u << 20)

struct collect_stats {
	uint64_t samples;    /* sample counts added */
	uint64_t entries;    /* distinct entries held now */
	uint64_t dropped;    /* samples dropped because the table was full */
	uint64_t no_process; /* samples whose process could not be read */
	uint64_t frames;     /* frames turned into locations by the last build */
	uint64_t unresolved; /* of those, frames left as module+offset */
};

struct collector;

/* Borrows pt and sym (they outlive the collector). NULL on ENOMEM. */
struct collector *collector__new(struct proc_table *pt, struct symbolizer *sym);
void collector__free(struct collector *c);

/* Adds a raw sample (copied). 0, -ENOSPC when the table is full or -ENOMEM (both
 * counted in stats.dropped). */
int collector__add(struct collector *c, const struct sampler_sample *s);
/* A process event (HEARTH_EV_*): read mappings now (NEW), re-read after exec, keep
 * after exit. Other kinds are ignored. */
void collector__event(struct collector *c, const struct sampler_event *e);
/*
 * Symbolizes what was added since the last build into a new profile (period_ns,
 * time_ns..+duration_ns) and forgets it. NULL on ENOMEM.
 */
struct profile *collector__build(struct collector *c, int64_t period_ns, int64_t time_ns,
				 int64_t duration_ns);
void collector__stats(const struct collector *c, struct collect_stats *out);
/*
 * Profiles built from now on are of this type (a copy; NULL: CPU, the default):
 * each sample's one value is its summed count (nanoseconds for off-CPU blocks,
 * docs/offcpu.md). Samples of a non-zero kind (sampler_sample.kind) get a
 * `reason` label and a leaf pseudo-frame whatever the type. 0 or -ENOMEM.
 */
int collector__set_type(struct collector *c, const char *type);
struct python_mgr;
/* Names samples' Python frames with py (borrowed; sampler__python) and puts them
 * in place of the interpreter's frames. Without it (NULL, the default) Python
 * frames are dropped and stacks are native only. */
void collector__set_python(struct collector *c, struct python_mgr *py);
/* The V8 manager naming JavaScript frames (docs/node.md); NULL: they are dropped. */
struct v8_mgr;
void collector__set_v8(struct collector *c, struct v8_mgr *v8);
struct java_mgr;
/* Names Java frames (src/java/java.h); NULL: they are dropped. Borrowed. */
void collector__set_java(struct collector *c, struct java_mgr *java);
struct ruby_mgr;
/* The same for CRuby's frames (sampler__ruby; docs/ruby.md). */
void collector__set_ruby(struct collector *c, struct ruby_mgr *rb);

#endif /* HEARTH_COLLECT_H */
