/*
 * sym_hold: which processes map which objects (symbolizer__hold). Each process holds
 * one reference on each object it maps; when it is forgotten (it exited, and its
 * samples were symbolized), objects nobody holds any more are released at once: their
 * address-cache entries, symbol table and DWARF. Bounded: SYM_PROC_MAX processes.
 * Processes sit in SYM_PROC_BUCKETS fixed chains by pid, not a base_hmap: a process
 * is removed by pid with nothing to renumber, and the buckets never grow.
 */
#include "symbolize/sym_impl.h"

#include <errno.h>
#include <stdlib.h>

#include "base/base.h"

static struct sym_proc **proc_slot(struct symbolizer *s, uint32_t pid)
{
	struct sym_proc **pp =
	    &s->procs[base_hash_u64(BASE_HASH_SEED, pid) & (SYM_PROC_BUCKETS - 1)];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

int symbolizer__hold(struct symbolizer *s, uint32_t pid, struct sym_object *obj)
{
	struct sym_proc **pp, *p;
	size_t cap;

	if (!obj)
		return -EINVAL;
	if (!s->procs && !(s->procs = calloc(SYM_PROC_BUCKETS, sizeof(*s->procs))))
		return -ENOMEM;
	pp = proc_slot(s, pid);
	if (!(p = *pp)) {
		if (s->n_procs >= SYM_PROC_MAX)
			return -ENOSPC;
		if (!(p = calloc(1, sizeof(*p))))
			return -ENOMEM;
		p->pid = pid;
		*pp = p;
		s->n_procs++;
	}
	for (uint32_t i = 0; i < p->n; i++)
		if (p->objs[i] == obj)
			return 0;
	cap = p->cap;
	if (base_grow((void **)&p->objs, &cap, (size_t)p->n + 1, sizeof(*p->objs)))
		return -ENOMEM;
	p->cap = (uint32_t)cap;
	p->objs[p->n++] = obj;
	obj->holders++;
	return 0;
}

/*
 * o's last process is gone: its cached addresses, symbol table and DWARF are freed now
 * rather than when the budget runs out. The record stays (identity, segments), so a
 * late sample or a new process mapping the same file reads it again.
 */
static void object_release(struct symbolizer *s, struct sym_object *o)
{
	while (o->centries)
		sym_centry_remove(s, o->centries);
	if (o->heavy)
		sym_object_unload(s, o);
	s->stats.object_releases++;
}

/* Drops pid's references; objects nobody holds any more are released. */
static void proc_forget(struct symbolizer *s, uint32_t pid)
{
	struct sym_proc **pp = s->procs ? proc_slot(s, pid) : NULL, *p = pp ? *pp : NULL;

	if (!p)
		return;
	*pp = p->next;
	s->n_procs--;
	for (uint32_t i = 0; i < p->n; i++)
		if (--p->objs[i]->holders == 0)
			object_release(s, p->objs[i]);
	free(p->objs);
	free(p);
}

void symbolizer__forget_pid(struct symbolizer *s, uint32_t pid)
{
	sym_jit_forget(s, pid);
	proc_forget(s, pid);
}

void sym_holds_free(struct symbolizer *s)
{
	for (size_t i = 0; s->procs && i < SYM_PROC_BUCKETS; i++) {
		while (s->procs[i]) {
			struct sym_proc *p = s->procs[i];

			s->procs[i] = p->next;
			free(p->objs);
			free(p);
		}
	}
	free(s->procs);
	s->procs = NULL;
}
