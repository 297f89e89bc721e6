/*
 * pprof encoder: the model as a gzip-compressed profile.proto message, the format
 * `go tool pprof` and every pprof-speaking server read.
 *
 * The model is already shaped like profile.proto (1-based ids, a string table with
 * "" first), so the message is built by pointing at the model's arrays where the
 * types agree and copying into one arena where they do not; nothing is re-interned
 * except the four type/unit strings the header needs. What pprof relies on:
 *   - sample_type [samples/count, cpu/nanoseconds], period_type cpu/nanoseconds and
 *     default_sample_type "cpu", so reports show time; a model of another type
 *     (profile__set_type: memory, goroutines...) gets that type's one sample type
 *     and its period type instead, and one value per sample, so `pprof -top`
 *     shows bytes or counts, not "samples";
 *   - mapping.has_functions set when any location on it is symbolized: pprof then
 *     does not try to symbolize that mapping again from local binaries;
 *   - the first mapping is what pprof names the profile after ("File: " of its
 *     reports: mapping[0], after its own guess moved the first mapping that is
 *     neither a "*.so*" nor "[...]" there). A profile of several processes gets a
 *     mapping of no addresses first, named "N processes", rather than one of their
 *     libraries or programs; one of a single process gets its program's mapping
 *     first when the "process" label names it (enc_order_mappings).
 */
#include "profile_impl.h"

#include "profile.pb-c.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* zlib counts in 32-bit uInt: feed it at most this much per call. */
#define ENC_ZCHUNK (1u << 30)

struct enc {
	const struct profile *p;
	struct base_arena a;
	Perftools__Profiles__Profile msg;
	int64_t sid_samples, sid_count, sid_cpu, sid_ns;
	/* a typed model (profile__type): its fields, their string ids; n_values 1 */
	char tf[PROFILE_TYPE_FIELDS][PROFILE_TYPE_FIELD_MAX];
	int64_t sid_tf[PROFILE_TYPE_FIELDS];
	size_t n_values;
	/* mapping order (enc_order_mappings): the model's mapping `first` goes first
	 * (swapped with the model's first), or with `n_procs` >= 2 a mapping of no
	 * addresses named "N processes" comes first and every model id moves up one */
	uint64_t first;
	size_t n_procs;
	char procs_name[32];
};

/* The output id of the model's mapping id (0: none stays 0). */
static uint64_t enc_mapping_id(const struct enc *e, uint64_t id)
{
	if (!id)
		return 0;
	if (e->n_procs >= 2)
		return id + 1;
	if (e->first && id == e->first)
		return 1;
	if (e->first && id == 1)
		return e->first;
	return id;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* A process's key in sample ps: its pid label, else its "process" name's string id;
 * -1 without either. */
static int64_t enc_process_key(const struct enc *e, const struct profile_sample *ps,
			       const char **name)
{
	int64_t key = -1;

	for (size_t i = 0; i < ps->n_labels; i++) {
		const struct profile_label *l = &ps->labels[i];

		if (!strcmp(l->key, PROFILE_LABEL_PID) && !l->str)
			key = l->num;
		else if (!strcmp(l->key, PROFILE_LABEL_PROCESS) && l->str) {
			*name = l->str;
			if (key < 0)
				key = INT64_MIN + profile__string_id(e->p, l->str);
		}
	}
	return key;
}

/* The model's mapping whose file's base name is name (a comm name cut at 15
 * characters matches a longer one); 0 when none. */
static uint64_t enc_mapping_named(const struct enc *e, const char *name)
{
	size_t n = profile__n_mappings(e->p), len = strlen(name);
	struct profile_mapping pm;

	for (uint64_t id = 1; len && id <= n; id++) {
		const char *base;

		if (profile__get_mapping(e->p, id, &pm) || pm.is_kernel)
			continue;
		base = strrchr(pm.file, '/') ? strrchr(pm.file, '/') + 1 : pm.file;
		if (!strcmp(base, name) || (len == 15 && !strncmp(base, name, len)))
			return id;
	}
	return 0;
}

/* Counts the processes of the samples (distinct pids, or process names without
 * pids) and picks the mapping order above. 0 or -ENOMEM. */
static int enc_order_mappings(struct enc *e)
{
	size_t n = profile__n_samples(e->p), k = 0;
	int64_t *keys = n ? base_arena__alloc(&e->a, n, sizeof(*keys)) : NULL;
	const char *name = NULL;
	struct profile_sample ps;

	if (n && !keys)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int64_t key = profile__sample(e->p, i, &ps) ? -1 : enc_process_key(e, &ps, &name);

		if (key != -1)
			keys[k++] = key;
	}
	if (k)
		qsort(keys, k, sizeof(*keys), cmp_i64);
	for (size_t i = 0; i < k; i++)
		e->n_procs += i == 0 || keys[i] != keys[i - 1];
	if (e->n_procs >= 2)
		snprintf(e->procs_name, sizeof(e->procs_name), "%zu processes", e->n_procs);
	else if (e->n_procs == 1 && name)
		e->first = enc_mapping_named(e, name);
	return 0;
}

/* String id of s in the output table, appending it after the model's strings. */
static int64_t enc_extra_string(struct enc *e, const char *s)
{
	int64_t id = profile__string_id(e->p, s);

	for (size_t i = profile__n_strings(e->p); id < 0 && i < e->msg.n_string_table; i++)
		if (strcmp(e->msg.string_table[i], s) == 0)
			id = (int64_t)i;
	if (id < 0) {
		id = (int64_t)e->msg.n_string_table;
		e->msg.string_table[e->msg.n_string_table++] = (char *)s;
	}
	return id;
}

static int enc_strings(struct enc *e)
{
	size_t n = profile__n_strings(e->p);

	/* borrowed: the model's strings live until the message is packed */
	e->msg.string_table = base_arena__alloc(&e->a, n + 5 + PROFILE_TYPE_FIELDS, sizeof(char *));
	if (!e->msg.string_table)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		e->msg.string_table[i] = (char *)profile__string(e->p, i);
	e->msg.n_string_table = n;
	e->sid_samples = enc_extra_string(e, "samples");
	e->sid_count = enc_extra_string(e, "count");
	e->sid_cpu = enc_extra_string(e, "cpu");
	e->sid_ns = enc_extra_string(e, "nanoseconds");
	e->n_values = PROFILE_N_VALUES;
	if (profile__type(e->p) && profile_type_split(profile__type(e->p), e->tf) == 0) {
		for (int i = 1; i < PROFILE_TYPE_FIELDS; i++)
			e->sid_tf[i] = enc_extra_string(e, e->tf[i]);
		e->n_values = 1;
	}
	return 0;
}

static Perftools__Profiles__ValueType *enc_value_type(struct enc *e, int64_t type, int64_t unit)
{
	Perftools__Profiles__ValueType *vt = base_arena__alloc(&e->a, 1, sizeof(*vt));

	if (vt) {
		perftools__profiles__value_type__init(vt);
		vt->type = type;
		vt->unit = unit;
	}
	return vt;
}

static int enc_header(struct enc *e)
{
	Perftools__Profiles__Profile *m = &e->msg;

	m->sample_type = base_arena__alloc(&e->a, 2, sizeof(*m->sample_type));
	if (!m->sample_type)
		return -ENOMEM;
	m->sample_type[0] = enc_value_type(e, e->sid_samples, e->sid_count);
	m->sample_type[1] = enc_value_type(e, e->sid_cpu, e->sid_ns);
	m->period_type = enc_value_type(e, e->sid_cpu, e->sid_ns);
	if (!m->sample_type[0] || !m->sample_type[1] || !m->period_type)
		return -ENOMEM;
	m->n_sample_type = 2;
	m->default_sample_type = e->sid_cpu;
	if (e->n_values == 1) { /* NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT */
		m->sample_type[0] = enc_value_type(e, e->sid_tf[1], e->sid_tf[2]);
		m->period_type = enc_value_type(e, e->sid_tf[3], e->sid_tf[4]);
		if (!m->sample_type[0] || !m->period_type)
			return -ENOMEM;
		m->n_sample_type = 1;
		m->default_sample_type = e->sid_tf[1];
	}
	m->period = profile__period_ns(e->p);
	m->time_nanos = profile__time_ns(e->p);
	m->duration_nanos = profile__duration_ns(e->p);
	m->n_comment = profile__n_comments(e->p);
	m->comment = base_arena__alloc(&e->a, m->n_comment, sizeof(*m->comment));
	if (m->n_comment && !m->comment)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_comment; i++)
		m->comment[i] = profile__comment_sid(e->p, i);
	return 0;
}

/* Sets the has_* flags of mapping msgs from the locations that use them. */
static void enc_mapping_flags(struct enc *e, Perftools__Profiles__Mapping *maps)
{
	size_t n = profile__n_locations(e->p);
	struct profile_location loc;
	struct profile_function f;

	for (uint64_t id = 1; id <= n; id++) {
		Perftools__Profiles__Mapping *m;

		if (profile__get_location(e->p, id, &loc) || !loc.mapping_id)
			continue;
		m = &maps[enc_mapping_id(e, loc.mapping_id) - 1];
		m->has_functions |= loc.n_lines > 0;
		m->has_inline_frames |= loc.n_lines > 1;
		for (size_t i = 0; i < loc.n_lines; i++) {
			m->has_line_numbers |= loc.lines[i].line > 0;
			if (profile__get_function(e->p, loc.lines[i].function_id, &f) == 0)
				m->has_filenames |= f.filename[0] != '\0';
		}
	}
}

static int enc_mappings(struct enc *e)
{
	size_t n_model = profile__n_mappings(e->p), extra = e->n_procs >= 2, n = n_model + extra;
	Perftools__Profiles__Mapping *maps = base_arena__alloc(&e->a, n, sizeof(*maps));
	struct profile_mapping pm;

	e->msg.mapping = base_arena__alloc(&e->a, n, sizeof(*e->msg.mapping));
	if (n && (!maps || !e->msg.mapping))
		return -ENOMEM;
	if (extra) { /* "N processes": no addresses, nothing for pprof to symbolize */
		perftools__profiles__mapping__init(&maps[0]);
		maps[0].id = 1;
		maps[0].filename = enc_extra_string(e, e->procs_name);
		maps[0].has_functions = true;
		e->msg.mapping[0] = &maps[0];
	}
	for (size_t i = 0; i < n_model; i++) {
		uint64_t id = enc_mapping_id(e, i + 1);
		Perftools__Profiles__Mapping *m = &maps[id - 1];

		perftools__profiles__mapping__init(m);
		if (profile__get_mapping(e->p, i + 1, &pm) ||
		    profile__mapping_sids(e->p, i + 1, &m->filename, &m->build_id))
			return -EINVAL;
		m->id = id;
		m->memory_start = pm.start;
		m->memory_limit = pm.limit;
		m->file_offset = pm.offset;
		e->msg.mapping[id - 1] = m;
	}
	enc_mapping_flags(e, maps);
	e->msg.n_mapping = n;
	return 0;
}

static int enc_functions(struct enc *e)
{
	size_t n = profile__n_functions(e->p);
	Perftools__Profiles__Function *fns = base_arena__alloc(&e->a, n, sizeof(*fns));
	int64_t sids[3];

	e->msg.function = base_arena__alloc(&e->a, n, sizeof(*e->msg.function));
	if (n && (!fns || !e->msg.function))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		perftools__profiles__function__init(&fns[i]);
		if (profile__function_sids(e->p, i + 1, sids))
			return -EINVAL;
		fns[i].id = i + 1;
		fns[i].name = sids[0];
		fns[i].system_name = sids[1];
		fns[i].filename = sids[2];
		e->msg.function[i] = &fns[i];
	}
	e->msg.n_function = n;
	return 0;
}

static int enc_lines(struct enc *e, Perftools__Profiles__Location *l,
		     const struct profile_location *loc)
{
	Perftools__Profiles__Line *lines =
	    base_arena__alloc(&e->a, loc->n_lines, sizeof(*lines));

	l->line = base_arena__alloc(&e->a, loc->n_lines, sizeof(*l->line));
	if (loc->n_lines && (!lines || !l->line))
		return -ENOMEM;
	for (size_t i = 0; i < loc->n_lines; i++) {
		perftools__profiles__line__init(&lines[i]);
		lines[i].function_id = loc->lines[i].function_id;
		lines[i].line = loc->lines[i].line;
		l->line[i] = &lines[i];
	}
	l->n_line = loc->n_lines;
	return 0;
}

static int enc_locations(struct enc *e)
{
	size_t n = profile__n_locations(e->p);
	Perftools__Profiles__Location *locs = base_arena__alloc(&e->a, n, sizeof(*locs));
	struct profile_location loc;
	int err;

	e->msg.location = base_arena__alloc(&e->a, n, sizeof(*e->msg.location));
	if (n && (!locs || !e->msg.location))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		perftools__profiles__location__init(&locs[i]);
		if (profile__get_location(e->p, i + 1, &loc))
			return -EINVAL;
		locs[i].id = i + 1;
		locs[i].mapping_id = enc_mapping_id(e, loc.mapping_id);
		locs[i].address = loc.address;
		err = enc_lines(e, &locs[i], &loc);
		if (err)
			return err;
		e->msg.location[i] = &locs[i];
	}
	e->msg.n_location = n;
	return 0;
}

static int enc_labels(struct enc *e, Perftools__Profiles__Sample *s,
		      const struct profile_sample *ps)
{
	Perftools__Profiles__Label *labels =
	    base_arena__alloc(&e->a, ps->n_labels, sizeof(*labels));

	s->label = base_arena__alloc(&e->a, ps->n_labels, sizeof(*s->label));
	if (ps->n_labels && (!labels || !s->label))
		return -ENOMEM;
	for (size_t i = 0; i < ps->n_labels; i++) {
		const struct profile_label *pl = &ps->labels[i];

		perftools__profiles__label__init(&labels[i]);
		labels[i].key = profile__string_id(e->p, pl->key);
		if (pl->str)
			labels[i].str = profile__string_id(e->p, pl->str);
		else
			labels[i].num = pl->num;
		if (labels[i].key < 0 || labels[i].str < 0)
			return -EINVAL; /* not from this profile's string table */
		s->label[i] = &labels[i];
	}
	s->n_label = ps->n_labels;
	return 0;
}

static int enc_samples(struct enc *e)
{
	size_t n = profile__n_samples(e->p);
	Perftools__Profiles__Sample *ss = base_arena__alloc(&e->a, n, sizeof(*ss));
	int64_t *vals = base_arena__alloc(&e->a, n, sizeof(int64_t) * PROFILE_N_VALUES);
	struct profile_sample ps;
	int err;

	e->msg.sample = base_arena__alloc(&e->a, n, sizeof(*e->msg.sample));
	if (n && (!ss || !vals || !e->msg.sample))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		perftools__profiles__sample__init(&ss[i]);
		if (profile__sample(e->p, i, &ps))
			return -EINVAL;
		ss[i].location_id = (uint64_t *)ps.locs; /* borrowed, read-only while packing */
		ss[i].n_location_id = ps.n_locs;
		ss[i].value = &vals[i * PROFILE_N_VALUES];
		memcpy(ss[i].value, ps.values, sizeof(ps.values));
		ss[i].n_value = e->n_values; /* 1: values[0], the typed model's value */
		err = enc_labels(e, &ss[i], &ps);
		if (err)
			return err;
		e->msg.sample[i] = &ss[i];
	}
	e->msg.n_sample = n;
	return 0;
}

/* gzip (RFC 1952) of in into a malloc'd *out. */
static int gzip_compress(const uint8_t *in, size_t n, uint8_t **out, size_t *out_len)
{
	z_stream z;
	size_t bound, in_left = n, out_left;
	uint8_t *buf = NULL;
	int zr = Z_OK, err = -ENOMEM;

	memset(&z, 0, sizeof(z));
	/* Level 1, as Go's runtime/pprof writes profiles: the agent encodes one every
	 * interval, and level 6 was 13% of its CPU on bench/fleet (docs/memory.md). */
	if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY))
		return -ENOMEM;
	bound = deflateBound(&z, n);
	buf = malloc(bound);
	if (!buf)
		goto cleanup;
	z.next_in = (Bytef *)in;
	z.next_out = buf;
	out_left = bound;
	while (zr == Z_OK) {
		uInt ci = in_left > ENC_ZCHUNK ? ENC_ZCHUNK : (uInt)in_left;
		uInt co = out_left > ENC_ZCHUNK ? ENC_ZCHUNK : (uInt)out_left;

		z.avail_in = ci;
		z.avail_out = co;
		zr = deflate(&z, ci == in_left ? Z_FINISH : Z_NO_FLUSH);
		in_left -= ci - z.avail_in;
		out_left -= co - z.avail_out;
	}
	err = zr == Z_STREAM_END ? 0 : -EIO;
	if (!err) {
		*out = buf;
		*out_len = bound - out_left;
		buf = NULL;
	}
cleanup:
	deflateEnd(&z);
	free(buf);
	return err;
}

static int enc_build(struct enc *e)
{
	int err = enc_strings(e);

	if (!err)
		err = enc_order_mappings(e);
	if (!err)
		err = enc_header(e);
	if (!err)
		err = enc_mappings(e);
	if (!err)
		err = enc_functions(e);
	if (!err)
		err = enc_locations(e);
	if (!err)
		err = enc_samples(e);
	return err;
}

int pprof_encode(const struct profile *p, uint8_t **buf, size_t *len)
{
	struct enc e = {.p = p};
	uint8_t *raw = NULL;
	size_t n;
	int err;

	perftools__profiles__profile__init(&e.msg);
	err = enc_build(&e);
	if (err)
		goto cleanup;
	n = perftools__profiles__profile__get_packed_size(&e.msg);
	raw = malloc(n ? n : 1);
	if (!raw) {
		err = -ENOMEM;
		goto cleanup;
	}
	perftools__profiles__profile__pack(&e.msg, raw);
	err = gzip_compress(raw, n, buf, len);
cleanup:
	free(raw);
	base_arena__fini(&e.a);
	return err;
}

int pprof_message(const struct profile *p, int (*fn)(const void *msg, void *ctx), void *ctx)
{
	struct enc e = {.p = p};
	int err;

	perftools__profiles__profile__init(&e.msg);
	err = enc_build(&e) ?: fn(&e.msg, ctx);
	base_arena__fini(&e.a);
	return err;
}

int pprof_write(const struct profile *p, FILE *f)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int err = pprof_encode(p, &buf, &len);

	if (!err && (fwrite(buf, 1, len, f) != len || fflush(f) != 0))
		err = -EIO;
	free(buf);
	return err;
}
