/*
 * object: what names one ELF file that processes map, the same way for every module
 * that keeps something per object (symbolize: symbol tables and DWARF; unwind: CFI
 * tables), and what both read of its headers:
 *
 *   (dev, inode, mtime) --> object <-- build-id
 *
 * A mapping names its file by dev+inode (/proc/PID/maps, struct proc_mapping); the
 * file's mtime tells a file rewritten in place from its old self. A file reached under
 * another identity (a copy, another container layer) with the same GNU build-id is the
 * same object. This module holds the one identity type, the one build-id reader, the one
 * PT_LOAD reader and the offset -> vaddr formula, and the refcounted object made of
 * them, which an unwind_table and a sym_object each hold; each module keeps its own
 * index of objects (they run on different threads).
 *
 * The file is outside input: every note and segment is checked to lie in the file
 * before libelf is asked for it.
 * References: ELF gABI (program header), LSB "Note section" for NT_GNU_BUILD_ID.
 */
#ifndef HEARTH_OBJECT_H
#define HEARTH_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct Elf; /* libelf's Elf */

/* Longest build-id kept (bytes), and its hex with the NUL. */
#define OBJECT_BUILD_ID_MAX 64
#define OBJECT_BUILD_ID_HEX (2 * OBJECT_BUILD_ID_MAX + 1)

/* One version of one file. dev is a dev_t (makedev(major, minor), as stat(2) and
 * proc_mapping__dev give it); inode 0 means unknown. mtime_ns is only compared for
 * equality (wrapping arithmetic, never UB). */
struct object_id {
	uint64_t dev, inode;
	uint64_t mtime_ns;
};

/* The same file (dev and inode), whatever its version. */
static inline bool object_id__same_file(const struct object_id *a, const struct object_id *b)
{
	return a->dev == b->dev && a->inode == b->inode;
}

/* The same version of the same file. */
static inline bool object_id__eq(const struct object_id *a, const struct object_id *b)
{
	return object_id__same_file(a, b) && a->mtime_ns == b->mtime_ns;
}

/* Hash of dev and inode only: every version of one file hashes alike, so an index finds
 * them all (and the newest) from what a mapping says. */
uint64_t object_id__hash(const struct object_id *id);
/* The mtime in ns that stat(2) gave. */
uint64_t object_mtime_ns(const struct stat *st);
/* (st_dev, st_ino, mtime) of what stat(2) gave. */
void object_id__of_stat(const struct stat *st, struct object_id *out);

/* A PT_LOAD segment with file bytes: [off, off + filesz) of the file load at vaddr. */
struct object_segment {
	uint64_t off, filesz, vaddr;
	bool exec; /* PF_X */
};

/*
 * The hex GNU build-id of elf (file_size bytes long) into hex ("" when none, or when
 * it would not fit len), from a PT_NOTE segment (it survives stripped section headers),
 * else an SHT_NOTE section.
 */
void object_elf_build_id(struct Elf *elf, uint64_t file_size, char *hex, size_t len);
/* elf's PT_LOAD segments with file bytes, in program-header order, into *segs (malloc'd,
 * the caller's) and *n. None is not an error. 0 or -ENOMEM. */
int object_elf_segments(struct Elf *elf, struct object_segment **segs, size_t *n);
/*
 * vaddr = off - p_offset + p_vaddr, through the segment whose file bytes hold off (an
 * executable one if several do). False when none holds it.
 */
bool object_segments_vaddr(const struct object_segment *segs, size_t n, uint64_t off,
			   uint64_t *vaddr);

/* One object: identity, build-id and segments, shared by reference. */
struct object {
	struct object_id id;
	char build_id[OBJECT_BUILD_ID_HEX]; /* "" when none */
	struct object_segment *segs;	    /* owned */
	size_t n_segs;
	int refs;
};

/*
 * The object of an ELF already open (fd, elf): its identity from fstat(fd), except dev
 * and inode when the caller names them (as the mapping did: through overlayfs stat(2)
 * shows another device), its build-id and segments. One reference, the caller's.
 * 0, -errno of fstat, -ENOMEM.
 */
int object__from_elf(struct Elf *elf, int fd, uint64_t dev, uint64_t inode, struct object **out);
/* Another reference to o (returned). */
struct object *object__get(struct object *o);
/* Drops a reference; the last frees o. NULL is a no-op. */
void object__put(struct object *o);
/* The first executable segment, NULL when none. */
const struct object_segment *object__exec_segment(const struct object *o);

#endif /* HEARTH_OBJECT_H */
