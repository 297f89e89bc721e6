/*
 * rbmgr: the Ruby manager of ruby.h — which processes are CRuby, what the BPF walk
 * is told of each (the `rb_procs` map, this module its only writer), and the names
 * of the frames it records.
 *
 * A noted process is probed by work(), outside the lock. A libruby not relocated
 * yet, or a process whose libraries are still being mapped, is probed again later
 * (5 ms, doubling to 1 s, then every 5 s, for at most a minute).
 *
 * Names: an iseq is read once per (pid, iseq) while the process lives (warm, when a
 * new stack is added) and cached with a checksum of its header (flags, body
 * pointer, the body's iseq_encoded and label). resolve() reads the header again
 * (one process_vm_readv) and compares: an iseq collected and another object put at
 * its address is noticed and the frame counted unknown, never misnamed; when the
 * process is gone the cached entry is trusted. The cache charges MEM_RUBY and its
 * evictor frees the least recently used entries.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "ruby/ruby_impl.h"

#define RB_MGR_MAX_PROCS  65536
#define RB_ISEQ_CACHE_MAX 16384
#define RB_RETRY_FOR_NS	  (60ull * 1000000000ull)
#define RB_LOADING_TRIES  6	     /* 5 + 10 + 20 + 40 + 80 ms for ld.so to map libc */
#define RB_MAX_ENTRIES	  (1u << 20) /* insns_info entries of one iseq, at most */
#define RB_MAX_ISEQ_SIZE  (1u << 24)
/* A ruby whose class ids were not found yet is looked at again at most this often. */
#define RB_IDS_RETRY_NS (50ull * 1000000ull)

enum rb_state { RB_PENDING, RB_DESCRIBED };

struct rb_proc {
	uint32_t pid;
	uint64_t pstart;
	enum rb_state state;
	bool counted, published, probing, gone;
	uint32_t gen;
	unsigned tries;
	int64_t first_ns, due_ns;
	struct rb_target t;
	struct rb_offsets off;
	uint64_t classpath_id; /* the ID of a class's __classpath__ ivar, 0 if unknown */
	uint64_t attached_id;  /* a singleton class's __attached__, 0 if unknown */
	int64_t ids_tried_ns;  /* when they were last looked for (ids_again) */
	struct hearth_rb_proc desc;
};

struct rb_iseq_entry {
	uint32_t pid;
	uint64_t iseq, checksum, encoded, last_use;
	uint32_t iseq_size;
	int64_t first_line;
	int32_t *lines; /* line_no of each insns_info entry (n_lines) */
	uint8_t *succ;	/* the succinct index table (succ_len bytes) */
	size_t n_lines, succ_len, bytes;
	/* the method's iseq: the entry's own (a method entry), or the one a block
	 * is in (0: none), for "block in Class#method" */
	uint64_t method_iseq;
	bool is_cme, is_block;
	bool unqualified; /* a method entry named while the class ids were unknown */
	char name[RUBY_NAME_MAX];
	char file[RUBY_FILE_MAX];
};

struct ruby_mgr {
	pthread_mutex_t lock;
	int procs_fd;
	struct rb_proc *procs;
	size_t n_procs, cap_procs;
	struct base_hmap proc_idx;
	struct rb_iseq_entry *iseqs;
	size_t n_iseqs, cap_iseqs;
	struct base_hmap iseq_idx;
	uint64_t use_clock;
	bool registered;
	struct ruby_mgr_stats st;
};

static uint64_t pid_hash(uint32_t pid)
{
	return base_hash_bytes(0, &pid, sizeof(pid));
}

static bool proc_eq(const void *ctx, size_t idx, const void *key)
{
	return ((const struct ruby_mgr *)ctx)->procs[idx].pid == *(const uint32_t *)key;
}

struct iseq_key {
	uint32_t pid;
	uint64_t iseq;
};

static uint64_t iseq_hash(uint32_t pid, uint64_t iseq)
{
	return base_hash_bytes(pid_hash(pid), &iseq, sizeof(iseq));
}

static bool iseq_eq(const void *ctx, size_t idx, const void *key)
{
	const struct rb_iseq_entry *e = &((const struct ruby_mgr *)ctx)->iseqs[idx];
	const struct iseq_key *k = key;

	return e->pid == k->pid && e->iseq == k->iseq;
}

static struct rb_proc *find_proc(const struct ruby_mgr *m, uint32_t pid)
{
	size_t i = base_hmap__find(&m->proc_idx, pid_hash(pid), proc_eq, m, &pid);

	return i == SIZE_MAX ? NULL : &m->procs[i];
}

static uint64_t evict(void *ctx, uint64_t want);

int ruby_mgr__new(int procs_fd, struct ruby_mgr **out)
{
	struct ruby_mgr *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return -ENOMEM;
	if (pthread_mutex_init(&m->lock, NULL)) {
		free(m);
		return -ENOMEM;
	}
	m->procs_fd = procs_fd;
	m->registered = mem_budget__register(MEM_RUBY, 1, evict, m) == 0;
	*out = m;
	return 0;
}

/* Drops iseqs[i] (the last entry takes its place); the lock held. */
static void drop_iseq(struct ruby_mgr *m, size_t i)
{
	struct rb_iseq_entry *e = &m->iseqs[i];
	size_t last = m->n_iseqs - 1;

	mem_budget__charge(MEM_RUBY, -(int64_t)e->bytes);
	free(e->lines);
	free(e->succ);
	base_hmap__remove(&m->iseq_idx, iseq_hash(e->pid, e->iseq), i);
	if (i != last) {
		base_hmap__renumber(&m->iseq_idx,
				    iseq_hash(m->iseqs[last].pid, m->iseqs[last].iseq), last, i);
		m->iseqs[i] = m->iseqs[last];
	}
	m->n_iseqs--;
}

static void clear_iseqs(struct ruby_mgr *m)
{
	while (m->n_iseqs)
		drop_iseq(m, m->n_iseqs - 1);
}

void ruby_mgr__free(struct ruby_mgr *m)
{
	if (!m)
		return;
	if (m->registered)
		mem_budget__unregister(evict, m);
	clear_iseqs(m);
	base_hmap__fini(&m->iseq_idx);
	base_hmap__fini(&m->proc_idx);
	free(m->iseqs);
	free(m->procs);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* The evictor: least recently used iseqs first, until want bytes are freed. */
static uint64_t evict(void *ctx, uint64_t want)
{
	struct ruby_mgr *m = ctx;
	uint64_t freed = 0, n = 0;

	pthread_mutex_lock(&m->lock);
	while (freed < want && m->n_iseqs) {
		size_t old = 0;

		/* a pass per entry: the cache is small (RB_ISEQ_CACHE_MAX), eviction rare */
		for (size_t i = 1; i < m->n_iseqs; i++)
			if (m->iseqs[i].last_use < m->iseqs[old].last_use)
				old = i;
		freed += m->iseqs[old].bytes;
		n++;
		drop_iseq(m, old);
	}
	m->st.evicted += n;
	pthread_mutex_unlock(&m->lock);
	if (n)
		mem_budget__evicted(MEM_RUBY, n, freed);
	return freed;
}

static void unpublish(struct ruby_mgr *m, struct rb_proc *p)
{
	if (p->published)
		bpf_map_delete_elem(m->procs_fd, &p->pid);
	if (p->counted)
		m->st.processes--;
	p->published = p->counted = false;
}

static void forget_iseqs(struct ruby_mgr *m, uint32_t pid)
{
	for (size_t i = 0; i < m->n_iseqs;) {
		if (m->iseqs[i].pid == pid)
			drop_iseq(m, i);
		else
			i++;
	}
}

static void remove_proc(struct ruby_mgr *m, struct rb_proc *p)
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

static void renote(struct ruby_mgr *m, uint32_t pid, uint64_t pstart, bool first_sight)
{
	struct rb_proc *p;
	int64_t now = base_clock_ns(CLOCK_MONOTONIC);
	uint32_t gen = 0;
	bool probing = false;

	pthread_mutex_lock(&m->lock);
	p = find_proc(m, pid);
	if (p && first_sight && pstart && p->pstart == pstart)
		goto cleanup;
	if (p) {
		gen = p->gen + 1;
		probing = p->probing;
		unpublish(m, p);
		forget_iseqs(m, pid);
	} else {
		if (m->n_procs >= RB_MGR_MAX_PROCS ||
		    base_grow((void **)&m->procs, &m->cap_procs, m->n_procs + 1, sizeof(*m->procs)))
			goto cleanup;
		if (base_hmap__insert(&m->proc_idx, pid_hash(pid), m->n_procs))
			goto cleanup;
		p = &m->procs[m->n_procs++];
	}
	memset(p, 0, sizeof(*p));
	p->gen = gen;
	p->probing = probing;
	p->pid = pid;
	p->pstart = pstart;
	p->state = RB_PENDING;
	p->first_ns = p->due_ns = now;
cleanup:
	pthread_mutex_unlock(&m->lock);
}

void ruby_mgr__note(struct ruby_mgr *m, uint32_t pid, uint64_t pstart)
{
	renote(m, pid, pstart, true);
}

void ruby_mgr__exec(struct ruby_mgr *m, uint32_t pid, uint64_t pstart)
{
	renote(m, pid, pstart, false);
}

void ruby_mgr__exit(struct ruby_mgr *m, uint32_t pid)
{
	struct rb_proc *p;

	pthread_mutex_lock(&m->lock);
	p = find_proc(m, pid);
	if (p && p->probing)
		p->gone = true;
	else if (p && p->state == RB_PENDING)
		remove_proc(m, p);
	else if (p)
		unpublish(m, p);
	pthread_mutex_unlock(&m->lock);
}

void ruby_mgr__forget(struct ruby_mgr *m, uint32_t pid, uint64_t pstart)
{
	struct rb_proc *p;

	pthread_mutex_lock(&m->lock);
	p = find_proc(m, pid);
	if (p && pstart && p->pstart && p->pstart != pstart)
		goto cleanup;
	if (p && p->probing)
		p->gone = true;
	else if (p)
		remove_proc(m, p);
	forget_iseqs(m, pid);
cleanup:
	pthread_mutex_unlock(&m->lock);
}

/* The next delay of a probe that was not ready: doubling from 5 ms to 1 s, then
 * 5 s. A process is noted at its exec, before ld.so has mapped and relocated
 * libruby (about 10-20 ms later): a fine start keeps its first samples named. */
static int64_t retry_delay_ns(unsigned tries)
{
	static const int64_t ms[] = {5, 10, 20, 40, 80, 160, 320, 1000};
	const unsigned n = sizeof(ms) / sizeof(ms[0]);

	return (tries <= n ? ms[tries - 1] : 5000) * 1000000;
}

struct rb_probe_result {
	int err;
	struct rb_target t;
	struct rb_offsets off;
	uint64_t classpath_id, attached_id;
};

static int read_string(uint32_t pid, uint64_t v, char *out, size_t len);

#define RB_MAX_IVARS 256 /* a class's ivar entries looked at, at most */

/* The ivar table entries of class klass: {hash, key, record} triples into ents
 * (RB_MAX_IVARS at most). Number read, or -EIO. */
static int class_ivars(uint32_t pid, const struct rb_offsets *o, uint64_t klass, uint64_t ents[][3])
{
	uint64_t ext, tbl, w[7], start, bound;

	if (!klass || (klass & 7) || rb_read(pid, klass + o->klass_ext, &ext, 8) || !ext ||
	    rb_read(pid, ext + o->ext_iv_tbl, &tbl, 8))
		return -EIO;
	if (!tbl)
		return 0;
	if (rb_read(pid, tbl, w, sizeof(w)))
		return -EIO;
	start = w[o->st_entries_start / 8];
	bound = w[o->st_entries_bound / 8];
	if (bound < start || bound > RB_MAX_IVARS || !w[o->st_entries / 8])
		return -EIO;
	if (bound == start)
		return 0;
	if (rb_read(pid, w[o->st_entries / 8] + start * 24, ents, (bound - start) * 24))
		return -EIO;
	return (int)(bound - start);
}

/* The value of klass's ivar id (0: none). 0 or -EIO/-ENOMEM. */
static int class_ivar(uint32_t pid, const struct rb_offsets *o, uint64_t klass, uint64_t id,
		      uint64_t *value)
{
	uint64_t(*ents)[3];
	int n;

	*value = 0;
	if (!id)
		return -EIO;
	ents = malloc(sizeof(uint64_t[RB_MAX_IVARS][3]));
	if (!ents)
		return -ENOMEM;
	n = class_ivars(pid, o, klass, ents);
	for (int i = 0; i < n; i++)
		if (ents[i][1] == id) {
			*value = ents[i][2];
			break;
		}
	free(ents);
	return n < 0 ? n : 0;
}

/* The IDs under which classes keep their path (the key of Object's ivar whose
 * value is the String "Object"; rb_cObject is exported) and a singleton class
 * its object (the key of Object's metaclass's ivar whose value is Object).
 * 0 for one not found. */
static void find_ids(uint32_t pid, const struct rb_offsets *o, uint64_t object_var,
		     uint64_t *classpath_id, uint64_t *attached_id)
{
	uint64_t(*ents)[3], klass, meta;
	char s[16];
	int n;

	*classpath_id = *attached_id = 0;
	if (!object_var || rb_read(pid, object_var, &klass, 8) || !klass || (klass & 7))
		return;
	ents = malloc(sizeof(uint64_t[RB_MAX_IVARS][3]));
	if (!ents)
		return;
	n = class_ivars(pid, o, klass, ents);
	for (int i = 0; i < n && !*classpath_id; i++)
		if (!read_string(pid, ents[i][2], s, sizeof(s)) && strcmp(s, "Object") == 0)
			*classpath_id = ents[i][1];
	/* RBasic.klass of Object: its metaclass, attached to Object */
	if (!rb_read(pid, klass + 8, &meta, 8)) {
		n = class_ivars(pid, o, meta, ents);
		for (int i = 0; i < n && !*attached_id; i++)
			if (ents[i][2] == klass)
				*attached_id = ents[i][1];
	}
	free(ents);
}

/* The path of class (or module) klass ("Worker", "M::K"), from its classpath
 * ivar. 0, or -EIO when it has none (anonymous) or it is unreadable. */
static int class_path(uint32_t pid, const struct rb_offsets *o, uint64_t id, uint64_t klass,
		      char *out, size_t len)
{
	uint64_t v;

	out[0] = 0;
	if (class_ivar(pid, o, klass, id, &v) || !v)
		return -EIO;
	return read_string(pid, v, out, len);
}

#define RB_FL_SINGLETON (1ull << 12) /* FL_USER0 */
#define RB_T_CLASS	0x02
#define RB_T_MODULE	0x03

/* How a method of owner is named: "Worker" and "#" for an instance method,
 * "Worker" and "." for a method of Worker's singleton class. 0 or -EIO (an
 * anonymous class, the singleton of an object that is no class). */
static int owner_name(uint32_t pid, const struct rb_offsets *o, uint64_t classpath_id,
		      uint64_t attached_id, uint64_t owner, char *out, size_t len, char *sep)
{
	uint64_t flags, attached;

	*sep = '#';
	if (!owner || (owner & 7) || rb_read(pid, owner, &flags, 8))
		return -EIO;
	if ((flags & 0x1f) == RB_T_CLASS && (flags & RB_FL_SINGLETON)) {
		if (class_ivar(pid, o, owner, attached_id, &attached) || !attached ||
		    (attached & 7) || rb_read(pid, attached, &flags, 8) ||
		    ((flags & 0x1f) != RB_T_CLASS && (flags & 0x1f) != RB_T_MODULE))
			return -EIO;
		*sep = '.';
		owner = attached;
	}
	return class_path(pid, o, classpath_id, owner, out, len);
}

static void probe(uint32_t pid, struct rb_probe_result *r)
{
	r->classpath_id = r->attached_id = 0;
	r->err = rb_probe_target(pid, &r->t);
	if (!r->err)
		r->err = rb_offsets_for_version(r->t.version, &r->off);
	if (!r->err)
		find_ids(pid, &r->off, r->t.object_var, &r->classpath_id, &r->attached_id);
}

static void describe(struct rb_proc *p)
{
	const struct rb_offsets *o = &p->off;
	struct hearth_rb_proc *d = &p->desc;

	memset(d, 0, sizeof(*d));
	d->pstart = p->pstart;
	d->tls_modid = p->t.tls_modid;
	d->tls_offset = p->t.tls_offset;
	d->version = p->t.version;
	d->dtv_off = 8;	    /* tcbhead_t: tcb, dtv, self... (glibc, x86-64) */
	d->dtv_stride = 16; /* dtv_t: {void *val; void *to_free;} */
	d->ec_vm_stack = o->ec_vm_stack;
	d->ec_vm_stack_size = o->ec_vm_stack_size;
	d->ec_cfp = o->ec_cfp;
	d->cfp_size = o->cfp_size;
	d->cfp_pc = o->cfp_pc;
	d->cfp_iseq = o->cfp_iseq;
	d->cfp_ep = o->cfp_ep;
}

static void settle(struct ruby_mgr *m, struct rb_proc *p, struct rb_probe_result *r, int64_t now)
{
	bool retry = false;

	m->st.probed++;
	if (r->err == -RUBY_E_NOT_READY) {
		m->st.not_ready++;
		retry = true;
	} else if (r->err == -RUBY_E_NOT_RUBY && p->tries < RB_LOADING_TRIES) {
		retry = r->t.loading;
	} else if (r->err == -EIO && p->tries < RB_LOADING_TRIES) {
		retry = true;
	} else if (r->err == -RUBY_E_UNSUPPORTED) {
		m->st.unsupported++;
	}
	if (r->err && retry && now - p->first_ns < (int64_t)RB_RETRY_FOR_NS) {
		p->tries++;
		p->due_ns = now + retry_delay_ns(p->tries);
		return;
	}
	if (r->err) {
		remove_proc(m, p);
		return;
	}
	p->state = RB_DESCRIBED;
	p->t = r->t;
	p->off = r->off;
	p->classpath_id = r->classpath_id;
	p->attached_id = r->attached_id;
	p->ids_tried_ns = now;
	describe(p);
	if (m->procs_fd >= 0)
		p->published = bpf_map_update_elem(m->procs_fd, &p->pid, &p->desc, BPF_ANY) == 0;
	p->counted = m->procs_fd < 0 || p->published;
	m->st.processes += p->counted;
}

static struct rb_proc *next_due(struct ruby_mgr *m, int64_t now)
{
	struct rb_proc *best = NULL;

	for (size_t i = 0; i < m->n_procs; i++) {
		struct rb_proc *p = &m->procs[i];

		if (p->state == RB_PENDING && !p->probing && p->due_ns <= now &&
		    (!best || p->due_ns < best->due_ns))
			best = p;
	}
	return best;
}

int ruby_mgr__work(struct ruby_mgr *m, int budget_ms)
{
	int64_t start = base_clock_ns(CLOCK_MONOTONIC), now = start;
	int done = 0;
	struct rb_probe_result *r = NULL;

	pthread_mutex_lock(&m->lock);
	while (now - start <= (int64_t)budget_ms * 1000000) {
		struct rb_proc *p = next_due(m, now);
		uint32_t pid, gen;

		if (!p)
			break;
		if (!r && !(r = malloc(sizeof(*r)))) {
			done = -ENOMEM;
			break;
		}
		pid = p->pid;
		gen = p->gen;
		p->probing = true;
		pthread_mutex_unlock(&m->lock);
		probe(pid, r);
		pthread_mutex_lock(&m->lock);
		now = base_clock_ns(CLOCK_MONOTONIC);
		done++;
		p = find_proc(m, pid);
		if (!p)
			continue;
		p->probing = false;
		if (p->gone)
			remove_proc(m, p);
		else if (p->gen == gen && p->state == RB_PENDING)
			settle(m, p, r, now);
	}
	pthread_mutex_unlock(&m->lock);
	free(r);
	return done;
}

int ruby_mgr__next_due_ms(const struct ruby_mgr *m)
{
	struct ruby_mgr *mm = (struct ruby_mgr *)m;
	int64_t now = base_clock_ns(CLOCK_MONOTONIC), due = -1;

	pthread_mutex_lock(&mm->lock);
	for (size_t i = 0; i < m->n_procs; i++) {
		const struct rb_proc *p = &m->procs[i];

		if (p->state == RB_PENDING && (due < 0 || p->due_ns < due))
			due = p->due_ns;
	}
	pthread_mutex_unlock(&mm->lock);
	if (due < 0)
		return -1;
	return due <= now ? 0 : (int)((due - now + 999999) / 1000000);
}

static struct rb_proc *described(struct ruby_mgr *m, uint32_t pid, uint64_t pstart)
{
	struct rb_proc *p = find_proc(m, pid);

	if (!p || p->state != RB_DESCRIBED || (pstart && p->pstart && p->pstart != pstart))
		return NULL;
	return p;
}

bool ruby_mgr__is_vm(struct ruby_mgr *m, uint32_t pid, uint64_t pstart, uint64_t pc)
{
	struct rb_proc *p;
	bool in;

	pthread_mutex_lock(&m->lock);
	p = described(m, pid, pstart);
	in = p && p->t.vm_start && pc >= p->t.vm_start && pc < p->t.vm_end;
	pthread_mutex_unlock(&m->lock);
	return in;
}

/* The header words an iseq is recognised by: flags, body, the body's iseq_encoded
 * and label. 0 or -EIO (unreadable, or not an iseq). */
static int iseq_header(uint32_t pid, const struct rb_offsets *o, uint64_t iseq, uint64_t *body,
		       uint64_t *encoded, uint64_t *sum)
{
	uint64_t w[3], label;
	int err;

	err = rb_read(pid, iseq, w, sizeof(w));
	if (err)
		return err;
	/* T_IMEMO (0x1a) of imemo type iseq (7) */
	if ((w[0] & 0x1f) != 0x1a || ((w[0] >> 12) & 0xf) != 7 || !w[2])
		return -EIO;
	*body = w[o->iseq_body / 8];
	if (rb_read(pid, *body + o->body_iseq_encoded, encoded, 8) ||
	    rb_read(pid, *body + o->body_label, &label, 8))
		return -EIO;
	*sum = base_hash_u64(
	    base_hash_u64(base_hash_u64(base_hash_u64(BASE_HASH_SEED, w[0]), *body), *encoded),
	    label);
	return 0;
}

/* A method entry (rb_callable_method_entry_t of an iseq method): its iseq and
 * owner, and the checksum of the words read. 0 or -EIO. */
static int cme_header(uint32_t pid, const struct rb_offsets *o, uint64_t cme, uint64_t *iseq,
		      uint64_t *owner, uint64_t *sum)
{
	uint64_t w[5], d[2];
	int err;

	err = rb_read(pid, cme, w, sizeof(w));
	if (err)
		return err;
	/* T_IMEMO of imemo type ment (6) */
	if ((w[0] & 0x1f) != 0x1a || ((w[0] >> 12) & 0xf) != 6 || !w[o->me_def / 8])
		return -EIO;
	if (rb_read(pid, w[o->me_def / 8], d, sizeof(d)))
		return -EIO;
	if ((d[0] & 0xf) != 0) /* VM_METHOD_TYPE_ISEQ */
		return -EIO;
	*iseq = d[o->def_iseq / 8];
	*owner = w[o->me_owner / 8];
	*sum = base_hash_u64(base_hash_u64(base_hash_u64(BASE_HASH_SEED, w[0]), *iseq), *owner);
	return 0;
}

/* The header of what a frame recorded (an iseq, or a method entry when is_cme):
 * its iseq, body, iseq_encoded, the method's owner (0 for an iseq) and one
 * checksum. 0 or -errno. */
static int frame_header(uint32_t pid, const struct rb_offsets *o, uint64_t word0, bool is_cme,
			uint64_t *iseq, uint64_t *body, uint64_t *encoded, uint64_t *owner,
			uint64_t *sum)
{
	uint64_t s1 = 0, s2;
	int err;

	*iseq = word0;
	*owner = 0;
	if (is_cme && (err = cme_header(pid, o, word0, iseq, owner, &s1)))
		return err;
	if ((err = iseq_header(pid, o, *iseq, body, encoded, &s2)))
		return err;
	*sum = base_hash_u64(s2, s1);
	return 0;
}

/* A String VALUE's bytes into out. 0 or -EIO. */
static int read_string(uint32_t pid, uint64_t v, char *out, size_t len)
{
	uint8_t obj[40];
	uint64_t heap;
	long n;

	out[0] = 0;
	if (!v || (v & 7) || rb_read(pid, v, obj, sizeof(obj)))
		return -EIO;
	n = rb_decode_string(obj, sizeof(obj), out, len, &heap);
	if (n < 0)
		return -EIO;
	if (heap) {
		size_t k = (size_t)n < len - 1 ? (size_t)n : len - 1;

		if (rb_read(pid, heap, out, k))
			return -EIO;
		out[k] = 0;
		if (memchr(out, 0, k))
			out[strlen(out)] = 0; /* an embedded NUL ends the name */
	}
	return 0;
}

/* pathobj: a String, or an Array [path, realpath]. */
static int read_path(uint32_t pid, uint64_t v, char *out, size_t len)
{
	uint8_t obj[40];
	uint64_t first, at;

	if (!v || (v & 7) || rb_read(pid, v, obj, sizeof(obj)))
		return -EIO;
	if (rb_decode_array_first(obj, sizeof(obj), &first, &at) == 0) {
		if (at && rb_read(pid, at, &first, sizeof(first)))
			return -EIO;
		v = first;
	}
	return read_string(pid, v, out, len);
}

#define RB_ISEQ_METHOD 1
#define RB_ISEQ_BLOCK  2
#define RB_MAX_NESTING 16

/* For a block's iseq (body), the method iseq it is in (its parents up to the
 * first that is no block), when that is a method. */
static void block_method(uint32_t pid, const struct rb_offsets *o, uint64_t body,
			 struct rb_iseq_entry *e)
{
	uint32_t type;
	uint64_t parent;

	if (rb_read(pid, body + o->body_type, &type, 4) || type != RB_ISEQ_BLOCK)
		return;
	e->is_block = true;
	for (int depth = 0; depth < RB_MAX_NESTING; depth++) {
		if (rb_read(pid, body + o->body_parent_iseq, &parent, 8) || !parent ||
		    (parent & 7) || rb_read(pid, parent + o->iseq_body, &body, 8) ||
		    rb_read(pid, body + o->body_type, &type, 4))
			return;
		if (type == RB_ISEQ_METHOD) {
			e->method_iseq = parent;
			return;
		}
		if (type != RB_ISEQ_BLOCK)
			return;
	}
}

/* A block's name with its method's class: "block in m" -> "block in M::K#m",
 * when a method entry of this process for that method is cached (the method's
 * frame, under the block's, was). Else its label. The lock held. */
static void block_name(struct ruby_mgr *m, const struct rb_iseq_entry *e, char *out, size_t len)
{
	const char *in = NULL, *p, *meth;

	snprintf(out, len, "%s", e->name);
	for (p = strstr(e->name, " in "); p; p = strstr(p + 1, " in "))
		in = p;
	if (!in)
		return;
	for (size_t i = 0; i < m->n_iseqs; i++) {
		const struct rb_iseq_entry *f = &m->iseqs[i];

		if (f->pid != e->pid || !f->is_cme || f->method_iseq != e->method_iseq)
			continue;
		meth = strrchr(f->name, '#');
		if (!meth || strrchr(f->name, '.') > meth)
			meth = strrchr(f->name, '.');
		if (meth && strcmp(meth + 1, in + 4) == 0) {
			size_t pre = (size_t)(in - e->name), nl = strlen(f->name);

			if (pre + 4 + nl < len) {
				memcpy(out, e->name, pre);
				memcpy(out + pre, " in ", 4);
				memcpy(out + pre + 4, f->name, nl + 1);
			}
		}
		return;
	}
}

/*
 * Looks for the class ids again when the probe found none (the lock held): a ruby
 * probed during its boot, before Object's classpath was set, would name its methods
 * without their class ("outer", not "Worker#outer") for as long as it runs. At most
 * every RB_IDS_RETRY_NS; a process that exited keeps what it had.
 */
static void ids_again(struct rb_proc *p)
{
	int64_t now;

	if (p->classpath_id)
		return;
	now = base_clock_ns(CLOCK_MONOTONIC);
	if (now - p->ids_tried_ns < (int64_t)RB_IDS_RETRY_NS)
		return;
	p->ids_tried_ns = now;
	find_ids(p->pid, &p->off, p->t.object_var, &p->classpath_id, &p->attached_id);
}

/* e, a method entry named without its class while the ids were unknown, is dropped
 * once they are known (to be named again). Returns whether it was. */
static bool stale_unqualified(struct ruby_mgr *m, struct rb_proc *p, struct rb_iseq_entry *e)
{
	if (!e->unqualified)
		return false;
	ids_again(p);
	if (!p->classpath_id)
		return false;
	drop_iseq(m, (size_t)(e - m->iseqs));
	return true;
}

/* Reads and caches what a frame recorded (the lock held): word0 is an iseq, or
 * the method entry of an iseq method when is_cme (named "Class#label"). */
static int cache_iseq(struct ruby_mgr *m, struct rb_proc *p, uint64_t word0, bool is_cme,
		      struct rb_iseq_entry **out)
{
	const struct rb_offsets *o = &p->off;
	struct rb_iseq_entry e = {.pid = p->pid, .iseq = word0};
	uint64_t iseq, owner, body, w[4], ib = 0, succ = 0, flno;
	uint32_t isz = 0, n = 0;
	char label[RUBY_NAME_MAX / 2], klass[RUBY_NAME_MAX / 2 - 1], sep = '#'; /* fit the name */
	int err;

	err = frame_header(p->pid, o, word0, is_cme, &iseq, &body, &e.encoded, &owner, &e.checksum);
	if (err)
		goto failed;
	err = -EIO;
	if (rb_read(p->pid, body + o->body_pathobj, w, sizeof(w)) ||
	    rb_read(p->pid, body + o->body_iseq_size, &isz, 4) ||
	    rb_read(p->pid, body + o->body_insns_body, &ib, 8) ||
	    rb_read(p->pid, body + o->body_insns_size, &n, 4) ||
	    rb_read(p->pid, body + o->body_succ_table, &succ, 8))
		goto failed;
	/* w: pathobj, base_label, label, first_lineno (a Fixnum) */
	if (read_string(p->pid, w[(o->body_label - o->body_pathobj) / 8], label, sizeof(label)))
		goto failed;
	if (is_cme)
		ids_again(p);
	e.unqualified = is_cme && !p->classpath_id;
	if (is_cme &&
	    !owner_name(p->pid, o, p->classpath_id, p->attached_id, owner, klass, sizeof(klass),
			&sep) &&
	    klass[0])
		snprintf(e.name, sizeof(e.name), "%s%c%s", klass, sep, label);
	else
		snprintf(e.name, sizeof(e.name), "%s", label);
	read_path(p->pid, w[0], e.file, sizeof(e.file));
	flno = w[(o->body_first_lineno - o->body_pathobj) / 8];
	e.first_line = (flno & 1) ? (int64_t)flno >> 1 : 0;
	e.iseq_size = isz;
	e.is_cme = is_cme;
	if (is_cme)
		e.method_iseq = iseq;
	else
		block_method(p->pid, o, body, &e);
	if (n && n <= RB_MAX_ENTRIES && isz <= RB_MAX_ISEQ_SIZE && ib && (n == 1 || succ)) {
		size_t tl = n == 1 ? 0 : rb_succ_table_size(isz);
		uint8_t *raw = malloc((size_t)n * o->insn_entry_size);

		e.lines = malloc((size_t)n * sizeof(*e.lines));
		e.succ = tl ? malloc(tl) : NULL;
		if (raw && e.lines && (!tl || e.succ) &&
		    (size_t)n * o->insn_entry_size <= RB_READ_MAX && tl <= RB_READ_MAX &&
		    !rb_read(p->pid, ib, raw, (size_t)n * o->insn_entry_size) &&
		    (!tl || !rb_read(p->pid, succ, e.succ, tl))) {
			for (uint32_t i = 0; i < n; i++)
				memcpy(&e.lines[i], raw + (size_t)i * o->insn_entry_size, 4);
			e.n_lines = n;
			e.succ_len = tl;
		} else {
			free(e.lines);
			free(e.succ);
			e.lines = NULL;
			e.succ = NULL;
		}
		free(raw);
	}
	e.bytes = sizeof(e) + e.n_lines * sizeof(*e.lines) + e.succ_len;
	if (m->n_iseqs >= RB_ISEQ_CACHE_MAX)
		clear_iseqs(m);
	err = base_grow((void **)&m->iseqs, &m->cap_iseqs, m->n_iseqs + 1, sizeof(*m->iseqs));
	if (!err)
		err = base_hmap__insert(&m->iseq_idx, iseq_hash(e.pid, word0), m->n_iseqs);
	if (err) {
		free(e.lines);
		free(e.succ);
		return err;
	}
	e.last_use = ++m->use_clock;
	m->iseqs[m->n_iseqs] = e;
	*out = &m->iseqs[m->n_iseqs++];
	mem_budget__charge(MEM_RUBY, (int64_t)e.bytes);
	m->st.iseq_cached++;
	return 0;
failed:
	m->st.iseq_failed++;
	return -EIO;
}

static struct rb_iseq_entry *cached(struct ruby_mgr *m, uint32_t pid, uint64_t iseq)
{
	struct iseq_key k = {pid, iseq};
	size_t i = base_hmap__find(&m->iseq_idx, iseq_hash(pid, iseq), iseq_eq, m, &k);

	return i == SIZE_MAX ? NULL : &m->iseqs[i];
}

int ruby_mgr__warm(struct ruby_mgr *m, uint32_t pid, uint64_t pstart, uint64_t word0, uint64_t pos)
{
	struct rb_proc *p;
	struct rb_iseq_entry *e;
	int err = 0;

	pthread_mutex_lock(&m->lock);
	p = described(m, pid, pstart);
	if (!p)
		err = -ENOENT;
	else if (!(e = cached(m, pid, word0)) || stale_unqualified(m, p, e))
		err = cache_iseq(m, p, word0, (pos & HEARTH_RB_POS_CME) != 0, &e);
	pthread_mutex_unlock(&m->lock);
	return err;
}

/* Whether pc lies in the entry's instructions (pc points past the current one,
 * so the end is included). */
static bool pc_inside(const struct rb_iseq_entry *e, uint64_t pc)
{
	return pc >= e->encoded && (pc - e->encoded) / 8 <= e->iseq_size;
}

/* The line of pc in e (vm_core's calc_pos: pc points past the current
 * instruction, so the one before it), first_line when unknown. */
static int64_t iseq_line(const struct rb_iseq_entry *e, uint64_t pc)
{
	uint64_t pos;
	long idx;

	if (!e->n_lines || !pc_inside(e, pc))
		return e->first_line;
	pos = (pc - e->encoded) / 8;
	if (pos > 0)
		pos--;
	if (pos >= e->iseq_size)
		return e->first_line;
	idx = rb_succ_entry(e->succ, e->succ_len, e->n_lines, (uint32_t)pos);
	if (idx < 0 || (size_t)idx >= e->n_lines || e->lines[idx] <= 0)
		return e->first_line;
	return e->lines[idx];
}

int ruby_mgr__resolve(struct ruby_mgr *m, uint32_t pid, uint64_t pstart, uint64_t word0,
		      uint64_t pos, struct ruby_frame *out)
{
	struct rb_proc *p;
	struct rb_iseq_entry *e;
	uint64_t iseq, body, enc, owner, sum, pc = pos & ~HEARTH_RB_POS_CME;
	bool is_cme = (pos & HEARTH_RB_POS_CME) != 0;
	int err;

	pthread_mutex_lock(&m->lock);
	err = -ENOENT;
	p = described(m, pid, pstart);
	if (!p)
		goto cleanup;
	e = cached(m, pid, word0);
	if (e) {
		/* still the same object? (gone: trusted as it was) */
		err = frame_header(pid, &p->off, word0, is_cme, &iseq, &body, &enc, &owner, &sum);
		if ((err == 0 && sum != e->checksum) || (err && err != -ESRCH)) {
			drop_iseq(m, (size_t)(e - m->iseqs));
			e = NULL;
		} else if (stale_unqualified(m, p, e)) {
			e = NULL;
		}
	}
	err = 0;
	if (!e)
		err = cache_iseq(m, p, word0, is_cme, &e);
	if (err)
		goto cleanup;
	/* a method entry names the frame only when the pc is in its iseq */
	if (is_cme && !pc_inside(e, pc)) {
		m->st.iseq_failed++;
		err = -EIO;
		goto cleanup;
	}
	e->last_use = ++m->use_clock;
	if (e->is_block && e->method_iseq)
		block_name(m, e, out->name, sizeof(out->name));
	else
		snprintf(out->name, sizeof(out->name), "%s", e->name);
	snprintf(out->file, sizeof(out->file), "%s", e->file);
	out->line = iseq_line(e, pc);
cleanup:
	pthread_mutex_unlock(&m->lock);
	return err;
}

void ruby_mgr__stats(struct ruby_mgr *m, struct ruby_mgr_stats *out)
{
	pthread_mutex_lock(&m->lock);
	*out = m->st;
	pthread_mutex_unlock(&m->lock);
}
