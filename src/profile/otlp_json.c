/*
 * OTLP profiles, JSON: an ExportProfilesServiceRequest in OTLP/JSON (the
 * protobuf JSON mapping with OTLP's rules: lowerCamelCase field names — the
 * proto names are accepted too —, 64-bit integers as strings or numbers, enums
 * as numbers) into struct otlp_msg, like otlp_wire.c does for the binary form.
 *
 * Parsed with json-c (Debian's libjson-c): strict mode, nesting bounded at
 * OTLP_JSON_DEPTH, the whole body one value. json-c's tree is on the byte budget:
 * base_json_cost prices it before json_tokener runs (up to 264 bytes per byte of
 * text), the price is charged to the budget while the tree lives, and the tables
 * read from it get what is left. Bytes fields (profile and trace ids) are not
 * read, so their encoding (base64, or hex for trace ids) does not matter here.
 */
#include "otlp_impl.h"
#include "base/base.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deepest nesting accepted: the schema needs 9 (request to a sample's values),
 * attribute values a few more. */
#define OTLP_JSON_DEPTH 24

struct jr {
	struct otlp_msg *m;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 3, 4))) static int jfail(struct jr *j, int code, const char *fmt, ...)
{
	va_list ap;

	if (j->err && j->errlen) {
		va_start(ap, fmt);
		vsnprintf(j->err, j->errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* Member camel (or its proto name snake) of object o; NULL when absent or null. */
static struct json_object *get(struct json_object *o, const char *camel, const char *snake)
{
	struct json_object *v = NULL;

	if (!json_object_object_get_ex(o, camel, &v) && snake)
		json_object_object_get_ex(o, snake, &v);
	return v;
}

static int want(struct jr *j, struct json_object *v, enum json_type t, const char *what)
{
	if (json_object_is_type(v, t))
		return 0;
	return jfail(j, -EINVAL, "%s is not a JSON %s", what,
		     t == json_type_array    ? "array"
		     : t == json_type_object ? "object"
					     : "string");
}

/* JSON value x as an integer: a number or a decimal string (int64 and uint64 fields). */
static int int_of(struct jr *j, struct json_object *x, const char *name, uint64_t *v,
		  bool is_signed)
{
	const char *s;
	char *end;

	if (json_object_is_type(x, json_type_int)) {
		int64_t i = json_object_get_int64(x);

		if (i < 0 && !is_signed)
			return jfail(j, -EINVAL, "'%s' is negative: %" PRId64, name, i);
		*v = i < 0 ? (uint64_t)i : json_object_get_uint64(x);
		return 0;
	}
	if (!json_object_is_type(x, json_type_string))
		return jfail(j, -EINVAL, "'%s' is not an integer (a number or a decimal string)",
			     name);
	s = json_object_get_string(x);
	errno = 0;
	*v = is_signed ? (uint64_t)strtoll(s, &end, 10) : strtoull(s, &end, 10);
	if (!*s || *end || errno || (!is_signed && *s == '-'))
		return jfail(j, -EINVAL, "'%s' is not an integer: \"%.64s\"", name, s);
	return 0;
}

/* Member camel (or snake) as an integer; 0 when absent. */
static int get_int(struct jr *j, struct json_object *o, const char *camel, const char *snake,
		   uint64_t *v, bool is_signed)
{
	struct json_object *x = get(o, camel, snake);

	*v = 0;
	return x ? int_of(j, x, camel, v, is_signed) : 0;
}

/* A repeated integer field (array of numbers or strings) appended to a. */
static int get_ints(struct jr *j, struct json_object *o, const char *camel, const char *snake,
		    struct otlp_arr *a, size_t *count)
{
	struct json_object *arr = get(o, camel, snake);
	size_t n;
	int err;

	*count = 0;
	if (!arr)
		return 0;
	if ((err = want(j, arr, json_type_array, camel)))
		return err;
	n = json_object_array_length(arr);
	for (size_t i = 0; i < n; i++) {
		uint64_t v;

		if ((err = int_of(j, json_object_array_get_idx(arr, i), camel, &v, true)) ||
		    (err = otlp_push_i64(j->m, a, (int64_t)v)))
			return err;
	}
	*count = n;
	return 0;
}

static int get_str(struct jr *j, struct json_object *o, const char *camel, const char *snake,
		   size_t *off, bool *has)
{
	struct json_object *x = get(o, camel, snake);
	int err;

	if (has)
		*has = x != NULL;
	if (!x)
		return otlp_push_str(j->m, "", 0, off);
	if ((err = want(j, x, json_type_string, camel)))
		return err;
	return otlp_push_str(j->m, json_object_get_string(x), (size_t)json_object_get_string_len(x),
			     off);
}

static int any_value(struct jr *j, struct json_object *o, struct otlp_value *v)
{
	struct json_object *x;
	uint64_t u;
	int err;

	if (!o)
		return 0;
	if ((err = want(j, o, json_type_object, "an AnyValue")))
		return err;
	if (get(o, "stringValue", "string_value")) {
		v->kind = OTLP_VAL_STR;
		return get_str(j, o, "stringValue", "string_value", &v->str, NULL);
	}
	if ((x = get(o, "boolValue", "bool_value"))) {
		v->kind = OTLP_VAL_BOOL;
		v->num = json_object_get_boolean(x);
		return 0;
	}
	if (get(o, "intValue", "int_value") ||
	    get(o, "stringValueStrindex", "string_value_strindex")) {
		bool idx = !get(o, "intValue", "int_value");

		v->kind = idx ? OTLP_VAL_STRINDEX : OTLP_VAL_INT;
		err = idx ? get_int(j, o, "stringValueStrindex", "string_value_strindex", &u, true)
			  : get_int(j, o, "intValue", "int_value", &u, true);
		v->num = (int64_t)u;
		return err;
	}
	if ((x = get(o, "doubleValue", "double_value"))) {
		v->kind = OTLP_VAL_DOUBLE;
		v->dbl = json_object_get_double(x);
	}
	return 0;
}

/* Each element of array member camel, an object, through fn. */
typedef int (*elem_fn)(struct jr *j, struct json_object *o, void *arg);

static int each(struct jr *j, struct json_object *o, const char *camel, const char *snake,
		elem_fn fn, void *arg)
{
	struct json_object *arr = get(o, camel, snake);
	size_t n;
	int err;

	if (!arr)
		return 0;
	if ((err = want(j, arr, json_type_array, camel)))
		return err;
	n = json_object_array_length(arr);
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);

		if ((err = want(j, e, json_type_object, camel)) || (err = fn(j, e, arg)))
			return err;
	}
	return 0;
}

/* ---- the dictionary ---- */

static int e_mapping(struct jr *j, struct json_object *o, void *arg)
{
	struct otlp_msg *m = j->m;
	struct otlp_mapping *mp = otlp_push(m, &m->mappings, sizeof(*mp));
	size_t n;
	uint64_t fn;
	int err;

	(void)arg;
	if (!mp)
		return -EFBIG;
	mp->attr_off = m->ints.n;
	if ((err = get_int(j, o, "memoryStart", "memory_start", &mp->start, false)) ||
	    (err = get_int(j, o, "memoryLimit", "memory_limit", &mp->limit, false)) ||
	    (err = get_int(j, o, "fileOffset", "file_offset", &mp->offset, false)) ||
	    (err = get_int(j, o, "filenameStrindex", "filename_strindex", &fn, true)) ||
	    (err = get_ints(j, o, "attributeIndices", "attribute_indices", &m->ints, &n)))
		return err;
	mp->filename = (int64_t)fn;
	mp->n_attrs = (uint32_t)n;
	return 0;
}

static int e_line(struct jr *j, struct json_object *o, void *arg)
{
	struct otlp_msg *m = j->m;
	struct otlp_line *l = otlp_push(m, &m->lines, sizeof(*l));
	uint64_t f, line;
	int err;

	if (!l)
		return -EFBIG;
	++((struct otlp_location *)arg)->n_lines;
	if ((err = get_int(j, o, "functionIndex", "function_index", &f, true)) ||
	    (err = get_int(j, o, "line", NULL, &line, true)))
		return err;
	l->function = (int64_t)f;
	l->line = (int64_t)line;
	return 0;
}

static int e_location(struct jr *j, struct json_object *o, void *arg)
{
	struct otlp_msg *m = j->m;
	struct otlp_location *l = otlp_push(m, &m->locations, sizeof(*l));
	size_t i = m->locations.n - 1;
	uint64_t mi;
	int err;

	(void)arg;
	if (!l)
		return -EFBIG;
	l->line_off = m->lines.n;
	if ((err = get_int(j, o, "mappingIndex", "mapping_index", &mi, true)) ||
	    (err = get_int(j, o, "address", NULL, &l->address, false)))
		return err;
	l->mapping = (int64_t)mi;
	/* lines may grow m->locations' neighbours, never m->locations itself */
	return each(j, o, "lines", NULL, e_line, &OTLP_AT(m->locations, struct otlp_location, i));
}

static int e_function(struct jr *j, struct json_object *o, void *arg)
{
	struct otlp_msg *m = j->m;
	struct otlp_function *f = otlp_push(m, &m->functions, sizeof(*f));
	static const char *const names[3][2] = {{"nameStrindex", "name_strindex"},
						{"systemNameStrindex", "system_name_strindex"},
						{"filenameStrindex", "filename_strindex"}};
	uint64_t v;
	int err;

	(void)arg;
	if (!f)
		return -EFBIG;
	for (int k = 0; k < 3; k++) {
		if ((err = get_int(j, o, names[k][0], names[k][1], &v, true)))
			return err;
		f->sid[k] = (int64_t)v;
	}
	return 0;
}

static int e_attr(struct jr *j, struct json_object *o, void *arg)
{
	struct otlp_msg *m = j->m;
	struct otlp_attr *a = otlp_push(m, &m->attrs, sizeof(*a));
	uint64_t k;
	int err;

	(void)arg;
	if (!a)
		return -EFBIG;
	if (get(o, "key", NULL))
		return jfail(
		    j, -EPROTO,
		    "an attribute_table entry has a 'key' string: an earlier layout than %s",
		    OTLP_LAYOUT);
	if ((err = get_int(j, o, "keyStrindex", "key_strindex", &k, true)))
		return err;
	a->key_sid = (int64_t)k;
	return any_value(j, get(o, "value", NULL), &a->value);
}

static int e_stack(struct jr *j, struct json_object *o, void *arg)
{
	struct otlp_msg *m = j->m;
	struct otlp_stack *s = otlp_push(m, &m->stacks, sizeof(*s));
	size_t n;
	int err;

	(void)arg;
	if (!s)
		return -EFBIG;
	s->loc_off = m->ints.n;
	if ((err = get_ints(j, o, "locationIndices", "location_indices", &m->ints, &n)))
		return err;
	s->n_locs = (uint32_t)n;
	return 0;
}

static int dictionary(struct jr *j, struct json_object *d)
{
	struct otlp_msg *m = j->m;
	struct json_object *strs;
	int err;

	if ((err = want(j, d, json_type_object, "'dictionary'")))
		return err;
	m->has_dictionary = true;
	if ((strs = get(d, "stringTable", "string_table"))) {
		if ((err = want(j, strs, json_type_array, "'stringTable'")))
			return err;
		for (size_t i = 0; i < json_object_array_length(strs); i++) {
			struct json_object *s = json_object_array_get_idx(strs, i);

			if ((err = want(j, s, json_type_string, "a stringTable entry")) ||
			    (err = otlp_push_table_str(m, json_object_get_string(s),
						       (size_t)json_object_get_string_len(s))))
				return err;
		}
	}
	if ((err = each(j, d, "mappingTable", "mapping_table", e_mapping, NULL)) ||
	    (err = each(j, d, "locationTable", "location_table", e_location, NULL)) ||
	    (err = each(j, d, "functionTable", "function_table", e_function, NULL)) ||
	    (err = each(j, d, "attributeTable", "attribute_table", e_attr, NULL)) ||
	    (err = each(j, d, "stackTable", "stack_table", e_stack, NULL)))
		return err;
	return 0;
}

/* ---- resources, profiles, samples ---- */

static int e_sample(struct jr *j, struct json_object *o, void *arg)
{
	struct otlp_msg *m = j->m;
	struct otlp_sample *s = otlp_push(m, &m->samples, sizeof(*s));
	struct json_object *ts;
	size_t n;
	uint64_t st;
	int err;

	if (!s)
		return -EFBIG;
	((struct otlp_profile *)arg)->n_samples++;
	if (get(o, "locationsStartIndex", "locations_start_index") || get(o, "value", NULL))
		return jfail(j, -EPROTO,
			     "a sample has locationsStartIndex or 'value': an "
			     "earlier layout than %s",
			     OTLP_LAYOUT);
	s->attr_off = m->ints.n;
	s->value_off = m->values.n;
	if ((err = get_int(j, o, "stackIndex", "stack_index", &st, true)) ||
	    (err = get_ints(j, o, "attributeIndices", "attribute_indices", &m->ints, &n)))
		return err;
	s->stack = (int64_t)st;
	s->n_attrs = (uint32_t)n;
	if ((err = get_ints(j, o, "values", NULL, &m->values, &n)))
		return err;
	s->n_values = (uint32_t)n;
	if ((ts = get(o, "timestampsUnixNano", "timestamps_unix_nano"))) {
		if ((err = want(j, ts, json_type_array, "'timestampsUnixNano'")))
			return err;
		s->n_timestamps = json_object_array_length(ts);
	}
	return 0;
}

static int value_type(struct jr *j, struct json_object *o, const char *camel, const char *snake,
		      int64_t vt[2])
{
	struct json_object *x = get(o, camel, snake);
	uint64_t a, b;
	int err;

	if (!x)
		return 0;
	if (json_object_is_type(x, json_type_array))
		return jfail(j, -EPROTO, "'%s' is an array: in %s a Profile has one sample type",
			     camel, OTLP_LAYOUT);
	if ((err = want(j, x, json_type_object, camel)) ||
	    (err = get_int(j, x, "typeStrindex", "type_strindex", &a, true)) ||
	    (err = get_int(j, x, "unitStrindex", "unit_strindex", &b, true)))
		return err;
	vt[0] = (int64_t)a;
	vt[1] = (int64_t)b;
	return 0;
}

static int e_profile(struct jr *j, struct json_object *o, void *arg)
{
	struct otlp_msg *m = j->m;
	struct otlp_profile *p = otlp_push(m, &m->profiles, sizeof(*p));
	size_t i = m->profiles.n - 1, n;
	uint64_t period;
	int err;

	(void)arg;
	if (!p)
		return -EFBIG;
	if (get(o, "sample", NULL) || get(o, "locationIndices", "location_indices") ||
	    get(o, "stringTable", "string_table"))
		return jfail(j, -EPROTO,
			     "a profile has 'sample', 'locationIndices' or its own "
			     "'stringTable': an earlier layout than %s",
			     OTLP_LAYOUT);
	p->resource = m->resources.n - 1;
	p->sample_off = m->samples.n;
	if ((err = value_type(j, o, "sampleType", "sample_type", p->sample_type)) ||
	    (err = value_type(j, o, "periodType", "period_type", p->period_type)) ||
	    (err = get_int(j, o, "timeUnixNano", "time_unix_nano", &p->time_ns, false)) ||
	    (err = get_int(j, o, "durationNano", "duration_nano", &p->duration_ns, false)) ||
	    (err = get_int(j, o, "period", NULL, &period, true)))
		return err;
	p->period = (int64_t)period;
	p->has_sample_type = get(o, "sampleType", "sample_type") != NULL;
	/* samples come first: the profile's attribute indices follow theirs in ints */
	if ((err = each(j, o, "samples", NULL, e_sample, p)))
		return err;
	p = &OTLP_AT(m->profiles, struct otlp_profile, i);
	p->attr_off = m->ints.n;
	if ((err = get_ints(j, o, "attributeIndices", "attribute_indices", &m->ints, &n)))
		return err;
	p->n_attrs = (uint32_t)n;
	return 0;
}

static int e_scope(struct jr *j, struct json_object *o, void *arg)
{
	return each(j, o, "profiles", NULL, e_profile, arg);
}

static int e_res_attr(struct jr *j, struct json_object *o, void *arg)
{
	struct otlp_msg *m = j->m;
	struct otlp_attr *a = otlp_push(m, &m->res_attrs, sizeof(*a));
	int err;

	if (!a)
		return -EFBIG;
	a->key_sid = -1;
	((struct otlp_resource *)arg)->n_attrs++;
	if ((err = get_str(j, o, "key", NULL, &a->key, NULL)))
		return err;
	return any_value(j, get(o, "value", NULL), &a->value);
}

static int e_resource_profiles(struct jr *j, struct json_object *o, void *arg)
{
	struct otlp_msg *m = j->m;
	struct otlp_resource *r = otlp_push(m, &m->resources, sizeof(*r));
	size_t i = m->resources.n - 1;
	struct json_object *res = get(o, "resource", NULL);
	int err;

	(void)arg;
	if (!r)
		return -EFBIG;
	r->attr_off = m->res_attrs.n;
	if (res && ((err = want(j, res, json_type_object, "'resource'")) ||
		    (err = each(j, res, "attributes", NULL, e_res_attr,
				&OTLP_AT(m->resources, struct otlp_resource, i)))))
		return err;
	return each(j, o, "scopeProfiles", "scope_profiles", e_scope, NULL);
}

/* Charges json-c's tree of the text to m's budget (m->used) before it is built;
 * *cost what to give back once it is freed. 0, -EINVAL (too deep), -EFBIG. */
static int charge_tree(struct jr *j, const char *buf, size_t len, size_t *cost)
{
	struct base_json_cost c;

	*cost = 0;
	if (len > INT32_MAX)
		return jfail(j, -EFBIG, "the JSON body is over %d bytes", INT32_MAX);
	if (base_json_cost(buf, len, &c) || c.max_depth > OTLP_JSON_DEPTH)
		return jfail(j, -EINVAL, "the JSON is nested deeper than %d levels",
			     OTLP_JSON_DEPTH);
	if (c.bytes > j->m->limit - j->m->used)
		return jfail(j, -EFBIG,
			     "the JSON body (%zu bytes, %zu values) would take %zu MiB to parse, "
			     "more than this request's memory budget of %zu MiB",
			     len, c.values, (c.bytes + (1 << 20) - 1) >> 20, j->m->limit >> 20);
	j->m->used += c.bytes;
	*cost = c.bytes;
	return 0;
}

int otlp_json__parse(struct otlp_msg *m, const char *buf, size_t len, char *err, size_t errlen)
{
	struct jr j = {m, err, errlen};
	struct json_tokener *tok = NULL;
	struct json_object *root = NULL, *d;
	size_t cost;
	int r;

	if ((r = charge_tree(&j, buf, len, &cost)))
		return r;
	if (!(tok = json_tokener_new_ex(OTLP_JSON_DEPTH))) {
		r = -ENOMEM;
		goto cleanup;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, buf, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		r = jfail(&j, -EINVAL, "not valid JSON at byte %zu: %s",
			  json_tokener_get_parse_end(tok),
			  root			       ? "data follows the request's object"
			  : e == json_tokener_continue ? "the JSON ends early"
						       : json_tokener_error_desc(e));
		goto cleanup;
	}
	if ((r = want(&j, root, json_type_object, "the request")))
		goto cleanup;
	if ((d = get(root, "dictionary", NULL)) && (r = dictionary(&j, d)))
		goto cleanup;
	r = each(&j, root, "resourceProfiles", "resource_profiles", e_resource_profiles, NULL);
cleanup:
	if (r == -EFBIG && !(err && *err))
		jfail(&j, r, "the request needs more than %zu MiB of memory to unpack",
		      m->limit >> 20);
	json_object_put(root);
	if (tok) /* json_tokener_free(NULL) is not safe */
		json_tokener_free(tok);
	m->used -= cost; /* the tree is gone; the tables keep their share */
	return r;
}
