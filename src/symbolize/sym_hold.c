/*
 * sym_hold: which processes map which objects (symbolizer__hold). Each process holds
 * one reference on each object it maps; when it is forgotten (it exited, and its
 * samples were symbolized), objects nobody holds any more are released: their
 * address-cache entries, symbol table and DWARF. At once by default; with a grace
 * period (sym_opts.release_grace_ns, the agent's), an unheld object waits on the idle
 * list first, so the next short-lived process of the same binary finds it loaded: on
 * an idle machine, re-inflating libc's compressed debug DWARF for every short process
 * was 90% of the agent's time (docs/overhead.md). Bounded: SYM_PROC_MAX processes.
 * Processes sit in SYM_PROC_BUCKETS fixed chains by pid, not a base_hmap: a process
 * is removed by pid with nothing to renumber, and the buckets never grow.
 */
#include "symbolize/sym_impl.h"

#include <errno.h>
#include <stdlib.h>

#include "base/base.h"

static void idle_unlink(struct symbolizer *s, struct sym_object *o)
{
	if (o->idle_prev)
		o->idle_prev->idle_next = o->idle_next;
	else
		s->idle_head = o->idle_next;
	if (o->idle_next)
		o->idle_next->idle_prev = o->idle_prev;
	else
		s->idle_tail = o->idle_prev;
	o->idle_prev = o->idle_next = NULL;
	o->idle_since_ns = 0;
}

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
	if (obj->holders == 0 && obj->idle_since_ns) {
		idle_unlink(s, obj);
		s->stats.object_revivals++;
	}
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

/* o has no holder left: released now, or queued (newest last) for its grace period. */
static void object_unheld(struct symbolizer *s, struct sym_object *o, uint64_t now_ns)
{
	if (!s->release_grace_ns) {
		object_release(s, o);
		return;
	}
	o->idle_since_ns = now_ns ? now_ns : 1;
	o->idle_prev = s->idle_tail;
	o->idle_next = NULL;
	if (s->idle_tail)
		s->idle_tail->idle_next = o;
	else
		s->idle_head = o;
	s->idle_tail = o;
}

/* Drops pid's references; objects nobody holds any more are released (or go idle). */
static void proc_forget(struct symbolizer *s, uint32_t pid, uint64_t now_ns)
{
	struct sym_proc **pp = s->procs ? proc_slot(s, pid) : NULL, *p = pp ? *pp : NULL;

	if (!p)
		return;
	*pp = p->next;
	s->n_procs--;
	for (uint32_t i = 0; i < p->n; i++)
		if (--p->objs[i]->holders == 0)
			object_unheld(s, p->objs[i], now_ns);
	free(p->objs);
	free(p);
}

void symbolizer__expire_idle(struct symbolizer *s, uint64_t now_ns)
{
	while (s->idle_head && now_ns >= s->idle_head->idle_since_ns &&
	       now_ns - s->idle_head->idle_since_ns >= s->release_grace_ns) {
		struct sym_object *o = s->idle_head;

		idle_unlink(s, o);
		object_release(s, o);
	}
}

void symbolizer__forget_pid(struct symbolizer *s, uint32_t pid)
{
	uint64_t now = s->release_grace_ns ? sym_now_ns() : 0;

	sym_jit_forget(s, pid);
	proc_forget(s, pid, now);
	if (s->release_grace_ns)
		symbolizer__expire_idle(s, now);
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
