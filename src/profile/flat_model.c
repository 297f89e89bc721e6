/*
 * The flat profile of a model (profile__to_flat), the inverse of flat.c: what
 * a producer that builds a model (the agent's collector, the folded and lines
 * parsers) hands to a consumer of flat profiles (the store's one ingest path)
 * without encoding a pprof and decoding it again. The model's ids are 1-based
 * and dense, so each flat index is the model id minus one and nothing is
 * looked up but the string ids of sample labels.
 */
#include "profile_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void *alloc0(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

/* String i of the model, or past its table extra[i - n]. */
static const char *str_at(const struct profile *p, size_t n, const char *const *extra, size_t i)
{
	return i < n ? profile__string(p, i) : extra[i - n];
}

/* The model's string table, id for id (id 0 is ""), into one buffer, and after
 * it the n_extra strings of extra. */
static int copy_strings(const struct profile *p, const char *const *extra, size_t n_extra,
			struct profile_flat_box *b)
{
	size_t n_model = profile__n_strings(p), n = n_model + n_extra, bytes = 0;
	char *buf;

	for (size_t i = 0; i < n; i++)
		bytes += strlen(str_at(p, n_model, extra, i)) + 1;
	if (bytes > UINT32_MAX)
		return -E2BIG; /* str_off is 32-bit, as for a decoded pprof */
	b->str_off = alloc0(n + 1, sizeof(*b->str_off));
	buf = malloc(bytes ? bytes : 1);
	if (!b->str_off || !buf) {
		free(buf);
		return -ENOMEM;
	}
	b->m.str_buf = buf; /* freed with the box, as a decoded pprof's strings are */
	for (size_t i = 0, off = 0; i < n; i++) {
		const char *str = str_at(p, n_model, extra, i);
		size_t len = strlen(str) + 1;

		memcpy(buf + off, str, len);
		b->str_off[i] = (uint32_t)off;
		off += len;
		b->str_off[i + 1] = (uint32_t)off;
	}
	b->f.n_strings = n;
	b->f.str_buf = buf;
	b->f.str_off = b->str_off;
	return 0;
}

static int copy_symbols(const struct profile *p, struct profile_flat_box *b)
{
	size_t nm = profile__n_mappings(p), nf = profile__n_functions(p);
	int64_t file, build, sids[3];
	struct profile_mapping m;

	b->mappings = alloc0(nm, sizeof(*b->mappings));
	b->functions = alloc0(nf, sizeof(*b->functions));
	if (!b->mappings || !b->functions)
		return -ENOMEM;
	for (size_t i = 0; i < nm; i++) {
		if (profile__get_mapping(p, i + 1, &m) ||
		    profile__mapping_sids(p, i + 1, &file, &build))
			return -EINVAL;
		b->mappings[i] = (struct profile_flat_mapping){m.start, m.limit, m.offset,
							       (uint32_t)file, (uint32_t)build};
	}
	for (size_t i = 0; i < nf; i++) {
		if (profile__function_sids(p, i + 1, sids))
			return -EINVAL;
		b->functions[i] = (struct profile_flat_function){
		    (uint32_t)sids[0], (uint32_t)sids[1], (uint32_t)sids[2]};
	}
	b->f.n_mappings = nm;
	b->f.n_functions = nf;
	b->f.mappings = b->mappings;
	b->f.functions = b->functions;
	return 0;
}

static int copy_locations(const struct profile *p, struct profile_flat_box *b)
{
	size_t n = profile__n_locations(p), n_lines = 0, k = 0;
	struct profile_location l;

	for (size_t i = 0; i < n; i++)
		n_lines += profile__get_location(p, i + 1, &l) ? 0 : l.n_lines;
	b->locations = alloc0(n, sizeof(*b->locations));
	b->lines = alloc0(n_lines, sizeof(*b->lines));
	if (!b->locations || !b->lines)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (profile__get_location(p, i + 1, &l) || k + l.n_lines > n_lines)
			return -EINVAL;
		b->locations[i] = (struct profile_flat_location){l.address, (uint32_t)l.mapping_id,
								 (uint32_t)k, (uint32_t)l.n_lines};
		for (size_t j = 0; j < l.n_lines; j++)
			b->lines[k++] = (struct profile_flat_line){
			    (uint32_t)(l.lines[j].function_id - 1), l.lines[j].line};
	}
	b->f.n_locations = n;
	b->f.n_lines = k;
	b->f.locations = b->locations;
	b->f.lines = b->lines;
	return 0;
}

/* One sample's labels. A string label with an empty value has no flat form (a
 * flat label with the empty string is numeric) and means no label to the
 * store: it is left out. */
static int copy_labels(const struct profile *p, const struct profile_sample *sm,
		       struct profile_flat_label *out, size_t *n)
{
	*n = 0;
	for (size_t j = 0; j < sm->n_labels; j++) {
		const struct profile_label *l = &sm->labels[j];
		int64_t key = profile__string_id(p, l->key);
		int64_t str = l->str ? profile__string_id(p, l->str) : 0;

		if (key < 0 || str < 0)
			return -EINVAL; /* the model interns every label string */
		if (l->str && str == 0)
			continue;
		out[(*n)++] = (struct profile_flat_label){(uint32_t)key, (uint32_t)str, l->num};
	}
	return 0;
}

static int copy_samples(const struct profile *p, struct profile_flat_box *b)
{
	size_t n = profile__n_samples(p), n_locs = 0, n_labels = 0, nl = 0, nb = 0, k;
	struct profile_sample sm;
	int err;

	for (size_t i = 0; i < n; i++)
		if (!profile__sample(p, i, &sm)) {
			n_locs += sm.n_locs;
			n_labels += sm.n_labels;
		}
	b->samples = alloc0(n, sizeof(*b->samples));
	b->locs = alloc0(n_locs, sizeof(*b->locs));
	b->labels = alloc0(n_labels, sizeof(*b->labels));
	if (!b->samples || !b->locs || !b->labels)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (profile__sample(p, i, &sm) || nl + sm.n_locs > n_locs ||
		    nb + sm.n_labels > n_labels)
			return -EINVAL;
		struct profile_flat_sample *o = &b->samples[i];

		o->loc_off = (uint32_t)nl;
		o->n_locs = (uint32_t)sm.n_locs;
		for (size_t j = 0; j < sm.n_locs; j++)
			b->locs[nl++] = (uint32_t)(sm.locs[j] - 1);
		err = copy_labels(p, &sm, b->labels + nb, &k);
		if (err)
			return err;
		o->label_off = (uint32_t)nb;
		o->n_labels = (uint32_t)k;
		nb += k;
		memcpy(o->values, sm.values, sizeof(o->values));
	}
	b->f.n_samples = n;
	b->f.n_labels = nb;
	b->f.samples = b->samples;
	b->f.locs = b->locs;
	b->f.labels = b->labels;
	return 0;
}

static int copy_comments(const struct profile *p, struct profile_flat_box *b)
{
	size_t n = profile__n_comments(p);

	b->comments = alloc0(n, sizeof(*b->comments));
	if (!b->comments)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int64_t sid = profile__comment_sid(p, i);

		if (sid < 0)
			return -EINVAL;
		b->comments[i] = (uint32_t)sid;
	}
	b->f.n_comments = n;
	b->f.comments = b->comments;
	return 0;
}

/*
 * A typed model's sample type and period type (profile__set_type) as the flat
 * profile's, their four strings after the model's (so profile_flat__type and
 * ingest see an off-CPU or wall model as they see its pprof).
 */
static int copy_type(const struct profile *p, struct profile_flat_box *b)
{
	char tf[PROFILE_TYPE_FIELDS][PROFILE_TYPE_FIELD_MAX];
	const char *extra[4];
	uint32_t n = (uint32_t)profile__n_strings(p);
	int err;

	if (!profile__type(p) || profile_type_split(profile__type(p), tf))
		return copy_strings(p, NULL, 0, b);
	for (int i = 0; i < 4; i++)
		extra[i] = tf[i + 1];
	err = copy_strings(p, extra, 4, b);
	if (!err && !(b->sample_types = calloc(1, sizeof(*b->sample_types))))
		err = -ENOMEM;
	if (err)
		return err;
	b->sample_types[0] = (struct profile_flat_value_type){n, n + 1};
	b->f.n_sample_types = 1;
	b->f.sample_types = b->sample_types;
	b->f.period_type = (struct profile_flat_value_type){n + 2, n + 3};
	return 0;
}

int profile__to_flat(const struct profile *p, struct profile_flat **out)
{
	struct profile_flat_box *b = calloc(1, sizeof(*b));
	int err = -ENOMEM;

	*out = NULL;
	if (!b)
		goto cleanup;
	b->f.time_ns = profile__time_ns(p);
	b->f.duration_ns = profile__duration_ns(p);
	b->f.period_ns = profile__period_ns(p);
	err = copy_type(p, b) ?: copy_symbols(p, b) ?: copy_locations(p, b) ?:
	      copy_samples(p, b) ?: copy_comments(p, b);
	if (!err) {
		*out = &b->f;
		b = NULL;
	}
cleanup:
	profile_flat__free(b ? &b->f : NULL);
	return err;
}
