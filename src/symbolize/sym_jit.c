/*
 * sym_jit: JIT code named from perf maps (perf-PID.map), one map per process, re-read
 * when it may have grown, at most SYM_JIT_MAX processes (the oldest dropped first).
 * A list, not a base_hmap: asked only for frames in anonymous executable memory
 * (JIT code), bounded by SYM_JIT_MAX, and each answer costs a search of the map anyway.
 */
#include "symbolize/sym_impl.h"

#include <errno.h>
#include <stdlib.h>

static struct sym_jit *jit_find(struct symbolizer *s, uint32_t pid)
{
	for (struct sym_jit *j = s->jits; j; j = j->next)
		if (j->pid == pid)
			return j;
	return NULL;
}

/* The map state of pid, made on first use (the oldest dropped past SYM_JIT_MAX). */
static struct sym_jit *jit_get(struct symbolizer *s, uint32_t pid)
{
	struct sym_jit *j = jit_find(s, pid), **pp;

	if (j)
		return j;
	if (s->n_jits >= SYM_JIT_MAX) {
		for (pp = &s->jits; (*pp)->next; pp = &(*pp)->next)
			;
		sym_jit_forget(s, (*pp)->pid);
	}
	if (!(j = calloc(1, sizeof(*j))) || !(j->map = sym_perfmap__new(s->perfmap_dir, pid))) {
		free(j);
		return NULL;
	}
	j->pid = pid;
	j->next = s->jits;
	s->jits = j;
	s->n_jits++;
	return j;
}

/* Re-reads the map when it may have grown: at most every SYM_JIT_RECHECK_NS. */
static void jit_refresh(struct symbolizer *s, struct sym_jit *j, bool missed)
{
	uint64_t now = sym_now_ns(), before = sym_perfmap__bad_lines(j->map);

	if (j->checked_ns &&
	    now - j->checked_ns < (missed ? SYM_JIT_RECHECK_NS / 10 : SYM_JIT_RECHECK_NS))
		return;
	j->checked_ns = now;
	sym_perfmap__refresh(j->map);
	s->stats.perfmap_bad_lines += sym_perfmap__bad_lines(j->map) - before;
}

int symbolizer__resolve_jit(struct symbolizer *s, uint32_t pid, uint64_t addr,
			    const struct sym_result **out)
{
	struct sym_jit *j = jit_get(s, pid);
	const char *name;

	*out = &s->unresolved;
	if (!j)
		return -ENOMEM;
	jit_refresh(s, j, false);
	if (!(name = sym_perfmap__find(j->map, addr))) {
		jit_refresh(s, j, true);
		if (!(name = sym_perfmap__find(j->map, addr)))
			return 0;
	}
	s->stats.jit_hits++;
	s->scratch.n = 1;
	s->scratch.frames[0] = (struct sym_frame){.name = name, .system_name = name};
	*out = &s->scratch;
	return 0;
}

void sym_jit_forget(struct symbolizer *s, uint32_t pid)
{
	for (struct sym_jit **pp = &s->jits; *pp; pp = &(*pp)->next) {
		struct sym_jit *j = *pp;

		if (j->pid != pid)
			continue;
		*pp = j->next;
		sym_perfmap__free(j->map);
		free(j);
		s->n_jits--;
		return;
	}
}
