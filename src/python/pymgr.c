/*
 * pymgr: the Python manager of python.h — which processes are CPython, what the BPF
 * walk is told of each (the `py_procs` map, this module its only writer), and the
 * names of the frames it records.
 *
 * A noted process is probed by work(), outside the lock (a probe reads /proc and an
 * ELF file: milliseconds). An interpreter that is not initialised yet, or a process
 * whose libraries are still being mapped (just exec'd), is probed again later: 10,
 * 50, 200 ms, 1 s, then every 5 s, for at most a minute. resolve() reads the code
 * object's header on every call (one process_vm_readv) to check the cached entry's
 * checksum, so a code object freed and another allocated at its address is noticed;
 * when the process is gone the cached entry is trusted. Bounded: PY_MGR_MAX_PROCS
 * processes, PY_CODE_CACHE_MAX cached code objects (the cache is emptied when full).
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "python/python_impl.h"

#define PY_MGR_MAX_PROCS  65536 /* queued or described, not Python ones are dropped */
#define PY_CODE_CACHE_MAX 8192
#define PY_RETRY_FOR_NS	  (60ull * 1000000000ull)
#define PY_LOADING_TRIES  3 /* a "not Python" verdict before libc is mapped, or a read
				      * that failed (-EIO) while loading, is retried */

enum py_state {
	PY_PENDING,   /* probe due at due_ns */
	PY_DESCRIBED, /* offsets known (published when published) */
};

struct py_proc {
	uint32_t pid;
	uint64_t pstart;
	enum py_state state;
	bool counted;	/* in st.processes (published, or described when procs_fd < 0) */
	bool published; /* in the BPF map */
	bool probing;
	bool gone;    /* exited or forgotten while being probed: dropped after the probe */
	bool exited;  /* its codes cannot be read again: evicted last, until forgotten */
	uint32_t gen; /* notes so far: a probe's result is for the note it started under */
	unsigned tries;
	int64_t first_ns, due_ns;
	/* valid when described: */
	uint64_t code_type, eval_start, eval_end; /* from the probe (struct py_target) */
	struct py_offsets off;
	struct hearth_py_proc desc;
};

struct py_code_entry {
	uint32_t pid;
	uint64_t code, checksum;
	struct py_code_info info; /* owns the line table */
	char name[PYTHON_NAME_MAX];
	uint64_t used; /* m->clock at the last use (the MEM_PYTHON evictor's recency) */
};

struct python_mgr {
	pthread_mutex_t lock;
	int procs_fd;
	struct py_proc *procs; /* owned; indexed by pid through proc_idx */
	size_t n_procs, cap_procs;
	struct base_hmap proc_idx;
	struct py_code_entry *codes; /* owned */
	size_t n_codes, cap_codes;
	struct base_hmap code_idx;
	struct python_mgr_stats st;
	uint64_t clock;	   /* uses of the code cache */
	size_t code_bytes; /* what the code cache holds, charged to MEM_PYTHON */
};

/* Heap held by one cached code object. */
static size_t code_entry_bytes(const struct py_code_entry *e)
{
	return sizeof(*e) + e->info.linetable_len;
}

static void code_charge(struct python_mgr *m, int64_t delta)
{
	m->code_bytes = (size_t)((int64_t)m->code_bytes + delta);
	mem_budget__charge(MEM_PYTHON, delta);
}

static uint64_t pid_hash(uint32_t pid)
{
	return base_hash_bytes(0, &pid, sizeof(pid));
}

static bool proc_eq(const void *ctx, size_t idx, const void *key)
{
	return ((const struct python_mgr *)ctx)->procs[idx].pid == *(const uint32_t *)key;
}

struct code_key {
	uint32_t pid;
	uint64_t code;
};

static uint64_t code_hash(uint32_t pid, uint64_t code)
{
	return base_hash_bytes(pid_hash(pid), &code, sizeof(code)); /* fields, not padding */
}

static bool code_eq(const void *ctx, size_t idx, const void *key)
{
	const struct py_code_entry *e = &((const struct python_mgr *)ctx)->codes[idx];
	const struct code_key *k = key;

	return e->pid == k->pid && e->code == k->code;
}

static struct py_proc *find_proc(const struct python_mgr *m, uint32_t pid)
{
	size_t i = base_hmap__find(&m->proc_idx, pid_hash(pid), proc_eq, m, &pid);

	return i == SIZE_MAX ? NULL : &m->procs[i];
}

/*
 * The MEM_PYTHON evictor: drops the least recently used half of the cached code
 * objects the reclaim's pass allows (by their last use), again until want bytes
 * are freed. A live process's codes (pass MEM_PASS_LIVE) are read again from it
 * at its next sample. An exited process's go last (MEM_PASS_ALL): they cannot be
 * read again, and its last samples are named from them at the build after its
 * exit (python_mgr__forget drops them then).
 */
static void drop_code(struct python_mgr *m, size_t i);

static bool code_evictable(const struct python_mgr *m, size_t i, enum mem_pass pass)
{
	const struct py_proc *p;

	if (pass >= MEM_PASS_ALL)
		return true;
	p = find_proc(m, m->codes[i].pid);
	return !p || (pass >= MEM_PASS_LIVE && !p->exited);
}

static uint64_t python_evict(void *ctx, uint64_t want)
{
	struct python_mgr *m = ctx;
	enum mem_pass pass = mem_budget__reclaim_pass();
	size_t before, n0;
	uint64_t freed;

	pthread_mutex_lock(&m->lock);
	before = m->code_bytes;
	n0 = m->n_codes;
	while (m->n_codes > 0 && before - m->code_bytes < want) {
		uint64_t lo = UINT64_MAX, mid;

		for (size_t i = 0; i < m->n_codes; i++)
			if (m->codes[i].used < lo && code_evictable(m, i, pass))
				lo = m->codes[i].used;
		if (lo == UINT64_MAX)
			break; /* none this pass may take */
		mid = lo + (m->clock - lo) / 2;
		for (size_t i = 0; i < m->n_codes;) {
			if (m->codes[i].used <= mid && code_evictable(m, i, pass))
				drop_code(m, i);
			else
				i++;
		}
	}
	freed = before - m->code_bytes;
	if (n0 > m->n_codes)
		mem_budget__evicted(MEM_PYTHON, n0 - m->n_codes, freed);
	pthread_mutex_unlock(&m->lock);
	return freed;
}

int python_mgr__new(int procs_fd, struct python_mgr **out)
{
	struct python_mgr *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return -ENOMEM;
	if (pthread_mutex_init(&m->lock, NULL)) {
		free(m);
		return -ENOMEM;
	}
	m->procs_fd = procs_fd;
	mem_budget__register_by_pass(MEM_PYTHON, 1, python_evict, m);
	*out = m;
	return 0;
}

static void clear_codes(struct python_mgr *m)
{
	for (size_t i = 0; i < m->n_codes; i++) {
		code_charge(m, -(int64_t)code_entry_bytes(&m->codes[i]));
		py_code_info__fini(&m->codes[i].info);
	}
	m->n_codes = 0;
	base_hmap__clear(&m->code_idx);
}

void python_mgr__free(struct python_mgr *m)
{
	if (!m)
		return;
	/* map entries stay: the map may be closed already, it goes with the sampler */
	mem_budget__unregister(python_evict, m);
	clear_codes(m);
	base_hmap__fini(&m->code_idx);
	base_hmap__fini(&m->proc_idx);
	free(m->codes);
	free(m->procs);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static void unpublish(struct python_mgr *m, struct py_proc *p)
{
	if (p->published)
		bpf_map_delete_elem(m->procs_fd, &p->pid);
	if (p->counted)
		m->st.processes--;
	p->published = p->counted = false;
}

/* Removes procs[i] (the last one takes its place). */
static void remove_proc(struct python_mgr *m, struct py_proc *p)
{
	size_t i = (size_t)(p - m->procs), last = m->n_procs - 1;

	unpublish(m, p);
	base_hmap__remove(&m->proc_idx, pid_hash(p->pid), i);
	if (i != last) {
		base_hmap__renumber(&m->proc_idx, pid_hash(m->procs[last].pid), last, i);
		m->procs[i] = m->procs[last];
	}
	m->n_procs--;
}

/* Drops codes[i] from the cache (the last entry takes its place). */
static void drop_code(struct python_mgr *m, size_t i)
{
	struct py_code_entry *e = &m->codes[i];
	size_t last = m->n_codes - 1;

	code_charge(m, -(int64_t)code_entry_bytes(e));
	py_code_info__fini(&e->info);
	base_hmap__remove(&m->code_idx, code_hash(e->pid, e->code), i);
	if (i != last) {
		base_hmap__renumber(&m->code_idx,
				    code_hash(m->codes[last].pid, m->codes[last].code), last, i);
		m->codes[i] = m->codes[last];
	}
	m->n_codes--;
}

/* Drops the cached code objects of pid (per-pid eviction: a linear pass). */
static void forget_codes(struct python_mgr *m, uint32_t pid)
{
	for (size_t i = 0; i < m->n_codes;) {
		if (m->codes[i].pid == pid)
			drop_code(m, i);
		else
			i++;
	}
}

/* (Re)starts what is known of pid: a new process, or a new image (exec). */
static void renote(struct python_mgr *m, uint32_t pid, uint64_t pstart, bool first_sight)
{
	struct py_proc *p;
	int64_t now = base_clock_ns(CLOCK_MONOTONIC);
	uint32_t gen = 0;
	bool probing = false;

	pthread_mutex_lock(&m->lock);
	p = find_proc(m, pid);
	/* Seen again, same process: a sample taken while it exits (after its exit
	 * event) announces it once more. What was learnt of it stays. */
	if (p && first_sight && pstart && p->pstart == pstart)
		goto cleanup;
	if (p) {
		gen = p->gen + 1;
		probing = p->probing;
		/* exec'd, or a new process under the pid: what was known is wrong now */
		unpublish(m, p);
		forget_codes(m, pid);
	} else {
		if (m->n_procs >= PY_MGR_MAX_PROCS ||
		    base_grow((void **)&m->procs, &m->cap_procs, m->n_procs + 1, sizeof(*m->procs)))
			goto cleanup;
		if (base_hmap__insert(&m->proc_idx, pid_hash(pid), m->n_procs))
			goto cleanup;
		p = &m->procs[m->n_procs++];
	}
	memset(p, 0, sizeof(*p));
	p->gen = gen;
	p->probing = probing; /* a probe under way belongs to the earlier note */
	p->pid = pid;
	p->pstart = pstart;
	p->state = PY_PENDING;
	p->first_ns = p->due_ns = now;
cleanup:
	pthread_mutex_unlock(&m->lock);
}

void python_mgr__note(struct python_mgr *m, uint32_t pid, uint64_t pstart)
{
	renote(m, pid, pstart, true);
}

void python_mgr__exec(struct python_mgr *m, uint32_t pid, uint64_t pstart)
{
	renote(m, pid, pstart, false);
}

void python_mgr__exit(struct python_mgr *m, uint32_t pid)
{
	struct py_proc *p;

	pthread_mutex_lock(&m->lock);
	p = find_proc(m, pid);
	if (p && p->probing)
		p->gone = true;
	else if (p && p->state == PY_PENDING)
		remove_proc(m, p);
	else if (p) {
		unpublish(m, p);
		p->exited = true;
	}
	pthread_mutex_unlock(&m->lock);
}

void python_mgr__forget(struct python_mgr *m, uint32_t pid, uint64_t pstart)
{
	struct py_proc *p;

	pthread_mutex_lock(&m->lock);
	p = find_proc(m, pid);
	if (p && pstart && p->pstart && p->pstart != pstart)
		goto cleanup; /* the pid names a newer process: its codes are its own */
	if (p && p->probing)
		p->gone = true;
	else if (p)
		remove_proc(m, p);
	forget_codes(m, pid);
cleanup:
	pthread_mutex_unlock(&m->lock);
}

/* The next delay of a probe that was not ready: 10, 50, 200 ms, 1 s, then 5 s. */
static int64_t retry_delay_ns(unsigned tries)
{
	static const int64_t ms[] = {10, 50, 200, 1000};

	return (tries <= 4 ? ms[tries - 1] : 5000) * 1000000;
}

/* The result of one probe, computed without the lock. */
struct py_probe_result {
	int err;
	struct py_target target;
	struct py_offsets off;
	struct hearth_py_proc desc;
};

static void probe(uint32_t pid, uint64_t pstart, struct py_probe_result *r)
{
	r->err = py_probe_target(pid, &r->target);
	if (!r->err)
		r->err = py_offsets_from_process(&r->target, &r->off);
	if (!r->err)
		r->err = py_describe(&r->target, &r->off, pstart, &r->desc);
}

/* Stores a probe's result for p (under the lock). */
static void settle(struct python_mgr *m, struct py_proc *p, struct py_probe_result *r, int64_t now)
{
	bool retry = false;

	m->st.probed++;
	if (r->err == -PYTHON_E_NOT_READY) {
		m->st.not_ready++;
		retry = true;
	} else if (r->err == -PYTHON_E_NOT_PYTHON && p->tries < PY_LOADING_TRIES) {
		retry = r->target.loading; /* an early verdict: ld.so was still at work */
	} else if (r->err == -EIO && p->tries < PY_LOADING_TRIES) {
		/* a read outside what is mapped: right after an exec, ld.so may have
		 * mapped libpython's first segments but not yet its data and bss */
		retry = true;
	} else if (r->err == -PYTHON_E_UNSUPPORTED || r->err == -PYTHON_E_TSS_KEY ||
		   r->err == -EPROTO) {
		/* CPython that cannot be walked: a version without offsets, a key in
		 * glibc's second level, a member table or debug offsets that make no sense */
		m->st.unsupported++;
	}
	if (r->err && retry && now - p->first_ns < (int64_t)PY_RETRY_FOR_NS) {
		p->tries++;
		p->due_ns = now + retry_delay_ns(p->tries);
		return;
	}
	if (r->err) {
		remove_proc(m, p); /* not Python, unsupported, gone: nothing to keep */
		return;
	}
	p->state = PY_DESCRIBED;
	p->code_type = r->target.code_type;
	p->eval_start = r->target.eval_start;
	p->eval_end = r->target.eval_end;
	p->off = r->off;
	p->desc = r->desc;
	if (m->procs_fd >= 0)
		p->published = bpf_map_update_elem(m->procs_fd, &p->pid, &p->desc, BPF_ANY) == 0;
	/* with no map (tests) a description is kept here only */
	p->counted = m->procs_fd < 0 || p->published;
	m->st.processes += p->counted;
}

/* The pending process due first (and due by now), NULL when none. */
static struct py_proc *next_due(struct python_mgr *m, int64_t now)
{
	struct py_proc *best = NULL;

	for (size_t i = 0; i < m->n_procs; i++) {
		struct py_proc *p = &m->procs[i];

		if (p->state == PY_PENDING && !p->probing && p->due_ns <= now &&
		    (!best || p->due_ns < best->due_ns))
			best = p;
	}
	return best;
}

int python_mgr__work(struct python_mgr *m, int budget_ms)
{
	int64_t start = base_clock_ns(CLOCK_MONOTONIC), now = start;
	int done = 0;
	struct py_probe_result *r = NULL; /* allocated once something is due */

	pthread_mutex_lock(&m->lock);
	while (now - start <= (int64_t)budget_ms * 1000000) {
		struct py_proc *p = next_due(m, now);
		uint32_t pid, gen;
		uint64_t pstart;

		if (!p)
			break;
		if (!r && !(r = malloc(sizeof(*r)))) {
			done = -ENOMEM;
			break;
		}
		pid = p->pid;
		pstart = p->pstart;
		gen = p->gen;
		p->probing = true;
		pthread_mutex_unlock(&m->lock);
		probe(pid, pstart, r);
		pthread_mutex_lock(&m->lock);
		now = base_clock_ns(CLOCK_MONOTONIC);
		done++;
		p = find_proc(m, pid);
		if (!p)
			continue;
		p->probing = false;
		if (p->gone)
			remove_proc(m, p); /* exited while it was probed */
		else if (p->gen == gen && p->state == PY_PENDING)
			settle(m, p, r, now);
		/* else noted again meanwhile (exec): that note's probe is due */
	}
	pthread_mutex_unlock(&m->lock);
	free(r);
	return done;
}

int python_mgr__next_due_ms(const struct python_mgr *m)
{
	struct python_mgr *mm = (struct python_mgr *)m; /* the lock only */
	int64_t now = base_clock_ns(CLOCK_MONOTONIC), due = -1;

	pthread_mutex_lock(&mm->lock);
	for (size_t i = 0; i < m->n_procs; i++) {
		const struct py_proc *p = &m->procs[i];

		if (p->state == PY_PENDING && (due < 0 || p->due_ns < due))
			due = p->due_ns;
	}
	pthread_mutex_unlock(&mm->lock);
	if (due < 0)
		return -1;
	return due <= now ? 0 : (int)((due - now + 999999) / 1000000);
}

static struct py_proc *described(struct python_mgr *m, uint32_t pid, uint64_t pstart)
{
	struct py_proc *p = find_proc(m, pid);

	if (!p || p->state != PY_DESCRIBED || (pstart && p->pstart && p->pstart != pstart))
		return NULL;
	return p;
}

static void fill_frame(const struct py_proc *p, const struct py_code_entry *e, uint64_t instr,
		       struct python_frame *out)
{
	snprintf(out->name, sizeof(out->name), "%s", e->name);
	snprintf(out->file, sizeof(out->file), "%s", e->info.file);
	out->line = py_code_line(&p->off, &e->info, e->code, instr);
}

/* Reads and caches the code object (the lock held). 0, -ENOMEM, or -EIO when it
 * cannot be read (counted). */
static int cache_code(struct python_mgr *m, const struct py_proc *p, uint64_t code,
		      struct py_code_entry **out)
{
	struct py_code_entry e = {.pid = p->pid, .code = code};
	int err;

	err = py_read_code(p->pid, &p->off, p->code_type, code, &e.info);
	if (err)
		goto failed;
	py_frame_name(e.info.file, e.info.qualname, e.name, sizeof(e.name));
	if (m->n_codes >= PY_CODE_CACHE_MAX)
		clear_codes(m); /* bounded: start again rather than track recency */
	err = base_grow((void **)&m->codes, &m->cap_codes, m->n_codes + 1, sizeof(*m->codes));
	if (!err)
		err = base_hmap__insert(&m->code_idx, code_hash(p->pid, code), m->n_codes);
	if (err) {
		py_code_info__fini(&e.info);
		goto failed;
	}
	e.checksum = e.info.checksum;
	e.used = ++m->clock;
	code_charge(m, (int64_t)code_entry_bytes(&e));
	m->codes[m->n_codes] = e;
	*out = &m->codes[m->n_codes++];
	m->st.code_cached++;
	return 0;
failed:
	m->st.code_failed++;
	return err == -ENOMEM ? err : -EIO;
}

int python_mgr__resolve(struct python_mgr *m, uint32_t pid, uint64_t pstart, uint64_t code,
			uint64_t instr, struct python_frame *out)
{
	struct code_key key = {pid, code};
	struct py_code_entry *e = NULL;
	struct py_proc *p;
	size_t i;
	int err = 0;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&m->lock);
	p = described(m, pid, pstart);
	if (!p) {
		err = -ENOENT;
		goto cleanup;
	}
	i = base_hmap__find(&m->code_idx, code_hash(pid, code), code_eq, m, &key);
	if (i != SIZE_MAX) {
		uint64_t sum;

		/* unreadable now (exited): trust what was read while it ran */
		if (py_code_checksum(pid, &p->off, code, &sum) || sum == m->codes[i].checksum) {
			e = &m->codes[i];
			e->used = ++m->clock;
		}
		else
			drop_code(m, i);
	}
	if (!e && (err = cache_code(m, p, code, &e)))
		goto cleanup;
	fill_frame(p, e, instr & HEARTH_PY_FRAME_INSTR, out);
cleanup:
	pthread_mutex_unlock(&m->lock);
	return err;
}

int python_mgr__warm(struct python_mgr *m, uint32_t pid, uint64_t pstart, uint64_t code)
{
	struct code_key key = {pid, code};
	struct py_code_entry *e = NULL;
	struct py_proc *p;
	int err = 0;

	pthread_mutex_lock(&m->lock);
	p = described(m, pid, pstart);
	if (!p) {
		err = -ENOENT;
		goto cleanup;
	}
	if (base_hmap__find(&m->code_idx, code_hash(pid, code), code_eq, m, &key) != SIZE_MAX)
		goto cleanup; /* resolve checks it is still the same code object */
	err = cache_code(m, p, code, &e);
cleanup:
	pthread_mutex_unlock(&m->lock);
	return err;
}

bool python_mgr__is_eval(struct python_mgr *m, uint32_t pid, uint64_t pstart, uint64_t pc)
{
	struct py_proc *p;
	bool yes;

	pthread_mutex_lock(&m->lock);
	p = described(m, pid, pstart);
	yes = p && pc >= p->eval_start && pc < p->eval_end;
	pthread_mutex_unlock(&m->lock);
	return yes;
}

void python_mgr__stats(struct python_mgr *m, struct python_mgr_stats *out)
{
	pthread_mutex_lock(&m->lock);
	*out = m->st;
	pthread_mutex_unlock(&m->lock);
}

const char *python_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case PYTHON_E_NOT_PYTHON:
		return "not a CPython process (no libpython3.X, no exported _PyRuntime)";
	case PYTHON_E_UNSUPPORTED:
		return "a CPython version hearth has no offsets for (3.10-3.13 are supported)";
	case PYTHON_E_NOT_READY:
		return "the interpreter is not initialised yet";
	case PYTHON_E_TSS_KEY:
		return "the interpreter's thread-state key is beyond glibc's first 32";
	default:
		return strerror(err < 0 ? -err : err);
	}
}
