/*
 * OTLP profiles in: an ExportProfilesServiceRequest (opentelemetry-proto v1.10,
 * binary or OTLP/JSON) into hearth's models, one per CPU profile of a resource,
 * with the series labels its resource attributes give (docs/api.md, "OTLP
 * profiles", has the table).
 *
 * Steps, each bounded:
 *   read      otlp_wire.c or otlp_json.c fill struct otlp_msg's flat tables on
 *             the caller's byte budget;
 *   check     every index (stack, location, mapping, function, attribute,
 *             string) is in range before a model is built, so a bad request
 *             builds nothing; the sample locations the models will hold are
 *             counted against the budget too (a stack of 1,000 frames named by a
 *             million samples is a few bytes each on the wire), and so is what
 *             each profile with samples holds once built (OTLP_PROFILE_COST:
 *             100,000 profiles are a few bytes each on the wire too);
 *   build     per profile: locations made once each (cached by dictionary
 *             index), native frames without lines symbolized through the
 *             caller's callback by build-id, stacks cut at PROFILE_MAX_FRAMES.
 *
 * A sample of a CPU profile becomes the model's [count, cpu ns] pair as pprof's
 * does (pprof_decode.c): samples/count with the period as the ns per sample,
 * cpu/nanoseconds divided by it. Profiles of other sample types are not stored
 * (counted in rejected, for the OTLP partial-success answer); profiles without
 * samples are skipped (counted in empty): each would cost a model and a stored
 * chunk of nothing.
 */
#include "otlp_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* Mapping attribute holding the GNU build-id (OTel semantic conventions). */
#define OTLP_BUILD_ID_ATTR "process.executable.build_id.gnu"
/* Longest build-id taken, in hex digits (a SHA-1 one is 40). */
#define OTLP_MAX_BUILD_ID 128
/* Frames one native address may resolve to (a function and its inlined callees). */
#define OTLP_MAX_SYM_FRAMES 16

/* ---- struct otlp_msg ---- */

void *otlp_push(struct otlp_msg *m, struct otlp_arr *a, size_t elem)
{
	size_t old = a->cap;

	/* the ceiling: what the decode's byte budget has left */
	if (a->n + 1 > a->cap &&
	    base_grow_max(&a->v, &a->cap, a->n + 1, elem, a->cap + (m->limit - m->used) / elem))
		return NULL;
	m->used += (a->cap - old) * elem;
	memset((char *)a->v + a->n * elem, 0, elem);
	return (char *)a->v + a->n++ * elem;
}

int otlp_push_i64(struct otlp_msg *m, struct otlp_arr *a, int64_t v)
{
	int64_t *p = otlp_push(m, a, sizeof(v));

	if (!p)
		return -EFBIG;
	*p = v;
	return 0;
}

int otlp_push_str(struct otlp_msg *m, const char *s, size_t n, size_t *off)
{
	const char *nul = memchr(s, 0, n);
	size_t old = m->text_cap;

	if (nul)
		n = (size_t)(nul - s);
	if (m->text_len + n + 1 > m->text_cap &&
	    base_grow_max((void **)&m->text, &m->text_cap, m->text_len + n + 1, 1,
			  m->text_cap + (m->limit - m->used)))
		return -EFBIG;
	m->used += m->text_cap - old;
	memcpy(m->text + m->text_len, s, n);
	m->text[m->text_len + n] = 0;
	*off = m->text_len;
	m->text_len += n + 1;
	return 0;
}

int otlp_push_table_str(struct otlp_msg *m, const char *s, size_t n)
{
	size_t off, *slot;
	int err = otlp_push_str(m, s, n, &off);

	if (err)
		return err;
	if (!(slot = otlp_push(m, &m->str_off, sizeof(*slot))))
		return -EFBIG;
	*slot = off;
	return 0;
}

void otlp_msg__fini(struct otlp_msg *m)
{
	struct otlp_arr *arrs[] = {&m->mappings,  &m->locations, &m->lines,   &m->functions,
				   &m->attrs,	  &m->stacks,	 &m->str_off, &m->resources,
				   &m->res_attrs, &m->profiles,	 &m->samples, &m->ints,
				   &m->values,	  &m->scratch};

	for (size_t i = 0; i < sizeof(arrs) / sizeof(arrs[0]); i++)
		free(arrs[i]->v);
	free(m->text);
}

/* ---- checks ---- */

struct dec {
	struct otlp_msg *m;
	const struct otlp_opts *o;
	struct otlp_decoded *out;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 3, 4))) static int dfail(struct dec *d, int code, const char *fmt,
						       ...)
{
	va_list ap;

	if (d->err && d->errlen) {
		va_start(ap, fmt);
		vsnprintf(d->err, d->errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

static size_t n_strings(const struct otlp_msg *m)
{
	return m->str_off.n;
}

/* String i of the dictionary (checked: i < n_strings). */
static const char *str_at(const struct otlp_msg *m, int64_t i)
{
	return m->text + OTLP_AT(m->str_off, size_t, (size_t)i);
}

static bool in_range(int64_t i, size_t n)
{
	return i >= 0 && (uint64_t)i < n;
}

static int check_str(struct dec *d, int64_t i, const char *what, size_t at)
{
	if (in_range(i, n_strings(d->m)))
		return 0;
	return dfail(d, -EINVAL,
		     "%s %zu: string index %" PRId64 " is out of range (the "
		     "string_table has %zu entries)",
		     what, at, i, n_strings(d->m));
}

static int check_value(struct dec *d, const struct otlp_value *v, const char *what, size_t at)
{
	return v->kind == OTLP_VAL_STRINDEX ? check_str(d, v->num, what, at) : 0;
}

static int check_dict_tables(struct dec *d)
{
	struct otlp_msg *m = d->m;
	int err = 0;

	for (size_t i = 0; i < m->functions.n && !err; i++)
		for (int k = 0; k < 3 && !err; k++)
			err = check_str(d, OTLP_AT(m->functions, struct otlp_function, i).sid[k],
					"function", i);
	for (size_t i = 0; i < m->mappings.n && !err; i++) {
		const struct otlp_mapping *mp = &OTLP_AT(m->mappings, struct otlp_mapping, i);

		err = check_str(d, mp->filename, "mapping", i);
		for (uint32_t k = 0; k < mp->n_attrs && !err; k++)
			if (!in_range(OTLP_AT(m->ints, int64_t, mp->attr_off + k), m->attrs.n))
				err = dfail(
				    d, -EINVAL,
				    "mapping %zu: attribute index %" PRId64
				    " is out of range (the attribute_table has %zu entries)",
				    i, OTLP_AT(m->ints, int64_t, mp->attr_off + k), m->attrs.n);
	}
	for (size_t i = 0; i < m->attrs.n && !err; i++) {
		const struct otlp_attr *a = &OTLP_AT(m->attrs, struct otlp_attr, i);

		err = check_str(d, a->key_sid, "attribute", i);
		if (!err)
			err = check_value(d, &a->value, "attribute", i);
	}
	for (size_t i = 0; i < m->res_attrs.n && !err; i++)
		err = check_value(d, &OTLP_AT(m->res_attrs, struct otlp_attr, i).value,
				  "resource attribute", i);
	return err;
}

static int check_locations(struct dec *d)
{
	struct otlp_msg *m = d->m;

	for (size_t i = 0; i < m->locations.n; i++) {
		const struct otlp_location *l = &OTLP_AT(m->locations, struct otlp_location, i);

		if (!in_range(l->mapping, m->mappings.n) && l->mapping != 0)
			return dfail(d, -EINVAL,
				     "location %zu: mapping_index %" PRId64
				     " is out of range (the mapping_table has %zu entries)",
				     i, l->mapping, m->mappings.n);
		for (uint32_t k = 0; k < l->n_lines; k++) {
			int64_t f = OTLP_AT(m->lines, struct otlp_line, l->line_off + k).function;

			if (!in_range(f, m->functions.n) && f != 0)
				return dfail(
				    d, -EINVAL,
				    "location %zu: function_index %" PRId64
				    " is out of range (the function_table has %zu entries)",
				    i, f, m->functions.n);
		}
	}
	for (size_t i = 0; i < m->stacks.n; i++) {
		const struct otlp_stack *s = &OTLP_AT(m->stacks, struct otlp_stack, i);

		for (uint32_t k = 0; k < s->n_locs; k++) {
			int64_t l = OTLP_AT(m->ints, int64_t, s->loc_off + k);

			if (!in_range(l, m->locations.n))
				return dfail(
				    d, -EINVAL,
				    "stack %zu: location index %" PRId64
				    " is out of range (the location_table has %zu entries)",
				    i, l, m->locations.n);
		}
	}
	return 0;
}

static int check_attr_list(struct dec *d, size_t off, uint32_t n, const char *what, size_t at)
{
	for (uint32_t k = 0; k < n; k++) {
		int64_t a = OTLP_AT(d->m->ints, int64_t, off + k);

		if (!in_range(a, d->m->attrs.n))
			return dfail(
			    d, -EINVAL,
			    "%s %zu: attribute index %" PRId64
			    " is out of range (the attribute_table has %zu entries; is this "
			    "an earlier layout than %s?)",
			    what, at, a, d->m->attrs.n, OTLP_LAYOUT);
	}
	return 0;
}

/* Samples: indices in range, one value each; *frames counts what the models will hold. */
static int check_samples(struct dec *d, uint64_t *frames)
{
	struct otlp_msg *m = d->m;

	for (size_t i = 0; i < m->samples.n; i++) {
		const struct otlp_sample *s = &OTLP_AT(m->samples, struct otlp_sample, i);
		int err;

		if (!in_range(s->stack, m->stacks.n) && s->stack != 0)
			return dfail(d, -EINVAL,
				     "sample %zu: stack_index %" PRId64
				     " is out of range (the stack_table has %zu entries)",
				     i, s->stack, m->stacks.n);
		if (s->n_values > 1)
			return dfail(d, -EINVAL,
				     "sample %zu has %" PRIu32 " values: a profile has one sample "
				     "type, so a sample one value (%s)",
				     i, s->n_values, OTLP_LAYOUT);
		if (s->n_values == 0 && s->n_timestamps == 0)
			return dfail(d, -EINVAL, "sample %zu has neither values nor timestamps", i);
		if (s->n_values && OTLP_AT(m->values, int64_t, s->value_off) < 0)
			return dfail(d, -EINVAL, "sample %zu has a negative value (%" PRId64 ")", i,
				     OTLP_AT(m->values, int64_t, s->value_off));
		if ((err = check_attr_list(d, s->attr_off, s->n_attrs, "sample", i)))
			return err;
		if (s->stack > 0)
			*frames += OTLP_AT(m->stacks, struct otlp_stack, (size_t)s->stack).n_locs;
	}
	return 0;
}

static int check_profiles(struct dec *d)
{
	struct otlp_msg *m = d->m;

	for (size_t i = 0; i < m->profiles.n; i++) {
		const struct otlp_profile *p = &OTLP_AT(m->profiles, struct otlp_profile, i);
		int err = 0;

		for (int k = 0; k < 2 && !err; k++)
			err = check_str(d, p->sample_type[k], "profile", i);
		for (int k = 0; k < 2 && !err; k++)
			err = check_str(d, p->period_type[k], "profile", i);
		if (!err)
			err = check_attr_list(d, p->attr_off, p->n_attrs, "profile", i);
		if (err)
			return err;
	}
	return 0;
}

/* What the profiles with samples will hold once built (OTLP_PROFILE_COST each,
 * OTLP_MODEL_COST for the one being built), against what the budget has left. */
static int check_models(struct dec *d)
{
	struct otlp_msg *m = d->m;
	size_t kept = 0, left = m->limit - m->used;

	for (size_t i = 0; i < m->profiles.n; i++)
		kept += OTLP_AT(m->profiles, struct otlp_profile, i).n_samples > 0;
	if (kept && (left < OTLP_MODEL_COST || (left - OTLP_MODEL_COST) / kept < OTLP_PROFILE_COST))
		return dfail(d, -EFBIG,
			     "the request has %zu profiles with samples: at %u KiB each, more than "
			     "the %zu MiB left of its memory budget",
			     kept, OTLP_PROFILE_COST >> 10, left >> 20);
	m->used += kept ? OTLP_MODEL_COST + kept * OTLP_PROFILE_COST : 0;
	return 0;
}

static int check(struct dec *d)
{
	struct otlp_msg *m = d->m;
	uint64_t frames = 0;
	int err;

	if (!m->has_dictionary && m->samples.n)
		return dfail(d, -EPROTO,
			     "the request has samples but no dictionary (field 2): an earlier "
			     "layout than %s",
			     OTLP_LAYOUT);
	if (m->has_dictionary && n_strings(m) == 0)
		return dfail(d, -EINVAL,
			     "the dictionary's string_table is empty (entry 0 is \"\")");
	if ((err = check_dict_tables(d)) || (err = check_locations(d)) ||
	    (err = check_samples(d, &frames)) || (err = check_profiles(d)))
		return err;
	/* what the models' sample location lists may take, as parsing took its share */
	if (frames > (m->limit - m->used) / (2 * sizeof(uint64_t)))
		return dfail(d, -EFBIG,
			     "the samples name %" PRIu64 " frames in all, more than the request's "
			     "memory budget holds",
			     frames);
	m->used += frames * 2 * sizeof(uint64_t);
	return check_models(d);
}

/* ---- labels ---- */

/* Resource attributes that become series labels. */
static const char *const res_label_map[][2] = {
    {"service.name", PROFILE_LABEL_SERVICE},
    {"host.name", PROFILE_LABEL_HOST},
    {"container.id", PROFILE_LABEL_CONTAINER},
    {"process.pid", PROFILE_LABEL_PID},
    {"process.executable.name", PROFILE_LABEL_PROCESS},
    {"process.executable.path", PROFILE_LABEL_EXE},
    {"k8s.namespace.name", "namespace"},
    {"k8s.pod.name", "pod"},
};
/* Sample (and profile) attributes that become sample labels (kept per series by the
 * store when they are among ingest's sample labels). */
static const char *const sample_label_map[][2] = {
    {"process.pid", PROFILE_LABEL_PID},
    {"thread.name", PROFILE_LABEL_COMM},
    {"process.executable.name", PROFILE_LABEL_PROCESS},
    {"process.executable.path", PROFILE_LABEL_EXE},
    {"container.id", PROFILE_LABEL_CONTAINER},
};

static const char *map_key(const char *const (*map)[2], size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(map[i][0], key))
			return map[i][1];
	return NULL;
}

/* A value as label text into buf; NULL for a value that is none. */
static const char *value_text(const struct otlp_msg *m, const struct otlp_value *v, char *buf,
			      size_t len)
{
	switch (v->kind) {
	case OTLP_VAL_STR:
		return m->text + v->str;
	case OTLP_VAL_STRINDEX:
		return str_at(m, v->num);
	case OTLP_VAL_INT:
		snprintf(buf, len, "%" PRId64, v->num);
		return buf;
	case OTLP_VAL_BOOL:
		return v->num ? "true" : "false";
	case OTLP_VAL_DOUBLE:
		snprintf(buf, len, "%.17g", v->dbl);
		return buf;
	default:
		return NULL;
	}
}

static const char *attr_key(const struct otlp_msg *m, const struct otlp_attr *a)
{
	return a->key_sid >= 0 ? str_at(m, a->key_sid) : m->text + a->key;
}

static int label_add(struct otlp_series *s, const char *k, const char *v)
{
	struct otlp_label *l;

	for (size_t i = 0; i < s->n_labels; i++)
		if (!strcmp(s->labels[i].key, k)) {
			char *nv = strdup(v);

			if (!nv)
				return -ENOMEM;
			free(s->labels[i].value);
			s->labels[i].value = nv;
			return 0;
		}
	if (s->n_labels >= OTLP_MAX_LABELS)
		return -E2BIG;
	l = &s->labels[s->n_labels];
	l->key = strdup(k);
	l->value = strdup(v);
	if (!l->key || !l->value) {
		free(l->key);
		free(l->value);
		return -ENOMEM;
	}
	s->n_labels++;
	return 0;
}

/* The series labels of resource r: mapped attributes, service_name (OTel's default
 * "unknown_service" when the resource names none), __name__ = service_name (so
 * hearth's APP{...} selectors find it) and the CPU profile type. */
static int series_labels(struct dec *d, size_t r, struct otlp_series *s)
{
	const struct otlp_resource *res = &OTLP_AT(d->m->resources, struct otlp_resource, r);
	const char *svc = NULL;
	char buf[64];
	int err = 0;

	for (uint32_t i = 0; i < res->n_attrs && !err; i++) {
		const struct otlp_attr *a =
		    &OTLP_AT(d->m->res_attrs, struct otlp_attr, res->attr_off + i);
		const char *k =
		    map_key(res_label_map, sizeof(res_label_map) / sizeof(*res_label_map),
			    attr_key(d->m, a));
		const char *v = value_text(d->m, &a->value, buf, sizeof(buf));

		if (!k || !v || !*v)
			continue;
		err = label_add(s, k, v);
	}
	for (size_t i = 0; i < s->n_labels && !err; i++)
		if (!strcmp(s->labels[i].key, PROFILE_LABEL_SERVICE))
			svc = s->labels[i].value;
	if (!err && !svc)
		err = label_add(s, PROFILE_LABEL_SERVICE, OTLP_DEFAULT_SERVICE);
	for (size_t i = 0; i < s->n_labels && !err; i++)
		if (!strcmp(s->labels[i].key, PROFILE_LABEL_SERVICE))
			svc = s->labels[i].value;
	if (!err)
		err = label_add(s, PROFILE_LABEL_NAME, svc);
	if (!err)
		err = label_add(s, PROFILE_LABEL_TYPE, OTLP_CPU_PROFILE_TYPE);
	if (err == -E2BIG)
		return dfail(d, -E2BIG, "resource %zu gives more than %d labels", r,
			     OTLP_MAX_LABELS);
	return err;
}

/* ---- models ---- */

struct build {
	struct dec *d;
	struct profile *p;
	uint64_t *loc_ids;  /* model location of each dictionary location; 0: not made */
	uint64_t trunc_loc; /* the PROFILE_TRUNCATED_FRAME location, once made */
	uint64_t *locs;	    /* scratch: one sample's locations */
	int64_t period_ns;  /* 0: unknown */
	bool cpu_ns;	    /* values are cpu/nanoseconds, else samples/count */
};

/* The mapping's GNU build-id when it has one that can name a file. */
static const char *mapping_build_id(const struct otlp_msg *m, const struct otlp_mapping *mp)
{
	for (uint32_t k = 0; k < mp->n_attrs; k++) {
		const struct otlp_attr *a =
		    &OTLP_AT(m->attrs, struct otlp_attr,
			     (size_t)OTLP_AT(m->ints, int64_t, mp->attr_off + k));
		const char *v;
		size_t n;

		if (strcmp(attr_key(m, a), OTLP_BUILD_ID_ATTR) ||
		    (a->value.kind != OTLP_VAL_STR && a->value.kind != OTLP_VAL_STRINDEX))
			continue;
		v = a->value.kind == OTLP_VAL_STR ? m->text + a->value.str
						  : str_at(m, a->value.num);
		n = strlen(v);
		if (n < 2 || n > OTLP_MAX_BUILD_ID || n % 2)
			return NULL;
		for (size_t i = 0; i < n; i++)
			if (base_hex_digit(v[i]) < 0 || (v[i] >= 'A' && v[i] <= 'F'))
				return NULL; /* lower-case hex, as the .build-id tree names files */
		return v;
	}
	return NULL;
}

/* Lines of a native frame without any, from the caller's symbolizer. */
static int symbolize(struct build *b, const struct otlp_mapping *mp, const char *bid,
		     uint64_t address, struct profile_line *lines, size_t *n)
{
	struct otlp_frame fr[OTLP_MAX_SYM_FRAMES];
	const struct otlp_opts *o = b->d->o;
	uint64_t off;
	int got;

	*n = 0;
	if (!o->symbolize || !bid || address < mp->start || (mp->limit && address >= mp->limit))
		return 0;
	off = address - mp->start + mp->offset; /* process address -> file offset */
	got =
	    o->symbolize(o->ctx, bid, str_at(b->d->m, mp->filename), off, fr, OTLP_MAX_SYM_FRAMES);
	if (got < 0)
		return got == -ENOMEM ? got : 0;
	for (int i = 0; i < got; i++) {
		uint64_t fid = profile__function(b->p, fr[i].name, fr[i].system_name, fr[i].file);

		if (!fid)
			return -ENOMEM;
		lines[(*n)++] = (struct profile_line){fid, fr[i].line};
	}
	return 0;
}

/* The model location of dictionary location i, made on first use. */
static uint64_t location(struct build *b, size_t i, int *err)
{
	const struct otlp_msg *m = b->d->m;
	const struct otlp_location *l = &OTLP_AT(m->locations, struct otlp_location, i);
	struct profile_line lines[OTLP_MAX_SYM_FRAMES + 64];
	const struct otlp_mapping *mp = NULL;
	const char *bid = NULL;
	uint64_t mid = 0;
	size_t n = 0;

	if (b->loc_ids[i])
		return b->loc_ids[i];
	if (l->mapping > 0) {
		mp = &OTLP_AT(m->mappings, struct otlp_mapping, (size_t)l->mapping);
		bid = mapping_build_id(m, mp);
		if (!(mid = profile__mapping(b->p, mp->start, mp->limit, mp->offset,
					     str_at(m, mp->filename), bid)))
			goto nomem;
	}
	for (uint32_t k = 0; k < l->n_lines && n < sizeof(lines) / sizeof(*lines); k++) {
		const struct otlp_line *ln = &OTLP_AT(m->lines, struct otlp_line, l->line_off + k);
		const struct otlp_function *f;
		uint64_t fid;

		if (ln->function <= 0) /* the zero function: no name */
			continue;
		f = &OTLP_AT(m->functions, struct otlp_function, (size_t)ln->function);
		if (!(fid = profile__function(b->p, str_at(m, f->sid[0]), str_at(m, f->sid[1]),
					      str_at(m, f->sid[2]))))
			goto nomem;
		lines[n++] = (struct profile_line){fid, ln->line};
	}
	if (n == 0 && mp) {
		if ((*err = symbolize(b, mp, bid, l->address, lines, &n)))
			return 0;
		b->d->out->frames_symbolized += n > 0;
		b->d->out->frames_unsymbolized += n == 0;
	}
	if (!(b->loc_ids[i] = profile__location_exact(b->p, mid, l->address, lines, n)))
		goto nomem;
	return b->loc_ids[i];
nomem:
	*err = -ENOMEM;
	return 0;
}

static uint64_t truncated_location(struct build *b)
{
	struct profile_line line = {0, 0};

	if (b->trunc_loc)
		return b->trunc_loc;
	line.function_id = profile__function(b->p, PROFILE_TRUNCATED_FRAME, NULL, NULL);
	if (line.function_id)
		b->trunc_loc = profile__location_exact(b->p, 0, 0, &line, 1);
	return b->trunc_loc;
}

/* Sample labels from attribute indices (sample's, then the profile's). */
static size_t sample_labels(struct build *b, const struct otlp_sample *s,
			    const struct otlp_profile *p, struct profile_label *out,
			    char (*num)[32], size_t max)
{
	const struct otlp_msg *m = b->d->m;
	size_t n = 0;

	for (uint32_t k = 0; k < s->n_attrs + p->n_attrs && n < max; k++) {
		size_t ai = (size_t)OTLP_AT(m->ints, int64_t,
					    k < s->n_attrs ? s->attr_off + k
							   : p->attr_off + (k - s->n_attrs));
		const struct otlp_attr *a = &OTLP_AT(m->attrs, struct otlp_attr, ai);
		const char *key =
		    map_key(sample_label_map, sizeof(sample_label_map) / sizeof(*sample_label_map),
			    attr_key(m, a));
		const char *v;
		bool dup = false;

		if (!key)
			continue;
		for (size_t j = 0; j < n; j++)
			dup |= !strcmp(out[j].key, key);
		if (dup) /* the sample's own wins over the profile's */
			continue;
		if (!strcmp(key, PROFILE_LABEL_PID) && a->value.kind == OTLP_VAL_INT) {
			out[n++] = (struct profile_label){key, NULL, a->value.num};
			continue;
		}
		v = value_text(m, &a->value, num[n], sizeof(num[n]));
		if (v && *v)
			out[n++] = (struct profile_label){key, v, 0};
	}
	return n;
}

static int add_sample(struct build *b, const struct otlp_profile *p, const struct otlp_sample *s)
{
	const struct otlp_msg *m = b->d->m;
	struct profile_label labels[16];
	char num[16][32];
	int64_t v, values[PROFILE_N_VALUES];
	size_t n = 0, n_labels;
	int err = 0;

	if (s->stack > 0) {
		const struct otlp_stack *st =
		    &OTLP_AT(m->stacks, struct otlp_stack, (size_t)s->stack);

		for (uint32_t k = 0; k < st->n_locs && n < PROFILE_MAX_FRAMES; k++) {
			size_t li = (size_t)OTLP_AT(m->ints, int64_t, st->loc_off + k);

			if (n == PROFILE_MAX_FRAMES - 1 && st->n_locs > PROFILE_MAX_FRAMES)
				b->locs[n++] = truncated_location(b);
			else
				b->locs[n++] = location(b, li, &err);
			if (!b->locs[n - 1])
				return err ? err : -ENOMEM;
		}
	}
	if (s->n_values)
		v = OTLP_AT(m->values, int64_t, s->value_off);
	else /* each timestamp one event */
		v = s->n_timestamps > INT64_MAX ? INT64_MAX : (int64_t)s->n_timestamps;
	if (b->cpu_ns && s->n_values) {
		values[1] = v;
		values[0] = b->period_ns > 0 ? v / b->period_ns : 0;
	} else {
		values[0] = v;
		values[1] = base_sat_mul(v, b->period_ns);
	}
	n_labels = sample_labels(b, s, p, labels, num, sizeof(labels) / sizeof(*labels));
	return profile__add_sample(b->p, b->locs, n, values, labels, n_labels);
}

/* Whether (type, unit) is a CPU sample type; *ns: its values are nanoseconds. */
static bool cpu_type(const char *type, const char *unit, bool *ns)
{
	*ns = !strcmp(type, "cpu") && !strcmp(unit, "nanoseconds");
	return *ns || (!strcmp(type, "samples") && !strcmp(unit, "count"));
}

static int build_profile(struct dec *d, const struct otlp_profile *p, struct otlp_series *s)
{
	const struct otlp_msg *m = d->m;
	struct build b = {.d = d};
	int err = 0;

	b.period_ns =
	    !strcmp(str_at(m, p->period_type[1]), "nanoseconds") && p->period > 0 ? p->period : 0;
	cpu_type(str_at(m, p->sample_type[0]), str_at(m, p->sample_type[1]), &b.cpu_ns);
	b.p = profile__new(b.period_ns);
	b.loc_ids = calloc(m->locations.n + 1, sizeof(*b.loc_ids));
	b.locs = malloc(PROFILE_MAX_FRAMES * sizeof(*b.locs));
	if (!b.p || !b.loc_ids || !b.locs) {
		err = -ENOMEM;
		goto cleanup;
	}
	profile__set_time(b.p, p->time_ns > INT64_MAX ? INT64_MAX : (int64_t)p->time_ns,
			  p->duration_ns > INT64_MAX ? INT64_MAX : (int64_t)p->duration_ns);
	for (size_t i = 0; i < p->n_samples && !err; i++)
		err =
		    add_sample(&b, p, &OTLP_AT(m->samples, struct otlp_sample, p->sample_off + i));
	if (!err) {
		s->profile = b.p;
		b.p = NULL;
	}
cleanup:
	profile__free(b.p);
	free(b.loc_ids);
	free(b.locs);
	return err;
}

static int build(struct dec *d)
{
	struct otlp_msg *m = d->m;
	struct otlp_decoded *out = d->out;
	int err = 0;

	if (m->profiles.n && !(out->series = calloc(m->profiles.n, sizeof(*out->series))))
		return -ENOMEM;
	for (size_t i = 0; i < m->profiles.n && !err; i++) {
		const struct otlp_profile *p = &OTLP_AT(m->profiles, struct otlp_profile, i);
		const char *type = str_at(m, p->sample_type[0]),
			   *unit = str_at(m, p->sample_type[1]);
		struct otlp_series *s = &out->series[out->n_series];
		bool ns;

		if (!p->n_samples) { /* nothing to store: an empty chunk each, and a model */
			out->empty++;
			continue;
		}
		if (!cpu_type(type, unit, &ns)) {
			if (!out->rejected++)
				snprintf(
				    out->reject_reason, sizeof(out->reject_reason),
				    "profile %zu has sample type %.64s/%.64s: hearth stores CPU "
				    "profiles (samples/count or cpu/nanoseconds)",
				    i, type, unit);
			continue;
		}
		if (!(s->labels = calloc(OTLP_MAX_LABELS, sizeof(*s->labels))))
			return -ENOMEM;
		out->n_series++;
		err = series_labels(d, p->resource, s);
		if (!err)
			err = build_profile(d, p, s);
		if (!err && d->o->flatten) { /* one model alive at a time */
			err = profile__to_flat(s->profile, &s->flat);
			profile__free(s->profile);
			s->profile = NULL;
			err = err == -E2BIG ? -ENOMEM : err;
		}
	}
	return err;
}

int otlp_decode(const uint8_t *buf, size_t len, const struct otlp_opts *o, struct otlp_decoded *out,
		char *err, size_t errlen)
{
	struct otlp_msg m = {.limit = o->budget ? o->budget : OTLP_DEFAULT_BUDGET};
	struct dec d = {&m, o, out, err, errlen};
	int r;

	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = 0;
	r = o->json ? otlp_json__parse(&m, (const char *)buf, len, err, errlen)
		    : otlp_wire__parse(&m, buf, len, err, errlen);
	if (!r)
		r = check(&d);
	if (!r && (r = build(&d)) == -ENOMEM)
		dfail(&d, r, "out of memory");
	otlp_msg__fini(&m);
	if (r)
		otlp_decoded__fini(out);
	return r;
}

void otlp_decoded__fini(struct otlp_decoded *d)
{
	for (size_t i = 0; i < d->n_series; i++) {
		for (size_t k = 0; k < d->series[i].n_labels; k++) {
			free(d->series[i].labels[k].key);
			free(d->series[i].labels[k].value);
		}
		free(d->series[i].labels);
		profile__free(d->series[i].profile);
		profile_flat__free(d->series[i].flat);
	}
	free(d->series);
	d->series = NULL;
	d->n_series = 0;
}
