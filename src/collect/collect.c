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
 *
 * Python frames (CPython processes, docs/python.md) replace the native
 * _PyEval_EvalFrameDefault frames they ran in: the run of Python frames up to
 * the first one marked HEARTH_PY_FRAME_ENTRY takes the place of the innermost
 * such native frame, the next run the next one. Their code objects are read
 * from the process when a new entry is added (the process may be gone by the
 * build), then found again in the manager's cache.
 *
 * Ruby frames (CRuby processes, docs/ruby.md) travel in the same slots, their
 * kind (bpf/runtime_abi.h) HEARTH_RT_RUBY: a run up to an ENTRY frame replaces
 * the innermost native vm_exec_core frame, under the "[ruby]" pseudo-mapping.
 */
#include "collect.h"
#include "base/base.h"
#include "java/java.h"
#include "offcpu/offcpu.h"
#include "python/python.h"
#include "v8/v8.h"
#include "runtime_abi.h" /* bpf/ */
#include "ruby/ruby.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Methods of one compiled Java frame (itself and those inlined at its pc). */
#define JAVA_INLINE_MAX 16

/* HEARTH_COMM_LEN (bpf/profile_abi.h) bounds every name the sampler hands over. */
#define COMM_LEN HEARTH_COMM_LEN

struct entry {
	uint32_t pid, tid;
	uint64_t pstart;
	char comm[COMM_LEN + 1];
	char pcomm[COMM_LEN + 1]; /* "" when the sampler did not say */
	uint32_t n_user, n_kernel, n_py;
	uint64_t *frames; /* owned: kernel frames, user frames, then two words per Python
			   * frame; leaf first each */
	uint64_t count;
	uint16_t kind; /* sampler_sample.kind: off-CPU reason / wall on-CPU (docs/offcpu.md) */
};

struct collector {
	struct proc_table *pt;	/* borrowed */
	struct symbolizer *sym; /* borrowed */
	struct python_mgr *py;	/* borrowed; NULL: Python frames are dropped */
	struct v8_mgr *v8;	/* borrowed; NULL: V8 frames are dropped */
	struct java_mgr *java;	/* borrowed; NULL: Java frames are dropped */
	struct ruby_mgr *rb;	/* borrowed; NULL: Ruby frames are dropped */
	struct entry *entries;	/* owned, dense, in the order first seen */
	size_t n, cap;
	struct base_hmap idx; /* hash of an entry's key -> index in entries */
	struct collect_stats stats;
	uint64_t kernel_mapping_key;
	struct gone *gone; /* owned: processes that exited or exec'd since the last build */
	size_t n_gone, gone_cap;
	/* One build's Python locations by (pid, code, instruction): each frame is
	 * named once per build, not once per stack it is in (a resolve reads the
	 * process to check its code object is still the one cached). */
	struct py_loc *pylocs;
	size_t n_pylocs, cap_pylocs;
	struct base_hmap pyloc_idx;
	char *type; /* owned; NULL: CPU samples (collector__set_type) */
	/* One build's native locations by (pid, process start, address): a hot
	 * stack's frames come back in sample after sample, and each was looked up
	 * again (mapping, map_files path, object, symbol, profile interning): half
	 * of the agent's CPU on bench/fleet. Direct-mapped (a collision recomputes);
	 * slots of older builds are told apart by uloc_gen. NULL: no cache. */
	struct uloc_slot *uloc;
	uint32_t uloc_gen;
};

/* A native location found in this build (collector.uloc). */
struct uloc_slot {
	uint64_t addr, pstart, loc;
	uint32_t pid;
	uint32_t gen; /* low bit: the location was unresolved (counted again on a hit) */
};
#define ULOC_SLOTS 4096u

struct gone {
	uint32_t pid;
	bool exited; /* else exec'd: the Python manager already knows the new image */
	uint64_t pstart;
};

struct py_loc {
	uint32_t pid;
	uint64_t code, instr, loc;
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
	for (size_t i = 0; i < c->n; i++)
		free(c->entries[i].frames);
	c->n = 0;
	base_hmap__clear(&c->idx);
}

void collector__free(struct collector *c)
{
	if (!c)
		return;
	clear_entries(c);
	free(c->entries);
	base_hmap__fini(&c->idx);
	base_hmap__fini(&c->pyloc_idx);
	free(c->pylocs);
	free(c->uloc);
	free(c->gone);
	free(c->type);
	free(c);
}

/* The base hash over what entry_matches compares: a NULL pcomm hashes as "" (they
 * match), and frames only when there are some (a 0-frame side may be NULL). */
static uint64_t hash_sample(const struct sampler_sample *s)
{
	const char *pcomm = s->pcomm ? s->pcomm : "";
	uint64_t h = base_hash_u64(BASE_HASH_SEED, (uint64_t)s->pid << 32 | s->tid);

	h = base_hash_u64(h, s->pstart);
	h = base_hash_bytes(h, s->comm, strnlen(s->comm, COMM_LEN));
	h = base_hash_bytes(h, pcomm, strnlen(pcomm, COMM_LEN));
	h = base_hash_u64(h, (uint64_t)s->n_kernel << 32 | s->n_user);
	h = base_hash_u64(h, s->kind);
	if (s->n_kernel)
		h = base_hash_bytes(h, s->kernel, s->n_kernel * sizeof(*s->kernel));
	if (s->n_user)
		h = base_hash_bytes(h, s->user, s->n_user * sizeof(*s->user));
	if (s->n_python)
		h = base_hash_bytes(h, s->python, 2 * s->n_python * sizeof(*s->python));
	return h;
}

static bool entry_matches(const void *ctx, size_t idx, const void *key)
{
	const struct entry *e = &((const struct collector *)ctx)->entries[idx];
	const struct sampler_sample *s = key;

	return e->pid == s->pid && e->tid == s->tid && e->pstart == s->pstart && e->kind == s->kind &&
	       e->n_user == s->n_user && e->n_kernel == s->n_kernel && e->n_py == s->n_python &&
	       strncmp(e->comm, s->comm, COMM_LEN) == 0 &&
	       strncmp(e->pcomm, s->pcomm ? s->pcomm : "", COMM_LEN) == 0 &&
	       (!s->n_kernel ||
		memcmp(e->frames, s->kernel, s->n_kernel * sizeof(uint64_t)) == 0) &&
	       (!s->n_user ||
		memcmp(e->frames + s->n_kernel, s->user, s->n_user * sizeof(uint64_t)) == 0) &&
	       (!s->n_python || memcmp(e->frames + s->n_kernel + s->n_user, s->python,
				       2 * s->n_python * sizeof(uint64_t)) == 0);
}

static int fill_entry(struct entry *e, const struct sampler_sample *s)
{
	size_t n = s->n_kernel + s->n_user + 2 * s->n_python;

	e->frames = malloc((n ? n : 1) * sizeof(uint64_t));
	if (!e->frames)
		return -ENOMEM;
	if (s->n_kernel) /* memcpy from NULL is undefined even for 0 bytes */
		memcpy(e->frames, s->kernel, s->n_kernel * sizeof(uint64_t));
	if (s->n_user)
		memcpy(e->frames + s->n_kernel, s->user, s->n_user * sizeof(uint64_t));
	if (s->n_python)
		memcpy(e->frames + s->n_kernel + s->n_user, s->python,
		       2 * s->n_python * sizeof(uint64_t));
	e->pid = s->pid;
	e->tid = s->tid;
	e->pstart = s->pstart;
	snprintf(e->comm, sizeof(e->comm), "%s", s->comm ? s->comm : "");
	snprintf(e->pcomm, sizeof(e->pcomm), "%s", s->pcomm ? s->pcomm : "");
	e->n_user = (uint32_t)s->n_user;
	e->n_kernel = (uint32_t)s->n_kernel;
	e->n_py = (uint32_t)s->n_python;
	e->count = s->count;
	e->kind = s->kind;
	return 0;
}

/* The user frames before the first return address 0, which ends a stack (x86-64
 * psABI). The table walks stop there; the kernel's frame-pointer walk records it
 * and reads on from whatever rbp held: a Go sample in gogo, as it switches to a
 * goroutine's stack, came out as "…;runtime.asyncPreempt;[unknown] 0x0;gogo". */
static size_t user_depth(const struct sampler_sample *s)
{
	for (size_t i = 1; i < s->n_user; i++)
		if (!s->user[i])
			return i;
	return s->n_user;
}

int collector__add(struct collector *c, const struct sampler_sample *s)
{
	struct sampler_sample cut;
	uint64_t h;
	size_t i;
	int err;

	if (user_depth(s) < s->n_user) {
		cut = *s;
		cut.n_user = user_depth(s);
		s = &cut;
	}
	h = hash_sample(s);
	i = base_hmap__find(&c->idx, h, entry_matches, c, s);

	c->stats.samples = base_sat_addu(c->stats.samples, s->count);
	if (i != SIZE_MAX) {
		c->entries[i].count = base_sat_addu(c->entries[i].count, s->count);
		return 0;
	}
	err = -ENOSPC;
	if (c->n >= COLLECT_MAX_ENTRIES)
		goto dropped;
	err = base_grow((void **)&c->entries, &c->cap, c->n + 1, sizeof(*c->entries));
	if (err)
		goto dropped;
	err = fill_entry(&c->entries[c->n], s);
	if (err)
		goto dropped;
	/* A new stack: its process's mappings must cover it by the time it exits. */
	if (s->pid && s->n_user)
		proc_table__note_addrs(c->pt, s->pid, s->pstart, s->user, s->n_user);
	/* Its code objects, read while the process lives (cached by the manager). */
	for (size_t k = 0; k < s->n_python; k++) {
		uint64_t w0 = s->python[2 * k], w1 = s->python[2 * k + 1];

		switch (HEARTH_RT_KIND(w1)) {
		case HEARTH_RT_V8:
			if (c->v8)
				v8_mgr__warm(c->v8, s->pid, s->pstart, w0);
			break;
		case HEARTH_RT_JAVA:
			if (c->java)
				java_mgr__warm(c->java, s->pid, s->pstart, w0, w1);
			break;
		case HEARTH_RT_PYTHON:
			if (c->py)
				python_mgr__warm(c->py, s->pid, s->pstart, w0);
			break;
			break;
		case HEARTH_RT_RUBY:
			if (c->rb)
				ruby_mgr__warm(c->rb, s->pid, s->pstart, w0, w1 & HEARTH_RT_POS_MASK);
		}
	}
	err = base_hmap__insert(&c->idx, h, c->n);
	if (err) {
		free(c->entries[c->n].frames);
		goto dropped;
	}
	c->n++;
	return 0;
dropped:
	c->stats.dropped = base_sat_addu(c->stats.dropped, s->count);
	return err;
}

/*
 * The symbolizer releases what pid held (perf map, references on its objects) after the
 * next build: samples collected before the exit are still to be symbolized with them.
 * When the list cannot grow, now (those samples then re-read what they need).
 */
static void forget_after_build(struct collector *c, const struct sampler_event *e)
{
	if (base_grow((void **)&c->gone, &c->gone_cap, c->n_gone + 1, sizeof(*c->gone))) {
		symbolizer__forget_pid(c->sym, e->pid);
		return;
	}
	c->gone[c->n_gone++] = (struct gone){e->pid, e->kind == HEARTH_EV_EXIT, e->pstart};
}

void collector__event(struct collector *c, const struct sampler_event *e)
{
	switch (e->kind) {
	case HEARTH_EV_NEW:
		proc_table__lookup(c->pt, e->pid,
				   e->pstart); /* reads /proc while the process lives */
		break;
	case HEARTH_EV_EXEC: /* a new image: its JIT map starts over, its objects change */
		proc_table__exec(c->pt, e->pid, e->pstart);
		forget_after_build(c, e);
		break;
	case HEARTH_EV_EXIT:
		proc_table__exit(c->pt, e->pid, e->pstart);
		forget_after_build(c, e);
		break;
	case SAMPLER_EV_MAPS_READ: /* the unwinder's read may be fresher than ours */
	case SAMPLER_EV_MAPS_REMAP:
		proc_table__view_read(c->pt, e->pid, e->pstart, e->kind == SAMPLER_EV_MAPS_REMAP);
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
	struct profile_line line = {0};

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
		lines[i].function_id = profile__function(
		    p, r->frames[i].name, r->frames[i].system_name, r->frames[i].file);
		if (!lines[i].function_id)
			return 0;
		lines[i].line = r->frames[i].line;
	}
	return profile__location(p, mapping_id, addr, lines, r->n);
}

static uint64_t kernel_location(struct collector *c, struct profile *p, uint64_t addr)
{
	const struct sym_result *r = NULL;
	uint64_t mid =
	    profile__mapping(p, 0xffff800000000000ull, UINT64_MAX, 0, PROFILE_KERNEL_MAPPING, NULL);

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
	return !m ||
	       (m->exec && !m->inode &&
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
		mid = profile__mapping(p, m->start, m->end, m->pgoff,
				       m->path[0] ? m->path : "[anon]", NULL);
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

/* user_location (pid 0: kernel_location) through the build's cache. */
static uint64_t native_location(struct collector *c, struct profile *p, struct proc_process *proc,
				uint32_t pid, uint64_t pstart, uint64_t addr)
{
	uint64_t u0 = c->stats.unresolved, loc;
	struct uloc_slot *s;

	if (!c->uloc && !(c->uloc = calloc(ULOC_SLOTS, sizeof(*c->uloc))))
		return pid ? user_location(c, p, proc, addr) : kernel_location(c, p, addr);
	s = &c->uloc[base_hash_u64(base_hash_u64(base_hash_u64(BASE_HASH_SEED, pid), pstart),
				   addr) &
		     (ULOC_SLOTS - 1)];
	if ((s->gen & ~1u) == c->uloc_gen && s->pid == pid && s->pstart == pstart &&
	    s->addr == addr) {
		c->stats.frames++;
		c->stats.unresolved += s->gen & 1;
		return s->loc;
	}
	loc = pid ? user_location(c, p, proc, addr) : kernel_location(c, p, addr);
	if (loc)
		*s = (struct uloc_slot){addr, pstart, loc, pid,
					c->uloc_gen | (c->stats.unresolved != u0)};
	return loc;
}

static uint64_t pyloc_hash(uint32_t pid, uint64_t code, uint64_t instr)
{
	return base_hash_u64(base_hash_u64(base_hash_u64(BASE_HASH_SEED, pid), code), instr);
}

static bool pyloc_eq(const void *ctx, size_t idx, const void *key)
{
	const struct py_loc *a = &((const struct collector *)ctx)->pylocs[idx], *b = key;

	return a->pid == b->pid && a->code == b->code && a->instr == b->instr;
}

/* A Python frame's location, in the "[python]" pseudo-mapping so that readers
 * (and the UI's colours) tell it apart; keyed by code object and line. */
static uint64_t python_location(struct collector *c, struct profile *p, const struct entry *e,
				uint64_t code, uint64_t instr)
{
	struct python_frame f;
	struct profile_line line = {0};
	struct py_loc key = {e->pid, code, instr, 0};
	uint64_t h = pyloc_hash(e->pid, code, instr), mid, loc;
	size_t i = base_hmap__find(&c->pyloc_idx, h, pyloc_eq, c, &key);

	c->stats.frames++;
	if (i != SIZE_MAX)
		return c->pylocs[i].loc;
	mid = profile__mapping(p, 0, 0, 0, PROFILE_PYTHON_MAPPING, NULL);
	if (!mid)
		return 0;
	if (python_mgr__resolve(c->py, e->pid, e->pstart, code, instr, &f)) {
		c->stats.unresolved++;
		snprintf(f.name, sizeof(f.name), "[python] code 0x%" PRIx64, code);
		f.file[0] = 0;
		f.line = 0;
	}
	line.function_id = profile__function(p, f.name, f.name, f.file[0] ? f.file : NULL);
	if (!line.function_id)
		return 0;
	line.line = f.line;
	loc = profile__location_exact(p, mid, code, &line, 1);
	/* Not remembered when out of memory: named again next time, no harm. */
	if (loc &&
	    !base_grow((void **)&c->pylocs, &c->cap_pylocs, c->n_pylocs + 1, sizeof(*c->pylocs)) &&
	    !base_hmap__insert(&c->pyloc_idx, h, c->n_pylocs)) {
		key.loc = loc;
		c->pylocs[c->n_pylocs++] = key;
	}
	return loc;
}

/* A JavaScript frame's location (bpf/v8_abi.h), keyed by (SFI, frame type) in the
 * "[v8]" pseudo-mapping: named "JS:*function file:line:col" as --perf-basic-prof
 * names code, so that the two agree. */
static uint64_t v8_location(struct collector *c, struct profile *p, const struct entry *e,
			    uint64_t sfi, uint64_t word1)
{
	uint64_t pos = word1 & HEARTH_RT_POS_MASK, type = HEARTH_V8_POS_TYPE(pos);
	/* interpreted frames by bytecode offset: each its own current line */
	uint64_t at = type == HEARTH_V8_FT_INTERPRETED ? HEARTH_V8_POS_BCOFF(pos) : 0;
	struct py_loc key = {e->pid, sfi, type | (at << 8) | (1ull << 62), 0};
	uint64_t h = pyloc_hash(e->pid, sfi, key.instr), mid, loc;
	size_t i = base_hmap__find(&c->pyloc_idx, h, pyloc_eq, c, &key);
	struct profile_line line = {0};
	char name[V8_NAME_MAX];

	c->stats.frames++;
	if (i != SIZE_MAX)
		return c->pylocs[i].loc;
	mid = profile__mapping(p, 0, 0, 0, "[v8]", NULL);
	if (!mid)
		return 0;
	if (v8_mgr__resolve(c->v8, e->pid, e->pstart, sfi, pos, name, sizeof(name))) {
		c->stats.unresolved++;
		snprintf(name, sizeof(name), "[v8] unknown function 0x%" PRIx64, sfi);
	}
	line.function_id = profile__function(p, name, name, NULL);
	if (!line.function_id)
		return 0;
	line.line = v8_mgr__line(c->v8, e->pid, e->pstart, sfi, pos);
	loc = profile__location_exact(p, mid, sfi, &line, 1);
	if (loc &&
	    !base_grow((void **)&c->pylocs, &c->cap_pylocs, c->n_pylocs + 1, sizeof(*c->pylocs)) &&
	    !base_hmap__insert(&c->pyloc_idx, h, c->n_pylocs)) {
		key.loc = loc;
		c->pylocs[c->n_pylocs++] = key;
	}
	return loc;
}

/* A Ruby frame's location, in the "[ruby]" pseudo-mapping; keyed by iseq and pc
 * (the table of Python locations serves: a process runs one of them). */
static uint64_t ruby_location(struct collector *c, struct profile *p, const struct entry *e,
			      uint64_t iseq, uint64_t pc)
{
	struct ruby_frame f;
	struct profile_line line = {0};
	struct py_loc key = {e->pid, iseq, pc, 0};
	uint64_t h = pyloc_hash(e->pid, iseq, pc), mid, loc;
	size_t i = base_hmap__find(&c->pyloc_idx, h, pyloc_eq, c, &key);

	c->stats.frames++;
	if (i != SIZE_MAX)
		return c->pylocs[i].loc;
	mid = profile__mapping(p, 0, 0, 0, "[ruby]", NULL);
	if (!mid)
		return 0;
	if (ruby_mgr__resolve(c->rb, e->pid, e->pstart, iseq, pc, &f)) {
		c->stats.unresolved++;
		snprintf(f.name, sizeof(f.name), "[ruby] iseq 0x%" PRIx64, iseq);
		f.file[0] = 0;
		f.line = 0;
	}
	line.function_id = profile__function(p, f.name, f.name, f.file[0] ? f.file : NULL);
	if (!line.function_id)
		return 0;
	line.line = f.line;
	loc = profile__location_exact(p, mid, iseq, &line, 1);
	if (loc &&
	    !base_grow((void **)&c->pylocs, &c->cap_pylocs, c->n_pylocs + 1, sizeof(*c->pylocs)) &&
	    !base_hmap__insert(&c->pyloc_idx, h, c->n_pylocs)) {
		key.loc = loc;
		c->pylocs[c->n_pylocs++] = key;
	}
	return loc;
}

/* A Java frame's location, in the "[java]" pseudo-mapping; keyed (in the
 * Python locations' cache: the kind bits keep them apart) by Method* and, for
 * interpreted frames, the bytecode pointer (its line); compiled and stub frames
 * by the method or blob alone (no line is recovered for them). */
static uint64_t java_location(struct collector *c, struct profile *p, const struct entry *e,
			      uint64_t w0, uint64_t w1)
{
	struct java_frame f[JAVA_INLINE_MAX];
	struct profile_line lines[JAVA_INLINE_MAX];
	uint64_t pos = w1 & HEARTH_RT_POS_MASK, key_instr, h, mid, loc;
	unsigned type = HEARTH_JAVA_POS_TYPE(pos);
	struct py_loc key;
	size_t i;
	int n;

	/* Interpreted frames by bcp (the line), compiled ones by pc (the inlined
	 * methods there), stubs by the blob alone. */
	key_instr = type == HEARTH_JAVA_INTERP || type == HEARTH_JAVA_COMPILED
			? w1 & ~HEARTH_RT_FRAME_ENTRY
			: (w1 & ~HEARTH_RT_FRAME_ENTRY) & ~HEARTH_JAVA_ADDR_MASK;
	if (type == HEARTH_JAVA_UNKNOWN)
		w0 = 0;
	key = (struct py_loc){e->pid, w0, key_instr, 0};
	h = pyloc_hash(e->pid, w0, key_instr);
	i = base_hmap__find(&c->pyloc_idx, h, pyloc_eq, c, &key);
	c->stats.frames++;
	if (i != SIZE_MAX)
		return c->pylocs[i].loc;
	mid = profile__mapping(p, 0, 0, 0, "[java]", NULL);
	if (!mid)
		return 0;
	n = java_mgr__resolve(c->java, e->pid, e->pstart, w0, w1, f, JAVA_INLINE_MAX);
	if (n <= 0) {
		c->stats.unresolved++;
		snprintf(f[0].name, sizeof(f[0].name), "[java] unknown");
		f[0].file[0] = 0;
		f[0].line = 0;
		n = 1;
	}
	for (int k = 0; k < n; k++) {
		lines[k] = (struct profile_line){0};
		lines[k].function_id =
		    profile__function(p, f[k].name, f[k].name, f[k].file[0] ? f[k].file : NULL);
		if (!lines[k].function_id)
			return 0;
		lines[k].line = f[k].line;
	}
	loc = profile__location_exact(p, mid, w0, lines, (size_t)n);
	if (loc &&
	    !base_grow((void **)&c->pylocs, &c->cap_pylocs, c->n_pylocs + 1, sizeof(*c->pylocs)) &&
	    !base_hmap__insert(&c->pyloc_idx, h, c->n_pylocs)) {
		key.loc = loc;
		c->pylocs[c->n_pylocs++] = key;
	}
	return loc;
}

/* Whether the runtime frame at *py is a V8 one standing for the native frame
 * whose address (as recorded) is raw: the low 32 bits of its pc match. */
static bool v8_here(const struct entry *e, uint32_t py, uint64_t raw)
{
	uint64_t w1 = e->frames[e->n_kernel + e->n_user + 2 * py + 1];

	return HEARTH_RT_KIND(w1) == HEARTH_RT_V8 &&
	       HEARTH_V8_POS_PC(w1 & HEARTH_RT_POS_MASK) == (uint32_t)raw;
}

/* One evaluation loop's run of Python frames, from *py up to the first marked as
 * its outermost, into locs (leaf first). Count placed, or -ENOMEM. */
static int python_run(struct collector *c, struct profile *p, const struct entry *e, uint32_t *py,
		      uint64_t *locs)
{
	const uint64_t *w = e->frames + e->n_kernel + e->n_user;
	int n = 0;

	while (*py < e->n_py) {
		uint64_t code = w[2 * *py], instr = w[2 * *py + 1];

		(*py)++;
		if (HEARTH_RT_KIND(instr) == HEARTH_RT_RUBY)
			locs[n] = ruby_location(c, p, e, code, instr & HEARTH_RT_POS_MASK);
		else
			locs[n] = python_location(c, p, e, code, instr & HEARTH_PY_FRAME_INSTR);
		if (!locs[n++])
			return -ENOMEM;
		if (instr & HEARTH_PY_FRAME_ENTRY)
			break;
	}
	return n;
}

/* The name the process ran under when sampled, else what proc/ read, else the thread's. */
static const char *process_name(const struct entry *e, const struct proc_process *proc)
{
	if (e->pcomm[0])
		return e->pcomm;
	return proc && proc->comm && proc->comm[0] ? proc->comm : e->comm;
}

/* The location of a sample kind's pseudo-frame (offcpu.h), interned in p. */
static uint64_t reason_location(struct profile *p, uint16_t kind)
{
	const char *name = offcpu_kind_frame(kind);
	uint64_t m = profile__mapping(p, 0, 0, 0, OFFCPU_MAPPING, NULL);
	struct profile_line line = {.function_id = profile__function(p, name, name, NULL)};

	if (!name || !m || !line.function_id)
		return 0;
	return profile__location(p, m, offcpu_kind_addr(kind), &line, 1);
}

static int build_entry(struct collector *c, struct profile *p, const struct entry *e,
		       int64_t period_ns, uint64_t *locs)
{
	struct proc_process *proc = e->pid ? proc_table__lookup(c->pt, e->pid, e->pstart) : NULL;
	size_t n = 0;
	/* Counts and their time saturate (sample values never wrap). */
	int64_t n_samples = e->count > INT64_MAX ? INT64_MAX : (int64_t)e->count;
	int64_t values[PROFILE_N_VALUES] = {n_samples, base_sat_mul(n_samples, period_ns)};
	struct profile_label labels[5] = {
	    {.key = PROFILE_LABEL_PID, .num = e->pid},
	    {.key = PROFILE_LABEL_TID, .num = e->tid},
	    {.key = PROFILE_LABEL_COMM, .str = e->comm},
	    {.key = PROFILE_LABEL_PROCESS, .str = process_name(e, proc)},
	    {.key = OFFCPU_LABEL_REASON, .str = offcpu_kind_label(e->kind)},
	};
	size_t n_labels = labels[4].str ? 5 : 4;

	/* Runtime frames are of one kind per process: Python, V8, Java or Ruby;
	 * all dropped without their runtime's manager. */
	unsigned rt_kind = e->n_py ? HEARTH_RT_KIND(e->frames[e->n_kernel + e->n_user + 1]) : 0;
	bool java = e->n_py && rt_kind == HEARTH_RT_JAVA;
	bool ruby = e->n_py && rt_kind == HEARTH_RT_RUBY;
	/* next Python, V8 or Ruby frame to place */
	uint32_t py = (ruby ? c->rb != NULL : (c->py || c->v8) && !java) ? 0 : e->n_py;
	uint32_t jf = c->java && java ? 0 : e->n_py; /* next Java frame to place */
	const uint64_t *rt = e->frames + e->n_kernel + e->n_user;
	int got_rest;

	if (e->pid && !proc)
		c->stats.no_process = base_sat_addu(c->stats.no_process, e->count);
	if (c->type) /* one value, in both slots (profile.h): nanoseconds */
		values[1] = values[0];
	if (e->kind) { /* the leaf pseudo-frame: "[off-cpu: REASON]" or "[on-cpu]" */
		if (!(locs[n] = reason_location(p, e->kind)))
			return -ENOMEM;
		n++;
	}
	for (uint32_t i = 0; i < e->n_kernel; i++) {
		uint64_t addr = i ? e->frames[i] - 1 : e->frames[i];

		if (!(locs[n] = native_location(c, p, NULL, 0, 0, addr)))
			return -ENOMEM;
		n++;
	}
	for (uint32_t i = 0; i < e->n_user; i++) {
		uint64_t addr = e->frames[e->n_kernel + i];
		int got;

		if (i > 0 || e->n_kernel > 0)
			addr = addr ? addr - 1 : 0; /* a return address: see the file comment */
		/* A Java frame stands for each native frame in the code cache. */
		if (jf < e->n_py && java_mgr__in_code(c->java, e->pid, e->pstart, addr)) {
			if (!(locs[n] = java_location(c, p, e, rt[2 * jf], rt[2 * jf + 1])))
				return -ENOMEM;
			jf++;
			n++;
			continue;
		}
		if (c->v8 && py < e->n_py && v8_here(e, py, e->frames[e->n_kernel + i])) {
			if (!(locs[n] =
				  v8_location(c, p, e, e->frames[e->n_kernel + e->n_user + 2 * py],
					      e->frames[e->n_kernel + e->n_user + 2 * py + 1])))
				return -ENOMEM;
			n++;
			py++;
			continue;
		}
		if (py < e->n_py &&
		    (ruby ? ruby_mgr__is_vm(c->rb, e->pid, e->pstart, addr)
			  : c->py && python_mgr__is_eval(c->py, e->pid, e->pstart, addr))) {
			if ((got = python_run(c, p, e, &py, locs + n)) < 0)
				return got;
			n += (size_t)got;
			continue;
		}
		if (!(locs[n] = proc ? native_location(c, p, proc, e->pid, e->pstart, addr)
				     : user_location(c, p, proc, addr)))
			return -ENOMEM;
		n++;
	}
	/* Python frames left when the native walk stopped early: the callers. */
	while (py < e->n_py) {
		uint64_t w1 = e->frames[e->n_kernel + e->n_user + 2 * py + 1];

		if (HEARTH_RT_KIND(w1) == HEARTH_RT_V8 || (!ruby && !c->py)) {
			if (c->v8 && HEARTH_RT_KIND(w1) == HEARTH_RT_V8 &&
			    !(locs[n++] = v8_location(
				  c, p, e, e->frames[e->n_kernel + e->n_user + 2 * py], w1)))
				return -ENOMEM;
			py++;
			continue;
		}
		if ((got_rest = python_run(c, p, e, &py, locs + n)) < 0)
			return got_rest;
		n += (size_t)got_rest;
	}
	return profile__add_sample(p, locs, n, values, labels, n_labels);
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
	if (c->type && profile__set_type(p, c->type))
		goto fail;
	c->stats.frames = 0;
	c->stats.unresolved = 0;
	c->uloc_gen += 2; /* the cache's slots of older builds are stale (low bit: a flag) */
	if (!c->uloc_gen)
		c->uloc_gen = 2;
	for (size_t i = 0; i < c->n; i++)
		if ((size_t)c->entries[i].n_user + c->entries[i].n_kernel + c->entries[i].n_py >
		    max)
			max = (size_t)c->entries[i].n_user + c->entries[i].n_kernel +
			      c->entries[i].n_py;
	locs = malloc((max + 1) * sizeof(*locs)); /* + a reason pseudo-frame */
	if (!locs)
		goto fail;
	for (size_t i = 0; i < c->n; i++) {
		if (build_entry(c, p, &c->entries[i], period_ns, locs))
			goto fail;
	}
	free(locs);
	clear_entries(c);
	c->n_pylocs = 0; /* location ids belong to the profile just built */
	base_hmap__clear(&c->pyloc_idx);
	for (size_t i = 0; i < c->n_gone; i++) {
		symbolizer__forget_pid(c->sym, c->gone[i].pid);
		/* Not at exec: the manager forgot the old image then and describes
		 * the new one, which is still running. */
		if (c->py && c->gone[i].exited)
			python_mgr__forget(c->py, c->gone[i].pid, c->gone[i].pstart);
		if (c->v8 && c->gone[i].exited)
			v8_mgr__forget(c->v8, c->gone[i].pid, c->gone[i].pstart);
		if (c->java && c->gone[i].exited)
			java_mgr__forget(c->java, c->gone[i].pid, c->gone[i].pstart);
		if (c->rb && c->gone[i].exited)
			ruby_mgr__forget(c->rb, c->gone[i].pid, c->gone[i].pstart);
		if (c->gone[i].exited)
			proc_table__built(c->pt, c->gone[i].pid, c->gone[i].pstart);
	}
	c->n_gone = 0;
	return p;
fail:
	free(locs);
	c->n_pylocs = 0;
	base_hmap__clear(&c->pyloc_idx);
	profile__free(p);
	return NULL;
}

void collector__set_java(struct collector *c, struct java_mgr *java)
{
	c->java = java;
}

int collector__set_type(struct collector *c, const char *type)
{
	char *copy = NULL;

	if (type && !(copy = strdup(type)))
		return -ENOMEM;
	free(c->type);
	c->type = copy;
	return 0;
}

void collector__set_python(struct collector *c, struct python_mgr *py)
{
	c->py = py;
}

void collector__set_v8(struct collector *c, struct v8_mgr *v8)
{
	c->v8 = v8;
}

void collector__set_ruby(struct collector *c, struct ruby_mgr *rb)
{
	c->rb = rb;
}

void collector__stats(const struct collector *c, struct collect_stats *out)
{
	*out = c->stats;
	out->entries = c->n;
}
