/*
 * pyprobe: recognises a CPython process and finds its interpreter's symbols.
 *
 * The interpreter is either a mapped libpython3.X.so* or, for a static build such as
 * Debian's /usr/bin/python3.11, the executable itself; either way it exports
 * _PyRuntime and PyCode_Type in .dynsym (both are part of the C API). Py_Version
 * (3.11+) gives the exact version; for older builds the minor comes from the file
 * name and the micro from the PY_VERSION string in .rodata. Symbols are ELF vaddrs:
 * addr = vaddr + bias, bias = mapping start - vaddr of the mapping's file offset.
 *
 * The file is outside input: libelf checks section bounds; every string is bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/base.h"
#include "object/object.h"
#include "proc/proc.h"
#include "python/python_impl.h"

int py_read(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	ssize_t n;

	if (len > PY_READ_MAX)
		return -EINVAL;
	if (len == 0)
		return 0;
	n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return errno == EFAULT ? -EIO : -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* The symbols the probe looks for, as ELF vaddrs (0: absent). */
struct py_syms {
	uint64_t runtime, code_type, py_version, eval, eval_size;
	uint32_t rodata_version; /* from the PY_VERSION string, 0 when not found */
};

static void scan_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct py_syms *s)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;
	GElf_Sym sym;

	if (!data || sh->sh_entsize == 0)
		return;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
		    sym.st_value == 0)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || (name[0] != '_' && name[0] != 'P'))
			continue;
		if (!s->runtime && strcmp(name, "_PyRuntime") == 0)
			s->runtime = sym.st_value;
		else if (!s->code_type && strcmp(name, "PyCode_Type") == 0)
			s->code_type = sym.st_value;
		else if (!s->py_version && strcmp(name, "Py_Version") == 0)
			s->py_version = sym.st_value;
		else if (!s->eval && strcmp(name, "_PyEval_EvalFrameDefault") == 0 &&
			 GELF_ST_TYPE(sym.st_info) == STT_FUNC) {
			s->eval = sym.st_value;
			s->eval_size = sym.st_size;
		}
	}
}

/* "3.MINOR.MICRO" NUL-terminated in .rodata (Py_GetVersion's PY_VERSION), for builds
 * without Py_Version. Only accepted for the expected minor. The linker merges string
 * tails, so it may end a longer string ("/prefix/versions/3.10.13"): what precedes it
 * only has to be no digit or dot. */
static uint32_t rodata_version(Elf_Scn *scn, uint32_t minor)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	char want[16];
	size_t wlen;
	const char *p;

	if (!data || !data->d_buf || minor == 0)
		return 0;
	wlen = (size_t)snprintf(want, sizeof(want), "3.%u.", minor);
	p = data->d_buf;
	for (size_t i = 1; i + wlen + 2 < data->d_size; i++) {
		unsigned micro = 0;
		size_t j = i + wlen;

		if ((p[i - 1] >= '0' && p[i - 1] <= '9') || p[i - 1] == '.' ||
		    memcmp(p + i, want, wlen) != 0)
			continue;
		while (j < data->d_size && j - i - wlen < 3 && p[j] >= '0' && p[j] <= '9')
			micro = micro * 10 + (unsigned)(p[j++] - '0');
		/* "3.10.13" or "3.10.13+" (a build from a branch), then the NUL */
		if (j > i + wlen && j < data->d_size &&
		    (p[j] == '\0' || (p[j] == '+' && j + 1 < data->d_size && p[j + 1] == '\0')))
			return 3u << 16 | minor << 8 | micro;
	}
	return 0;
}

/* read_syms' reading of the mapped file, under its guard; *elfp is set as soon as
 * libelf has a handle. */
static int read_syms_mapped(int fd, uint32_t name_minor, struct py_syms *s,
			    struct object_segment **segs, size_t *n_segs, Elf *volatile *elfp)
{
	Elf *elf;
	Elf_Scn *scn = NULL, *rodata = NULL;
	GElf_Shdr sh;
	size_t shstrndx;

	*elfp = elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return -ENOEXEC;
	/* .dynsym first (always there: the symbols are exported), .symtab for what a
	 * build keeps local */
	for (int pass = 0; pass < 2; pass++) {
		scn = NULL;
		while ((scn = elf_nextscn(elf, scn))) {
			const char *name;

			if (!gelf_getshdr(scn, &sh))
				continue;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (pass == 0 && sh.sh_type == SHT_PROGBITS && name &&
			    strcmp(name, ".rodata") == 0)
				rodata = scn;
			if (sh.sh_type == (pass == 0 ? SHT_DYNSYM : SHT_SYMTAB))
				scan_symtab(elf, scn, &sh, s);
		}
	}
	if (!s->py_version && rodata)
		s->rodata_version = rodata_version(rodata, name_minor);
	return object_elf_segments(elf, segs, n_segs);
}

/*
 * The file is mapped (ELF_C_READ_MMAP), not read: a build's .symtab, .strtab and
 * .rodata (pyenv's, unstripped: tens of MB) would otherwise be copied into the heap
 * whole, and the pages scanned leave with the mapping. Read under base_guard: a file
 * truncated in place meanwhile raises SIGBUS, which fails the probe (-EIO) instead of
 * the agent; libelf's handle is then not trusted and left, not ended (a rare case).
 */
static int read_syms(const char *path, uint32_t name_minor, struct py_syms *s,
		     struct object_segment **segs, size_t *n_segs)
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
		err = read_syms_mapped(fd, name_minor, s, segs, n_segs, &elf);
	base_guard_pop(&g);
	if (g.faulted)
		err = -EIO;
	else if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

/* major << 16 | minor << 8 of "libpythonM.N.so..." or "pythonM.N", 0 when the name
 * says none. */
static uint32_t name_version(const char *path)
{
	const char *base = strrchr(path, '/');
	unsigned major, minor;

	base = base ? base + 1 : path;
	if (strncmp(base, "lib", 3) == 0)
		base += 3;
	if (sscanf(base, "python%u.%u", &major, &minor) == 2 && major < 10 && minor < 100)
		return major << 16 | minor << 8;
	return 0;
}

static uint32_t name_minor(const char *path)
{
	uint32_t v = name_version(path);

	return v >> 16 == 3 ? (v >> 8) & 0xff : 0;
}

/* libpython3.X.so* (or 2.X: recognised, to be counted as unsupported) */
static bool is_libpython(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "libpython", 9) == 0 && name_version(base) && strstr(base, ".so");
}

/* The process's mappings (proc's one maps reader, capped). 0, -ESRCH (gone, or
 * nothing mapped: a zombie or kernel thread), -errno. */
static int read_maps(uint32_t pid, struct proc_mapping **out, size_t *n_out)
{
	int err = proc_read_maps(pid, out, n_out);

	if (err == -ENOENT || (!err && !*n_out))
		return -ESRCH;
	return err;
}

/* Tries the object mapped first at maps[i] (its lowest mapping). 0 when it is CPython. */
static int try_object(uint32_t pid, const struct proc_mapping *m, struct py_target *t)
{
	struct object_segment *segs = NULL;
	struct py_syms s;
	size_t n_segs = 0;
	char path[PATH_MAX + 64];
	uint64_t vaddr;
	int err;

	/* map_files reaches the file in the process's mount namespace, even deleted */
	snprintf(path, sizeof(path), "/proc/%u/map_files/%lx-%lx", pid, (unsigned long)m->start,
		 (unsigned long)m->end);
	err = read_syms(path, name_minor(m->path), &s, &segs, &n_segs);
	if (err == -ENOENT || err == -EPERM || err == -EACCES) {
		snprintf(path, sizeof(path), "/proc/%u/root%s", pid, m->path);
		err = read_syms(path, name_minor(m->path), &s, &segs, &n_segs);
	}
	if (err)
		goto cleanup;
	if (!s.code_type) {
		err = -PYTHON_E_NOT_PYTHON;
		goto cleanup;
	}
	if (!s.runtime) {
		/* CPython before 3.7 (2.7, 3.6): no _PyRuntime, nothing to walk */
		memset(t, 0, sizeof(*t));
		t->pid = pid;
		t->version = name_version(m->path);
		snprintf(t->path, sizeof(t->path), "%s", m->path);
		err = 0;
		goto cleanup;
	}
	if (!object_segments_vaddr(segs, n_segs, m->pgoff, &vaddr)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->bias = m->start - vaddr; /* addr = vaddr + bias */
	t->runtime = s.runtime + t->bias;
	t->code_type = s.code_type + t->bias;
	if (s.eval) {
		t->eval_start = s.eval + t->bias;
		t->eval_end = t->eval_start + (s.eval_size ? s.eval_size : 1);
	}
	snprintf(t->path, sizeof(t->path), "%s", m->path);
	if (s.py_version) {
		uint64_t hex; /* PY_VERSION_HEX: 0xMMmmuuRS (release level, serial) */

		err = py_read(pid, s.py_version + t->bias, &hex, sizeof(hex));
		if (err)
			goto cleanup;
		t->version = (uint32_t)(hex >> 8) & 0xffffff;
	} else {
		t->version = s.rodata_version;
	}
	err = 0;
cleanup:
	free(segs);
	return err;
}

/*
 * Executables found not to be CPython, by (dev, inode): most processes a machine starts
 * run a few binaries (sh, sed, grep...), and each would otherwise cost an ELF symbol
 * scan per exec. A ring of the last PY_NOTPY_MAX; a binary replaced in place (same
 * inode) by a Python is not noticed until it falls out.
 */
#define PY_NOTPY_MAX 256
static struct {
	uint64_t dev, inode;
} notpy[PY_NOTPY_MAX];
static size_t notpy_next;
static pthread_mutex_t notpy_lock = PTHREAD_MUTEX_INITIALIZER;

static bool notpy_has(const struct proc_mapping *m)
{
	bool hit = false;

	pthread_mutex_lock(&notpy_lock);
	for (size_t i = 0; i < PY_NOTPY_MAX && !hit; i++)
		hit = notpy[i].inode == m->inode && notpy[i].dev == proc_mapping__dev(m);
	pthread_mutex_unlock(&notpy_lock);
	return hit;
}

static void notpy_add(const struct proc_mapping *m)
{
	pthread_mutex_lock(&notpy_lock);
	notpy[notpy_next].dev = proc_mapping__dev(m);
	notpy[notpy_next].inode = m->inode;
	notpy_next = (notpy_next + 1) % PY_NOTPY_MAX;
	pthread_mutex_unlock(&notpy_lock);
}

int py_probe_target(uint32_t pid, struct py_target *out)
{
	struct proc_mapping *maps = NULL;
	size_t n = 0;
	char exe[PATH_MAX], link[64];
	ssize_t len;
	int err, found = -PYTHON_E_NOT_PYTHON;

	memset(out, 0, sizeof(*out));
	err = read_maps(pid, &maps, &n);
	if (err)
		return err;
	/* Judged on this very read: a second look at the maps could see libc mapped
	 * since, and take an early "not Python" for a final one. */
	out->loading = true;
	for (size_t i = 0; i < n && out->loading; i++)
		out->loading = !strstr(maps[i].path, "/libc.so") && !strstr(maps[i].path, "/libc-");
	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	len = readlink(link, exe, sizeof(exe) - 1);
	exe[len > 0 ? len : 0] = '\0';
	/* libpython first (a python3.X executable that links it exports nothing), then
	 * the executable: each object at its lowest mapping (maps are sorted) */
	for (int pass = 0; pass < 2 && found == -PYTHON_E_NOT_PYTHON; pass++) {
		for (size_t i = 0; i < n; i++) {
			const struct proc_mapping *m = &maps[i];
			bool want =
			    pass == 0 ? is_libpython(m->path) : exe[0] && strcmp(m->path, exe) == 0;

			if (!m->inode || !want || (i > 0 && strcmp(maps[i - 1].path, m->path) == 0))
				continue;
			if (pass == 1 && notpy_has(m))
				continue;
			found = try_object(pid, m, out);
			if (found == -PYTHON_E_NOT_PYTHON && pass == 1)
				notpy_add(m);
			if (found != -PYTHON_E_NOT_PYTHON)
				break;
		}
	}
	proc_maps_free(maps, n);
	if (found)
		return found;
	if (!out->runtime || (out->version >> 16) != 3 || ((out->version >> 8) & 0xff) < 10 ||
	    ((out->version >> 8) & 0xff) > 13)
		return -PYTHON_E_UNSUPPORTED;
	return 0;
}
