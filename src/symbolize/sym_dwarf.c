/*
 * sym_dwarf: file:line and inlined frames for an ELF virtual address, from DWARF through
 * elfutils libdw, and the search for a separate debug file (.build-id tree, .gnu_debuglink).
 *
 * Constraints: DWARF is outside input (corrupt, truncated, lying about sizes); libdw
 * reports errors as NULL/-1 and we turn each into "no frames" plus a counted failure,
 * never a crash. A handle holds one fd and libdw's lazily parsed per-CU data; the
 * symbolizer accounts its bytes against the cache budget and closes it on eviction.
 * Strings handed out point into libdw's (mapped) sections or our demangled copies:
 * valid while the handle is open, so callers copy them before anything can close it.
 *
 * Speed. A lookup must not walk DIEs: reading one takes libdw's abbreviation table
 * lock, and dwarf_haspc decodes range lists. So the first address that falls in a CU
 * indexes the whole CU in one walk (functions, inlined calls with their ranges and call
 * sites, the line table's row addresses) and every later lookup in it is binary
 * searches over compact arrays; names are read, and demangled, once per scope.
 * References: DWARF 5 §3.3.8 (inlined subroutines: DW_AT_call_file/call_line),
 * §6.2 (line number information); GDB manual "Separate Debug Files" (debuglink CRC32,
 * .build-id/xx/rest.debug).
 */
#include "symbolize/sym_internal.h"
#include "base/base.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* Deepest nesting of DIEs walked; deeper input is corrupt or hostile. */
#define SYM_DWARF_MAX_DEPTH 64
#define SCOPE_NONE	    UINT32_MAX

/*
 * A scope that makes a frame: a concrete function, or a call inlined into one. Its
 * name is read from its DIE on first use (following DW_AT_abstract_origin and
 * DW_AT_specification, which is slow) and kept; strings are libdw's or d->dem's.
 */
struct scope {
	Dwarf_Off die;
	const char *sys;       /* linkage name, else plain name, "??" when none; NULL: unread */
	const char *name;      /* shown: demangled, else plain, else sys */
	const char *call_file; /* inlined: where it was called from, NULL when unknown */
	uint32_t call_line;
	uint32_t kids, n_kids; /* ranges of the scopes inlined into it: cu_index.kids[kids..] */
	bool inlined;
};

/*
 * [lo, hi) of one scope. In cu_index.fns (concrete functions, sorted by lo) and
 * sym_dwarf.all, owner is the CU (its place in sym_dwarf.cu_list); in cu_index.kids,
 * grouped by parent and sorted by lo within a group, owner is the parent scope. kids
 * and n_kids repeat the scope's: the walk inwards reads ranges only (one cache line a
 * step), the scopes only once the chain is known.
 */
struct scope_range {
	uint64_t lo, hi;
	uint32_t scope, owner;
	uint32_t kids, n_kids;
};

/* Every LINE_STEP-th row address is in cu_index.line_top: a search reads that small
 * array, then one LINE_STEP-row block (two cache lines) of line_addr. */
#define LINE_STEP 16

/*
 * One CU, indexed when an address first falls in it: one walk of its DIEs collects every
 * function and inlined call with its ranges and call site, so a lookup is binary
 * searches, never a DIE walk. The line table (libdw decodes it once) gets a copy of its
 * row addresses: searching 8-byte keys touches a fifth of the memory libdw's rows do.
 */
struct cu_index {
	Dwarf_Off off; /* the CU DIE's */
	struct scope_range *fns, *kids;
	size_t n_fns, n_kids;
	struct scope *scopes;
	size_t n_scopes;
	Dwarf_Lines *lines;  /* libdw's, NULL when the CU has none */
	uint64_t *line_addr; /* owned: row addresses of lines, sorted (libdw sorts rows) */
	uint64_t *line_top;  /* owned: line_addr[0], line_addr[LINE_STEP], ... */
	size_t n_lines, n_top;
};

/* A .debug_aranges entry: [lo, hi) is code of the CU at off (cu: in cu_list, or NONE). */
struct cu_span {
	uint64_t lo, hi;
	Dwarf_Off off;
	uint32_t cu;
};

/* CUs indexed so far, by CU DIE offset: open addressing, the value a cu_list index. */
/* CUs by DIE offset, and demangled names (below): open addressing with the key in the
 * slot, not a base_hmap, whose probe would read the caller's array for every compare
 * (a second cache miss per lookup on the address-resolving path). */
struct cu_slot {
	Dwarf_Off off; /* 0 = empty (a CU DIE never lies at offset 0: its header does) */
	uint32_t cu;
};

/* Demangled names by the linkage name's address (libdw's strings are stable). */
struct dem_slot {
	const char *sys; /* NULL = empty */
	char *shown;	 /* owned; NULL when sys does not demangle */
};

/*
 * Two ways to the function holding an address: with .debug_aranges (what GCC emits),
 * aranges -> CU -> that CU's index, built on first use, so a profile touching a few
 * CUs of a big library walks only those; without, every CU indexed at once and their
 * functions merged into one sorted array.
 */
/* Strings copied out of the mapped sections, by the address libdw gave. */
struct own_slot {
	const char *src; /* NULL = empty */
	char *copy;	 /* owned */
};

struct sym_dwarf {
	int fd;
	Elf *elf; /* ELF_C_READ_MMAP: sections mapped (read under a guard), or ELF_C_READ */
	Dwarf *dw;
	bool mapped; /* the file is mapped: every libdw call under a guard, strings copied */
	bool broken; /* a SIGBUS (the file shrank): libdw is never called again */
	struct own_slot *own; /* owned; cap_own a power of two, at most half full */
	size_t n_own, cap_own;
	uint64_t bytes;	       /* the file's .debug_* sections: what libdw maps and indexes */
	int use_aranges;       /* 0 unknown, 1 yes, -1 no */
	struct cu_span *spans; /* owned: aranges sorted by lo */
	size_t n_spans;
	bool indexed;		 /* `all` built */
	struct scope_range *all; /* owned: every CU's functions, when there are no aranges */
	size_t n_all;
	struct cu_index **cu_list; /* owned: every CU indexed so far */
	size_t n_cus, cap_cu_list;
	struct cu_slot *cus; /* owned: cu_list by CU offset; cap_cus a power of two */
	size_t cap_cus;
	struct dem_slot *dem; /* owned; cap_dem a power of two, at most half full */
	size_t n_dem, cap_dem;
	uint64_t idx_bytes; /* in all of the above */
	Elf_Data *line_sec; /* .debug_line as libdw reads it (found once) */
	bool line_sec_looked;
	uint64_t lines_skipped; /* CUs whose line table was too big to decode (LINE_COST) */
	bool no_inlines;	/* inlined subroutines not indexed (sym_dwarf__open) */
	uintptr_t drop_mark;	/* a walk's DIE address when pages were last dropped */
	unsigned names_read;	/* scopes named since pages were last dropped */
};

static bool strings_terminated(Elf_Scn *scn, const GElf_Shdr *sh, const char *name)
{
	static const char *const strs[] = {".debug_str", ".debug_line_str", ".zdebug_str",
					   ".zdebug_line_str"};
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

/*
 * What the .debug_* sections will hold in our memory: all of them read (not mapped), or
 * mapped, only the compressed ones (inflated into memory by libelf; their inflated size).
 * 0 when there is no .debug_info, or when a string section is not NUL-terminated (see
 * strings_terminated); 1 at least otherwise.
 */
static uint64_t debug_bytes(Elf *elf, bool mapped)
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
		if (!mapped) {
			sum += sh.sh_size;
		} else if (sh.sh_flags & SHF_COMPRESSED) {
			GElf_Chdr ch;

			sum += gelf_getchdr(scn, &ch) ? ch.ch_size : sh.sh_size;
		} else if (!strncmp(name, ".zdebug_", 8)) {
			sum += sh.sh_size * 4; /* GNU's legacy zlib sections: a guess */
		}
		if (!strings_terminated(scn, &sh, name))
			return 0;
	}
	return info ? (sum ? sum : 1) : 0;
}

/* debug_bytes and dwarf_begin_elf of a mapped file, under a guard. 0, -ENOENT (no
 * DWARF), -EIO (the file shrank meanwhile). */
static int open_mapped(struct sym_dwarf *d)
{
	struct base_guard g;
	volatile int err = -ENOENT;

	base_guard_push(&g);
	if (sigsetjmp(g.jb, 0) == 0) {
		d->bytes = d->elf && elf_kind(d->elf) == ELF_K_ELF ? debug_bytes(d->elf, true) : 0;
		if (d->bytes && (d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL)))
			err = 0;
	}
	base_guard_pop(&g);
	if (g.faulted) {
		d->broken = true;
		return -EIO;
	}
	return err;
}

int sym_dwarf__open(const char *path, bool no_inlines, struct sym_dwarf **out)
{
	struct sym_dwarf *d = calloc(1, sizeof(*d));
	Elf *elf;
	struct stat st;
	char zpath[4096];
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
	/* mapped (ELF_C_READ_MMAP: only the pages libdw reads become resident), every read
	 * of it under a guard (sym_map.c); else (no SIGBUS handler) pread */
	d->mapped = base_guard_ready();
	d->elf = elf = elf_begin(d->fd, d->mapped ? ELF_C_READ_MMAP : ELF_C_READ, NULL);
	/* compressed debug sections: their inflated copy on disk is mapped instead */
	if (d->mapped && elf && (err = sym_zcache__path(elf, d->fd, zpath, sizeof(zpath))) == 0 &&
	    strcmp(zpath, path)) {
		sym_dwarf__close(d);
		return sym_dwarf__open(zpath, no_inlines, out);
	}
	if (err == -EFBIG)
		goto cleanup;
	err = -ENOENT;
	if (!d->mapped) {
		d->bytes = elf && elf_kind(elf) == ELF_K_ELF ? debug_bytes(elf, false) : 0;
		if (!d->bytes || !(d->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL)))
			goto cleanup;
	} else if ((err = open_mapped(d)) != 0) {
		goto cleanup;
	}
	d->no_inlines = no_inlines;
	*out = d;
	return 0;
cleanup:
	sym_dwarf__close(d);
	return err;
}

static void cu_index_free(struct cu_index *ci)
{
	if (!ci)
		return;
	free(ci->fns);
	free(ci->kids);
	free(ci->scopes);
	free(ci->line_addr);
	free(ci->line_top);
	free(ci);
}

void sym_dwarf__close(struct sym_dwarf *d)
{
	if (!d)
		return;
	/* after a SIGBUS too: libdw faults while it decodes section bytes into memory of
	 * its own not yet linked anywhere (a leak at worst); what is linked is whole */
	if (d->dw)
		dwarf_end(d->dw);
	if (d->elf)
		elf_end(d->elf);
	for (size_t i = 0; i < d->cap_own; i++)
		free(d->own[i].copy);
	free(d->own);
	for (size_t i = 0; i < d->n_cus; i++)
		cu_index_free(d->cu_list[i]);
	free(d->cu_list);
	free(d->cus);
	free(d->spans);
	free(d->all);
	for (size_t i = 0; i < d->cap_dem; i++)
		free(d->dem[i].shown);
	free(d->dem);
	if (d->fd >= 0)
		close(d->fd);
	free(d);
}

void sym_dwarf__drop_pages(struct sym_dwarf *d)
{
	uintptr_t lo;
	size_t n = 0;
	char *p;

	/* ELF_C_READ_MMAP maps the file PROT_READ, MAP_PRIVATE: never written, so
	 * what faults back in is the same bytes */
	if (!d || !d->mapped || !d->elf || d->broken || !(p = elf_rawfile(d->elf, &n)) || !n)
		return;
	lo = (uintptr_t)p & ~(uintptr_t)4095;
	madvise((void *)lo, n + ((uintptr_t)p - lo), MADV_DONTNEED);
}

/*
 * Under a memory limit, the mapped file's pages libdw read are dropped as it reads on,
 * so that what a walk of a big object's DWARF leaves resident stays bounded: every
 * 4 KiB read of a mapped file puts 64 KiB in the RSS (the kernel's fault-around maps
 * the cached pages around a read fault; MADV_RANDOM does not stop it), and a CU's
 * walk reads its DIEs, range lists and strings (libpython3.11: 146 CUs, up to 920 KiB
 * of .debug_info each; 4-6 MiB of it resident at a profile's symbolization without
 * this). Dropped: after each CU indexed, every DWARF_DROP_BYTES of DIEs walked, every
 * DWARF_DROP_NAMES scopes named. A page read again faults back in from the page cache
 * (a few microseconds per 64 KiB).
 */
#define DWARF_DROP_BYTES (256u << 10)
#define DWARF_DROP_NAMES 8u

static void pages_bound(struct sym_dwarf *d)
{
	if (d->mapped && mem_budget__cache_budget())
		sym_dwarf__drop_pages(d);
	d->names_read = 0;
}

uint64_t sym_dwarf__bytes(const struct sym_dwarf *d)
{
	return d ? d->bytes + sizeof(*d) + d->idx_bytes : 0;
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

/* ---- strings handed out: never pointers into the mapping ---- */

static struct own_slot *own_probe(struct own_slot *t, size_t cap, const char *src)
{
	size_t i = (size_t)base_hash_u64(BASE_HASH_SEED, (uintptr_t)src) & (cap - 1);

	while (t[i].src && t[i].src != src)
		i = (i + 1) & (cap - 1); /* layers: key in the slot (struct cu_slot says why) */
	return &t[i];
}

/*
 * p as callers may keep it: p itself when d is not mapped; else a copy made on first
 * sight of p (read under the caller's guard) and kept with d. NULL for NULL, and on
 * ENOMEM (an unknown name rather than a pointer into the mapping).
 */
static const char *own(struct sym_dwarf *d, const char *p)
{
	struct own_slot *t;
	size_t cap = d->cap_own ? d->cap_own * 2 : 256;

	if (!p || !d->mapped)
		return p;
	if (d->n_own >= d->cap_own / 2) {
		struct own_slot *nt = calloc(cap, sizeof(*nt));

		if (!nt)
			return NULL;
		for (size_t i = 0; i < d->cap_own; i++)
			if (d->own[i].src)
				*own_probe(nt, cap, d->own[i].src) = d->own[i];
		free(d->own);
		d->idx_bytes += (cap - d->cap_own) * sizeof(*nt);
		d->own = nt;
		d->cap_own = cap;
	}
	t = own_probe(d->own, d->cap_own, p);
	if (!t->src) {
		if (!(t->copy = strdup(p)))
			return NULL;
		t->src = p;
		d->n_own++;
		d->idx_bytes += strlen(t->copy) + 1;
	}
	return t->copy;
}

/* ---- demangled names, once per linkage name ---- */

static struct dem_slot *dem_probe(struct dem_slot *t, size_t cap, const char *sys)
{
	size_t i = (size_t)base_hash_u64(BASE_HASH_SEED, (uintptr_t)sys) & (cap - 1);

	while (t[i].sys && t[i].sys != sys)
		i = (i + 1) & (cap - 1); /* layers: key in the slot (struct cu_slot says why) */
	return &t[i];
}

/* Room for one more entry (at most half full). false on ENOMEM. */
static bool dem_room(struct sym_dwarf *d)
{
	size_t cap = d->cap_dem ? d->cap_dem * 2 : 256;
	struct dem_slot *t;

	if (d->n_dem < d->cap_dem / 2)
		return true;
	if (!(t = calloc(cap, sizeof(*t))))
		return false;
	for (size_t i = 0; i < d->cap_dem; i++)
		if (d->dem[i].sys)
			*dem_probe(t, cap, d->dem[i].sys) = d->dem[i];
	free(d->dem);
	d->idx_bytes += (cap - d->cap_dem) * sizeof(*t);
	d->dem = t;
	d->cap_dem = cap;
	return true;
}

/* sys demangled (owned by d), or NULL when it is no mangled name (or on ENOMEM). */
static const char *demangled(struct sym_dwarf *d, const char *sys)
{
	struct dem_slot *t;

	if (sys[0] != '_' || (sys[1] != 'Z' && sys[1] != 'R') || !dem_room(d))
		return NULL;
	t = dem_probe(d->dem, d->cap_dem, sys);
	if (!t->sys) {
		t->sys = sys;
		t->shown = sym_demangle(sys);
		d->n_dem++;
		d->idx_bytes += t->shown ? strlen(t->shown) + 1 : 0;
	}
	return t->shown;
}

/* Reads s's names on its first frame. */
static void scope_name(struct sym_dwarf *d, struct scope *s)
{
	Dwarf_Die die;
	const char *plain = NULL,
		   *sys = dwarf_offdie(d->dw, s->die, &die) ? die_name(&die, &plain) : NULL;
	const char *dem;

	if (sys == plain) /* the same string: one copy */
		sys = plain = own(d, sys);
	else
		sys = own(d, sys), plain = own(d, plain);
	if (!sys) {
		s->sys = s->name = "??";
		return;
	}
	dem = demangled(d, sys);
	s->sys = sys;
	s->name = dem ? dem : plain ? plain : sys;
	if (++d->names_read >= DWARF_DROP_NAMES)
		pages_bound(d); /* after own(): the names are copies */
}

/* ---- one CU's index ---- */

/* A CU's index while its DIEs are walked. */
struct cu_build {
	struct cu_index *ci;
	size_t cap_fns, cap_kids, cap_scopes;
	uint32_t cu; /* ci's place in cu_list */
	struct sym_dwarf *d;
	Dwarf_Files *files; /* the CU's file names, for call sites; NULL when none */
	size_t n_files;
	bool c_lang; /* a C CU: its structs and unions hold no functions */
};

/* File name number idx of the CU's line table, NULL when out of range. */
static const char *cu_file(const struct cu_build *b, Dwarf_Word idx)
{
	return b->files && idx < b->n_files ? own(b->d, dwarf_filesrc(b->files, idx, NULL, NULL))
					    : NULL;
}

/* Where an inlined subroutine was called from (DW_AT_call_file / DW_AT_call_line). */
static void call_site(const struct cu_build *b, Dwarf_Die *inl, struct scope *s)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (dwarf_attr(inl, DW_AT_call_file, &a) && dwarf_formudata(&a, &w) == 0)
		s->call_file = cu_file(b, w);
	if (dwarf_attr(inl, DW_AT_call_line, &a) && dwarf_formudata(&a, &w) == 0 && w < INT32_MAX)
		s->call_line = (uint32_t)w;
}

/*
 * A new scope for die when it has code: its ranges go to fns (parent SCOPE_NONE) or
 * to kids of parent. *out = the scope, or SCOPE_NONE when die has no range. 0 or -ENOMEM.
 */
static int scope_add(struct cu_build *b, Dwarf_Die *die, uint32_t parent, uint32_t *out)
{
	struct cu_index *ci = b->ci;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	uint32_t id = (uint32_t)ci->n_scopes;
	struct scope_range *r;
	struct scope *s;

	*out = SCOPE_NONE;
	if (ci->n_scopes >= SCOPE_NONE || ci->n_kids >= SCOPE_NONE)
		return -ENOMEM; /* not a real CU */
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		bool fn = parent == SCOPE_NONE;
		size_t *n = fn ? &ci->n_fns : &ci->n_kids;

		if (lo >= hi)
			continue;
		if (base_grow((void **)(fn ? &ci->fns : &ci->kids), fn ? &b->cap_fns : &b->cap_kids,
			      *n + 1, sizeof(*r)))
			return -ENOMEM;
		r = fn ? ci->fns : ci->kids;
		r[(*n)++] = (struct scope_range){lo, hi, id, fn ? b->cu : parent, 0, 0};
		*out = id;
	}
	if (*out == SCOPE_NONE)
		return 0;
	if (base_grow((void **)&ci->scopes, &b->cap_scopes, ci->n_scopes + 1, sizeof(*s)))
		return -ENOMEM;
	s = &ci->scopes[ci->n_scopes++];
	*s = (struct scope){.die = dwarf_dieoffset(die), .inlined = parent != SCOPE_NONE};
	if (s->inlined)
		call_site(b, die, s);
	return 0;
}

/* DIEs whose children may hold function definitions (walked with no enclosing scope). */
static bool may_hold_functions(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
	       tag == DW_TAG_structure_type || tag == DW_TAG_union_type || tag == DW_TAG_module;
}

/* Whether the CU's language is C (DW_LANG_C89, C, C99, C11, C17). */
static bool cu_is_c(Dwarf_Die *cu)
{
	int lang = dwarf_srclang(cu);

	return lang == 0x1 || lang == 0x2 || lang == 0xc || lang == 0x1d || lang == 0x2c;
}

/*
 * The children of parent_die, inside scope (SCOPE_NONE: outside any function). Lexical
 * blocks are seen through: what is inlined in one is inlined in its function. A C
 * CU's structs and unions are not walked (members only), nor, when d->no_inlines, the
 * calls inlined into a function (a node's DWARF, 111 C CUs: its members, parameters
 * and variables are most DIEs). 0, -ENOMEM, or -EIO (corrupt: what was read is kept).
 */
static int walk(struct cu_build *b, Dwarf_Die *parent_die, uint32_t scope, int depth)
{
	Dwarf_Die c;
	int err = 0, r;

	if (depth > SYM_DWARF_MAX_DEPTH)
		return -EIO;
	if ((r = dwarf_child(parent_die, &c)) != 0)
		return r < 0 ? -EIO : 0;
	do {
		int tag = dwarf_tag(&c);
		uint32_t inner = scope;

		if (tag == DW_TAG_invalid)
			return -EIO;
		if ((uintptr_t)c.addr - b->d->drop_mark > DWARF_DROP_BYTES) {
			pages_bound(b->d); /* (also when the walk moved back: unsigned) */
			b->d->drop_mark = (uintptr_t)c.addr;
		}
		if (tag == DW_TAG_subprogram)
			err = scope_add(b, &c, SCOPE_NONE, &inner);
		else if (tag == DW_TAG_inlined_subroutine && scope != SCOPE_NONE &&
			 b->d->no_inlines)
			continue;
		else if (tag == DW_TAG_inlined_subroutine && scope != SCOPE_NONE)
			err = scope_add(b, &c, scope, &inner);
		else if (b->c_lang && (tag == DW_TAG_structure_type || tag == DW_TAG_union_type))
			continue;
		else if (may_hold_functions(tag))
			inner = SCOPE_NONE;
		else if (tag != DW_TAG_lexical_block && tag != DW_TAG_inlined_subroutine)
			continue;
		if (!err && dwarf_haschildren(&c) > 0)
			err = walk(b, &c, inner, depth + 1);
		if (err)
			return err;
	} while ((r = dwarf_siblingof(&c, &c)) == 0);
	return r < 0 ? -EIO : 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct scope_range *x = a, *y = b;

	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int range_lo_cmp(const void *a, const void *b)
{
	const struct scope_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorts kids by parent, then lo; tells each scope, and each range, where its group is. */
static void kids_link(struct cu_index *ci)
{
	if (ci->n_kids)
		qsort(ci->kids, ci->n_kids, sizeof(*ci->kids), range_cmp);
	for (size_t i = 0; i < ci->n_kids; i++) {
		struct scope *p = &ci->scopes[ci->kids[i].owner];

		if (!p->n_kids++)
			p->kids = (uint32_t)i;
	}
	for (size_t i = 0; i < ci->n_kids; i++) {
		ci->kids[i].kids = ci->scopes[ci->kids[i].scope].kids;
		ci->kids[i].n_kids = ci->scopes[ci->kids[i].scope].n_kids;
	}
	for (size_t i = 0; i < ci->n_fns; i++) {
		ci->fns[i].kids = ci->scopes[ci->fns[i].scope].kids;
		ci->fns[i].n_kids = ci->scopes[ci->fns[i].scope].n_kids;
	}
}

/*
 * What libdw's decoded line table costs, per byte of the CU's line program (measured
 * on libpython3.11's biggest CUs with libdw 0.188: ~80 bytes a row, a row per ~3.9
 * bytes: 21-23 bytes kept per byte; while decoding, a malloc'd list node per row and
 * a sort's copy about double it). The kept part is counted with the handle; a table
 * whose decoding alone would pass a quarter of the caches' share under a memory limit
 * is not decoded (that CU resolves functions, without file:line): one CU of
 * libpython's unicodeobject.c (276 KB of line program, 71k rows) held 14.6 MB at the
 * agent's peak.
 */
#define LINE_COST_KEPT 24
#define LINE_COST_PEAK 56

/* .debug_line, or NULL. */
static Elf_Data *line_section(struct sym_dwarf *d)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t shstr;

	if (d->line_sec_looked)
		return d->line_sec;
	d->line_sec_looked = true;
	if (!(e = dwarf_getelf(d->dw)) || elf_getshdrstrndx(e, &shstr))
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(e, shstr, sh.sh_name)) &&
		    !strcmp(name, ".debug_line")) {
			d->line_sec = elf_getdata(scn, NULL);
			break;
		}
	}
	return d->line_sec;
}

/* Bytes of cu's line program (its unit_length), 0 when unknown. */
static uint64_t line_program_bytes(struct sym_dwarf *d, Dwarf_Die *cu)
{
	Dwarf_Attribute at;
	Dwarf_Word off;
	Elf_Data *sec;
	uint32_t len32;
	uint64_t len;

	if (!dwarf_attr(cu, DW_AT_stmt_list, &at) || dwarf_formudata(&at, &off) ||
	    !(sec = line_section(d)) || !sec->d_buf || off > sec->d_size || sec->d_size - off < 4)
		return 0;
	memcpy(&len32, (const char *)sec->d_buf + off, 4);
	if (len32 != 0xffffffffu)
		return len32;
	if (sec->d_size - off < 12)
		return 0;
	memcpy(&len, (const char *)sec->d_buf + off + 4, 8);
	return len;
}

/* Whether decoding cu's line table fits under the memory limit (always without one). */
static bool lines_fit(struct sym_dwarf *d, Dwarf_Die *cu, uint64_t *kept)
{
	uint64_t budget = mem_budget__cache_budget(), len = line_program_bytes(d, cu);

	*kept = len * LINE_COST_KEPT;
	if (budget && len > budget / 4 / LINE_COST_PEAK) {
		d->lines_skipped++;
		return false;
	}
	return true;
}

/* The CU's line table and a copy of its row addresses. 0 or -ENOMEM (no table: 0). */
static int lines_load(struct cu_index *ci, Dwarf_Die *cu)
{
	Dwarf_Addr a;
	size_t n;

	if (dwarf_getsrclines(cu, &ci->lines, &n) != 0 || !n) {
		ci->lines = NULL;
		return 0;
	}
	ci->n_top = (n + LINE_STEP - 1) / LINE_STEP;
	if (!(ci->line_addr = malloc(n * sizeof(*ci->line_addr))) ||
	    !(ci->line_top = malloc(ci->n_top * sizeof(*ci->line_top))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(ci->lines, i);

		/* libdw's rows are sorted; a row it would not hand out sorts first */
		ci->line_addr[i] = l && dwarf_lineaddr(l, &a) == 0 ? a : 0;
		if (i && ci->line_addr[i] < ci->line_addr[i - 1])
			ci->line_addr[i] = ci->line_addr[i - 1];
		if (i % LINE_STEP == 0)
			ci->line_top[i / LINE_STEP] = ci->line_addr[i];
	}
	ci->n_lines = n;
	return 0;
}

static uint64_t cu_index_bytes(const struct cu_build *b)
{
	return sizeof(*b->ci) + b->cap_fns * sizeof(*b->ci->fns) +
	       b->cap_kids * sizeof(*b->ci->kids) + b->cap_scopes * sizeof(*b->ci->scopes) +
	       b->ci->n_lines * sizeof(*b->ci->line_addr) + b->ci->n_top * sizeof(*b->ci->line_top);
}

/* Finds slot of off in d->cus (or the empty one where it goes). */
static struct cu_slot *cu_probe(struct cu_slot *t, size_t cap, Dwarf_Off off)
{
	size_t i = (size_t)base_hash_u64(BASE_HASH_SEED, off) & (cap - 1);

	while (t[i].off && t[i].off != off)
		i = (i + 1) & (cap - 1); /* layers: key in the slot (struct cu_slot says why) */
	return &t[i];
}

/* Room for one more CU in cu_list and cus (kept at most half full). 0 or -ENOMEM. */
static int cus_room(struct sym_dwarf *d)
{
	struct cu_index **list;
	struct cu_slot *t;
	size_t cap;

	if (d->n_cus >= UINT32_MAX - 1)
		return -ENOMEM;
	if (base_grow((void **)&d->cu_list, &d->cap_cu_list, d->n_cus + 1, sizeof(*list)))
		return -ENOMEM;
	if ((d->n_cus + 1) * 2 <= d->cap_cus)
		return 0;
	cap = d->cap_cus ? d->cap_cus * 2 : 64;
	if (!(t = calloc(cap, sizeof(*t))))
		return -ENOMEM;
	for (size_t i = 0; i < d->cap_cus; i++)
		if (d->cus[i].off)
			*cu_probe(t, cap, d->cus[i].off) = d->cus[i];
	free(d->cus);
	d->idx_bytes += (cap - d->cap_cus) * sizeof(*t);
	d->cus = t;
	d->cap_cus = cap;
	return 0;
}

/*
 * The index of the CU whose DIE is at off, built now if new, into *out (a cu_list
 * place). 0; -EIO when the CU is corrupt (indexed as far as it could be read; said only
 * by the call that built it); -ENOMEM with *out SCOPE_NONE.
 */
static int cu_get(struct sym_dwarf *d, Dwarf_Off off, uint32_t *out)
{
	struct cu_build b = {.cu = (uint32_t)d->n_cus, .d = d};
	struct cu_slot *slot;
	Dwarf_Die cu;
	int err;

	*out = SCOPE_NONE;
	if (d->cap_cus && (slot = cu_probe(d->cus, d->cap_cus, off))->off) {
		*out = slot->cu;
		return 0;
	}
	if (cus_room(d) || !(b.ci = calloc(1, sizeof(*b.ci))))
		return -ENOMEM;
	b.ci->off = off;
	if (!dwarf_offdie(d->dw, off, &cu)) {
		err = -EIO;
	} else {
		uint64_t kept = 0;
		bool lines = lines_fit(d, &cu, &kept);

		/* (libdw decodes the whole line table for the file names too) */
		if (!lines || dwarf_getsrcfiles(&cu, &b.files, &b.n_files) != 0)
			b.files = NULL;
		b.c_lang = cu_is_c(&cu);
		err = walk(&b, &cu, SCOPE_NONE, 0);
		if (err != -ENOMEM && lines && lines_load(b.ci, &cu))
			err = -ENOMEM;
		if (lines)
			d->idx_bytes += kept; /* libdw's rows, held with the handle */
	}
	if (err == -ENOMEM) {
		cu_index_free(b.ci);
		return err;
	}
	if (b.ci->n_fns)
		qsort(b.ci->fns, b.ci->n_fns, sizeof(*b.ci->fns), range_cmp); /* one owner */
	kids_link(b.ci);
	d->cu_list[d->n_cus++] = b.ci;
	*cu_probe(d->cus, d->cap_cus, off) = (struct cu_slot){off, b.cu};
	d->idx_bytes += cu_index_bytes(&b);
	pages_bound(d);
	*out = b.cu;
	return err;
}

/* ---- finding the CU and function ---- */

static int span_cmp(const void *a, const void *b)
{
	const struct cu_span *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* d->spans from .debug_aranges. true when there are any. */
static bool spans_load(struct sym_dwarf *d)
{
	Dwarf_Aranges *ar;
	Dwarf_Addr lo;
	Dwarf_Word len;
	Dwarf_Off off;
	size_t n, k = 0;

	if (dwarf_getaranges(d->dw, &ar, &n) != 0 || !n ||
	    !(d->spans = calloc(n, sizeof(*d->spans))))
		return false;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Arange *a = dwarf_onearange(ar, i);

		if (a && dwarf_getarangeinfo(a, &lo, &len, &off) == 0 && len && lo + len > lo &&
		    off)
			d->spans[k++] = (struct cu_span){lo, lo + len, off, SCOPE_NONE};
	}
	qsort(d->spans, k, sizeof(*d->spans), span_cmp);
	d->n_spans = k;
	d->idx_bytes += n * sizeof(*d->spans);
	return k > 0;
}

/* The arange holding vaddr, or NULL. */
static struct cu_span *span_find(struct sym_dwarf *d, uint64_t vaddr)
{
	size_t lo = 0, hi = d->n_spans;

	while (lo < hi) { /* first span with lo > vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (d->spans[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && vaddr < d->spans[lo - 1].hi ? &d->spans[lo - 1] : NULL;
}

/* Every CU indexed, their functions merged into d->all. 0, -ENOMEM, or -EIO (corrupt:
 * what was read is kept). */
static int build_all(struct sym_dwarf *d)
{
	Dwarf_Off off = 0, next;
	size_t hsize, n = 0, cap = 0;
	uint32_t cu;
	int err = 0, r;

	d->indexed = true;
	while ((r = dwarf_nextcu(d->dw, off, &next, &hsize, NULL, NULL, NULL)) == 0) {
		int cu_err = cu_get(d, off + hsize, &cu);

		if (cu_err)
			err = cu_err; /* a corrupt CU: the others are still indexed */
		if (err == -ENOMEM)
			break;
		off = next;
	}
	if (r < 0 && !err)
		err = -EIO;
	for (size_t i = 0; i < d->n_cus; i++)
		n += d->cu_list[i]->n_fns;
	if (n && base_grow((void **)&d->all, &cap, n, sizeof(*d->all)))
		return -ENOMEM;
	for (size_t i = 0; i < d->n_cus; i++) {
		if (!d->cu_list[i]->n_fns)
			continue; /* its fns may be NULL: memcpy wants a pointer even for 0 bytes */
		memcpy(d->all + d->n_all, d->cu_list[i]->fns,
		       d->cu_list[i]->n_fns * sizeof(*d->all));
		d->n_all += d->cu_list[i]->n_fns;
	}
	if (d->n_all)
		qsort(d->all, d->n_all, sizeof(*d->all), range_lo_cmp);
	d->idx_bytes += cap * sizeof(*d->all);
	return err;
}

/* The function ranges to search for vaddr: its CU's through aranges, else all. */
static int fns_for(struct sym_dwarf *d, uint64_t vaddr, const struct scope_range **fns, size_t *n)
{
	struct cu_span *sp;
	int err = 0;

	*fns = NULL;
	*n = 0;
	if (!d->use_aranges)
		d->use_aranges = spans_load(d) ? 1 : -1;
	if (d->use_aranges > 0) {
		if (!(sp = span_find(d, vaddr)))
			return 0;
		if (sp->cu == SCOPE_NONE)
			err = cu_get(d, sp->off, &sp->cu);
		if (sp->cu == SCOPE_NONE)
			return err;
		*fns = d->cu_list[sp->cu]->fns;
		*n = d->cu_list[sp->cu]->n_fns;
		return err;
	}
	/* a damaged index is reported once, by the lookup that built it */
	err = d->indexed ? 0 : build_all(d);
	*fns = d->all;
	*n = d->n_all;
	return err;
}

/* The innermost range in r[0, n) (sorted by lo) holding vaddr, or NULL. */
static const struct scope_range *range_find(const struct scope_range *r, size_t n, uint64_t vaddr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* first range with lo > vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i > 0 && k < 4; i--, k++) /* nested ranges are rare */
		if (vaddr < r[i - 1].hi)
			return &r[i - 1];
	return NULL;
}

/*
 * The line-table row for vaddr, as dwarf_getsrc_die chooses it: the last row at or
 * below vaddr, unless that row ends a sequence. File NULL and line 0 when none.
 */
static void line_of(struct sym_dwarf *d, const struct cu_index *ci, uint64_t vaddr,
		    const char **file, int *line)
{
	size_t lo = 0, hi = ci->n_top, end_row;
	Dwarf_Line *l;
	bool end;

	*file = NULL;
	*line = 0;
	while (lo < hi) { /* first block starting past vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (ci->line_top[mid] <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return;
	/* the first row past vaddr is in block lo - 1, or starts block lo */
	end_row = lo * LINE_STEP < ci->n_lines ? lo * LINE_STEP : ci->n_lines;
	for (lo = (lo - 1) * LINE_STEP; lo < end_row && ci->line_addr[lo] <= vaddr;)
		lo++;
	if (!lo || !(l = dwarf_onesrcline(ci->lines, lo - 1)) ||
	    dwarf_lineendsequence(l, &end) != 0 || end)
		return;
	*file = own(d, dwarf_linesrc(l, NULL, NULL));
	if (dwarf_lineno(l, line) != 0 || *line < 0)
		*line = 0;
}

static int lookup(struct sym_dwarf *d, uint64_t vaddr, struct sym_frame *frames, size_t max)
{
	uint32_t chain[SYM_DWARF_MAX_DEPTH];
	const struct scope_range *fns, *r;
	struct cu_index *ci;
	const char *file;
	size_t n_fns, n = 0, k = 0;
	int line, err;

	if (!d)
		return 0;
	if ((err = fns_for(d, vaddr, &fns, &n_fns)) || !(r = range_find(fns, n_fns, vaddr)))
		return err;
	ci = d->cu_list[r->owner];
	/* the function, then the call inlined into it holding vaddr, and so on inwards */
	for (; r && n < SYM_DWARF_MAX_DEPTH;
	     r = r->n_kids ? range_find(ci->kids + r->kids, r->n_kids, vaddr) : NULL)
		chain[n++] = r->scope; /* no kids: ci->kids may be NULL, no NULL + 0 */
	line_of(d, ci, vaddr, &file, &line);
	/* innermost first: each inlined call is a frame at the current file:line, which then
	 * moves to its call site */
	while (n && k < max) {
		struct scope *sc = &ci->scopes[chain[--n]];

		if (!sc->sys)
			scope_name(d, sc);
		frames[k++] = (struct sym_frame){.name = sc->name,
						 .system_name = sc->sys,
						 .file = file,
						 .line = line,
						 .inlined = n > 0};
		file = sc->call_file;
		line = (int)sc->call_line;
	}
	if (k)
		frames[k - 1].inlined = false;
	return (int)k;
}

/*
 * lookup under a guard when the file is mapped: a SIGBUS (the file shrank) breaks d for
 * good (-EIO once, then no frames: the symbol table answers), what was handed out
 * before stays valid (copied out).
 */
int sym_dwarf__lookup(struct sym_dwarf *d, uint64_t vaddr, struct sym_frame *frames, size_t max)
{
	struct base_guard g;
	volatile int n = 0;

	if (!d || d->broken)
		return 0;
	if (!d->mapped)
		return lookup(d, vaddr, frames, max);
	base_guard_push(&g);
	if (sigsetjmp(g.jb, 0) == 0)
		n = lookup(d, vaddr, frames, max);
	base_guard_pop(&g);
	if (g.faulted) {
		d->broken = true;
		return -EIO;
	}
	return n;
}

/* ---- separate debug files ---- */

/* Whether path is an ELF file whose build-id is bid. */
static bool build_id_matches(const char *path, const char *bid)
{
	struct sym_elf *e;
	char got[OBJECT_BUILD_ID_HEX];

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
