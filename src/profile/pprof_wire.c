/*
 * profile.proto off the wire (protobuf encoding: developers.google.com/protocol-
 * buffers/docs/encoding): tags and varints, length-delimited submessages,
 * repeated scalars packed or not, unknown fields skipped. One pass over the
 * buffer, each kind of element appended to its own array, so a 60,000-
 * sample profile costs a dozen allocations instead of one per message.
 *
 * The input comes from outside: every read is bounds-checked against the end of
 * its enclosing message, and the arrays grow under a byte budget (a 2-byte empty
 * sample costs a 48-byte record: a small body must not take gigabytes).
 */
#include "pprof_wire.h"
#include "base/base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The wire itself (tags, varints, lengths, skips) is base_pb's. */
enum { WT_VARINT = BASE_PB_VARINT, WT_LEN = BASE_PB_LEN };

/* A singular integer field (last one wins, as protobuf says). */
static int rd_int(struct base_pb *r, unsigned wt, uint64_t *out)
{
	return wt == WT_VARINT ? base_pb__varint(r, out) : -EINVAL;
}

/* ---- arrays on a budget ---- */

/* Every byte of growth is charged to the decode's byte budget, which the caller
 * sets from the request: what the budget has left is the arrays' ceiling (-EFBIG
 * past it, not -ENOMEM). */

static inline int arr_room(struct pprof_wire *w, struct pprof_wire_arr *a, size_t elem, size_t more)
{
	size_t need, old = a->cap;
	int err;

	if (__builtin_add_overflow(a->n, more, &need))
		return -EFBIG;
	if (need <= a->cap) /* the common case, kept inline: one call per element */
		return 0;
	err = base_grow_max(&a->v, &a->cap, need, elem, a->cap + (w->limit - w->used) / elem);
	if (err)
		return err == -E2BIG ? -EFBIG : err;
	w->used += (a->cap - old) * elem;
	return 0;
}

/* Appends one zeroed element; returns it or NULL (*err set). */
static inline void *arr_push(struct pprof_wire *w, struct pprof_wire_arr *a, size_t elem, int *err)
{
	void *e;

	*err = arr_room(w, a, elem, 1);
	if (*err)
		return NULL;
	e = (char *)a->v + a->n++ * elem;
	memset(e, 0, elem);
	return e;
}

/* A repeated integer field, packed (WT_LEN) or one value (WT_VARINT), into a. */
static int rd_repeated(struct pprof_wire *w, struct base_pb *r, unsigned wt,
		       struct pprof_wire_arr *a)
{
	struct base_pb vals;
	uint64_t *v;
	size_t n;
	int err = base_pb__repeated(r, wt, WT_VARINT, &vals, &n);

	if (err)
		return -EINVAL; /* -EPROTO (another wire type) included */
	err = arr_room(w, a, sizeof(*v), n);
	if (err || !n) /* an empty packed field: a->v may still be NULL */
		return err;
	v = (uint64_t *)a->v + a->n;
	for (size_t i = 0; i < n; i++) {
		err = base_pb__varint(&vals, &v[i]);
		if (err)
			return err;
	}
	a->n += n;
	return 0;
}

/* ---- messages ---- */

static int parse_vt(struct base_pb *r, unsigned wt, struct pprof_wire_vt *vt)
{
	struct base_pb m;
	uint32_t f;
	unsigned t;
	int err = wt == WT_LEN ? base_pb__len(r, &m) : -EINVAL;

	while (!err && (err = base_pb__next(&m, &f, &t)) > 0)
		err = f == 1   ? rd_int(&m, t, (uint64_t *)&vt->type)
		      : f == 2 ? rd_int(&m, t, (uint64_t *)&vt->unit)
			       : base_pb__skip(&m, t);
	return err;
}

static int parse_label(struct pprof_wire *w, struct base_pb *r, unsigned wt)
{
	struct pprof_wire_label *l;
	struct base_pb m;
	uint32_t f;
	unsigned t;
	int err = wt == WT_LEN ? base_pb__len(r, &m) : -EINVAL;

	if (err || !(l = arr_push(w, &w->labels, sizeof(*l), &err)))
		return err;
	while (!err && (err = base_pb__next(&m, &f, &t)) > 0) {
		int64_t *dst = f == 1	? &l->key
			       : f == 2 ? &l->str
			       : f == 3 ? &l->num
			       : f == 4 ? &l->num_unit
					: NULL;
		err = dst ? rd_int(&m, t, (uint64_t *)dst) : base_pb__skip(&m, t);
	}
	return err;
}

/* Sample: 1 location_id (packed uint64), 2 value (packed int64), 3 label. Its
 * elements must be contiguous in those arrays, and they are: a sample is
 * parsed whole before the next one starts. */
static int parse_sample(struct pprof_wire *w, struct base_pb *m)
{
	struct pprof_wire_sample s = {
	    .loc_off = w->loc_ids.n, .val_off = w->values.n, .label_off = w->labels.n};
	struct pprof_wire_sample *out;
	uint32_t f;
	unsigned t;
	int err;

	while ((err = base_pb__next(m, &f, &t)) > 0) {
		err = f == 1   ? rd_repeated(w, m, t, &w->loc_ids)
		      : f == 2 ? rd_repeated(w, m, t, &w->values)
		      : f == 3 ? parse_label(w, m, t)
			       : base_pb__skip(m, t);
		if (err)
			return err;
	}
	if (err)
		return err;
	s.n_loc = w->loc_ids.n - s.loc_off;
	s.n_val = w->values.n - s.val_off;
	s.n_label = w->labels.n - s.label_off;
	out = arr_push(w, &w->samples, sizeof(*out), &err);
	if (out)
		*out = s;
	return err;
}

static int parse_mapping(struct pprof_wire *w, struct base_pb *m)
{
	struct pprof_wire_mapping *mp;
	uint32_t f;
	unsigned t;
	int err;

	if (!(mp = arr_push(w, &w->mappings, sizeof(*mp), &err)))
		return err;
	while (!err && (err = base_pb__next(m, &f, &t)) > 0) {
		void *dst = f == 1   ? (void *)&mp->id
			    : f == 2 ? (void *)&mp->start
			    : f == 3 ? (void *)&mp->limit
			    : f == 4 ? (void *)&mp->offset
			    : f == 5 ? (void *)&mp->filename
			    : f == 6 ? (void *)&mp->build_id
				     : NULL;
		err = dst ? rd_int(m, t, dst) : base_pb__skip(m, t);
	}
	return err;
}

static int parse_line(struct pprof_wire *w, struct base_pb *r, unsigned wt)
{
	struct pprof_wire_line *l;
	struct base_pb m;
	uint32_t f;
	unsigned t;
	int err = wt == WT_LEN ? base_pb__len(r, &m) : -EINVAL;

	if (err || !(l = arr_push(w, &w->lines, sizeof(*l), &err)))
		return err;
	while (!err && (err = base_pb__next(&m, &f, &t)) > 0)
		err = f == 1   ? rd_int(&m, t, &l->function_id)
		      : f == 2 ? rd_int(&m, t, (uint64_t *)&l->line)
			       : base_pb__skip(&m, t);
	return err;
}

/* Location: 1 id, 2 mapping_id, 3 address, 4 line (repeated Line). */
static int parse_location(struct pprof_wire *w, struct base_pb *m)
{
	struct pprof_wire_location l = {.line_off = w->lines.n}, *out;
	uint32_t f;
	unsigned t;
	int err;

	while ((err = base_pb__next(m, &f, &t)) > 0) {
		err = f == 1   ? rd_int(m, t, &l.id)
		      : f == 2 ? rd_int(m, t, &l.mapping_id)
		      : f == 3 ? rd_int(m, t, &l.address)
		      : f == 4 ? parse_line(w, m, t)
			       : base_pb__skip(m, t);
		if (err)
			return err;
	}
	if (err)
		return err;
	l.n_line = w->lines.n - l.line_off;
	out = arr_push(w, &w->locations, sizeof(*out), &err);
	if (out)
		*out = l;
	return err;
}

static int parse_function(struct pprof_wire *w, struct base_pb *m)
{
	struct pprof_wire_function *fn;
	uint32_t f;
	unsigned t;
	int err;

	if (!(fn = arr_push(w, &w->functions, sizeof(*fn), &err)))
		return err;
	while (!err && (err = base_pb__next(m, &f, &t)) > 0) {
		void *dst = f == 1   ? (void *)&fn->id
			    : f == 2 ? (void *)&fn->name
			    : f == 3 ? (void *)&fn->system_name
			    : f == 4 ? (void *)&fn->filename
				     : NULL;
		err = dst ? rd_int(m, t, dst) : base_pb__skip(m, t);
	}
	return err;
}

/* A string of the table, copied with a NUL (the offset goes to w->strings). */
static int add_string(struct pprof_wire *w, const struct base_pb *m)
{
	size_t n = (size_t)(m->end - m->p), *off, old = w->str_cap;
	const uint8_t *nul = memchr(m->p, 0, n);
	int err;

	n = nul ? (size_t)(nul - m->p) : n; /* a C string ends at its first NUL */
	err = w->str_len + n + 1 <= w->str_cap
		  ? 0
		  : base_grow_max((void **)&w->str_buf, &w->str_cap, w->str_len + n + 1, 1,
				  w->str_cap + (w->limit - w->used));
	if (err)
		return err == -E2BIG ? -EFBIG : err;
	w->used += w->str_cap - old;
	off = arr_push(w, &w->strings, sizeof(*off), &err);
	if (!off)
		return err;
	*off = w->str_len;
	memcpy(w->str_buf + w->str_len, m->p, n);
	w->str_buf[w->str_len + n] = 0;
	w->str_len += n + 1;
	return 0;
}

/* A repeated submessage field of Profile. */
static int profile_msg_field(struct pprof_wire *w, struct base_pb *r, uint32_t f, unsigned wt)
{
	struct base_pb m;
	int err = wt == WT_LEN ? base_pb__len(r, &m) : -EINVAL;

	if (err)
		return err;
	switch (f) {
	case 2:
		return parse_sample(w, &m);
	case 3:
		return parse_mapping(w, &m);
	case 4:
		return parse_location(w, &m);
	case 5:
		return parse_function(w, &m);
	default: /* 6 */
		return add_string(w, &m);
	}
}

static int profile_field(struct pprof_wire *w, struct base_pb *r, uint32_t f, unsigned wt)
{
	int err;

	switch (f) {
	case 1: {
		struct pprof_wire_vt *vt = arr_push(w, &w->sample_type, sizeof(*vt), &err);

		return vt ? parse_vt(r, wt, vt) : err;
	}
	case 2:
	case 3:
	case 4:
	case 5:
	case 6:
		return profile_msg_field(w, r, f, wt);
	case 7:
		return rd_int(r, wt, (uint64_t *)&w->drop_frames);
	case 8:
		return rd_int(r, wt, (uint64_t *)&w->keep_frames);
	case 9:
		return rd_int(r, wt, (uint64_t *)&w->time_nanos);
	case 10:
		return rd_int(r, wt, (uint64_t *)&w->duration_nanos);
	case 11:
		w->has_period_type = true; /* a repeated message field merges */
		return parse_vt(r, wt, &w->period_type);
	case 12:
		return rd_int(r, wt, (uint64_t *)&w->period);
	case 13:
		return rd_repeated(w, r, wt, &w->comments);
	case 14:
		return rd_int(r, wt, (uint64_t *)&w->default_sample_type);
	default:
		return base_pb__skip(r, wt);
	}
}

int pprof_wire__parse(struct pprof_wire *w, const uint8_t *buf, size_t len, size_t limit)
{
	struct base_pb r = {buf, buf + len};
	uint32_t f;
	unsigned wt;
	int err;

	w->limit = limit;
	while ((err = base_pb__next(&r, &f, &wt)) > 0) {
		err = profile_field(w, &r, f, wt);
		if (err)
			return err;
	}
	return err;
}

void pprof_wire__fini(struct pprof_wire *w)
{
	struct pprof_wire_arr *arrs[] = {&w->sample_type, &w->samples, &w->mappings, &w->locations,
					 &w->functions,	  &w->strings, &w->comments, &w->loc_ids,
					 &w->values,	  &w->labels,  &w->lines};

	for (size_t i = 0; i < sizeof(arrs) / sizeof(arrs[0]); i++)
		free(arrs[i]->v);
	free(w->str_buf);
	memset(w, 0, sizeof(*w));
}

const char *pprof_wire__str(const struct pprof_wire *w, size_t i)
{
	return w->str_buf + ((const size_t *)w->strings.v)[i];
}
