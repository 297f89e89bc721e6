/*
 * Tests for src/symbolize. ELF fixtures are compiled at test time with gcc into the test
 * tmp dir: a PIE and a non-PIE executable, a shared library and a stripped copy of it.
 * Expected offsets come from an independent reading of each file here (libelf: symbol
 * vaddr, then the PT_LOAD holding it), not from the code under test. The batch engine
 * (sym_batch: lines in, addr2line's text out) is checked against texts written here.
 */
#include "base/base.h"
#include "base/membudget.h"
#include "symbolize/sym_internal.h"
#include "symbolize/symbolize.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <libiberty/demangle.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char fixture_src[] = "__attribute__((noinline)) int hearth_exported(int x)\n"
				  "{\n"
				  "	int s = 0;\n"
				  "	for (int i = 0; i < x; i++)\n"
				  "		s += (i * x) ^ (s >> 3);\n"
				  "	return s;\n"
				  "}\n"
				  "__attribute__((noinline)) static int hearth_local(int x)\n"
				  "{\n"
				  "	volatile int v = x;\n"
				  "	return v * 3 + 1;\n"
				  "}\n"
				  "int (*volatile hearth_keep)(int) = hearth_local;\n"
				  "#ifdef WITH_MAIN\n"
				  "int main(int argc, char **argv)\n"
				  "{\n"
				  "	(void)argv;\n"
				  "	return hearth_exported(argc) + hearth_keep(argc);\n"
				  "}\n"
				  "#endif\n";

/* Paths of the fixtures, built once per test binary. */
static char fx_pie[256], fx_nopie[256], fx_lib[256], fx_stripped[256];
static int fx_state; /* 0 not built, 1 built, -1 failed */

static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd) == 0 ? 0 : -1;
}

static int build_fixtures(void)
{
	const char *d = unit_tmp_dir();
	char src[256];
	FILE *f;

	if (fx_state)
		return fx_state > 0 ? 0 : -1;
	fx_state = -1;
	snprintf(src, sizeof(src), "%s/fixture.c", d);
	snprintf(fx_pie, sizeof(fx_pie), "%s/pie", d);
	snprintf(fx_nopie, sizeof(fx_nopie), "%s/nopie", d);
	snprintf(fx_lib, sizeof(fx_lib), "%s/libfx.so", d);
	snprintf(fx_stripped, sizeof(fx_stripped), "%s/libfx-stripped.so", d);
	if (!(f = fopen(src, "w")) || fputs(fixture_src, f) < 0 || fclose(f) != 0)
		return -1;
	if (sh("gcc -O1 -DWITH_MAIN -fPIE -pie -Wl,--build-id -o '%s' '%s'", fx_pie, src) ||
	    sh("gcc -O1 -DWITH_MAIN -fno-pie -no-pie -Wl,--build-id -o '%s' '%s'", fx_nopie, src) ||
	    sh("gcc -O1 -shared -fPIC -Wl,--build-id -o '%s' '%s'", fx_lib, src) ||
	    sh("cp '%s' '%s' && strip '%s'", fx_lib, fx_stripped, fx_stripped))
		return -1;
	fx_state = 1;
	return 0;
}

/* Finds a function symbol by name in .symtab, else .dynsym: its vaddr and size. */
static int find_symbol(Elf *elf, const char *name, uint64_t *vaddr, uint64_t *size)
{
	const Elf64_Word types[] = {SHT_SYMTAB, SHT_DYNSYM};

	for (int t = 0; t < 2; t++) {
		Elf_Scn *scn = NULL;
		GElf_Shdr shdr;
		GElf_Sym sym;

		while ((scn = elf_nextscn(elf, scn))) {
			Elf_Data *data;

			if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != types[t] ||
			    !(data = elf_getdata(scn, NULL)))
				continue;
			for (int i = 0; gelf_getsym(data, i, &sym); i++) {
				const char *n = elf_strptr(elf, shdr.sh_link, sym.st_name);

				if (n && strcmp(n, name) == 0 && sym.st_shndx != SHN_UNDEF) {
					*vaddr = sym.st_value;
					*size = sym.st_size;
					return 0;
				}
			}
		}
	}
	return -1;
}

/* File offset of a function: off = vaddr - p_vaddr + p_offset of the PT_LOAD holding it. */
static int symbol_file_off(const char *path, const char *name, uint64_t *off, uint64_t *size,
			   uint64_t *vaddr_out)
{
	int fd = open(path, O_RDONLY), err = -1;
	Elf *elf = NULL;
	uint64_t vaddr;
	size_t n;
	GElf_Phdr ph;

	elf_version(EV_CURRENT);
	if (fd < 0 || !(elf = elf_begin(fd, ELF_C_READ, NULL)) ||
	    find_symbol(elf, name, &vaddr, size) || elf_getphdrnum(elf, &n))
		goto cleanup;
	for (size_t i = 0; i < n; i++) {
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
		    vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			if (vaddr_out)
				*vaddr_out = vaddr;
			err = 0;
			break;
		}
	}
cleanup:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return err;
}

/* The object for path, with dev/inode as /proc/PID/maps would give them. */
static struct sym_object *object_of(struct symbolizer *s, const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return symbolizer__object(s, path, path, 0, 0);
	return symbolizer__object(s, path, path, st.st_dev, st.st_ino);
}

/* Whether off in obj resolves to exactly one frame named name. */
static int resolves_to(struct symbolizer *s, struct sym_object *o, uint64_t off, const char *name)
{
	const struct sym_result *r = NULL;

	if (symbolizer__resolve(s, o, off, &r) != 0 || !r || r->n != 1)
		return 0;
	return strcmp(r->frames[0].name, name) == 0 &&
	       strcmp(r->frames[0].system_name, name) == 0 && r->frames[0].file == NULL &&
	       r->frames[0].line == 0 && !r->frames[0].inlined;
}

static int resolves_nothing(struct symbolizer *s, struct sym_object *o, uint64_t off)
{
	const struct sym_result *r = NULL;

	return symbolizer__resolve(s, o, off, &r) == 0 && r && r->n == 0;
}

/* Start, middle and last byte of the function resolve to it. */
static int function_resolves(struct symbolizer *s, const char *path, const char *name)
{
	struct sym_object *o = object_of(s, path);
	uint64_t off, size;

	if (!o || symbol_file_off(path, name, &off, &size, NULL) || size < 2)
		return 0;
	return resolves_to(s, o, off, name) && resolves_to(s, o, off + size / 2, name) &&
	       resolves_to(s, o, off + size - 1, name);
}

TEST(pie_executable)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o;

	CHECK(s && build_fixtures() == 0);
	CHECK(function_resolves(s, fx_pie, "hearth_exported"));
	CHECK(function_resolves(s, fx_pie, "hearth_local"));
	CHECK(function_resolves(s, fx_pie, "main"));
	o = object_of(s, fx_pie);
	CHECK(o);
	CHECK_STREQ(sym_object__path(o), fx_pie);
	CHECKF(strlen(sym_object__build_id(o)) == 40, "build-id \"%s\"", sym_object__build_id(o));
	CHECK(resolves_nothing(s, o, 0));	 /* ELF header: no function */
	CHECK(resolves_nothing(s, o, 1u << 30)); /* past the file */
cleanup:
	symbolizer__free(s);
}

TEST(non_pie_executable)
{
	struct symbolizer *s = symbolizer__new(NULL);
	uint64_t off, size, vaddr;

	CHECK(s && build_fixtures() == 0);
	CHECK(symbol_file_off(fx_nopie, "hearth_exported", &off, &size, &vaddr) == 0);
	CHECKF(vaddr >= 0x400000 && vaddr != off, "vaddr 0x%" PRIx64 " off 0x%" PRIx64, vaddr, off);
	CHECK(function_resolves(s, fx_nopie, "hearth_exported"));
	CHECK(function_resolves(s, fx_nopie, "hearth_local"));
	CHECK(resolves_nothing(s, object_of(s, fx_nopie), 0));
cleanup:
	symbolizer__free(s);
}

TEST(shared_library)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o;
	uint64_t off, size;

	CHECK(s && build_fixtures() == 0);
	CHECK(function_resolves(s, fx_lib, "hearth_exported"));
	CHECK(function_resolves(s, fx_lib, "hearth_local"));
	/* Just past the last byte of a sized function is not that function. */
	o = object_of(s, fx_lib);
	CHECK(symbol_file_off(fx_lib, "hearth_exported", &off, &size, NULL) == 0);
	CHECK(!resolves_to(s, o, off + size, "hearth_exported"));
cleanup:
	symbolizer__free(s);
}

TEST(stripped_library_falls_back_to_dynsym)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o;
	uint64_t off, size;

	CHECK(s && build_fixtures() == 0);
	/* strip removed .symtab: the local function is gone, the exported one is in .dynsym */
	CHECK(symbol_file_off(fx_stripped, "hearth_local", &off, &size, NULL) == -1);
	CHECK(function_resolves(s, fx_stripped, "hearth_exported"));
	o = object_of(s, fx_stripped);
	CHECK(symbol_file_off(fx_lib, "hearth_local", &off, &size, NULL) == 0);
	CHECK(resolves_nothing(s, o, off + size / 2)); /* not claimed by a neighbour */
cleanup:
	symbolizer__free(s);
}

TEST(elf_opened_once_per_object)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *first = NULL, *o;
	struct sym_stats st;
	char link[300], copy[300];
	uint64_t off, size;

	CHECK(s && build_fixtures() == 0);
	CHECK(symbol_file_off(fx_lib, "hearth_exported", &off, &size, NULL) == 0);
	for (int round = 0; round < 20; round++) {
		o = object_of(s, fx_lib);
		CHECK(o && (!first || o == first));
		first = o;
		for (uint64_t i = 0; i < size; i++)
			CHECK(resolves_to(s, o, off + i, "hearth_exported"));
	}
	/* Another name for the same inode, with no inode given: still the same object. */
	snprintf(link, sizeof(link), "%s/libfx-link.so", unit_tmp_dir());
	unlink(link);
	CHECK(symlink(fx_lib, link) == 0);
	CHECK(symbolizer__object(s, link, link, 0, 0) == first);
	symbolizer__stats(s, &st);
	CHECKF(st.elf_opens == 1, "%" PRIu64 " opens", st.elf_opens);
	CHECK(st.objects == 1 && st.elf_failures == 0);
	CHECK(st.cache_misses == size);
	CHECK(st.cache_hits == 19 * size);

	/* A copy (other inode, same build-id) shares the object; it is read only for its id. */
	snprintf(copy, sizeof(copy), "%s/libfx-copy.so", unit_tmp_dir());
	CHECK(sh("cp '%s' '%s'", fx_lib, copy) == 0);
	CHECK(object_of(s, copy) == first);
	CHECK(object_of(s, copy) == first);
	symbolizer__stats(s, &st);
	CHECK(st.elf_opens == 2 && st.objects == 1);
cleanup:
	symbolizer__free(s);
}

TEST(open_path_must_be_the_mapped_inode)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o;
	struct stat st;
	struct sym_stats stats;
	char gone[300];
	uint64_t off, size;

	CHECK(s && build_fixtures() == 0);
	CHECK(stat(fx_lib, &st) == 0);
	CHECK(symbol_file_off(fx_lib, "hearth_exported", &off, &size, NULL) == 0);
	snprintf(gone, sizeof(gone), "%s/proc/1/map_files/1000-2000", unit_tmp_dir());
	/* The mapped name is another inode: not trusted, nothing resolves. */
	o = symbolizer__object(s, gone, fx_nopie, st.st_dev, st.st_ino);
	CHECK(o && resolves_nothing(s, o, off));
	symbolizer__free(s);
	/* Nor when open_path itself is another file (the library was replaced since). */
	s = symbolizer__new(NULL);
	CHECK(s);
	o = symbolizer__object(s, fx_nopie, fx_nopie, st.st_dev, st.st_ino);
	CHECK(o && resolves_nothing(s, o, off));
	symbolizer__stats(s, &stats);
	CHECK(stats.elf_opens == 0 && stats.elf_failures == 1);
	symbolizer__free(s);
	/* The mapped name is the same inode: read through it. */
	s = symbolizer__new(NULL);
	CHECK(s);
	o = symbolizer__object(s, gone, fx_lib, st.st_dev, st.st_ino);
	CHECK(o && resolves_to(s, o, off, "hearth_exported"));
	CHECK(symbolizer__object(s, gone, fx_lib, st.st_dev, st.st_ino) == o);
	CHECK(object_of(s, fx_lib) == o);
	symbolizer__stats(s, &stats);
	CHECK(stats.elf_opens == 1 && stats.elf_failures == 0);
cleanup:
	symbolizer__free(s);
}

TEST(file_rewritten_in_place_is_a_new_object)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *a, *b;
	struct stat st1, st2;
	struct sym_stats st;
	char path[300];
	uint64_t off, size;

	CHECK(s && build_fixtures() == 0);
	snprintf(path, sizeof(path), "%s/rewritten", unit_tmp_dir());
	CHECK(sh("cat '%s' > '%s'", fx_lib, path) == 0);
	CHECK(stat(path, &st1) == 0);
	a = object_of(s, path);
	CHECK(symbol_file_off(path, "hearth_exported", &off, &size, NULL) == 0);
	CHECK(resolves_to(s, a, off, "hearth_exported"));
	/* Same inode, new content and mtime (e.g. `cp new old` over a library). */
	usleep(1100 * 1000); /* past SYM_RECHECK_NS: identities are re-checked once a second */
	CHECK(sh("cat '%s' > '%s'", fx_pie, path) == 0);
	CHECK(stat(path, &st2) == 0 && st2.st_ino == st1.st_ino);
	b = object_of(s, path);
	CHECK(b && b != a);
	CHECK(strcmp(sym_object__build_id(a), sym_object__build_id(b)) != 0);
	CHECK(symbol_file_off(path, "main", &off, &size, NULL) == 0);
	CHECK(resolves_to(s, b, off, "main"));
	symbolizer__stats(s, &st);
	CHECK(st.elf_opens == 2 && st.objects == 2);
cleanup:
	symbolizer__free(s);
}

/* Writes bytes at an offset of a file. */
static int patch(const char *path, long at, const void *bytes, size_t n)
{
	int fd = open(path, O_WRONLY);
	int ok = fd >= 0 && pwrite(fd, bytes, n, at) == (ssize_t)n;

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

/*
 * File offset of the section header of the first section of this type (with link, of
 * the section its sh_link names instead), or -1.
 */
static long shdr_pos(const char *path, Elf64_Word type, bool link)
{
	int fd = open(path, O_RDONLY);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	GElf_Ehdr eh;
	GElf_Shdr shdr;
	Elf_Scn *scn = NULL;
	long pos = -1;

	if (elf && gelf_getehdr(elf, &eh))
		while ((scn = elf_nextscn(elf, scn)))
			if (gelf_getshdr(scn, &shdr) && shdr.sh_type == type) {
				size_t ndx = link ? shdr.sh_link : elf_ndxscn(scn);

				pos = (long)(eh.e_shoff + ndx * eh.e_shentsize);
				break;
			}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return pos;
}

/* Each corrupt variant is looked at by a fresh symbolizer: no build-id sharing. */
static int corrupt_resolves_nothing(const char *path, uint64_t good_off, uint64_t *failures)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o = s ? object_of(s, path) : NULL;
	struct sym_stats st;
	int ok = o && resolves_nothing(s, o, good_off) && resolves_nothing(s, o, 0) &&
		 resolves_nothing(s, o, 0x1000) && resolves_nothing(s, o, UINT64_MAX);

	if (s) {
		symbolizer__stats(s, &st);
		*failures += st.elf_failures;
	}
	symbolizer__free(s);
	return ok;
}

TEST(corrupt_elf_resolves_nothing)
{
	static const unsigned char ff[4096] = {[0 ... 4095] = 0xff};
	const uint64_t huge = 0x7fffffffffff0000ULL;
	char p[300];
	uint64_t off, size, failures = 0;
	long pos;
	const char *d;

	CHECK(build_fixtures() == 0);
	d = unit_tmp_dir();
	CHECK(symbol_file_off(fx_pie, "hearth_exported", &off, &size, NULL) == 0);

	snprintf(p, sizeof(p), "%s/trunc-1k", d);
	CHECK(sh("head -c 1024 '%s' > '%s'", fx_pie, p) == 0);
	CHECK(corrupt_resolves_nothing(p, off, &failures));
	snprintf(p, sizeof(p), "%s/trunc-half", d);
	CHECK(sh("head -c $(( $(stat -c %%s '%s') / 2 )) '%s' > '%s'", fx_pie, fx_pie, p) == 0);
	CHECK(corrupt_resolves_nothing(p, off, &failures));

	snprintf(p, sizeof(p), "%s/bad-shoff", d); /* e_shoff, ELF64 header offset 0x28 */
	CHECK(sh("cp '%s' '%s'", fx_pie, p) == 0 && patch(p, 0x28, &huge, 8) == 0);
	CHECK(corrupt_resolves_nothing(p, off, &failures));

	snprintf(p, sizeof(p), "%s/bad-symtab", d); /* sh_offset, sh_size of .symtab */
	pos = shdr_pos(fx_pie, SHT_SYMTAB, false);
	CHECK(pos > 0 && sh("cp '%s' '%s'", fx_pie, p) == 0);
	CHECK(patch(p, pos + 0x18, &huge, 8) == 0 && patch(p, pos + 0x20, &huge, 8) == 0);
	CHECK(corrupt_resolves_nothing(p, off, &failures));

	snprintf(p, sizeof(p), "%s/bad-strtab", d); /* .symtab's string table past the end */
	pos = shdr_pos(fx_pie, SHT_SYMTAB, true);
	CHECK(pos > 0 && sh("cp '%s' '%s'", fx_pie, p) == 0);
	CHECK(patch(p, pos + 0x18, &huge, 8) == 0);
	CHECK(corrupt_resolves_nothing(p, off, &failures));

	snprintf(p, sizeof(p), "%s/ff-shdrs", d); /* section header table all 0xff */
	pos = shdr_pos(fx_pie, SHT_SYMTAB, false);
	CHECK(sh("cp '%s' '%s'", fx_pie, p) == 0 && patch(p, pos - 64 * 4, ff, 64 * 12) == 0);
	CHECK(corrupt_resolves_nothing(p, off, &failures));

	snprintf(p, sizeof(p), "%s/ff-phdrs", d); /* program headers from e_phoff (0x40) */
	CHECK(sh("cp '%s' '%s'", fx_pie, p) == 0 && patch(p, 0x40, ff, 56 * 4) == 0);
	CHECK(corrupt_resolves_nothing(p, off, &failures));
	CHECKF(failures >= 5, "%" PRIu64 " failures counted", failures);
cleanup:;
}

TEST(non_elf_files_resolve_nothing)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_stats st;
	char text[300], fifo[300], missing[300];
	const char *paths[] = {text, fifo, missing, unit_tmp_dir(), "/dev/zero", ""};
	struct sym_object *o;

	CHECK(s);
	snprintf(text, sizeof(text), "%s/text.txt", unit_tmp_dir());
	snprintf(fifo, sizeof(fifo), "%s/fifo", unit_tmp_dir());
	snprintf(missing, sizeof(missing), "%s/does-not-exist", unit_tmp_dir());
	CHECK(sh("echo 'hello, not an ELF file' > '%s'", text) == 0);
	unlink(fifo);
	CHECK(mkfifo(fifo, 0600) == 0); /* opening it must not block */
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		o = object_of(s, paths[i]);
		CHECKF(o != NULL, "%s", paths[i]);
		CHECK(resolves_nothing(s, o, 0) && resolves_nothing(s, o, 10));
		CHECK(object_of(s, paths[i]) == o);
		CHECK_STREQ(sym_object__build_id(o), "");
	}
	symbolizer__stats(s, &st);
	CHECK(st.elf_opens == 0 && st.elf_failures == 6 && st.objects == 6);
	CHECK(symbolizer__resolve(s, NULL, 0, &(const struct sym_result *){NULL}) == -EINVAL);
cleanup:
	symbolizer__free(s);
}

static const char fake_kallsyms[] = "ffffffff81000000 T _stext\n"
				    "ffffffff81000000 T startup_64\n"
				    "ffffffff81000100 t secondary_startup\n"
				    "ffffffff81000200 D some_data\n"
				    "ffffffff81000300 T do_work\n"
				    "ffffffff81000400 W weak_fn\n"
				    "ffffffff81000500 T _etext\n"
				    "ffffffff82000000 T _sinittext\n"
				    "ffffffff82000100 T init_fn\n"
				    "ffffffff82000200 T _einittext\n"
				    "ffffffffc0001000 t mod_a_fn1\t[mod_a]\n"
				    "ffffffffc0001100 t mod_a_fn2\t[mod_a]\n"
				    "ffffffffc0005000 t mod_b_fn\t[mod_b]\n"
				    "this line is garbage\n";

/* Display name of the kernel frame for addr, "" when unresolved. */
static const char *ksym(struct symbolizer *s, uint64_t addr)
{
	const struct sym_result *r = NULL;

	if (symbolizer__resolve_kernel(s, addr, &r) != 0 || !r)
		return "(error)";
	return r->n ? r->frames[0].name : "";
}

TEST(kernel_kallsyms)
{
	char path[300];
	struct sym_opts opts = {.kallsyms_path = path};
	struct symbolizer *s = NULL;
	const struct sym_result *r = NULL;
	struct sym_stats st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/kallsyms", unit_tmp_dir());
	CHECK((f = fopen(path, "w")) && fputs(fake_kallsyms, f) >= 0 && fclose(f) == 0);
	s = symbolizer__new(&opts);
	CHECK(s);
	CHECK_STREQ(ksym(s, 0xffffffff80000000), ""); /* before the first symbol */
	CHECK_STREQ(ksym(s, 0xffffffff81000000), "startup_64");
	CHECK_STREQ(ksym(s, 0xffffffff81000050), "startup_64");
	CHECK_STREQ(ksym(s, 0xffffffff81000250), "secondary_startup"); /* data is not a bound */
	CHECK_STREQ(ksym(s, 0xffffffff81000350), "do_work");
	CHECK_STREQ(ksym(s, 0xffffffff810004ff), "weak_fn");
	CHECK_STREQ(ksym(s, 0xffffffff81000500), ""); /* _etext ends the text */
	CHECK_STREQ(ksym(s, 0xffffffff81800000), "");
	CHECK_STREQ(ksym(s, 0xffffffff82000150), "init_fn");
	CHECK_STREQ(ksym(s, 0xffffffff82000250), "");
	CHECK_STREQ(ksym(s, 0xffffffffc0001010), "mod_a_fn1 [mod_a]");
	CHECK_STREQ(ksym(s, 0xffffffffc0001110), "mod_a_fn2 [mod_a]");
	CHECK_STREQ(ksym(s, 0xffffffffc0005010), "mod_b_fn [mod_b]");
	CHECK_STREQ(ksym(s, 0xffffffffc0005000 + 0x10000), ""); /* far past the last one */
	CHECK_STREQ(ksym(s, UINT64_MAX), "");
	CHECK(symbolizer__resolve_kernel(s, 0xffffffffc0001010, &r) == 0 && r->n == 1);
	CHECK_STREQ(r->frames[0].system_name, "mod_a_fn1");
	symbolizer__stats(s, &st);
	CHECKF(st.kernel_symbols == 11, "%" PRIu64 " kernel symbols", st.kernel_symbols);
cleanup:
	symbolizer__free(s);
}

/* A function's name after its padding symbol ("__pfx_NAME") is kept once
 * (sym_kallsyms.c): both still resolve to their own names. */
TEST(kernel_kallsyms_padding_names)
{
	static const char pfx[] = "ffffffff81000000 T _stext\n"
				  "ffffffff81000040 t __pfx_foo\n"
				  "ffffffff81000050 T foo\n"
				  "ffffffff81000100 t __pfx_bar\n"
				  "ffffffff81000110 t baz\n" /* not bar: its own name */
				  "ffffffff81000200 t __pfx___pfx_x\n"
				  "ffffffff81000210 t __pfx_x\n"
				  "ffffffff81000220 t x\n"
				  "ffffffffc0001000 t __pfx_mfn\t[mod_a]\n"
				  "ffffffffc0001010 t mfn\t[mod_a]\n";
	char path[300];
	struct sym_opts opts = {.kallsyms_path = path};
	struct symbolizer *s = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/kallsyms-pfx", unit_tmp_dir());
	CHECK((f = fopen(path, "w")) && fputs(pfx, f) >= 0 && fclose(f) == 0);
	s = symbolizer__new(&opts);
	CHECK(s);
	CHECK_STREQ(ksym(s, 0xffffffff81000048), "__pfx_foo");
	CHECK_STREQ(ksym(s, 0xffffffff81000050), "foo");
	CHECK_STREQ(ksym(s, 0xffffffff81000108), "__pfx_bar");
	CHECK_STREQ(ksym(s, 0xffffffff81000110), "baz");
	CHECK_STREQ(ksym(s, 0xffffffff81000200), "__pfx___pfx_x");
	CHECK_STREQ(ksym(s, 0xffffffff81000210), "__pfx_x");
	CHECK_STREQ(ksym(s, 0xffffffff81000220), "x");
	CHECK_STREQ(ksym(s, 0xffffffffc0001000), "__pfx_mfn [mod_a]");
	CHECK_STREQ(ksym(s, 0xffffffffc0001010), "mfn [mod_a]");
cleanup:
	symbolizer__free(s);
}

TEST(kernel_without_kallsyms)
{
	char path[300];
	struct sym_opts opts = {.kallsyms_path = path};
	struct symbolizer *s = NULL;
	struct sym_stats st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/kallsyms-restricted", unit_tmp_dir());
	CHECK((f = fopen(path, "w")) &&
	      fputs("0000000000000000 T _stext\n0000000000000000 T startup_64\n", f) >= 0 &&
	      fclose(f) == 0);
	s = symbolizer__new(&opts);
	CHECK(s);
	CHECK_STREQ(ksym(s, 0xffffffff81000050), "");
	CHECK_STREQ(ksym(s, 0), "");
	symbolizer__stats(s, &st);
	CHECK(st.kernel_symbols == 0);
	symbolizer__free(s);
	snprintf(path, sizeof(path), "%s/no-such-kallsyms", unit_tmp_dir());
	s = symbolizer__new(&opts);
	CHECK(s);
	CHECK_STREQ(ksym(s, 0xffffffff81000050), "");
cleanup:
	symbolizer__free(s);
}

/* Address of a text symbol in the real kallsyms, 0 when not visible. */
static uint64_t real_ksym_addr(const char *name)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[600], want[300];
	uint64_t addr = 0;

	snprintf(want, sizeof(want), " T %s\n", name);
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, want) && sscanf(line, "%" SCNx64, &addr) == 1)
			break;
	if (f)
		fclose(f);
	return addr;
}

TEST(real_kallsyms_if_readable)
{
	struct symbolizer *s = symbolizer__new(NULL);
	uint64_t addr = real_ksym_addr("schedule");

	CHECK(s);
	/* Unprivileged or kptr_restrict: no addresses to check, and that is fine. */
	if (addr)
		CHECK_STREQ(ksym(s, addr + 1), "schedule");
cleanup:
	symbolizer__free(s);
}

/* ---- DWARF, demangling, perf maps, the cache budget ---- */

static const char names_src[] =
    "__attribute__((noinline)) int rs_legacy(int x) "
    "__asm__(\"_ZN4core3fmt5write17h0123456789abcdefE\");\n"
    "int rs_legacy(int x) { volatile int v = x; return v * 7; }\n"
    "__attribute__((noinline)) int rs_v0(int x) __asm__(\"_RNvNtCs1234_7mycrate3foo3bar\");\n"
    "int rs_v0(int x) { volatile int v = x; return v * 9; }\n"
    "static inline int inl_leaf(int x) { x ^= x >> 3; x *= 2654435761u; return x ^ (x >> 11); }\n"
    "__attribute__((noinline)) int inl_outer(int n) {\n"
    "	int s = 0;\n"
    "	for (int i = 0; i < n; i++)\n"
    "		s += inl_leaf(s + i);\n"
    "	return s;\n"
    "}\n";

/* A library with Rust-mangled names and, with -g, an inlined function. */
static int build_names_lib(char *out, size_t len, bool debug)
{
	char src[256];
	FILE *f;

	snprintf(src, sizeof(src), "%s/names.c", unit_tmp_dir());
	snprintf(out, len, "%s/libnames%s.so", unit_tmp_dir(), debug ? "-g" : "");
	if (!(f = fopen(src, "w")) || fputs(names_src, f) < 0 || fclose(f) != 0)
		return -1;
	return sh("gcc -O2 %s -shared -fPIC -Wl,--build-id -o '%s' '%s'", debug ? "-g" : "", out,
		  src);
}

TEST(rust_names_demangled)
{
	struct symbolizer *s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true});
	const struct sym_result *r = NULL;
	struct sym_object *o;
	char lib[256];
	uint64_t off, size;

	CHECK(s && build_names_lib(lib, sizeof(lib), false) == 0);
	CHECK((o = object_of(s, lib)));
	CHECK(symbol_file_off(lib, "_ZN4core3fmt5write17h0123456789abcdefE", &off, &size, NULL) ==
	      0);
	CHECK(symbolizer__resolve(s, o, off, &r) == 0 && r->n == 1);
	CHECKF(!strcmp(r->frames[0].name, "core::fmt::write"), "%s", r->frames[0].name);
	CHECK(!strcmp(r->frames[0].system_name, "_ZN4core3fmt5write17h0123456789abcdefE"));
	CHECK(symbol_file_off(lib, "_RNvNtCs1234_7mycrate3foo3bar", &off, &size, NULL) == 0);
	CHECK(symbolizer__resolve(s, o, off, &r) == 0 && r->n == 1);
	CHECKF(!strcmp(r->frames[0].name, "mycrate::foo::bar"), "%s", r->frames[0].name);
cleanup:
	symbolizer__free(s);
}

/* A C++ library: a method (mangled), a plain extern "C" function, and three global
 * aliases of one function (ties for which name an address shows). */
static const char cxx_src[] =
    "namespace hearth_ns {\n"
    "struct Widget { int spin(int x); };\n"
    "__attribute__((noinline)) int Widget::spin(int x) { volatile int v = x; return v * 5; }\n"
    "}\n"
    "extern \"C\" {\n"
    "__attribute__((noinline)) int hearth_plain(int x) { volatile int v = x; return v - 1; }\n"
    "int hearth_use(int x) { hearth_ns::Widget w; return w.spin(x) + hearth_plain(x); }\n"
    "int al_impl(int x) { volatile int v = x; return v + 3; }\n"
    "int al_zz(int) __attribute__((alias(\"al_impl\")));\n"
    "int al_mm(int) __attribute__((alias(\"al_impl\")));\n"
    "}\n";
#define CXX_METHOD    "_ZN9hearth_ns6Widget4spinEi"
#define CXX_DEMANGLED "hearth_ns::Widget::spin(int)"

static int build_cxx_lib(char *out, size_t len)
{
	char src[256];
	FILE *f;

	snprintf(src, sizeof(src), "%s/cxx.cc", unit_tmp_dir());
	snprintf(out, len, "%s/libcxx.so", unit_tmp_dir());
	if (!(f = fopen(src, "w")) || fputs(cxx_src, f) < 0 || fclose(f) != 0)
		return -1;
	return sh("g++ -O2 -shared -fPIC -o '%s' '%s'", out, src);
}

/* Bytes the symbolizer accounts now. */
static uint64_t accounted(struct symbolizer *s)
{
	struct sym_stats st;

	symbolizer__stats(s, &st);
	return st.cache_bytes;
}

/*
 * A symbol's name is demangled when a lookup first returns it, and kept with the
 * object's table: the account grows by at least the demangled name then, not at load
 * and not again for another address of the same function. Without an address cache,
 * the account is the object's tables alone.
 */
static void check_demangled_once(int *unit_failed, const char *lib, const char *sys,
				 const char *shown)
{
	struct symbolizer *s =
	    symbolizer__new(&(struct sym_opts){.no_debuginfod = true, .no_address_cache = true});
	const struct sym_result *r = NULL;
	struct sym_object *o;
	uint64_t off, size, loaded, hit;

	CHECK(s && (o = object_of(s, lib)));
	CHECK(symbol_file_off(lib, sys, &off, &size, NULL) == 0 && size >= 2);
	loaded = accounted(s);
	CHECK(symbolizer__resolve(s, o, off, &r) == 0 && r->n == 1);
	CHECKF(!strcmp(r->frames[0].name, shown), "%s", r->frames[0].name);
	CHECK(!strcmp(r->frames[0].system_name, sys));
	hit = accounted(s);
	CHECKF(hit >= loaded + strlen(shown) + 1, "%llu after the hit, %llu before",
	       (unsigned long long)hit, (unsigned long long)loaded);
	CHECK(symbolizer__resolve(s, o, off + size - 1, &r) == 0 && r->n == 1);
	CHECKF(!strcmp(r->frames[0].name, shown), "%s", r->frames[0].name);
	CHECKF(accounted(s) == hit, "%llu, want %llu", (unsigned long long)accounted(s),
	       (unsigned long long)hit);
cleanup:
	symbolizer__free(s);
}

TEST(cxx_name_demangled_on_first_hit)
{
	char lib[256];

	CHECK(build_cxx_lib(lib, sizeof(lib)) == 0);
	check_demangled_once(unit_failed, lib, CXX_METHOD, CXX_DEMANGLED);
cleanup:;
}

TEST(rust_names_demangled_on_first_hit)
{
	char lib[256];

	CHECK(build_names_lib(lib, sizeof(lib), false) == 0);
	check_demangled_once(unit_failed, lib, "_ZN4core3fmt5write17h0123456789abcdefE",
			     "core::fmt::write");
	check_demangled_once(unit_failed, lib, "_RNvNtCs1234_7mycrate3foo3bar",
			     "mycrate::foo::bar");
cleanup:;
}

/*
 * A demangled name longer than the demangler's first buffer (2 KiB) comes back whole:
 * f taking 20 arguments of a 5-scope type, all but the first written as a back
 * reference (S3_), so a short mangled name (libiberty refuses long ones) shows long.
 */
TEST(long_cxx_name_demangled_whole)
{
	static char mangled[512], type[256], shown[4096];
	char src[256], lib[256];
	size_t m = 0, t = 0, d = 0;
	FILE *f = NULL;
	int closed;

	m += (size_t)snprintf(mangled + m, sizeof(mangled) - m, "_Z1fN");
	for (int i = 0; i < 5; i++) {
		m += (size_t)snprintf(mangled + m, sizeof(mangled) - m,
				      "25abcdefghijklmnopqrstuvwx%c", 'a' + i);
		t += (size_t)snprintf(type + t, sizeof(type) - t, "%sabcdefghijklmnopqrstuvwx%c",
				      i ? "::" : "", 'a' + i);
	}
	m += (size_t)snprintf(mangled + m, sizeof(mangled) - m, "E");
	d += (size_t)snprintf(shown + d, sizeof(shown) - d, "f(%s", type);
	for (int i = 1; i < 20; i++) {
		m += (size_t)snprintf(mangled + m, sizeof(mangled) - m, "S3_");
		d += (size_t)snprintf(shown + d, sizeof(shown) - d, ", %s", type);
	}
	snprintf(shown + d, sizeof(shown) - d, ")");
	snprintf(src, sizeof(src), "%s/long.c", unit_tmp_dir());
	snprintf(lib, sizeof(lib), "%s/liblong.so", unit_tmp_dir());
	CHECK((f = fopen(src, "w")));
	fprintf(f,
		"__attribute__((noinline)) int long_fn(void) __asm__(\"%s\");\n"
		"int long_fn(void) { volatile int v = 3; return v * 2; }\n",
		mangled);
	closed = fclose(f);
	f = NULL;
	CHECK(closed == 0);
	CHECK(sh("gcc -O2 -shared -fPIC -o '%s' '%s'", lib, src) == 0);
	CHECK(strlen(shown) > 2048);
	check_demangled_once(unit_failed, lib, mangled, shown);
cleanup:
	if (f)
		fclose(f);
}

/*
 * The fast path for plain C++ names (sym_demangle.c) prints what libiberty prints, or
 * declines: name by name, against cplus_demangle itself, on hand-picked names (each
 * rule: substitutions, constructors of templates, clone suffixes, collapsing
 * qualifiers it must decline) and on every C++ name of libstdc++ when it is there.
 * Returns whether the fast path took sys (and agreed); a disagreement fails the test.
 */
static bool fast_agrees(int *unit_failed, const char *sys, long *taken)
{
	bool declined = true;
	char *fast = sym_demangle_fast(sys, &declined), *lib = NULL;
	bool ok = false;

	if (declined) {
		CHECK(!fast);
		return true;
	}
	lib = cplus_demangle(sys, DMGL_PARAMS | DMGL_ANSI);
	CHECKF(fast && lib && !strcmp(fast, lib), "%s: fast \"%s\", libiberty \"%s\"", sys,
	       fast ? fast : "(null)", lib ? lib : "(null)");
	(*taken)++;
	ok = true;
cleanup:
	free(fast);
	free(lib);
	return ok;
}

TEST(fast_demangler_agrees_with_libiberty)
{
	static const char *const names[] = {
	    "_ZN2v88internal4Heap18IsMainThreadParkedEPNS0_9LocalHeapE",
	    /* a name ending in "<" before its template arguments (fuzz_demangle): "< <" */
	    "_Z8numpunc<IwEvv",
	    "_ZN12_GLOBAL__N_13fooEv",
	    "_ZN12_GLOBAL__N_1L3barEi",
	    "_ZL3bazv",
	    "_ZSt9terminatev",
	    "_ZNSt9exceptionD2Ev",
	    "_ZN3FooC1ERKS_",
	    "_ZN3FooD0Ev",
	    "_ZNK3Foo3getEv",
	    "_ZN3Foo3setEPKcRS_OS_",
	    "_Z3fooPKcS0_",
	    "_Z3fooz",
	    "_Z3fooiz",
	    "_Z3foov.part.0",
	    "_Z3foov.isra.0.part.1",
	    "_Z3foov.cold",
	    "_ZN2v88internal4FLAGE",
	    "_Z3fooDn",
	    "_Z3fooPFvvE",
	    "_Z3fooRKPKc",
	    "_Z3fooKPc",
	    "_Z3fooRRi",
	    "_Z3fooRKRi",
	    "_Z3fooKKc",
	    "_Z3foo.v",
	    "_ZN3FooD2E.v",
	    "_ZN3FooIiEC2Ev",
	    "_ZN3FooINS_3BarEEC2Ev",
	    "_ZN3FooIiE3barEv",
	    "_ZN3FooIiE3barIiEEvT_",
	    "_Z3fooIiEvT_",
	    "_Z3foo3BarIiES0_",
	    "_Z3fooSt6vectorIiSaIiEE",
	    "_ZN3FooI3BarIiEE3bazES2_",
	    "_ZNK3FooIiE3getEv",
	    "_Z3fooNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
	    "_Z3fooSbIwE",
	    "_ZN2v88internal6HandleINS0_6ObjectEEC1Ev",
	    "_Z3fooILi1EEvv",
	    "_ZN3FooaSERKS_",
	    "_ZN4node3url13FileURLToPathB5cxx11EPNS_11EnvironmentE",
	    "_Z3fooPKNS_IiEE",
	    "_ZN3Foo",
	    "_ZN3FooE3",
	    "_Z999foo",
	    "_ZNSt3foo3barEv",
	    "_Z3fooSt3barS_",
	    "_ZN3FooILin1EE3barEv",
	    "_ZN3FooILb1EE3barEv",
	    "_ZN3FooILb2EE3barEv",
	    "_ZN3FooILm3ELx4EE3barEv",
	    "_ZN3FooILc65EE3barEv",
	    "_ZN3FooILN2v84KindE3EE3barEv",
	    "_ZN3FooIL4Kindn2EE3barEv",
	    "_ZN3FooILf3f800000EE3barEv",
	    "_Z3fooIiEvT_",
	    "_Z3fooIiEPT_S0_",
	    "_ZN3FooIcE3barIiEEvT_",
	    "_Z3fooIRiEvRT_",
	    "_ZNK3Foo3getIiEET_v",
	    "_Z3fooIiiEvT0_T_",
	    "_ZN3Foo5WriteILb1EEEv",
	    "_ZN3FooeqERKS_",
	    "_ZnwmPv",
	    "_ZdaPv",
	    "_ZN3FoocvbEv",
	    "_ZN3FooltIiEEbv",
	    "_ZN3Foo3barB5cxx11Ev",
	    "_ZN3FooB5cxx11C2Ev",
	    "_ZlsRSoRK3Foo",
	    "_Z3fooRKnNS_3BarE",
	    "_ZNSo3fooEv",
	    "_Z3fooSsS_",
	    "_Z3fooSoIcE",
	    "_ZNSs4sizeEv",
	    "_ZTv0_n24_N3Foo3barEv",
	    "_ZThn8_N3FooIiE3barIiEEvT_",
	    "_ZThn8_3foo",
	    "_ZThn_N3Foo3barEv",
	    "_ZThn8_N3Foo3barEv.cold",
	    "_Z3fooIJEEvDpT_",
	    "_Z3fooIJicEEvDpRKT_",
	    "_ZN3FooIJEE3barEv",
	    "_ZN3FooIiJEE3barEv",
	    "_ZN3FooI3BarIiEJEE3barEv",
	    "_Z3fooIJiEEvDpT_S0_",
	    "_Z3fooIJiEEvT_",
	    "_Z3fooIiJEEvT_DpT0_",
	    "_Z3fooIJEiEvDpT_T0_",
	    "_Z3fooIJiRiEEvDpRT_",
	    "_Z3fooIJiEEvDpDpT_",
	    "_Z3fooIJJiEEEvDpT_",
	    "_Z3fooIJLi1ELi2EEEvv",
	    "_Z3fooIJiEEvDpPT_S1_",
	};
	static const char *const libs[] = {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
					   "/usr/lib64/libstdc++.so.6", "/usr/lib/libstdc++.so.6"};
	/* taken, not only agreed on: a nested name that starts with a substitution and
	 * goes on (most of a C++ program's names) once went to libiberty, silently */
	static const char *const must_take[] = {
	    "_ZNSt6vectorIiSaIiEE9push_backERKi",
	    "_Z20_register_isolate_fsPN4node11IsolateDataEN2v85LocalINS2_14ObjectTemplateEEE",
	    "_ZN2v88internal4HeapC2EPNS0_7IsolateE",
	    "_ZNSt6vectorIiSaIiEEixEm",
	    "_ZN2v88internal10HeapNumber15HeapNumberPrintERSo",
	    "_Z3fooRKSsRSiRSd",
	    "_ZThn16_N4node10BaseObject10MemoryInfoEPNS_13MemoryTrackerE",
	    "_ZN2v84base6detail13PrintToStringIJiEEENSt7__cxx1112basic_stringIcSt11char_"
	    "traitsIcESaIcEEEDpOT_",
	    "_ZN12v8_inspector8String166concatIJPKcS0_S3_EEES0_DpT_",
	    "_ZNK4llvm11PassManagerINS_8FunctionENS_15AnalysisManagerIS1_JEEEJEE7isEmptyEv",
	};
	long taken = 0, lib_names = 0;
	Elf *elf = NULL;
	int fd = -1;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!fast_agrees(unit_failed, names[i], &taken))
			goto cleanup;
	for (size_t i = 0; i < sizeof(must_take) / sizeof(must_take[0]); i++) {
		long before = taken;

		if (!fast_agrees(unit_failed, must_take[i], &taken))
			goto cleanup;
		CHECKF(taken == before + 1, "the fast path declined %s", must_take[i]);
	}
	CHECKF(taken >= 25, "the fast path took %ld of the hand-picked names", taken);
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]) && fd < 0; i++)
		fd = open(libs[i], O_RDONLY);
	if (fd < 0)
		goto cleanup; /* no libstdc++ here: the hand-picked names only */
	elf_version(EV_CURRENT);
	CHECK((elf = elf_begin(fd, ELF_C_READ, NULL)));
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr shdr;
		GElf_Sym sym;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNSYM ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		for (int i = 0; gelf_getsym(data, i, &sym); i++) {
			const char *n = elf_strptr(elf, shdr.sh_link, sym.st_name);

			if (!n || strncmp(n, "_Z", 2))
				continue;
			lib_names++;
			if (!fast_agrees(unit_failed, n, &taken))
				goto cleanup;
		}
	}
	CHECKF(lib_names == 0 || taken > 100, "the fast path took %ld names in all", taken);
cleanup:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
}

/* A name that does not demangle is shown raw, and costs the account nothing per hit. */
TEST(plain_name_not_kept_twice)
{
	struct symbolizer *s =
	    symbolizer__new(&(struct sym_opts){.no_debuginfod = true, .no_address_cache = true});
	struct sym_object *o;
	uint64_t off, size, first;
	char lib[256];

	CHECK(s && build_cxx_lib(lib, sizeof(lib)) == 0 && (o = object_of(s, lib)));
	CHECK(symbol_file_off(lib, "hearth_plain", &off, &size, NULL) == 0);
	CHECK(resolves_to(s, o, off, "hearth_plain"));
	first = accounted(s);
	CHECK(resolves_to(s, o, off + 1, "hearth_plain"));
	CHECK(accounted(s) == first);
cleanup:
	symbolizer__free(s);
}

/*
 * Demangled names leave the account with their object: a process that mapped the
 * library exits, and everything it cost (table, names shown) is given back (no
 * address cache, whose bucket array would stay).
 */
TEST(demangled_names_released_with_their_object)
{
	struct symbolizer *s =
	    symbolizer__new(&(struct sym_opts){.no_debuginfod = true, .no_address_cache = true});
	const struct sym_result *r = NULL;
	struct sym_object *o;
	uint64_t off, size, before;
	char lib[256];

	CHECK(s && build_cxx_lib(lib, sizeof(lib)) == 0);
	before = accounted(s);
	CHECK((o = object_of(s, lib)) && symbolizer__hold(s, 7, o) == 0);
	CHECK(symbol_file_off(lib, CXX_METHOD, &off, &size, NULL) == 0);
	CHECK(symbolizer__resolve(s, o, off, &r) == 0 && r->n == 1);
	CHECK(!strcmp(r->frames[0].name, CXX_DEMANGLED));
	CHECK(accounted(s) > before);
	symbolizer__forget_pid(s, 7);
	CHECKF(accounted(s) == before, "%llu, want %llu", (unsigned long long)accounted(s),
	       (unsigned long long)before);
cleanup:
	symbolizer__free(s);
}

/*
 * A library of 300 functions (each its own body, so none is folded into another): a
 * table this big is searched through its top index first (every 16th start), and
 * every function's first, middle and last byte must still name it.
 */
TEST(every_function_of_a_big_table_resolves)
{
	struct symbolizer *s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true});
	char src[256], lib[256], name[32];
	FILE *f = NULL;
	int closed;

	snprintf(src, sizeof(src), "%s/many.c", unit_tmp_dir());
	snprintf(lib, sizeof(lib), "%s/libmany.so", unit_tmp_dir());
	CHECK(s && (f = fopen(src, "w")));
	for (int i = 0; i < 300; i++)
		fprintf(f,
			"__attribute__((noinline)) int many_%03d(int x)"
			" { volatile int v = x; return v * %d + %d; }\n",
			i, i + 2, i * 7);
	closed = fclose(f);
	f = NULL;
	CHECK(closed == 0);
	CHECK(sh("gcc -O2 -shared -fPIC -o '%s' '%s'", lib, src) == 0);
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "many_%03d", i);
		CHECKF(function_resolves(s, lib, name), "%s", name);
	}
cleanup:
	if (f)
		fclose(f);
	symbolizer__free(s);
}

/* The name of the last FUNC symbol in .symtab at vaddr (file order), into out. */
static int last_symbol_at(const char *path, uint64_t vaddr, char *out, size_t len)
{
	int fd = open(path, O_RDONLY), err = -1;
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Sym sym;

	while (elf && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (int i = 0; gelf_getsym(d, i, &sym); i++)
			if (GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_value == vaddr) {
				snprintf(out, len, "%s", elf_strptr(elf, sh.sh_link, sym.st_name));
				err = 0;
			}
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return err;
}

/*
 * Equal aliases at one address (same binding, all sized, no leading '_'; what identical
 * code folding leaves): the last in the file is shown, as llvm-symbolizer shows it.
 */
TEST(equal_aliases_show_the_last_in_the_file)
{
	struct symbolizer *s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true});
	const struct sym_result *r = NULL;
	struct sym_object *o;
	uint64_t off, size, vaddr;
	char lib[256], want[64];

	CHECK(s && build_cxx_lib(lib, sizeof(lib)) == 0 && (o = object_of(s, lib)));
	CHECK(symbol_file_off(lib, "al_impl", &off, &size, &vaddr) == 0);
	CHECK(last_symbol_at(lib, vaddr, want, sizeof(want)) == 0);
	CHECK(symbolizer__resolve(s, o, off, &r) == 0 && r->n == 1);
	CHECKF(!strcmp(r->frames[0].name, want), "%s, want %s", r->frames[0].name, want);
cleanup:
	symbolizer__free(s);
}

/* Some address of inl_outer in lib shows inl_leaf (line 5) inlined at line 9, and every
 * one names inl_outer in names.c as the outer frame (CHECKs of the calling test). */
static void check_inlined_frames(int *unit_failed, const char *lib)
{
	struct symbolizer *s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true});
	const struct sym_result *r = NULL;
	struct sym_object *o;
	uint64_t off, size;
	bool seen = false;

	CHECK(s && (o = object_of(s, lib)));
	CHECK(symbol_file_off(lib, "inl_outer", &off, &size, NULL) == 0);
	for (uint64_t i = 0; i < size && !seen; i++) {
		CHECK(symbolizer__resolve(s, o, off + i, &r) == 0 && r->n >= 1);
		CHECK(!strcmp(r->frames[r->n - 1].name, "inl_outer") &&
		      !r->frames[r->n - 1].inlined);
		CHECK(r->frames[r->n - 1].file && strstr(r->frames[r->n - 1].file, "names.c"));
		seen = r->n == 2 && !strcmp(r->frames[0].name, "inl_leaf") &&
		       r->frames[0].inlined && r->frames[0].line == 5 && r->frames[1].line == 9;
	}
	CHECKF(seen, "no address of inl_outer shows inl_leaf (line 5) inlined at line 9");
cleanup:
	symbolizer__free(s);
}

TEST(dwarf_inlined_frames)
{
	char lib[256];

	CHECK(build_names_lib(lib, sizeof(lib), true) == 0);
	check_inlined_frames(unit_failed, lib);
cleanup:;
}

/* Without .debug_aranges (clang's default) every CU is indexed at once: same frames. */
TEST(dwarf_inlined_frames_without_aranges)
{
	char lib[256], bare[300];

	CHECK(build_names_lib(lib, sizeof(lib), true) == 0);
	snprintf(bare, sizeof(bare), "%s/libnames-noaranges.so", unit_tmp_dir());
	CHECK(sh("objcopy --remove-section=.debug_aranges '%s' '%s'", lib, bare) == 0);
	CHECK(sh("! readelf -S '%s' | grep -q debug_aranges", bare) == 0);
	check_inlined_frames(unit_failed, bare);
cleanup:;
}

static int write_file(const char *path, const char *mode, const char *text)
{
	FILE *f = fopen(path, mode);

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static const char *jit_name(struct symbolizer *s, uint32_t pid, uint64_t addr)
{
	const struct sym_result *r = NULL;

	if (symbolizer__resolve_jit(s, pid, addr, &r) != 0 || !r->n)
		return "";
	return r->frames[0].name;
}

TEST(perf_map)
{
	char path[256];
	struct symbolizer *s = symbolizer__new(
	    &(struct sym_opts){.perfmap_dir = unit_tmp_dir(), .no_debuginfod = true});
	struct sym_stats st;

	snprintf(path, sizeof(path), "%s/perf-4242.map", unit_tmp_dir());
	CHECK(s && write_file(path, "w",
			      "1000 100 LazyCompile:*jsA /app.js:1\n"
			      "zz 10 bad_start\n"
			      "2000 0 zero_size\n"
			      "3000 10\n"
			      "ffffffffffffffff 10 wraps\n"
			      "4000 20 good_after_bad\n"
			      "5000 10 unfinished") == 0);
	CHECK(!strcmp(jit_name(s, 4242, 0x1000), "LazyCompile:*jsA /app.js:1"));
	CHECK(!strcmp(jit_name(s, 4242, 0x10ff), "LazyCompile:*jsA /app.js:1"));
	CHECK(!strcmp(jit_name(s, 4242, 0x1100), "")); /* only the bytes it covers */
	CHECK(!strcmp(jit_name(s, 4242, 0x4010), "good_after_bad"));
	CHECK(!strcmp(jit_name(s, 4242, 0x5000), "")); /* a line still being written */
	symbolizer__stats(s, &st);
	CHECKF(st.perfmap_bad_lines == 4, "%llu", (unsigned long long)st.perfmap_bad_lines);
	/* the map grows: the rest of the line, then a newer entry over jsA's bytes */
	CHECK(write_file(path, "a", "\n1040 10 jsB\n") == 0);
	usleep(150 * 1000);
	CHECK(!strcmp(jit_name(s, 4242, 0x5005), "unfinished"));
	CHECK(!strcmp(jit_name(s, 4242, 0x1045), "jsB"));
	CHECK(!strcmp(jit_name(s, 4242, 0x1060), "LazyCompile:*jsA /app.js:1"));
	CHECK(!strcmp(jit_name(s, 4243, 0x1000), "")); /* another pid, no map */
	symbolizer__forget_pid(s, 4242);
cleanup:
	symbolizer__free(s);
}

/* Many objects through a small budget: the account never passes it. */
TEST(cache_budget_honoured)
{
	static const char *const libs[] = {
	    "/usr/lib/x86_64-linux-gnu/libc.so.6",	"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
	    "/usr/lib/x86_64-linux-gnu/libcrypto.so.3", "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0",
	    "/usr/lib/x86_64-linux-gnu/libdw.so.1",	"/usr/lib/x86_64-linux-gnu/libelf.so.1",
	};
	struct symbolizer *s =
	    symbolizer__new(&(struct sym_opts){.cache_bytes = 256 * 1024, .no_debuginfod = true});
	const struct sym_result *r = NULL;
	struct sym_stats st;
	char lib[256];
	size_t used = 0;

	CHECK(s && build_names_lib(lib, sizeof(lib), true) == 0);
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
			struct sym_object *o = access(libs[i], R_OK) ? NULL : object_of(s, libs[i]);

			for (uint64_t off = 0x2000; o && off < 0x80000; off += 0x1000)
				CHECK(symbolizer__resolve(s, o, off, &r) == 0);
			symbolizer__stats(s, &st);
			CHECKF(st.cache_bytes <= st.cache_budget, "%llu > %llu",
			       (unsigned long long)st.cache_bytes,
			       (unsigned long long)st.cache_budget);
			used += o != NULL;
		}
	}
	symbolizer__stats(s, &st);
	CHECKF(used < 4 || st.object_evictions > 0, "%zu objects, no eviction", used);
	CHECK(used < 4 || st.object_reloads > 0); /* round 2 read evicted ones again */
cleanup:
	symbolizer__free(s);
}

/*
 * Objects are held by the processes that map them: forgetting a process releases the
 * objects only it held (their tables, DWARF and cached addresses leave the account),
 * and keeps those another process still holds.
 */
TEST(objects_released_with_their_last_process)
{
	struct symbolizer *s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true});
	struct sym_object *lib, *pie;
	uint64_t lib_off, pie_off, size, only_lib, both;
	struct sym_stats st;

	CHECK(s && build_fixtures() == 0);
	CHECK(symbol_file_off(fx_lib, "hearth_exported", &lib_off, &size, NULL) == 0);
	CHECK(symbol_file_off(fx_pie, "hearth_exported", &pie_off, &size, NULL) == 0);
	CHECK((lib = object_of(s, fx_lib)));
	CHECK(resolves_to(s, lib, lib_off, "hearth_exported"));
	/* process 101 maps lib; 100 maps lib and pie (asking twice holds once) */
	CHECK(symbolizer__hold(s, 101, lib) == 0);
	CHECK(symbolizer__hold(s, 100, lib) == 0 && symbolizer__hold(s, 100, lib) == 0);
	only_lib = accounted(s);
	CHECK((pie = object_of(s, fx_pie))); /* read now: after only_lib was taken */
	CHECK(resolves_to(s, pie, pie_off, "hearth_exported"));
	CHECK(symbolizer__hold(s, 100, pie) == 0);
	both = accounted(s);
	CHECKF(both > only_lib, "%llu <= %llu", (unsigned long long)both,
	       (unsigned long long)only_lib);
	symbolizer__forget_pid(s, 4242); /* never held anything: no change */
	CHECK(accounted(s) == both);

	/* 100 exits: pie (only its) leaves the account entirely, lib (101's too) stays */
	symbolizer__forget_pid(s, 100);
	CHECKF(accounted(s) == only_lib, "%llu, want %llu", (unsigned long long)accounted(s),
	       (unsigned long long)only_lib);
	symbolizer__stats(s, &st);
	CHECK(st.object_releases == 1 && st.cache_entries == 1);
	CHECK(resolves_to(s, lib, lib_off, "hearth_exported")); /* still cached: a hit */
	symbolizer__stats(s, &st);
	CHECK(st.cache_hits == 1 && st.object_reloads == 0);

	/* 101 exits: lib goes too; asked again (a late sample), it is read again */
	symbolizer__forget_pid(s, 101);
	symbolizer__stats(s, &st);
	CHECKF(st.cache_bytes < only_lib && st.cache_entries == 0 && st.object_releases == 2,
	       "%llu bytes, %llu entries", (unsigned long long)st.cache_bytes,
	       (unsigned long long)st.cache_entries);
	CHECK(resolves_to(s, lib, lib_off, "hearth_exported"));
	symbolizer__stats(s, &st);
	CHECK(st.object_reloads == 1);
	CHECK(symbolizer__hold(s, 1, NULL) == -EINVAL);
cleanup:
	symbolizer__free(s);
}

/*
 * An evicted object whose path went away (the process it was read through
 * exited: process churn on a busy host) resolves nothing for that late sample,
 * and is read again once a live process's path names it: one failed reload
 * does not leave it without symbols for good (it once left libc unnamed in
 * every process of bench/fleet).
 */
TEST(an_object_whose_path_is_gone_is_read_again_through_a_live_one)
{
	struct symbolizer *s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true});
	char a[300], b[300];
	struct sym_object *lib, *again;
	uint64_t lib_off, size;
	struct stat sa;

	CHECK(s && build_fixtures() == 0);
	snprintf(a, sizeof(a), "%s.gone", fx_lib);
	snprintf(b, sizeof(b), "%s.live", fx_lib);
	unlink(a);
	unlink(b);
	CHECK(sh("cp '%s' '%s' && ln '%s' '%s'", fx_lib, a, a, b) == 0);
	CHECK(stat(a, &sa) == 0);
	CHECK(symbol_file_off(a, "hearth_exported", &lib_off, &size, NULL) == 0);
	CHECK((lib = symbolizer__object(s, a, a, sa.st_dev, sa.st_ino)));
	CHECK(resolves_to(s, lib, lib_off, "hearth_exported"));
	CHECK(symbolizer__hold(s, 300, lib) == 0);
	symbolizer__forget_pid(s, 300); /* released: read again when asked */
	CHECK(unlink(a) == 0);
	CHECK(resolves_nothing(s, lib, lib_off + 1)); /* its path is gone */
	/* a live process maps the same file (same inode) under another path */
	CHECK((again = symbolizer__object(s, b, b, sa.st_dev, sa.st_ino)) == lib);
	CHECK(resolves_to(s, lib, lib_off, "hearth_exported"));
cleanup:
	unlink(a);
	unlink(b);
	symbolizer__free(s);
}

/*
 * With a grace period (the agent's), an object whose last process is forgotten stays
 * loaded and cached: the next process of the same binary resolves it with no re-read
 * and its cached addresses still hit. Once the grace runs out it is released as
 * without one.
 */
TEST(objects_kept_for_a_grace_period_after_their_last_process)
{
	struct symbolizer *s = symbolizer__new(
	    &(struct sym_opts){.no_debuginfod = true, .release_grace_ns = 3600ULL * 1000000000});
	struct sym_object *lib;
	uint64_t lib_off, size, held;
	struct sym_stats st;

	CHECK(s && build_fixtures() == 0);
	CHECK(symbol_file_off(fx_lib, "hearth_exported", &lib_off, &size, NULL) == 0);
	CHECK((lib = object_of(s, fx_lib)));
	CHECK(resolves_to(s, lib, lib_off, "hearth_exported"));
	CHECK(symbolizer__hold(s, 200, lib) == 0);
	held = accounted(s);

	/* 200 exits: nothing is released within the hour */
	symbolizer__forget_pid(s, 200);
	symbolizer__expire_idle(s, (uint64_t)base_clock_ns(CLOCK_MONOTONIC));
	symbolizer__stats(s, &st);
	CHECKF(st.object_releases == 0 && accounted(s) == held && st.cache_entries == 1,
	       "%llu releases, %llu bytes (held %llu)", (unsigned long long)st.object_releases,
	       (unsigned long long)accounted(s), (unsigned long long)held);

	/* a new process of the same binary: held again, its address still a cache hit */
	CHECK(symbolizer__hold(s, 201, lib) == 0);
	CHECK(resolves_to(s, lib, lib_off, "hearth_exported"));
	symbolizer__stats(s, &st);
	CHECK(st.object_revivals == 1 && st.cache_hits == 1 && st.object_reloads == 0);

	/* 201 exits; an hour later the object is released like one without grace */
	symbolizer__forget_pid(s, 201);
	symbolizer__expire_idle(s, (uint64_t)base_clock_ns(CLOCK_MONOTONIC) + 3601ULL * 1000000000);
	symbolizer__stats(s, &st);
	CHECKF(st.object_releases == 1 && st.cache_entries == 0 && accounted(s) < held,
	       "%llu releases, %llu entries", (unsigned long long)st.object_releases,
	       (unsigned long long)st.cache_entries);
	CHECK(resolves_to(s, lib, lib_off, "hearth_exported"));
	symbolizer__stats(s, &st);
	CHECK(st.object_reloads == 1);
cleanup:
	symbolizer__free(s);
}

/* A table of constants inside .text, as OpenSSL's perlasm writes them (an STT_OBJECT
 * symbol in an executable section), between two functions; and a data object in .data. */
static const char text_data_src[] =
    "__attribute__((noinline)) int td_before(int x) { volatile int v = x; return v * 5; }\n"
    "__asm__(\".text\\n.p2align 6\\n.type td_table, @object\\n.size td_table, 256\\n"
    "td_table:\\n.fill 256, 1, 0x5a\\n\");\n"
    "__attribute__((noinline)) int td_after(int x) { volatile int v = x; return v * 7; }\n"
    "int td_data[64] = {1};\n";

/* llvm-symbolizer names an address in a data table inside .text by the table's symbol;
 * so does hearth, but only where no function covers the address, and only for objects
 * in executable sections (data in .data stays unnamed: no code runs there). */
TEST(data_object_in_text_named_after_functions)
{
	struct symbolizer *s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true});
	struct sym_object *o;
	char src[256], lib[256];
	uint64_t off, size;
	FILE *f;

	snprintf(src, sizeof(src), "%s/textdata.c", unit_tmp_dir());
	snprintf(lib, sizeof(lib), "%s/libtextdata.so", unit_tmp_dir());
	CHECK(s && (f = fopen(src, "w")));
	CHECK(fputs(text_data_src, f) >= 0 && fclose(f) == 0);
	CHECK(sh("gcc -O2 -shared -fPIC -o '%s' '%s'", lib, src) == 0);
	CHECK((o = object_of(s, lib)));
	CHECK(symbol_file_off(lib, "td_table", &off, &size, NULL) == 0 && size == 256);
	CHECK(resolves_to(s, o, off, "td_table"));
	CHECK(resolves_to(s, o, off + 100, "td_table"));
	CHECK(resolves_to(s, o, off + 255, "td_table"));
	CHECK(function_resolves(s, lib, "td_before"));
	CHECK(function_resolves(s, lib, "td_after"));
	CHECK(symbol_file_off(lib, "td_data", &off, &size, NULL) == 0 && size == 256);
	CHECK(resolves_nothing(s, o, off + 8));
cleanup:
	symbolizer__free(s);
}

/* ---- sym_batch ---- */

/* Input naming hearth_exported of the non-PIE fixture by vaddr and by FILE+0xOFF, a line
 * that names nothing, and the expected output (with addresses); 0 or -1. */
static int batch_case(char *in, size_t in_len, char *want, size_t want_len)
{
	uint64_t off, size, vaddr;

	if (build_fixtures() || symbol_file_off(fx_nopie, "hearth_exported", &off, &size, &vaddr))
		return -1;
	snprintf(in, in_len, "0x%" PRIx64 "\nnot an address\n%s+0x%" PRIx64 "\n%" PRIx64, vaddr,
		 fx_nopie, off + 1, vaddr + size - 1);
	snprintf(want, want_len,
		 "0x%016" PRIx64 "\nhearth_exported\n??:0\n"
		 "0x0000000000000000\n??\n??:0\n"
		 "0x%016" PRIx64 "\nhearth_exported\n??:0\n"
		 "0x%016" PRIx64 "\nhearth_exported\n??:0\n",
		 vaddr, off + 1, vaddr + size - 1);
	return 0;
}

/* A batch over a fresh symbolizer, hex lines meaning vaddrs of the non-PIE fixture. */
static int batch_open(size_t text_bytes, struct symbolizer **s, struct sym_batch **b)
{
	struct sym_batch_opts o = {.addresses = true, .text_bytes = text_bytes};

	*b = NULL;
	*s = symbolizer__new(&(struct sym_opts){.no_address_cache = true, .no_debuginfod = true});
	if (!*s || !(o.obj = object_of(*s, fx_nopie)))
		return -1;
	return sym_batch__new(*s, &o, b);
}

/* Answers batch_case's input twice through a batch with this text budget; 0 when both
 * passes gave exactly the expected text, with the batch's counters in *st. */
static int batch_twice(size_t text_bytes, struct sym_batch_stats *st)
{
	struct symbolizer *s = NULL;
	struct sym_batch *b = NULL;
	struct base_sbuf out = {0};
	char in[1024], want[1024];
	int err = -1;

	if (batch_case(in, sizeof(in), want, sizeof(want)) || batch_open(text_bytes, &s, &b))
		goto cleanup;
	for (int pass = 0; pass < 2; pass++) {
		out.len = 0;
		if (sym_batch__text(b, in, strlen(in), &out) || out.len != strlen(want) ||
		    memcmp(out.s, want, out.len)) {
			fprintf(stderr, "  pass %d got\n%s", pass + 1, out.s ? out.s : "");
			goto cleanup;
		}
	}
	sym_batch__stats(b, st);
	err = 0;
cleanup:
	base_sbuf__fini(&out);
	sym_batch__free(b);
	symbolizer__free(s);
	return err;
}

TEST(batch_answers_vaddr_offset_and_junk_lines)
{
	struct sym_batch_stats st;

	CHECK(batch_twice(1 << 20, &st) == 0);
	/* the second pass came from the text cache (the junk line is never cached) */
	CHECKF(st.misses == 3 && st.hits == 3, "hits %" PRIu64 " misses %" PRIu64, st.hits,
	       st.misses);
cleanup:;
}

TEST(batch_text_cache_full_still_answers)
{
	struct sym_batch_stats st;

	CHECK(batch_twice(64, &st) == 0); /* no room for even one answer */
	CHECK(st.hits == 0 && st.bytes <= 64 + 4096 * 8);
cleanup:;
}

TEST(batch_stream_matches_text)
{
	struct symbolizer *s = NULL;
	struct sym_batch *b = NULL;
	char in[1024], want[1024], got[2048], path_in[256], path_out[256];
	const char *what = "";
	int in_fd = -1, out_fd = -1;
	ssize_t n;

	CHECK(batch_case(in, sizeof(in), want, sizeof(want)) == 0);
	CHECK(batch_open(1 << 20, &s, &b) == 0);
	snprintf(path_in, sizeof(path_in), "%s/batch.in", unit_tmp_dir());
	snprintf(path_out, sizeof(path_out), "%s/batch.out", unit_tmp_dir());
	in_fd = open(path_in, O_RDWR | O_CREAT | O_TRUNC, 0600);
	out_fd = open(path_out, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(in_fd >= 0 && out_fd >= 0);
	CHECK(pwrite(in_fd, in, strlen(in), 0) == (ssize_t)strlen(in));
	CHECK(sym_batch__stream(b, in_fd, out_fd, &what) == 0);
	n = pread(out_fd, got, sizeof(got) - 1, 0);
	CHECK(n >= 0);
	got[n] = '\0';
	CHECKF(!strcmp(got, want), "got\n%s", got);
	/* a write error is reported as one, naming the write */
	CHECK(lseek(in_fd, 0, SEEK_SET) == 0);
	close(out_fd);
	out_fd = open(path_out, O_RDONLY);
	CHECK(out_fd >= 0);
	CHECK(sym_batch__stream(b, in_fd, out_fd, &what) == -EBADF && !strcmp(what, "write"));
cleanup:
	if (in_fd >= 0)
		close(in_fd);
	if (out_fd >= 0)
		close(out_fd);
	sym_batch__free(b);
	symbolizer__free(s);
}

/*
 * A file truncated in place while its string table is mapped (`cp` over a library
 * does that): names already read still resolve, names not yet read leave their
 * address unknown, the SIGBUS is caught and counted, and nothing crashes.
 */
TEST(truncated_while_mapped_resolves_nothing_more)
{
	static const char *const fns[] = {"symbolizer__free",  "sym_table__find",
					  "mem_budget__reset", "base_grow",
					  "sym_batch__stream", "unit_tmp_dir"};
	struct symbolizer *s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true});
	const struct sym_result *r = NULL;
	struct sym_object *o;
	struct sym_stats st;
	uint64_t off[6], first_off, size;
	char p[300];
	size_t unknown = 0;

	CHECK(s);
	snprintf(p, sizeof(p), "%s/self-copy", unit_tmp_dir());
	/* the test binary without DWARF: names come from its (mapped) string table */
	CHECK(sh("objcopy --strip-debug /proc/%d/exe '%s'", (int)getpid(), p) == 0);
	CHECK(symbol_file_off(p, "symbolizer__new", &first_off, &size, NULL) == 0);
	for (size_t i = 0; i < 6; i++)
		CHECKF(symbol_file_off(p, fns[i], &off[i], &size, NULL) == 0, "%s", fns[i]);
	CHECK((o = object_of(s, p)));
	CHECK(resolves_to(s, o, first_off, "symbolizer__new"));
	CHECK(truncate(p, 4096) == 0); /* the same inode shrinks under the mapping */
	CHECK(resolves_to(s, o, first_off, "symbolizer__new")); /* read before: kept */
	for (size_t i = 0; i < 6; i++) {
		CHECK(symbolizer__resolve(s, o, off[i], &r) == 0 && r);
		/* a name that was on a page still mapped is fine too; none may be wrong */
		CHECKF(r->n == 0 || !strcmp(r->frames[0].system_name, fns[i]), "%s -> %s", fns[i],
		       r->frames[0].system_name);
		unknown += r->n == 0;
	}
	symbolizer__stats(s, &st);
	CHECKF(unknown > 0 && st.bus_faults > 0, "%zu unknown, %llu faults", unknown,
	       (unsigned long long)st.bus_faults);
cleanup:
	symbolizer__free(s);
}

/*
 * With sym_opts.mem_budget, what the symbolizer holds is charged to the process-wide
 * ledger by kind (what its own account says, to the byte), reclaim evicts the least
 * recently used and counts it, and freeing the symbolizer uncharges everything.
 */
TEST(ledger_charged_and_reclaimed)
{
	static const char *const libs[] = {
	    "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
	    "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0", "/usr/lib/x86_64-linux-gnu/libdw.so.1"};
	struct symbolizer *s;
	const struct sym_result *r = NULL;
	struct sym_stats st;
	uint64_t held, off, size;
	struct sym_object *fx;

	mem_budget__reset();
	s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true, .mem_budget = true});
	CHECK(s && build_fixtures() == 0);
	CHECK(symbol_file_off(fx_lib, "hearth_exported", &off, &size, NULL) == 0);
	CHECK((fx = object_of(s, fx_lib)) && resolves_to(s, fx, off, "hearth_exported"));
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		struct sym_object *o = access(libs[i], R_OK) ? NULL : object_of(s, libs[i]);

		for (uint64_t a = 0x2000; o && a < 0x40000; a += 0x1000)
			CHECK(symbolizer__resolve(s, o, a, &r) == 0);
	}
	symbolizer__stats(s, &st);
	held = mem_budget__used(MEM_SYMBOLS) + mem_budget__used(MEM_DWARF) +
	       mem_budget__used(MEM_ADDRS);
	CHECKF(held == st.cache_bytes, "ledger %llu, symbolizer %llu", (unsigned long long)held,
	       (unsigned long long)st.cache_bytes);
	CHECK(mem_budget__used(MEM_SYMBOLS) > 0 && mem_budget__used(MEM_ADDRS) > 0);
	/* a limit far below what is held: reclaim takes it back, oldest first */
	mem_budget__set_limit(held / 4, 100);
	CHECK(mem_budget__reclaim() > 0);
	CHECKF(mem_budget__used_total() <= held / 4, "%llu > %llu",
	       (unsigned long long)mem_budget__used_total(), (unsigned long long)held / 4);
	CHECK(mem_budget__evictions(MEM_ADDRS) + mem_budget__evictions(MEM_SYMBOLS) > 0);
	/* still answers: an evicted object is read again when the budget has room */
	mem_budget__set_limit(0, 100);
	CHECK(resolves_to(s, fx, off, "hearth_exported"));
	/* over the budget, a new object is not read: unknown, counted, not grown */
	mem_budget__set_limit(mem_budget__used_total() + 1, 100);
	symbolizer__stats(s, &st);
	{
		uint64_t skips = st.budget_skips;
		struct sym_object *o = access(libs[0], R_OK) ? NULL : object_of(s, libs[0]);

		if (o) {
			for (uint64_t a = 0x2000; a < 0x4000; a += 0x1000)
				CHECK(symbolizer__resolve(s, o, a, &r) == 0);
			symbolizer__stats(s, &st);
			CHECKF(mem_budget__used_total() <= mem_budget__cache_budget() ||
				   st.budget_skips > skips,
			       "%llu > %llu, no skip", (unsigned long long)mem_budget__used_total(),
			       (unsigned long long)mem_budget__cache_budget());
		}
	}
cleanup:
	symbolizer__free(s);
	CHECK(mem_budget__used(MEM_SYMBOLS) == 0 && mem_budget__used(MEM_DWARF) == 0 &&
	      mem_budget__used(MEM_ADDRS) == 0);
	mem_budget__reset();
}

/* The same with DWARF (the test binary as built, -g): libdw reads the mapped file under
 * the guard; after the truncation nothing crashes and no wrong name comes out. */
TEST(truncated_dwarf_while_mapped_no_crash)
{
	static const char *const fns[] = {"symbolizer__free",  "sym_table__find",
					  "mem_budget__reset", "base_grow",
					  "sym_batch__stream", "unit_tmp_dir"};
	struct symbolizer *s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true});
	const struct sym_result *r = NULL;
	struct sym_object *o;
	uint64_t off[6], first_off, size;
	char p[300];

	CHECK(s);
	snprintf(p, sizeof(p), "%s/self-copy-dwarf", unit_tmp_dir());
	CHECK(sh("cp /proc/%d/exe '%s'", (int)getpid(), p) == 0);
	CHECK(symbol_file_off(p, "symbolizer__new", &first_off, &size, NULL) == 0);
	for (size_t i = 0; i < 6; i++)
		CHECKF(symbol_file_off(p, fns[i], &off[i], &size, NULL) == 0, "%s", fns[i]);
	CHECK((o = object_of(s, p)));
	CHECK(symbolizer__resolve(s, o, first_off, &r) == 0 && r && r->n >= 1 && r->frames[0].file);
	CHECK(truncate(p, 4096) == 0);
	for (size_t i = 0; i < 6; i++) {
		CHECK(symbolizer__resolve(s, o, off[i], &r) == 0 && r);
		CHECKF(r->n == 0 || !strcmp(r->frames[r->n - 1].system_name, fns[i]) ||
			   !strcmp(r->frames[r->n - 1].name, fns[i]),
		       "%s -> %s", fns[i], r->frames[r->n - 1].system_name);
	}
cleanup:
	symbolizer__free(s);
}

/* Writes code to DIR/NAME.c and builds it with zlib-compressed DWARF (gcc -gz) into
 * bin (DIR/NAME; its source path in src when src_out is not NULL). 0, or -1: no such
 * build (Debian's gcc makes them: a failure is the test's). */
static int gz_prog(const char *name, const char *code, char *bin, size_t len, char *src_out)
{
	char src[300];
	FILE *f;

	snprintf(src, sizeof(src), "%s/%s.c", unit_tmp_dir(), name);
	snprintf(bin, len, "%s/%s", unit_tmp_dir(), name);
	if (src_out)
		snprintf(src_out, 300, "%s", src);
	if (!(f = fopen(src, "w")))
		return -1;
	fputs(code, f);
	if (fclose(f))
		return -1;
	return sh("gcc -O2 -g -gz=zlib -Wl,--build-id -o '%s' '%s'", bin, src) ? -1 : 0;
}

/*
 * Compressed debug sections (gcc -gz) are inflated once into the cache directory and
 * that file is mapped: the same frames as the uncompressed build, one file written, a
 * second symbolizer maps it without writing; past the size cap nothing is written and
 * the answers are the same (inflated in memory).
 */
TEST(compressed_debug_inflated_once_to_cache)
{
	char src[300], zbin[300], ubin[300], dir[300], small[300];
	struct symbolizer *s = NULL;
	const struct sym_result *r = NULL;
	struct sym_object *o;
	struct sym_stats st;
	uint64_t off, size, made0;
	char want_file[256] = "";
	int want_n = 0;
	const char *d = unit_tmp_dir();

	snprintf(ubin, sizeof(ubin), "%s/uprog", d);
	snprintf(dir, sizeof(dir), "%s/zcache/dwarf", d);
	snprintf(small, sizeof(small), "%s/zcache-small", d);
	CHECK(gz_prog("zprog",
		      "static inline int sq(int x) { return x * x; }\n"
		      "__attribute__((noinline)) int work(int n) { int s = 0;\n"
		      "  for (int i = 0; i < n; i++) s += sq(i) ^ (s >> 2); return s; }\n"
		      "int main(int c, char **v) { (void)v; return work(c * 1000) & 1; }\n",
		      zbin, sizeof(zbin), src) == 0);
	CHECK(sh("gcc -O2 -g -Wl,--build-id -o '%s' '%s'", ubin, src) == 0);
	CHECK(symbol_file_off(ubin, "work", &off, &size, NULL) == 0);
	/* the uncompressed build's answer at work + 8 */
	CHECK((s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true})));
	CHECK((o = object_of(s, ubin)) && symbolizer__resolve(s, o, off + 8, &r) == 0 && r->n);
	want_n = (int)r->n;
	snprintf(want_file, sizeof(want_file), "%s", r->frames[0].file ? r->frames[0].file : "");
	CHECK(want_file[0]);
	symbolizer__free(s);
	for (int round = 0; round < 3; round++) {
		s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true,
						       .debug_cache_dir = round < 2 ? dir : small,
						       .debug_cache_bytes = round < 2 ? 0 : 64});
		CHECK(s);
		symbolizer__stats(s, &st);
		made0 = st.debug_cache_files;
		CHECK((o = object_of(s, zbin)) && symbolizer__resolve(s, o, off + 8, &r) == 0);
		CHECKF((int)r->n == want_n && r->frames[0].file &&
			   !strcmp(r->frames[0].file, want_file),
		       "round %d: %zu frames, %s", round, r->n,
		       r->n && r->frames[0].file ? r->frames[0].file : "-");
		symbolizer__stats(s, &st);
		/* written on first sight only; never past the cap */
		CHECKF(st.debug_cache_files - made0 == (round == 0 ? 1u : 0u), "round %d: %llu",
		       round, (unsigned long long)(st.debug_cache_files - made0));
		symbolizer__free(s);
		s = NULL;
	}
	CHECK(sh("ls '%s'/*.debug > /dev/null 2>&1", dir) == 0);
	CHECK(sh("ls '%s'/*.debug > /dev/null 2>&1", small) != 0);
cleanup:
	/* the cache settings are process-wide: the default cap back for later tests */
	symbolizer__free(symbolizer__new(&(struct sym_opts){
	    .no_debuginfod = true, .debug_cache_dir = dir, .debug_cache_bytes = 512ULL << 20}));
	symbolizer__free(s);
}

/* A stripped program whose separate debug file has compressed DWARF: at a budget too
 * small to inflate that DWARF, the debug file's symbols still name its local function
 * (libc's start_thread and clone3 are such, every thread's root). */
TEST(debug_file_symbols_past_budget)
{
	char bin[300], dbg[300], dir[300];
	struct symbolizer *s = NULL;
	const struct sym_result *r = NULL;
	struct sym_object *o;
	struct sym_stats st;
	uint64_t off, size;

	snprintf(dbg, sizeof(dbg), "%s/dlprog.debug", unit_tmp_dir());
	snprintf(dir, sizeof(dir), "%s/zcache-dl", unit_tmp_dir());
	CHECK(gz_prog("dlprog",
		      "static __attribute__((noinline)) int lonely(int n) { int s = 0;\n"
		      "  for (int i = 0; i < n; i++) s += i ^ (s >> 3); return s; }\n"
		      "int main(int c, char **v) { (void)v; return lonely(c) & 1; }\n",
		      bin, sizeof(bin), NULL) == 0);
	CHECK(symbol_file_off(bin, "lonely", &off, &size, NULL) == 0);
	CHECK(sh("objcopy --only-keep-debug '%s' '%s' && strip --strip-all '%s' && "
		 "cd '%s' && objcopy --add-gnu-debuglink=dlprog.debug dlprog",
		 bin, dbg, bin, unit_tmp_dir()) == 0);
	mem_budget__reset();
	mem_budget__set_limit(100, 100); /* far below the inflated sections */
	s = symbolizer__new(
	    &(struct sym_opts){.no_debuginfod = true, .mem_budget = false, .debug_cache_dir = dir});
	CHECK(s && (o = object_of(s, bin)) && symbolizer__resolve(s, o, off, &r) == 0);
	CHECKF(r->n == 1 && !strcmp(r->frames[0].name, "lonely") && !r->frames[0].file,
	       "%zu frames, %s", r->n, r->n ? r->frames[0].name : "-");
	symbolizer__stats(s, &st);
	CHECK(st.budget_skips > 0);
cleanup:
	symbolizer__free(s);
	mem_budget__reset();
	symbolizer__free(symbolizer__new(&(struct sym_opts){
	    .no_debuginfod = true, .debug_cache_dir = dir, .debug_cache_bytes = 512ULL << 20}));
}

/* Compressed debug sections that would have to be inflated past the ledger's budget are
 * not: no file written, no DWARF, the symbol table answers, the skip is counted. */
TEST(compressed_debug_past_budget_not_inflated)
{
	char zbin[300], dir[300];
	struct symbolizer *s = NULL;
	const struct sym_result *r = NULL;
	struct sym_object *o;
	struct sym_stats st;
	uint64_t off, size;

	snprintf(dir, sizeof(dir), "%s/zcache-budget", unit_tmp_dir());
	CHECK(gz_prog("zbprog",
		      "__attribute__((noinline)) int work2(int n) { int s = 0;\n"
		      "  for (int i = 0; i < n; i++) s += i ^ (s >> 2); return s; }\n"
		      "int main(int c, char **v) { (void)v; return work2(c) & 1; }\n",
		      zbin, sizeof(zbin), NULL) == 0);
	CHECK(symbol_file_off(zbin, "work2", &off, &size, NULL) == 0);
	mem_budget__reset();
	mem_budget__set_limit(100, 100); /* 100 bytes: far below the inflated sections */
	s = symbolizer__new(
	    &(struct sym_opts){.no_debuginfod = true, .mem_budget = false, .debug_cache_dir = dir});
	CHECK(s && (o = object_of(s, zbin)) && symbolizer__resolve(s, o, off, &r) == 0);
	CHECKF(r->n == 1 && !strcmp(r->frames[0].name, "work2") && !r->frames[0].file,
	       "%zu frames, %s", r->n, r->n ? r->frames[0].name : "-");
	symbolizer__stats(s, &st);
	CHECK(st.budget_skips > 0);
	CHECK(sh("ls '%s'/*.debug > /dev/null 2>&1", dir) != 0);
cleanup:
	symbolizer__free(s);
	mem_budget__reset();
	symbolizer__free(symbolizer__new(&(struct sym_opts){
	    .no_debuginfod = true, .debug_cache_dir = dir, .debug_cache_bytes = 512ULL << 20}));
}

/* Resident KiB of every mapping of path in this process (/proc/self/smaps). */
static long mapped_rss_kib(const char *path)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	long sum = 0, kib;
	bool in = false;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, '-') < strchr(line, ' '))
			in = strstr(line, path) != NULL; /* a mapping's first line */
		else if (in && sscanf(line, "Rss: %ld kB", &kib) == 1)
			sum += kib;
	}
	fclose(f);
	return sum;
}

/* Writes what off resolves to (every frame's names, file, line) into buf. */
static void frames_text(struct symbolizer *s, struct sym_object *o, uint64_t off, char *buf,
			size_t len)
{
	const struct sym_result *r = NULL;
	size_t k = 0;

	buf[0] = '\0';
	if (symbolizer__resolve(s, o, off, &r) != 0 || !r)
		return;
	for (size_t i = 0; i < r->n && k < len; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s|%s|%s:%d|%d;", r->frames[i].name,
				      r->frames[i].system_name,
				      r->frames[i].file ? r->frames[i].file : "-",
				      r->frames[i].line, r->frames[i].inlined);
}

/*
 * Under a memory limit the pages of a mapped DWARF file are dropped as libdw reads on
 * (sym_dwarf.c, pages_bound): the same frames as without a limit, and the file's
 * mappings hold fewer resident pages once its CUs are indexed.
 */
TEST(dwarf_pages_dropped_same_frames)
{
	enum { N = 512 };
	static const char *const fns[] = {
	    "symbolizer__new", "sym_table__find",    "mem_budget__reset",
	    "base_grow",       "sym_batch__stream",  "sym_dwarf__lookup",
	    "sym_demangle",    "sym_kallsyms__load", "main"};
	static char want[N][512];
	static uint64_t offs[N];
	struct symbolizer *s = NULL;
	struct sym_object *o;
	uint64_t off, size;
	long rss_free, rss_bound;
	char p[300], got[512];
	size_t n = 0;

	snprintf(p, sizeof(p), "%s/self-copy-pages", unit_tmp_dir());
	CHECK(sh("cp /proc/%d/exe '%s'", (int)getpid(), p) == 0);
	for (size_t f = 0; f < sizeof(fns) / sizeof(fns[0]); f++) {
		CHECKF(symbol_file_off(p, fns[f], &off, &size, NULL) == 0, "%s", fns[f]);
		for (uint64_t a = off; a < off + size && n < (f + 1) * N / 9; a += 4)
			offs[n++] = a;
	}
	mem_budget__reset();
	s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true});
	CHECK(s && (o = object_of(s, p)));
	for (size_t i = 0; i < n; i++) {
		frames_text(s, o, offs[i], want[i], sizeof(want[i]));
		CHECKF(strstr(want[i], ".c:"), "0x%llx: %s", (unsigned long long)offs[i], want[i]);
	}
	rss_free = mapped_rss_kib(p);
	symbolizer__free(s);
	mem_budget__set_limit(1ULL << 30, 40); /* a limit, far above what is held */
	s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true, .mem_budget = true});
	CHECK(s && (o = object_of(s, p)));
	for (size_t i = 0; i < n; i++) {
		frames_text(s, o, offs[i], got, sizeof(got));
		CHECKF(!strcmp(got, want[i]), "0x%llx: %s, want %s", (unsigned long long)offs[i],
		       got, want[i]);
	}
	rss_bound = mapped_rss_kib(p);
	fprintf(stderr, "  resident KiB of the file's mappings: %ld without a limit, %ld with\n",
		rss_free, rss_bound);
	CHECKF(rss_bound < rss_free, "%ld KiB >= %ld KiB", rss_bound, rss_free);
cleanup:
	symbolizer__free(s);
	mem_budget__reset();
}

/* As truncated_dwarf_while_mapped_no_crash, under a memory limit: the DWARF pages
 * dropped as libdw reads on fault back in from a file that shrank (SIGBUS, caught). */
TEST(truncated_dwarf_pages_dropped_no_crash)
{
	static const char *const fns[] = {"symbolizer__free",  "sym_table__find",
					  "mem_budget__reset", "base_grow",
					  "sym_batch__stream", "unit_tmp_dir"};
	struct symbolizer *s = NULL;
	const struct sym_result *r = NULL;
	struct sym_object *o;
	uint64_t off[6], first_off, size;
	char p[300];

	mem_budget__reset();
	mem_budget__set_limit(1ULL << 30, 40);
	s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true, .mem_budget = true});
	CHECK(s);
	snprintf(p, sizeof(p), "%s/self-copy-dwarf-limit", unit_tmp_dir());
	CHECK(sh("cp /proc/%d/exe '%s'", (int)getpid(), p) == 0);
	CHECK(symbol_file_off(p, "symbolizer__new", &first_off, &size, NULL) == 0);
	for (size_t i = 0; i < 6; i++)
		CHECKF(symbol_file_off(p, fns[i], &off[i], &size, NULL) == 0, "%s", fns[i]);
	CHECK((o = object_of(s, p)));
	CHECK(symbolizer__resolve(s, o, first_off, &r) == 0 && r && r->n >= 1 && r->frames[0].file);
	CHECK(truncate(p, 4096) == 0);
	for (size_t i = 0; i < 6; i++) {
		CHECK(symbolizer__resolve(s, o, off[i], &r) == 0 && r);
		CHECKF(r->n == 0 || !strcmp(r->frames[r->n - 1].system_name, fns[i]) ||
			   !strcmp(r->frames[r->n - 1].name, fns[i]),
		       "%s -> %s", fns[i], r->frames[r->n - 1].system_name);
	}
cleanup:
	symbolizer__free(s);
	mem_budget__reset();
}

/*
 * A function whose DWARF name is not its symbols' choice (an alias with fewer '_',
 * as libc's clock_gettime is of __clock_gettime) keeps DWARF's name when its
 * object's DWARF is evicted and its symbols stay: a diff across the eviction would
 * otherwise list it as a change. Without the DWARF the answer has no line.
 */
TEST(dwarf_names_kept_past_dwarf_eviction)
{
	static const char code[] =
	    "__attribute__((noinline)) int __dn_real(int x)\n"
	    "{ int s = 0; for (int i = 0; i < x; i++) s += i * x; return s; }\n"
	    "extern int dn_alias(int x) __attribute__((alias(\"__dn_real\")));\n"
	    "int main(int c, char **v) { (void)v; return dn_alias(c); }\n";
	char src[300], bin[300], stripped[320];
	struct symbolizer *s = NULL, *plain = NULL;
	const struct sym_result *r = NULL;
	struct sym_object *o, *other;
	uint64_t off, size, dwarf, syms;
	FILE *f;

	mem_budget__reset();
	snprintf(src, sizeof(src), "%s/dname.c", unit_tmp_dir());
	snprintf(bin, sizeof(bin), "%s/dname", unit_tmp_dir());
	snprintf(stripped, sizeof(stripped), "%s.nodebug", bin);
	CHECK((f = fopen(src, "w")) && fputs(code, f) >= 0 && fclose(f) == 0);
	CHECK(sh("gcc -O1 -g -o '%s' '%s' && strip --strip-debug -o '%s' '%s'", bin, src,
		 stripped, bin) == 0);
	CHECK(symbol_file_off(bin, "__dn_real", &off, &size, NULL) == 0 && size > 8);
	/* the premise: its symbols alone name it dn_alias */
	plain = symbolizer__new(&(struct sym_opts){.no_debuginfod = true});
	CHECK(plain && (o = object_of(plain, stripped)) && resolves_to(plain, o, off, "dn_alias"));

	s = symbolizer__new(&(struct sym_opts){
	    .no_debuginfod = true, .mem_budget = true, .no_address_cache = true});
	CHECK(s && (o = object_of(s, bin)));
	CHECK(symbolizer__resolve(s, o, off, &r) == 0 && r && r->n == 1);
	CHECKF(!strcmp(r->frames[0].name, "__dn_real") && r->frames[0].file, "DWARF: %s",
	       r->frames[0].name);
	/* the object resolved last is never evicted: another one is */
	CHECK((other = object_of(s, "/usr/lib/x86_64-linux-gnu/libz.so.1")));
	CHECK(symbolizer__resolve(s, other, 0x3000, &r) == 0);
	dwarf = mem_budget__used(MEM_DWARF);
	syms = mem_budget__used(MEM_SYMBOLS);
	CHECK(dwarf > 0 && mem_budget__reclaim_bytes(dwarf / 2) >= dwarf / 2);
	CHECKF(mem_budget__used(MEM_DWARF) == 0 && mem_budget__evictions(MEM_DWARF) == 1 &&
		   mem_budget__used(MEM_SYMBOLS) == syms,
	       "DWARF %llu, symbols %llu of %llu", (unsigned long long)mem_budget__used(MEM_DWARF),
	       (unsigned long long)mem_budget__used(MEM_SYMBOLS), (unsigned long long)syms);
	/* another address of it, and the first again: DWARF's name, from the symbols */
	CHECK(symbolizer__resolve(s, o, off + size / 2, &r) == 0 && r && r->n == 1);
	CHECKF(!strcmp(r->frames[0].name, "__dn_real") && !r->frames[0].file, "%s",
	       r->frames[0].name);
	CHECK(resolves_to(s, o, off, "__dn_real"));
cleanup:
	symbolizer__free(plain);
	symbolizer__free(s);
	mem_budget__reset();
}

/*
 * A .symtab spells a versioned definition with its version ("vfn@@V1", as libc's
 * debug file has clock_gettime@@GLIBC_2.17 beside __clock_gettime): an alias without
 * a version is shown, whatever its '_' (as llvm-symbolizer and libc's DWARF name it).
 */
TEST(versioned_alias_loses_to_plain)
{
	static const char code[] = "__attribute__((noinline)) int __v_real(int x) { return x * 3 + 1; }\n"
				   "__asm__(\".symver __v_real, vfn@@V1\");\n";
	char src[300], map[300], lib[300];
	struct symbolizer *s = NULL;
	struct sym_object *o;
	uint64_t off, size;
	FILE *f;

	snprintf(src, sizeof(src), "%s/vsym.c", unit_tmp_dir());
	snprintf(map, sizeof(map), "%s/vsym.map", unit_tmp_dir());
	snprintf(lib, sizeof(lib), "%s/libvsym.so", unit_tmp_dir());
	CHECK((f = fopen(src, "w")) && fputs(code, f) >= 0 && fclose(f) == 0);
	CHECK((f = fopen(map, "w")) && fputs("V1 { global: vfn; __v_real; };\n", f) >= 0 &&
	      fclose(f) == 0);
	CHECK(sh("gcc -O1 -shared -fPIC -Wl,--version-script='%s' -o '%s' '%s'", map, lib, src) ==
	      0);
	CHECK(symbol_file_off(lib, "__v_real", &off, &size, NULL) == 0);
	s = symbolizer__new(&(struct sym_opts){.no_debuginfod = true});
	CHECK(s && (o = object_of(s, lib)));
	CHECK(resolves_to(s, o, off, "__v_real"));
cleanup:
	symbolizer__free(s);
}
