/*
 * sym_cache: the symbolizer's memory under one byte budget (sym_opts.cache_bytes):
 * heavy objects (symbol tables and DWARF) in LRU order, and the address cache,
 * (object, vaddr) -> copied frames. Past the budget, address entries are evicted
 * oldest first while they hold over a quarter of it, else the least recently used
 * object's tables and DWARF are dropped (re-read from its file on next use).
 *
 * The address cache is chained, not a base_hmap: its entries are variable-size
 * allocations (frames and strings inline) threaded on three lists at once (hash
 * chain, CLOCK order, per-object list for release), removed by pointer in O(1).
 */
#include "symbolize/sym_impl.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"

static void lru_unlink(struct symbolizer *s, struct sym_object *o)
{
	if (o->lru_prev)
		o->lru_prev->lru_next = o->lru_next;
	else if (s->lru_head == o)
		s->lru_head = o->lru_next;
	if (o->lru_next)
		o->lru_next->lru_prev = o->lru_prev;
	else if (s->lru_tail == o)
		s->lru_tail = o->lru_prev;
	o->lru_prev = o->lru_next = NULL;
}

void sym_lru_touch(struct symbolizer *s, struct sym_object *o)
{
	if (s->lru_head == o)
		return;
	lru_unlink(s, o);
	o->lru_next = s->lru_head;
	if (s->lru_head)
		s->lru_head->lru_prev = o;
	s->lru_head = o;
	if (!s->lru_tail)
		s->lru_tail = o;
}

/* Recomputes what o holds in memory and moves the difference into s's account. */
void sym_object_account(struct symbolizer *s, struct sym_object *o)
{
	uint64_t b = o->heavy ? sym_table__bytes(&o->info.table) + sym_table__bytes(&o->info.data) +
				    sym_dwarf__bytes(o->dwarf)
			      : 0;

	s->obj_bytes = s->obj_bytes - o->bytes + b;
	o->bytes = b;
}

/* Drops o's symbols and DWARF (re-read on next use); segments stay. */
void sym_object_unload(struct symbolizer *s, struct sym_object *o)
{
	sym_table__fini(&o->info.table);
	sym_table__fini(&o->info.data);
	sym_dwarf__close(o->dwarf);
	o->dwarf = NULL;
	o->heavy = false;
	sym_object_account(s, o);
	lru_unlink(s, o);
}

/*
 * ---- the address cache: (object, vaddr) -> copied frames, byte-accounted ----
 * Eviction is CLOCK (second chance) over insertion order: a hit only sets a bit in the
 * entry it reads anyway, where LRU relinking would touch two other random entries.
 */

static size_t centry_bucket(const struct symbolizer *s, const struct sym_object *o, uint64_t v)
{
	return (size_t)base_hash_u64((uintptr_t)o, v) & (s->n_buckets - 1);
}

static void centry_unlink_lru(struct symbolizer *s, struct sym_centry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		s->c_head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		s->c_tail = e->prev;
	e->prev = e->next = NULL;
}

static void centry_push_lru(struct symbolizer *s, struct sym_centry *e)
{
	e->next = s->c_head;
	e->prev = NULL;
	if (s->c_head)
		s->c_head->prev = e;
	s->c_head = e;
	if (!s->c_tail)
		s->c_tail = e;
}

void sym_centry_remove(struct symbolizer *s, struct sym_centry *e)
{
	struct sym_centry **pp = &s->buckets[centry_bucket(s, e->obj, e->vaddr)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	centry_unlink_lru(s, e);
	if (e->oprev)
		e->oprev->onext = e->onext;
	else
		e->obj->centries = e->onext;
	if (e->onext)
		e->onext->oprev = e->oprev;
	s->cache_bytes -= e->bytes;
	s->cache_used--;
	free(e);
}

struct sym_centry *sym_centry_find(struct symbolizer *s, const struct sym_object *o, uint64_t v)
{
	struct sym_centry *e;

	if (!s->n_buckets)
		return NULL;
	for (e = s->buckets[centry_bucket(s, o, v)]; e; e = e->hnext)
		if (e->obj == o && e->vaddr == v)
			return e;
	return NULL;
}

/* Doubles the buckets when the table is full (best effort). */
static void buckets_grow(struct symbolizer *s)
{
	size_t n = s->n_buckets ? s->n_buckets * 2 : SYM_CACHE_MIN_SLOTS, old = s->n_buckets;
	struct sym_centry **b = calloc(n, sizeof(*b)), **ob = s->buckets, *e, *next;

	if (!b)
		return;
	s->buckets = b;
	s->n_buckets = n;
	for (size_t i = 0; i < old; i++) {
		for (e = ob[i]; e; e = next) {
			next = e->hnext;
			e->hnext = b[centry_bucket(s, e->obj, e->vaddr)];
			b[centry_bucket(s, e->obj, e->vaddr)] = e;
		}
	}
	free(ob);
	s->cache_bytes = s->cache_bytes - old * sizeof(*b) + n * sizeof(*b);
}

/* Copies p into *pos (when not NULL) and returns the copy. */
static const char *str_put(char **pos, const char *p)
{
	char *d = *pos;
	size_t n = str_room(p);

	if (!p)
		return NULL;
	memcpy(d, p, n);
	*pos += n;
	return d;
}

/* A new entry holding copies of f[0, n). NULL on ENOMEM. */
struct sym_centry *sym_centry_new(struct sym_object *o, uint64_t v, const struct sym_frame *f,
				  size_t n)
{
	size_t room = sizeof(struct sym_centry) + n * sizeof(*f);
	struct sym_centry *e;
	char *pos;

	for (size_t i = 0; i < n; i++)
		room += str_room(f[i].name) + str_room(f[i].file) +
			(f[i].system_name != f[i].name ? str_room(f[i].system_name) : 0);
	if (!(e = calloc(1, room)))
		return NULL;
	e->obj = o;
	e->vaddr = v;
	e->gen = o->gen;
	e->n = (uint32_t)n;
	e->bytes = (uint32_t)room;
	pos = (char *)&e->frames[n];
	for (size_t i = 0; i < n; i++) {
		e->frames[i] = f[i];
		e->frames[i].name = str_put(&pos, f[i].name);
		e->frames[i].system_name = f[i].system_name == f[i].name
					       ? e->frames[i].name
					       : str_put(&pos, f[i].system_name);
		e->frames[i].file = str_put(&pos, f[i].file);
	}
	return e;
}

void sym_centry_insert(struct symbolizer *s, struct sym_centry *e)
{
	size_t b;

	if (s->cache_used >= s->n_buckets)
		buckets_grow(s);
	b = centry_bucket(s, e->obj, e->vaddr);
	e->hnext = s->buckets[b];
	s->buckets[b] = e;
	centry_push_lru(s, e);
	e->oprev = NULL;
	e->onext = e->obj->centries;
	if (e->onext)
		e->onext->oprev = e;
	e->obj->centries = e;
	s->cache_bytes += e->bytes;
	s->cache_used++;
}

/*
 * Evicts until the account fits the budget: address-cache entries (oldest first) while
 * they hold more than a quarter of it, else whole objects' tables (least recently used).
 */
void sym_budget_enforce(struct symbolizer *s)
{
	while (s->obj_bytes + s->cache_bytes > s->budget) {
		bool cache_big = s->cache_bytes > s->budget / 4 && s->c_tail;

		if (!cache_big && s->lru_tail) {
			sym_object_unload(s, s->lru_tail);
			s->stats.object_evictions++;
		} else if (s->c_tail && s->c_tail->referenced) { /* CLOCK: second chance */
			struct sym_centry *e = s->c_tail;

			e->referenced = false;
			centry_unlink_lru(s, e);
			centry_push_lru(s, e);
		} else if (s->c_tail) {
			sym_centry_remove(s, s->c_tail);
			s->stats.cache_evictions++;
		} else {
			break; /* only bucket arrays left: they stay */
		}
	}
}
