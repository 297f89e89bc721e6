/*
 * OTLP profiles, binary: an ExportProfilesServiceRequest read straight off the
 * protobuf wire into the flat tables of struct otlp_msg (otlp_impl.h), for
 * otlp_decode.c. Field numbers are opentelemetry-proto v1.10's (proto/otlp/).
 *
 * It must survive any input: every length is checked against the bytes left,
 * nesting is fixed by the schema (no recursion on the input's say), and the
 * tables grow on the caller's byte budget (-EFBIG past it). Fields of a known
 * number but of another wire type than v1.10's are what an earlier layout of
 * the same messages looks like (the pre-dictionary Profile kept its tables in
 * fields 3-10): those are refused with -EPROTO and a message naming the field,
 * rather than read as something they are not. Unknown fields are skipped, as
 * protobuf readers do.
 */
#include "otlp_impl.h"
#include "base/base.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The wire itself (tags, varints, lengths, skips) is base_pb's. */
enum { WT_VARINT = BASE_PB_VARINT, WT_I64 = BASE_PB_I64, WT_LEN = BASE_PB_LEN };

/* ---- the decoder's state ---- */

struct wr {
	struct otlp_msg *m;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 3, 4))) static int wfail(struct wr *w, int code, const char *fmt, ...)
{
	va_list ap;

	if (w->err && w->errlen) {
		va_start(ap, fmt);
		vsnprintf(w->err, w->errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* A field of a known number with another wire type: an earlier layout. */
static int wrong_type(struct wr *w, const char *msg, uint32_t field)
{
	return wfail(w, -EPROTO, "%s field %" PRIu32 " has another wire type than in %s", msg,
		     field, OTLP_LAYOUT);
}

static int malformed(struct wr *w, const char *msg)
{
	return wfail(w, -EINVAL, "%s: not a valid protobuf message (truncated or corrupt)", msg);
}

/* Appends the values of a repeated scalar (packed or not) to an int64 array. */
static int read_ints(struct wr *w, struct base_pb *b, unsigned wt, struct otlp_arr *a, bool fixed,
		     const char *msg, uint32_t field)
{
	struct base_pb vals;
	uint64_t v;
	size_t n;
	int err = base_pb__repeated(b, wt, fixed ? WT_I64 : WT_VARINT, &vals, &n);

	if (err == -EPROTO)
		return wrong_type(w, msg, field);
	if (err)
		return malformed(w, msg);
	for (size_t i = 0; i < n; i++) {
		if (fixed ? base_pb__fixed64(&vals, &v) : base_pb__varint(&vals, &v))
			return malformed(w, msg);
		if ((err = otlp_push_i64(w->m, a, (int64_t)v)))
			return err;
	}
	return 0;
}

/* One scalar field of wire type want into *v. */
static int read_scalar(struct wr *w, struct base_pb *b, unsigned wt, unsigned want, uint64_t *v,
		       const char *msg, uint32_t field)
{
	if (wt != want)
		return wrong_type(w, msg, field);
	if (want == WT_I64 ? base_pb__fixed64(b, v) : base_pb__varint(b, v))
		return malformed(w, msg);
	return 0;
}

static int read_sub(struct wr *w, struct base_pb *b, unsigned wt, struct base_pb *sub,
		    const char *msg, uint32_t field)
{
	if (wt != WT_LEN)
		return wrong_type(w, msg, field);
	if (base_pb__len(b, sub))
		return malformed(w, msg);
	return 0;
}

/* Reads a message's fields with fn(w, sub, field, wt, arg) for the known ones. */
typedef int (*field_fn)(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg);

static int read_msg(struct wr *w, struct base_pb *b, field_fn fn, void *arg, const char *msg)
{
	uint32_t field;
	unsigned wt;
	int r;

	while ((r = base_pb__next(b, &field, &wt)) > 0) {
		r = fn(w, b, field, wt, arg);
		if (r == 1) /* not a field fn knows */
			r = base_pb__skip(b, wt) ? malformed(w, msg) : 0;
		if (r)
			return r;
	}
	return r < 0 ? malformed(w, msg) : 0;
}

/* ---- AnyValue, KeyValue ---- */

static int f_any(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	struct otlp_value *v = arg;
	struct base_pb sub;
	uint64_t u;
	int err;

	switch (field) {
	case 1: /* string_value */
		if ((err = read_sub(w, b, wt, &sub, "AnyValue", field)))
			return err;
		v->kind = OTLP_VAL_STR;
		return otlp_push_str(w->m, (const char *)sub.p, (size_t)(sub.end - sub.p), &v->str);
	case 2: /* bool_value */
	case 3: /* int_value */
	case 8: /* string_value_strindex */
		if ((err = read_scalar(w, b, wt, WT_VARINT, &u, "AnyValue", field)))
			return err;
		v->kind = field == 2   ? OTLP_VAL_BOOL
			  : field == 3 ? OTLP_VAL_INT
				       : OTLP_VAL_STRINDEX;
		v->num = (int64_t)u;
		return 0;
	case 4: /* double_value */
		if ((err = read_scalar(w, b, wt, WT_I64, &u, "AnyValue", field)))
			return err;
		v->kind = OTLP_VAL_DOUBLE;
		memcpy(&v->dbl, &u, sizeof(u));
		return 0;
	default: /* arrays, key-value lists, bytes: not a label value */
		return 1;
	}
}

static int read_any(struct wr *w, struct base_pb *b, unsigned wt, struct otlp_value *v,
		    uint32_t field, const char *msg)
{
	struct base_pb sub;
	int err = read_sub(w, b, wt, &sub, msg, field);

	return err ? err : read_msg(w, &sub, f_any, v, "AnyValue");
}

static int f_keyvalue(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	struct otlp_attr *a = arg;
	struct base_pb sub;
	int err;

	if (field == 1) {
		if ((err = read_sub(w, b, wt, &sub, "KeyValue", field)))
			return err;
		return otlp_push_str(w->m, (const char *)sub.p, (size_t)(sub.end - sub.p), &a->key);
	}
	if (field == 2)
		return read_any(w, b, wt, &a->value, field, "KeyValue");
	return 1;
}

/* ---- the dictionary ---- */

static int f_mapping(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	struct otlp_mapping *m = arg;
	uint64_t v;
	int err;

	if (field == 5) { /* attribute_indices */
		size_t before = w->m->ints.n;

		if ((err = read_ints(w, b, wt, &w->m->ints, false, "Mapping", field)))
			return err;
		m->n_attrs += (uint32_t)(w->m->ints.n - before);
		return 0;
	}
	if (field < 1 || field > 4)
		return 1;
	if ((err = read_scalar(w, b, wt, WT_VARINT, &v, "Mapping", field)))
		return err;
	if (field == 1)
		m->start = v;
	else if (field == 2)
		m->limit = v;
	else if (field == 3)
		m->offset = v;
	else
		m->filename = (int64_t)v;
	return 0;
}

static int f_line(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	struct otlp_line *l = arg;
	uint64_t v;
	int err;

	if (field != 1 && field != 2)
		return 1;
	if ((err = read_scalar(w, b, wt, WT_VARINT, &v, "Line", field)))
		return err;
	if (field == 1)
		l->function = (int64_t)v;
	else
		l->line = (int64_t)v;
	return 0;
}

static int f_location(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	struct otlp_location *l = arg;
	struct otlp_line *line;
	struct base_pb sub;
	uint64_t v;
	int err;

	switch (field) {
	case 1:
	case 2:
		if ((err = read_scalar(w, b, wt, WT_VARINT, &v, "Location", field)))
			return err;
		if (field == 1)
			l->mapping = (int64_t)v;
		else
			l->address = v;
		return 0;
	case 3:
		if ((err = read_sub(w, b, wt, &sub, "Location", field)))
			return err;
		if (!(line = otlp_push(w->m, &w->m->lines, sizeof(*line))))
			return -EFBIG;
		l->n_lines++;
		return read_msg(w, &sub, f_line, line, "Line");
	default:
		return 1;
	}
}

static int f_function(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	struct otlp_function *f = arg;
	uint64_t v;
	int err;

	if (field < 1 || field > 3)
		return 1;
	if ((err = read_scalar(w, b, wt, WT_VARINT, &v, "Function", field)))
		return err;
	f->sid[field - 1] = (int64_t)v;
	return 0;
}

static int f_kvu(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	struct otlp_attr *a = arg;
	uint64_t v;
	int err;

	if (field == 1) { /* key_strindex; a string here is v1.7's KeyValue */
		if ((err = read_scalar(w, b, wt, WT_VARINT, &v, "attribute_table entry", field)))
			return err;
		a->key_sid = (int64_t)v;
		return 0;
	}
	if (field == 2)
		return read_any(w, b, wt, &a->value, field, "KeyValueAndUnit");
	return 1;
}

static int f_stack(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	struct otlp_stack *s = arg;
	size_t before = w->m->ints.n;
	int err;

	if (field != 1)
		return 1;
	if ((err = read_ints(w, b, wt, &w->m->ints, false, "Stack", field)))
		return err;
	s->n_locs += (uint32_t)(w->m->ints.n - before);
	return 0;
}

/* One table entry: a new element of arr, filled by fn. */
static int dict_entry(struct wr *w, struct base_pb *b, unsigned wt, uint32_t field,
		      struct otlp_arr *arr, size_t elem, field_fn fn, const char *msg)
{
	struct base_pb sub;
	void *e;
	int err = read_sub(w, b, wt, &sub, "ProfilesDictionary", field);

	if (err)
		return err;
	if (!(e = otlp_push(w->m, arr, elem)))
		return -EFBIG;
	return read_msg(w, &sub, fn, e, msg);
}

static int f_dict(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	struct otlp_msg *m = w->m;
	struct base_pb sub;
	size_t off = m->ints.n, loff = m->lines.n;
	int err;

	(void)arg;
	switch (field) {
	case 1:
		err = dict_entry(w, b, wt, field, &m->mappings, sizeof(struct otlp_mapping),
				 f_mapping, "Mapping");
		if (!err)
			OTLP_LAST(m->mappings, struct otlp_mapping).attr_off = off;
		return err;
	case 2:
		err = dict_entry(w, b, wt, field, &m->locations, sizeof(struct otlp_location),
				 f_location, "Location");
		if (!err)
			OTLP_LAST(m->locations, struct otlp_location).line_off = loff;
		return err;
	case 3:
		return dict_entry(w, b, wt, field, &m->functions, sizeof(struct otlp_function),
				  f_function, "Function");
	case 5:
		if ((err = read_sub(w, b, wt, &sub, "ProfilesDictionary", field)))
			return err;
		return otlp_push_table_str(m, (const char *)sub.p, (size_t)(sub.end - sub.p));
	case 6:
		return dict_entry(w, b, wt, field, &m->attrs, sizeof(struct otlp_attr), f_kvu,
				  "KeyValueAndUnit");
	case 7:
		err = dict_entry(w, b, wt, field, &m->stacks, sizeof(struct otlp_stack), f_stack,
				 "Stack");
		if (!err)
			OTLP_LAST(m->stacks, struct otlp_stack).loc_off = off;
		return err;
	default: /* 4: links (trace context is not kept) */
		return 1;
	}
}

/* ---- resources, scopes, profiles, samples ---- */

static int f_value_type(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	int64_t *vt = arg;
	uint64_t v;
	int err;

	if (field != 1 && field != 2)
		return 1;
	if ((err = read_scalar(w, b, wt, WT_VARINT, &v, "ValueType", field)))
		return err;
	vt[field - 1] = (int64_t)v;
	return 0;
}

static int f_sample(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	struct otlp_sample *s = arg;
	struct otlp_msg *m = w->m;
	size_t before;
	uint64_t v;
	int err;

	switch (field) {
	case 1:
	case 3: /* link_index: not kept, but its wire type tells v1.8's attribute_indices */
		if ((err = read_scalar(w, b, wt, WT_VARINT, &v, "Sample", field)))
			return err;
		if (field == 1)
			s->stack = (int64_t)v;
		return 0;
	case 2:
		before = m->ints.n;
		if ((err = read_ints(w, b, wt, &m->ints, false, "Sample", field)))
			return err;
		if (!s->n_attrs)
			s->attr_off = before;
		s->n_attrs += (uint32_t)(m->ints.n - before);
		return 0;
	case 4:
		before = m->values.n;
		if ((err = read_ints(w, b, wt, &m->values, false, "Sample", field)))
			return err;
		if (!s->n_values)
			s->value_off = before;
		s->n_values += (uint32_t)(m->values.n - before);
		return 0;
	case 5: {
		struct otlp_arr *ts = &m->scratch;

		before = ts->n;
		if ((err = read_ints(w, b, wt, ts, true, "Sample", field)))
			return err;
		s->n_timestamps += ts->n - before;
		ts->n = before; /* only the count matters */
		return 0;
	}
	default:
		return 1;
	}
}

static int f_profile(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	struct otlp_profile *p = arg;
	struct otlp_msg *m = w->m;
	struct otlp_sample *s;
	struct base_pb sub;
	uint64_t v;
	size_t before;
	int err;

	switch (field) {
	case 1:
	case 5:
		if ((err = read_sub(w, b, wt, &sub, "Profile", field)))
			return err;
		if (field == 1 && p->has_sample_type++)
			return wfail(w, -EPROTO,
				     "a Profile has several sample types: in %s a Profile has one",
				     OTLP_LAYOUT);
		return read_msg(w, &sub, f_value_type, field == 1 ? p->sample_type : p->period_type,
				"ValueType");
	case 2:
		if ((err = read_sub(w, b, wt, &sub, "Profile", field)))
			return err;
		if (!(s = otlp_push(m, &m->samples, sizeof(*s))))
			return -EFBIG;
		p->n_samples++;
		return read_msg(w, &sub, f_sample, s, "Sample");
	case 3: /* time_unix_nano; earlier layouts had a table here */
	case 4:
	case 6:
		if ((err = read_scalar(w, b, wt, field == 3 ? WT_I64 : WT_VARINT, &v, "Profile",
				       field)))
			return err;
		if (field == 3)
			p->time_ns = v;
		else if (field == 4)
			p->duration_ns = v;
		else
			p->period = (int64_t)v;
		return 0;
	case 7: /* profile_id; a number here is v1.7's period */
		if ((err = read_sub(w, b, wt, &sub, "Profile", field)))
			return err;
		return 0;
	case 11:
		before = m->ints.n;
		if (p->n_attrs && p->attr_off + p->n_attrs != before)
			return wfail(w, -EINVAL,
				     "a Profile's attribute_indices are split around "
				     "its samples; send them in one packed field");
		if ((err = read_ints(w, b, wt, &m->ints, false, "Profile", field)))
			return err;
		if (!p->n_attrs)
			p->attr_off = before;
		p->n_attrs += (uint32_t)(m->ints.n - before);
		return 0;
	default:
		return 1;
	}
}

static int f_scope(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	struct otlp_msg *m = w->m;
	struct otlp_profile *p;
	struct base_pb sub;
	int err;

	(void)arg;
	if (field != 2)
		return 1;
	if ((err = read_sub(w, b, wt, &sub, "ScopeProfiles", field)))
		return err;
	if (!(p = otlp_push(m, &m->profiles, sizeof(*p))))
		return -EFBIG;
	p->resource = m->resources.n - 1;
	p->sample_off = m->samples.n;
	return read_msg(w, &sub, f_profile, p, "Profile");
}

static int f_resource(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	struct otlp_msg *m = w->m;
	struct otlp_attr *a;
	struct base_pb sub;
	int err;

	(void)arg;
	if (field != 1)
		return 1;
	if ((err = read_sub(w, b, wt, &sub, "Resource", field)))
		return err;
	if (!(a = otlp_push(m, &m->res_attrs, sizeof(*a))))
		return -EFBIG;
	a->key_sid = -1;
	OTLP_LAST(m->resources, struct otlp_resource).n_attrs++;
	return read_msg(w, &sub, f_keyvalue, a, "KeyValue");
}

static int f_resource_profiles(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt,
			       void *arg)
{
	struct base_pb sub;
	int err;

	(void)arg;
	if (field != 1 && field != 2)
		return 1;
	if ((err = read_sub(w, b, wt, &sub, "ResourceProfiles", field)))
		return err;
	if (field == 1)
		return read_msg(w, &sub, f_resource, NULL, "Resource");
	return read_msg(w, &sub, f_scope, NULL, "ScopeProfiles");
}

/* Pass 1 reads the dictionary (field 2), pass 2 the resources (field 1): a sender
 * may put them in either order, and the resources' attributes may name strings. */
static int f_request(struct wr *w, struct base_pb *b, uint32_t field, unsigned wt, void *arg)
{
	struct otlp_msg *m = w->m;
	int pass = *(int *)arg;
	struct otlp_resource *r;
	struct base_pb sub;
	int err;

	if (field != 1 && field != 2)
		return 1;
	if ((err = read_sub(w, b, wt, &sub, "ExportProfilesServiceRequest", field)))
		return err;
	if (field == 2 && pass == 1) {
		m->has_dictionary = true;
		return read_msg(w, &sub, f_dict, NULL, "ProfilesDictionary");
	}
	if (field == 1 && pass == 2) {
		if (!(r = otlp_push(m, &m->resources, sizeof(*r))))
			return -EFBIG;
		r->attr_off = m->res_attrs.n;
		return read_msg(w, &sub, f_resource_profiles, NULL, "ResourceProfiles");
	}
	return 0;
}

int otlp_wire__parse(struct otlp_msg *m, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	struct wr w = {m, err, errlen};
	int r = 0;

	for (int pass = 1; pass <= 2 && !r; pass++) {
		struct base_pb b = {buf, buf + len};

		r = read_msg(&w, &b, f_request, &pass, "ExportProfilesServiceRequest");
	}
	if (r == -EFBIG)
		wfail(&w, r, "the request needs more than %zu MiB of memory to unpack",
		      m->limit >> 20);
	return r;
}
