/*
 * Private to src/profile/: an OTLP ExportProfilesServiceRequest as flat tables,
 * filled by the binary reader (otlp_wire.c) or the JSON one (otlp_json.c) and
 * turned into models by otlp_decode.c. Indices are kept as given (int64): the
 * checks that they are in range are otlp_decode's, in one place for both
 * encodings.
 */
#ifndef HEARTH_OTLP_IMPL_H
#define HEARTH_OTLP_IMPL_H

#include "profile.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What hearth reads, as error messages name it. */
#define OTLP_LAYOUT                                                                                \
	"the OTLP profiles layout hearth reads (opentelemetry-proto v1.10, v1development: "        \
	"one ProfilesDictionary with a stack_table, Sample{stack_index, attribute_indices, "       \
	"link_index, values, timestamps_unix_nano})"

/* A growing array; elements are never moved out of order. */
struct otlp_arr {
	void *v;
	size_t n, cap;
};

#define OTLP_AT(arr, type, i) (((type *)(arr).v)[i])
#define OTLP_LAST(arr, type)  (((type *)(arr).v)[(arr).n - 1])

enum otlp_val_kind {
	OTLP_VAL_NONE,
	OTLP_VAL_STR,	   /* str: an offset in otlp_msg.text */
	OTLP_VAL_STRINDEX, /* num: an index in the dictionary's string table */
	OTLP_VAL_INT,
	OTLP_VAL_BOOL,
	OTLP_VAL_DOUBLE,
};

struct otlp_value {
	enum otlp_val_kind kind;
	size_t str; /* offset in text */
	int64_t num;
	double dbl;
};

/* An attribute: of the dictionary (key_sid, a string index) or of a resource
 * (key, an offset in text; key_sid -1). */
struct otlp_attr {
	int64_t key_sid;
	size_t key;
	struct otlp_value value;
};

struct otlp_mapping {
	uint64_t start, limit, offset;
	int64_t filename;
	size_t attr_off; /* in ints */
	uint32_t n_attrs;
};

struct otlp_line {
	int64_t function, line;
};

struct otlp_location {
	int64_t mapping;
	uint64_t address;
	size_t line_off; /* in lines */
	uint32_t n_lines;
};

struct otlp_function {
	int64_t sid[3]; /* name, system_name, filename */
};

struct otlp_stack {
	size_t loc_off; /* in ints */
	uint32_t n_locs;
};

struct otlp_sample {
	int64_t stack;
	size_t attr_off;  /* in ints */
	size_t value_off; /* in values */
	uint32_t n_attrs, n_values;
	uint64_t n_timestamps;
};

struct otlp_profile {
	size_t resource;			/* index in resources */
	int64_t sample_type[2], period_type[2]; /* string indices: type, unit */
	int has_sample_type;
	uint64_t time_ns, duration_ns;
	int64_t period;
	size_t sample_off; /* in samples */
	size_t n_samples;
	size_t attr_off; /* in ints */
	uint32_t n_attrs;
};

struct otlp_resource {
	size_t attr_off; /* in res_attrs */
	uint32_t n_attrs;
};

struct otlp_msg {
	bool has_dictionary;
	/* the dictionary */
	struct otlp_arr mappings, locations, lines, functions, attrs, stacks;
	struct otlp_arr str_off; /* size_t: string_table entry i at text + str_off[i] */
	/* the resources and their profiles */
	struct otlp_arr resources, res_attrs, profiles, samples;
	struct otlp_arr ints;	 /* int64: attribute and location indices */
	struct otlp_arr values;	 /* int64: sample values */
	struct otlp_arr scratch; /* int64: timestamps while counted */
	char *text;		 /* every string, each with its NUL */
	size_t text_len, text_cap;
	size_t used, limit; /* bytes of arrays and text, and the budget */
};

/* A new zeroed element at the end of a (elem bytes each); NULL past the budget or
 * on ENOMEM (both reported as -EFBIG by the callers: the budget is the bound). */
void *otlp_push(struct otlp_msg *m, struct otlp_arr *a, size_t elem);
int otlp_push_i64(struct otlp_msg *m, struct otlp_arr *a, int64_t v);
/* Copies s[0, n) into text (cut at an embedded NUL); *off its offset. 0 or -EFBIG. */
int otlp_push_str(struct otlp_msg *m, const char *s, size_t n, size_t *off);
/* A string_table entry. 0 or -EFBIG. */
int otlp_push_table_str(struct otlp_msg *m, const char *s, size_t n);
void otlp_msg__fini(struct otlp_msg *m);

/* The binary request into m (zeroed, limit set). 0, -EINVAL (not protobuf), -EPROTO
 * (another layout), -EFBIG (over the budget); err says which field. */
int otlp_wire__parse(struct otlp_msg *m, const uint8_t *buf, size_t len, char *err, size_t errlen);
/* The OTLP/JSON request into m, likewise. */
int otlp_json__parse(struct otlp_msg *m, const char *buf, size_t len, char *err, size_t errlen);

#endif /* HEARTH_OTLP_IMPL_H */
