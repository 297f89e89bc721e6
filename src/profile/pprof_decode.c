/*
 * pprof decoder: gzipped or raw profile.proto from outside (files, HTTP pushes)
 * into a flat profile or a new model. It must survive any input, so it runs in
 * guarded steps:
 *
 *   inflate   bounded by PPROF_MAX_INFLATED, or half the caller's memory budget
 *             (pprof_decode_flat_budget; decompression bombs: -EFBIG); one
 *             libdeflate call into a buffer of the size the gzip trailer states,
 *             zlib streaming whenever that does not give the whole answer;
 *   parse     the protobuf wire format read directly (pprof_wire.c): varints,
 *             packed repeated fields, the string table copied once into one
 *             buffer (the inflated one is freed after this step); a handful of
 *             plain arrays on a byte budget (a
 *             few bytes on the wire can ask for a 40-byte record each: -EFBIG
 *             past the budget), no allocation per message;
 *   validate  every string index, every id reference, value counts (-EINVAL with
 *             one sentence naming the problem) before anything is built;
 *   flatten   the file's ids (any non-zero uint64) become indices into its own
 *             arrays (in O(1) when they are dense 1..n, as most encoders write
 *             them; by binary search otherwise) and values the model's pair:
 *             a struct profile_flat, which the store ingests directly
 *             (store__append_flat), without a model;
 *   cut       stacks deeper than PROFILE_MAX_FRAMES, as every input format is
 *             (the leaf-most frames kept under one "[truncated]" frame);
 *
 * then, for pprof_decode, the model is built from the flat profile (flat.c).
 *
 * Values: the model holds [samples/count, cpu/nanoseconds]. The sample types are
 * matched by name (then by unit); a profile with only one of them gets the other
 * derived from the period (count = cpu / period, cpu = count * period). A
 * profile without cpu/nanoseconds but with an off-CPU or wall-clock sample type
 * (profile_time_type) keeps that one value in both (profile_flat__type).
 */
#include "profile_impl.h"

#include "pprof_wire.h"

#include <errno.h>
#include <inttypes.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>
#include <zlib.h>

/* zlib counts in 32-bit uInt: feed it at most this much per call. */
#define DEC_ZCHUNK (1u << 30)
struct idpair {
	uint64_t id;
	size_t idx; /* index in the message's array */
};

struct dec {
	const struct pprof_wire *m;
	char *err;
	size_t errlen;
	struct idpair *map_ix, *fn_ix, *loc_ix; /* sorted by id */
	bool map_dense, fn_dense, loc_dense;	/* ids are 1..n: ix[id - 1] */
	int idx_count, idx_cpu;			/* sample_type indices, -1 when absent */
	int want;	/* >= 0: the one sample type to keep (pprof_decode_flat_value) */
	uint32_t *locs; /* location index of every sample location id, found by check_sample */
};

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errlen, int code,
						      const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* ---- inflate ---- */

static bool is_gzip(const uint8_t *buf, size_t len)
{
	return len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b; /* RFC 1952 ID1 ID2 */
}

/* Deflate's largest expansion (RFC 1951: a 258-byte match coded in about 2 bits). */
#define PPROF_DEFLATE_MAX_RATIO 1032
/* Past this, an inflate buffer goes straight to its ceiling (inflater_feed). */
#define DEC_INFLATE_JUMP (1u << 20)

struct inflater {
	z_stream z;
	const uint8_t *start, *in; /* the whole input; the next byte not yet given to zlib */
	size_t n, in_left;
	uint8_t *out; /* owned until handed over */
	size_t cap, len;
	size_t max; /* inflated bytes allowed: PPROF_MAX_INFLATED or the caller's budget */
};

/* Bytes of input zlib has not consumed yet. */
static size_t inflater_remaining(const struct inflater *f)
{
	return f->z.avail_in + f->in_left;
}

/* Gives zlib more input and room for output: the buffer doubles up to one byte past
 * the limit, so reaching that byte proves the stream is too large. */
static int inflater_feed(struct inflater *f)
{
	if (f->z.avail_in == 0 && f->in_left) {
		size_t c = f->in_left > DEC_ZCHUNK ? DEC_ZCHUNK : f->in_left;

		f->z.next_in = (Bytef *)f->in;
		f->z.avail_in = (uInt)c;
		f->in += c;
		f->in_left -= c;
	}
	if (f->len == f->cap) {
		/* Past DEC_INFLATE_JUMP the buffer goes straight to its ceiling: the
		 * most the input can inflate to, or one byte past the limit. Pages not
		 * written cost no memory; doubling copied each half and left it freed in
		 * malloc's arenas (the server keeps freed memory): two bombs decoded at
		 * once held 154 MiB for 2 x 32 MiB of output, over 2 x the budget. */
		size_t want = f->len + 1, most = SIZE_MAX - 1;
		int err;

		if (f->cap >= DEC_INFLATE_JUMP) {
			if (f->n <= (SIZE_MAX - 1) / PPROF_DEFLATE_MAX_RATIO)
				most = f->n * PPROF_DEFLATE_MAX_RATIO;
			want = most < f->max ? most + 1 : f->max + 1;
			if (want <= f->len)
				want = f->len + 1;
		}
		err = base_grow_max((void **)&f->out, &f->cap, want, 1, f->max + 1);

		if (err)
			return err == -E2BIG ? -EFBIG : err;
	}
	f->z.next_out = f->out + f->len;
	f->z.avail_out = f->cap - f->len > DEC_ZCHUNK ? DEC_ZCHUNK : (uInt)(f->cap - f->len);
	return 0;
}

/* After the end of one gzip member: another member may follow (RFC 1952 §2.2). */
static int inflater_next_member(struct inflater *f, char *err, size_t errlen)
{
	size_t rest = inflater_remaining(f);
	const uint8_t *p = f->start + f->n - rest;

	if (rest == 0)
		return 1;
	if (!is_gzip(p, rest))
		return fail(err, errlen, -EINVAL,
			    "the gzip stream is followed by %zu bytes that are not gzip data",
			    rest);
	return inflateReset(&f->z) == Z_OK ? 0 : -ENOMEM;
}

/* Runs zlib to the end of the input; 0 when every member ended cleanly. */
static int inflater_run(struct inflater *f, char *err, size_t errlen)
{
	for (;;) {
		uInt room;
		int zr, r = inflater_feed(f);

		if (r == -EFBIG)
			return fail(err, errlen, r, "the gzip stream inflates to more than %zu MiB",
				    f->max >> 20);
		if (r)
			return r;
		room = f->z.avail_out;
		zr = inflate(&f->z, Z_NO_FLUSH);
		f->len += room - f->z.avail_out;
		if (zr == Z_STREAM_END) {
			r = inflater_next_member(f, err, errlen);
			if (r)
				return r > 0 ? 0 : r;
		} else if (zr == Z_BUF_ERROR && inflater_remaining(f) == 0) {
			return fail(err, errlen, -EINVAL, "the gzip stream is truncated");
		} else if (zr == Z_MEM_ERROR) {
			return -ENOMEM;
		} else if (zr != Z_OK && zr != Z_BUF_ERROR) {
			return fail(err, errlen, -EINVAL, "the gzip data is invalid (%s)",
				    f->z.msg ? f->z.msg : "zlib error");
		}
	}
}

/* The fast path: one libdeflate call into a buffer of exactly the size the trailer
 * states (ISIZE, RFC 1952 §2.3.1: the length mod 2^32, little-endian). 1 means "not
 * answered here": a stream that is not one member ending at the end of the input, a
 * trailer that lies or names more than the limit, invalid data. The zlib path then
 * runs from the start and gives the answer (and its error message) for those. */
static int gunzip_fast(const uint8_t *in, size_t n, size_t max, uint8_t **out, size_t *out_len)
{
	struct libdeflate_decompressor *d;
	enum libdeflate_result lr;
	size_t isize, used = 0, got = 0;
	uint8_t *buf;

	if (n < 18) /* 10-byte header, an empty deflate block, 8-byte trailer */
		return 1;
	isize = (size_t)in[n - 4] | (size_t)in[n - 3] << 8 | (size_t)in[n - 2] << 16 |
		(size_t)in[n - 1] << 24;
	/* A trailer is the sender's word: deflate expands at most 1032:1 (a 258-byte match
	 * in under 2 bits), so a larger claim is a lie, answered by the zlib path, whose
	 * buffer grows with what actually inflates. Else 23 bytes could claim (and get a
	 * malloc of) max, 256 MiB for pprof_decode: fuzz_pprof's malloc limit found it. */
	if (isize == 0 || isize > max || isize / PPROF_DEFLATE_MAX_RATIO > n)
		return 1;
	buf = malloc(isize);
	d = libdeflate_alloc_decompressor();
	if (!buf || !d) {
		free(buf);
		libdeflate_free_decompressor(d);
		return -ENOMEM;
	}
	lr = libdeflate_gzip_decompress_ex(d, in, n, buf, isize, &used, &got);
	libdeflate_free_decompressor(d);
	if (lr != LIBDEFLATE_SUCCESS || used != n || got != isize) {
		free(buf);
		return 1;
	}
	*out = buf;
	*out_len = got;
	return 0;
}

/* Inflates a gzip buffer into a malloc'd *out. */
static int gunzip(const uint8_t *in, size_t n, size_t max, uint8_t **out, size_t *out_len,
		  char *err, size_t errlen)
{
	struct inflater f = {.start = in, .in = in, .n = n, .in_left = n, .max = max};
	int r = gunzip_fast(in, n, max, out, out_len);

	if (r <= 0)
		return r;

	/* profiles compress about 4:1; the buffer doubles from there */
	f.cap = 65536;
	if (n <= max / 4 && n * 4 > f.cap)
		f.cap = n * 4;
	f.out = malloc(f.cap);
	if (!f.out)
		return -ENOMEM;
	if (inflateInit2(&f.z, 15 + 16) != Z_OK) { /* 16: gzip wrapper only */
		free(f.out);
		return -ENOMEM;
	}
	r = inflater_run(&f, err, errlen);
	inflateEnd(&f.z);
	if (r) {
		free(f.out);
		return r;
	}
	*out = f.out;
	*out_len = f.len;
	return 0;
}

int profile_gunzip(const uint8_t *in, size_t n, size_t max, uint8_t **out, size_t *out_len,
		   char *err, size_t errlen)
{
	if (!is_gzip(in, n))
		return fail(err, errlen, -EINVAL, "the body is not gzip data");
	return gunzip(in, n, max, out, out_len, err, errlen);
}

/* ---- parse on a budget ---- */

/* Parsed arrays may take this much plus DEC_PARSE_FACTOR bytes per wire byte. */
#define DEC_PARSE_BASE	 (64u << 20)
#define DEC_PARSE_FACTOR 8u
#define DEC_PARSE_MAX	 (1ull << 30)

static int parse(const uint8_t *buf, size_t len, size_t max, struct pprof_wire *w, char *err,
		 size_t errlen)
{
	uint64_t limit = DEC_PARSE_BASE + (uint64_t)len * DEC_PARSE_FACTOR;
	int r;

	limit = limit > DEC_PARSE_MAX ? DEC_PARSE_MAX : limit;
	limit = limit > max ? max : limit;
	r = pprof_wire__parse(w, buf, len, (size_t)limit);
	if (r == -EFBIG)
		return fail(err, errlen, -EFBIG,
			    "the profile needs more than %zu MiB of memory to unpack",
			    (size_t)(limit >> 20));
	if (r == -EINVAL)
		return fail(err, errlen, -EINVAL, "the data is not a valid profile.proto message");
	return r;
}

#define W(arr, type, i) PPROF_WIRE_AT(d->m, arr, type, i)

/* ---- validation: nothing is built until every index is known to be in range ---- */

/* Checks a string index; where is a printf format naming the field. */
__attribute__((format(printf, 3, 4))) static int check_sid(struct dec *d, int64_t sid,
							   const char *where, ...)
{
	char what[96];
	va_list ap;

	if (sid >= 0 && (uint64_t)sid < d->m->strings.n)
		return 0;
	va_start(ap, where);
	vsnprintf(what, sizeof(what), where, ap);
	va_end(ap);
	return fail(d->err, d->errlen, -EINVAL,
		    "%s refers to string %" PRId64 " but the string table has %zu entries", what,
		    sid, d->m->strings.n);
}

static int check_value_type(struct dec *d, const struct pprof_wire_vt *vt, const char *what)
{
	int err = check_sid(d, vt->type, "the %s type", what);

	return err ? err : check_sid(d, vt->unit, "the %s unit", what);
}

static int check_header(struct dec *d)
{
	const struct pprof_wire *m = d->m;
	int err = 0;

	if (m->strings.n == 0 || pprof_wire__str(m, 0)[0] != '\0')
		return fail(d->err, d->errlen, -EINVAL,
			    "the string table must start with the empty string");
	if (m->sample_type.n == 0)
		return fail(d->err, d->errlen, -EINVAL, "the profile has no sample types");
	for (size_t i = 0; i < m->sample_type.n && !err; i++)
		err = check_value_type(d, &W(sample_type, struct pprof_wire_vt, i), "sample");
	if (!err && m->has_period_type)
		err = check_value_type(d, &m->period_type, "period");
	if (!err)
		err = check_sid(d, m->default_sample_type, "default_sample_type");
	if (!err)
		err = check_sid(d, m->drop_frames, "drop_frames");
	if (!err)
		err = check_sid(d, m->keep_frames, "keep_frames");
	for (size_t i = 0; i < m->comments.n && !err; i++)
		err = check_sid(d, W(comments, int64_t, i), "comment %zu", i);
	return err;
}

static int idpair_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct idpair *)a)->id, y = ((const struct idpair *)b)->id;

	return x < y ? -1 : x > y;
}

/* Sorts the (id, index) pairs of one kind and rejects id 0 and duplicates;
 * *dense says the ids are exactly 1..n (then ix[id - 1] is id's entry). */
static int index_ids(struct dec *d, struct idpair *ix, size_t n, const char *what, bool *dense)
{
	bool sorted = true;

	for (size_t i = 0; i < n; i++) {
		ix[i].idx = i;
		if (ix[i].id == 0)
			return fail(d->err, d->errlen, -EINVAL,
				    "%s %zu has id 0, which profile.proto reserves for none", what,
				    i);
		sorted = sorted && (i == 0 || ix[i].id > ix[i - 1].id);
	}
	if (!sorted)
		qsort(ix, n, sizeof(*ix), idpair_cmp);
	for (size_t i = 1; i < n; i++)
		if (ix[i].id == ix[i - 1].id)
			return fail(d->err, d->errlen, -EINVAL, "two %ss have id %" PRIu64, what,
				    ix[i].id);
	*dense = n == 0 || ix[n - 1].id == n; /* n distinct ids >= 1 ending at n */
	return 0;
}

static size_t find_sparse_id(const struct idpair *ix, size_t n, uint64_t id)
{
	struct idpair key = {.id = id};
	const struct idpair *hit = n ? bsearch(&key, ix, n, sizeof(*ix), idpair_cmp) : NULL;

	return hit ? hit->idx : SIZE_MAX;
}

/* Index in the message array of the element with this id, SIZE_MAX when none. */
static inline size_t find_id(const struct idpair *ix, size_t n, bool dense, uint64_t id)
{
	if (dense)
		return id >= 1 && id <= n ? ix[id - 1].idx : SIZE_MAX;
	return find_sparse_id(ix, n, id);
}

static int alloc_index(struct idpair **ix, size_t n)
{
	*ix = calloc(n ? n : 1, sizeof(**ix));
	return *ix ? 0 : -ENOMEM;
}

static int check_mappings(struct dec *d)
{
	size_t n = d->m->mappings.n;
	int err = alloc_index(&d->map_ix, n);

	for (size_t i = 0; i < n && !err; i++) {
		const struct pprof_wire_mapping *mp = &W(mappings, struct pprof_wire_mapping, i);

		d->map_ix[i].id = mp->id;
		err = check_sid(d, mp->filename, "mapping %" PRIu64 " filename", mp->id);
		if (!err)
			err = check_sid(d, mp->build_id, "mapping %" PRIu64 " build_id", mp->id);
	}
	return err ? err : index_ids(d, d->map_ix, n, "mapping", &d->map_dense);
}

static int check_functions(struct dec *d)
{
	size_t n = d->m->functions.n;
	int err = alloc_index(&d->fn_ix, n);

	for (size_t i = 0; i < n && !err; i++) {
		const struct pprof_wire_function *f = &W(functions, struct pprof_wire_function, i);

		d->fn_ix[i].id = f->id;
		err = check_sid(d, f->name, "function %" PRIu64 " name", f->id);
		if (!err)
			err =
			    check_sid(d, f->system_name, "function %" PRIu64 " system_name", f->id);
		if (!err)
			err = check_sid(d, f->filename, "function %" PRIu64 " filename", f->id);
	}
	return err ? err : index_ids(d, d->fn_ix, n, "function", &d->fn_dense);
}

static size_t find_fn(const struct dec *d, uint64_t id)
{
	return find_id(d->fn_ix, d->m->functions.n, d->fn_dense, id);
}

static size_t find_map(const struct dec *d, uint64_t id)
{
	return find_id(d->map_ix, d->m->mappings.n, d->map_dense, id);
}

static size_t find_loc(const struct dec *d, uint64_t id)
{
	return find_id(d->loc_ix, d->m->locations.n, d->loc_dense, id);
}

static int check_location(struct dec *d, const struct pprof_wire_location *l)
{
	if (l->mapping_id && find_map(d, l->mapping_id) == SIZE_MAX)
		return fail(d->err, d->errlen, -EINVAL,
			    "location %" PRIu64 " refers to mapping %" PRIu64
			    ", which does not exist",
			    l->id, l->mapping_id);
	for (size_t i = 0; i < l->n_line; i++) {
		uint64_t fid = W(lines, struct pprof_wire_line, l->line_off + i).function_id;

		/* function_id 0 is "no function" in profile.proto: such lines are skipped */
		if (fid && find_fn(d, fid) == SIZE_MAX)
			return fail(d->err, d->errlen, -EINVAL,
				    "location %" PRIu64 " refers to function %" PRIu64
				    ", which does not exist",
				    l->id, fid);
	}
	return 0;
}

static int check_locations(struct dec *d)
{
	size_t n = d->m->locations.n;
	int err = alloc_index(&d->loc_ix, n);

	for (size_t i = 0; i < n && !err; i++)
		d->loc_ix[i].id = W(locations, struct pprof_wire_location, i).id;
	if (!err)
		err = index_ids(d, d->loc_ix, n, "location", &d->loc_dense);
	for (size_t i = 0; i < n && !err; i++)
		err = check_location(d, &W(locations, struct pprof_wire_location, i));
	return err;
}

static int check_sample(struct dec *d, size_t i, const struct pprof_wire_sample *s)
{
	int err = 0;

	if (s->n_val != d->m->sample_type.n)
		return fail(d->err, d->errlen, -EINVAL,
			    "sample %zu has %zu values but the profile has %zu sample types", i,
			    s->n_val, d->m->sample_type.n);
	for (size_t j = 0; j < s->n_loc; j++) {
		uint64_t id = W(loc_ids, uint64_t, s->loc_off + j);
		size_t idx = find_loc(d, id);

		if (idx == SIZE_MAX)
			return fail(d->err, d->errlen, -EINVAL,
				    "sample %zu refers to location %" PRIu64
				    ", which does not exist",
				    i, id);
		d->locs[s->loc_off + j] = (uint32_t)idx; /* flatten keeps it */
	}
	for (size_t j = 0; j < s->n_label && !err; j++) {
		const struct pprof_wire_label *l =
		    &W(labels, struct pprof_wire_label, s->label_off + j);

		err = check_sid(d, l->key, "label %zu of sample %zu key", j, i);
		if (!err)
			err = check_sid(d, l->str, "label %zu of sample %zu value", j, i);
		if (!err)
			err = check_sid(d, l->num_unit, "label %zu of sample %zu unit", j, i);
	}
	return err;
}

/* Score of a sample type for a wanted one: 2 name and unit, 1 unit only. */
static int type_score(struct dec *d, size_t i, const char *type, const char *unit)
{
	const struct pprof_wire_vt *vt = &W(sample_type, struct pprof_wire_vt, i);

	if (strcmp(pprof_wire__str(d->m, (size_t)vt->unit), unit) != 0)
		return 0;
	return strcmp(pprof_wire__str(d->m, (size_t)vt->type), type) == 0 ? 2 : 1;
}

static int pick_value_types(struct dec *d)
{
	int best_count = 0, best_cpu = 0;

	d->idx_count = d->idx_cpu = -1;
	if (d->want >= 0) {
		if ((size_t)d->want >= d->m->sample_type.n)
			return fail(d->err, d->errlen, -EINVAL,
				    "the profile has %zu sample types, so none of index %d",
				    d->m->sample_type.n, d->want);
		d->idx_count = d->idx_cpu = d->want; /* both values are that one */
		return 0;
	}
	for (size_t i = 0; i < d->m->sample_type.n && i < INT32_MAX; i++) {
		int sc = type_score(d, i, "samples", "count");
		int sn = type_score(d, i, "cpu", "nanoseconds");

		if (sc > best_count) {
			best_count = sc;
			d->idx_count = (int)i;
		}
		if (sn > best_cpu) {
			best_cpu = sn;
			d->idx_cpu = (int)i;
		}
	}
	if (best_cpu < 2) /* no cpu/nanoseconds: an off-CPU or wall profile keeps its time */
		for (size_t i = 0; i < d->m->sample_type.n && i < INT32_MAX; i++) {
			const struct pprof_wire_vt *vt = &W(sample_type, struct pprof_wire_vt, i);

			if (profile_time_type(pprof_wire__str(d->m, (size_t)vt->type),
					      pprof_wire__str(d->m, (size_t)vt->unit))) {
				d->idx_count = d->idx_cpu = (int)i; /* as profile_flat__type */
				return 0;
			}
		}
	if (d->idx_count < 0 && d->idx_cpu < 0)
		return fail(d->err, d->errlen, -EINVAL,
			    "the profile has neither a samples/count nor a cpu/nanoseconds sample "
			    "type, so it is not a CPU profile");
	return 0;
}

static int check_all(struct dec *d)
{
	int err = check_header(d);

	if (!err)
		err = pick_value_types(d);
	if (!err)
		err = check_mappings(d);
	if (!err)
		err = check_functions(d);
	if (!err)
		err = check_locations(d);
	if (!err && !(d->locs = calloc(d->m->loc_ids.n ? d->m->loc_ids.n : 1, sizeof(*d->locs))))
		err = -ENOMEM;
	for (size_t i = 0; i < d->m->samples.n && !err; i++)
		err = check_sample(d, i, &W(samples, struct pprof_wire_sample, i));
	return err;
}

/* ---- flattening: wire ids to checked indices ---- */

static void *flat_alloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static const char *dec_str(const struct dec *d, int64_t sid)
{
	return pprof_wire__str(d->m, (size_t)sid); /* checked by check_all */
}

/* The model's [count, cpu ns] from a sample's values (see the file comment). */
static void sample_values(const struct dec *d, bool period_ns, const int64_t *in,
			  int64_t out[PROFILE_N_VALUES])
{
	int64_t period = d->m->period;

	if (d->idx_count >= 0)
		out[0] = in[d->idx_count];
	else
		out[0] = period > 0 && period_ns ? in[d->idx_cpu] / period : 0;
	if (d->idx_cpu >= 0)
		out[1] = in[d->idx_cpu];
	else
		out[1] = period_ns ? base_sat_mul(in[d->idx_count], period) : 0;
}

static void flatten_strings(const struct dec *d, struct profile_flat_box *b)
{
	const struct pprof_wire *m = d->m;

	for (size_t i = 0; i < m->strings.n; i++)
		b->str_off[i] = (uint32_t)W(strings, size_t, i);
	b->str_off[m->strings.n] = (uint32_t)m->str_len;
	for (size_t i = 0; i < m->comments.n; i++)
		b->comments[i] = (uint32_t)W(comments, int64_t, i);
}

static void flatten_symbols(const struct dec *d, struct profile_flat_box *b)
{
	const struct pprof_wire *m = d->m;
	size_t n_lines = 0;

	for (size_t i = 0; i < m->mappings.n; i++) {
		const struct pprof_wire_mapping *mp = &W(mappings, struct pprof_wire_mapping, i);

		b->mappings[i] =
		    (struct profile_flat_mapping){mp->start, mp->limit, mp->offset,
						  (uint32_t)mp->filename, (uint32_t)mp->build_id};
	}
	for (size_t i = 0; i < m->functions.n; i++) {
		const struct pprof_wire_function *fn = &W(functions, struct pprof_wire_function, i);

		b->functions[i] = (struct profile_flat_function){
		    (uint32_t)fn->name, (uint32_t)fn->system_name, (uint32_t)fn->filename};
	}
	for (size_t i = 0; i < m->locations.n; i++) {
		const struct pprof_wire_location *l = &W(locations, struct pprof_wire_location, i);
		struct profile_flat_location *o = &b->locations[i];

		o->address = l->address;
		o->mapping = l->mapping_id ? (uint32_t)find_map(d, l->mapping_id) + 1 : 0;
		o->line_off = (uint32_t)n_lines;
		for (size_t j = 0; j < l->n_line; j++) {
			const struct pprof_wire_line *ln =
			    &W(lines, struct pprof_wire_line, l->line_off + j);

			if (!ln->function_id) /* "no function": the model skips it */
				continue;
			b->lines[n_lines++] = (struct profile_flat_line){
			    (uint32_t)find_fn(d, ln->function_id), ln->line};
		}
		o->n_lines = (uint32_t)(n_lines - o->line_off);
	}
	b->f.n_lines = n_lines;
}

static void flatten_samples(const struct dec *d, struct profile_flat_box *b)
{
	const struct pprof_wire *m = d->m;
	bool period_ns =
	    m->has_period_type && strcmp(dec_str(d, m->period_type.unit), "nanoseconds") == 0;

	for (size_t i = 0; i < m->labels.n; i++) {
		const struct pprof_wire_label *l = &W(labels, struct pprof_wire_label, i);

		b->labels[i] =
		    (struct profile_flat_label){(uint32_t)l->key, (uint32_t)l->str, l->num};
	}
	for (size_t i = 0; i < m->samples.n; i++) {
		const struct pprof_wire_sample *s = &W(samples, struct pprof_wire_sample, i);
		struct profile_flat_sample *o = &b->samples[i];

		o->loc_off = (uint32_t)s->loc_off;
		o->n_locs = (uint32_t)s->n_loc;
		o->label_off = (uint32_t)s->label_off;
		o->n_labels = (uint32_t)s->n_label;
		sample_values(d, period_ns, &W(values, int64_t, s->val_off), o->values);
	}
}

/*
 * The checked message as a flat profile. Every flat element is no larger than
 * the parsed one it comes from, so this at most doubles the parse budget.
 */
static int flatten(struct dec *d, struct profile_flat_box *b)
{
	const struct pprof_wire *m = d->m;
	struct profile_flat *f = &b->f;
	size_t n_lines;

	b->str_off = flat_alloc(m->strings.n + 1, sizeof(*b->str_off));
	b->comments = flat_alloc(m->comments.n, sizeof(*b->comments));
	b->mappings = flat_alloc(m->mappings.n, sizeof(*b->mappings));
	b->functions = flat_alloc(m->functions.n, sizeof(*b->functions));
	b->locations = flat_alloc(m->locations.n, sizeof(*b->locations));
	b->lines = flat_alloc(m->lines.n, sizeof(*b->lines));
	b->samples = flat_alloc(m->samples.n, sizeof(*b->samples));
	b->locs = d->locs; /* found by check_sample */
	d->locs = NULL;
	b->labels = flat_alloc(m->labels.n, sizeof(*b->labels));
	b->sample_types = flat_alloc(m->sample_type.n, sizeof(*b->sample_types));
	if (!b->str_off || !b->comments || !b->mappings || !b->functions || !b->locations ||
	    !b->lines || !b->samples || !b->locs || !b->labels || !b->sample_types)
		return -ENOMEM;
	for (size_t i = 0; i < m->sample_type.n; i++) {
		const struct pprof_wire_vt *vt = &W(sample_type, struct pprof_wire_vt, i);

		b->sample_types[i] =
		    (struct profile_flat_value_type){(uint32_t)vt->type, (uint32_t)vt->unit};
	}
	flatten_strings(d, b);
	flatten_symbols(d, b);
	flatten_samples(d, b);
	n_lines = f->n_lines;
	*f = (struct profile_flat){
	    .time_ns = m->time_nanos,
	    .duration_ns = m->duration_nanos,
	    .period_ns = m->period,
	    .n_sample_types = m->sample_type.n,
	    .sample_types = b->sample_types,
	    .period_type = {m->has_period_type ? (uint32_t)m->period_type.type : 0,
			    m->has_period_type ? (uint32_t)m->period_type.unit : 0},
	    .n_strings = m->strings.n,
	    .n_mappings = m->mappings.n,
	    .n_functions = m->functions.n,
	    .n_locations = m->locations.n,
	    .n_lines = n_lines,
	    .n_samples = m->samples.n,
	    .n_labels = m->labels.n,
	    .n_comments = m->comments.n,
	    .str_buf = m->str_buf,
	    .str_off = b->str_off,
	    .mappings = b->mappings,
	    .functions = b->functions,
	    .locations = b->locations,
	    .lines = b->lines,
	    .samples = b->samples,
	    .locs = b->locs,
	    .labels = b->labels,
	    .comments = b->comments,
	};
	return 0;
}

/* Grows *arr by one element of elem bytes (n before); 0 or -ENOMEM. Not base_grow:
 * the flat profile's arrays are exact-sized (no capacity), grown once per cut. */
static int grow1(void *arr, size_t n, size_t elem)
{
	void *p = reallocarray(*(void **)arr, n + 1, elem); /* checks (n + 1) * elem */

	if (!p)
		return -ENOMEM;
	*(void **)arr = p;
	return 0;
}

/*
 * Cuts samples deeper than PROFILE_MAX_FRAMES (profile.h): their leaf-most
 * PROFILE_MAX_FRAMES - 1 locations stay, the last becomes one added location
 * of an added function named PROFILE_TRUNCATED_FRAME. The cut is in place
 * (locs is shared by the samples; the cut-off entries are just not referred
 * to any more). pprof itself has no depth limit: a 325-byte gzip held one
 * sample of 200,000 frames, which every consumer then had to walk.
 */
static int cut_deep_stacks(struct profile_flat_box *b)
{
	static const char marker[] = PROFILE_TRUNCATED_FRAME;
	struct profile_flat *f = &b->f;
	struct pprof_wire *m = &b->m;
	uint32_t sid = (uint32_t)f->n_strings, fid = (uint32_t)f->n_functions,
		 lid = (uint32_t)f->n_locations;
	bool deep = false;

	for (size_t i = 0; i < f->n_samples && !deep; i++)
		deep = b->samples[i].n_locs > PROFILE_MAX_FRAMES;
	if (!deep)
		return 0;
	if (grow1(&m->str_buf, m->str_len + sizeof(marker) - 1, 1) ||
	    grow1(&b->str_off, f->n_strings + 1, sizeof(*b->str_off)) ||
	    grow1(&b->functions, f->n_functions, sizeof(*b->functions)) ||
	    grow1(&b->lines, f->n_lines, sizeof(*b->lines)) ||
	    grow1(&b->locations, f->n_locations, sizeof(*b->locations)))
		return -ENOMEM;
	memcpy(m->str_buf + m->str_len, marker, sizeof(marker));
	m->str_len += sizeof(marker);
	m->str_cap = m->str_len;
	b->str_off[sid + 1] = (uint32_t)m->str_len;
	b->functions[fid] = (struct profile_flat_function){sid, sid, 0};
	b->lines[f->n_lines] = (struct profile_flat_line){fid, 0};
	b->locations[lid] = (struct profile_flat_location){0, 0, (uint32_t)f->n_lines, 1};
	for (size_t i = 0; i < f->n_samples; i++) {
		struct profile_flat_sample *s = &b->samples[i];

		if (s->n_locs <= PROFILE_MAX_FRAMES)
			continue;
		s->n_locs = PROFILE_MAX_FRAMES;
		b->locs[s->loc_off + PROFILE_MAX_FRAMES - 1] = lid;
	}
	f->str_buf = m->str_buf;
	f->str_off = b->str_off;
	f->functions = b->functions;
	f->lines = b->lines;
	f->locations = b->locations;
	f->n_strings++, f->n_functions++, f->n_lines++, f->n_locations++;
	return 0;
}

void profile_flat__free(struct profile_flat *f)
{
	struct profile_flat_box *b = (struct profile_flat_box *)f;

	if (!b)
		return;
	pprof_wire__fini(&b->m);
	free(b->str_off);
	free(b->comments);
	free(b->mappings);
	free(b->functions);
	free(b->locations);
	free(b->lines);
	free(b->samples);
	free(b->locs);
	free(b->labels);
	free(b->sample_types);
	free(b);
}

static void dec_fini(struct dec *d)
{
	free(d->map_ix);
	free(d->fn_ix);
	free(d->loc_ix);
	free(d->locs);
}

int pprof_decode_flat_value(const uint8_t *buf, size_t len, size_t budget, int value_index,
			    struct profile_flat **out, char *err, size_t errlen)
{
	static const uint8_t empty[1];
	struct profile_flat_box *b = calloc(1, sizeof(*b));
	struct dec d = {.err = err, .errlen = errlen, .want = value_index < 0 ? -1 : value_index};
	uint8_t *raw = NULL;
	size_t raw_len = len;
	/* Half the budget each: the inflated bytes live beside the parsed arrays until the
	 * parse ends, and flattening copies the parsed arrays once (see flatten). */
	size_t max_inflated = PPROF_MAX_INFLATED, max_parsed = SIZE_MAX;
	int r = b ? 0 : -ENOMEM;

	if (budget) {
		max_inflated = budget / 2 < max_inflated ? budget / 2 : max_inflated;
		max_parsed = budget / 2;
	}
	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!buf)
		buf = empty, len = raw_len = 0;
	if (!r && is_gzip(buf, len))
		r = gunzip(buf, len, max_inflated, &raw, &raw_len, err, errlen);
	if (!r) {
		d.m = &b->m;
		r = parse(raw ? raw : buf, raw_len, max_parsed, &b->m, err, errlen);
		free(raw); /* the parsed arrays hold copies of the strings */
		raw = NULL;
		r = r ?: check_all(&d) ?: flatten(&d, b) ?: cut_deep_stacks(b);
	}
	if (r == -ENOMEM && err && errlen && !err[0])
		fail(err, errlen, r, "out of memory while decoding the profile");
	dec_fini(&d);
	free(raw);
	if (r)
		profile_flat__free(b ? &b->f : NULL);
	else
		*out = &b->f;
	return r;
}

int pprof_decode_flat_budget(const uint8_t *buf, size_t len, size_t budget,
			     struct profile_flat **out, char *err, size_t errlen)
{
	return pprof_decode_flat_value(buf, len, budget, -1, out, err, errlen);
}

int pprof_decode_flat(const uint8_t *buf, size_t len, struct profile_flat **out, char *err,
		      size_t errlen)
{
	return pprof_decode_flat_budget(buf, len, 0, out, err, errlen);
}

int pprof_decode(const uint8_t *buf, size_t len, struct profile **out, char *err, size_t errlen)
{
	struct profile_flat *f = NULL;
	int r = pprof_decode_flat(buf, len, &f, err, errlen);

	*out = NULL;
	if (!r)
		r = profile__from_flat(f, out);
	if (r == -ENOMEM && err && errlen && !err[0])
		fail(err, errlen, r, "out of memory while decoding the profile");
	profile_flat__free(f);
	return r;
}
