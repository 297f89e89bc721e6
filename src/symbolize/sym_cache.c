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
void sym_object_drop_pages(struct symbolizer *s, struct sym_object *o)
{
	if (o->dwarf)
		sym_dwarf__drop_pages(o->dwarf);
	if (sym_table__drop_pages(&o->info.table))
		sym_object_account(s, o);
}

void sym_object_account(struct symbolizer *s, struct sym_object *o)
{
	uint64_t sb = o->heavy ? sym_table__bytes(&o->info.table) +
				     sym_table__bytes(&o->info.data) + o->dname_bytes
			       : 0;
	uint64_t db = o->heavy ? sym_dwarf__bytes(o->dwarf) : 0;

	if (s->mem_budget && sb != o->sym_bytes)
		mem_budget__charge(MEM_SYMBOLS, (int64_t)sb - (int64_t)o->sym_bytes);
	if (s->mem_budget && db != o->dwarf_bytes)
		mem_budget__charge(MEM_DWARF, (int64_t)db - (int64_t)o->dwarf_bytes);
	s->sym_bytes = s->sym_bytes - o->sym_bytes + sb;
	s->dwarf_bytes = s->dwarf_bytes - o->dwarf_bytes + db;
	o->sym_bytes = sb;
	o->dwarf_bytes = db;
	s->obj_bytes = s->obj_bytes - o->bytes + sb + db;
	o->bytes = sb + db;
}

/* The address cache grew by delta bytes (or shrank). */
static void cache_charge(struct symbolizer *s, int64_t delta)
{
	s->cache_bytes = (uint64_t)((int64_t)s->cache_bytes + delta);
	if (s->mem_budget)
		mem_budget__charge(MEM_ADDRS, delta);
}

/* ---- DWARF's names kept past the DWARF ---- */

/* Names kept per object at most: the functions looked up, a few thousand on a busy
 * object; past it none is added (those functions then follow the DWARF). */
#define SYM_DNAMES_MAX 65536

static uint64_t dname_hash(uint64_t start)
{
	return base_hash_u64(BASE_HASH_SEED, start);
}

static bool dname_eq(const void *ctx, size_t i, const void *key)
{
	return ((const struct sym_object *)ctx)->dnames[i].start == *(const uint64_t *)key;
}

/* The start of o's symbol holding vaddr; false when none. */
static bool symbol_start(const struct sym_object *o, uint64_t vaddr, uint64_t *start)
{
	long i = o->heavy ? sym_table__find(&o->info.table, vaddr) : -1;

	if (i < 0)
		return false;
	*start = sym_table__start(&o->info.table, (size_t)i);
	return true;
}

void sym_dname_keep(struct sym_object *o, uint64_t vaddr, const struct sym_frame *f)
{
	char *name = NULL, *sys = NULL;
	uint64_t start;
	bool same;

	if (!f->name || !f->name[0] || o->n_dnames >= SYM_DNAMES_MAX ||
	    !symbol_start(o, vaddr, &start) ||
	    base_hmap__find(&o->dname_idx, dname_hash(start), dname_eq, o, &start) != SIZE_MAX)
		return; /* most lookups: the function's name is kept already */
	same = !f->system_name || f->system_name == f->name || !strcmp(f->system_name, f->name);
	if (!(name = strdup(f->name)) || (!same && !(sys = strdup(f->system_name))) ||
	    base_grow((void **)&o->dnames, &o->cap_dnames, o->n_dnames + 1, sizeof(*o->dnames)) ||
	    base_hmap__insert(&o->dname_idx, dname_hash(start), o->n_dnames)) {
		free(name);
		free(sys);
		return; /* out of memory: named by the symbols later, no harm */
	}
	o->dnames[o->n_dnames++] = (struct sym_dname){start, name, sys};
	/* the entry, two index slots (load <= 3/4), the strings */
	o->dname_bytes += sizeof(struct sym_dname) + 2 * sizeof(struct base_hmap_slot) +
			  strlen(name) + 1 + (sys ? strlen(sys) + 1 : 0);
}

void sym_dname_apply(const struct sym_object *o, uint64_t vaddr, struct sym_frame *f)
{
	uint64_t start;
	size_t i;

	if (!o->n_dnames || !symbol_start(o, vaddr, &start) ||
	    (i = base_hmap__find(&o->dname_idx, dname_hash(start), dname_eq, o, &start)) ==
		SIZE_MAX)
		return;
	f->name = o->dnames[i].name;
	f->system_name = o->dnames[i].system_name ? o->dnames[i].system_name : o->dnames[i].name;
}

void sym_dname_free(struct sym_object *o)
{
	for (size_t i = 0; i < o->n_dnames; i++) {
		free(o->dnames[i].name);
		free(o->dnames[i].system_name);
	}
	free(o->dnames);
	base_hmap__fini(&o->dname_idx);
	o->dnames = NULL;
	o->n_dnames = o->cap_dnames = 0;
	o->dname_bytes = 0;
}

/* Drops o's symbols and DWARF (re-read on next use); segments stay. */
void sym_object_unload(struct symbolizer *s, struct sym_object *o)
{
	sym_dname_free(o);
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
	cache_charge(s, -(int64_t)e->bytes);
	s->cache_used--;
	if (s->last_entry == e)
		s->last_entry = NULL;
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
	cache_charge(s, (int64_t)((n - old) * sizeof(*b)));
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
	cache_charge(s, e->bytes);
	s->cache_used++;
}

/*
 * Evicts until the account fits the budget: address-cache entries (oldest first) while
 * they hold more than a quarter of it, else whole objects' tables (least recently used).
 */
static uint64_t evict_addrs(void *ctx, uint64_t want);
static uint64_t evict_objects(struct symbolizer *s, uint64_t want, bool dwarf);

void sym_budget_enforce(struct symbolizer *s)
{
	/* the ledger's budget too: what this symbolizer just added came past it */
	if (s->mem_budget && mem_budget__over()) {
		uint64_t over = mem_budget__used_total() - mem_budget__cache_budget();

		if (evict_addrs(s, over) < over && mem_budget__over())
			evict_objects(s, mem_budget__used_total() - mem_budget__cache_budget(),
				      false);
	}
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

/* ---- the process-wide ledger (src/base/membudget.h) ---- */

/*
 * MEM_ADDRS: address-cache entries, oldest first (CLOCK's second chance given, as the
 * symbolizer's own budget does), up to want bytes. Never the entry the last resolve
 * handed out (its caller may still read it).
 */
static uint64_t evict_addrs(void *ctx, uint64_t want)
{
	struct symbolizer *s = ctx;
	uint64_t freed = 0, n = 0, spins = 0;

	while (freed < want && s->c_tail && spins <= s->cache_used) {
		struct sym_centry *e = s->c_tail;

		if (e->referenced || e == s->last_entry) {
			e->referenced = false;
			centry_unlink_lru(s, e);
			centry_push_lru(s, e);
			spins++;
			continue;
		}
		freed += e->bytes;
		n++;
		sym_centry_remove(s, e);
		s->stats.cache_evictions++;
	}
	if (n)
		mem_budget__evicted(MEM_ADDRS, n, freed);
	return freed;
}

/* Drops the least recently used objects' DWARF (dwarf: true; their symbols stay) or
 * whole tables (false), up to want bytes; never the object of the last resolve. */
static uint64_t evict_objects(struct symbolizer *s, uint64_t want, bool dwarf)
{
	uint64_t freed = 0, n = 0, sym_freed = 0, dwarf_freed = 0;
	struct sym_object *o = s->lru_tail, *prev;

	/* first what costs nothing to get back: the page-cache pages of mapped names
	 * (every name read is copied out), least recently used objects first */
	for (o = s->lru_tail; o && !dwarf && freed < want; o = o->lru_prev) {
		uint64_t b = sym_table__drop_pages(&o->info.table);

		if (b) {
			freed += b;
			sym_object_account(s, o);
		}
	}
	if (freed) /* not an eviction: nothing is lost; counted as bytes given back */
		mem_budget__evicted(MEM_SYMBOLS, 0, freed);
	for (o = s->lru_tail; o && freed < want; o = prev) {
		prev = o->lru_prev;
		if (o == s->last_obj || (dwarf && !o->dwarf))
			continue;
		if (dwarf) {
			dwarf_freed += o->dwarf_bytes;
			freed += o->dwarf_bytes;
			sym_dwarf__close(o->dwarf);
			o->dwarf = NULL;
			o->gen++; /* cached answers had its lines */
			sym_object_account(s, o);
		} else {
			sym_freed += o->sym_bytes;
			dwarf_freed += o->dwarf_bytes;
			freed += o->bytes;
			sym_object_unload(s, o);
			s->stats.object_evictions++;
		}
		n++;
	}
	if (sym_freed)
		mem_budget__evicted(MEM_SYMBOLS, n, sym_freed);
	if (dwarf_freed)
		mem_budget__evicted(MEM_DWARF, n, dwarf_freed);
	return freed;
}

static uint64_t evict_dwarf(void *ctx, uint64_t want)
{
	return evict_objects(ctx, want, true);
}

static uint64_t evict_symbols(void *ctx, uint64_t want)
{
	return evict_objects(ctx, want, false);
}

void sym_ledger_register(struct symbolizer *s)
{
	if (!s->mem_budget)
		return;
	/* address caches first (cheap to rebuild), then DWARF, then whole tables */
	mem_budget__register(MEM_ADDRS, 0, evict_addrs, s);
	mem_budget__register(MEM_DWARF, 2, evict_dwarf, s);
	mem_budget__register(MEM_SYMBOLS, 2, evict_symbols, s);
}

void sym_ledger_unregister(struct symbolizer *s)
{
	if (!s->mem_budget)
		return;
	mem_budget__unregister(evict_addrs, s);
	mem_budget__unregister(evict_dwarf, s);
	mem_budget__unregister(evict_symbols, s);
	mem_budget__charge(MEM_ADDRS, -(int64_t)s->cache_bytes);
	mem_budget__charge(MEM_SYMBOLS, -(int64_t)s->sym_bytes);
	mem_budget__charge(MEM_DWARF, -(int64_t)s->dwarf_bytes);
	s->mem_budget = false;
}

bool sym_ledger_room(struct symbolizer *s, uint64_t bytes)
{
	if (!s->mem_budget || !mem_budget__would_pass(bytes))
		return true;
	evict_addrs(s, bytes);
	if (mem_budget__would_pass(bytes))
		evict_objects(s, bytes, true);
	if (mem_budget__would_pass(bytes))
		evict_objects(s, bytes, false);
	/* What is asked for now is the most useful entry there is: it is loaded
	 * even when other caches hold the rest of the budget (the agent's reclaim
	 * asks them next); only an object larger than the whole budget is skipped,
	 * so the ledger never turns into names silently lost. */
	return bytes <= mem_budget__cache_budget();
}
