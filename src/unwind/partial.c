/*
 * partial: unwind tables for objects whose whole table is over the per-object
 * cap (libLLVM, libclang-cpp: ~1M rows), built from the FDEs samples were seen
 * in (issue 29: no object is permanently "did not fit"; docs/unwind.md
 * "Partial tables").
 *
 * The object's .eh_frame_hdr and .eh_frame are mapped read-only (no copy; the
 * pages touched are given back after each batch). A pc asked for is looked up
 * in .eh_frame_hdr's binary-search table (initial location -> FDE, datarel
 * sdata4, as every GNU toolchain writes it), that one FDE is parsed by cfi.c
 * (with its CIE), and its rows, ended by a gap row, join the table. Every
 * offset read from the file is checked against the section it points into.
 * Every read of those mapped bytes runs under base_guard: a file truncated in
 * place (`cp new.so old.so`) while its table lives raises SIGBUS there, which
 * ends the table's reading for good (`broken`, counted) instead of the agent.
 * Its headers are read with pread (ELF_C_READ), for the same reason.
 */
#include "unwind.h"
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* DW_EH_PE encodings of .eh_frame_hdr (LSB "Linux Standard Base Core", 10.6.2). */
#define PE_OMIT	   0xff
#define PE_UDATA4  0x03
#define PE_SDATA4  0x0b
#define PE_UDATA8  0x04
#define PE_SDATA8  0x0c
#define PE_DATAREL 0x30

struct pfde {
	uint32_t begin, end; /* [begin, end) vaddr */
	uint64_t last_ms;    /* last asked for (or added) */
	struct hearth_unwind_row *rows;
	uint32_t n;
};

struct smap {
	const uint8_t *p; /* the section's bytes */
	size_t len;
	uint64_t vaddr;
	void *map; /* page-aligned mapping holding them */
	size_t map_len;
};

struct unwind_partial {
	struct smap hdr, eh;
	const uint8_t *table; /* .eh_frame_hdr's (loc, fde) pairs, 8 bytes each */
	uint64_t n_entries;
	struct pfde *fdes;
	size_t n_fdes, cap_fdes;
	uint64_t wants[UNWIND_PARTIAL_MAX_WANTS];
	size_t n_wants;
	uint64_t rows; /* rows of the loaded FDEs */
	struct cfi_rows scratch; /* the FDE being parsed (here, not on the stack: a
				  * SIGBUS jumps out of the parse, and must find it) */
	bool broken;		 /* the file shrank under the mapping: never read again */
	struct unwind_partial_stats st;
};

static int32_t rd_s32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Bytes of a fixed-size encoding (the value part), 0 when not one. */
static size_t enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case PE_UDATA4:
	case PE_SDATA4:
		return 4;
	case PE_UDATA8:
	case PE_SDATA8:
		return 8;
	default:
		return 0;
	}
}

static void smap_fini(struct smap *s)
{
	if (s->map)
		munmap(s->map, s->map_len);
	memset(s, 0, sizeof(*s));
}

/* Maps the named section of fd (file size fsize) read-only. -ENODATA when absent. */
static int smap_section(Elf *elf, int fd, uint64_t fsize, const char *want, struct smap *out)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -EINVAL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		uint64_t aoff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, want))
			continue;
		if (!sh.sh_size || sh.sh_offset > fsize || sh.sh_size > fsize - sh.sh_offset ||
		    (sh.sh_flags & SHF_COMPRESSED))
			return -EINVAL;
		aoff = sh.sh_offset & ~(uint64_t)4095;
		out->map_len = (size_t)(sh.sh_size + (sh.sh_offset - aoff));
		out->map = mmap(NULL, out->map_len, PROT_READ, MAP_PRIVATE, fd, (off_t)aoff);
		if (out->map == MAP_FAILED) {
			out->map = NULL;
			return -errno;
		}
		out->p = (const uint8_t *)out->map + (sh.sh_offset - aoff);
		out->len = (size_t)sh.sh_size;
		out->vaddr = sh.sh_addr;
		return 0;
	}
	return -ENODATA;
}

/* Checks .eh_frame_hdr and finds its table. -ENODATA when it has none hearth reads. */
static int hdr_parse(struct unwind_partial *p)
{
	const uint8_t *h = p->hdr.p;
	size_t ps, cs, at;
	uint64_t n;

	if (p->hdr.len < 4 || h[0] != 1)
		return -ENODATA;
	/* the table: datarel sdata4 pairs, as GNU ld, gold, lld and mold write it */
	if (h[3] != (PE_DATAREL | PE_SDATA4) || h[2] == PE_OMIT)
		return -ENODATA;
	ps = h[1] == PE_OMIT ? 0 : enc_size(h[1]);
	cs = enc_size(h[2]);
	if ((h[1] != PE_OMIT && !ps) || !cs)
		return -ENODATA;
	at = 4 + ps;
	if (p->hdr.len < at + cs)
		return -EINVAL;
	if (cs == 4) {
		uint32_t v;

		memcpy(&v, h + at, 4);
		n = v;
	} else {
		memcpy(&n, h + at, 8);
	}
	at += cs;
	if (n > (p->hdr.len - at) / 8)
		return -EINVAL;
	p->table = h + at;
	p->n_entries = n;
	return 0;
}

/* hdr_parse, reading the mapped header under a guard. -EIO: the file shrank. */
static int guarded_hdr_parse(struct unwind_partial *p)
{
	struct base_guard g;
	volatile int err = -EIO;

	if (!base_guard_ready())
		return -ENOTSUP;
	base_guard_push(&g);
	if (sigsetjmp(g.jb, 0) == 0)
		err = hdr_parse(p);
	base_guard_pop(&g);
	return g.faulted ? -EIO : err;
}

int unwind_table__build_partial(const char *path, uint64_t dev, uint64_t inode,
				struct unwind_table **out)
{
	const struct hearth_unwind_row first = {.pc = 0, .cfa_kind = HEARTH_CFA_NONE};
	uint64_t t0 = base_clock_ns(CLOCK_MONOTONIC);
	const struct object_segment *x;
	struct unwind_table *t = NULL;
	struct unwind_partial *p = NULL;
	Elf *elf = NULL;
	struct stat st;
	int fd = -1, err;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	t = calloc(1, sizeof(*t));
	p = calloc(1, sizeof(*p));
	elf = elf_begin(fd, ELF_C_READ, NULL);
	err = -ENOMEM;
	if (!t || !p)
		goto cleanup;
	err = -ENOEXEC;
	if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 ||
	    fstat(fd, &st))
		goto cleanup;
	err = object__from_elf(elf, fd, dev, inode, &t->obj);
	if (err)
		goto cleanup;
	err = -ENODATA;
	x = object__exec_segment(t->obj);
	if (!x)
		goto cleanup;
	t->seg_delta = x->vaddr - x->off;
	err = smap_section(elf, fd, (uint64_t)st.st_size, ".eh_frame_hdr", &p->hdr);
	if (!err)
		err = smap_section(elf, fd, (uint64_t)st.st_size, ".eh_frame", &p->eh);
	if (!err)
		err = guarded_hdr_parse(p);
	if (err)
		goto cleanup;
	t->path = strdup(path);
	err = -ENOMEM;
	if (!t->path || cfi_rows__push(&t->rows, &first))
		goto cleanup;
	t->partial = p;
	p = NULL;
	t->build_ms = (double)(base_clock_ns(CLOCK_MONOTONIC) - t0) / 1e6;
	*out = t;
	t = NULL;
	err = 0;
cleanup:
	unwind_partial__free(p);
	unwind_table__free(t);
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

static void fde_free(struct pfde *f)
{
	mem_budget__charge(MEM_UNWIND, -(int64_t)(f->n * sizeof(*f->rows)));
	free(f->rows);
}

void unwind_partial__free(struct unwind_partial *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_fdes; i++)
		fde_free(&p->fdes[i]);
	free(p->fdes);
	cfi_rows__fini(&p->scratch);
	smap_fini(&p->hdr);
	smap_fini(&p->eh);
	free(p);
}

static struct pfde *fde_covering(struct unwind_partial *p, uint64_t vaddr)
{
	for (size_t i = 0; i < p->n_fdes; i++)
		if (vaddr >= p->fdes[i].begin && vaddr < p->fdes[i].end)
			return &p->fdes[i];
	return NULL;
}

bool unwind_partial__want(struct unwind_partial *p, uint64_t vaddr)
{
	p->st.wants++;
	if (p->broken)
		return false;
	if (fde_covering(p, vaddr))
		return false; /* loaded since the walk asked */
	for (size_t i = 0; i < p->n_wants; i++)
		if (p->wants[i] == vaddr)
			return false;
	if (p->n_wants == UNWIND_PARTIAL_MAX_WANTS)
		return false; /* asked again in a second if still hot */
	p->wants[p->n_wants++] = vaddr;
	return true;
}

bool unwind_partial__pending(const struct unwind_partial *p)
{
	return p->n_wants > 0 && !p->broken;
}

/* The byte offset in .eh_frame of the FDE whose initial location is the last at
 * or below vaddr, per .eh_frame_hdr's sorted table; -1 when none. */
static int64_t hdr_lookup(const struct unwind_partial *p, uint64_t vaddr)
{
	uint64_t lo = 0, hi = p->n_entries, fde;

	while (lo < hi) { /* first entry above vaddr */
		uint64_t mid = lo + (hi - lo) / 2;

		if (p->hdr.vaddr + (uint64_t)(int64_t)rd_s32(p->table + mid * 8) <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	fde = p->hdr.vaddr + (uint64_t)(int64_t)rd_s32(p->table + (lo - 1) * 8 + 4);
	if (fde < p->eh.vaddr || fde - p->eh.vaddr >= p->eh.len)
		return -1;
	return (int64_t)(fde - p->eh.vaddr);
}

/* Parses the FDE covering vaddr into p's set. 1 added, 0 none covers it, -ENOMEM. */
static int fde_add(struct unwind_partial *p, uint64_t vaddr, uint64_t now_ms)
{
	struct cfi_rows *r = &p->scratch;
	struct base_guard g;
	volatile int64_t off = -1;
	volatile int err = 0;
	struct pfde f;

	cfi_rows__fini(r);
	base_guard_push(&g);
	if (sigsetjmp(g.jb, 0) == 0) {
		off = hdr_lookup(p, vaddr);
		if (off >= 0)
			err = cfi_parse_fde_at(p->eh.p, p->eh.len, p->eh.vaddr, (size_t)off, r);
	}
	base_guard_pop(&g);
	if (g.faulted) {
		cfi_rows__fini(r);
		p->broken = true;
		p->st.bus_faults++;
		return -EIO;
	}
	if (off < 0)
		return 0;
	/* rows of the FDE, then its gap row at its end (vaddrs below 4 GiB) */
	if (err || r->n < 2 || r->rows[r->n - 1].cfa_kind != HEARTH_CFA_NONE ||
	    vaddr < r->rows[0].pc || vaddr >= r->rows[r->n - 1].pc) {
		cfi_rows__fini(r);
		return err == -ENOMEM ? err : 0;
	}
	f = (struct pfde){r->rows[0].pc, r->rows[r->n - 1].pc, now_ms, r->rows, (uint32_t)r->n};
	memset(r, 0, sizeof(*r)); /* the rows are f's now */
	if (base_grow((void **)&p->fdes, &p->cap_fdes, p->n_fdes + 1, sizeof(*p->fdes))) {
		free(f.rows);
		return -ENOMEM;
	}
	p->fdes[p->n_fdes++] = f;
	p->rows += f.n;
	mem_budget__charge(MEM_UNWIND, (int64_t)(f.n * sizeof(*f.rows)));
	return 1;
}

/* Drops the FDE asked for least recently. */
static void drop_coldest(struct unwind_partial *p)
{
	size_t c = 0;

	for (size_t i = 1; i < p->n_fdes; i++)
		if (p->fdes[i].last_ms < p->fdes[c].last_ms)
			c = i;
	p->rows -= p->fdes[c].n;
	fde_free(&p->fdes[c]);
	p->fdes[c] = p->fdes[--p->n_fdes];
	p->st.fdes_dropped++;
}

int unwind_partial__resolve(struct unwind_partial *p, uint64_t now_ms, struct cfi_rows *out)
{
	const struct hearth_unwind_row first = {.pc = 0, .cfa_kind = HEARTH_CFA_NONE};
	bool changed = false;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (p->broken)
		return -EIO;
	if (!base_guard_ready()) /* installed at build: cannot fail now, but say so */
		return -ENOTSUP;
	for (size_t i = 0; i < p->n_wants; i++) {
		struct pfde *f = fde_covering(p, p->wants[i]);
		int r;

		if (f) {
			f->last_ms = now_ms;
			continue;
		}
		r = fde_add(p, p->wants[i], now_ms);
		if (r < 0) {
			err = r;
			break;
		}
		if (r == 0)
			p->st.not_covered++;
		p->st.fdes_added += (uint64_t)r;
		changed |= r > 0;
	}
	p->n_wants = 0;
	/* the touched file pages leave our RSS (they stay in the page cache) */
	madvise(p->hdr.map, p->hdr.map_len, MADV_DONTNEED);
	madvise(p->eh.map, p->eh.map_len, MADV_DONTNEED);
	while (p->rows + 1 > UNWIND_PARTIAL_MAX_ROWS && p->n_fdes) {
		drop_coldest(p);
		changed = true;
	}
	if (err || !changed)
		return err;
	if (base_grow((void **)&out->rows, &out->cap, p->rows + 1, sizeof(*out->rows)))
		return -ENOMEM;
	out->rows[out->n++] = first;
	for (size_t i = 0; i < p->n_fdes; i++) {
		memcpy(out->rows + out->n, p->fdes[i].rows, p->fdes[i].n * sizeof(*out->rows));
		out->n += p->fdes[i].n;
	}
	out->fdes = p->n_fdes;
	cfi_rows__finish(out);
	return 1;
}

void unwind_partial__stats(const struct unwind_partial *p, struct unwind_partial_stats *out)
{
	*out = p->st;
	out->fdes = p->n_fdes;
	out->rows = p->rows;
	out->heap_bytes =
	    p->rows * sizeof(struct hearth_unwind_row) + p->cap_fdes * sizeof(*p->fdes);
}
