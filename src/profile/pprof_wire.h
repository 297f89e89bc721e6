/*
 * Private to src/profile/: profile.proto read straight off the wire into flat
 * arrays (pprof_wire.c), for pprof_decode. Field numbers are profile.proto's
 * (github.com/google/pprof/proto/profile.proto). Nothing is validated here but
 * the wire format itself: string indices and id references are pprof_decode's.
 */
#ifndef HEARTH_PPROF_WIRE_H
#define HEARTH_PPROF_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pprof_wire_vt {
	int64_t type, unit; /* string indices */
};

struct pprof_wire_mapping {
	uint64_t id, start, limit, offset;
	int64_t filename, build_id;
};

struct pprof_wire_function {
	uint64_t id;
	int64_t name, system_name, filename;
};

struct pprof_wire_line {
	uint64_t function_id;
	int64_t line;
};

struct pprof_wire_location {
	uint64_t id, mapping_id, address;
	size_t line_off, n_line; /* into pprof_wire.lines */
};

struct pprof_wire_label {
	int64_t key, str, num, num_unit;
};

struct pprof_wire_sample {
	size_t loc_off, n_loc;	   /* into pprof_wire.loc_ids */
	size_t val_off, n_val;	   /* into pprof_wire.values */
	size_t label_off, n_label; /* into pprof_wire.labels */
};

/* A growing array of elem-byte elements. */
struct pprof_wire_arr {
	void *v;
	size_t n, cap;
};

/* One decoded Profile message. Every array is owned; strings are NUL-terminated
 * copies (like protobuf-c's: an embedded NUL ends the string). */
struct pprof_wire {
	struct pprof_wire_arr sample_type, samples, mappings, locations, functions, strings,
	    comments, loc_ids, values, labels, lines;
	char *str_buf; /* the strings, each with its NUL */
	size_t str_len, str_cap;
	int64_t drop_frames, keep_frames, time_nanos, duration_nanos, period,
	    default_sample_type;
	struct pprof_wire_vt period_type;
	bool has_period_type;
	size_t used, limit; /* bytes of arrays, and the budget */
};

#define PPROF_WIRE_AT(w, arr, type, i) (((type *)(w)->arr.v)[i])

/*
 * Parses buf into w (zeroed by the caller; free with pprof_wire__fini whatever
 * the result). Arrays may take at most `limit` bytes in all.
 * 0, -EINVAL (not a valid profile.proto message: bad tag, wire type, varint,
 * truncated field), -EFBIG (over the budget), -ENOMEM.
 */
int pprof_wire__parse(struct pprof_wire *w, const uint8_t *buf, size_t len, size_t limit);
void pprof_wire__fini(struct pprof_wire *w);
/* String i of the table (i < w->strings.n). */
const char *pprof_wire__str(const struct pprof_wire *w, size_t i);

#endif /* HEARTH_PPROF_WIRE_H */
