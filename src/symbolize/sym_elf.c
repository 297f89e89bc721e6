/*
 * sym_elf: what the symbolizer needs from one ELF file — its GNU build-id and its PT_LOAD
 * segments (to turn file offsets into ELF virtual addresses), both read by src/object,
 * and its function symbols
 * (.symtab, else .dynsym; and the data objects that lie in code, in a table apart) —
 * read once through libelf, copied out, and closed. Of the
 * file, only headers, notes, the one symbol table and its string table are read.
 *
 * Constraints: the file is outside input and may be truncated, corrupt or changed under
 * us. libelf is used in ELF_C_READ mode (pread on demand, never mmap: a file truncated
 * while mapped would SIGBUS the profiler, and `cp` over a library truncates it in
 * place; MAP_PRIVATE does not help, as pages not yet copied still come from the file).
 * Reading /usr/bin/node's symbol and string tables (10 MB) this way is ~8 ms, a fifth
 * of its load (docs/symbolize.md): not worth a SIGBUS handler around every access to
 * a name. Every section or segment is checked to lie inside the file before libelf
 * is asked to allocate and read it (or we read it). Only regular files are opened (a
 * FIFO would block, a device would never end).
 * References: ELF gABI (symbol table, program header), LSB "Note section" for
 * NT_GNU_BUILD_ID.
 */
#include "symbolize/sym_internal.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Symbol ranks for choosing among aliases at one address (higher wins). */
#define SYM_RANK_LOCAL	1
#define SYM_RANK_WEAK	2
#define SYM_RANK_GLOBAL 3
#define SYM_RANK_SIZED	4 /* added: a sized alias says where the function ends */

struct sym_elf {
	int fd;
	Elf *elf;
	uint64_t size;	       /* file size: the bound for every offset the file claims */
	bool native;	       /* ELF64 in this machine's byte order: its symbols are read mapped */
	struct sym_map symtab; /* the symbol table being read, mapped */
	/* per section index: its end vaddr (UINT64_MAX: not allocated) and SHF_EXECINSTR */
	uint64_t *sec_end;
	bool *sec_exec;
	size_t n_secs;
};

/* Whether [off, off + len) lies inside the file. */
static bool in_file(const struct sym_elf *e, uint64_t off, uint64_t len)
{
	return off <= e->size && len <= e->size - off;
}

/*
 * Whether the program and section header tables the ELF header claims lie in the file.
 * Read from the header itself: libelf quietly reports 0 sections for a table past EOF.
 * With extended numbering (e_shnum 0, e_phnum PN_XNUM) the first entry must be there.
 */
static bool header_tables_in_file(const struct sym_elf *e, const GElf_Ehdr *eh)
{
	uint64_t phnum = eh->e_phnum == PN_XNUM ? 1 : eh->e_phnum;
	uint64_t shnum = eh->e_shnum == 0 && eh->e_shoff ? 1 : eh->e_shnum;

	/* counts and entry sizes are 16-bit: the products cannot overflow */
	return (phnum == 0 || in_file(e, eh->e_phoff, phnum * eh->e_phentsize)) &&
	       (shnum == 0 || in_file(e, eh->e_shoff, shnum * eh->e_shentsize));
}

int sym_elf__open(const char *path, struct sym_elf **out)
{
	struct sym_elf *e = calloc(1, sizeof(*e));
	struct stat st;
	GElf_Ehdr eh;
	int err = 0;

	*out = NULL;
	if (!e)
		return -ENOMEM;
	e->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (e->fd < 0 || fstat(e->fd, &st) != 0) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	e->size = (uint64_t)st.st_size;
	if (elf_version(EV_CURRENT) == EV_NONE || !(e->elf = elf_begin(e->fd, ELF_C_READ, NULL)) ||
	    elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &eh) ||
	    !header_tables_in_file(e, &eh)) {
		err = -ENOEXEC;
		goto cleanup;
	}
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	e->native = eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_ident[EI_DATA] == ELFDATA2LSB;
#else
	e->native = eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_ident[EI_DATA] == ELFDATA2MSB;
#endif
	*out = e;
	return 0;
cleanup:
	sym_elf__close(e);
	return err;
}

void sym_elf__close(struct sym_elf *e)
{
	if (!e)
		return;
	sym_map__close(&e->symtab);
	free(e->sec_end);
	free(e->sec_exec);
	if (e->elf)
		elf_end(e->elf);
	if (e->fd >= 0)
		close(e->fd);
	free(e);
}

void sym_elf__build_id(struct sym_elf *e, char *hex, size_t len)
{
	object_elf_build_id(e->elf, e->size, hex, len);
}

int sym_elf__object(struct sym_elf *e, uint64_t dev, uint64_t inode, struct object **out)
{
	return object__from_elf(e->elf, e->fd, dev, inode, out);
}

/* What a symbol is to us: a function, a data object (kept when it lies in code), or
 * neither (undefined, absolute, at 0, another type). */
enum sym_kind { SYM_SKIP, SYM_FUNCTION, SYM_OBJECT };

static enum sym_kind symbol_kind(const GElf_Sym *s)
{
	int type = GELF_ST_TYPE(s->st_info);

	if (s->st_shndx == SHN_UNDEF || s->st_value == 0)
		return SYM_SKIP;
	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		return SYM_FUNCTION;
	/* a data object needs its size: it says which addresses are in it */
	return type == STT_OBJECT && s->st_size && s->st_shndx < SHN_LORESERVE ? SYM_OBJECT
									       : SYM_SKIP;
}

static uint8_t symbol_rank(const GElf_Sym *s)
{
	int bind = GELF_ST_BIND(s->st_info);
	uint8_t rank = bind == STB_GLOBAL ? SYM_RANK_GLOBAL
		       : bind == STB_WEAK ? SYM_RANK_WEAK
					  : SYM_RANK_LOCAL;

	return rank + (s->st_size ? SYM_RANK_SIZED : 0);
}

/*
 * End vaddr of the section holding s, which no symbol of it may pass (unknown: max),
 * and into *exec whether that section holds code (SHF_EXECINSTR).
 */
static uint64_t section_end(struct sym_elf *e, const GElf_Sym *s, bool *exec)
{
	*exec = false;
	if (s->st_shndx >= e->n_secs)
		return UINT64_MAX;
	*exec = e->sec_exec[s->st_shndx];
	return e->sec_end[s->st_shndx];
}

/* e->sec_end and e->sec_exec, once per load: a symbol's section is looked up per
 * symbol. 0 or -ENOMEM (a section count it cannot give is no sections). */
static int sections_index(struct sym_elf *e)
{
	size_t n = 0;
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (e->sec_end)
		return 0;
	if (elf_getshdrnum(e->elf, &n) != 0 || n > SHN_LORESERVE)
		n = 0;
	e->sec_end = malloc((n ? n : 1) * sizeof(*e->sec_end));
	e->sec_exec = calloc(n ? n : 1, sizeof(*e->sec_exec));
	if (!e->sec_end || !e->sec_exec)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		e->sec_end[i] = UINT64_MAX;
		if (!(scn = elf_getscn(e->elf, i)) || !gelf_getshdr(scn, &sh) ||
		    !(sh.sh_flags & SHF_ALLOC))
			continue;
		e->sec_exec[i] = (sh.sh_flags & SHF_EXECINSTR) != 0;
		e->sec_end[i] =
		    sh.sh_addr > UINT64_MAX - sh.sh_size ? UINT64_MAX : sh.sh_addr + sh.sh_size;
	}
	e->n_secs = n;
	return 0;
}

/*
 * The string table at section index idx, read whole into *names (malloc'd, the
 * caller's) with a NUL added past its end, so any offset below *len - 1 names a
 * terminated string. Read by us rather than through libelf, whose copy would be
 * freed with the handle: this one becomes the symbol table's name blob as is.
 * 0, -ENOMEM, or -ENOEXEC (not a string table, outside the file, over 4 GiB, or the
 * file shrank under us).
 */
static int read_strtab(struct sym_elf *e, size_t idx, char **names, size_t *len)
{
	Elf_Scn *scn = elf_getscn(e->elf, idx);
	GElf_Shdr sh;
	char *p;
	size_t got = 0;

	*names = NULL;
	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB ||
	    !in_file(e, sh.sh_offset, sh.sh_size) || sh.sh_size >= SYM_NO_NAME - 1)
		return -ENOEXEC;
	if (!(p = malloc(sh.sh_size + 1)))
		return -ENOMEM;
	sym_hugepage_hint(p, sh.sh_size + 1);
	while (got < sh.sh_size) {
		ssize_t r = pread(e->fd, p + got, sh.sh_size - got, (off_t)(sh.sh_offset + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(p);
			return -ENOEXEC;
		}
		got += (size_t)r;
	}
	p[sh.sh_size] = '\0';
	*names = p;
	*len = sh.sh_size + 1;
	return 0;
}

/*
 * Function symbols of one symbol table section into b, data objects in executable
 * sections into db. 0, -ENOMEM or -ENOEXEC. Functions' names stay offsets into the
 * string table (adopted by b): none is read or copied here; the few objects' names
 * are copied into db.
 */
static int load_symtab(struct sym_elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct sym_builder *b,
		       struct sym_builder *db);

/*
 * load_symtab for a native ELF64: the symbol and string tables are mapped, not read.
 * The symbols are read in place (the mapping is dropped once they are indexed) and the
 * string table becomes the table's name blob, of which only the names of symbols hit
 * later are ever read (and the few of data objects in code, copied now). Runs under
 * the caller's guard. 0, -ENOMEM, -ENOEXEC, or 1: mapping is not possible here (the
 * caller reads the tables instead).
 */
static int load_symtab_mapped(struct sym_elf *e, const GElf_Shdr *sh, struct sym_builder *b,
			      struct sym_builder *db)
{
	Elf_Scn *strscn = elf_getscn(e->elf, sh->sh_link);
	struct sym_map names;
	GElf_Shdr ssh;
	uint64_t n, len;
	int err;

	if (!e->native || sh->sh_entsize != sizeof(Elf64_Sym))
		return 1;
	if (!in_file(e, sh->sh_offset, sh->sh_size) || !strscn || !gelf_getshdr(strscn, &ssh) ||
	    ssh.sh_type != SHT_STRTAB || !in_file(e, ssh.sh_offset, ssh.sh_size) ||
	    ssh.sh_size >= SYM_NO_NAME - 1 || ssh.sh_size == 0)
		return -ENOEXEC;
	if (sh->sh_size < 2 * sizeof(Elf64_Sym))
		return 0; /* entry 0 only: no symbols */
	/* names are read one at a time, later: no read-around that maps pages not asked
	 * for (each would count in our RSS) */
	if (sym_map__open(e->fd, e->size, ssh.sh_offset, ssh.sh_size, 0, &names))
		return 1;
	madvise(names.base, names.map_len, MADV_RANDOM);
	/* every symbol is read once, now: mapped in one go */
	if (sym_map__open(e->fd, e->size, sh->sh_offset, sh->sh_size, MAP_POPULATE, &e->symtab)) {
		sym_map__close(&names);
		return 1;
	}
	len = names.len;
	sym_builder__adopt_map(b, &names);
	n = sh->sh_size / sizeof(Elf64_Sym);
	if ((err = sym_builder__reserve(b, n)))
		return err;
	/* Entry 0 is the reserved undefined symbol. */
	for (uint64_t i = 1; i < n; i++) {
		Elf64_Sym sym;
		GElf_Sym gs;
		enum sym_kind kind;
		struct sym_raw r;
		bool exec;

		memcpy(&sym, e->symtab.p + i * sizeof(sym), sizeof(sym));
		gs = (GElf_Sym){sym.st_name,  sym.st_info,  sym.st_other,
				sym.st_shndx, sym.st_value, sym.st_size};
		kind = symbol_kind(&gs);
		/* offset 0 is the empty name; an offset past the table names nothing (an
		 * empty name elsewhere is found at lookup: no name is read now) */
		if (kind == SYM_SKIP || sym.st_name == 0 || sym.st_name >= len - 1)
			continue;
		r = (struct sym_raw){.start = sym.st_value,
				     .size = sym.st_size,
				     .bound = section_end(e, &gs, &exec),
				     .region = sym.st_shndx,
				     .name = sym.st_name,
				     .rank = symbol_rank(&gs)};
		if (kind == SYM_FUNCTION) {
			err = sym_builder__add_at(b, &r);
		} else if (exec) { /* data in code: its name copied (bounded: the map may
				    * not end in a NUL) */
			char nm[512];
			size_t k = 0;

			while (k < sizeof(nm) - 1 && sym.st_name + k < len &&
			       b->map.p[sym.st_name + k])
				nm[k] = b->map.p[sym.st_name + k], k++;
			nm[k] = '\0';
			err = k ? sym_builder__add(db, &r, nm, NULL) : 0;
		}
		if (err)
			return err;
	}
	sym_map__close(&e->symtab);
	return 0;
}

/* After the build: what the build read of the names (ties, data objects) leaves our
 * page tables, so that what stays resident follows the lookups (sym_table.c). */
static void names_settle(struct sym_table *t)
{
	if (t->map.base)
		madvise(t->map.base, t->map.map_len, MADV_DONTNEED);
}

static int load_symtab(struct sym_elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct sym_builder *b,
		       struct sym_builder *db)
{
	Elf_Data *d;
	GElf_Sym sym;
	char *names;
	size_t len;
	int err;

	if ((err = sections_index(e)))
		return err;
	if ((err = load_symtab_mapped(e, sh, b, db)) <= 0)
		return err;
	if (!in_file(e, sh->sh_offset, sh->sh_size))
		return -ENOEXEC;
	if ((err = read_strtab(e, sh->sh_link, &names, &len)))
		return err;
	sym_builder__adopt_names(b, names, len);
	if (!(d = elf_getdata(scn, NULL)))
		return -ENOEXEC;
	if (sh->sh_entsize && (err = sym_builder__reserve(b, sh->sh_size / sh->sh_entsize)))
		return err;
	/* Entry 0 is the reserved undefined symbol; gelf_getsym bounds-checks the index. */
	for (int i = 1; gelf_getsym(d, i, &sym); i++) {
		enum sym_kind kind = symbol_kind(&sym);
		struct sym_raw r;
		bool exec;

		/* an offset past the table, or the empty name: no name to show */
		if (kind == SYM_SKIP || sym.st_name >= len - 1 || !names[sym.st_name])
			continue;
		r = (struct sym_raw){.start = sym.st_value,
				     .size = sym.st_size,
				     .bound = section_end(e, &sym, &exec),
				     .region = sym.st_shndx,
				     .name = sym.st_name,
				     .rank = symbol_rank(&sym)};
		if (kind == SYM_FUNCTION)
			err = sym_builder__add_at(b, &r);
		else /* data in code (constant tables of hand-written assembly), else none */
			err = exec ? sym_builder__add(db, &r, names + sym.st_name, NULL) : 0;
		if (err)
			return err;
	}
	return 0;
}

/* Symbols of the first section of this type. 0, -ENOENT (none), -ENOMEM, -ENOEXEC. */
static int load_symbols_of(struct sym_elf *e, Elf64_Word type, struct sym_builder *b,
			   struct sym_builder *db)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e->elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return load_symtab(e, scn, &sh, b, db);
	return -ENOENT;
}

/*
 * .symtab when it has functions, else .dynsym (what `strip` leaves). A corrupt .symtab
 * with a readable .dynsym marks info damaged; corrupt and nothing else is -ENOEXEC.
 * The builders are the caller's (they outlive a SIGBUS that jumps out of here).
 */
static int load_symbols(struct sym_elf *e, struct sym_elf_info *info, struct sym_builder *b,
			struct sym_builder *db)
{
	int err = load_symbols_of(e, SHT_SYMTAB, b, db), dyn_err;

	if (err == -ENOMEM)
		return err;
	if (err || b->n == 0) {
		sym_builder__fini(b);
		sym_builder__fini(db);
		info->dynsym = true;
		dyn_err = load_symbols_of(e, SHT_DYNSYM, b, db);
		info->damaged = err == -ENOEXEC || dyn_err == -ENOEXEC;
		if (dyn_err == -ENOMEM || (dyn_err == -ENOEXEC && err == -ENOEXEC) ||
		    (dyn_err == -ENOEXEC && err == -ENOENT))
			return dyn_err;
	}
	if ((err = sym_builder__finish(db, &info->data)) ||
	    (err = sym_builder__finish(b, &info->table)))
		return err;
	names_settle(&info->table);
	return 0;
}

/*
 * The symbol and string tables are read mapped (native ELF64): a file that shrinks
 * while they are read faults, and the guard turns it into -ENOEXEC (sym_map.c).
 */
int sym_elf__load(struct sym_elf *e, struct sym_elf_info *info)
{
	struct sym_builder *b = calloc(2, sizeof(*b));
	struct base_guard g;
	volatile int err = -ENOEXEC;

	if (!b)
		return -ENOMEM;
	base_guard_push(&g);
	if (sigsetjmp(g.jb, 0) == 0)
		err = load_symbols(e, info, &b[0], &b[1]);
	base_guard_pop(&g);
	if (g.faulted) {
		err = -ENOEXEC;
		sym_elf_info__fini(info);
	}
	sym_map__close(&e->symtab);
	sym_builder__fini(&b[0]);
	sym_builder__fini(&b[1]);
	free(b);
	return err;
}

uint64_t sym_elf__index_bytes(struct sym_elf *e)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	uint64_t best = 0;

	/* per symbol: while building, the raw symbol (40), two sort keys (32) and the entry
	 * (12); then the entry, a share of the top array and the names' pointer (~21). The
	 * peak counts: the ledger holds VmHWM too */
	while ((scn = elf_nextscn(e->elf, scn)))
		if (gelf_getshdr(scn, &sh) &&
		    (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) && sh.sh_entsize &&
		    sh.sh_size / sh.sh_entsize * 84 > best)
			best = sh.sh_size / sh.sh_entsize * 84;
	return best;
}

void sym_elf_info__fini(struct sym_elf_info *info)
{
	info->damaged = false;
	info->dynsym = false;
	sym_table__fini(&info->table);
	sym_table__fini(&info->data);
}

/*
 * .gnu_debuglink: a NUL-terminated file name, padding to 4 bytes, then the CRC32 of the
 * debug file (GDB manual, "Separate Debug Files"). 0, or -ENOENT when absent or malformed.
 */
int sym_elf__debuglink(struct sym_elf *e, char *name, size_t len, uint32_t *crc)
{
	size_t shstrndx, nlen;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;
	const char *sname;

	if (elf_getshdrstrndx(e->elf, &shstrndx) != 0)
		return -ENOENT;
	while ((scn = elf_nextscn(e->elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sname = elf_strptr(e->elf, shstrndx, sh.sh_name)) ||
		    strcmp(sname, ".gnu_debuglink") || !in_file(e, sh.sh_offset, sh.sh_size))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < 8)
			return -ENOENT;
		nlen = strnlen(d->d_buf, d->d_size);
		if (nlen == 0 || nlen >= len || ((nlen + 4) & ~(size_t)3) + 4 > d->d_size)
			return -ENOENT;
		memcpy(name, d->d_buf, nlen + 1);
		memcpy(crc, (const char *)d->d_buf + ((nlen + 4) & ~(size_t)3), 4);
		return 0;
	}
	return -ENOENT;
}
