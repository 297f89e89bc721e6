/*
 * v8mgr: the V8 manager of v8.h — which processes are node, what the BPF walk is
 * told of each (the `v8_procs` map, this module its only writer), and the names
 * of the frames it records.
 *
 * A noted process is probed by work(): /proc/PID/exe is mapped and its v8dbg_*
 * symbols read (v8meta.c); the verdict is kept per executable (device, inode,
 * mtime), so a host running many processes of one binary parses it once.
 *
 * Names: a SharedFunctionInfo (SFI) gives the function's name and its Script
 * (name, source); the function's start position comes from its ScopeInfo's
 * position info (or its UncompiledData), and line:col from the Script's line
 * ends (or, when V8 has not computed them, from the source text). Cached per
 * (pid, SFI) with the two SFI words the name came from; every resolve re-reads
 * the SFI's header and its map's instance type, so an SFI moved by the GC or
 * collected (another object at its address) gives a counted unknown frame, never
 * another function's name. When the process is gone the cache is trusted.
 * Charged to MEM_NODE, with an evictor dropping the least recently used names.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "v8/v8.h"

#define V8_MAX_PROCS	 4096
#define V8_EXE_CACHE	 64
#define V8_CACHE_MAX	 65536
#define V8_STR_MAX	 (V8_NAME_MAX - 1)
#define V8_SOURCE_MAX	 (32u << 20) /* a script's source read to count lines */
#define V8_LINE_ENDS_MAX (4u << 20)
#define V8_SCOPE_WORDS	 64

enum v8_state { V8_PENDING, V8_DESCRIBED };

struct v8_proc {
	uint32_t pid;
	uint64_t pstart;
	enum v8_state state;
	bool published;
	bool exited;
	struct v8_meta meta;
};

struct v8_exe {
	dev_t dev;
	ino_t ino;
	int64_t mtime;
	int verdict; /* v8_meta_parse's */
	struct v8_meta meta;
};

struct v8_name {
	uint32_t pid;
	uint64_t sfi;
	uint64_t w_name, w_script; /* the SFI words the name was read from */
	uint64_t used;		   /* tick of the last resolve */
	char *name;		   /* "function file:line:col", owned */
	size_t bytes;		   /* charged */
};

struct v8_mgr {
	pthread_mutex_t lock;
	int procs_fd;
	struct v8_proc *procs;
	size_t n_procs, cap_procs;
	struct v8_exe exes[V8_EXE_CACHE];
	size_t n_exes, next_exe;
	struct v8_name *names;
	size_t n_names, cap_names;
	struct base_hmap name_idx;
	uint64_t tick;
	int64_t charged;
	struct v8_mgr_stats st;
};

static uint64_t name_hash(uint32_t pid, uint64_t sfi)
{
	return base_hash_u64(base_hash_u64(BASE_HASH_SEED, pid), sfi);
}

struct name_key {
	uint32_t pid;
	uint64_t sfi;
};

static bool name_eq(const void *ctx, size_t idx, const void *key)
{
	const struct v8_name *e = &((const struct v8_mgr *)ctx)->names[idx];
	const struct name_key *k = key;

	return e->pid == k->pid && e->sfi == k->sfi;
}

static void charge(struct v8_mgr *m, int64_t delta)
{
	m->charged += delta;
	mem_budget__charge(MEM_NODE, delta);
}

/* Drops names[i] (the last entry takes its place). */
static void drop_name(struct v8_mgr *m, size_t i)
{
	struct v8_name *e = &m->names[i];
	size_t last = m->n_names - 1;

	charge(m, -(int64_t)e->bytes);
	free(e->name);
	base_hmap__remove(&m->name_idx, name_hash(e->pid, e->sfi), i);
	if (i != last) {
		base_hmap__renumber(&m->name_idx, name_hash(m->names[last].pid, m->names[last].sfi),
				    last, i);
		m->names[i] = m->names[last];
	}
	m->n_names--;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Frees the least recently used names until want bytes are freed (or none is
 * left): the entries used before the tick that frees enough. Lock held. */
static uint64_t evict_locked(struct v8_mgr *m, uint64_t want)
{
	uint64_t *ticks, freed = 0, n = 0, cut;
	size_t acc = 0, k;

	if (!m->n_names || !want)
		return 0;
	ticks = malloc(m->n_names * sizeof(*ticks));
	if (!ticks) { /* cannot choose: drop everything */
		cut = UINT64_MAX;
	} else {
		for (size_t i = 0; i < m->n_names; i++)
			ticks[i] = m->names[i].used;
		qsort(ticks, m->n_names, sizeof(*ticks), cmp_u64);
		/* bytes are similar per entry: cut at the share of entries wanted */
		for (k = 0; k < m->n_names && acc < want; k++)
			acc += (size_t)(m->charged / (int64_t)m->n_names);
		cut = ticks[k ? k - 1 : 0];
		free(ticks);
	}
	for (size_t i = 0; i < m->n_names;) {
		if (m->names[i].used <= cut) {
			freed += m->names[i].bytes;
			n++;
			drop_name(m, i);
		} else {
			i++;
		}
	}
	if (n)
		mem_budget__evicted(MEM_NODE, n, freed);
	m->st.evicted += n;
	return freed;
}

static uint64_t evictor(void *ctx, uint64_t want)
{
	struct v8_mgr *m = ctx;
	uint64_t freed;

	pthread_mutex_lock(&m->lock);
	freed = evict_locked(m, want);
	pthread_mutex_unlock(&m->lock);
	return freed;
}

int v8_mgr__new(int procs_fd, struct v8_mgr **out)
{
	struct v8_mgr *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return -ENOMEM;
	if (pthread_mutex_init(&m->lock, NULL)) {
		free(m);
		return -ENOMEM;
	}
	m->procs_fd = procs_fd;
	if (mem_budget__register(MEM_NODE, 1, evictor, m)) {
		pthread_mutex_destroy(&m->lock);
		free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

void v8_mgr__free(struct v8_mgr *m)
{
	if (!m)
		return;
	mem_budget__unregister(evictor, m);
	while (m->n_names)
		drop_name(m, m->n_names - 1);
	base_hmap__fini(&m->name_idx);
	free(m->names);
	free(m->procs);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static struct v8_proc *find_proc(struct v8_mgr *m, uint32_t pid)
{
	for (size_t i = 0; i < m->n_procs; i++)
		if (m->procs[i].pid == pid)
			return &m->procs[i];
	return NULL;
}

static void unpublish(struct v8_mgr *m, struct v8_proc *p)
{
	if (p->published) {
		if (m->procs_fd >= 0)
			bpf_map_delete_elem(m->procs_fd, &p->pid);
		m->st.processes--;
	}
	p->published = false;
}

static void remove_proc(struct v8_mgr *m, struct v8_proc *p)
{
	size_t i = (size_t)(p - m->procs);

	unpublish(m, p);
	m->procs[i] = m->procs[--m->n_procs];
}

static void forget_names(struct v8_mgr *m, uint32_t pid)
{
	for (size_t i = 0; i < m->n_names;) {
		if (m->names[i].pid == pid)
			drop_name(m, i);
		else
			i++;
	}
}

void v8_mgr__note(struct v8_mgr *m, uint32_t pid, uint64_t pstart)
{
	struct v8_proc *p;

	pthread_mutex_lock(&m->lock);
	p = find_proc(m, pid);
	if (p && p->pstart == pstart)
		goto out;
	if (p) { /* pid reuse */
		forget_names(m, pid);
		remove_proc(m, p);
	}
	if (m->n_procs < V8_MAX_PROCS &&
	    !base_grow((void **)&m->procs, &m->cap_procs, m->n_procs + 1, sizeof(*m->procs)))
		m->procs[m->n_procs++] = (struct v8_proc){.pid = pid, .pstart = pstart};
out:
	pthread_mutex_unlock(&m->lock);
}

void v8_mgr__exec(struct v8_mgr *m, uint32_t pid, uint64_t pstart)
{
	struct v8_proc *p;

	pthread_mutex_lock(&m->lock);
	p = find_proc(m, pid);
	if (p) {
		forget_names(m, pid);
		remove_proc(m, p);
	}
	pthread_mutex_unlock(&m->lock);
	v8_mgr__note(m, pid, pstart);
}

void v8_mgr__exit(struct v8_mgr *m, uint32_t pid)
{
	struct v8_proc *p;

	pthread_mutex_lock(&m->lock);
	p = find_proc(m, pid);
	if (p && p->state == V8_PENDING)
		remove_proc(m, p);
	else if (p) {
		unpublish(m, p);
		p->exited = true; /* names stay until forget: samples still to name */
	}
	pthread_mutex_unlock(&m->lock);
}

void v8_mgr__forget(struct v8_mgr *m, uint32_t pid, uint64_t pstart)
{
	struct v8_proc *p;

	pthread_mutex_lock(&m->lock);
	p = find_proc(m, pid);
	if (p && (!pstart || p->pstart == pstart) && (p->exited || !pstart)) {
		forget_names(m, pid);
		remove_proc(m, p);
	}
	pthread_mutex_unlock(&m->lock);
}

/* The verdict on pid's executable, from the cache or by parsing it. */
static int probe_exe(struct v8_mgr *m, uint32_t pid, struct v8_meta *meta)
{
	char path[64];
	struct stat sb;
	struct base_guard g;
	struct v8_exe *e;
	volatile int vret = -EIO;
	void *img;
	int fd, ret;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_size < 64) {
		close(fd);
		return -ENOENT;
	}
	for (size_t i = 0; i < m->n_exes; i++) {
		e = &m->exes[i];
		if (e->dev == sb.st_dev && e->ino == sb.st_ino && e->mtime == sb.st_mtim.tv_sec) {
			close(fd);
			*meta = e->meta;
			return e->verdict;
		}
	}
	if (!base_guard_ready()) {
		close(fd);
		return -ENOTSUP;
	}
	img = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (img == MAP_FAILED)
		return -errno;
	/* under a guard: a file truncated in place meanwhile raises SIGBUS in the
	 * parse (src/base/busguard.c), which then fails instead of the agent */
	base_guard_push(&g);
	if (sigsetjmp(g.jb, 0) == 0)
		vret = v8_meta_parse(img, (size_t)sb.st_size, meta);
	base_guard_pop(&g);
	ret = g.faulted ? -EIO : vret;
	munmap(img, (size_t)sb.st_size);
	e = &m->exes[m->next_exe];
	m->next_exe = (m->next_exe + 1) % V8_EXE_CACHE;
	if (m->n_exes < V8_EXE_CACHE)
		m->n_exes++;
	*e = (struct v8_exe){sb.st_dev, sb.st_ino, sb.st_mtim.tv_sec, ret, *meta};
	return ret;
}

int v8_mgr__work(struct v8_mgr *m, int budget_ms)
{
	int64_t end = base_clock_ns(CLOCK_MONOTONIC) + (int64_t)budget_ms * 1000000;
	int done = 0;

	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n_procs;) {
		struct v8_proc *p = &m->procs[i];
		struct hearth_v8_proc desc;
		int ret;

		if (p->state != V8_PENDING) {
			i++;
			continue;
		}
		if (base_clock_ns(CLOCK_MONOTONIC) > end)
			break;
		ret = probe_exe(m, p->pid, &p->meta);
		m->st.probed++;
		done++;
		if (ret) {
			if (ret == -ENOTSUP)
				m->st.unsupported++;
			remove_proc(m, p); /* not node (or gone): nothing to walk */
			continue;
		}
		p->state = V8_DESCRIBED;
		v8_meta_describe(&p->meta, p->pstart, &desc);
		if (m->procs_fd < 0 || !bpf_map_update_elem(m->procs_fd, &p->pid, &desc, BPF_ANY)) {
			p->published = true;
			m->st.processes++;
		}
		i++;
	}
	pthread_mutex_unlock(&m->lock);
	return done;
}

int v8_mgr__next_due_ms(const struct v8_mgr *m)
{
	int due = -1;

	pthread_mutex_lock((pthread_mutex_t *)&m->lock);
	for (size_t i = 0; i < m->n_procs; i++)
		if (m->procs[i].state == V8_PENDING)
			due = 0;
	pthread_mutex_unlock((pthread_mutex_t *)&m->lock);
	return due;
}

/* ---- reading the heap ---- */

static int rd(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	ssize_t n;

	if (!len)
		return 0;
	n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return errno == EFAULT ? -EIO : -errno;
	return (size_t)n == len ? 0 : -EIO;
}

struct reader {
	uint32_t pid;
	const struct v8_meta *mt;
};

static bool is_heap(const struct reader *r, uint64_t v)
{
	return (v & (uint64_t)r->mt->heap_tag_mask) == (uint64_t)r->mt->heap_tag;
}

static int rd_field(const struct reader *r, uint64_t obj, int32_t off, uint64_t *out)
{
	if (!is_heap(r, obj) || off < 0)
		return -EINVAL;
	return rd(r->pid, obj - (uint64_t)r->mt->heap_tag + (uint64_t)off, out, sizeof(*out));
}

/* The instance type of a heap object, or -1. */
static int obj_type(const struct reader *r, uint64_t obj)
{
	uint64_t map;
	uint16_t t;

	if (rd_field(r, obj, r->mt->heap_map, &map) || !is_heap(r, map) ||
	    rd(r->pid, map - (uint64_t)r->mt->heap_tag + (uint64_t)r->mt->map_instance_type, &t,
	       sizeof(t)))
		return -1;
	return t;
}

static bool is_smi(const struct reader *r, uint64_t v)
{
	return (v & (uint64_t)r->mt->smi_tag_mask) == 0;
}

static int64_t smi(const struct reader *r, uint64_t v)
{
	return (int64_t)v >> (r->mt->smi_shift_size + 1);
}

/* Appends up to len-1-*at characters of string obj to out (UTF-16 outside ASCII
 * becomes '?'). Cons and thin strings are followed (depth-bounded). */
static int read_string(const struct reader *r, uint64_t obj, char *out, size_t len, size_t *at,
		       int depth)
{
	const struct v8_meta *mt = r->mt;
	int type = obj_type(r, obj), repr;
	int32_t n;
	uint64_t a, b;

	if (type < 0 || type >= mt->first_nonstring_type || depth > 8)
		return -EINVAL;
	if (rd(r->pid, obj - (uint64_t)mt->heap_tag + (uint64_t)mt->string_length, &n, sizeof(n)) ||
	    n < 0)
		return -EIO;
	repr = type & mt->string_repr_mask;
	if (repr == mt->seq_tag) {
		bool one = (type & mt->string_enc_mask) == mt->one_byte_tag;
		size_t room = len - 1 - *at, take = (size_t)n < room ? (size_t)n : room;
		uint64_t base = obj - (uint64_t)mt->heap_tag +
				(uint64_t)(one ? mt->seq_one_chars : mt->seq_two_chars);

		if (one) {
			if (rd(r->pid, base, out + *at, take))
				return -EIO;
		} else {
			uint16_t u[128];

			for (size_t k = 0; k < take;) {
				size_t c = take - k < 128 ? take - k : 128;

				if (rd(r->pid, base + 2 * k, u, 2 * c))
					return -EIO;
				for (size_t j = 0; j < c; j++)
					out[*at + k + j] = u[j] < 0x80 ? (char)u[j] : '?';
				k += c;
			}
		}
		for (size_t k = 0; k < take; k++)
			if ((unsigned char)out[*at + k] < 0x20)
				out[*at + k] = '?';
		*at += take;
		out[*at] = 0;
		return 0;
	}
	if (repr == mt->cons_tag && mt->cons_first && mt->cons_second) {
		if (rd_field(r, obj, mt->cons_first, &a) || rd_field(r, obj, mt->cons_second, &b))
			return -EIO;
		if (read_string(r, a, out, len, at, depth + 1))
			return -EIO;
		return read_string(r, b, out, len, at, depth + 1);
	}
	if (repr == mt->thin_tag && mt->thin_actual) {
		if (rd_field(r, obj, mt->thin_actual, &a))
			return -EIO;
		return read_string(r, a, out, len, at, depth + 1);
	}
	return -ENOTSUP; /* external and sliced strings: not named */
}

static int string(const struct reader *r, uint64_t obj, char *out, size_t len)
{
	size_t at = 0;

	out[0] = 0;
	return read_string(r, obj, out, len, &at, 0);
}

/*
 * A function's name and start position from its ScopeInfo. The layout (V8 11,
 * scope-info.tq): map, flags, parameter count, context local count n, n local
 * names (one hashtable word when n > 75), n local infos, an optional saved class
 * variable, the function variable info (name: String, slot: Smi), the inferred
 * name (String or undefined) and the position info (start, end: Smis). Each step
 * is checked (a String where a name goes, Smis where positions go).
 */
static int scope_info(const struct reader *r, uint64_t si, char *name, size_t len, int64_t *start)
{
	uint64_t w[V8_SCOPE_WORDS];
	int64_t n;
	size_t j, k;

	*start = -1;
	name[0] = 0;
	if (rd(r->pid, si - (uint64_t)r->mt->heap_tag, w, sizeof(w)))
		return -EIO;
	if (!is_smi(r, w[3]))
		return -EINVAL;
	n = smi(r, w[3]);
	if (n < 0 || n > 100000)
		return -EINVAL;
	j = 4 + (n < 75 ? 2 * (size_t)n : 1 + (size_t)n);
	if (j + 6 > V8_SCOPE_WORDS)
		return -ENOTSUP; /* many locals: past what is read */
	/* the function variable's name, after an optional saved class variable */
	if (!(is_heap(r, w[j]) && is_smi(r, w[j + 1])) && is_heap(r, w[j + 1]) &&
	    is_smi(r, w[j + 2]))
		j++;
	if (is_heap(r, w[j]) && obj_type(r, w[j]) >= 0 &&
	    obj_type(r, w[j]) < r->mt->first_nonstring_type)
		string(r, w[j], name, len);
	k = j + 2;
	if (!is_smi(r, w[k]))
		k++; /* the inferred name */
	if (is_smi(r, w[k]) && is_smi(r, w[k + 1]) && smi(r, w[k]) >= 0 &&
	    smi(r, w[k]) <= smi(r, w[k + 1]))
		*start = smi(r, w[k]);
	return 0;
}

/* line (1-based) and column (1-based) of a source position, from the Script's
 * line ends (a FixedArray of Smis) or by counting newlines in its source. */
static int line_col(const struct reader *r, uint64_t script, int64_t pos, int64_t *line,
		    int64_t *col)
{
	const struct v8_meta *mt = r->mt;
	uint64_t ends, src, lenw;

	*line = *col = 0;
	if (pos < 0)
		return -EINVAL;
	if (mt->script_line_ends && !rd_field(r, script, mt->script_line_ends, &ends) &&
	    obj_type(r, ends) == mt->type_fixed_array && mt->type_fixed_array &&
	    !rd_field(r, ends, mt->fixed_array_length, &lenw) && is_smi(r, lenw)) {
		/* binary search over the Smis: the first line end >= pos */
		int64_t lo = 0, hi = smi(r, lenw), prev_end = -1;

		if (hi < 0 || hi > V8_LINE_ENDS_MAX)
			return -EINVAL;
		while (lo < hi) {
			int64_t mid = lo + (hi - lo) / 2;
			uint64_t v;

			if (rd(r->pid,
			       ends - (uint64_t)mt->heap_tag + (uint64_t)mt->fixed_array_data +
				   8 * (uint64_t)mid,
			       &v, sizeof(v)))
				return -EIO;
			if (smi(r, v) < pos)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo > 0) {
			uint64_t v;

			if (rd(r->pid,
			       ends - (uint64_t)mt->heap_tag + (uint64_t)mt->fixed_array_data +
				   8 * (uint64_t)(lo - 1),
			       &v, sizeof(v)))
				return -EIO;
			prev_end = smi(r, v);
		}
		*line = lo + 1;
		*col = pos - prev_end;
		return 0;
	}
	/* No line ends yet: count in the source (one-byte sequential sources only). */
	if (!mt->script_source || rd_field(r, script, mt->script_source, &src))
		return -EIO;
	{
		int type = obj_type(r, src);
		int32_t slen;
		char *buf;
		int64_t l = 1, last_nl = -1;

		if (type < 0 || type >= mt->first_nonstring_type ||
		    (type & mt->string_repr_mask) != mt->seq_tag ||
		    (type & mt->string_enc_mask) != mt->one_byte_tag)
			return -ENOTSUP;
		if (rd(r->pid, src - (uint64_t)mt->heap_tag + (uint64_t)mt->string_length, &slen,
		       sizeof(slen)) ||
		    slen < 0 || pos > slen || (uint64_t)pos > V8_SOURCE_MAX)
			return -EINVAL;
		buf = malloc((size_t)pos + 1);
		if (!buf)
			return -ENOMEM;
		if (rd(r->pid, src - (uint64_t)mt->heap_tag + (uint64_t)mt->seq_one_chars, buf,
		       (size_t)pos)) {
			free(buf);
			return -EIO;
		}
		for (int64_t i = 0; i < pos; i++)
			if (buf[i] == '\n') {
				l++;
				last_nl = i;
			}
		free(buf);
		*line = l;
		*col = pos - last_nl;
		return 0;
	}
}

/* Names the SFI: "function file:line:col" into out; words it was read from. */
static int name_sfi(const struct reader *r, uint64_t sfi, char *out, size_t len, uint64_t *w_name,
		    uint64_t *w_script)
{
	const struct v8_meta *mt = r->mt;
	char fn[192], file[256]; /* with line:col, within V8_NAME_MAX */
	uint64_t nsi, script, fdata;
	int64_t start = -1, line = 0, col = 0;
	int t;

	if (obj_type(r, sfi) != mt->type_sfi)
		return -EIO;
	if (rd_field(r, sfi, mt->sfi_name_or_scope_info, &nsi) ||
	    rd_field(r, sfi, mt->sfi_script_or_debug_info, &script))
		return -EIO;
	*w_name = nsi;
	*w_script = script;
	fn[0] = file[0] = 0;
	t = obj_type(r, nsi);
	if (t >= 0 && t < mt->first_nonstring_type)
		string(r, nsi, fn, sizeof(fn));
	else if (t == mt->type_scope_info && mt->type_scope_info)
		scope_info(r, nsi, fn, sizeof(fn), &start);
	if (start < 0 && mt->sfi_function_data && mt->uncompiled_start &&
	    !rd_field(r, sfi, mt->sfi_function_data, &fdata)) {
		t = obj_type(r, fdata);
		if (t >= mt->type_uncompiled_first && t <= mt->type_uncompiled_last + 1 &&
		    mt->type_uncompiled_first) {
			int32_t s;

			if (!rd(r->pid,
				fdata - (uint64_t)mt->heap_tag + (uint64_t)mt->uncompiled_start, &s,
				sizeof(s)))
				start = s;
		}
	}
	if (obj_type(r, script) == mt->type_script) {
		uint64_t sname;

		if (!rd_field(r, script, mt->script_name, &sname))
			string(r, sname, file, sizeof(file));
		if (start >= 0)
			line_col(r, script, start, &line, &col);
	}
	if (line > 0)
		snprintf(out, len, "%s %s:%lld:%lld", fn[0] ? fn : "(anonymous)",
			 file[0] ? file : "(unknown)", (long long)line, (long long)col);
	else /* no line ends and a source not read (external: node's own modules) */
		snprintf(out, len, "%s %s", fn[0] ? fn : "(anonymous)",
			 file[0] ? file : "(unknown)");
	return 0;
}

static int resolve(struct v8_mgr *m, uint32_t pid, uint64_t pstart, uint64_t sfi, uint64_t pos,
		   char *out, size_t len, bool warm);

void v8_mgr__warm(struct v8_mgr *m, uint32_t pid, uint64_t pstart, uint64_t sfi)
{
	char name[V8_NAME_MAX];

	resolve(m, pid, pstart, sfi, 0, name, sizeof(name), true);
}

int v8_mgr__resolve(struct v8_mgr *m, uint32_t pid, uint64_t pstart, uint64_t sfi, uint64_t pos,
		    char *out, size_t len)
{
	return resolve(m, pid, pstart, sfi, pos, out, len, false);
}

static int resolve(struct v8_mgr *m, uint32_t pid, uint64_t pstart, uint64_t sfi, uint64_t pos,
		   char *out, size_t len, bool warm)
{
	/* As --perf-basic-prof marks code: ~ interpreted, ^ baseline, * optimised. */
	const char *prefix = HEARTH_V8_POS_TYPE(pos) == HEARTH_V8_FT_INTERPRETED ? "JS:~"
			     : HEARTH_V8_POS_TYPE(pos) == HEARTH_V8_FT_BASELINE	 ? "JS:^"
										 : "JS:*";
	struct name_key key = {pid, sfi};
	struct v8_proc *p;
	struct reader r;
	char name[V8_NAME_MAX];
	uint64_t h = name_hash(pid, sfi), wn = 0, ws = 0, hdr[2];
	size_t i;
	int ret;

	pthread_mutex_lock(&m->lock);
	p = find_proc(m, pid);
	if (!p || p->pstart != pstart || p->state != V8_DESCRIBED) {
		ret = -ENOENT;
		goto out;
	}
	r = (struct reader){pid, &p->meta};
	i = base_hmap__find(&m->name_idx, h, name_eq, m, &key);
	if (i != SIZE_MAX) {
		struct v8_name *e = &m->names[i];

		if (warm) {
			ret = 0;
			goto out;
		}
		/* Still the same SFI? Its map's type and the words the name came from. */
		ret = rd_field(&r, sfi, p->meta.sfi_name_or_scope_info, &hdr[0]);
		if (!ret)
			ret = rd_field(&r, sfi, p->meta.sfi_script_or_debug_info, &hdr[1]);
		if (ret == -ESRCH || (ret == 0 && hdr[0] == e->w_name && hdr[1] == e->w_script &&
				      obj_type(&r, sfi) == p->meta.type_sfi)) {
			e->used = ++m->tick;
			snprintf(out, len, "%s%s", prefix, e->name);
			ret = 0;
			goto out;
		}
		drop_name(m, i); /* moved or collected: named afresh below */
	}
	ret = name_sfi(&r, sfi, name, sizeof(name), &wn, &ws);
	if (ret) {
		m->st.failed++;
		goto out;
	}
	snprintf(out, len, "%s%s", prefix, name);
	if (m->n_names >= V8_CACHE_MAX)
		evict_locked(m, (uint64_t)m->charged / 2);
	if (!base_grow((void **)&m->names, &m->cap_names, m->n_names + 1, sizeof(*m->names))) {
		struct v8_name *e = &m->names[m->n_names];

		e->name = strdup(name);
		if (e->name && !base_hmap__insert(&m->name_idx, h, m->n_names)) {
			e->pid = pid;
			e->sfi = sfi;
			e->w_name = wn;
			e->w_script = ws;
			e->used = ++m->tick;
			e->bytes =
			    sizeof(*e) + strlen(name) + 1 + 2 * sizeof(struct base_hmap_slot);
			charge(m, (int64_t)e->bytes);
			m->n_names++;
			m->st.cached++;
		} else {
			free(e->name);
		}
	}
out:
	pthread_mutex_unlock(&m->lock);
	return ret;
}

/* One zig-zag VLQ integer of a source position table; false past its end. */
static bool vlq(const uint8_t *t, size_t len, size_t *at, int64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*at >= len || shift > 63)
			return false;
		b = t[(*at)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
	return true;
}

int64_t v8_position_at(const uint8_t *table, size_t len, int64_t bcoff)
{
	uint64_t code = 0, raw = 0; /* sums of untrusted deltas: unsigned, wrap defined */
	int64_t best = -1, c, p;
	size_t at = 0;

	if (bcoff < -1 || bcoff > (1 << 30))
		return -1;
	/* Entries in code order: the last one at or before the offset. The table
	 * counts code offsets from the function-entry position (-1): one more than
	 * the bytecode offsets the frame holds. Raw positions are (script offset +
	 * 1) << 1 with bit 0 the "external" flag (not JavaScript). */
	while (vlq(table, len, &at, &c) && vlq(table, len, &at, &p)) {
		code += c >= 0 ? (uint64_t)c : (uint64_t)-(c + 1);
		raw += (uint64_t)p;
		if (code > (uint64_t)(bcoff + 1))
			break;
		if (!(raw & 1) && raw >= 2)
			best = (int64_t)((raw >> 1) & 0x3fffffff) - 1;
	}
	return best;
}

int64_t v8_mgr__line(struct v8_mgr *m, uint32_t pid, uint64_t pstart, uint64_t sfi, uint64_t pos)
{
	struct v8_proc *p;
	struct reader r;
	uint64_t bca, spt, script, lenw;
	int64_t line = 0, col, off, n;
	uint8_t *buf = NULL;

	if (HEARTH_V8_POS_TYPE(pos) != HEARTH_V8_FT_INTERPRETED)
		return 0;
	pthread_mutex_lock(&m->lock);
	p = find_proc(m, pid);
	if (!p || p->pstart != pstart || p->state != V8_DESCRIBED || !p->meta.type_byte_array ||
	    !p->meta.sfi_function_data || !p->meta.fixed_array_length)
		goto out;
	r = (struct reader){pid, &p->meta};
	/* V8 11: BytecodeArray is length, constant_pool, handler_table, then the
	 * source position table; checked to be a ByteArray before it is read. */
	if (rd_field(&r, sfi, p->meta.sfi_function_data, &bca))
		goto out;
	/* a function with baseline code: its Code object holds the bytecode */
	if (p->meta.type_code && p->meta.code_bytecode && obj_type(&r, bca) == p->meta.type_code &&
	    rd_field(&r, bca, p->meta.code_bytecode, &bca))
		goto out;
	if (obj_type(&r, bca) != p->meta.type_bytecode ||
	    rd_field(&r, bca, p->meta.fixed_array_length + 3 * 8, &spt) ||
	    obj_type(&r, spt) != p->meta.type_byte_array ||
	    rd_field(&r, spt, p->meta.fixed_array_length, &lenw) || !is_smi(&r, lenw))
		goto out;
	n = smi(&r, lenw);
	if (n <= 0 || n > (1 << 20) || !(buf = malloc((size_t)n)) ||
	    rd(pid, spt - (uint64_t)p->meta.heap_tag + (uint64_t)p->meta.fixed_array_data, buf,
	       (size_t)n))
		goto out;
	off = v8_position_at(buf, (size_t)n, (int64_t)HEARTH_V8_POS_BCOFF(pos));
	if (off >= 0 && !rd_field(&r, sfi, p->meta.sfi_script_or_debug_info, &script) &&
	    obj_type(&r, script) == p->meta.type_script)
		line_col(&r, script, off, &line, &col);
out:
	free(buf);
	pthread_mutex_unlock(&m->lock);
	return line;
}

void v8_mgr__stats(struct v8_mgr *m, struct v8_mgr_stats *out)
{
	pthread_mutex_lock(&m->lock);
	*out = m->st;
	pthread_mutex_unlock(&m->lock);
}
