/*
 * symbolize: objects by identity and (object, offset) -> frames, the lookup itself
 * (DWARF lines and inlines, else symbols), kernel addresses through kallsyms, and the
 * symbolizer's lifecycle. The rest of the symbolizer is in files of their own, sharing
 * sym_impl.h: sym_cache.c (the address cache and the byte budget), sym_jit.c (JIT
 * code through perf maps), sym_hold.c (which processes hold which objects).
 *
 * Identity (src/object's). A mapping names its file by dev+inode (from /proc/PID/maps);
 * the file's mtime tells a file rewritten in place from its old self. Each such
 * identity points to one object; a file reached under another identity (a copy,
 * another container layer) with the same GNU build-id shares the object already
 * loaded. So:
 *   (dev, inode, mtime) --> object <-- build-id
 * Checking mtime costs a stat(2); a known identity is re-checked at most once per
 * SYM_RECHECK_NS, so asking for the same object per frame costs a hash lookup.
 *
 * What an object resolves through, best first: DWARF of the file itself, else of a
 * separate debug file (/usr/lib/debug/.build-id/xx/rest.debug with the same build-id,
 * else the .gnu_debuglink target with the right CRC, else debuginfod in the background,
 * taken when it arrives); then .symtab, .dynsym. Names are demangled (C++, Rust).
 *
 * Memory (sym_cache.c). Symbol tables, DWARF handles and the address cache are
 * accounted in bytes against one budget; an evicted object keeps its identity and
 * segments and is re-read from its file, build-id checked, on next use. Hence results
 * are borrowed only until the next call: they are copied out of the cache into
 * s->scratch. The object records themselves (a few hundred bytes) live until
 * symbolizer__free. The kernel's table is one, shared, and outside the budget.
 * An object's ELF is read into our memory and closed; only DWARF keeps an fd, while
 * its object is in memory.
 */
#include "symbolize/sym_impl.h"
#include "symbolize/symbolize.h"

#include <errno.h>
#include <libiberty/demangle.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

uint64_t sym_now_ns(void)
{
	return (uint64_t)base_clock_ns(CLOCK_MONOTONIC);
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

static uint64_t bid_hash(const char *bid)
{
	return base_hash_bytes(BASE_HASH_SEED, bid, strlen(bid));
}

static bool bid_eq(const void *ctx, size_t idx, const void *key)
{
	const struct sym_bid_index *b = ctx;

	return strcmp(sym_object__build_id(b->objs[idx]), key) == 0;
}

static struct sym_object *bid_find(struct symbolizer *s, const char *bid)
{
	size_t i = base_hmap__find(&s->build_ids.index, bid_hash(bid), bid_eq, &s->build_ids, bid);

	return i == SIZE_MAX ? NULL : s->build_ids.objs[i];
}

/* Records o under its build-id. Best effort: on ENOMEM o is just not shared by build-id. */
static void bid_add(struct symbolizer *s, struct sym_object *o)
{
	struct sym_bid_index *b = &s->build_ids;

	if (base_grow((void **)&b->objs, &b->cap, b->n + 1, sizeof(*b->objs)) ||
	    base_hmap__insert(&b->index, bid_hash(o->obj->build_id), b->n))
		return;
	b->objs[b->n++] = o;
}

/* A new object record; obj (may be NULL: unreadable) is its reference, taken over
 * even on failure. NULL on ENOMEM. */
static struct sym_object *object_new(struct symbolizer *s, const char *path, struct object *obj)
{
	struct sym_object *o = calloc(1, sizeof(*o));

	if (!o || !(o->path = strdup(path))) {
		free(o);
		object__put(obj);
		return NULL;
	}
	o->obj = obj;
	o->next = s->objects;
	s->objects = o;
	s->stats.objects++;
	if (obj && obj->build_id[0])
		bid_add(s, o);
	return o;
}

static void object_free(struct sym_object *o)
{
	sym_dname_free(o);
	sym_elf_info__fini(&o->info);
	sym_dwarf__close(o->dwarf);
	free(o->load_path);
	free(o->debug_path);
	free(o->debuglink);
	free(o->path);
	object__put(o->obj);
	free(o);
}

static void debug_find(struct symbolizer *s, struct sym_object *o);

/*
 * Reads an open ELF into o (once), then its debug info wherever it is. A failure leaves
 * o resolving nothing; a damaged file keeps what could be read. Both are counted.
 */
static void object_fill(struct symbolizer *s, struct sym_object *o, struct sym_elf *elf,
			const char *open_path)
{
	char link[256];
	int err;

	o->want_bytes = sym_elf__index_bytes(elf);
	if (!sym_ledger_room(s, o->want_bytes)) {
		/* over the ledger's budget: known, not read; tried again on its next lookup */
		s->stats.budget_skips++;
		free(o->load_path);
		if (!(o->load_path = strdup(open_path)))
			return;
		if (!o->debuglink &&
		    sym_elf__debuglink(elf, link, sizeof(link), &o->debuglink_crc) == 0)
			o->debuglink = strdup(link);
		o->loaded = true;
		o->debug_deferred = true;
		return;
	}
	err = sym_elf__load(elf, &o->info);
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
	sym_lru_touch(s, o);
	sym_object_account(s, o);
	sym_budget_enforce(s);
}

/*
 * The object in the file at open_path (named by id as mapped): opened once here. Same
 * build-id as a loaded object -> that object. Unreadable (or open_path NULL) -> a new
 * object that resolves nothing. NULL on ENOMEM.
 */
static struct sym_object *object_load(struct symbolizer *s, const char *open_path, const char *path,
				      const struct object_id *id)
{
	struct sym_elf *elf = NULL;
	struct object *obj = NULL;
	struct sym_object *o = NULL;
	int err = open_path ? sym_elf__open(open_path, &elf) : -ENOENT;

	if (!err && (err = sym_elf__object(elf, id->dev, id->inode, &obj)))
		sym_elf__close(elf);
	if (err) {
		if (err != -ENOMEM && (o = object_new(s, path, NULL)))
			s->stats.elf_failures++;
		return o;
	}
	s->stats.elf_opens++;
	o = obj->build_id[0] ? bid_find(s, obj->build_id) : NULL;
	if (o)
		object__put(obj); /* the same object under another name */
	else
		o = object_new(s, path, obj);
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
	uint64_t now = sym_now_ns();
	struct sym_ident key = {.id = {.dev = inode ? dev : 0, .inode = inode}, .checked_ns = now};
	struct sym_object *o;

	path = path ? path : open_path ? open_path : "";
	open_path = open_path ? open_path : path;
	key.path = (char *)open_path; /* only read; ident_add copies it */
	o = inode ? object_by_inode(s, &key, &open_path, path, now)
		  : object_by_stat(s, &key, open_path);
	if (o) {
		/* Released or evicted: it is read again from a path that works now. The
		 * one it was first read through (/proc/PID/root/... of a process that may
		 * have exited since) would fail, and a failed reload resolves nothing. */
		if (!o->heavy && o->loaded && open_path &&
		    (!o->load_path || strcmp(o->load_path, open_path))) {
			char *copy = strdup(open_path);

			if (copy) {
				free(o->load_path);
				o->load_path = copy;
			}
		}
		return o;
	}
	o = object_load(s, open_path, path, &key.id);
	if (o)
		ident_add(s, &key, o);
	return o;
}

/* Whether canonical path real is /proc, /sys or /dev or below one of them (whole
 * components: "/devices" is not "/dev"). */
static bool under_virtual_fs(const char *real)
{
	static const char *const virt[] = {"/proc", "/sys", "/dev"};

	for (size_t i = 0; i < sizeof(virt) / sizeof(virt[0]); i++) {
		size_t n = strlen(virt[i]);

		if (!strncmp(real, virt[i], n) && (real[n] == 0 || real[n] == '/'))
			return true;
	}
	return false;
}

/*
 * Whether path (a name a request gives, from a profile of anywhere) is a regular file
 * here that may be read as an object: not a FIFO, socket or device (what a read of
 * those gives is no file's content) and nothing of /proc, /sys or /dev (kcore and the
 * like are "regular" there). The check is on the canonical path, written to real
 * (PATH_MAX bytes), which the caller then opens: "/./proc/self/maps", "//dev/shm/x"
 * or a symlink into /dev passed a check of the name as given. A name that does not
 * canonicalize (missing, a loop, too long) is refused. A link of /proc that names a
 * file (/proc/self/exe) resolves to that file, read as if named itself.
 */
static bool local_regular_file(const char *path, char *real)
{
	struct stat st;

	if (!path || path[0] != '/' || !realpath(path, real))
		return false;
	if (under_virtual_fs(real))
		return false;
	return stat(real, &st) == 0 && S_ISREG(st.st_mode) && access(real, R_OK) == 0;
}

int symbolizer__object_by_build_id(struct symbolizer *s, const char *bid, const char *path,
				   struct sym_object **out)
{
	size_t n = strlen(bid);
	char p[PATH_MAX];
	int err;

	*out = NULL;
	if (n < 2 || n >= OBJECT_BUILD_ID_HEX || strspn(bid, "0123456789abcdef") != n)
		return -EINVAL; /* it names a file below the debug root: nothing else passes */
	if ((*out = bid_find(s, bid)))
		return 0;
	if (local_regular_file(path, p)) { /* the file itself, here */
		*out = symbolizer__object(s, p, path, 0, 0);
		if (*out && !strcmp(sym_object__build_id(*out), bid))
			return 0;
		*out = NULL;
	}
	/* The executable, not a debug file alone: a debug file's program headers no longer
	 * say where its segments were in the file, so a file offset cannot be placed in it.
	 * The executable's own debug info is then found as for any object (debug_find). */
	err = sym_dbginfod__get_exec(s->dbginfod, bid, p, sizeof(p));
	if (err)
		return err == -EAGAIN ? err : -ENOENT;
	*out = symbolizer__object(s, p, path, 0, 0);
	return *out ? 0 : -ENOMEM;
}

const char *sym_object__path(const struct sym_object *o)
{
	return o->path;
}

const char *sym_object__build_id(const struct sym_object *o)
{
	return o->obj ? o->obj->build_id : "";
}

bool sym_object__settled(const struct sym_object *o)
{
	return !o->debug_pending;
}

/* ---- object contents: symbols, DWARF, separate debug files ---- */

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
	int err = sym_dwarf__open(path, s->no_inlines, &o->dwarf);

	if (err == -EFBIG) { /* its sections would have to be inflated past the budget */
		s->stats.budget_skips++;
	} else if (err) {
		if (err != -ENOENT)
			s->stats.dwarf_failures++;
		return false;
	} else if (!sym_ledger_room(s, sym_dwarf__bytes(o->dwarf))) {
		/* over the ledger's budget even after evicting: symbols only (said as
		 * handled: the next places would be no better) */
		s->stats.budget_skips++;
		sym_dwarf__close(o->dwarf);
		o->dwarf = NULL;
	}
	/* A debug file's symbols are read even when its DWARF is not: a stripped
	 * library's local functions are named only there (libc's start_thread and
	 * clone3, every thread's root: without them bench/fleet's Java stacks were
	 * rooted at "libc.so.6 [no symbols]" whenever libc was read under pressure). */
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
	if (sym_object__build_id(o)[0] &&
	    sym_debug__by_build_id(s->debug_root, sym_object__build_id(o), p, sizeof(p)) == 0 &&
	    debug_attach(s, o, p))
		return;
	if (o->debuglink &&
	    sym_debug__by_debuglink(s->debug_root, o->path, o->debuglink, o->debuglink_crc, p,
				    sizeof(p)) == 0 &&
	    debug_attach(s, o, p))
		return;
	o->debug_pending = s->dbginfod && sym_object__build_id(o)[0];
	if (o->debug_pending) /* queues the fetch now; its answer is taken by debug_poll */
		sym_dbginfod__get(s->dbginfod, sym_object__build_id(o), p, sizeof(p));
}

/* A debuginfod answer for o, when one has come: used from now on. */
static void debug_poll(struct symbolizer *s, struct sym_object *o)
{
	char p[4096];
	int err = sym_dbginfod__get(s->dbginfod, sym_object__build_id(o), p, sizeof(p));

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
		sym_object_account(s, o);
	}
}

/* Re-reads an evicted object from its file (same build-id only). 0 or -errno. */
static int object_reload(struct symbolizer *s, struct sym_object *o)
{
	struct sym_elf *e;
	char bid[OBJECT_BUILD_ID_HEX];
	int err;

	if (!sym_ledger_room(s, o->want_bytes)) {
		s->stats.budget_skips++;
		return -EBUSY;
	}
	err = o->load_path ? sym_elf__open(o->load_path, &e) : -ENOENT;
	if (err)
		return err;
	sym_elf__build_id(e, bid, sizeof(bid));
	sym_elf_info__fini(&o->info);
	err = strcmp(bid, sym_object__build_id(o)) ? -ESTALE : sym_elf__load(e, &o->info);
	sym_elf__close(e);
	if (err)
		return err;
	o->heavy = true;
	s->stats.object_reloads++;
	if (o->debug_deferred) { /* skipped at first sight: looked for now */
		o->debug_deferred = false;
		debug_find(s, o);
	} else if (o->debug_path) { /* its symbols even when its DWARF is not read */
		sym_dwarf__open(o->debug_path, s->no_inlines, &o->dwarf);
		debug_symbols(s, o);
	} else
		sym_dwarf__open(o->load_path, s->no_inlines, &o->dwarf);
	return 0;
}

/* ---- public: resolving ---- */

/* vaddr = off - p_offset + p_vaddr (object_segments_vaddr). */
static bool object_off_to_vaddr(const struct sym_object *o, uint64_t off, uint64_t *vaddr)
{
	return o->obj && object_segments_vaddr(o->obj->segs, o->obj->n_segs, off, vaddr);
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
		/* the first buffer is o->stack: no base_grow */
		p = o->p == o->stack ? malloc(cap) : realloc(o->p, cap); /* layers: stack first */
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
	if (sys[1] == 'Z' && !(sys[2] == 'N' && rust_legacy_tail(sys))) {
		bool declined;
		char *r = sym_demangle_fast(sys, &declined);

		return declined ? demangle_cxx(sys) : r;
	}
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
	    (i < 0 ||
	     sym_table__start(&o->info.data, (size_t)j) > sym_table__start(t, (size_t)i))) {
		t = &o->info.data;
		i = j;
	}
	/* -EIO: the file shrank under its mapping; the address stays unknown */
	if (i < 0 || sym_table__names(t, (size_t)i, &f->system_name, &f->name) ||
	    !f->system_name[0])
		return 0;
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
	if (n == 0) { /* DWARF's frames come demangled; a symbol's is demangled here */
		n = (int)symtab_frame(o, vaddr, f);
		if (n) /* as DWARF named it before, if its DWARF was evicted since */
			sym_dname_apply(o, vaddr, f);
	} else if (!strcmp(f[n - 1].system_name, "??")) {
		symtab_frame(o, vaddr, &f[n - 1]);
	} else {
		sym_dname_keep(o, vaddr, &f[n - 1]);
	}
	sym_object_account(s, o);
	return n;
}

/* Frames for vaddr in o as a new cache entry. NULL on ENOMEM. */
static struct sym_centry *object_frames(struct symbolizer *s, struct sym_object *o, uint64_t vaddr)
{
	struct sym_frame f[SYM_MAX_FRAMES];
	int n = object_lookup(s, o, vaddr, f);

	return sym_centry_new(o, vaddr, f, (size_t)n);
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
	char *pos;
	int n = object_lookup(s, o, vaddr, f), err = 0;
	size_t room = 0;

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
	if (base_grow((void **)&s->scratch_text, &s->scratch_cap, room, 1)) {
		err = -ENOMEM;
		n = 0;
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
	sym_budget_enforce(s);
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
	int err;

	*out = &s->unresolved;
	if (!obj)
		return -EINVAL;
	if (obj->debug_pending && (obj->polls++ & 255) == 0)
		debug_poll(s, obj);
	e = sym_centry_find(s, obj, vaddr);
	if (e && e->gen == obj->gen) {
		s->stats.cache_hits++;
		e->referenced = true; /* not relinked: a hit touches no other entry's memory */
		*out = centry_result(s, e);
		s->last_entry = e;
		return 0;
	}
	if (e)
		sym_centry_remove(s, e);
	s->stats.cache_misses++;
	if (!obj->loaded)
		return 0;
	if (!obj->heavy && (err = object_reload(s, obj))) {
		/* Replaced (another build-id at its inode): resolves nothing from now
		 * on. A path that is gone (its process exited: process churn) is
		 * not the object's fault: a live process's lookup gives it a new
		 * one (symbolizer__object), and the next resolve reads it again.
		 * Marking it dead here once named no libc frame of any process. */
		if (err == -ESTALE)
			obj->loaded = false;
		else if (err != -EBUSY)
			s->stats.elf_failures++;
		return 0;
	}
	if (s->mem_budget && s->last_obj && s->last_obj != obj)
		sym_object_drop_pages(s, (struct sym_object *)s->last_obj);
	s->last_obj = obj;
	sym_lru_touch(s, obj);	 /* accounted by object_lookup, whichever way below */
	if (s->no_address_cache) /* straight into scratch */
		return scratch_lookup(s, obj, vaddr, out);
	if (!(e = object_frames(s, obj, vaddr)))
		return -ENOMEM;
	*out = centry_result(s, e); /* copied out before anything can be evicted */
	s->last_entry = e;
	sym_centry_insert(s, e);
	sym_budget_enforce(s);
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
	if (s->mem_budget) { /* resident for good: charged, never evicted */
		s->sym_bytes += sym_table__bytes(&s->kernel);
		mem_budget__charge(MEM_SYMBOLS, (int64_t)sym_table__bytes(&s->kernel));
	}
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
	s->no_inlines = opts && opts->no_inlines;
	s->release_grace_ns = opts ? opts->release_grace_ns : 0;
	s->mem_budget = opts && opts->mem_budget;
	if (opts && (opts->debug_cache_dir || opts->debug_cache_bytes))
		sym_zcache__config(opts->debug_cache_dir, opts->debug_cache_bytes);
	if (!opts || !opts->no_debuginfod)
		s->dbginfod = sym_dbginfod__new();
	s->idents.n_buckets = SYM_HASH_MIN_BUCKETS;
	s->idents.buckets = calloc(SYM_HASH_MIN_BUCKETS, sizeof(*s->idents.buckets));
	if (!s->kallsyms_path || !s->idents.buckets) {
		symbolizer__free(s);
		return NULL;
	}
	sym_ledger_register(s);
	return s;
}

void symbolizer__free(struct symbolizer *s)
{
	struct sym_object *o, *onext;
	struct sym_ident *id, *inext;

	if (!s)
		return;
	sym_ledger_unregister(s);	 /* first: no reclaim reaches s from now on */
	sym_dbginfod__free(s->dbginfod); /* its thread stops */
	while (s->c_tail)
		sym_centry_remove(s, s->c_tail);
	while (s->jits)
		sym_jit_forget(s, s->jits->pid);
	sym_holds_free(s);
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
	base_hmap__fini(&s->build_ids.index);
	free(s->build_ids.objs);
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
	out->bus_faults = base_guard_faults();
	{
		uint64_t used;

		sym_zcache__stats(&out->debug_cache_files, &used);
	}
}
