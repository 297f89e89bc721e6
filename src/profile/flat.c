/*
 * The model of a flat profile (pprof_decode = pprof_decode_flat + this): the
 * file's string table is interned once, and functions and sample labels go in
 * by string id; mappings, functions and locations are translated once each,
 * through arrays indexed by the flat profile's own indices.
 */
#include "profile_impl.h"

#include <errno.h>
#include <stdlib.h>

/* Model ids of the flat profile's strings, mappings, functions and locations. */
struct from_flat {
	const struct profile_flat *f;
	struct profile *p;
	int64_t *sids;
	uint64_t *map_ids, *fn_ids, *loc_ids;
};

static const char *str(const struct from_flat *c, uint32_t i)
{
	return profile_flat__str(c->f, i, NULL);
}

static int build_symbols(struct from_flat *c)
{
	const struct profile_flat *f = c->f;

	for (size_t i = 0; i < f->n_strings; i++)
		if ((c->sids[i] = profile__intern_string(c->p, str(c, (uint32_t)i))) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < f->n_mappings; i++) {
		const struct profile_flat_mapping *m = &f->mappings[i];

		c->map_ids[i] = profile__mapping(c->p, m->start, m->limit, m->offset,
						 str(c, m->file), str(c, m->build_id));
		if (!c->map_ids[i])
			return -ENOMEM;
	}
	for (size_t i = 0; i < f->n_comments; i++)
		if (profile__add_comment(c->p, str(c, f->comments[i])))
			return -ENOMEM;
	for (size_t i = 0; i < f->n_functions; i++) {
		const struct profile_flat_function *fn = &f->functions[i];
		int64_t sids[3] = {c->sids[fn->name], c->sids[fn->system_name],
				   c->sids[fn->filename]};

		if (!(c->fn_ids[i] = profile__function_by_sids(c->p, sids)))
			return -ENOMEM;
	}
	return 0;
}

static int build_locations(struct from_flat *c, struct profile_line *lines)
{
	const struct profile_flat *f = c->f;

	for (size_t i = 0; i < f->n_locations; i++) {
		const struct profile_flat_location *l = &f->locations[i];

		for (uint32_t j = 0; j < l->n_lines; j++) {
			lines[j].function_id = c->fn_ids[f->lines[l->line_off + j].function];
			lines[j].line = f->lines[l->line_off + j].line;
		}
		c->loc_ids[i] =
		    profile__location_exact(c->p, l->mapping ? c->map_ids[l->mapping - 1] : 0,
					    l->address, lines, l->n_lines);
		if (!c->loc_ids[i])
			return -ENOMEM;
	}
	return 0;
}

static int build_samples(struct from_flat *c, uint64_t *locs, struct profile_label_sids *labels)
{
	const struct profile_flat *f = c->f;
	int err = 0;

	for (size_t i = 0; i < f->n_samples && !err; i++) {
		const struct profile_flat_sample *s = &f->samples[i];

		for (uint32_t j = 0; j < s->n_locs; j++)
			locs[j] = c->loc_ids[f->locs[s->loc_off + j]];
		for (uint32_t j = 0; j < s->n_labels; j++) {
			const struct profile_flat_label *l = &f->labels[s->label_off + j];

			labels[j] = (struct profile_label_sids){
			    c->sids[l->key], l->str ? c->sids[l->str] : 0, l->num};
		}
		err =
		    profile__add_sample_sids(c->p, locs, s->n_locs, s->values, labels, s->n_labels);
	}
	return err;
}

int profile__from_flat(const struct profile_flat *f, struct profile **out)
{
	struct from_flat c = {.f = f};
	struct profile_line *lines = NULL;
	uint64_t *locs = NULL;
	struct profile_label_sids *labels = NULL;
	size_t max_locs = 1, max_labels = 1;
	int err = -ENOMEM;

	*out = NULL;
	for (size_t i = 0; i < f->n_samples; i++) { /* scratch for the longest lists */
		max_locs = f->samples[i].n_locs > max_locs ? f->samples[i].n_locs : max_locs;
		max_labels =
		    f->samples[i].n_labels > max_labels ? f->samples[i].n_labels : max_labels;
	}
	c.p = profile__new(f->period_ns);
	c.sids = calloc(f->n_strings + 1, sizeof(*c.sids));
	c.map_ids = calloc(f->n_mappings + 1, sizeof(*c.map_ids));
	c.fn_ids = calloc(f->n_functions + 1, sizeof(*c.fn_ids));
	c.loc_ids = calloc(f->n_locations + 1, sizeof(*c.loc_ids));
	lines = calloc(f->n_lines + 1, sizeof(*lines));
	locs = calloc(max_locs, sizeof(*locs));
	labels = calloc(max_labels, sizeof(*labels));
	if (!c.p || !c.sids || !c.map_ids || !c.fn_ids || !c.loc_ids || !lines || !locs || !labels)
		goto cleanup;
	profile__set_time(c.p, f->time_ns, f->duration_ns);
	/* an off-CPU or wall pprof stays one: pprof_encode writes its type back */
	err = profile__set_type(c.p, profile_flat__type(f)) ?: build_symbols(&c) ?: build_locations(&c, lines) ?: build_samples(&c, locs, labels);
	if (!err) {
		*out = c.p;
		c.p = NULL;
	}
cleanup:
	profile__free(c.p);
	free(c.sids);
	free(c.map_ids);
	free(c.fn_ids);
	free(c.loc_ids);
	free(lines);
	free(locs);
	free(labels);
	return err;
}
