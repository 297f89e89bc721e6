/*
 * table: one ELF object's unwind table, built from its .eh_frame (or, when it
 * has none, .debug_frame). Its identity, build-id and segments are src/object's
 * (the same reader symbolize uses).
 *
 * Runs off the sampling path (unwind_mgr calls it from the user-space loop).
 * libelf only gives access to the section bytes; the CFI evaluation is cfi.c.
 */
#include "unwind.h"
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	return (double)base_clock_ns(CLOCK_MONOTONIC) / 1e6;
}

/* An uncompressed section parsed through a mapping of its own, whose pages
 * leave the RSS as the parse goes on (cfi_parse_mapped). The parse runs under
 * base_guard: a file truncated in place meanwhile (`cp new.so old.so`) raises
 * SIGBUS in it, and the build fails with -EIO instead of the agent. -EAGAIN:
 * not mapped (no guard, a size that does not fit the file), read it instead. */
static int parse_mapped(int fd, const GElf_Shdr *sh, bool is_eh, struct cfi_rows *rows)
{
	uint64_t lo = sh->sh_offset & ~(uint64_t)4095, delta = sh->sh_offset - lo;
	struct base_guard g;
	volatile int err = -EIO;
	struct stat st;
	void *m;

	if (!base_guard_ready() || fstat(fd, &st) || !sh->sh_size ||
	    sh->sh_offset + sh->sh_size > (uint64_t)st.st_size)
		return -EAGAIN;
	m = mmap(NULL, sh->sh_size + delta, PROT_READ, MAP_PRIVATE, fd, (off_t)lo);
	if (m == MAP_FAILED)
		return -EAGAIN;
	base_guard_push(&g);
	if (sigsetjmp(g.jb, 0) == 0)
		err = cfi_parse_mapped((const uint8_t *)m + delta, sh->sh_size, sh->sh_addr,
				       is_eh, rows);
	base_guard_pop(&g);
	munmap(m, sh->sh_size + delta);
	return g.faulted ? -EIO : err;
}

/* Parses the named CFI section into rows. -ENODATA when absent, -EIO when the
 * file shrank under the parse. */
static int parse_section(Elf *elf, int fd, const char *want, bool is_eh, size_t max_bytes,
			 struct cfi_rows *rows)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -EINVAL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, want))
			continue;
		if (max_bytes && sh.sh_size > max_bytes)
			return -EFBIG;
		if (!(sh.sh_flags & SHF_COMPRESSED) && fd >= 0) {
			int err = parse_mapped(fd, &sh, is_eh, rows);

			if (err != -EAGAIN)
				return err;
		}
		/* read into the heap (libelf's pread, ELF_C_READ): .debug_frame may
		 * be SHF_COMPRESSED (gABI 4.1 "Compressed sections") */
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			return -EINVAL;
		d = (sh.sh_flags & SHF_COMPRESSED) ? elf_getdata(scn, NULL)
						   : elf_rawdata(scn, NULL);
		if (!d || !d->d_buf)
			return -EINVAL;
		return cfi_parse(d->d_buf, d->d_size, sh.sh_addr, is_eh, rows);
	}
	return -ENODATA;
}

/* Whether the ELF has a section of that name. */
static bool has_section(Elf *elf, const char *want)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name =
		    gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;

		if (name && !strcmp(name, want))
			return true;
	}
	return false;
}

/*
 * Go's CFI gives its stack bottoms an ordinary rule (return address at CFA-8),
 * so a walk would go on into whatever lies above them. The outermost functions
 * of a goroutine's stack (runtime.goexit) and of a thread's g0 stack
 * (runtime.mstart, which rt0_go also reaches) become END rows here, found by
 * name in .symtab. Their ABI wrappers are named NAME.abi0 since Go 1.17.
 *
 * Go's signal return trampoline (runtime.sigreturn, __sigaction since Go 1.20)
 * gets SIGNAL rows: read as an ordinary frame, its "return address" is the
 * signal frame's uc_flags (a caller "[unknown] 0x6" under the interrupted
 * code). The handler returns to its first byte, and the walker looks a return
 * address up one byte before it (in the previous function's padding), so the
 * SIGNAL rule starts one byte early, as glibc's FDE for __restore_rt does.
 */
static const struct go_special {
	const char *name;
	uint8_t kind;
} go_specials[] = {
    {"runtime.goexit", HEARTH_CFA_END},
    {"runtime.goexit.abi0", HEARTH_CFA_END},
    {"runtime.mstart", HEARTH_CFA_END},
    {"runtime.mstart.abi0", HEARTH_CFA_END},
    {"runtime.sigreturn", HEARTH_CFA_SIGNAL},
    {"runtime.sigreturn.abi0", HEARTH_CFA_SIGNAL},
    {"runtime.sigreturn__sigaction", HEARTH_CFA_SIGNAL},
    {"runtime.sigreturn__sigaction.abi0", HEARTH_CFA_SIGNAL},
};

/* The special kind of a Go function by name, or HEARTH_CFA_NONE. */
static uint8_t go_special_kind(const char *name)
{
	for (size_t k = 0; name && k < sizeof(go_specials) / sizeof(*go_specials); k++)
		if (!strcmp(name, go_specials[k].name))
			return go_specials[k].kind;
	return HEARTH_CFA_NONE;
}

/* Every row of [start, end) gets kind, and one at from covers it from there. */
static int mark_range(struct cfi_rows *rows, uint32_t from, uint64_t start, uint64_t end,
		      uint8_t kind)
{
	struct hearth_unwind_row row = {.pc = from, .cfa_kind = kind, .rbp_kind = HEARTH_RBP_SAME};

	for (size_t r = 0; r < rows->n; r++)
		if (rows->rows[r].pc >= start && rows->rows[r].pc < end)
			rows->rows[r] = (struct hearth_unwind_row){
			    .pc = rows->rows[r].pc, .cfa_kind = kind, .rbp_kind = HEARTH_RBP_SAME};
	return cfi_rows__push(rows, &row);
}

static int go_mark_special(Elf *elf, struct cfi_rows *rows)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			return 0;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			uint8_t kind;
			uint64_t from;
			int err;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size ||
			    !sym.st_value || sym.st_value + sym.st_size > UINT32_MAX)
				continue;
			kind = go_special_kind(elf_strptr(elf, sh.sh_link, sym.st_name));
			if (kind == HEARTH_CFA_NONE)
				continue;
			from = kind == HEARTH_CFA_SIGNAL ? sym.st_value - 1 : sym.st_value;
			err = mark_range(rows, (uint32_t)from, sym.st_value,
					 sym.st_value + sym.st_size, kind);
			if (err)
				return err;
		}
		return 0;
	}
	return 0; /* no .symtab: the walk stops where the CFI does */
}

static int build_from_elf(Elf *elf, int fd, const char *path, uint64_t dev, uint64_t inode,
			  size_t max_bytes, struct unwind_table *t)
{
	const struct object_segment *x;
	bool is_go;
	int err;

	if (elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64)
		return -ENOEXEC;
	/* A Go binary built with -w has no .debug_frame: its frame pointers are all
	 * there is (and they skip the caller of a frameless leaf). */
	is_go = has_section(elf, ".gopclntab");
	if (is_go && !has_section(elf, ".debug_frame"))
		return -ENOTSUP;
	err = object__from_elf(elf, fd, dev, inode, &t->obj);
	if (err)
		return err;
	x = object__exec_segment(t->obj);
	if (!x)
		return -ENODATA;
	t->seg_delta = x->vaddr - x->off; /* vaddr = off + delta */
	t->path = strdup(path);
	if (!t->path)
		return -ENOMEM;
	err = parse_section(elf, fd, ".eh_frame", true, max_bytes, &t->rows);
	if (is_go) {
		/* Go's own functions are only in .debug_frame; an externally linked
		 * (cgo) Go binary has an .eh_frame too, for its C parts: read both. */
		int derr = parse_section(elf, fd, ".debug_frame", false, max_bytes, &t->rows);

		if (!err || err == -ENODATA)
			err = derr;
	} else if (err == -ENODATA || (!err && t->rows.n == 0)) {
		err = parse_section(elf, fd, ".debug_frame", false, max_bytes, &t->rows);
	}
	if (err && !(err == -EINVAL && t->rows.n))
		return err; /* malformed after some FDEs: keep what was evaluated */
	if (is_go) {
		err = go_mark_special(elf, &t->rows);
		if (err)
			return err;
	}
	cfi_rows__finish(&t->rows);
	return t->rows.n ? 0 : -ENODATA;
}

int unwind_table__build(const char *path, uint64_t dev, uint64_t inode, size_t max_cfi_bytes,
			struct unwind_table **out)
{
	struct unwind_table *t = NULL;
	double t0 = now_ms();
	Elf *elf = NULL;
	int fd = -1, err;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	t = calloc(1, sizeof(*t));
	/* headers and small sections with pread, never mapped: a file truncated under
	 * us makes a read fail rather than raise SIGBUS (the CFI itself is mapped
	 * under a guard: parse_mapped) */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!t || !elf) {
		err = t ? -EINVAL : -ENOMEM;
		goto cleanup;
	}
	err = build_from_elf(elf, fd, path, dev, inode, max_cfi_bytes, t);
	if (err)
		goto cleanup;
	t->build_ms = now_ms() - t0;
	*out = t;
	t = NULL;
cleanup:
	unwind_table__free(t);
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

void unwind_table__free(struct unwind_table *t)
{
	if (!t)
		return;
	cfi_rows__fini(&t->rows);
	unwind_partial__free(t->partial);
	cfi_rows__fini(&t->partial_next);
	object__put(t->obj);
	free(t->path);
	free(t);
}
