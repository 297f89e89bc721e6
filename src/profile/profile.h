/*
 * profile: hearth's interned profile model — the one currency between modules —
 * and its encodings: pprof (gzipped profile.proto), folded stacks, an SVG flame
 * graph and a `pprof -top`-style table.
 *
 * The model mirrors profile.proto: strings, mappings, functions and locations
 * are interned and referred to by 1-based ids; samples hold location ids (leaf
 * first), two values (samples/count, cpu/nanoseconds) and labels.
 *
 * Return contract: functions returning int give 0 (or a count/id) on success
 * and -errno on failure; ids are >= 1, 0 means "failed" for id-returning calls.
 */
#ifndef HEARTH_PROFILE_H
#define HEARTH_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Name of the mapping kernel frames live under (as perf and pprof tools expect). */
#define PROFILE_KERNEL_MAPPING "[kernel.kallsyms]"
/* Name of the pseudo-mapping Python frames live under (docs/python.md). */
#define PROFILE_PYTHON_MAPPING "[python]"
/*
 * Name of the pseudo-mapping of a stack's task location: hearth's agent ends
 * every stack (root side) with one location in it whose address is
 * PROFILE_TASK_ADDR(pid, tid) and which has no lines, so that pid and tid live
 * inside the profile without making a series per process (docs/storage.md,
 * "Series identity"). The query layer strips it, filters and groups by it.
 */
#define PROFILE_TASK_MAPPING	 "[task]"
#define PROFILE_TASK_ADDR(pid, tid) ((uint64_t)(pid) << 32 | (uint32_t)(tid))
#define PROFILE_TASK_PID(addr)	 ((uint32_t)((addr) >> 32))
#define PROFILE_TASK_TID(addr)	 ((uint32_t)(addr))
/* Suffix of the one frame that stands for all of an object's unnamed code
 * (profile__set_group_unnamed): "liblzma.so.5 [no symbols]". */
#define PROFILE_NO_SYMBOLS_SUFFIX " [no symbols]"
/* Suffix folded/SVG/top output adds to kernel frames (flamegraph.pl convention). */
#define PROFILE_KERNEL_SUFFIX "_[k]"
/* Suffix folded/SVG/top output adds to frames that were inlined into their caller. */
#define PROFILE_INLINE_SUFFIX "_[i]"

/* Number of sample values: [0] samples/count, [1] cpu/nanoseconds. */
#define PROFILE_N_VALUES 2

struct profile;

struct profile_mapping {
	uint64_t start, limit, offset; /* process addresses [start, limit), file offset of start */
	const char *file;	       /* borrowed from the profile's string table */
	const char *build_id;	       /* hex, "" when unknown */
	bool is_kernel;		       /* file == PROFILE_KERNEL_MAPPING */
};

struct profile_function {
	const char *name;	 /* demangled or plain name */
	const char *system_name; /* raw (mangled) name */
	const char *filename;	 /* source file, "" when unknown */
};

struct profile_line {
	uint64_t function_id;
	int64_t line; /* 0 when unknown */
};

struct profile_location {
	uint64_t mapping_id; /* 0 when none */
	uint64_t address;    /* process virtual address */
	size_t n_lines;	     /* lines[0] innermost; lines[n-1] the outer (non-inlined) function */
	const struct profile_line *lines;
};

/* A label of a sample: either a string (str != NULL) or a number. */
struct profile_label {
	const char *key;
	const char *str;
	int64_t num;
};

/*
 * The model's canonical order of a sample's labels (a qsort comparator of struct
 * profile_label), by content so it does not depend on allocation addresses: key,
 * then numbers before strings, then value. Labels that compare equal are equal.
 */
int profile_label__cmp(const void *a, const void *b);

struct profile_sample {
	size_t n_locs;
	const uint64_t *locs; /* location ids, leaf first */
	int64_t values[PROFILE_N_VALUES];
	size_t n_labels;
	const struct profile_label *labels;
};

/* An empty profile of CPU samples taken every period_ns nanoseconds. NULL on ENOMEM. */
struct profile *profile__new(int64_t period_ns);
/* Frees the profile and every string it interned. NULL is a no-op. */
void profile__free(struct profile *p);

/* Start of the profile (ns since the epoch) and its length in ns. */
void profile__set_time(struct profile *p, int64_t time_ns, int64_t duration_ns);
int64_t profile__time_ns(const struct profile *p);
int64_t profile__duration_ns(const struct profile *p);
int64_t profile__period_ns(const struct profile *p);

/*
 * Profile types, as Pyroscope names them: NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT
 * (e.g. memory:inuse_space:bytes:space:bytes). A model without a type, or of a
 * type starting with PROFILE_CPU_TYPE_PREFIX, holds CPU samples (values
 * [samples/count, cpu/nanoseconds]); a model of any other type holds its one
 * value in both values[0] and values[1], and pprof_encode writes that one value
 * under the type's sample type and period type.
 */
#define PROFILE_CPU_TYPE_PREFIX "process_cpu:"
/*
 * Time spent off the CPU (blocked, waiting, runnable but not running) and
 * wall-clock time per thread (on-CPU plus off-CPU), in nanoseconds (issue 28,
 * docs/offcpu.md). Their pprof sample type and period type are off_cpu (wall)
 * / nanoseconds; each sample carries the label PROFILE_LABEL_REASON and its
 * stack a leaf pseudo-frame PROFILE_OFF_CPU_FRAME_PREFIX REASON "]" (wall's
 * running time: PROFILE_ON_CPU_FRAME).
 */
#define PROFILE_OFF_CPU_TYPE	     "off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds"
#define PROFILE_WALL_TYPE	     "wall:wall:nanoseconds:wall:nanoseconds"
#define PROFILE_OFF_CPU_FRAME_PREFIX "[off-cpu: "
#define PROFILE_ON_CPU_FRAME	     "[on-cpu]"
/* The off-CPU or wall type whose pprof sample type is (type, unit), else NULL. */
const char *profile_time_type(const char *type, const char *unit);

/*
 * Label names: the one spelling of each, for every module that makes or reads
 * labels, from the decoders and the collector up (ingest.h gives the ones its
 * callers know by an INGEST_ name the same strings; what each means there).
 */
#define PROFILE_LABEL_NAME	"__name__"	   /* a push's application name */
#define PROFILE_LABEL_TYPE	"__profile_type__" /* a series' profile type */
#define PROFILE_LABEL_SERVICE	"service_name"
#define PROFILE_LABEL_HOST	"host"
#define PROFILE_LABEL_KERNEL	"kernel"
#define PROFILE_LABEL_PID	"pid"
#define PROFILE_LABEL_TID	"tid"
#define PROFILE_LABEL_COMM	"comm"	   /* the thread's name */
#define PROFILE_LABEL_PROCESS	"process"  /* the process's name */
#define PROFILE_LABEL_EXE	"exe"
#define PROFILE_LABEL_CONTAINER "container"
#define PROFILE_LABEL_UNIT	"unit" /* the systemd unit */
#define PROFILE_LABEL_REASON	"reason" /* why an off-CPU (wall) sample waited */
#define PROFILE_TYPE_FIELDS	5
#define PROFILE_TYPE_FIELD_MAX	128
/* Sets (a copy of) the profile type; NULL or a CPU type: CPU. 0 or -ENOMEM. */
int profile__set_type(struct profile *p, const char *type);
/* The type set, NULL for CPU. */
const char *profile__type(const struct profile *p);
/* Whether type names CPU samples (NULL does). */
bool profile_type_is_cpu(const char *type);
/* The unit of values[vi] for display: "samples" / "nanoseconds" for CPU, else the
 * type's SAMPLE_UNIT ("bytes", "count"...); valid while p lives. p may be NULL (CPU). */
const char *profile__unit(const struct profile *p, int vi);
/* A type's five ':'-separated fields, each non-empty and shorter than
 * PROFILE_TYPE_FIELD_MAX. 0 or -EINVAL. */
int profile_type_split(const char *type, char fields[PROFILE_TYPE_FIELDS][PROFILE_TYPE_FIELD_MAX]);

/* Free-text comment kept in the pprof `comment` field (e.g. drop counts). 0 or -ENOMEM. */
int profile__add_comment(struct profile *p, const char *comment);

/* Interned mapping; the same fields give the same id. file/build_id may be NULL ("").
 * 0 on ENOMEM. */
uint64_t profile__mapping(struct profile *p, uint64_t start, uint64_t limit, uint64_t offset,
			  const char *file, const char *build_id);
/* Interned function; the same fields give the same id. Any string may be NULL (""). 0 on ENOMEM. */
uint64_t profile__function(struct profile *p, const char *name, const char *system_name,
			   const char *filename);
/* The same in two steps, for a caller that meets the same strings many times
 * (the store builder: a file name for many functions): profile__intern_string
 * interns s (NULL is "") and returns its string id, or -ENOMEM;
 * profile__function_by_sids is profile__function by string ids (name,
 * system_name, filename), 0 when an id is out of range or out of memory. */
int64_t profile__intern_string(struct profile *p, const char *s);
uint64_t profile__function_by_sids(struct profile *p, const int64_t sids[3]);
/* Interned location keyed by (mapping_id, address): a second call with the same key
 * returns the first id and ignores its lines. lines[0] is the innermost frame.
 * mapping_id may be 0; 0 on ENOMEM or for an unknown mapping or function id. */
uint64_t profile__location(struct profile *p, uint64_t mapping_id, uint64_t address,
			   const struct profile_line *lines, size_t n_lines);
/* Like profile__location but keyed by (mapping_id, address, lines): locations at one
 * address with different lines stay apart (a decoded pprof may hold several at one
 * address, address 0 is common; a profile rebuilt from the store keeps them apart). */
uint64_t profile__location_exact(struct profile *p, uint64_t mapping_id, uint64_t address,
				 const struct profile_line *lines, size_t n_lines);
/*
 * Adds values to the sample with these locations and labels (label order does not
 * matter), creating it when new. Copies everything it is given; num is ignored for
 * string labels. Sums saturate at INT64_MIN/INT64_MAX.
 * Returns 0, -EINVAL for an unknown location id or a NULL label key, -ENOMEM.
 */
int profile__add_sample(struct profile *p, const uint64_t *locs, size_t n_locs,
			const int64_t values[PROFILE_N_VALUES], const struct profile_label *labels,
			size_t n_labels);
/*
 * Appends a new sample without looking for an equal one: the caller knows that no
 * sample with these locations and labels was added yet (e.g. a merge of distinct
 * stored (series, stack) pairs), and skips profile__add_sample's hashing. The
 * profile then is what profile__add_sample would have made; a later
 * profile__add_sample still finds the sample. Same arguments and returns.
 */
int profile__append_sample(struct profile *p, const uint64_t *locs, size_t n_locs,
			   const int64_t values[PROFILE_N_VALUES],
			   const struct profile_label *labels, size_t n_labels);

/*
 * Room for up to max_n location ids in the profile's own storage of sample location
 * lists: a caller that writes a sample's locations there and passes the returned
 * pointer itself as locs to the next profile__append_sample or profile__add_sample
 * saves their copy (the sample keeps that memory; more than max_n ids there: -EINVAL).
 * Other calls may come in between (e.g. adding locations); the room is gone once any
 * sample is added (its memory may then hold that sample's locations). NULL on ENOMEM.
 */
uint64_t *profile__sample_locs_room(struct profile *p, size_t max_n);

/*
 * Read access; the pointers stay valid until the profile is changed or freed
 * (strings stay valid until it is freed). Ids run from 1 to the count; the getters
 * return 0, or -ENOENT for an index or id out of range.
 */
size_t profile__n_samples(const struct profile *p);
/* Heap bytes the model holds (its arrays, indexes, arenas and strings): what a
 * decoder on a memory budget counts as the model grows. */
size_t profile__bytes(const struct profile *p);
int profile__sample(const struct profile *p, size_t i, struct profile_sample *out);
size_t profile__n_locations(const struct profile *p);
int profile__get_location(const struct profile *p, uint64_t id, struct profile_location *out);
size_t profile__n_functions(const struct profile *p);
int profile__get_function(const struct profile *p, uint64_t id, struct profile_function *out);
size_t profile__n_mappings(const struct profile *p);
int profile__get_mapping(const struct profile *p, uint64_t id, struct profile_mapping *out);
/* Comments in the order added; NULL for i out of range. */
size_t profile__n_comments(const struct profile *p);
const char *profile__comment(const struct profile *p, size_t i);
/* Sum of values[i] over all samples (saturating); 0 for i out of range. */
int64_t profile__total(const struct profile *p, int i);

/*
 * Display name of one line of a location, as folded/SVG/top print it: the function
 * name, with PROFILE_KERNEL_SUFFIX for kernel frames and PROFILE_INLINE_SUFFIX for
 * inlined ones (every line but the last). Writes at most len bytes; returns buf.
 */
const char *profile__frame_name(const struct profile *p, const struct profile_location *loc,
				size_t line, char *buf, size_t len);
/*
 * on: profile__frame_name names every unnamed frame of an object ("OBJ+0x1f0",
 * whether the collector named it so or it has no line at all) as one,
 * "OBJ" PROFILE_NO_SYMBOLS_SUFFIX, and a frame with neither name nor mapping
 * "[unknown]": one row per object in a flame graph or top table instead of one
 * per address. Off (the default) keeps the addresses.
 */
void profile__set_group_unnamed(struct profile *p, bool on);

/*
 * Deepest stack kept at ingest, for every input format (pprof, folded, lines):
 * a deeper stack keeps its PROFILE_MAX_FRAMES - 1 leaf-most frames, and one
 * frame named PROFILE_TRUNCATED_FRAME (a function without a mapping) takes the
 * place of all the root-side frames cut, so the sample's value still counts
 * and the flame graph shows where the cut was. Bounds every consumer's work per
 * stack (tree depth, JSON nesting in the web UI).
 */
#define PROFILE_MAX_FRAMES	1024
#define PROFILE_TRUNCATED_FRAME "[truncated]"

/* ---- pprof ---- */

/* Upper bound on the inflated size pprof_decode accepts (decompression bombs). */
#define PPROF_MAX_INFLATED (256u << 20)

/* Encodes as profile.proto, gzip-compressed. *buf is malloc'd, the caller frees it. */
int pprof_encode(const struct profile *p, uint8_t **buf, size_t *len);
/* pprof_encode then fwrite. 0, -EIO, -ENOMEM. */
int pprof_write(const struct profile *p, FILE *f);
/*
 * The profile.proto message pprof_encode packs (a Perftools__Profiles__Profile,
 * profile.pb-c.h), neither packed nor gzipped, handed to fn for a writer of
 * another form of it (Connect's protobuf and JSON answers); it lives until fn
 * returns. Returns fn's answer, or -ENOMEM before calling it.
 */
int pprof_message(const struct profile *p, int (*fn)(const void *msg, void *ctx), void *ctx);
/*
 * Decodes a pprof (gzipped or raw profile.proto) into a new profile, stacks
 * deeper than PROFILE_MAX_FRAMES cut as said there. Returns 0, -EINVAL for
 * malformed input (err names the problem), -EFBIG when it inflates past PPROF_MAX_INFLATED,
 * -ENOMEM. err (may be NULL) receives a one-sentence reason on failure.
 */
int pprof_decode(const uint8_t *buf, size_t len, struct profile **out, char *err, size_t errlen);

/*
 * A decoded pprof before it becomes a model: the profile.proto message validated
 * and flattened, for a consumer that translates it into its own ids without
 * building a model (the store's ingest: store__append_flat). It holds exactly
 * what pprof_decode would put in the model, in the message's order:
 *  - strings as the model keeps them (cut at their first NUL, NUL-terminated);
 *  - every reference an index already checked to be in range (so 32 bits: the
 *    decoder's memory budget keeps every array far below 2^32 elements);
 *  - lines without a function (function_id 0) dropped, as the model drops them;
 *  - sample values already the model's [count, cpu ns] (see pprof_decode.c);
 *  - sample labels as given (the model sorts them; num_unit is dropped).
 * Locations, functions and mappings are not deduplicated: two with the same
 * content may appear twice (the model would give them one id).
 * Everything is owned by the struct (profile_flat__free); fields may be read
 * directly; time_ns/duration_ns may be overwritten (e.g. from an /ingest query).
 */
struct profile_flat_mapping {
	uint64_t start, limit, offset;
	uint32_t file, build_id; /* string indices */
};
struct profile_flat_function {
	uint32_t name, system_name, filename; /* string indices */
};
struct profile_flat_line {
	uint32_t function; /* function index */
	int64_t line;
};
struct profile_flat_location {
	uint64_t address;
	uint32_t mapping;	    /* mapping index + 1; 0: none */
	uint32_t line_off, n_lines; /* lines[line_off ..], [0] innermost */
};
/* A label whose str is the empty string (index 0, or a duplicate "" the table
 * may hold) is a numeric label of value num, as in the model. */
struct profile_flat_label {
	uint32_t key, str; /* string indices */
	int64_t num;	   /* as given, also for string labels */
};
struct profile_flat_sample {
	uint32_t loc_off, n_locs;     /* locs[loc_off ..], leaf first */
	uint32_t label_off, n_labels; /* labels[label_off ..] */
	int64_t values[PROFILE_N_VALUES];
};
/* A pprof ValueType: string indices of its type and unit (0: ""). */
struct profile_flat_value_type {
	uint32_t type, unit;
};
struct profile_flat {
	int64_t time_ns, duration_ns, period_ns;
	/* The message's sample types and period type (a decoded pprof; zero
	 * otherwise): which profile it is, e.g. inuse_space/bytes per space/bytes. */
	size_t n_sample_types;
	const struct profile_flat_value_type *sample_types;
	struct profile_flat_value_type period_type;
	size_t n_strings, n_mappings, n_functions, n_locations, n_lines, n_samples, n_labels,
	    n_comments;
	const char *str_buf;	 /* the strings, each with its NUL */
	const uint32_t *str_off; /* string i: str_buf + str_off[i], n_strings + 1 entries */
	const struct profile_flat_mapping *mappings;
	const struct profile_flat_function *functions;
	const struct profile_flat_location *locations;
	const struct profile_flat_line *lines;
	const struct profile_flat_sample *samples;
	const uint32_t *locs; /* location indices of the samples */
	const struct profile_flat_label *labels;
	const uint32_t *comments; /* string indices */
};

/* String i of a flat profile (i < n_strings) and its length without the NUL. */
static inline const char *profile_flat__str(const struct profile_flat *f, size_t i, size_t *len)
{
	if (len)
		*len = f->str_off[i + 1] - f->str_off[i] - 1;
	return f->str_buf + f->str_off[i];
}

/*
 * Like pprof_decode, with the same checks, limits and errors, but stops before
 * the model: *out (NULL on failure) is a new flat profile.
 */
int pprof_decode_flat(const uint8_t *buf, size_t len, struct profile_flat **out, char *err,
		      size_t errlen);
/*
 * pprof_decode_flat within a memory budget of `budget` bytes (0: only the limits
 * above), for a caller that sizes it by the request: the inflated bytes and the
 * parsed arrays may each take half of it (flattening copies the parsed arrays
 * once), so the decode's peak stays near the budget. -EFBIG past it, err naming
 * the step (inflate or parse) and its share in MiB.
 */
int pprof_decode_flat_budget(const uint8_t *buf, size_t len, size_t budget,
			     struct profile_flat **out, char *err, size_t errlen);
/*
 * Like pprof_decode_flat_budget, but each sample's values are both the message's
 * sample value number value_index (its sample_types[value_index]) instead of
 * [samples/count, cpu/nanoseconds]: a flat profile holds one value per sample,
 * so a pprof of several sample types (a Go heap profile has four) is stored as
 * one flat profile per type. value_index < 0: pprof_decode_flat_budget. Also
 * -EINVAL when the message has no sample type value_index.
 */
int pprof_decode_flat_value(const uint8_t *buf, size_t len, size_t budget, int value_index,
			    struct profile_flat **out, char *err, size_t errlen);
/* The model of a flat profile: what pprof_decode returns for the same input.
 * 0 or -ENOMEM. */
int profile__from_flat(const struct profile_flat *f, struct profile **out);
/*
 * The flat profile of a model, so that one consumer of flat profiles (the
 * store's ingest) serves models too: indices are the model's ids minus one,
 * strings the model's string table. A string label with an empty value is
 * left out (its flat form would be numeric). profile__from_flat of the result
 * gives back an equal model. 0, -E2BIG (over 4 GiB of strings), -ENOMEM.
 */
int profile__to_flat(const struct profile *p, struct profile_flat **out);
/* NULL is a no-op. */
void profile_flat__free(struct profile_flat *f);
/*
 * The profile type a flat profile's sample types name when ingest is not told
 * one: PROFILE_OFF_CPU_TYPE or PROFILE_WALL_TYPE when it has such a sample
 * type (profile_time_type) and none of cpu/nanoseconds, else NULL (CPU, or a
 * type only the request can name). pprof_decode_flat_budget then keeps that
 * sample type's value in both values, as pprof_decode_flat_value does.
 */
const char *profile_flat__type(const struct profile_flat *f);

/* ---- OTLP profiles in (otlp_decode.c, otlp_wire.c, otlp_json.c) ---- */

/* Most series labels one OTLP resource gives (ingest allows more: room for a
 * sample's own). */
#define OTLP_MAX_LABELS 24
/* service_name of a resource without service.name (OTel's own default). */
#define OTLP_DEFAULT_SERVICE "unknown_service"
/* __profile_type__ of what OTLP ingest stores (Pyroscope's CPU type ID). */
#define OTLP_CPU_PROFILE_TYPE "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
/*
 * What a decoded profile holds on to (measured with mallinfo2: the flat form of a
 * one-sample profile 1,008 bytes, the series' label slots 384, their strings),
 * and what the model being built takes before it is flattened (profile__new
 * 66,416 bytes, its first sample and frame 133,696 more).
 */
#define OTLP_PROFILE_COST (4u << 10)
#define OTLP_MODEL_COST	  (256u << 10)
/* Memory budget of a decode when the caller gives none. */
#define OTLP_DEFAULT_BUDGET (256u << 20)

/* One frame a symbolizer found; strings borrowed until its next call. */
struct otlp_frame {
	const char *name, *system_name, *file;
	int64_t line;
};
/*
 * Frames of a native frame the sender did not symbolize: build_id (lower-case hex,
 * GNU), file (the mapping's name), off (file offset: address - memory_start +
 * file_offset). Up to max frames, innermost first, into out; returns how many (0:
 * unknown, kept as module+0xoff) or -errno (-ENOMEM fails the decode).
 */
typedef int (*otlp_symbolize_fn)(void *ctx, const char *build_id, const char *file, uint64_t off,
				 struct otlp_frame *out, size_t max);

struct otlp_opts {
	bool json;		     /* OTLP/JSON, else binary protobuf */
	size_t budget;		     /* bytes the parsed tables may take; 0: OTLP_DEFAULT_BUDGET */
	bool flatten;		     /* each model flattened once built (series.flat) and freed */
	otlp_symbolize_fn symbolize; /* NULL: frames without lines stay module+0xoff */
	void *ctx;
};

struct otlp_label {
	char *key, *value; /* owned */
};
/* One CPU profile of one resource: its series labels and its model (owned), or
 * with opts.flatten its flat form (owned; profile NULL). */
struct otlp_series {
	struct otlp_label *labels;
	size_t n_labels;
	struct profile *profile;
	struct profile_flat *flat;
};
struct otlp_decoded {
	struct otlp_series *series; /* owned */
	size_t n_series;
	uint64_t rejected;	 /* profiles not kept: a sample type other than CPU */
	uint64_t empty;		 /* profiles without samples: skipped, neither kept nor rejected */
	char reject_reason[256]; /* why the first was not */
	uint64_t frames_symbolized, frames_unsymbolized; /* native frames without lines */
};

/*
 * Decodes an ExportProfilesServiceRequest (opentelemetry-proto v1.10 profiles,
 * binary or OTLP/JSON as o->json says) into *out (otlp_decoded__fini frees it,
 * also after a failure). Returns 0, -EINVAL (malformed: err names the message,
 * field or index), -EPROTO (an earlier, incompatible layout: err names the one
 * read), -EFBIG (over the budget), -E2BIG (too many labels), -ENOMEM. Nothing
 * is kept on failure. The budget covers the parse (a JSON body's json-c tree
 * while it lives, then the tables), the models' sample location lists, and
 * per profile with samples OTLP_PROFILE_COST, plus OTLP_MODEL_COST for the
 * model being built (opts.flatten: only one lives at a time; without it, each
 * model is kept and costs more than that). Profiles without samples are skipped.
 */
int otlp_decode(const uint8_t *buf, size_t len, const struct otlp_opts *o, struct otlp_decoded *out,
		char *err, size_t errlen);
void otlp_decoded__fini(struct otlp_decoded *d);

/*
 * Inflates a gzip stream (RFC 1952, several members allowed) into a malloc'd *out
 * of at most max bytes. 0, -EINVAL (not gzip, or corrupt: err says), -EFBIG (more
 * than max), -ENOMEM.
 */
int profile_gunzip(const uint8_t *in, size_t n, size_t max, uint8_t **out, size_t *out_len,
		   char *err, size_t errlen);

/* ---- text and SVG ---- */

/* Folded stacks: "process;frame;...;leaf COUNT\n" (root first), sorted, one line per stack.
 * The process comes from the "process" label (omitted when absent). */
int folded_write(const struct profile *p, FILE *f);
/* A standalone SVG flame graph (zoom on click, search box, title per frame). */
int svg_write(const struct profile *p, FILE *f, const char *title);
/* The `pprof -top` table of p's samples: header with duration and total, then flat,
 * flat%, sum%, cum, cum% (pprof's column names for self and total), name for at most
 * max_rows functions (0 = all), sorted by self. */
int top_write(const struct profile *p, FILE *f, size_t max_rows);

/*
 * The top table's rows, counted stack by stack (top.c says what a row is): the one
 * definition of the table, which top_write prints as pprof's text and
 * query_top_json writes as the web UI's JSON.
 */
struct top;
/* A table counting values[value_index] over locations of p (borrowed: p may gain
 * locations between calls, as a store_builder adds them). 0, -EINVAL, -ENOMEM. */
int top__new(const struct profile *p, int value_index, struct top **out);
/* NULL is a no-op. */
void top__free(struct top *t);
/* Counts one stack (n location ids of p, leaf first; unknown ids are skipped) of
 * value v. 0 or -ENOMEM. */
int top__add(struct top *t, const uint64_t *locs, size_t n, int64_t v);
/*
 * The same count in two steps, for a caller that walks the stacks itself and
 * names each location once: top__line_row gives the row id of line `line` of
 * location loc (of the table's profile), whose profile__frame_name the caller
 * has made already (frame_name; the row's name is that, but for an inlined
 * line's suffix); created at zero; -ENOMEM. top__add_rows counts one stack of
 * value v from its frames' row ids, innermost LAST (root first). 0, or -EINVAL
 * for a row id the table never gave.
 */
int64_t top__line_row(struct top *t, const struct profile_location *loc, size_t line,
		      const char *frame_name);
int top__add_rows(struct top *t, const size_t *rows, size_t n, int64_t v);
/* The profile t counts the locations of. */
const struct profile *top__profile(const struct top *t);
/* Sum of |v| over the stacks counted (pprof's total; saturating). */
int64_t top__total(const struct top *t);
struct top_row {
	const char *name; /* borrowed from the table */
	int64_t self;	  /* stacks whose innermost frame is the function */
	int64_t total;	  /* stacks in which it appears at least once */
	size_t id;	  /* the row's id (top__line_row's) */
};
/* Every row, sorted by self, then total (descending), then name: *out (the caller
 * frees it; names valid while t lives) holds *n. 0 or -ENOMEM. */
int top__rows(const struct top *t, struct top_row **out, size_t *n);

/* ---- text input (folded_parse.c) ---- */

/*
 * Parses folded stacks ("root;...;leaf COUNT" per line) or, with lines = true,
 * Pyroscope's "lines" format ("root;...;leaf", one sample per line) into a new
 * CPU profile with period period_ns (values: count, count * period_ns); a stack
 * deeper than PROFILE_MAX_FRAMES is cut as said there.
 * Returns 0, -EINVAL for malformed input (err names the line), -ENOMEM.
 */
int profile_text_parse(const char *buf, size_t len, bool lines, int64_t period_ns,
		       struct profile **out, char *err, size_t errlen);
/*
 * profile_text_parse within a memory budget of `budget` bytes (0: none) for the
 * text's copy, the model (profile__bytes, weighed every few KiB of text) and room
 * for its flat form (half the model). -EFBIG past it, err naming the line and
 * the sizes; the parse stops there, a few MiB past the budget at most.
 */
int profile_text_parse_budget(const char *buf, size_t len, bool lines, int64_t period_ns,
			      size_t budget, struct profile **out, char *err, size_t errlen);

#endif /* HEARTH_PROFILE_H */
