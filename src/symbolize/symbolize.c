/*
 * symbolize: objects by identity, (object, offset) -> frames through a cache, and
 * kernel addresses through kallsyms.
 *
 * Identity. A mapping names its file by dev+inode (from /proc/PID/maps); the file's
 * mtime tells a file rewritten in place from its old self. Each such identity points to
 * one object; a file reached under another identity (a copy, another container layer)
 * with the same GNU build-id shares the object already loaded. So:
 *   (dev, inode, mtime) --> object <-- build-id
 * Checking mtime costs a stat(2); a known identity is re-checked at most once per
 * SYM_RECHECK_NS, so asking for the same object per frame costs a hash lookup.
 *
 * Constraints: an object's ELF is opened once, read into our own memory (sorted
 * symbols, names blob) and closed — a system-wide profiler sees thousands of files and
 * must not hold their fds or mappings. Objects and results are borrowed by callers until
 * symbolizer__free, so they are never evicted; the (object, offset) cache only holds
 * pointers to per-symbol results and is bounded by SYM_CACHE_MAX_SLOTS (cleared, not
 * grown, when full).
 */
#include "symbolize/symbolize.h"
#include "symbolize/sym_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define SYM_RECHECK_NS (1000ULL * 1000 * 1000)
#define SYM_CACHE_MIN_SLOTS 1024
#define SYM_CACHE_MAX_SLOTS (1u << 20) /* 24 MiB of slots, at most half in use */
#define SYM_HASH_MIN_BUCKETS 256

struct sym_object {
	char *path;			 /* owned: name as mapped, shown to users */
	char build_id[SYM_BUILD_ID_HEX]; /* "" when none */
	bool loaded;			 /* its ELF was read (else it resolves nothing) */
	struct sym_elf_info info;	 /* segments and symbols, owned */
	struct sym_object *next;	 /* every object, for symbolizer__free */
	struct sym_object *bid_next;	 /* build-id hash chain */
};

/* One name of an object: (dev, inode, mtime), or the open path when nothing else. */
struct sym_ident {
	uint64_t dev, inode;
	uint64_t mtime_ns;
	bool stat_ok;		/* mtime_ns came from stat(2) */
	uint64_t checked_ns;	/* when mtime was last compared with the file */
	char *path;		/* owned; the key only when dev == inode == 0 */
	struct sym_object *obj; /* borrowed from the object list */
	struct sym_ident *next; /* hash chain */
};

struct sym_cache_slot {
	const struct sym_object *obj; /* NULL = empty slot */
	uint64_t off;
	const struct sym_result *res; /* borrowed: a table's result or &s->unresolved */
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
	struct sym_ident_hash idents; /* by dev+inode (or path) */
	struct sym_bid_hash build_ids; /* objects by build-id */
	struct sym_cache_slot *cache;
	size_t cache_cap, cache_used;
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

/* MurmurHash3's 64-bit finalizer. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* FNV-1a. */
static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* Ignores mtime on purpose: every version of one file shares a chain. */
static uint64_t ident_hash(uint64_t dev, uint64_t inode, const char *path)
{
	return dev || inode ? mix64(dev * 0x9e3779b97f4a7c15ULL ^ inode) : str_hash(path);
}

/* ---- identities ---- */

static struct sym_ident **ident_bucket(struct symbolizer *s, uint64_t hash)
{
	return &s->idents.buckets[hash & (s->idents.n_buckets - 1)];
}

static uint64_t ident_hash_of(const struct sym_ident *id)
{
	return ident_hash(id->dev, id->inode, id->path);
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
static struct sym_ident *ident_current(struct symbolizer *s, uint64_t dev, uint64_t inode)
{
	struct sym_ident *id, *best = NULL;

	for (id = *ident_bucket(s, ident_hash(dev, inode, NULL)); id; id = id->next) {
		if (id->dev != dev || id->inode != inode)
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
		if (id->dev != key->dev || id->inode != key->inode ||
		    id->mtime_ns != key->mtime_ns || id->stat_ok != key->stat_ok)
			continue;
		if (id->dev || id->inode || strcmp(id->path, key->path) == 0)
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
	if (!key->dev && !key->inode && !(id->path = strdup(key->path))) {
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
	free(o->path);
	free(o);
}

/*
 * Reads an open ELF into o (once). A failure leaves o resolving nothing; a damaged file
 * keeps what could be read. Both are counted as failures.
 */
static void object_fill(struct symbolizer *s, struct sym_object *o, struct sym_elf *elf)
{
	int err = sym_elf__load(elf, &o->info);

	if (err || o->info.damaged)
		s->stats.elf_failures++;
	if (err) {
		sym_elf_info__fini(&o->info);
		return;
	}
	o->loaded = true;
}

/*
 * The object in the file at open_path: opened once here. Same build-id as a loaded
 * object -> that object. Unreadable (or open_path NULL) -> a new object that resolves
 * nothing. NULL on ENOMEM.
 */
static struct sym_object *object_load(struct symbolizer *s, const char *open_path,
				      const char *path)
{
	struct sym_elf *elf = NULL;
	char bid[SYM_BUILD_ID_HEX] = "";
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
		object_fill(s, o, elf);
	sym_elf__close(elf);
	return o;
}

/* ---- public: objects ---- */

/* Only compared for equality: wrapping (unsigned) arithmetic is fine and never UB. */
static uint64_t mtime_ns_of(const struct stat *st)
{
	return (uint64_t)st->st_mtim.tv_sec * 1000000000ULL + (uint64_t)st->st_mtim.tv_nsec;
}

/*
 * Whether the file at p is the mapped one: same inode number. The device is not
 * compared: through overlayfs (containers) stat(2) shows the overlay's device while
 * /proc/PID/maps shows the underlying one, with the same inode number.
 */
static bool stat_as_mapped(const char *p, const struct sym_ident *key, struct stat *st)
{
	return p && stat(p, st) == 0 && st->st_ino == key->inode;
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
	struct sym_ident *cur = ident_current(s, key->dev, key->inode), *id;
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
	key->mtime_ns = mtime_ns_of(&st);
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
		key->dev = st.st_dev;
		key->inode = st.st_ino;
		key->mtime_ns = mtime_ns_of(&st);
		key->stat_ok = true;
	}
	id = ident_find(s, key);
	return id ? id->obj : NULL;
}

struct sym_object *symbolizer__object(struct symbolizer *s, const char *open_path,
				      const char *path, uint64_t dev, uint64_t inode)
{
	uint64_t now = now_ns();
	struct sym_ident key = { .dev = dev, .inode = inode, .checked_ns = now };
	struct sym_object *o;

	path = path ? path : open_path ? open_path : "";
	open_path = open_path ? open_path : path;
	key.path = (char *)open_path; /* only read; ident_add copies it */
	if (!inode)
		key.dev = 0;
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

/* ---- the (object, offset) cache ---- */

static size_t cache_index(const struct sym_cache_slot *c, size_t cap, const struct sym_object *o,
			  uint64_t off)
{
	size_t i = (size_t)mix64((uint64_t)(uintptr_t)o ^ mix64(off)) & (cap - 1);

	/* Linear probing; at most half the slots are used, so an empty one is near. */
	while (c[i].obj && (c[i].obj != o || c[i].off != off))
		i = (i + 1) & (cap - 1);
	return i;
}

static const struct sym_cache_slot *cache_get(const struct symbolizer *s,
					      const struct sym_object *o, uint64_t off)
{
	const struct sym_cache_slot *slot;

	if (!s->cache_cap)
		return NULL;
	slot = &s->cache[cache_index(s->cache, s->cache_cap, o, off)];
	return slot->obj ? slot : NULL;
}

/* Room for one more entry: double up to the bound, then start over. 0 or -ENOMEM. */
static int cache_reserve(struct symbolizer *s)
{
	size_t cap = s->cache_cap ? s->cache_cap * 2 : SYM_CACHE_MIN_SLOTS;
	struct sym_cache_slot *c;

	if (s->cache_used + 1 <= s->cache_cap / 2)
		return 0;
	if (s->cache_cap >= SYM_CACHE_MAX_SLOTS) {
		memset(s->cache, 0, s->cache_cap * sizeof(*s->cache));
		s->cache_used = 0;
		return 0;
	}
	c = calloc(cap, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < s->cache_cap; i++)
		if (s->cache[i].obj)
			c[cache_index(c, cap, s->cache[i].obj, s->cache[i].off)] = s->cache[i];
	free(s->cache);
	s->cache = c;
	s->cache_cap = cap;
	return 0;
}

static void cache_put(struct symbolizer *s, const struct sym_object *o, uint64_t off,
		      const struct sym_result *res)
{
	if (cache_reserve(s))
		return; /* no cache, still a correct answer */
	s->cache[cache_index(s->cache, s->cache_cap, o, off)] =
		(struct sym_cache_slot){ o, off, res };
	s->cache_used++;
}

/* ---- public: resolving ---- */

/*
 * vaddr = off - p_offset + p_vaddr, through the PT_LOAD whose file bytes hold off
 * (an executable one if several do). False when no segment holds it.
 */
static bool object_off_to_vaddr(const struct sym_object *o, uint64_t off, uint64_t *vaddr)
{
	const struct sym_segment *hit = NULL;

	for (size_t i = 0; i < o->info.n_segs; i++) {
		const struct sym_segment *seg = &o->info.segs[i];

		if (off >= seg->off && off - seg->off < seg->filesz && (!hit || (seg->exec && !hit->exec)))
			hit = seg;
	}
	if (!hit)
		return false;
	*vaddr = off - hit->off + hit->vaddr;
	return true;
}

/* Frames for off in o, from its symbol table. NULL on ENOMEM. */
static const struct sym_result *object_lookup(struct symbolizer *s, struct sym_object *o,
					      uint64_t off)
{
	uint64_t vaddr;
	long i;

	if (!object_off_to_vaddr(o, off, &vaddr) || (i = sym_table__find(&o->info.table, vaddr)) < 0)
		return &s->unresolved;
	return sym_table__result(&o->info.table, (size_t)i);
}

int symbolizer__resolve(struct symbolizer *s, struct sym_object *obj, uint64_t off,
			const struct sym_result **out)
{
	const struct sym_cache_slot *slot;
	const struct sym_result *r;

	*out = &s->unresolved;
	if (!obj)
		return -EINVAL;
	slot = cache_get(s, obj, off);
	if (slot) {
		s->stats.cache_hits++;
		*out = slot->res;
		return 0;
	}
	s->stats.cache_misses++;
	r = object_lookup(s, obj, off);
	if (!r)
		return -ENOMEM;
	cache_put(s, obj, off, r);
	*out = r;
	return 0;
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
	free(s->cache);
	sym_table__fini(&s->kernel);
	free(s->kallsyms_path);
	free(s);
}

void symbolizer__stats(const struct symbolizer *s, struct sym_stats *out)
{
	*out = s->stats;
}
