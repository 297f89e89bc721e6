/*
 * Private to src/profile/: the few model internals the pprof codec needs (string
 * ids). The building blocks (growth, hashing, the hash index, the interner, the
 * arena, the growing string) come from src/base/.
 * Other modules include only profile.h.
 *
 * Every name here starts with profile_ so the module links next to the others
 * without clashes.
 */
#ifndef HEARTH_PROFILE_IMPL_H
#define HEARTH_PROFILE_IMPL_H

#include "profile.h"
#include "base/base.h"
#include "pprof_wire.h"

#include <stdarg.h>

/* ---- model internals used by the pprof codec ---- */

/* The profile's string table: ids 0..n-1, id 0 is "". */
size_t profile__n_strings(const struct profile *p);
const char *profile__string(const struct profile *p, size_t id);
/* String id of an interned string, -ENOENT when absent. */
int64_t profile__string_id(const struct profile *p, const char *s);
/* A sample label by string ids: str 0 ("") makes it a numeric label (num). */
struct profile_label_sids {
	int64_t key, str, num;
};
/* profile__add_sample with labels given as string ids of p: the decoder interns a
 * file's string table once instead of every label of every sample. 0, -EINVAL
 * (bad location or string id), -ENOMEM. */
int profile__add_sample_sids(struct profile *p, const uint64_t *locs, size_t n_locs,
			     const int64_t values[PROFILE_N_VALUES],
			     const struct profile_label_sids *labels, size_t n_labels);
/* String ids of a mapping's file/build_id and a function's name/system_name/filename. */
int profile__mapping_sids(const struct profile *p, uint64_t id, int64_t *file, int64_t *build_id);
int profile__function_sids(const struct profile *p, uint64_t id, int64_t sids[3]);
/* Comment i as a string id. */
int64_t profile__comment_sid(const struct profile *p, size_t i);
/* Whether profile__set_group_unnamed is on. */
bool profile__groups_unnamed(const struct profile *p);
/* Display name of a frame; inline_suffix false leaves PROFILE_INLINE_SUFFIX off
 * (top counts an inlined function under its own name, like pprof). */
const char *profile__frame_name_ex(const struct profile *p, const struct profile_location *loc,
				   size_t line, bool inline_suffix, char *buf, size_t len);

/* What kind of code a frame is, for colours. */
enum profile_frame_kind {
	PROFILE_FRAME_USER,
	PROFILE_FRAME_INLINE,
	PROFILE_FRAME_KERNEL,
	PROFILE_FRAME_UNKNOWN, /* not symbolized */
};
enum profile_frame_kind profile__frame_kind(const struct profile *p,
					    const struct profile_location *loc, size_t line);

/* A flat profile and everything it points to, as pprof_decode_flat and
 * profile__to_flat allocate it. f comes first: profile_flat__free takes the box
 * by its f and frees every array (and m's strings). */
struct profile_flat_box {
	struct profile_flat f;
	struct pprof_wire m; /* owns the strings */
	uint32_t *str_off, *locs, *comments;
	struct profile_flat_mapping *mappings;
	struct profile_flat_function *functions;
	struct profile_flat_location *locations;
	struct profile_flat_line *lines;
	struct profile_flat_sample *samples;
	struct profile_flat_label *labels;
	struct profile_flat_value_type *sample_types;
};

/* Room for one frame name (longer names are truncated). */
#define PROFILE_NAME_MAX 1024

#endif /* HEARTH_PROFILE_IMPL_H */
