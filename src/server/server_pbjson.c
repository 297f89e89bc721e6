/*
 * The proto3 JSON mapping (protobuf.dev, "ProtoJSON Format") for protobuf-c
 * messages, driven by their descriptors: the JSON half of the Connect protocol
 * (server_connect.c), so each method works on one C struct whichever codec
 * the client chose. JSON text is parsed by json-c; answers are written with
 * fprintf. Requests are outside input: nesting is bounded (PBJSON_MAX_DEPTH),
 * every number is range-checked, and a wrong type names the field. Memory is
 * bounded before json-c runs: base_json_cost prices the tree a body would
 * build (up to 264 bytes per byte of text), and a body whose tree is over half
 * its budget is refused (the message made from the tree takes less than the
 * tree: a C value or pointer per JSON node of 64 bytes or more).
 */
#include "server_connect.h"
#include "base/base.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* lowerCamelCase of a .proto field name: what protoc names its json_name. */
static void camel(const char *name, char *out, size_t len)
{
	size_t n = 0;
	bool up = false;

	for (const char *c = name; *c && n + 1 < len; c++) {
		if (*c == '_') {
			up = true;
			continue;
		}
		out[n++] = up && *c >= 'a' && *c <= 'z' ? (char)(*c - 'a' + 'A') : *c;
		up = false;
	}
	out[n] = 0;
}

static const ProtobufCFieldDescriptor *field_named(const ProtobufCMessageDescriptor *d,
						   const char *key)
{
	char c[128];

	for (unsigned i = 0; i < d->n_fields; i++) {
		camel(d->fields[i].name, c, sizeof(c));
		if (!strcmp(d->fields[i].name, key) || !strcmp(c, key))
			return &d->fields[i];
	}
	return NULL;
}

/* Bytes of one element of a field's type in the C struct. */
static size_t elem_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return 8;
	case PROTOBUF_C_TYPE_DOUBLE:
		return sizeof(double);
	case PROTOBUF_C_TYPE_FLOAT:
		return sizeof(float);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(ProtobufCMessage *);
	default: /* int32, sint32, sfixed32, uint32, fixed32, enum */
		return 4;
	}
}

static int bad(char *err, size_t errlen, const ProtobufCFieldDescriptor *f, const char *what)
{
	snprintf(err, errlen, "field '%s': %s", f->name, what);
	return -EINVAL;
}

/* A JSON number or numeric string as an integer in [lo, hi] (signed) or [0, UINT64_MAX]. */
static int json_int(json_object *v, bool is_unsigned, int64_t lo, int64_t hi, uint64_t *out)
{
	const char *s;
	char *end;

	if (json_object_is_type(v, json_type_int)) {
		if (is_unsigned) {
			if (json_object_get_int64(v) < 0)
				return -ERANGE;
			*out = json_object_get_uint64(v);
			return 0;
		}
		/* json-c keeps numbers past INT64_MAX as uint64; get_int64 saturates them */
		int64_t x = json_object_get_int64(v);

		if (x == INT64_MAX && json_object_get_uint64(v) > (uint64_t)INT64_MAX)
			return -ERANGE;
		if (x < lo || x > hi)
			return -ERANGE;
		*out = (uint64_t)x;
		return 0;
	}
	if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);

		if (d != floor(d) || d < (is_unsigned ? 0 : (double)lo) ||
		    d >= (is_unsigned ? 18446744073709551616.0 : (double)hi + 1.0))
			return -ERANGE;
		*out = is_unsigned ? (uint64_t)d : (uint64_t)(int64_t)d;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	s = json_object_get_string(v);
	if (!*s || (*s != '-' && (*s < '0' || *s > '9')))
		return -EINVAL;
	errno = 0;
	if (is_unsigned) {
		if (*s == '-')
			return -ERANGE;
		*out = strtoull(s, &end, 10);
	} else {
		long long x = strtoll(s, &end, 10);

		if (!errno && (x < lo || x > hi))
			errno = ERANGE;
		*out = (uint64_t)x;
	}
	if (*end)
		return -EINVAL;
	return errno ? -ERANGE : 0;
}

static int decode_message(const ProtobufCMessageDescriptor *d, json_object *o, int depth,
			  ProtobufCMessage **out, char *err, size_t errlen);

/* Integer types: their range and signedness. */
static bool int_range(ProtobufCType t, bool *is_unsigned, int64_t *lo, int64_t *hi)
{
	*is_unsigned = t == PROTOBUF_C_TYPE_UINT32 || t == PROTOBUF_C_TYPE_FIXED32 ||
		       t == PROTOBUF_C_TYPE_UINT64 || t == PROTOBUF_C_TYPE_FIXED64;
	if (elem_size(t) == 8) {
		*lo = INT64_MIN;
		*hi = INT64_MAX;
	} else if (*is_unsigned) {
		*lo = 0;
		*hi = UINT32_MAX;
	} else {
		*lo = INT32_MIN;
		*hi = INT32_MAX;
	}
	return t != PROTOBUF_C_TYPE_FLOAT && t != PROTOBUF_C_TYPE_DOUBLE &&
	       t != PROTOBUF_C_TYPE_BOOL && t != PROTOBUF_C_TYPE_STRING &&
	       t != PROTOBUF_C_TYPE_BYTES && t != PROTOBUF_C_TYPE_MESSAGE &&
	       t != PROTOBUF_C_TYPE_ENUM;
}

static int decode_double(const ProtobufCFieldDescriptor *f, json_object *v, double *d, char *err,
			 size_t errlen)
{
	const char *s;
	char *end;

	if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) {
		*d = json_object_get_double(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return bad(err, errlen, f, "want a number");
	s = json_object_get_string(v);
	if (!strcmp(s, "NaN"))
		*d = NAN;
	else if (!strcmp(s, "Infinity"))
		*d = INFINITY;
	else if (!strcmp(s, "-Infinity"))
		*d = -INFINITY;
	else if (!*s || (*d = strtod(s, &end), *end))
		return bad(err, errlen, f, "want a number");
	return 0;
}

static int decode_enum(const ProtobufCFieldDescriptor *f, json_object *v, int32_t *out, char *err,
		       size_t errlen)
{
	const ProtobufCEnumDescriptor *ed = f->descriptor;
	const ProtobufCEnumValue *ev;
	uint64_t x;

	if (json_object_is_type(v, json_type_string)) {
		ev = protobuf_c_enum_descriptor_get_value_by_name(ed, json_object_get_string(v));
		if (!ev)
			return bad(err, errlen, f, "unknown enum value name");
		*out = ev->value;
		return 0;
	}
	if (json_int(v, false, INT32_MIN, INT32_MAX, &x))
		return bad(err, errlen, f, "want an enum value name or number");
	*out = (int32_t)(int64_t)x;
	return 0;
}

/* One value of field f from v into dst (elem_size(f->type) bytes). */
static int decode_value(const ProtobufCFieldDescriptor *f, json_object *v, int depth, void *dst,
			char *err, size_t errlen)
{
	bool is_unsigned;
	int64_t lo, hi;
	uint64_t x;
	int ret;

	if (int_range(f->type, &is_unsigned, &lo, &hi)) {
		ret = json_int(v, is_unsigned, lo, hi, &x);
		if (ret)
			return bad(err, errlen, f,
				   ret == -ERANGE ? "integer out of range"
						  : "want an integer (number or string)");
		if (elem_size(f->type) == 8)
			memcpy(dst, &x, 8);
		else if (is_unsigned)
			*(uint32_t *)dst = (uint32_t)x;
		else
			*(int32_t *)dst = (int32_t)(int64_t)x;
		return 0;
	}
	switch (f->type) {
	case PROTOBUF_C_TYPE_DOUBLE:
		return decode_double(f, v, dst, err, errlen);
	case PROTOBUF_C_TYPE_FLOAT: {
		double d;

		ret = decode_double(f, v, &d, err, errlen);
		*(float *)dst = (float)d;
		return ret;
	}
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_object_is_type(v, json_type_boolean))
			return bad(err, errlen, f, "want true or false");
		*(protobuf_c_boolean *)dst = json_object_get_boolean(v);
		return 0;
	case PROTOBUF_C_TYPE_STRING:
		if (!json_object_is_type(v, json_type_string))
			return bad(err, errlen, f, "want a string");
		return (*(char **)dst = strdup(json_object_get_string(v))) ? 0 : -ENOMEM;
	case PROTOBUF_C_TYPE_ENUM:
		return decode_enum(f, v, dst, err, errlen);
	case PROTOBUF_C_TYPE_MESSAGE:
		if (!json_object_is_type(v, json_type_object))
			return bad(err, errlen, f, "want an object");
		return decode_message(f->descriptor, v, depth + 1, dst, err, errlen);
	default: /* bytes: no request of hearth's has one */
		return bad(err, errlen, f, "bytes fields are not accepted");
	}
}

/* Frees what a repeated field holds (its strings or messages, then the array) and
 * empties it: a field given twice, under both its names, keeps the last list. */
static void clear_repeated(const ProtobufCFieldDescriptor *f, ProtobufCMessage *m)
{
	size_t *count = (size_t *)((char *)m + f->quantifier_offset);
	char **arr = (char **)((char *)m + f->offset);

	for (size_t i = 0; *arr && i < *count; i++) {
		if (f->type == PROTOBUF_C_TYPE_STRING)
			free(((char **)*arr)[i]);
		else if (f->type == PROTOBUF_C_TYPE_MESSAGE && ((ProtobufCMessage **)*arr)[i])
			protobuf_c_message_free_unpacked(((ProtobufCMessage **)*arr)[i], NULL);
	}
	free(*arr);
	*arr = NULL;
	*count = 0;
}

static int decode_repeated(const ProtobufCFieldDescriptor *f, json_object *v, int depth,
			   ProtobufCMessage *m, char *err, size_t errlen)
{
	size_t n = json_object_array_length(v), sz = elem_size(f->type);
	size_t *count = (size_t *)((char *)m + f->quantifier_offset);
	char **arr = (char **)((char *)m + f->offset);
	int ret;

	clear_repeated(f, m); /* given before under its other name: the last wins */
	if (!n)
		return 0;
	if (!(*arr = calloc(n, sz)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i);

		if (json_object_is_type(e, json_type_null))
			return bad(err, errlen, f, "null in a list");
		/* counted before it is decoded: a message element that fails halfway
		 * is already allocated, and free_unpacked frees what is counted (a
		 * NULL element is fine) */
		*count = i + 1;
		ret = decode_value(f, e, depth, *arr + i * sz, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

static int decode_message(const ProtobufCMessageDescriptor *d, json_object *o, int depth,
			  ProtobufCMessage **out, char *err, size_t errlen)
{
	ProtobufCMessage *m;
	int ret = 0;

	if (depth > PBJSON_MAX_DEPTH) {
		snprintf(err, errlen, "messages nested deeper than %d", PBJSON_MAX_DEPTH);
		return -EINVAL;
	}
	if (!(m = calloc(1, d->sizeof_message)))
		return -ENOMEM;
	protobuf_c_message_init(d, m);
	*out = m;
	json_object_object_foreach(o, key, v)
	{
		const ProtobufCFieldDescriptor *f = field_named(d, key);

		if (!f || json_object_is_type(v, json_type_null))
			continue; /* unknown fields are ignored; null is the default */
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			ret = json_object_is_type(v, json_type_array)
				  ? decode_repeated(f, v, depth, m, err, errlen)
				  : bad(err, errlen, f, "want a list");
		} else {
			char *dst = (char *)m + f->offset;

			/* a field given twice (name and camelCase): the last wins */
			if (f->type == PROTOBUF_C_TYPE_STRING && *(char **)dst &&
			    *(char **)dst != f->default_value &&
			    *(char **)dst != protobuf_c_empty_string) {
				free(*(char **)dst);
				*(char **)dst = NULL;
			}
			if (f->type == PROTOBUF_C_TYPE_MESSAGE && *(ProtobufCMessage **)dst) {
				protobuf_c_message_free_unpacked(*(ProtobufCMessage **)dst, NULL);
				*(ProtobufCMessage **)dst = NULL;
			}
			ret = decode_value(f, v, depth, dst, err, errlen);
			if (!ret && f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset)
				*(protobuf_c_boolean *)((char *)m + f->quantifier_offset) = 1;
		}
		if (ret)
			break;
	}
	return ret;
}

/* Refuses a body whose json-c tree would not fit in half of budget. 0, -EINVAL
 * (nested too deep), -EFBIG (err names the sizes). */
static int check_cost(const char *buf, size_t len, size_t budget, char *err, size_t errlen)
{
	struct base_json_cost c;

	if (base_json_cost(buf, len, &c) || c.max_depth > PBJSON_MAX_DEPTH + 2) {
		snprintf(err, errlen, "JSON nested deeper than %d levels", PBJSON_MAX_DEPTH + 2);
		return -EINVAL;
	}
	if (c.bytes > budget / 2) {
		snprintf(err, errlen,
			 "the JSON body (%zu bytes, %zu values) would take %zu MiB to parse, over "
			 "half of this request's memory budget of %zu MiB",
			 len, c.values, (c.bytes + (1 << 20) - 1) >> 20, budget >> 20);
		return -EFBIG;
	}
	return 0;
}

int pbjson_decode(const ProtobufCMessageDescriptor *d, const char *buf, size_t len,
		  ProtobufCMessage **out, char *err, size_t errlen)
{
	return pbjson_decode_budget(d, buf, len, server_memory_budget(len), out, err, errlen);
}

int pbjson_decode_budget(const ProtobufCMessageDescriptor *d, const char *buf, size_t len,
			 size_t budget, ProtobufCMessage **out, char *err, size_t errlen)
{
	struct json_tokener *tok;
	json_object *o;
	int ret;

	*out = NULL;
	if (len > INT_MAX) {
		snprintf(err, errlen, "JSON body over %d bytes", INT_MAX);
		return -EINVAL;
	}
	if ((ret = check_cost(buf, len, budget, err, errlen)))
		return ret;
	if (!(tok = json_tokener_new_ex(PBJSON_MAX_DEPTH + 2)))
		return -ENOMEM;
	/* strict: the syntax base_json_cost prices (no comments, no single quotes) */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, buf, (int)len);
	if (!o || json_tokener_get_parse_end(tok) < len) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		snprintf(err, errlen, "malformed JSON at byte %zu: %s",
			 json_tokener_get_parse_end(tok),
			 o ? "text after the value"
			   : json_tokener_error_desc(
				 e == json_tokener_continue ? json_tokener_error_parse_eof : e));
		json_object_put(o);
		json_tokener_free(tok);
		return -EINVAL;
	}
	json_tokener_free(tok);
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "the JSON body is not an object");
		json_object_put(o);
		return -EINVAL;
	}
	ret = decode_message(d, o, 0, out, err, errlen);
	json_object_put(o);
	if (ret && *out) {
		protobuf_c_message_free_unpacked(*out, NULL);
		*out = NULL;
	}
	return ret;
}

/* ---- encoding ---- */

static int encode_message(const ProtobufCMessage *m, FILE *out);

static int encode_value(const ProtobufCFieldDescriptor *f, const void *p, FILE *out)
{
	const ProtobufCEnumValue *ev;
	double d;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		fprintf(out, "\"%lld\"", (long long)*(const int64_t *)p);
		return 0;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		fprintf(out, "\"%llu\"", (unsigned long long)*(const uint64_t *)p);
		return 0;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		fprintf(out, "%u", *(const uint32_t *)p);
		return 0;
	case PROTOBUF_C_TYPE_DOUBLE:
	case PROTOBUF_C_TYPE_FLOAT:
		d = f->type == PROTOBUF_C_TYPE_DOUBLE ? *(const double *)p : *(const float *)p;
		if (isnan(d))
			fputs("\"NaN\"", out);
		else if (isinf(d))
			fputs(d > 0 ? "\"Infinity\"" : "\"-Infinity\"", out);
		else
			fprintf(out, "%.17g", d);
		return 0;
	case PROTOBUF_C_TYPE_BOOL:
		fputs(*(const protobuf_c_boolean *)p ? "true" : "false", out);
		return 0;
	case PROTOBUF_C_TYPE_STRING:
		base_json_string(out, *(char *const *)p ? *(char *const *)p : "");
		return 0;
	case PROTOBUF_C_TYPE_ENUM:
		ev = protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int32_t *)p);
		if (ev)
			base_json_string(out, ev->name);
		else
			fprintf(out, "%d", *(const int32_t *)p);
		return 0;
	case PROTOBUF_C_TYPE_MESSAGE:
		return encode_message(*(ProtobufCMessage *const *)p, out);
	case PROTOBUF_C_TYPE_BYTES:
		if (((const ProtobufCBinaryData *)p)->len)
			return -ENOTSUP;
		fputs("\"\"", out);
		return 0;
	default: /* int32, sint32, sfixed32 */
		fprintf(out, "%d", *(const int32_t *)p);
		return 0;
	}
}

/* Whether a singular field holds a value proto3 JSON writes (not its default). */
static bool present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	const char *p = (const char *)m + f->offset;
	size_t sz = elem_size(f->type);

	if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
	    f->type != PROTOBUF_C_TYPE_MESSAGE && f->type != PROTOBUF_C_TYPE_STRING)
		return *(const protobuf_c_boolean *)((const char *)m + f->quantifier_offset);
	if (f->type == PROTOBUF_C_TYPE_STRING)
		return *(char *const *)p && **(char *const *)p;
	if (f->type == PROTOBUF_C_TYPE_MESSAGE)
		return *(void *const *)p != NULL;
	if (f->type == PROTOBUF_C_TYPE_BYTES)
		return ((const ProtobufCBinaryData *)p)->len > 0;
	for (size_t i = 0; i < sz; i++)
		if (p[i])
			return true;
	return false;
}

static int encode_message(const ProtobufCMessage *m, FILE *out)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	bool first = true;
	char name[128];
	int ret = 0;

	fputc('{', out);
	for (unsigned i = 0; i < d->n_fields && !ret; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		bool rep = f->label == PROTOBUF_C_LABEL_REPEATED;
		size_t n = rep ? *(const size_t *)((const char *)m + f->quantifier_offset) : 0;

		if (rep ? !n : !present(m, f))
			continue;
		camel(f->name, name, sizeof(name));
		fprintf(out, "%s\"%s\":", first ? "" : ",", name);
		first = false;
		if (!rep) {
			ret = encode_value(f, (const char *)m + f->offset, out);
			continue;
		}
		fputc('[', out);
		for (size_t k = 0; k < n && !ret; k++) {
			const char *arr = *(char *const *)((const char *)m + f->offset);

			if (k)
				fputc(',', out);
			ret = encode_value(f, arr + k * elem_size(f->type), out);
		}
		fputc(']', out);
	}
	fputc('}', out);
	return ret;
}

int pbjson_encode(const ProtobufCMessage *m, FILE *out)
{
	return encode_message(m, out);
}
