/*
 * symbolize: objects by identity, (object, offset) -> frames (DWARF lines and inlines,
 * else symbols) through a byte-budgeted cache, JIT code through perf maps, and kernel
 * addresses through kallsyms.
 *
 * Identity. A mapping names its file by dev+inode (from /proc/PID/maps); the file's
 * mtime tells a file rewritten in place from its old self. Each such identity points to
 * one object; a file reached under another identity (a copy, another container layer)
 * with the same GNU build-id shares the object already loaded. So:
 *   (dev, inode, mtime) --> object <-- build-id
 * Checking mtime costs a stat(2); a known identity is re-checked at most once per
 * SYM_RECHECK_NS, so asking for the same object per frame costs a hash lookup.
 *
 * What an object resolves through, best first: DWARF of the file itself, else of a
 * separate debug file (/usr/lib/debug/.build-id/xx/rest.debug with the same build-id,
 * else the .gnu_debuglink target with the right CRC, else debuginfod in the background,
 * taken when it arrives); then .symtab, .dynsym. Names are demangled (C++, Rust).
 *
 * Memory. Symbol tables and DWARF handles (heavy) and the (object, vaddr) address cache
 * are accounted in bytes against one budget (sym_opts.cache_bytes). Past it, address
 * entries are evicted oldest first while they hold over a quarter of the budget, else
 * the least recently used object's tables and DWARF are dropped (it keeps its identity
 * and segments and is re-read from its file, build-id checked, on next use). Hence
 * results are borrowed only until the next call: they are copied out of the cache into
 * s->scratch. The object records themselves (a few hundred bytes) live until
 * symbolizer__free. The kernel's table is one, shared, and outside the budget.
 *
 * Lifetime. The caller says which process maps which object (symbolizer__hold); each
 * process holds a reference. When a process is forgotten (it exited, and its samples
 * were symbolized), objects nobody holds any more are released at once: their address-
 * cache entries (listed per object), symbol table and DWARF. Objects never held (the
 * symbolize CLI, tests) live under the budget's eviction alone.
 * An object's ELF is read into our memory and closed; only DWARF keeps an fd, while
 * its object is in memory.
 */
#include "symbolize/symbolize.h"
#include "symbolize/sym_internal.h"

#include <errno.h>
#include <libiberty/demangle.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define SYM_RECHECK_NS	     (1000ULL * 1000 * 1000)
#define SYM_CACHE_MIN_SLOTS  1024
#define SYM_JIT_MAX	     1024 /* perf maps held (pids); the oldest goes first */
#define SYM_JIT_RECHECK_NS   (1000ULL * 1000 * 1000)
#define SYM_HASH_MIN_BUCKETS 256
#define SYM_PROC_BUCKETS     4096
#define SYM_PROC_MAX	     65536 /* processes holding objects; past it, holds are not kept */

struct sym_object {
	char *path;			    /* owned: name as mapped, shown to users */
	char build_id[OBJECT_BUILD_ID_HEX]; /* "" when none */
	bool loaded;			    /* its ELF was read (else it resolves nothing) */
	bool heavy;			    /* symbols (and DWARF) in memory; else re-read */
	bool debug_pending;		    /* debuginfod was asked; its answer not seen yet */
	struct sym_elf_info info;	    /* segments and symbols, owned */
	struct sym_dwarf *dwarf;	    /* owned: DWARF of the file or its debug file */
	char *load_path;		    /* owned: the file read, to re-read after eviction */
	char *debug_path;		    /* owned: separate debug file in use, NULL = none */
	char *debuglink;		    /* owned: .gnu_debuglink name, NULL = none */
	uint32_t debuglink_crc;
	uint32_t gen; /* bumped when its debug info arrives late */
	uint32_t polls;
	uint64_t bytes;				/* accounted: table + DWARF while heavy */
	uint32_t holders;			/* processes that map it (symbolizer__hold) */
	struct sym_centry *centries;		/* its address-cache entries (onext list) */
	struct sym_object *lru_prev, *lru_next; /* heavy objects, most recent first */
	struct sym_object *next;		/* every object, for symbolizer__free */
	struct sym_object *bid_next;		/* build-id hash chain */
};

/* One name of an object: (dev, inode, mtime), or the open path when nothing else. */
struct sym_ident {
	struct object_id id;	/* src/object's identity; dev == inode == 0: by path */
	bool stat_ok;		/* id.mtime_ns came from stat(2) */
	uint64_t checked_ns;	/* when mtime was last compared with the file */
	char *path;		/* owned; the key only when dev == inode == 0 */
	struct sym_object *obj; /* borrowed from the object list */
	struct sym_ident *next; /* hash chain */
};

struct sym_centry;

/*
 * The objects one process maps, as the caller said (symbolizer__hold): each holds one
 * reference on them until symbolizer__forget_pid. Arrays, not sets: a process maps tens
 * to a few hundred objects, and a linear scan of pointers is cheaper than hashing them.
 */
struct sym_proc {
	uint32_t pid;
	uint32_t n, cap;
	struct sym_object **objs; /* owned array; the objects are the list's */
	struct sym_proc *next;	  /* hash chain */
};

/* The perf map of one process. */
struct sym_jit {
	uint32_t pid;
	uint64_t checked_ns;
	struct sym_perfmap *map; /* owned */
	struct sym_jit *next;
};

struct sym_ident_hash {
	struct sym_ident **buckets; /* owned chains */
	size_t n_buckets, count;    /* n_buckets: a power of two */
};

struct sym_bid_hash {
	struct sym_object **buckets; /* chains via bid_next; objects owned by the list */
	size_t n_buckets, count;
};

struct symbolizer {
	char *kallsyms_path;
	struct sym_object *objects;
	struct sym_ident_hash idents;  /* by dev+inode (or path) */
	struct sym_bid_hash build_ids; /* objects by build-id */
	char *debug_root;	       /* NULL = /usr/lib/debug */
	char *perfmap_dir;	       /* NULL = /tmp */
	struct sym_dbginfod *dbginfod; /* owned, NULL when DEBUGINFOD_URLS is unset */
	struct sym_object *lru_head, *lru_tail;
	struct sym_centry **buckets; /* owned entries, chained */
	size_t n_buckets, cache_used;
	struct sym_centry *c_head, *c_tail; /* address-cache LRU, most recent first */
	uint64_t budget, obj_bytes, cache_bytes;
	struct sym_jit *jits;
	size_t n_jits;
	struct sym_proc **procs; /* owned chains, by pid; SYM_PROC_BUCKETS */
	size_t n_procs;
	struct sym_result scratch; /* what the last resolve handed out */
	bool no_address_cache;	   /* sym_opts.no_address_cache */
	char *scratch_text;	   /* owned: scratch's strings, without an address cache */
	size_t scratch_cap;
	struct sym_table kernel;
	bool kernel_loaded;
	struct sym_result unresolved; /* n == 0, handed out for every miss */
	struct sym_stats stats;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* FNV-1a. */
static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* Ignores mtime on purpose (object_id__hash): every version of one file shares a chain. */
static uint64_t ident_hash(const struct object_id *oid, const char *path)
{
	return oid->dev || oid->inode ? object_id__hash(oid) : str_hash(path);
}

/* ---- identities ---- */

static struct sym_ident **ident_bucket(struct symbolizer *s, uint64_t hash)
{
	return &s->idents.buckets[hash & (s->idents.n_buckets - 1)];
}

static uint64_t ident_hash_of(const struct sym_ident *id)
{
	return ident_hash(&id->id, id->path);
}

/* Doubles the buckets when chains get long (best effort). */
static void idents_grow(struct symbolizer *s)
{
	size_t n = s->idents.n_buckets * 2;
	struct sym_ident **b = calloc(n, sizeof(*b));
	struct sym_ident *id, *next;

	if (!b)
		return;
	for (size_t i = 0; i < s->idents.n_buckets; i++) {
		for (id = s->idents.buckets[i]; id; id = next) {
			next = id->next;
			id->next = b[ident_hash_of(id) & (n - 1)];
			b[ident_hash_of(id) & (n - 1)] = id;
		}
	}
	free(s->idents.buckets);
	s->idents.buckets = b;
	s->idents.n_buckets = n;
}

/*
 * The identity to use for (dev, inode) now: among its versions, one whose mtime we
 * could check, most recently checked first. NULL when unknown.
 */
static struct sym_ident *ident_current(struct symbolizer *s, const struct object_id *oid)
{
	struct sym_ident *id, *best = NULL;

	for (id = *ident_bucket(s, ident_hash(oid, NULL)); id; id = id->next) {
		if (!object_id__same_file(&id->id, oid))
			continue;
		if (!best || (id->stat_ok && !best->stat_ok) ||
		    (id->stat_ok == best->stat_ok && id->checked_ns > best->checked_ns))
			best = id;
	}
	return best;
}

/* Exact match on the whole key. */
static struct sym_ident *ident_find(struct symbolizer *s, const struct sym_ident *key)
{
	struct sym_ident *id;

	for (id = *ident_bucket(s, ident_hash_of(key)); id; id = id->next) {
		if (!object_id__eq(&id->id, &key->id) || id->stat_ok != key->stat_ok)
			continue;
		if (id->id.dev || id->id.inode || strcmp(id->path, key->path) == 0)
			return id;
	}
	return NULL;
}

/* Records key -> obj. Best effort: on ENOMEM the object is just found again by build-id. */
static void ident_add(struct symbolizer *s, const struct sym_ident *key, struct sym_object *obj)
{
	struct sym_ident *id = malloc(sizeof(*id)), **b;

	if (!id)
		return;
	*id = *key;
	id->obj = obj;
	id->path = NULL;
	if (!key->id.dev && !key->id.inode && !(id->path = strdup(key->path))) {
		free(id);
		return;
	}
	if (s->idents.count >= s->idents.n_buckets)
		idents_grow(s);
	b = ident_bucket(s, ident_hash_of(id));
	id->next = *b;
	*b = id;
	s->idents.count++;
}

/* ---- objects and build-ids ---- */

static struct sym_object **bid_bucket(struct symbolizer *s, const char *bid)
{
	return &s->build_ids.buckets[str_hash(bid) & (s->build_ids.n_buckets - 1)];
}

static struct sym_object *bid_find(struct symbolizer *s, const char *bid)
{
	struct sym_object *o;

	for (o = *bid_bucket(s, bid); o; o = o->bid_next)
		if (strcmp(o->build_id, bid) == 0)
			return o;
	return NULL;
}

static void bids_grow(struct symbolizer *s)
{
	size_t n = s->build_ids.n_buckets * 2;
	struct sym_object **b = calloc(n, sizeof(*b));
	struct sym_object *o, *next;

	if (!b)
		return;
	for (size_t i = 0; i < s->build_ids.n_buckets; i++) {
		for (o = s->build_ids.buckets[i]; o; o = next) {
			next = o->bid_next;
			o->bid_next = b[str_hash(o->build_id) & (n - 1)];
			b[str_hash(o->build_id) & (n - 1)] = o;
		}
	}
	free(s->build_ids.buckets);
	s->build_ids.buckets = b;
	s->build_ids.n_buckets = n;
}

static struct sym_object *object_new(struct symbolizer *s, const char *path, const char *bid)
{
	struct sym_object *o = calloc(1, sizeof(*o)), **b;

	if (!o || !(o->path = strdup(path))) {
		free(o);
		return NULL;
	}
	snprintf(o->build_id, sizeof(o->build_id), "%s", bid);
	o->next = s->objects;
	s->objects = o;
	s->stats.objects++;
	if (bid[0]) {
		if (s->build_ids.count >= s->build_ids.n_buckets)
			bids_grow(s);
		b = bid_bucket(s, bid);
		o->bid_next = *b;
		*b = o;
		s->build_ids.count++;
	}
	return o;
}

static void object_free(struct sym_object *o)
{
	sym_elf_info__fini(&o->info);
	sym_dwarf__close(o->dwarf);
	free(o->load_path);
	free(o->debug_path);
	free(o->debuglink);
	free(o->path);
	free(o);
}

static void debug_find(struct symbolizer *s, struct sym_object *o);
static void object_account(struct symbolizer *s, struct sym_object *o);
static void lru_touch(struct symbolizer *s, struct sym_object *o);
static void budget_enforce(struct symbolizer *s);

/*
 * Reads an open ELF into o (once), then its debug info wherever it is. A failure leaves
 * o resolving nothing; a damaged file keeps what could be read. Both are counted.
 */
static void object_fill(struct symbolizer *s, struct sym_object *o, struct sym_elf *elf,
			const char *open_path)
{
	char link[256];
	int err = sym_elf__load(elf, &o->info);

	if (err || o->info.damaged)
		s->stats.elf_failures++;
	if (err) {
		sym_elf_info__fini(&o->info);
		return;
	}
	free(o->load_path);
	if (!(o->load_path = strdup(open_path)))
		return;
	if (!o->debuglink && sym_elf__debuglink(elf, link, sizeof(link), &o->debuglink_crc) == 0)
		o->debuglink = strdup(link);
	o->loaded = o->heavy = true;
	debug_find(s, o);
	lru_touch(s, o);
	object_account(s, o);
	budget_enforce(s);
}

/*
 * The object in the file at open_path: opened once here. Same build-id as a loaded
 * object -> that object. Unreadable (or open_path NULL) -> a new object that resolves
 * nothing. NULL on ENOMEM.
 */
static struct sym_object *object_load(struct symbolizer *s, const char *open_path, const char *path)
{
	struct sym_elf *elf = NULL;
	char bid[OBJECT_BUILD_ID_HEX] = "";
	struct sym_object *o = NULL;
	int err = open_path ? sym_elf__open(open_path, &elf) : -ENOENT;

	if (err) {
		if (err != -ENOMEM && (o = object_new(s, path, "")))
			s->stats.elf_failures++;
		return o;
	}
	s->stats.elf_opens++;
	sym_elf__build_id(elf, bid, sizeof(bid));
	o = bid[0] ? bid_find(s, bid) : NULL;
	if (!o)
		o = object_new(s, path, bid);
	if (o && !o->loaded) /* new, or its first copy was unreadable */
		object_fill(s, o, elf, open_path);
	sym_elf__close(elf);
	return o;
}

/* ---- public: objects ---- */

/*
 * Whether the file at p is the mapped one: same inode number. The device is not
 * compared: through overlayfs (containers) stat(2) shows the overlay's device while
 * /proc/PID/maps shows the underlying one, with the same inode number.
 */
static bool stat_as_mapped(const char *p, const struct sym_ident *key, struct stat *st)
{
	return p && stat(p, st) == 0 && st->st_ino == key->id.inode;
}

/*
 * Known object for a mapping with an inode; mtime is re-checked at most once per
 * SYM_RECHECK_NS. NULL: load it from *open_path — switched to path when open_path is
 * gone or another file (map_files of a process that just died, a replaced library) but
 * path is still the mapped file, or set to NULL when neither is.
 */
static struct sym_object *object_by_inode(struct symbolizer *s, struct sym_ident *key,
					  const char **open_path, const char *path, uint64_t now)
{
	struct sym_ident *cur = ident_current(s, &key->id), *id;
	struct stat st;

	if (cur && cur->stat_ok && now - cur->checked_ns < SYM_RECHECK_NS)
		return cur->obj;
	if (!stat_as_mapped(*open_path, key, &st)) {
		if (cur) { /* the best version we know */
			cur->checked_ns = now;
			return cur->obj;
		}
		*open_path = path[0] == '/' && stat_as_mapped(path, key, &st) ? path : NULL;
		if (!*open_path)
			return NULL; /* loading nothing makes an object that resolves nothing */
	}
	key->stat_ok = true;
	key->id.mtime_ns = object_mtime_ns(&st);
	id = ident_find(s, key);
	if (id)
		id->checked_ns = now;
	return id ? id->obj : NULL;
}

/* Known object for a mapping without an inode: by what stat says, else by path. */
static struct sym_object *object_by_stat(struct symbolizer *s, struct sym_ident *key,
					 const char *open_path)
{
	struct stat st;
	struct sym_ident *id;

	if (stat(open_path, &st) == 0) {
		object_id__of_stat(&st, &key->id);
		key->stat_ok = true;
	}
	id = ident_find(s, key);
	return id ? id->obj : NULL;
}

struct sym_object *symbolizer__object(struct symbolizer *s, const char *open_path, const char *path,
				      uint64_t dev, uint64_t inode)
{
	uint64_t now = now_ns();
	struct sym_ident key = {.id = {.dev = inode ? dev : 0, .inode = inode}, .checked_ns = now};
	struct sym_object *o;

	path = path ? path : open_path ? open_path : "";
	open_path = open_path ? open_path : path;
	key.path = (char *)open_path; /* only read; ident_add copies it */
	o = inode ? object_by_inode(s, &key, &open_path, path, now)
		  : object_by_stat(s, &key, open_path);
	if (o)
		return o;
	o = object_load(s, open_path, path);
	if (o)
		ident_add(s, &key, o);
	return o;
}

const char *sym_object__path(const struct sym_object *o)
{
	return o->path;
}

const char *sym_object__build_id(const struct sym_object *o)
{
	return o->build_id;
}

bool sym_object__settled(const struct sym_object *o)
{
	return !o->debug_pending;
}

/* ---- object contents: symbols, DWARF, separate debug files ---- */

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

/* Most recently used first. */
static void lru_touch(struct symbolizer *s, struct sym_object *o)
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
static void object_account(struct symbolizer *s, struct sym_object *o)
{
	uint64_t b = o->heavy ? sym_table__bytes(&o->info.table) + sym_table__bytes(&o->info.data) +
				    sym_dwarf__bytes(o->dwarf)
			      : 0;

	s->obj_bytes = s->obj_bytes - o->bytes + b;
	o->bytes = b;
}

/* Drops o's symbols and DWARF (re-read on next use); segments stay. */
static void object_unload(struct symbolizer *s, struct sym_object *o)
{
	sym_table__fini(&o->info.table);
	sym_table__fini(&o->info.data);
	sym_dwarf__close(o->dwarf);
	o->dwarf = NULL;
	o->heavy = false;
	object_account(s, o);
	lru_unlink(s, o);
}

/* Symbols from the debug file when o's own were only .dynsym (a stripped binary). */
static void debug_symbols(struct symbolizer *s, struct sym_object *o)
{
	struct sym_elf_info tmp = {0};
	struct sym_elf *e;

	if (!o->info.dynsym || sym_elf__open(o->debug_path, &e) != 0)
		return;
	if (sym_elf__load(e, &tmp) == 0 && !tmp.dynsym && tmp.table.n) {
		sym_table__fini(&o->info.table);
		sym_table__fini(&o->info.data);
		o->info.table = tmp.table;
		o->info.data = tmp.data;
		memset(&tmp.table, 0, sizeof(tmp.table));
		memset(&tmp.data, 0, sizeof(tmp.data));
	} else if (tmp.damaged) {
		s->stats.dwarf_failures++;
	}
	sym_elf_info__fini(&tmp);
	sym_elf__close(e);
}

/* Opens DWARF (and symbols) of the debug file at path for o. True when usable. */
static bool debug_attach(struct symbolizer *s, struct sym_object *o, const char *path)
{
	int err = sym_dwarf__open(path, &o->dwarf);

	if (err) {
		if (err != -ENOENT)
			s->stats.dwarf_failures++;
		return false;
	}
	if (path != o->load_path) {
		free(o->debug_path);
		o->debug_path = strdup(path);
		if (o->debug_path)
			debug_symbols(s, o);
		s->stats.debug_files++;
	}
	return true;
}

/* Local places for o's debug info, in order; debuginfod is asked when none has it. */
static void debug_find(struct symbolizer *s, struct sym_object *o)
{
	char p[4096];

	if (debug_attach(s, o, o->load_path))
		return;
	if (o->build_id[0] &&
	    sym_debug__by_build_id(s->debug_root, o->build_id, p, sizeof(p)) == 0 &&
	    debug_attach(s, o, p))
		return;
	if (o->debuglink &&
	    sym_debug__by_debuglink(s->debug_root, o->path, o->debuglink, o->debuglink_crc, p,
				    sizeof(p)) == 0 &&
	    debug_attach(s, o, p))
		return;
	o->debug_pending = s->dbginfod && o->build_id[0];
	if (o->debug_pending) /* queues the fetch now; its answer is taken by debug_poll */
		sym_dbginfod__get(s->dbginfod, o->build_id, p, sizeof(p));
}

/* A debuginfod answer for o, when one has come: used from now on. */
static void debug_poll(struct symbolizer *s, struct sym_object *o)
{
	char p[4096];
	int err = sym_dbginfod__get(s->dbginfod, o->build_id, p, sizeof(p));

	if (err == -EAGAIN)
		return;
	o->debug_pending = false;
	if (err)
		return;
	if (!o->heavy) { /* evicted meanwhile: the next reload reads it */
		free(o->debug_path);
		o->debug_path = strdup(p);
		o->gen++;
		return;
	}
	if (debug_attach(s, o, p)) {
		s->stats.debuginfod_files++;
		o->gen++; /* cached answers for o predate its debug info */
		object_account(s, o);
	}
}

/* Re-reads an evicted object from its file (same build-id only). 0 or -errno. */
static int object_reload(struct symbolizer *s, struct sym_object *o)
{
	struct sym_elf *e;
	char bid[OBJECT_BUILD_ID_HEX];
	int err = o->load_path ? sym_elf__open(o->load_path, &e) : -ENOENT;

	if (err)
		return err;
	sym_elf__build_id(e, bid, sizeof(bid));
	sym_elf_info__fini(&o->info);
	err = strcmp(bid, o->build_id) ? -ESTALE : sym_elf__load(e, &o->info);
	sym_elf__close(e);
	if (err)
		return err;
	o->heavy = true;
	s->stats.object_reloads++;
	if (o->debug_path && !sym_dwarf__open(o->debug_path, &o->dwarf))
		debug_symbols(s, o);
	else if (!o->debug_path)
		sym_dwarf__open(o->load_path, &o->dwarf);
	return 0;
}

/*
 * ---- the address cache: (object, vaddr) -> copied frames, byte-accounted ----
 * Eviction is CLOCK (second chance) over insertion order: a hit only sets a bit in the
 * entry it reads anyway, where LRU relinking would touch two other random entries.
 */

struct sym_centry {
	struct sym_centry *hnext, *prev, *next; /* hash chain; LRU list */
	struct sym_centry *onext, *oprev;	/* entries of the same object */
	struct sym_object *obj;
	uint64_t vaddr;
	uint32_t gen, n;
	uint32_t bytes;
	bool referenced; /* hit since it last reached the LRU tail: gets a second chance */
	struct sym_frame frames[]; /* strings follow, owned by the entry */
};

static size_t centry_bucket(const struct symbolizer *s, const struct sym_object *o, uint64_t v)
{
	return (size_t)sym_mix64((uint64_t)(uintptr_t)o ^ sym_mix64(v)) & (s->n_buckets - 1);
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

static void centry_remove(struct symbolizer *s, struct sym_centry *e)
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

static struct sym_centry *centry_find(struct symbolizer *s, const struct sym_object *o, uint64_t v)
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

static size_t str_room(const char *p)
{
	return p ? strlen(p) + 1 : 0;
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

/* Copies p's room bytes (str_room(p), its NUL included) into *pos; NULL for NULL. */
static const char *str_put_n(char **pos, const char *p, size_t room)
{
	char *d = *pos;

	if (!p)
		return NULL;
	memcpy(d, p, room);
	*pos += room;
	return d;
}

/* A new entry holding copies of f[0, n). NULL on ENOMEM. */
static struct sym_centry *centry_new(struct sym_object *o, uint64_t v, const struct sym_frame *f,
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

static void centry_insert(struct symbolizer *s, struct sym_centry *e)
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
static void budget_enforce(struct symbolizer *s)
{
	while (s->obj_bytes + s->cache_bytes > s->budget) {
		bool cache_big = s->cache_bytes > s->budget / 4 && s->c_tail;

		if (!cache_big && s->lru_tail) {
			object_unload(s, s->lru_tail);
			s->stats.object_evictions++;
		} else if (s->c_tail && s->c_tail->referenced) { /* CLOCK: second chance */
			struct sym_centry *e = s->c_tail;

			e->referenced = false;
			centry_unlink_lru(s, e);
			centry_push_lru(s, e);
		} else if (s->c_tail) {
			centry_remove(s, s->c_tail);
			s->stats.cache_evictions++;
		} else {
			break; /* only bucket arrays left: they stay */
		}
	}
}

/* ---- public: resolving ---- */

/* vaddr = off - p_offset + p_vaddr (object_segments_vaddr). */
static bool object_off_to_vaddr(const struct sym_object *o, uint64_t off, uint64_t *vaddr)
{
	return object_segments_vaddr(o->info.segs, o->info.n_segs, off, vaddr);
}

/*
 * cplus_demangle in its default (auto) style tries a _Z name as legacy Rust first, and
 * libiberty's Rust demangler checks every character before it looks for the hash
 * segment "17h" + 16 hex digits that every legacy Rust name ends with: a scan of the
 * whole name that rejects each C++ name, ~5% of a big C++ binary's first sight. So a
 * _ZN name ending in that segment (and 'E') goes the auto way as before, and any other
 * _Z name straight to the C++ demangler, which is where the auto style would take it
 * after that scan. (Looking for "17h" anywhere with strstr was itself ~1%: a C++ name
 * is long, and strstr slower per byte than strlen.)
 */
/* Where the C++ demangler writes: a stack buffer, then the heap past it. */
struct dem_out {
	char *p; /* stack, or owned (malloc'd) once grown */
	size_t len, cap;
	bool oom;
	char stack[2048];
};

static void dem_put(const char *str, size_t n, void *opaque)
{
	struct dem_out *o = opaque;
	size_t cap = o->cap;
	char *p;

	if (o->oom)
		return;
	while (o->len + n + 1 > cap)
		cap *= 2;
	if (cap != o->cap) {
		p = o->p == o->stack ? malloc(cap) : realloc(o->p, cap);
		if (!p) {
			o->oom = true;
			return;
		}
		if (o->p == o->stack)
			memcpy(p, o->stack, o->len);
		o->p = p;
		o->cap = cap;
	}
	memcpy(o->p + o->len, str, n);
	o->len += n;
}

/*
 * A C++ name demangled into one exact allocation: the demangler's own string grows by
 * reallocation as it prints, and a big object's first sight demangles tens of
 * thousands of names. NULL when it does not demangle (or on ENOMEM).
 */
static char *demangle_cxx(const char *sys)
{
	struct dem_out o = {.len = 0, .cap = sizeof(o.stack)};
	char *r = NULL;

	o.p = o.stack;
	if (cplus_demangle_v3_callback(sys, DMGL_PARAMS | DMGL_ANSI, dem_put, &o) && !o.oom &&
	    (r = o.p == o.stack ? malloc(o.len + 1) : o.p)) {
		if (o.p == o.stack)
			memcpy(r, o.stack, o.len);
		r[o.len] = '\0';
		return r;
	}
	if (o.p != o.stack)
		free(o.p);
	return NULL;
}

/* Whether a _ZN name ends as legacy Rust names do: "17h", 16 hex digits, 'E'. */
static bool rust_legacy_tail(const char *sys)
{
	size_t n = strlen(sys);

	return n >= 24 && sys[n - 1] == 'E' && !memcmp(sys + n - 20, "17h", 3);
}

char *sym_demangle(const char *sys)
{
	if (!sys || sys[0] != '_' || (sys[1] != 'Z' && sys[1] != 'R'))
		return NULL;
	if (sys[1] == 'Z' && !(sys[2] == 'N' && rust_legacy_tail(sys)))
		return demangle_cxx(sys);
	return cplus_demangle(sys, DMGL_PARAMS | DMGL_ANSI);
}

/*
 * The frame from the symbol table, when DWARF gave nothing: its name demangled (once
 * per symbol, kept with the table). Where no function is, or the function found
 * starts before a data object in code that holds vaddr (a size-less function whose
 * end was only guessed as the next function's start, such as crtstuff's), the data
 * object, as llvm-symbolizer names it. 0 or 1 frames.
 */
static size_t symtab_frame(struct sym_object *o, uint64_t vaddr, struct sym_frame *f)
{
	struct sym_table *t = &o->info.table;
	long i = sym_table__find(t, vaddr), j;

	if (o->info.data.n && (j = sym_table__find(&o->info.data, vaddr)) >= 0 &&
	    (i < 0 || o->info.data.syms[j].start > t->syms[i].start)) {
		t = &o->info.data;
		i = j;
	}
	if (i < 0)
		return 0;
	f->system_name = t->names + t->syms[i].name;
	f->name = sym_table__shown(t, (size_t)i);
	f->file = NULL;
	f->line = 0;
	f->inlined = false;
	return 1;
}

/*
 * Frames for vaddr in o (DWARF, else symbols) into f, their strings borrowed from o's
 * tables (valid until o is unloaded). Returns the count. What the lookup added to o's
 * tables (DWARF's index, demangled names) is accounted here; the caller copies the
 * strings out before it enforces the budget.
 */
static int object_lookup(struct symbolizer *s, struct sym_object *o, uint64_t vaddr,
			 struct sym_frame *f)
{
	int n = o->dwarf ? sym_dwarf__lookup(o->dwarf, vaddr, f, SYM_MAX_FRAMES) : 0;

	if (n < 0) {
		s->stats.dwarf_failures++;
		n = 0;
	}
	if (n == 0) /* DWARF's frames come demangled; a symbol's is demangled here */
		n = (int)symtab_frame(o, vaddr, f);
	else if (!strcmp(f[n - 1].system_name, "??"))
		symtab_frame(o, vaddr, &f[n - 1]);
	object_account(s, o);
	return n;
}

/* Frames for vaddr in o as a new cache entry. NULL on ENOMEM. */
static struct sym_centry *object_frames(struct symbolizer *s, struct sym_object *o, uint64_t vaddr)
{
	struct sym_frame f[SYM_MAX_FRAMES];
	int n = object_lookup(s, o, vaddr, f);

	return centry_new(o, vaddr, f, (size_t)n);
}

/*
 * Frames for vaddr in o into s->scratch. When the account is over the budget, their
 * strings are copied into s->scratch_text first: the budget then evicts, perhaps o,
 * and the result must live until the next call. Under it nothing is evicted, and the
 * strings borrowed from o's tables live until the next call as they are (copying
 * them, with a strlen of each raw name in a big string table, was ~6% of the first
 * sight of a big object). 0 or -ENOMEM.
 */
static int scratch_lookup(struct symbolizer *s, struct sym_object *o, uint64_t vaddr,
			  const struct sym_result **out)
{
	struct sym_frame *f = s->scratch.frames;
	size_t len[SYM_MAX_FRAMES][3]; /* name, system_name (0: the same), file: str_room */
	char *pos, *p;
	int n = object_lookup(s, o, vaddr, f), err = 0;
	size_t room = 0, cap = s->scratch_cap;

	if (s->obj_bytes + s->cache_bytes <= s->budget) { /* budget_enforce would do nothing */
		s->scratch.n = (size_t)n;
		*out = n ? &s->scratch : &s->unresolved;
		return 0;
	}

	/* each string measured once: the names are long, and a big object's raw names
	 * are read here for the first time (cache misses) */
	for (int i = 0; i < n; i++) {
		len[i][0] = str_room(f[i].name);
		len[i][1] = f[i].system_name == f[i].name ? 0 : str_room(f[i].system_name);
		len[i][2] = str_room(f[i].file);
		room += len[i][0] + len[i][1] + len[i][2];
	}
	if (room > cap) {
		while (cap < room)
			cap = cap ? cap * 2 : 4096;
		if ((p = realloc(s->scratch_text, cap))) {
			s->scratch_text = p;
			s->scratch_cap = cap;
		} else {
			err = -ENOMEM;
			n = 0;
		}
	}
	pos = s->scratch_text;
	for (int i = 0; i < n; i++) {
		f[i].name = str_put_n(&pos, f[i].name, len[i][0]);
		f[i].system_name =
		    len[i][1] ? str_put_n(&pos, f[i].system_name, len[i][1]) : f[i].name;
		f[i].file = str_put_n(&pos, f[i].file, len[i][2]);
	}
	s->scratch.n = (size_t)n;
	*out = n ? &s->scratch : &s->unresolved;
	budget_enforce(s);
	return err;
}

/* Hands out entry e's frames through s->scratch (valid until the next call). */
static const struct sym_result *centry_result(struct symbolizer *s, const struct sym_centry *e)
{
	s->scratch.n = e->n;
	memcpy(s->scratch.frames, e->frames, e->n * sizeof(e->frames[0]));
	return &s->scratch;
}

int symbolizer__resolve_vaddr(struct symbolizer *s, struct sym_object *obj, uint64_t vaddr,
			      const struct sym_result **out)
{
	struct sym_centry *e;

	*out = &s->unresolved;
	if (!obj)
		return -EINVAL;
	if (obj->debug_pending && (obj->polls++ & 255) == 0)
		debug_poll(s, obj);
	e = centry_find(s, obj, vaddr);
	if (e && e->gen == obj->gen) {
		s->stats.cache_hits++;
		e->referenced = true; /* not relinked: a hit touches no other entry's memory */
		*out = centry_result(s, e);
		return 0;
	}
	if (e)
		centry_remove(s, e);
	s->stats.cache_misses++;
	if (!obj->loaded)
		return 0;
	if (!obj->heavy && object_reload(s, obj)) {
		obj->loaded = false; /* gone or replaced: resolves nothing from now on */
		return 0;
	}
	lru_touch(s, obj);
	object_account(s, obj);
	if (s->no_address_cache) /* straight into scratch */
		return scratch_lookup(s, obj, vaddr, out);
	if (!(e = object_frames(s, obj, vaddr)))
		return -ENOMEM;
	*out = centry_result(s, e); /* copied out before anything can be evicted */
	centry_insert(s, e);
	budget_enforce(s);
	return 0;
}

int symbolizer__resolve(struct symbolizer *s, struct sym_object *obj, uint64_t off,
			const struct sym_result **out)
{
	uint64_t vaddr;

	*out = &s->unresolved;
	if (!obj)
		return -EINVAL;
	if (!object_off_to_vaddr(obj, off, &vaddr))
		return 0;
	return symbolizer__resolve_vaddr(s, obj, vaddr, out);
}

/* ---- JIT code: perf maps by pid ---- */

static struct sym_jit *jit_find(struct symbolizer *s, uint32_t pid)
{
	for (struct sym_jit *j = s->jits; j; j = j->next)
		if (j->pid == pid)
			return j;
	return NULL;
}

static void jit_forget(struct symbolizer *s, uint32_t pid);

/* The map state of pid, made on first use (the oldest dropped past SYM_JIT_MAX). */
static struct sym_jit *jit_get(struct symbolizer *s, uint32_t pid)
{
	struct sym_jit *j = jit_find(s, pid), **pp;

	if (j)
		return j;
	if (s->n_jits >= SYM_JIT_MAX) {
		for (pp = &s->jits; (*pp)->next; pp = &(*pp)->next)
			;
		jit_forget(s, (*pp)->pid);
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
	uint64_t now = now_ns(), before = sym_perfmap__bad_lines(j->map);

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

/* ---- which processes map which objects: references, released on exit ---- */

static struct sym_proc **proc_slot(struct symbolizer *s, uint32_t pid)
{
	struct sym_proc **pp = &s->procs[sym_mix64(pid) & (SYM_PROC_BUCKETS - 1)];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

int symbolizer__hold(struct symbolizer *s, uint32_t pid, struct sym_object *obj)
{
	struct sym_proc **pp, *p;
	struct sym_object **objs;
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
	if (!(objs = sym_grow(p->objs, &cap, (size_t)p->n + 1, sizeof(*objs))))
		return -ENOMEM;
	p->objs = objs;
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
		centry_remove(s, o->centries);
	if (o->heavy)
		object_unload(s, o);
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

static void jit_forget(struct symbolizer *s, uint32_t pid)
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

void symbolizer__forget_pid(struct symbolizer *s, uint32_t pid)
{
	jit_forget(s, pid);
	proc_forget(s, pid);
}

void symbolizer__wait_debuginfo(struct symbolizer *s, int timeout_ms)
{
	sym_dbginfod__wait(s->dbginfod, timeout_ms);
	for (struct sym_object *o = s->objects; o; o = o->next)
		if (o->debug_pending)
			debug_poll(s, o);
}

/* Reads kallsyms on first use; a missing or hidden file leaves no kernel symbols. */
static int kernel_load(struct symbolizer *s)
{
	int err;

	if (s->kernel_loaded)
		return 0;
	err = sym_kallsyms__load(s->kallsyms_path, &s->kernel);
	if (err == -ENOMEM)
		return err;
	s->kernel_loaded = true;
	s->stats.kernel_symbols = s->kernel.n;
	return 0;
}

int symbolizer__resolve_kernel(struct symbolizer *s, uint64_t addr, const struct sym_result **out)
{
	const struct sym_result *r;
	long i;
	int err = kernel_load(s);

	*out = &s->unresolved;
	if (err)
		return err;
	i = sym_table__find(&s->kernel, addr);
	if (i < 0)
		return 0;
	r = sym_table__result(&s->kernel, (size_t)i);
	if (!r)
		return -ENOMEM;
	*out = r;
	return 0;
}

/* ---- lifecycle ---- */

struct symbolizer *symbolizer__new(const struct sym_opts *opts)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	const char *kallsyms = opts && opts->kallsyms_path ? opts->kallsyms_path : "/proc/kallsyms";

	if (!s)
		return NULL;
	s->kallsyms_path = strdup(kallsyms);
	s->budget = opts && opts->cache_bytes ? opts->cache_bytes : SYM_DEFAULT_CACHE_MB << 20;
	s->debug_root = opts && opts->debug_root ? strdup(opts->debug_root) : NULL;
	s->perfmap_dir = opts && opts->perfmap_dir ? strdup(opts->perfmap_dir) : NULL;
	s->no_address_cache = opts && opts->no_address_cache;
	if (!opts || !opts->no_debuginfod)
		s->dbginfod = sym_dbginfod__new();
	s->idents.n_buckets = s->build_ids.n_buckets = SYM_HASH_MIN_BUCKETS;
	s->idents.buckets = calloc(SYM_HASH_MIN_BUCKETS, sizeof(*s->idents.buckets));
	s->build_ids.buckets = calloc(SYM_HASH_MIN_BUCKETS, sizeof(*s->build_ids.buckets));
	if (!s->kallsyms_path || !s->idents.buckets || !s->build_ids.buckets) {
		symbolizer__free(s);
		return NULL;
	}
	return s;
}

void symbolizer__free(struct symbolizer *s)
{
	struct sym_object *o, *onext;
	struct sym_ident *id, *inext;

	if (!s)
		return;
	sym_dbginfod__free(s->dbginfod); /* first: its thread stops */
	while (s->c_tail)
		centry_remove(s, s->c_tail);
	while (s->jits)
		jit_forget(s, s->jits->pid);
	for (size_t i = 0; s->procs && i < SYM_PROC_BUCKETS; i++) {
		while (s->procs[i]) {
			struct sym_proc *p = s->procs[i];

			s->procs[i] = p->next;
			free(p->objs);
			free(p);
		}
	}
	free(s->procs);
	free(s->buckets);
	free(s->debug_root);
	free(s->perfmap_dir);
	for (o = s->objects; o; o = onext) {
		onext = o->next;
		object_free(o);
	}
	for (size_t i = 0; s->idents.buckets && i < s->idents.n_buckets; i++) {
		for (id = s->idents.buckets[i]; id; id = inext) {
			inext = id->next;
			free(id->path);
			free(id);
		}
	}
	free(s->idents.buckets);
	free(s->build_ids.buckets);
	sym_table__fini(&s->kernel);
	free(s->scratch_text);
	free(s->kallsyms_path);
	free(s);
}

void symbolizer__stats(const struct symbolizer *s, struct sym_stats *out)
{
	*out = s->stats;
	out->cache_bytes = s->obj_bytes + s->cache_bytes;
	out->cache_budget = s->budget;
	out->cache_entries = s->cache_used;
}
