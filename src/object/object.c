/*
 * object: the identity of a mapped ELF file and what every module reads of its headers
 * (GNU build-id, PT_LOAD segments) — the one copy of each, used by symbolize and unwind.
 *
 * Constraint: the file is outside input and may be truncated or corrupt. Every note
 * segment or section is checked to lie inside the file before libelf is asked for its
 * bytes, and a note is taken only when its owner is "GNU" and its size is sane.
 */
#include "object/object.h"

#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

uint64_t object_id__hash(const struct object_id *id)
{
	return base_hash_u64(base_hash_u64(BASE_HASH_SEED, id->dev), id->inode);
}

uint64_t object_mtime_ns(const struct stat *st)
{
	return (uint64_t)st->st_mtim.tv_sec * 1000000000ULL + (uint64_t)st->st_mtim.tv_nsec;
}

void object_id__of_stat(const struct stat *st, struct object_id *out)
{
	*out = (struct object_id){
	    .dev = st->st_dev, .inode = st->st_ino, .mtime_ns = object_mtime_ns(st)};
}

/* ---- build-id ---- */

/* Whether [off, off + len) lies inside a file of size bytes. */
static bool in_file(uint64_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

static void hex_encode(const unsigned char *p, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[p[i] >> 4];
		hex[2 * i + 1] = digits[p[i] & 15];
	}
	hex[2 * n] = '\0';
}

/* Looks for an NT_GNU_BUILD_ID note (owner "GNU") in d; true when found. */
static bool notes_build_id(Elf_Data *d, char *hex, size_t len)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		const char *base = d->d_buf;

		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof(ELF_NOTE_GNU) &&
		    memcmp(base + name_off, ELF_NOTE_GNU, sizeof(ELF_NOTE_GNU)) == 0 &&
		    nh.n_descsz > 0 && nh.n_descsz <= OBJECT_BUILD_ID_MAX &&
		    2 * nh.n_descsz < len) {
			hex_encode((const unsigned char *)base + desc_off, nh.n_descsz, hex);
			return true;
		}
		off = next;
	}
	return false;
}

/* Through PT_NOTE segments: works even when section headers are stripped. */
static bool segments_build_id(Elf *elf, uint64_t size, char *hex, size_t len)
{
	size_t n;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE ||
		    !in_file(size, ph.p_offset, ph.p_filesz))
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (d && notes_build_id(d, hex, len))
			return true;
	}
	return false;
}

static bool sections_build_id(Elf *elf, uint64_t size, char *hex, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !in_file(size, sh.sh_offset, sh.sh_size))
			continue;
		d = elf_getdata(scn, NULL);
		if (d && notes_build_id(d, hex, len))
			return true;
	}
	return false;
}

void object_elf_build_id(struct Elf *elf, uint64_t file_size, char *hex, size_t len)
{
	if (len == 0)
		return;
	hex[0] = '\0';
	if (!segments_build_id(elf, file_size, hex, len) &&
	    !sections_build_id(elf, file_size, hex, len))
		hex[0] = '\0';
}

/* ---- segments ---- */

int object_elf_segments(struct Elf *elf, struct object_segment **segs, size_t *n_out)
{
	size_t n, cap = 0;
	GElf_Phdr ph;

	*segs = NULL;
	*n_out = 0;
	if (elf_getphdrnum(elf, &n) != 0)
		return 0; /* no program headers: nothing is loaded from this file */
	for (size_t i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || ph.p_filesz == 0)
			continue;
		if (base_grow((void **)segs, &cap, *n_out + 1, sizeof(**segs))) {
			free(*segs);
			*segs = NULL;
			*n_out = 0;
			return -ENOMEM;
		}
		(*segs)[(*n_out)++] = (struct object_segment){ph.p_offset, ph.p_filesz, ph.p_vaddr,
							      (ph.p_flags & PF_X) != 0};
	}
	return 0;
}

bool object_segments_vaddr(const struct object_segment *segs, size_t n, uint64_t off,
			   uint64_t *vaddr)
{
	const struct object_segment *hit = NULL;

	for (size_t i = 0; i < n; i++) {
		const struct object_segment *seg = &segs[i];

		if (off >= seg->off && off - seg->off < seg->filesz &&
		    (!hit || (seg->exec && !hit->exec)))
			hit = seg;
	}
	if (!hit)
		return false;
	*vaddr = off - hit->off + hit->vaddr;
	return true;
}

/* ---- the refcounted object ---- */

int object__from_elf(struct Elf *elf, int fd, uint64_t dev, uint64_t inode, struct object **out)
{
	struct object *o;
	struct stat st;
	int err;

	*out = NULL;
	if (fstat(fd, &st) != 0)
		return -errno;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	object_id__of_stat(&st, &o->id);
	if (inode) {
		o->id.dev = dev;
		o->id.inode = inode;
	}
	object_elf_build_id(elf, (uint64_t)st.st_size, o->build_id, sizeof(o->build_id));
	err = object_elf_segments(elf, &o->segs, &o->n_segs);
	if (err) {
		free(o);
		return err;
	}
	o->refs = 1;
	*out = o;
	return 0;
}

struct object *object__get(struct object *o)
{
	o->refs++;
	return o;
}

void object__put(struct object *o)
{
	if (!o || --o->refs > 0)
		return;
	free(o->segs);
	free(o);
}

const struct object_segment *object__exec_segment(const struct object *o)
{
	for (size_t i = 0; i < o->n_segs; i++)
		if (o->segs[i].exec)
			return &o->segs[i];
	return NULL;
}
