/*
 * collect: aggregation of raw samples and their symbolization into a profile.
 *
 * Constraint: the add path runs for every drained entry (or every ring-buffer
 * sample) and must stay cheap: one hash of the frames, one probe, no syscalls.
 * All /proc reading happens on process events; all symbol work in build.
 *
 * Address math for user frames (leaf first):
 *   frames[0] is where the CPU was; frames[i>0] are return addresses, so we look
 *   up (and record) addr - 1, which lies inside the call instruction and hence in
 *   the caller's function even when the call is the last instruction of it.
 */
#include "collect.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMM_LEN 16

struct entry {
	uint64_t hash;
	uint32_t pid, tid;
	uint64_t pstart;
	char comm[COMM_LEN + 1];
	char pcomm[COMM_LEN + 1]; /* "" when the sampler did not say */
	uint32_t n_user, n_kernel;
	uint64_t *frames; /* owned: kernel frames then user frames, leaf first each */
	uint64_t count;
};

struct collector {
	struct proc_table *pt;	/* borrowed */
	struct symbolizer *sym; /* borrowed */
	struct entry *entries;	/* open addressing; frames == NULL marks a free slot */
	size_t cap, used;
	struct collect_stats stats;
	uint64_t kernel_mapping_key;
	uint32_t *gone; /* owned: pids that exited or exec'd since the last build */
	size_t n_gone, gone_cap;
};

struct collector *collector__new(struct proc_table *pt, struct symbolizer *sym)
{
	struct collector *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->pt = pt;
	c->sym = sym;
	return c;
}

static void clear_entries(struct collector *c)
{
	for (size_t i = 0; i < c->cap; i++) {
		free(c->entries[i].frames);
		c->entries[i].frames = NULL;
	}
	c->used = 0;
}

void collector__free(struct collector *c)
{
	if (!c)
		return;
	clear_entries(c);
	free(c->entries);
	free(c->gone);
	free(c);
}

/* FNV-1a over the identifying fields; good enough spread for open addressing. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}

static uint64_t hash_sample(const struct collect_sample *s)
{
	uint64_t h = 14695981039346656037ull;

	h = hash_bytes(h, &s->pid, sizeof(s->pid));
	h = hash_bytes(h, &s->tid, sizeof(s->tid));
	h = hash_bytes(h, &s->pstart, sizeof(s->pstart));
	h = hash_bytes(h, s->comm, strnlen(s->comm, COMM_LEN));
	if (s->pcomm)
		h = hash_bytes(h, s->pcomm, strnlen(s->pcomm, COMM_LEN));
	h = hash_bytes(h, &s->n_kernel, sizeof(s->n_kernel));
	h = hash_bytes(h, s->kernel, s->n_kernel * sizeof(*s->kernel));
	h = hash_bytes(h, s->user, s->n_user * sizeof(*s->user));
	return h;
}

static bool entry_matches(const struct entry *e, uint64_t h, const struct collect_sample *s)
{
	return e->hash == h && e->pid == s->pid && e->tid == s->tid && e->pstart == s->pstart &&
	       e->n_user == s->n_user && e->n_kernel == s->n_kernel &&
	       strncmp(e->comm, s->comm, COMM_LEN) == 0 &&
	       strncmp(e->pcomm, s->pcomm ? s->pcomm : "", COMM_LEN) == 0 &&
	       (!s->n_kernel || memcmp(e->frames, s->kernel, s->n_kernel * sizeof(uint64_t)) == 0) &&
	       (!s->n_user ||
		memcmp(e->frames + s->n_kernel, s->user, s->n_user * sizeof(uint64_t)) == 0);
}

static int grow(struct collector *c)
{
	size_t ncap = c->cap ? c->cap * 2 : 1024;
	struct entry *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++) {
		size_t j;

		if (!c->entries[i].frames)
			continue;
		j = c->entries[i].hash & (ncap - 1);
		while (n[j].frames)
			j = (j + 1) & (ncap - 1);
		n[j] = c->entries[i];
	}
	free(c->entries);
	c->entries = n;
	c->cap = ncap;
	return 0;
}

static int fill_entry(struct entry *e, uint64_t h, const struct collect_sample *s)
{
	size_t n = s->n_kernel + s->n_user;

	e->frames = malloc((n ? n : 1) * sizeof(uint64_t));
	if (!e->frames)
		return -ENOMEM;
	if (s->n_kernel) /* memcpy from NULL is undefined even for 0 bytes */
		memcpy(e->frames, s->kernel, s->n_kernel * sizeof(uint64_t));
	if (s->n_user)
		memcpy(e->frames + s->n_kernel, s->user, s->n_user * sizeof(uint64_t));
	e->hash = h;
	e->pid = s->pid;
	e->tid = s->tid;
	e->pstart = s->pstart;
	snprintf(e->comm, sizeof(e->comm), "%s", s->comm ? s->comm : "");
	snprintf(e->pcomm, sizeof(e->pcomm), "%s", s->pcomm ? s->pcomm : "");
	e->n_user = (uint32_t)s->n_user;
	e->n_kernel = (uint32_t)s->n_kernel;
	e->count = s->count;
	return 0;
}

int collector__add(struct collector *c, const struct collect_sample *s)
{
	uint64_t h = hash_sample(s);
	size_t i;

	c->stats.samples += s->count;
	if ((c->used + 1) * 4 > c->cap * 3) {
		if (c->used >= COLLECT_MAX_ENTRIES || grow(c)) {
			c->stats.dropped += s->count;
			return -ENOSPC;
		}
	}
	for (i = h & (c->cap - 1); c->entries[i].frames; i = (i + 1) & (c->cap - 1)) {
		if (entry_matches(&c->entries[i], h, s)) {
			c->entries[i].count += s->count;
			return 0;
		}
	}
	if (fill_entry(&c->entries[i], h, s)) {
		c->stats.dropped += s->count;
		return -ENOMEM;
	}
	c->used++;
	return 0;
}

/*
 * The symbolizer releases what pid held (perf map, references on its objects) after the
 * next build: samples collected before the exit are still to be symbolized with them.
 * When the list cannot grow, now (those samples then re-read what they need).
 */
static void forget_after_build(struct collector *c, uint32_t pid)
{
	size_t cap = c->gone_cap ? c->gone_cap * 2 : 64;
	uint32_t *g;

	if (c->n_gone == c->gone_cap) {
		if (cap > SIZE_MAX / sizeof(*g) || !(g = realloc(c->gone, cap * sizeof(*g)))) {
			symbolizer__forget_pid(c->sym, pid);
			return;
		}
		c->gone = g;
		c->gone_cap = cap;
	}
	c->gone[c->n_gone++] = pid;
}

void collector__event(struct collector *c, enum collect_event_kind kind, uint32_t pid,
		      uint64_t pstart, const char *comm)
{
	(void)comm;
	switch (kind) {
	case COLLECT_EV_NEW:
		proc_table__lookup(c->pt, pid, pstart); /* reads /proc while the process lives */
		break;
	case COLLECT_EV_EXEC: /* a new image: its JIT map starts over, its objects change */
		proc_table__exec(c->pt, pid, pstart);
		forget_after_build(c, pid);
		break;
	case COLLECT_EV_EXIT:
		proc_table__exit(c->pt, pid, pstart);
		forget_after_build(c, pid);
		break;
	}
}

/* ---- build ---- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* A location whose only line is a synthetic function named after module+offset. */
static uint64_t unresolved_location(struct profile *p, uint64_t mapping_id, uint64_t addr,
				    const char *module, uint64_t off)
{
	char name[320];
	struct profile_line line = { 0 };

	if (module)
		snprintf(name, sizeof(name), "%s+0x%" PRIx64, module, off);
	else
		snprintf(name, sizeof(name), "[unknown] 0x%" PRIx64, addr);
	line.function_id = profile__function(p, name, name, NULL);
	if (!line.function_id)
		return 0;
	return profile__location(p, mapping_id, addr, &line, 1);
}

/* Location of a symbolized address: one line per frame, innermost first. */
static uint64_t resolved_location(struct profile *p, uint64_t mapping_id, uint64_t addr,
				  const struct sym_result *r)
{
	struct profile_line lines[SYM_MAX_FRAMES];

	for (size_t i = 0; i < r->n; i++) {
		lines[i].function_id = profile__function(p, r->frames[i].name,
							 r->frames[i].system_name,
							 r->frames[i].file);
		if (!lines[i].function_id)
			return 0;
		lines[i].line = r->frames[i].line;
	}
	return profile__location(p, mapping_id, addr, lines, r->n);
}

static uint64_t kernel_location(struct collector *c, struct profile *p, uint64_t addr)
{
	const struct sym_result *r = NULL;
	uint64_t mid = profile__mapping(p, 0xffff800000000000ull, UINT64_MAX, 0,
					PROFILE_KERNEL_MAPPING, NULL);

	if (!mid)
		return 0;
	c->stats.frames++;
	if (symbolizer__resolve_kernel(c->sym, addr, &r) == 0 && r && r->n)
		return resolved_location(p, mid, addr, r);
	c->stats.unresolved++;
	return unresolved_location(p, mid, addr, PROFILE_KERNEL_MAPPING, addr);
}

static bool file_backed(const struct proc_mapping *m)
{
	return m->inode != 0 && m->path[0] == '/';
}

/* Anonymous code (no file): what a JIT emits, named by the process's perf map. */
static bool jit_candidate(const struct proc_mapping *m)
{
	return !m || (m->exec && !m->inode &&
		      (!m->path[0] || !strncmp(m->path, "[anon", 5) || !strncmp(m->path, "//anon", 6)));
}

/* A location named from /tmp/perf-PID.map, or 0 when the map does not cover addr. */
static uint64_t jit_location(struct collector *c, struct profile *p, struct proc_process *proc,
			     const struct proc_mapping *m, uint64_t addr)
{
	const struct sym_result *r = NULL;
	uint64_t mid;

	if (!proc || !jit_candidate(m) || symbolizer__resolve_jit(c->sym, proc->pid, addr, &r) ||
	    !r || !r->n)
		return 0;
	mid = m ? profile__mapping(p, m->start, m->end, m->pgoff, m->path[0] ? m->path : "[anon]",
				   NULL)
		: 0;
	if (m && !mid)
		return 0;
	return resolved_location(p, mid, addr, r);
}

static uint64_t user_location(struct collector *c, struct profile *p, struct proc_process *proc,
			      uint64_t addr)
{
	const struct proc_mapping *m = proc ? proc__find_mapping(c->pt, proc, addr) : NULL;
	const struct sym_result *r = NULL;
	struct sym_object *obj;
	char open_path[4096];
	uint64_t mid, off;

	c->stats.frames++;
	if ((!m || !file_backed(m)) && (mid = jit_location(c, p, proc, m, addr)))
		return mid;
	if (!m) {
		c->stats.unresolved++;
		return unresolved_location(p, 0, addr, NULL, 0);
	}
	off = proc_mapping__file_off(m, addr);
	if (!file_backed(m)) {
		mid = profile__mapping(p, m->start, m->end, m->pgoff, m->path[0] ? m->path : "[anon]",
				       NULL);
		c->stats.unresolved++;
		return unresolved_location(p, mid, addr, m->path[0] ? m->path : "[anon]", off);
	}
	if (!proc__object_path(c->pt, proc, m, open_path, sizeof(open_path)))
		snprintf(open_path, sizeof(open_path), "%s", m->path);
	obj = symbolizer__object(c->sym, open_path, m->path, proc_mapping__dev(m), m->inode);
	if (obj && !proc->exited) /* an exited one holds nothing new: its forget may be past */
		symbolizer__hold(c->sym, proc->pid, obj);
	mid = profile__mapping(p, m->start, m->end, m->pgoff, m->path,
			       obj ? sym_object__build_id(obj) : NULL);
	if (obj && symbolizer__resolve(c->sym, obj, off, &r) == 0 && r && r->n)
		return resolved_location(p, mid, addr, r);
	c->stats.unresolved++;
	return unresolved_location(p, mid, addr, base_name(m->path), off);
}

/* The name the process ran under when sampled, else what proc/ read, else the thread's. */
static const char *process_name(const struct entry *e, const struct proc_process *proc)
{
	if (e->pcomm[0])
		return e->pcomm;
	return proc && proc->comm && proc->comm[0] ? proc->comm : e->comm;
}

static int build_entry(struct collector *c, struct profile *p, const struct entry *e,
		       int64_t period_ns, uint64_t *locs)
{
	struct proc_process *proc = e->pid ? proc_table__lookup(c->pt, e->pid, e->pstart) : NULL;
	size_t n = 0;
	int64_t values[PROFILE_N_VALUES] = { (int64_t)e->count, (int64_t)e->count * period_ns };
	struct profile_label labels[4] = {
		{ .key = "pid", .num = e->pid },
		{ .key = "tid", .num = e->tid },
		{ .key = "comm", .str = e->comm },
		{ .key = "process", .str = process_name(e, proc) },
	};

	if (e->pid && !proc)
		c->stats.no_process += e->count;
	for (uint32_t i = 0; i < e->n_kernel; i++) {
		uint64_t addr = i ? e->frames[i] - 1 : e->frames[i];

		if (!(locs[n] = kernel_location(c, p, addr)))
			return -ENOMEM;
		n++;
	}
	for (uint32_t i = 0; i < e->n_user; i++) {
		uint64_t addr = e->frames[e->n_kernel + i];

		if (i > 0 || e->n_kernel > 0)
			addr = addr ? addr - 1 : 0; /* a return address: see the file comment */
		if (!(locs[n] = user_location(c, p, proc, addr)))
			return -ENOMEM;
		n++;
	}
	return profile__add_sample(p, locs, n, values, labels, 4);
}

struct profile *collector__build(struct collector *c, int64_t period_ns, int64_t time_ns,
				 int64_t duration_ns)
{
	struct profile *p = profile__new(period_ns);
	uint64_t *locs = NULL;
	size_t max = 0;

	if (!p)
		return NULL;
	profile__set_time(p, time_ns, duration_ns);
	c->stats.frames = 0;
	c->stats.unresolved = 0;
	for (size_t i = 0; i < c->cap; i++)
		if (c->entries[i].frames && c->entries[i].n_user + c->entries[i].n_kernel > max)
			max = c->entries[i].n_user + c->entries[i].n_kernel;
	locs = malloc((max ? max : 1) * sizeof(*locs));
	if (!locs)
		goto fail;
	for (size_t i = 0; i < c->cap; i++) {
		if (c->entries[i].frames && build_entry(c, p, &c->entries[i], period_ns, locs))
			goto fail;
	}
	free(locs);
	clear_entries(c);
	for (size_t i = 0; i < c->n_gone; i++)
		symbolizer__forget_pid(c->sym, c->gone[i]);
	c->n_gone = 0;
	return p;
fail:
	free(locs);
	profile__free(p);
	return NULL;
}

void collector__stats(const struct collector *c, struct collect_stats *out)
{
	*out = c->stats;
	out->entries = c->used;
}
