/*
 * rbprobe: recognises a CRuby process and finds what the BPF walk needs of it.
 *
 * libruby-3.X.so exports ruby_current_ec, a thread-local (STT_TLS: its value is the
 * offset in libruby's TLS block), and accesses it through __tls_get_addr, so the
 * library carries an R_X86_64_DTPMOD64 relocation for it: the GOT word the loader
 * fills with libruby's TLS module id. The walk reads the thread's dtv (glibc's
 * tcbhead_t.dtv at fs base + 8) at that module's slot to find the block, wherever
 * the loader put it (static TLS for a library linked at start, dynamic for a
 * dlopen'd one once the thread touched it).
 *
 * The interpreter loop is vm_exec_core, a local function: it is found as the
 * largest function rb_vm_exec (exported) calls directly, its bounds from
 * .eh_frame_hdr's sorted table (from its start to the next function's).
 *
 * The file is outside input: libelf checks section bounds; every index is bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/base.h"
#include "object/object.h"
#include "proc/proc.h"
#include "ruby/ruby_impl.h"

int rb_read(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	ssize_t n;

	if (len > RB_READ_MAX)
		return -EINVAL;
	if (len == 0)
		return 0;
	n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return errno == EFAULT ? -EIO : -errno;
	return (size_t)n == len ? 0 : -EIO;
}

struct rb_syms {
	uint64_t ec_tls;	   /* ruby_current_ec's st_value (TLS block offset) */
	uint64_t version;	   /* ruby_version (vaddr of "3.1.2") */
	uint64_t exec, exec_size;  /* rb_vm_exec */
	uint64_t modid_got;	   /* vaddr of the DTPMOD64 GOT word of ruby_current_ec */
	uint64_t vm_start, vm_end; /* vm_exec_core (vaddrs), 0 if not found */
	uint64_t object_var;	   /* rb_cObject */
	size_t ec_sym;		   /* its .dynsym index */
	bool has_ec;
};

static void scan_dynsym(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct rb_syms *s)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	GElf_Sym sym;
	size_t n;

	if (!data || sh->sh_entsize == 0)
		return;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || strncmp(name, "r", 1) != 0)
			continue;
		if (strcmp(name, "ruby_current_ec") == 0 && GELF_ST_TYPE(sym.st_info) == STT_TLS) {
			s->ec_tls = sym.st_value;
			s->ec_sym = i;
			s->has_ec = true;
		} else if (strcmp(name, "rb_cObject") == 0 &&
			   GELF_ST_TYPE(sym.st_info) == STT_OBJECT) {
			s->object_var = sym.st_value;
		} else if (strcmp(name, "ruby_version") == 0) {
			s->version = sym.st_value;
		} else if (strcmp(name, "rb_vm_exec") == 0 &&
			   GELF_ST_TYPE(sym.st_info) == STT_FUNC) {
			s->exec = sym.st_value;
			s->exec_size = sym.st_size;
		}
	}
}

static void scan_rela(Elf_Scn *scn, const GElf_Shdr *sh, struct rb_syms *s)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	GElf_Rela r;
	size_t n;

	if (!data || sh->sh_entsize == 0)
		return;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n && !s->modid_got; i++)
		if (gelf_getrela(data, (int)i, &r) && GELF_R_TYPE(r.r_info) == R_X86_64_DTPMOD64 &&
		    GELF_R_SYM(r.r_info) == s->ec_sym)
			s->modid_got = r.r_offset;
}

/* .eh_frame_hdr's table (datarel sdata4 pairs, sorted by start): the function
 * holding vaddr as [start, next start). False when the header is another kind. */
static bool fde_bounds(const uint8_t *hdr, size_t len, uint64_t hdr_vaddr, uint64_t vaddr,
		       uint64_t *start, uint64_t *end)
{
	int32_t cnt, a, b;
	size_t lo, hi, n;

	/* version 1, eh_frame_ptr pcrel|sdata4, fde_count udata4, table datarel|sdata4 */
	if (len < 12 || hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b)
		return false;
	memcpy(&cnt, hdr + 8, 4);
	if (cnt <= 1 || (size_t)cnt > (len - 12) / 8)
		return false;
	n = (size_t)cnt;
	lo = 0;
	hi = n; /* last entry with start <= vaddr */
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		memcpy(&a, hdr + 12 + 8 * mid, 4);
		if (hdr_vaddr + (int64_t)a <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	memcpy(&a, hdr + 12 + 8 * lo, 4);
	if (hdr_vaddr + (int64_t)a > vaddr || lo + 1 >= n)
		return false;
	memcpy(&b, hdr + 12 + 8 * (lo + 1), 4);
	*start = hdr_vaddr + (int64_t)a;
	*end = hdr_vaddr + (int64_t)b;
	return *end > *start;
}

/* vm_exec_core: the largest function rb_vm_exec calls with a direct call. */
static void find_vm_core(Elf *elf, size_t shstrndx, struct rb_syms *s)
{
	Elf_Scn *scn = NULL;
	Elf_Data *code = NULL, *hdr = NULL;
	uint64_t text_vaddr = 0, text_off = 0, text_size = 0, hdr_vaddr = 0, best = 0, from, len;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && strcmp(name, ".text") == 0 && sh.sh_type == SHT_PROGBITS) {
			text_vaddr = sh.sh_addr;
			text_off = sh.sh_offset;
			text_size = sh.sh_size;
		} else if (name && strcmp(name, ".eh_frame_hdr") == 0 &&
			   sh.sh_type == SHT_PROGBITS) {
			hdr = elf_getdata(scn, NULL);
			hdr_vaddr = sh.sh_addr;
		}
	}
	if (!text_size || !hdr || !hdr->d_buf || s->exec < text_vaddr ||
	    s->exec - text_vaddr >= text_size)
		return;
	/* only rb_vm_exec's own bytes are looked at */
	from = s->exec - text_vaddr;
	len = s->exec_size ? s->exec_size : 512;
	if (len > text_size - from)
		len = text_size - from;
	code = elf_getdata_rawchunk(elf, (int64_t)(text_off + from), (size_t)len, ELF_T_BYTE);
	if (!code || !code->d_buf)
		return;
	for (uint64_t at = 0; at + 5 <= code->d_size; at++) {
		const uint8_t *p = (const uint8_t *)code->d_buf + at;
		int32_t rel;
		uint64_t target, fs, fe;

		if (p[0] != 0xe8)
			continue;
		memcpy(&rel, p + 1, 4);
		target = s->exec + at + 5 + (int64_t)rel;
		if (target < text_vaddr || target - text_vaddr >= text_size)
			continue;
		if (!fde_bounds(hdr->d_buf, hdr->d_size, hdr_vaddr, target, &fs, &fe) ||
		    fs != target)
			continue;
		if (fe - fs > best) {
			best = fe - fs;
			s->vm_start = fs;
			s->vm_end = fe;
		}
	}
	if (best < 4096) /* the loop is kilobytes long: anything smaller is not it */
		s->vm_start = s->vm_end = 0;
}

/* read_syms' reading of the mapped file, under its guard; *elfp is set as soon as
 * libelf has a handle. */
static int read_syms_mapped(int fd, struct rb_syms *s, struct object_segment **segs,
			    size_t *n_segs, Elf *volatile *elfp)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;

	*elfp = elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM)
			scan_dynsym(elf, scn, &sh, s);
	if (!s->has_ec || !s->version)
		return -RUBY_E_NOT_RUBY;
	scn = NULL;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA)
			scan_rela(scn, &sh, s);
	if (s->exec)
		find_vm_core(elf, shstrndx, s);
	return object_elf_segments(elf, segs, n_segs);
}

/* Mapped (ELF_C_READ_MMAP: nothing copied into the heap), read under base_guard: a
 * file truncated in place meanwhile raises SIGBUS, which fails the probe (-EIO)
 * instead of the agent; libelf's handle is then not trusted and left, not ended. */
static int read_syms(const char *path, struct rb_syms *s, struct object_segment **segs,
		     size_t *n_segs)
{
	struct base_guard g;
	Elf *volatile elf = NULL;
	volatile int err = -EIO;
	int fd;

	memset(s, 0, sizeof(*s));
	if (!base_guard_ready())
		return -ENOTSUP;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	base_guard_push(&g);
	if (sigsetjmp(g.jb, 0) == 0)
		err = read_syms_mapped(fd, s, segs, n_segs, &elf);
	base_guard_pop(&g);
	if (g.faulted)
		err = -EIO;
	else if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

static bool is_libruby(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "libruby", 7) == 0 && strstr(base, ".so");
}

static int try_object(uint32_t pid, const struct proc_mapping *m, struct rb_target *t)
{
	struct object_segment *segs = NULL;
	struct rb_syms s;
	size_t n_segs = 0;
	char path[PATH_MAX + 64], ver[16] = {0};
	uint64_t vaddr, bias, modid = 0;
	int err;

	snprintf(path, sizeof(path), "/proc/%u/map_files/%lx-%lx", pid, (unsigned long)m->start,
		 (unsigned long)m->end);
	err = read_syms(path, &s, &segs, &n_segs);
	if (err == -ENOENT || err == -EPERM || err == -EACCES) {
		snprintf(path, sizeof(path), "/proc/%u/root%s", pid, m->path);
		err = read_syms(path, &s, &segs, &n_segs);
	}
	if (err)
		goto cleanup;
	if (!object_segments_vaddr(segs, n_segs, m->pgoff, &vaddr)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	bias = m->start - vaddr;
	t->pid = pid;
	snprintf(t->path, sizeof(t->path), "%s", m->path);
	err = rb_read(pid, s.version + bias, ver, sizeof(ver) - 1);
	if (err)
		goto cleanup;
	t->version = rb_parse_version(ver, sizeof(ver));
	if (!s.modid_got) {
		err = -RUBY_E_UNSUPPORTED; /* TLS reached another way: not handled */
		goto cleanup;
	}
	err = rb_read(pid, s.modid_got + bias, &modid, sizeof(modid));
	if (err)
		goto cleanup;
	if (!modid || modid > 4096) {
		err = -RUBY_E_NOT_READY; /* not relocated yet */
		goto cleanup;
	}
	t->tls_modid = modid;
	t->tls_offset = s.ec_tls;
	if (s.object_var)
		t->object_var = s.object_var + bias;
	if (s.vm_start) {
		t->vm_start = s.vm_start + bias;
		t->vm_end = s.vm_end + bias;
	}
	err = 0;
cleanup:
	free(segs);
	return err;
}

int rb_probe_target(uint32_t pid, struct rb_target *out)
{
	struct proc_mapping *maps = NULL;
	size_t n = 0;
	int err, found = -RUBY_E_NOT_RUBY;
	struct rb_offsets o;

	memset(out, 0, sizeof(*out));
	err = proc_read_maps(pid, &maps, &n);
	if (err == -ENOENT || (!err && !n))
		return -ESRCH;
	if (err)
		return err;
	out->loading = true;
	for (size_t i = 0; i < n && out->loading; i++)
		out->loading = !strstr(maps[i].path, "/libc.so") && !strstr(maps[i].path, "/libc-");
	for (size_t i = 0; i < n; i++) {
		const struct proc_mapping *m = &maps[i];

		if (!m->inode || !is_libruby(m->path) ||
		    (i > 0 && strcmp(maps[i - 1].path, m->path) == 0))
			continue;
		found = try_object(pid, m, out);
		break;
	}
	proc_maps_free(maps, n);
	if (found)
		return found;
	if (rb_offsets_for_version(out->version, &o))
		return -RUBY_E_UNSUPPORTED;
	return 0;
}
