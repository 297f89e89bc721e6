/*
 * Display names of frames, shared by the folded, SVG and top writers so the three
 * agree: a location expands to one frame per line (lines[0] the innermost, inlined
 * callee; lines[n-1] the function the address really is in).
 *
 * An unsymbolized location is named after where it is in its file, which is what
 * a later (offline) symbolization would need:
 *     off = address - mapping.start + mapping.offset      -> "libc.so.6+0x2a1f0"
 * and by its bare address when it has no mapping.
 */
#include "profile_impl.h"

#include <inttypes.h>
#include <string.h>

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static void address_name(const struct profile_location *loc, const struct profile_mapping *m,
			 const char *suffix, char *buf, size_t len)
{
	if (m && m->file[0]) {
		/* file offset of the address (see the file comment) */
		uint64_t off = loc->address - m->start + m->offset;

		snprintf(buf, len, "%s+0x%" PRIx64 "%s", basename_of(m->file), off, suffix);
	} else {
		snprintf(buf, len, "0x%" PRIx64 "%s", loc->address, suffix);
	}
}

/* The function's name, its system name when the name is empty, NULL when both are. */
static const char *function_name(const struct profile *p, uint64_t function_id)
{
	struct profile_function f;

	if (profile__get_function(p, function_id, &f))
		return NULL;
	if (f.name[0])
		return f.name;
	return f.system_name[0] ? f.system_name : NULL;
}

/*
 * Whether name is what the collector calls an unnamed frame of object obj (the
 * mapping file's basename): "OBJ+0x" then hex digits only (src/collect,
 * unresolved_location). A real function name never has that shape: it would
 * have to start with the object's file name.
 */
static bool unnamed_of(const char *name, const char *obj)
{
	size_t n = strlen(obj);
	const char *h = name + n + 3;

	if (!n || strncmp(name, obj, n) || strncmp(name + n, "+0x", 3) || !*h)
		return false;
	return h[strspn(h, "0123456789abcdef")] == '\0';
}

/* The grouped name of an unnamed frame (profile__set_group_unnamed). */
static const char *grouped_name(const struct profile_mapping *m, const char *suffix, char *buf,
				size_t len)
{
	if (m && m->file[0])
		snprintf(buf, len, "%s" PROFILE_NO_SYMBOLS_SUFFIX "%s", basename_of(m->file),
			 suffix);
	else
		snprintf(buf, len, "[unknown]%s", suffix);
	return buf;
}

const char *profile__frame_name_ex(const struct profile *p, const struct profile_location *loc,
				   size_t line, bool inline_suffix, char *buf, size_t len)
{
	struct profile_mapping m;
	bool has_map = loc->mapping_id && profile__get_mapping(p, loc->mapping_id, &m) == 0;
	const char *ksuf = has_map && m.is_kernel ? PROFILE_KERNEL_SUFFIX : "";
	const char *name = NULL;

	if (!len)
		return buf;
	if (line < loc->n_lines)
		name = function_name(p, loc->lines[line].function_id);
	if (!name) {
		if (profile__groups_unnamed(p))
			return grouped_name(has_map ? &m : NULL, ksuf, buf, len);
		address_name(loc, has_map ? &m : NULL, ksuf, buf, len);
		return buf;
	}
	if (profile__groups_unnamed(p) &&
	    ((has_map && m.file[0] && unnamed_of(name, basename_of(m.file))) ||
	     (!strncmp(name, "[unknown] 0x", 12) && !has_map)))
		return grouped_name(has_map ? &m : NULL, ksuf, buf, len);
	/* kernel first, then inline: "foo_[k]_[i]", as stackcollapse-perf.pl does */
	snprintf(buf, len, "%s%s%s", name, ksuf,
		 inline_suffix && line + 1 < loc->n_lines ? PROFILE_INLINE_SUFFIX : "");
	return buf;
}

const char *profile__frame_name(const struct profile *p, const struct profile_location *loc,
				size_t line, char *buf, size_t len)
{
	return profile__frame_name_ex(p, loc, line, true, buf, len);
}

enum profile_frame_kind profile__frame_kind(const struct profile *p,
					    const struct profile_location *loc, size_t line)
{
	struct profile_mapping m;

	if (loc->mapping_id && profile__get_mapping(p, loc->mapping_id, &m) == 0 && m.is_kernel)
		return PROFILE_FRAME_KERNEL;
	if (line >= loc->n_lines)
		return PROFILE_FRAME_UNKNOWN;
	return line + 1 < loc->n_lines ? PROFILE_FRAME_INLINE : PROFILE_FRAME_USER;
}
