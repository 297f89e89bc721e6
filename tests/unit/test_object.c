/*
 * Tests for src/object: the build-id is read from the note the linker was told to
 * write (-Wl,--build-id=0x...), also with the section headers gone and never from
 * past the end of a truncated file; identity tells a file rewritten in place from its
 * old self; offsets map to vaddrs through the right segment; references count.
 */
#include "object/object.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FX_BUILD_ID "0123456789abcdef00112233445566778899aabb"

static char fx_exe[256];
static int fx_state; /* 0 not built, 1 built, -1 failed */

static int build_fixture(void)
{
	char src[256], cmd[1024];
	FILE *f;

	if (fx_state)
		return fx_state > 0 ? 0 : -1;
	fx_state = -1;
	snprintf(src, sizeof(src), "%s/obj.c", unit_tmp_dir());
	snprintf(fx_exe, sizeof(fx_exe), "%s/obj", unit_tmp_dir());
	if (!(f = fopen(src, "w")) || fputs("int main(void) { return 0; }\n", f) < 0 ||
	    fclose(f) != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "gcc -O1 -no-pie -Wl,--build-id=0x%s -o '%s' '%s'", FX_BUILD_ID,
		 fx_exe, src);
	if (system(cmd) != 0)
		return -1;
	fx_state = 1;
	return 0;
}

/* A copy of the fixture at dst. 0 or -1. */
static int copy_fixture(const char *dst)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", fx_exe, dst);
	return build_fixture() || system(cmd) != 0 ? -1 : 0;
}

/* object__from_elf of the file at path (dev, inode as given). 0 or -errno. */
static int object_of(const char *path, uint64_t dev, uint64_t inode, struct object **out)
{
	int fd = open(path, O_RDONLY), err;
	Elf *elf;

	*out = NULL;
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	err = elf ? object__from_elf(elf, fd, dev, inode, out) : -ENOEXEC;
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

TEST(build_id_is_the_linkers)
{
	struct object *o = NULL;

	CHECK(build_fixture() == 0);
	CHECK(object_of(fx_exe, 0, 0, &o) == 0);
	CHECK_STREQ(o->build_id, FX_BUILD_ID);
cleanup:
	object__put(o);
}

TEST(build_id_without_section_headers)
{
	char path[256];
	struct object *o = NULL;
	Elf64_Ehdr eh;
	int fd = -1;

	snprintf(path, sizeof(path), "%s/obj-noshdr", unit_tmp_dir());
	CHECK(copy_fixture(path) == 0);
	/* no section header table: only the PT_NOTE segment still finds the note */
	fd = open(path, O_RDWR);
	CHECK(fd >= 0 && pread(fd, &eh, sizeof(eh), 0) == sizeof(eh));
	eh.e_shoff = 0;
	eh.e_shnum = 0;
	eh.e_shstrndx = 0;
	CHECK(pwrite(fd, &eh, sizeof(eh), 0) == sizeof(eh));
	CHECK(object_of(path, 0, 0, &o) == 0);
	CHECK_STREQ(o->build_id, FX_BUILD_ID);
cleanup:
	if (fd >= 0)
		close(fd);
	object__put(o);
}

TEST(truncated_file_gives_no_build_id)
{
	char path[256];
	struct object *o = NULL;
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	uint64_t cut = 0;
	int fd = -1;

	snprintf(path, sizeof(path), "%s/obj-cut", unit_tmp_dir());
	CHECK(copy_fixture(path) == 0);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0 && pread(fd, &eh, sizeof(eh), 0) == sizeof(eh));
	/* cut the file in the middle of its first note, headers kept */
	for (int i = 0; i < eh.e_phnum && !cut; i++) {
		CHECK(pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) ==
		      sizeof(ph));
		if (ph.p_type == PT_NOTE)
			cut = ph.p_offset + ph.p_filesz / 2;
	}
	CHECK(cut > eh.e_phoff + eh.e_phnum * sizeof(ph));
	eh.e_shoff = 0; /* the section table is gone with the rest */
	eh.e_shnum = 0;
	eh.e_shstrndx = 0;
	CHECK(pwrite(fd, &eh, sizeof(eh), 0) == sizeof(eh) && ftruncate(fd, (off_t)cut) == 0);
	CHECK(object_of(path, 0, 0, &o) == 0);
	CHECKF(o->build_id[0] == '\0', "build-id \"%s\"", o->build_id);
cleanup:
	if (fd >= 0)
		close(fd);
	object__put(o);
}

TEST(identity_tells_a_rewritten_file)
{
	char path[256];
	struct object *a = NULL, *b = NULL, *c = NULL;
	struct timespec ts[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
	struct stat st;

	snprintf(path, sizeof(path), "%s/obj-rw", unit_tmp_dir());
	CHECK(copy_fixture(path) == 0 && stat(path, &st) == 0);
	CHECK(object_of(path, 0, 0, &a) == 0);
	CHECK(a->id.dev == st.st_dev && a->id.inode == st.st_ino);
	CHECK(object_of(path, 0, 0, &b) == 0);
	CHECK(object_id__eq(&a->id, &b->id) && object_id__hash(&a->id) == object_id__hash(&b->id));
	/* written in place: same inode, another mtime */
	CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0);
	CHECK(object_of(path, 0, 0, &c) == 0);
	CHECK(object_id__same_file(&a->id, &c->id) && !object_id__eq(&a->id, &c->id));
	CHECK(object_id__hash(&a->id) == object_id__hash(&c->id)); /* one chain per file */
	object__put(c);
	/* the mapping's dev and inode win over what stat says (overlayfs) */
	CHECK(object_of(path, 0x801, 77, &c) == 0);
	CHECK(c->id.dev == 0x801 && c->id.inode == 77 &&
	      c->id.mtime_ns == 1000000000ULL * 1000000000ULL);
cleanup:
	object__put(a);
	object__put(b);
	object__put(c);
}

TEST(segments_map_offsets_to_vaddrs)
{
	static const struct object_segment segs[] = {
	    {.off = 0, .filesz = 0x1000, .vaddr = 0x400000},
	    {.off = 0x1000, .filesz = 0x2000, .vaddr = 0x401000, .exec = true},
	    {.off = 0x1800, .filesz = 0x100, .vaddr = 0x600000}, /* overlaps: exec wins */
	};
	struct object *o = NULL;
	const struct object_segment *x;
	uint64_t v = 0;

	CHECK(object_segments_vaddr(segs, 3, 0x10, &v) && v == 0x400010);
	CHECK(object_segments_vaddr(segs, 3, 0x1810, &v) && v == 0x401810);
	CHECK(!object_segments_vaddr(segs, 3, 0x3000, &v));
	CHECK(build_fixture() == 0 && object_of(fx_exe, 0, 0, &o) == 0);
	x = object__exec_segment(o);
	/* a non-PIE x86-64 executable's code loads at 0x400000 and above */
	CHECK(o->n_segs >= 2 && x && x->vaddr >= 0x400000 && x->filesz > 0);
	CHECK(object_segments_vaddr(o->segs, o->n_segs, x->off, &v) && v == x->vaddr);
cleanup:
	object__put(o);
}

TEST(references_count)
{
	struct object *o = NULL, *again;

	CHECK(build_fixture() == 0 && object_of(fx_exe, 0, 0, &o) == 0);
	CHECK(o->refs == 1);
	again = object__get(o);
	CHECK(again == o && o->refs == 2);
	object__put(again);
	CHECK(o->refs == 1); /* still there (ASan would see a use after free) */
cleanup:
	object__put(o);
	object__put(NULL);
}
