/*
 * sym_dwarf: file:line and inlined frames for an ELF virtual address, from DWARF through
 * elfutils libdw, and the search for a separate debug file (.build-id tree, .gnu_debuglink).
 *
 * Constraints: DWARF is outside input (corrupt, truncated, lying about sizes); libdw
 * reports errors as NULL/-1 and we turn each into "no frames" plus a counted failure,
 * never a crash. A handle holds one fd and libdw's lazily parsed per-CU data; the
 * symbolizer accounts its bytes against the cache budget and closes it on eviction.
 * Strings handed out point into libdw's (mapped) sections: valid while the handle is
 * open, so callers copy them before anything can close it.
 * References: DWARF 5 §3.3.8 (inlined subroutines: DW_AT_call_file/call_line),
 * §6.2 (line number information); GDB manual "Separate Debug Files" (debuglink CRC32,
 * .build-id/xx/rest.debug).
 */
#include "symbolize/sym_internal.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* A concrete function's address range and where its DIE is. */
struct fn_range {
	uint64_t lo, hi;
	Dwarf_Off die;
};

/*
 * Names of function DIEs by DIE offset. Reading a name follows DW_AT_abstract_origin and
 * DW_AT_specification chains (dwarf_attr_integrate): a tenth of a cold lookup, for the
 * same few thousand functions again and again. Strings are libdw's (valid while open).
 */
struct name_slot {
	Dwarf_Off off; /* 0 = empty (no DIE lies at offset 0: a CU header does) */
	const char *sys, *plain;
};

#define SYM_NAMES_MIN 1024
#define SYM_NAMES_MAX (1u << 18) /* 6 MiB; past half of it, the cache starts over */

/* Deepest nesting of DIEs walked; deeper input is corrupt or hostile. */
#define SYM_DWARF_MAX_DEPTH 64

/* Concrete functions sorted by lo. */
struct fn_index {
	struct fn_range *fns; /* owned */
	size_t n, cap;
};

/* One CU's index, built when an address first falls in it. */
struct cu_slot {
	Dwarf_Off off; /* the CU DIE's offset; 0 = empty slot */
	struct fn_index idx;
};

/*
 * Two ways to the function holding an address: with .debug_aranges (what GCC emits),
 * aranges -> CU -> that CU's index, built on first use, so a profile touching a few
 * CUs of a big library walks only those; without, one index of every CU, built once.
 */
struct sym_dwarf {
	int fd;
	Elf *elf; /* ELF_C_READ: sections pread into memory, never mmap'd */
	Dwarf *dw;
	uint64_t bytes;	       /* the file's .debug_* sections: what libdw maps and indexes */
	int use_aranges;       /* 0 unknown, 1 yes, -1 no */
	bool indexed;	       /* `all` built */
	struct fn_index all;   /* owned: every CU, when there are no aranges */
	struct cu_slot *cus;   /* owned: open addressing by CU offset */
	size_t n_cus, cap_cus; /* cap_cus a power of two */
	uint64_t idx_bytes;    /* in all indexes and the name cache */
	struct name_slot *names;   /* owned: open addressing by DIE offset */
	size_t n_names, cap_names; /* cap_names a power of two */
};

/*
 * Whether a DWARF string section ends in a NUL byte. libdw 0.188 reads names from
 * .debug_str/.debug_line_str with strlen() and no bound (found by fuzz_elf: a
 * heap overflow in dwarf_getsrclines); a file whose string section runs off its
 * end must not reach it. Compressed sections are inflated first (libdw would).
 */
static bool strings_terminated(Elf_Scn *scn, const GElf_Shdr *sh, const char *name)
{
	static const char *const strs[] = { ".debug_str", ".debug_line_str", ".zdebug_str",
					    ".zdebug_line_str" };
	bool is_str = false;
	Elf_Data *data;

	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		is_str |= !strcmp(name, strs[i]);
	if (!is_str)
		return true;
	if (sh->sh_flags & SHF_COMPRESSED)
		elf_compress(scn, 0, 0);
	else if (!strncmp(name, ".zdebug_", 8))
		elf_compress_gnu(scn, 0, 0);
	data = elf_getdata(scn, NULL);
	if (!data || data->d_size == 0)
		return true;
	return data->d_buf && ((const char *)data->d_buf)[data->d_size - 1] == '\0';
}

/* Sum of .debug_* section sizes; 0 when there is no .debug_info, or when a string
 * section is not NUL-terminated (see strings_terminated). */
static uint64_t debug_bytes(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	uint64_t sum = 0;
	bool info = false;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (strncmp(name, ".debug_", 7) && strncmp(name, ".zdebug_", 8))
			continue;
		info |= !strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info");
		if (!strings_terminated(scn, &sh, name))
			return 0;
		sum += sh.sh_size;
	}
	return info ? sum : 0;
}

int sym_dwarf__open(const char *path, struct sym_dwarf **out)
{
	struct sym_dwarf *d = calloc(1, sizeof(*d));
	Elf *elf;
	struct stat st;
	int err;

	*out = NULL;
	if (!d)
		return -ENOMEM;
	d->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (d->fd < 0) {
		err = -errno;
		goto cleanup;
	}
	err = -ENOENT;
	if (fstat(d->fd, &st) != 0 || !S_ISREG(st.st_mode))
		goto cleanup;
	elf_version(EV_CURRENT);
	/* ELF_C_READ: pread, never mmap (dwarf_begin on an fd would map it); a file
	 * truncated under us cannot SIGBUS the profiler */
	d->elf = elf = elf_begin(d->fd, ELF_C_READ, NULL);
	d->bytes = elf && elf_kind(elf) == ELF_K_ELF ? debug_bytes(elf) : 0;
	if (!d->bytes || !(d->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL)))
		goto cleanup;
	*out = d;
	return 0;
cleanup:
	sym_dwarf__close(d);
	return err;
}

void sym_dwarf__close(struct sym_dwarf *d)
{
	if (!d)
		return;
	if (d->dw)
		dwarf_end(d->dw);
	if (d->elf)
		elf_end(d->elf);
	free(d->all.fns);
	for (size_t i = 0; i < d->cap_cus; i++)
		free(d->cus[i].idx.fns);
	free(d->cus);
	free(d->names);
	if (d->fd >= 0)
		close(d->fd);
	free(d);
}

uint64_t sym_dwarf__bytes(const struct sym_dwarf *d)
{
	return d ? d->bytes + sizeof(*d) + d->idx_bytes + d->cap_cus * sizeof(*d->cus) : 0;
}

/* Linkage name when there is one (C++, Rust), else the plain name; follows origins. */
static const char *die_name(Dwarf_Die *die, const char **plain)
{
	Dwarf_Attribute a;
	const char *link = NULL;

	*plain = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		link = dwarf_formstring(&a);
	if (dwarf_attr_integrate(die, DW_AT_name, &a))
		*plain = dwarf_formstring(&a);
	return link ? link : *plain;
}

static struct name_slot *name_probe(struct name_slot *t, size_t cap, Dwarf_Off off)
{
	size_t i = (size_t)((off * 0x9e3779b97f4a7c15ULL) >> 20) & (cap - 1);

	while (t[i].off && t[i].off != off)
		i = (i + 1) & (cap - 1);
	return &t[i];
}

/* Room for one more name (at most half full): grown, or emptied at the cap. */
static bool names_room(struct sym_dwarf *d)
{
	size_t cap = d->cap_names ? d->cap_names * 2 : SYM_NAMES_MIN;
	struct name_slot *t;

	if (d->n_names < d->cap_names / 2)
		return true;
	if (d->cap_names >= SYM_NAMES_MAX) {
		memset(d->names, 0, d->cap_names * sizeof(*d->names));
		d->n_names = 0;
		return true;
	}
	if (!(t = calloc(cap, sizeof(*t))))
		return false;
	for (size_t i = 0; i < d->cap_names; i++)
		if (d->names[i].off)
			*name_probe(t, cap, d->names[i].off) = d->names[i];
	free(d->names);
	d->idx_bytes += (cap - d->cap_names) * sizeof(*t);
	d->names = t;
	d->cap_names = cap;
	return true;
}

/* die_name through the cache. */
static const char *die_name_cached(struct sym_dwarf *d, Dwarf_Die *die, const char **plain)
{
	Dwarf_Off off = dwarf_dieoffset(die);
	struct name_slot *t;
	const char *sys;

	if (!off || off == (Dwarf_Off)-1 || !names_room(d))
		return die_name(die, plain);
	t = name_probe(d->names, d->cap_names, off);
	if (t->off) {
		*plain = t->plain;
		return t->sys;
	}
	sys = die_name(die, plain);
	*t = (struct name_slot){.off = off, .sys = sys, .plain = *plain};
	d->n_names++;
	return sys;
}

/* File name number idx of the CU's line table, NULL when out of range. */
static const char *cu_file(Dwarf_Die *cu, Dwarf_Word idx)
{
	Dwarf_Files *files;
	size_t n;

	if (dwarf_getsrcfiles(cu, &files, &n) != 0 || idx >= n)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

/* Where an inlined subroutine was called from (DW_AT_call_file / DW_AT_call_line). */
static void call_site(Dwarf_Die *cu, Dwarf_Die *inl, const char **file, int *line)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	*file = NULL;
	*line = 0;
	if (dwarf_attr(inl, DW_AT_call_file, &a) && dwarf_formudata(&a, &w) == 0)
		*file = cu_file(cu, w);
	if (dwarf_attr(inl, DW_AT_call_line, &a) && dwarf_formudata(&a, &w) == 0 && w < INT32_MAX)
		*line = (int)w;
}

/*
 * Frames from the scopes holding vaddr (innermost first): each inlined subroutine is
 * a frame at the current file:line, then the line moves to its call site; the
 * enclosing subprogram ends the walk. Returns the number of frames.
 */
static int frames_of_scopes(struct sym_dwarf *d, Dwarf_Die *cu, Dwarf_Die *scopes, int n,
			    const char *file, int line, struct sym_frame *f, size_t max)
{
	size_t k = 0;

	for (int i = 0; i < n && k < max; i++) {
		int tag = dwarf_tag(&scopes[i]);
		const char *plain;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		f[k].system_name = die_name_cached(d, &scopes[i], &plain);
		f[k].name = plain; /* the caller demangles system_name */
		f[k].file = file;
		f[k].line = line;
		f[k].inlined = tag == DW_TAG_inlined_subroutine;
		if (!f[k].system_name)
			f[k].system_name = f[k].name = "??";
		k++;
		if (tag == DW_TAG_subprogram)
			break;
		call_site(cu, &scopes[i], &file, &line);
	}
	if (k)
		f[k - 1].inlined = false;
	for (size_t i = 0; i + 1 < k; i++)
		f[i].inlined = true;
	return (int)k;
}

/* ---- the function index ---- */

/* Records every address range of a concrete function DIE. 0 or -ENOMEM. */
static int index_function(struct fn_index *d, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	struct fn_range *f;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		if (!(f = sym_grow(d->fns, &d->cap, d->n + 1, sizeof(*f))))
			return -ENOMEM;
		d->fns = f;
		f[d->n++] = (struct fn_range){lo, hi, dwarf_dieoffset(die)};
	}
	return 0;
}

/* DIEs whose children may hold function definitions. */
static bool may_hold_functions(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
	       tag == DW_TAG_structure_type || tag == DW_TAG_union_type || tag == DW_TAG_module ||
	       tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block;
}

static int index_children(struct fn_index *d, Dwarf_Die *parent, int depth)
{
	Dwarf_Die c;
	int err = 0, r;

	if (depth > SYM_DWARF_MAX_DEPTH)
		return -EIO;
	if ((r = dwarf_child(parent, &c)) != 0)
		return r < 0 ? -EIO : 0;
	do {
		int tag = dwarf_tag(&c);

		if (tag == DW_TAG_invalid)
			return -EIO;
		if (tag == DW_TAG_subprogram && (err = index_function(d, &c)))
			return err;
		if (may_hold_functions(tag) && dwarf_haschildren(&c) > 0 &&
		    (err = index_children(d, &c, depth + 1)))
			return err;
	} while ((r = dwarf_siblingof(&c, &c)) == 0);
	return r < 0 ? -EIO : 0;
}

static int fn_cmp(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void index_sort(struct fn_index *x)
{
	if (x->n)
		qsort(x->fns, x->n, sizeof(*x->fns), fn_cmp);
}

/* Walks every CU once. 0, -ENOMEM, or -EIO (corrupt: what was read is kept). */
static int build_index(struct sym_dwarf *d)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf_Die cu;
	int err = 0, r;

	d->indexed = true;
	while ((r = dwarf_nextcu(d->dw, off, &next, &hsize, NULL, NULL, NULL)) == 0) {
		int cu_err =
		    dwarf_offdie(d->dw, off + hsize, &cu) ? index_children(&d->all, &cu, 0) : -EIO;

		if (cu_err)
			err = cu_err; /* a corrupt CU: the others are still indexed */
		if (err == -ENOMEM)
			break;
		off = next;
	}
	if (r < 0 && !err)
		err = -EIO;
	index_sort(&d->all);
	d->idx_bytes += d->all.cap * sizeof(*d->all.fns);
	return err;
}

/* Doubles the CU table (kept at most half full). 0 or -ENOMEM. */
static int cus_grow(struct sym_dwarf *d)
{
	size_t cap = d->cap_cus ? d->cap_cus * 2 : 64;
	struct cu_slot *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < d->cap_cus; i++) {
		size_t j;

		if (!d->cus[i].off)
			continue;
		for (j = (d->cus[i].off * 0x9e3779b97f4a7c15ULL) >> 20 & (cap - 1); n[j].off;)
			j = (j + 1) & (cap - 1);
		n[j] = d->cus[i];
	}
	free(d->cus);
	d->cus = n;
	d->cap_cus = cap;
	return 0;
}

/*
 * The index of the CU whose DIE is at cu, built now if new. *out NULL on ENOMEM;
 * returns -EIO when the CU was corrupt (indexed as far as it could be read).
 */
static int cu_index(struct sym_dwarf *d, Dwarf_Die *cu, struct fn_index **out)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	size_t j;
	int err;

	*out = NULL;
	if ((d->n_cus + 1) * 2 > d->cap_cus && cus_grow(d))
		return -ENOMEM;
	for (j = (off * 0x9e3779b97f4a7c15ULL) >> 20 & (d->cap_cus - 1); d->cus[j].off;
	     j = (j + 1) & (d->cap_cus - 1)) {
		if (d->cus[j].off == off) {
			*out = &d->cus[j].idx;
			return 0;
		}
	}
	d->cus[j].off = off;
	d->n_cus++;
	err = index_children(&d->cus[j].idx, cu, 0);
	index_sort(&d->cus[j].idx);
	d->idx_bytes += d->cus[j].idx.cap * sizeof(struct fn_range);
	*out = &d->cus[j].idx;
	return err;
}

/* The index to search for vaddr: its CU's through aranges, else the whole one. */
static int index_for(struct sym_dwarf *d, uint64_t vaddr, struct fn_index **out)
{
	Dwarf_Aranges *ar;
	Dwarf_Die cu;
	size_t n;
	int err;

	*out = NULL;
	if (!d->use_aranges)
		d->use_aranges = dwarf_getaranges(d->dw, &ar, &n) == 0 && n > 0 ? 1 : -1;
	if (d->use_aranges > 0)
		return dwarf_addrdie(d->dw, vaddr, &cu) ? cu_index(d, &cu, out) : 0;
	/* a damaged index is reported once, by the lookup that built it */
	err = d->indexed ? 0 : build_index(d);
	*out = &d->all;
	return err;
}

/* The innermost concrete function holding vaddr, or NULL. */
static const struct fn_range *find_function(const struct fn_index *d, uint64_t vaddr)
{
	size_t lo = 0, hi = d->n;

	while (lo < hi) { /* first range with lo > vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (d->fns[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i > 0 && k < 4; i--, k++) /* nested ranges are rare */
		if (vaddr < d->fns[i - 1].hi)
			return &d->fns[i - 1];
	return NULL;
}

/*
 * scopes[0] = the function, then each inlined subroutine (or lexical block) holding
 * vaddr, outermost to innermost. Returns how many.
 */
static int inline_chain(Dwarf_Die *fn, uint64_t vaddr, Dwarf_Die *scopes, int max)
{
	int n = 1;
	Dwarf_Die c;

	scopes[0] = *fn;
	while (n < max && dwarf_child(&scopes[n - 1], &c) == 0) {
		bool found = false;

		do {
			int tag = dwarf_tag(&c);

			if ((tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block) &&
			    dwarf_haspc(&c, vaddr) == 1) {
				scopes[n++] = c;
				found = true;
				break;
			}
		} while (dwarf_siblingof(&c, &c) == 0);
		if (!found)
			break;
	}
	return n;
}

int sym_dwarf__lookup(struct sym_dwarf *d, uint64_t vaddr, struct sym_frame *frames, size_t max)
{
	Dwarf_Die fn, cu, scopes[SYM_DWARF_MAX_DEPTH], inner[SYM_DWARF_MAX_DEPTH];
	const struct fn_range *r;
	struct fn_index *idx;
	Dwarf_Line *l;
	const char *file = NULL;
	int line = 0, n, err;

	if (!d)
		return 0;
	if ((err = index_for(d, vaddr, &idx)) || !idx)
		return err;
	if (!(r = find_function(idx, vaddr)))
		return 0;
	if (!dwarf_offdie(d->dw, r->die, &fn) || !dwarf_diecu(&fn, &cu, NULL, NULL))
		return -EIO;
	if ((l = dwarf_getsrc_die(&cu, vaddr))) {
		file = dwarf_linesrc(l, NULL, NULL);
		if (dwarf_lineno(l, &line) != 0 || line < 0)
			line = 0;
	}
	n = inline_chain(&fn, vaddr, scopes, SYM_DWARF_MAX_DEPTH);
	for (int i = 0; i < n; i++) /* innermost first, as frames are */
		inner[i] = scopes[n - 1 - i];
	return frames_of_scopes(d, &cu, inner, n, file, line, frames, max);
}

/* ---- separate debug files ---- */

/* Whether path is an ELF file whose build-id is bid. */
static bool build_id_matches(const char *path, const char *bid)
{
	struct sym_elf *e;
	char got[SYM_BUILD_ID_HEX];

	if (sym_elf__open(path, &e) != 0)
		return false;
	sym_elf__build_id(e, got, sizeof(got));
	sym_elf__close(e);
	return strcmp(got, bid) == 0;
}

int sym_debug__by_build_id(const char *root, const char *bid, char *out, size_t len)
{
	if (strlen(bid) < 4)
		return -ENOENT;
	snprintf(out, len, "%s/.build-id/%.2s/%s.debug", root ? root : "/usr/lib/debug", bid,
		 bid + 2);
	if (access(out, R_OK) != 0)
		return -ENOENT;
	/* a mismatched file (stale package, wrong link) is never used */
	return build_id_matches(out, bid) ? 0 : -ESTALE;
}

/* CRC32 (zlib's, the one GNU debuglink uses) of the whole file; -errno on failure. */
static int file_crc(const char *path, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, Z_NULL, 0);
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), err = 0;
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOENT;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		c = crc32(c, buf, (uInt)n);
	if (n < 0)
		err = -errno;
	close(fd);
	*crc = (uint32_t)c;
	return err;
}

/* Candidates in GDB's order: DIR/NAME, DIR/.debug/NAME, ROOT/DIR/NAME. */
static int debuglink_try(const char *root, const char *dir, const char *name, uint32_t crc,
			 const char *self, char *out, size_t len)
{
	static const char *const fmts[] = {"%s%s/%s", "%s%s/.debug/%s", "%s%s/%s"};
	uint32_t got;

	for (size_t i = 0; i < 3; i++) {
		const char *pre = i == 2 ? (root ? root : "/usr/lib/debug") : "";

		snprintf(out, len, fmts[i], pre, dir, name);
		if (!strcmp(out, self) || access(out, R_OK) != 0)
			continue;
		if (file_crc(out, &got) == 0 && got == crc)
			return 0;
	}
	return -ENOENT;
}

int sym_debug__by_debuglink(const char *root, const char *path, const char *name, uint32_t crc,
			    char *out, size_t len)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');

	if (!slash || !name[0] || strchr(name, '/'))
		return -ENOENT;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	return debuglink_try(root, dir, name, crc, path, out, len);
}
