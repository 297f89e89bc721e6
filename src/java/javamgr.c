/*
 * javamgr: finds JVMs, describes them to the BPF walk, names their frames.
 *
 * A process is probed when first seen: /proc/PID/maps must map libjvm.so; its
 * .dynsym gives the gHotSpot* variables (symbol value + load bias), and
 * jvmstructs.c reads the tables through process_vm_readv. A `java` launcher maps
 * libjvm.so a few milliseconds after it starts and the code cache is set up
 * after that: a process named java* without them is probed again (every
 * PROBE_RETRY_MS, PROBE_TRIES times).
 *
 * Values the JVM does not publish, hard-coded (docs/java.md):
 *  - CodeBlob::_type (CompilerType, an int; compiler_none = 0 for every blob
 *    that is not an nmethod) sits right before CodeBlob::_size;
 *  - frame::interpreter_frame_method_offset = last_sp_offset - 1 and
 *    interpreter_frame_bcp_offset = last_sp_offset - 6 (x86-64 frame_x86.hpp:
 *    last_sp, method, mirror, mdp, cache, locals, bcp in that order below rbp).
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "java/java.h"
#include "java/java_impl.h"
#include "proc/proc.h"
#include "runtime_abi.h" /* bpf/ */

#define PROBE_RETRY_MS 200
#define PROBE_TRIES    50
#define READ_MAX       (1u << 16)
#define LINE_TABLE_MAX 1024
#define CACHE_BUCKETS  4096

enum jstate { J_QUEUED, J_DESCRIBED, J_EXITED };

struct jproc {
	uint32_t pid;
	uint64_t pstart;
	enum jstate state;
	bool exited; /* names cached while it ran are used as they are */
	int tries;
	int64_t due_ms;
	struct jvm_layout L;
	struct hearth_java_proc desc;
	int64_t method_off, bcp_off;
};

enum jkind { K_METHOD, K_STUB, K_NMETHOD };

/* A cached Method*, stub CodeBlob or nmethod of one process. */
struct jmethod {
	struct jmethod *next, *lru_prev, *lru_next;
	uint32_t pid;
	uint64_t pstart, addr; /* key, with kind */
	enum jkind kind;
	/* what was read, compared at each use: a method's ConstMethod*, a stub's
	 * _name, an nmethod's compile id */
	uint64_t check;
	uint64_t code_begin; /* a method's bytecodes, an nmethod's instructions */
	uint32_t code_size;  /* of the bytecodes */
	uint64_t method;     /* an nmethod's Method* */
	char name[JAVA_NAME_MAX];
	char file[JAVA_FILE_MAX];
	uint8_t *lines; /* a method's compressed line number table, NULL if none */
	size_t n_lines;
	uint8_t *meta, *scopes, *pcs; /* an nmethod's metadata, scopes and PcDescs */
	size_t n_meta, n_scopes, n_pcs;
	size_t bytes;
};

struct java_mgr {
	pthread_mutex_t mu;
	int fd;
	struct jproc *procs;
	size_t n, cap;
	struct jmethod *buckets[CACHE_BUCKETS];
	struct jmethod lru; /* sentinel: next the most recent */
	uint64_t charged;
	struct java_mgr_stats st;
};

static int64_t now_ms(void)
{
	return base_clock_ns(CLOCK_MONOTONIC) / 1000000;
}

static int proc_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	uint32_t pid = (uint32_t)(uintptr_t)ctx;
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	ssize_t n;

	if (len > READ_MAX || !addr)
		return -EINVAL;
	if (!len)
		return 0;
	n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
	return n == (ssize_t)len ? 0 : -EIO;
}

static int rd(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	return proc_read((void *)(uintptr_t)pid, addr, buf, len);
}

static int rd_u64(uint32_t pid, uint64_t addr, void *v)
{
	return rd(pid, addr, v, 8);
}

static int rd_i32(uint32_t pid, uint64_t addr, int32_t *v)
{
	return rd(pid, addr, v, 4);
}

/* ---- probing ---- */

static bool is_libjvm(const char *path)
{
	const char *b = strrchr(path, '/');

	return b && strcmp(b + 1, "libjvm.so") == 0;
}

/* The gHotSpot* symbols' vaddrs in the file. 0, -errno. */
static int read_syms(const char *path, uint64_t vaddr[JS_MAX], uint64_t *seg_vaddr,
		     uint64_t *seg_off)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t nph;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = -ENOENT;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	/* pread, never mapped: a file truncated under us fails a read instead of
	 * raising SIGBUS (src/base/busguard.c) */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	/* The first loadable segment: bias = its mapping's start - (vaddr - offset). */
	*seg_vaddr = *seg_off = 0;
	if (elf_getphdrnum(elf, &nph) == 0) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
				*seg_vaddr = ph.p_vaddr;
				*seg_off = ph.p_offset;
				break;
			}
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Sym sym;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || strncmp(name, "gHotSpot", 8))
				continue;
			for (int k = 0; k < JS_MAX; k++)
				if (!strcmp(name, jvm_sym_names[k]))
					vaddr[k] = sym.st_value;
		}
		err = 0;
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

static bool named_java(uint32_t pid)
{
	char path[64], exe[256];
	ssize_t n;
	const char *b;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = 0;
	b = strrchr(exe, '/');
	return strstr(b ? b + 1 : exe, "java") != NULL;
}

/* 0 described; 1 try again later; -ENOENT not a JVM; other -errno. */
static int probe(struct java_mgr *m, struct jproc *p)
{
	struct proc_mapping *maps = NULL;
	size_t n = 0;
	uint64_t vaddr[JS_MAX] = {0}, syms[JS_MAX], bias = 0, seg_vaddr = 0, seg_off = 0;
	char path[4096] = "";
	struct jvm_reader r = {proc_read, (void *)(uintptr_t)p->pid};
	struct jvm_layout *L = &p->L;
	struct hearth_java_proc *d = &p->desc;
	uint64_t ga, data, q, buf;
	int32_t len, limit;
	int err;

	m->st.probed++;
	err = proc_read_maps(p->pid, &maps, &n);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	for (size_t i = 0; i < n; i++) {
		if (maps[i].path && is_libjvm(maps[i].path) && maps[i].pgoff == 0) {
			snprintf(path, sizeof(path), "/proc/%u/root%s", p->pid, maps[i].path);
			bias = maps[i].start;
			break;
		}
	}
	proc_maps_free(maps, n);
	if (!path[0])
		return named_java(p->pid) ? 1 : -ENOENT;
	err = read_syms(path, vaddr, &seg_vaddr, &seg_off);
	if (err)
		return err;
	bias -= seg_vaddr - seg_off; /* the pgoff-0 mapping maps the first segment's page */
	for (int k = 0; k < JS_MAX; k++)
		syms[k] = vaddr[k] ? vaddr[k] + bias : 0;
	err = jvm_parse_vmstructs(&r, syms, L);
	if (err == -ENOENT) {
		m->st.unsupported++;
		return -ENOTSUP;
	}
	if (err)
		return 1; /* tables not readable yet */
	memset(d, 0, sizeof(*d));
	d->pstart = p->pstart;
	if (rd_u64(p->pid, L->codecache_low, &d->code_low) ||
	    rd_u64(p->pid, L->codecache_high, &d->code_high) || !d->code_low ||
	    d->code_high <= d->code_low)
		return 1;
	if (rd_u64(p->pid, L->interp_code, &q) || !q ||
	    rd_u64(p->pid, q + L->sq_stub_buffer, &buf) ||
	    rd_i32(p->pid, q + L->sq_buffer_limit, &limit) || !buf || limit <= 0)
		return 1;
	d->interp_low = buf;
	d->interp_high = buf + (uint64_t)limit;
	if (rd_u64(p->pid, L->codecache_heaps, &ga) || !ga ||
	    rd_i32(p->pid, ga + L->ga_len, &len) || rd_u64(p->pid, ga + L->ga_data, &data) ||
	    len <= 0 || !data)
		return 1;
	for (int i = 0; i < len && i < HEARTH_JAVA_MAX_HEAPS; i++) {
		struct hearth_java_heap *h = &d->heaps[i];
		uint64_t heap;
		int32_t lg;

		if (rd_u64(p->pid, data + 8 * (uint64_t)i, &heap) ||
		    rd_u64(p->pid, heap + L->heap_memory + L->vs_low, &h->low) ||
		    rd_u64(p->pid, heap + L->heap_memory + L->vs_high, &h->high) ||
		    rd_u64(p->pid, heap + L->heap_segmap + L->vs_low, &h->segmap) ||
		    rd_i32(p->pid, heap + L->heap_log2_seg, &lg) || lg < 0 || lg > 16)
			return 1;
		h->log2_seg = (uint32_t)lg;
		d->n_heaps = (uint32_t)i + 1;
	}
	if (L->blob_size < 4 || L->blob_frame_size > 60 || L->blob_frame_complete > 60 ||
	    L->blob_code_begin > 56 || L->blob_size > 60 || L->nm_method > 4096 ||
	    L->size_heap_block > 4096)
		return -ENOTSUP;
	d->block_header = (uint16_t)L->size_heap_block;
	d->blob_frame_size = (uint16_t)L->blob_frame_size;
	d->blob_type = (uint16_t)(L->blob_size - 4); /* not published: see the file comment */
	d->blob_frame_complete = (uint16_t)L->blob_frame_complete;
	d->blob_code_begin = (uint16_t)L->blob_code_begin;
	d->nm_method = (uint16_t)L->nm_method;
	p->method_off = 8 * (L->interp_last_sp - 1); /* not published: file comment */
	p->bcp_off = 8 * (L->interp_last_sp - 6);
	d->interp_method = (int16_t)p->method_off;
	d->interp_bcp = (int16_t)p->bcp_off;
	d->interp_sender_sp = (int16_t)(8 * L->interp_sender_sp);
	if (m->fd >= 0 && bpf_map_update_elem(m->fd, &p->pid, d, BPF_ANY))
		return -errno;
	return 0;
}

/* ---- the process list ---- */

static struct jproc *find_proc(struct java_mgr *m, uint32_t pid)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->procs[i].pid == pid)
			return &m->procs[i];
	return NULL;
}

static void drop_methods(struct java_mgr *m, uint32_t pid, uint64_t pstart, bool any);

static void remove_proc(struct java_mgr *m, struct jproc *p)
{
	if (p->state == J_DESCRIBED && m->fd >= 0)
		bpf_map_delete_elem(m->fd, &p->pid);
	*p = m->procs[--m->n];
}

void java_mgr__note(struct java_mgr *m, uint32_t pid, uint64_t pstart)
{
	struct jproc *p;

	pthread_mutex_lock(&m->mu);
	p = find_proc(m, pid);
	if (p && p->pstart == pstart) {
		pthread_mutex_unlock(&m->mu);
		return;
	}
	if (p)
		remove_proc(m, p);
	if (base_grow((void **)&m->procs, &m->cap, m->n + 1, sizeof(*m->procs))) {
		pthread_mutex_unlock(&m->mu);
		return;
	}
	p = &m->procs[m->n++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->pstart = pstart;
	p->state = J_QUEUED;
	p->due_ms = 0;
	pthread_mutex_unlock(&m->mu);
}

void java_mgr__exec(struct java_mgr *m, uint32_t pid, uint64_t pstart)
{
	struct jproc *p;

	pthread_mutex_lock(&m->mu);
	p = find_proc(m, pid);
	if (p)
		remove_proc(m, p);
	drop_methods(m, pid, 0, true);
	pthread_mutex_unlock(&m->mu);
	java_mgr__note(m, pid, pstart);
}

void java_mgr__exit(struct java_mgr *m, uint32_t pid)
{
	struct jproc *p;

	pthread_mutex_lock(&m->mu);
	p = find_proc(m, pid);
	if (p && p->state == J_DESCRIBED && m->fd >= 0)
		bpf_map_delete_elem(m->fd, &pid);
	/* An exit seen twice (a sample taken while it exits announces it again)
	 * keeps what the first left. */
	if (p && p->state == J_QUEUED)
		remove_proc(m, p);
	else if (p && p->state == J_DESCRIBED) {
		p->state = J_EXITED; /* kept for in_code and resolve until forget */
		p->exited = true;
	}
	pthread_mutex_unlock(&m->mu);
}

void java_mgr__forget(struct java_mgr *m, uint32_t pid, uint64_t pstart)
{
	struct jproc *p;

	pthread_mutex_lock(&m->mu);
	p = find_proc(m, pid);
	if (p && (!pstart || p->pstart == pstart) && p->state != J_QUEUED) {
		remove_proc(m, p);
		drop_methods(m, pid, pstart, !pstart);
	}
	pthread_mutex_unlock(&m->mu);
}

int java_mgr__work(struct java_mgr *m, int budget_ms)
{
	int64_t start = now_ms(), t;
	int done = 0;

	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->n; i++) {
		struct jproc *p = &m->procs[i];
		int err;

		t = now_ms();
		if (t - start > budget_ms)
			break;
		if (p->state != J_QUEUED || p->due_ms > t)
			continue;
		err = probe(m, p);
		done++;
		if (err == 0) {
			p->state = J_DESCRIBED;
		} else if (err == 1 && ++p->tries < PROBE_TRIES) {
			p->due_ms = t + PROBE_RETRY_MS;
		} else {
			/* Gone, not a JVM, or one that cannot be walked: forgotten (a
			 * process is announced once per (pid, start); exec announces
			 * it again). The list holds JVMs and the queue only. */
			remove_proc(m, p);
			i--;
		}
	}
	m->st.processes = 0;
	for (size_t i = 0; i < m->n; i++)
		m->st.processes += m->procs[i].state == J_DESCRIBED;
	pthread_mutex_unlock(&m->mu);
	return done;
}

int java_mgr__next_due_ms(const struct java_mgr *m)
{
	struct java_mgr *mm = (struct java_mgr *)m;
	int64_t t = now_ms(), due = -1;

	pthread_mutex_lock(&mm->mu);
	for (size_t i = 0; i < m->n; i++) {
		int64_t d;

		if (m->procs[i].state != J_QUEUED)
			continue;
		d = m->procs[i].due_ms > t ? m->procs[i].due_ms - t : 0;
		if (due < 0 || d < due)
			due = d;
	}
	pthread_mutex_unlock(&mm->mu);
	return (int)due;
}

bool java_mgr__in_code(struct java_mgr *m, uint32_t pid, uint64_t pstart, uint64_t pc)
{
	struct jproc *p;
	bool in;

	if (!__atomic_load_n(&m->n, __ATOMIC_RELAXED))
		return false; /* no JVM: the common case, for every native frame */
	pthread_mutex_lock(&m->mu);
	p = find_proc(m, pid);
	in = p && p->pstart == pstart && pc >= p->desc.code_low && pc < p->desc.code_high;
	pthread_mutex_unlock(&m->mu);
	return in;
}

/* ---- the cache of methods, stubs and nmethods (MEM_JAVA) ---- */

/* Bytes of an nmethod's metadata, scopes or PcDescs kept at most (each). */
#define NM_PART_MAX (256u << 10)
/* Inlined scopes decoded at one pc at most. */
#define SCOPES_MAX 32
/* The cache's own bound, under any memory limit: the least recently used
 * entries go past it (an nmethod's debug information is kilobytes). */
#define CACHE_MAX_BYTES (32u << 20)

static size_t bucket(uint32_t pid, uint64_t addr)
{
	uint64_t h = (addr ^ ((uint64_t)pid << 48)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 52) & (CACHE_BUCKETS - 1);
}

static void lru_unlink(struct jmethod *e)
{
	e->lru_prev->lru_next = e->lru_next;
	e->lru_next->lru_prev = e->lru_prev;
}

static void lru_front(struct java_mgr *m, struct jmethod *e)
{
	e->lru_next = m->lru.lru_next;
	e->lru_prev = &m->lru;
	m->lru.lru_next->lru_prev = e;
	m->lru.lru_next = e;
}

static void free_entry(struct java_mgr *m, struct jmethod *e)
{
	struct jmethod **pp = &m->buckets[bucket(e->pid, e->addr)];

	while (*pp && *pp != e)
		pp = &(*pp)->next;
	if (*pp)
		*pp = e->next;
	lru_unlink(e);
	mem_budget__charge(MEM_JAVA, -(int64_t)e->bytes);
	m->charged -= e->bytes;
	m->st.methods--;
	free(e->lines);
	free(e->meta);
	free(e->scopes);
	free(e->pcs);
	free(e);
}

static void drop_methods(struct java_mgr *m, uint32_t pid, uint64_t pstart, bool any)
{
	for (struct jmethod *e = m->lru.lru_next, *nx; e != &m->lru; e = nx) {
		nx = e->lru_next;
		if (e->pid == pid && (any || e->pstart == pstart))
			free_entry(m, e);
	}
}

static uint64_t evict(void *ctx, uint64_t want)
{
	struct java_mgr *m = ctx;
	uint64_t freed = 0, n = 0;

	pthread_mutex_lock(&m->mu);
	while (freed < want && m->lru.lru_prev != &m->lru) {
		struct jmethod *e = m->lru.lru_prev;

		freed += e->bytes;
		n++;
		free_entry(m, e);
	}
	m->st.evicted += n;
	pthread_mutex_unlock(&m->mu);
	if (n)
		mem_budget__evicted(MEM_JAVA, n, freed);
	return freed;
}

/* A Symbol's text. */
static int read_symbol(uint32_t pid, const struct jvm_layout *L, uint64_t sym, char *out,
		       size_t cap)
{
	uint16_t len;

	if (!sym || rd(pid, sym + L->sym_length, &len, 2))
		return -EIO;
	if (len >= cap)
		len = (uint16_t)(cap - 1);
	if (rd(pid, sym + L->sym_body, out, len))
		return -EIO;
	out[len] = 0;
	return 0;
}

/* Reads what names the Method* into e. 0, -EIO. */
static int read_method(uint32_t pid, const struct jvm_layout *L, uint64_t method, struct jmethod *e)
{
	uint64_t cm, cp, holder, ksym, msym;
	uint16_t name_idx, code_size, flags;
	char cls[JAVA_FILE_MAX], mname[JAVA_NAME_MAX - JAVA_FILE_MAX - 1];

	if (rd_u64(pid, method + L->method_const, &cm) || !cm ||
	    rd_u64(pid, cm + L->cm_constants, &cp) || !cp ||
	    rd(pid, cm + L->cm_name_index, &name_idx, 2) ||
	    rd(pid, cm + L->cm_code_size, &code_size, 2) || rd(pid, cm + L->cm_flags, &flags, 2) ||
	    rd_u64(pid, cp + L->cp_holder, &holder) || !holder ||
	    rd_u64(pid, holder + L->klass_name, &ksym) ||
	    read_symbol(pid, L, ksym, cls, sizeof(cls)))
		return -EIO;
	/* The constant pool's entries follow its header, one word each. */
	if (rd_u64(pid, cp + (uint64_t)L->size_constant_pool + 8ull * name_idx, &msym) ||
	    read_symbol(pid, L, msym, mname, sizeof(mname)))
		return -EIO;
	e->check = cm;
	e->code_begin = cm + (uint64_t)L->size_const_method;
	e->code_size = code_size;
	snprintf(e->file, sizeof(e->file), "%s", cls);
	for (char *c = cls; *c; c++)
		if (*c == '/')
			*c = '.';
	snprintf(e->name, sizeof(e->name), "%s.%s", cls, mname);
	if (flags & L->has_linenumber_table) {
		uint8_t buf[LINE_TABLE_MAX];
		size_t got = 0;

		/* The compressed table follows the bytecodes; its length is not
		 * stored: read what is there, shrinking near the end of a mapping. */
		for (size_t len = LINE_TABLE_MAX; len >= 16; len /= 2)
			if (!rd(pid, e->code_begin + code_size, buf, len)) {
				got = len;
				break;
			}
		if (got && (e->lines = malloc(got))) {
			memcpy(e->lines, buf, got);
			e->n_lines = got;
		}
	}
	return 0;
}

static int read_stub(uint32_t pid, const struct jvm_layout *L, uint64_t blob, struct jmethod *e)
{
	uint64_t np;
	char name[96];

	if (rd_u64(pid, blob + L->blob_name, &np) || !np)
		return -EIO;
	for (size_t len = sizeof(name) - 1; len >= 8; len /= 2)
		if (!rd(pid, np, name, len)) {
			name[len] = 0;
			snprintf(e->name, sizeof(e->name), "[jvm] %s", name);
			e->check = np;
			return 0;
		}
	return -EIO;
}

static int64_t hdr_i32(const uint8_t *h, size_t len, int64_t off)
{
	int32_t v;

	if (off < 0 || (uint64_t)off + 4 > len)
		return 0;
	memcpy(&v, h + off, 4);
	return v;
}

static uint64_t hdr_u64(const uint8_t *h, size_t len, int64_t off)
{
	uint64_t v;

	if (off < 0 || (uint64_t)off + 8 > len)
		return 0;
	memcpy(&v, h + off, 8);
	return v;
}

/* A part [from, to) of the nmethod, copied; NULL (none) when out of bounds. */
static uint8_t *read_part(uint32_t pid, uint64_t from, uint64_t to, size_t *n)
{
	uint8_t *b;

	*n = 0;
	if (to <= from || to - from > NM_PART_MAX || !(b = malloc(to - from)))
		return NULL;
	if (rd(pid, from, b, to - from)) {
		free(b);
		return NULL;
	}
	*n = to - from;
	return b;
}

/* Reads an nmethod: its Method*, compile id, code and debug information. */
static int read_nmethod(uint32_t pid, const struct jvm_layout *L, uint64_t nm, struct jmethod *e)
{
	uint8_t h[1024];
	size_t hl = (size_t)L->size_nmethod;
	uint64_t scopes;
	int64_t meta_off, pcs_off, deps_off;

	if (hl > sizeof(h) || hl < 64 || rd(pid, nm, h, hl))
		return -EIO;
	e->method = hdr_u64(h, hl, L->nm_method);
	e->check = (uint64_t)hdr_i32(h, hl, L->nm_compile_id);
	e->code_begin = hdr_u64(h, hl, L->blob_code_begin);
	if (!e->method)
		return -EIO;
	scopes = hdr_u64(h, hl, L->nm_scopes_data);
	meta_off = hdr_i32(h, hl, L->nm_metadata_off);
	pcs_off = hdr_i32(h, hl, L->nm_pcs_off);
	deps_off = hdr_i32(h, hl, L->nm_deps_off);
	/* Without its debug information the frame is still named (its method). */
	if (meta_off > 0 && pcs_off > meta_off && deps_off > pcs_off && scopes >= nm + meta_off &&
	    scopes <= nm + pcs_off) {
		e->meta = read_part(pid, nm + meta_off, scopes, &e->n_meta);
		e->scopes = read_part(pid, scopes, nm + pcs_off, &e->n_scopes);
		e->pcs = read_part(pid, nm + pcs_off, nm + deps_off, &e->n_pcs);
	}
	return 0;
}

static struct jmethod *find_entry(struct java_mgr *m, uint32_t pid, uint64_t pstart, uint64_t addr,
				  enum jkind kind)
{
	struct jmethod *e = m->buckets[bucket(pid, addr)];

	while (e && !(e->pid == pid && e->pstart == pstart && e->addr == addr && e->kind == kind))
		e = e->next;
	return e;
}

/* Looks (pid, addr, kind) up, reading it when absent or stale. Locked. */
static int lookup(struct java_mgr *m, struct jproc *p, uint64_t addr, enum jkind kind,
		  struct jmethod **out)
{
	const struct jvm_layout *L = &p->L;
	size_t b = bucket(p->pid, addr);
	struct jmethod *e;
	uint64_t check = 0;
	int err;

	if (!addr)
		return -EIO;
	for (e = m->buckets[b]; e; e = e->next)
		if (e->pid == p->pid && e->pstart == p->pstart && e->addr == addr &&
		    e->kind == kind)
			break;
	if (e && p->exited) {
		/* Gone: what was read while it ran (the collector warms each new
		 * stack's frames as it arrives) is the last word. */
		lru_unlink(e);
		lru_front(m, e);
		*out = e;
		return 0;
	}
	if (e) {
		/* Still the same? Redefinition, unloading and code cache sweeps
		 * change it: a method's ConstMethod, a blob's name, an nmethod's
		 * compile id (unique per compilation). */
		if (kind == K_NMETHOD) {
			int32_t id;

			if (rd(p->pid, addr + L->nm_compile_id, &id, 4))
				return -EIO;
			check = (uint64_t)(int64_t)id;
		} else if (rd_u64(p->pid, addr + (kind == K_STUB ? L->blob_name : L->method_const),
				  &check)) {
			return -EIO;
		}
		if (check == e->check) {
			lru_unlink(e);
			lru_front(m, e);
			*out = e;
			return 0;
		}
		m->st.stale++;
		free_entry(m, e);
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->pid = p->pid;
	e->pstart = p->pstart;
	e->addr = addr;
	e->kind = kind;
	err = kind == K_STUB	  ? read_stub(p->pid, L, addr, e)
	      : kind == K_NMETHOD ? read_nmethod(p->pid, L, addr, e)
				  : read_method(p->pid, L, addr, e);
	if (err) {
		free(e->lines);
		free(e->meta);
		free(e->scopes);
		free(e->pcs);
		free(e);
		return err;
	}
	e->bytes = sizeof(*e) + e->n_lines + e->n_meta + e->n_scopes + e->n_pcs;
	e->next = m->buckets[b];
	m->buckets[b] = e;
	lru_front(m, e);
	m->st.methods++;
	m->charged += e->bytes;
	mem_budget__charge(MEM_JAVA, (int64_t)e->bytes);
	while (m->charged > CACHE_MAX_BYTES && m->lru.lru_prev != e) {
		struct jmethod *old = m->lru.lru_prev;
		uint64_t bytes = old->bytes;

		free_entry(m, old);
		m->st.evicted++;
		mem_budget__evicted(MEM_JAVA, 1, bytes);
	}
	*out = e;
	return 0;
}

static struct jproc *described(struct java_mgr *m, uint32_t pid, uint64_t pstart)
{
	struct jproc *p = find_proc(m, pid);

	return p && p->pstart == pstart && p->desc.code_high ? p : NULL;
}

/* One (Method*, bci) into *out; bci < 0: no line. 0 or -errno. Locked. */
static int name_method(struct java_mgr *m, struct jproc *p, uint64_t method, int64_t bci,
		       struct java_frame *out)
{
	struct jmethod *e;
	int err = lookup(m, p, method, K_METHOD, &e);

	if (err)
		return err;
	snprintf(out->name, sizeof(out->name), "%s", e->name);
	snprintf(out->file, sizeof(out->file), "%s", e->file);
	out->line = 0;
	if (bci >= 0 && bci < e->code_size && e->lines) {
		int64_t line = jvm_line_for_bci(e->lines, e->n_lines, bci);

		out->line = line > 0 ? line : 0;
	}
	return 0;
}

/* The methods of an nmethod's frame (second word w1: the pc, leaf or not):
 * those inlined at the pc, innermost first, down to its own; at least one. */
static int decode_scopes(const struct jproc *p, const struct jmethod *e, uint64_t w1,
			 uint64_t *methods, int64_t *bcis, int max)
{
	const struct jvm_layout *L = &p->L;
	uint64_t pc = w1 & HEARTH_RT_POS_MASK & HEARTH_JAVA_ADDR_MASK;
	int n = e->pcs && pc >= e->code_begin
		    ? jvm_scopes_at(e->pcs, e->n_pcs, (size_t)L->size_pcdesc, L->pc_pc_offset,
				    L->pc_scope_offset, e->scopes, e->n_scopes, e->meta, e->n_meta,
				    (int64_t)(pc - e->code_begin), !(w1 & HEARTH_JAVA_LEAF),
				    methods, bcis, max)
		    : 0;

	if (n <= 0) {
		methods[0] = e->method;
		bcis[0] = -1;
		n = 1;
	}
	return n;
}

/* An nmethod's frame at pc: the methods inlined there, innermost first. */
static int name_compiled(struct java_mgr *m, struct jproc *p, uint64_t nm, uint64_t w1,
			 struct java_frame *out, int max)
{
	uint64_t methods[SCOPES_MAX];
	int64_t bcis[SCOPES_MAX];
	struct jmethod *e;
	int n, err = lookup(m, p, nm, K_NMETHOD, &e), got = 0;

	if (err)
		return err;
	if (max > SCOPES_MAX)
		max = SCOPES_MAX;
	n = decode_scopes(p, e, w1, methods, bcis, max);
	/* e may be evicted by the lookups below: nothing of it is used after. */
	for (int i = 0; i < n; i++) {
		if (name_method(m, p, methods[i], bcis[i], &out[got]) == 0)
			got++;
		else
			m->st.failed++;
	}
	return got ? got : -EIO;
}

int java_mgr__resolve(struct java_mgr *m, uint32_t pid, uint64_t pstart, uint64_t w0, uint64_t w1,
		      struct java_frame *out, int max)
{
	uint64_t pos = w1 & HEARTH_RT_POS_MASK, addr = pos & HEARTH_JAVA_ADDR_MASK;
	unsigned type = HEARTH_JAVA_POS_TYPE(pos);
	struct jproc *p;
	struct jmethod *e;
	int n = -EIO;

	if (max <= 0)
		return -EINVAL;
	pthread_mutex_lock(&m->mu);
	p = described(m, pid, pstart);
	if (!p) {
		pthread_mutex_unlock(&m->mu);
		return -ENOENT;
	}
	switch (type) {
	case HEARTH_JAVA_INTERP: {
		struct jmethod *me;
		int64_t bci = -1;

		if (lookup(m, p, w0, K_METHOD, &me) == 0 && addr >= me->code_begin &&
		    addr < me->code_begin + me->code_size)
			bci = (int64_t)(addr - me->code_begin);
		n = name_method(m, p, w0, bci, out) ? -EIO : 1;
		break;
	}
	case HEARTH_JAVA_COMPILED:
		n = name_compiled(m, p, w0, w1, out, max);
		break;
	case HEARTH_JAVA_STUB:
		if (lookup(m, p, w0, K_STUB, &e) == 0) {
			snprintf(out->name, sizeof(out->name), "%s", e->name);
			out->file[0] = 0;
			out->line = 0;
			n = 1;
		}
		break;
	default:
		break;
	}
	if (n < 0)
		m->st.failed++;
	pthread_mutex_unlock(&m->mu);
	return n;
}

int java_mgr__warm(struct java_mgr *m, uint32_t pid, uint64_t pstart, uint64_t w0, uint64_t w1)
{
	unsigned type = HEARTH_JAVA_POS_TYPE(w1 & HEARTH_RT_POS_MASK);
	enum jkind kind = type == HEARTH_JAVA_COMPILED ? K_NMETHOD
			  : type == HEARTH_JAVA_STUB   ? K_STUB
						       : K_METHOD;
	struct java_frame f[SCOPES_MAX];
	struct jproc *p;
	struct jmethod *e;
	bool cached = false;
	int n;

	if (type == HEARTH_JAVA_UNKNOWN || !w0)
		return 0;
	/* Cached already: no read at all (resolve checks it at build time). An
	 * nmethod's frame also needs the methods inlined at its pc. */
	pthread_mutex_lock(&m->mu);
	p = described(m, pid, pstart);
	e = p ? find_entry(m, pid, pstart, w0, kind) : NULL;
	cached = e != NULL;
	if (e && kind == K_NMETHOD) {
		uint64_t methods[SCOPES_MAX];
		int64_t bcis[SCOPES_MAX];
		int k = decode_scopes(p, e, w1, methods, bcis, SCOPES_MAX);

		for (int i = 0; i < k && cached; i++)
			cached = find_entry(m, pid, pstart, methods[i], K_METHOD) != NULL;
	}
	pthread_mutex_unlock(&m->mu);
	if (cached)
		return 0;
	n = java_mgr__resolve(m, pid, pstart, w0, w1, f, SCOPES_MAX);
	return n < 0 ? n : 0;
}

void java_mgr__stats(struct java_mgr *m, struct java_mgr_stats *out)
{
	pthread_mutex_lock(&m->mu);
	*out = m->st;
	out->bytes = m->charged;
	pthread_mutex_unlock(&m->mu);
}

int java_mgr__describe_for_test(struct java_mgr *m, uint32_t pid, uint64_t pstart,
				const struct jvm_layout *L, uint64_t code_low, uint64_t code_high)
{
	struct jproc *p;

	java_mgr__note(m, pid, pstart);
	pthread_mutex_lock(&m->mu);
	p = find_proc(m, pid);
	if (p) {
		p->L = *L;
		p->desc.pstart = pstart;
		p->desc.code_low = code_low;
		p->desc.code_high = code_high;
		p->state = J_DESCRIBED;
	}
	pthread_mutex_unlock(&m->mu);
	return p ? 0 : -ENOMEM;
}

int java_mgr__new(int procs_fd, struct java_mgr **out)
{
	struct java_mgr *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->mu, NULL);
	m->fd = procs_fd;
	m->lru.lru_next = m->lru.lru_prev = &m->lru;
	if (mem_budget__register(MEM_JAVA, 1, evict, m)) {
		free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

void java_mgr__free(struct java_mgr *m)
{
	if (!m)
		return;
	mem_budget__unregister(evict, m);
	while (m->lru.lru_next != &m->lru)
		free_entry(m, m->lru.lru_next);
	free(m->procs);
	pthread_mutex_destroy(&m->mu);
	free(m);
}
