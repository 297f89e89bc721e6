/*
 * The interned profile model (see profile.h): one string table, and arrays of
 * mappings, functions, locations and samples, each with a hash index so that
 * interning the same thing twice returns the first id. Ids are array index + 1,
 * exactly as profile.proto numbers them, so the pprof encoder writes them as is.
 *
 * Records hold string ids, never pointers into growing arrays; the strings
 * themselves live in the string table's arena, whose blocks never move, so the
 * `const char *` the read accessors hand out stay valid while the profile grows
 * (labels keep such pointers too). Samples' labels and locations' lines live in
 * a second arena, samples' location lists in a third (a caller may write the
 * next list in place: profile__sample_locs_room): a merged profile has tens of
 * thousands of them, freed at once. Sample values are summed with saturation:
 * merging never overflows.
 */
#include "profile_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct mapping_rec {
	uint64_t start, limit, offset;
	int64_t file, build_id; /* string ids */
};

struct function_rec {
	int64_t name, system_name, filename; /* string ids */
};

struct location_rec {
	uint64_t mapping_id, address;
	size_t n_lines;
	struct profile_line *lines; /* in the sample arena */
};

struct sample_rec {
	size_t n_locs, n_labels;
	uint64_t *locs;		      /* in the profile's locs arena */
	struct profile_label *labels; /* in the sample arena, shared by consecutive samples with
				       * the same labels; strings borrowed from the string table */
	int64_t values[PROFILE_N_VALUES];
};

/*
 * The labels of the last add: a merge adds runs of samples with one label set
 * (one series, one process), so they are interned and sorted once per run.
 * in: that call's labels, interned, in the caller's order (to compare the next
 * call's with); sorted: the same sorted (the sample key); committed: the arena
 * copy samples share, NULL until a sample with these labels is appended.
 */
struct label_cache {
	struct profile_label *in, *sorted; /* owned, n entries each */
	size_t n, cap;
	bool valid;
	struct profile_label *committed;
};

struct profile {
	int64_t period_ns, time_ns, duration_ns;
	char *type; /* profile type ID (profile__set_type); NULL: CPU */
	char *unit; /* its SAMPLE_UNIT field (NULL: CPU) */
	struct base_strtab strs;
	struct mapping_rec *maps;
	size_t n_maps, cap_maps;
	struct function_rec *funcs;
	size_t n_funcs, cap_funcs;
	struct location_rec *locs;
	size_t n_locs, cap_locs;
	struct sample_rec *samples;
	size_t n_samples, cap_samples;
	int64_t *comments; /* string ids */
	size_t n_comments, cap_comments;
	struct base_hmap map_idx, func_idx, loc_idx, sample_idx;
	/* samples [0, n_indexed) are in sample_idx; profile__append_sample leaves the
	 * rest for the next profile__add_sample to index */
	size_t n_indexed;
	/* every sample's locs and labels and every location's lines: one free at the end
	 * instead of one per record */
	struct base_arena sample_arena;
	/* samples' location lists alone, so that profile__sample_locs_room's room stays at
	 * this arena's end while a caller fills it (and adds locations meanwhile) */
	struct base_arena locs_arena;
	uint64_t *room; /* the last profile__sample_locs_room, until a sample is appended */
	size_t room_n;
	struct label_cache lc;
	bool group_unnamed; /* profile__set_group_unnamed */
};

void profile__set_group_unnamed(struct profile *p, bool on)
{
	p->group_unnamed = on;
}

bool profile__groups_unnamed(const struct profile *p)
{
	return p->group_unnamed;
}

size_t profile__bytes(const struct profile *p)
{
	const struct base_hmap *idx[] = {&p->strs.idx, &p->map_idx, &p->func_idx, &p->loc_idx,
					 &p->sample_idx};
	size_t n = sizeof(*p) + p->strs.cap * sizeof(*p->strs.strs) +
		   base_arena__bytes(&p->strs.arena) + p->cap_maps * sizeof(*p->maps) +
		   p->cap_funcs * sizeof(*p->funcs) + p->cap_locs * sizeof(*p->locs) +
		   p->cap_samples * sizeof(*p->samples) + p->cap_comments * sizeof(*p->comments) +
		   base_arena__bytes(&p->sample_arena) + base_arena__bytes(&p->locs_arena) +
		   2 * p->lc.cap * sizeof(*p->lc.in);

	for (size_t i = 0; i < sizeof(idx) / sizeof(*idx); i++)
		n += idx[i]->cap * sizeof(*idx[i]->slots);
	return n;
}

struct profile *profile__new(int64_t period_ns)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (base_strtab__init(&p->strs)) {
		free(p);
		return NULL;
	}
	p->period_ns = period_ns;
	return p;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	base_arena__fini(&p->sample_arena);
	base_arena__fini(&p->locs_arena);
	free(p->lc.in);
	free(p->lc.sorted);
	free(p->maps);
	free(p->funcs);
	free(p->locs);
	free(p->samples);
	free(p->comments);
	base_hmap__fini(&p->map_idx);
	base_hmap__fini(&p->func_idx);
	base_hmap__fini(&p->loc_idx);
	base_hmap__fini(&p->sample_idx);
	base_strtab__fini(&p->strs);
	free(p->type);
	free(p->unit);
	free(p);
}

const char *profile_time_type(const char *type, const char *unit)
{
	if (!type || !unit || strcmp(unit, "nanoseconds"))
		return NULL;
	if (!strcmp(type, "off_cpu"))
		return PROFILE_OFF_CPU_TYPE;
	return !strcmp(type, "wall") ? PROFILE_WALL_TYPE : NULL;
}

const char *profile_flat__type(const struct profile_flat *f)
{
	const char *found = NULL;

	for (size_t i = 0; f && i < f->n_sample_types; i++) {
		const struct profile_flat_value_type *vt = &f->sample_types[i];
		const char *t, *u;

		if (vt->type >= f->n_strings || vt->unit >= f->n_strings)
			continue;
		t = profile_flat__str(f, vt->type, NULL);
		u = profile_flat__str(f, vt->unit, NULL);
		if (!strcmp(t, "cpu") && !strcmp(u, "nanoseconds"))
			return NULL;
		if (!found)
			found = profile_time_type(t, u);
	}
	return found;
}

bool profile_type_is_cpu(const char *type)
{
	return !type || !strncmp(type, PROFILE_CPU_TYPE_PREFIX, strlen(PROFILE_CPU_TYPE_PREFIX));
}

int profile__set_type(struct profile *p, const char *type)
{
	char f[PROFILE_TYPE_FIELDS][PROFILE_TYPE_FIELD_MAX];
	char *t = NULL, *u = NULL;

	if (!profile_type_is_cpu(type)) {
		t = strdup(type);
		u = strdup(profile_type_split(type, f) ? "count" : f[2]);
		if (!t || !u) {
			free(t);
			free(u);
			return -ENOMEM;
		}
	}
	free(p->type);
	free(p->unit);
	p->type = t;
	p->unit = u;
	return 0;
}

const char *profile__unit(const struct profile *p, int vi)
{
	if (p && p->unit)
		return p->unit;
	return vi ? "nanoseconds" : "samples";
}

const char *profile__type(const struct profile *p)
{
	return p->type;
}

int profile_type_split(const char *type, char fields[PROFILE_TYPE_FIELDS][PROFILE_TYPE_FIELD_MAX])
{
	const char *s = type;

	for (int i = 0; i < PROFILE_TYPE_FIELDS; i++) {
		size_t n = strcspn(s, ":");

		if (n == 0 || n >= PROFILE_TYPE_FIELD_MAX ||
		    (i < PROFILE_TYPE_FIELDS - 1) != (s[n] == ':'))
			return -EINVAL;
		memcpy(fields[i], s, n);
		fields[i][n] = '\0';
		s += n + (s[n] == ':');
	}
	return 0;
}

void profile__set_time(struct profile *p, int64_t time_ns, int64_t duration_ns)
{
	p->time_ns = time_ns;
	p->duration_ns = duration_ns;
}

int64_t profile__time_ns(const struct profile *p)
{
	return p->time_ns;
}

int64_t profile__duration_ns(const struct profile *p)
{
	return p->duration_ns;
}

int64_t profile__period_ns(const struct profile *p)
{
	return p->period_ns;
}

int profile__add_comment(struct profile *p, const char *comment)
{
	int64_t sid = base_strtab__intern(&p->strs, comment);

	if (sid < 0)
		return (int)sid;
	if (base_grow((void **)&p->comments, &p->cap_comments, p->n_comments + 1,
		      sizeof(*p->comments)))
		return -ENOMEM;
	p->comments[p->n_comments++] = sid;
	return 0;
}

size_t profile__n_comments(const struct profile *p)
{
	return p->n_comments;
}

const char *profile__comment(const struct profile *p, size_t i)
{
	return i < p->n_comments ? p->strs.strs[p->comments[i]] : NULL;
}

int64_t profile__comment_sid(const struct profile *p, size_t i)
{
	return i < p->n_comments ? p->comments[i] : -ENOENT;
}

/* ---- mappings ---- */

static bool mapping_eq(const void *ctx, size_t idx, const void *key)
{
	const struct mapping_rec *a = &((const struct profile *)ctx)->maps[idx], *b = key;

	return a->start == b->start && a->limit == b->limit && a->offset == b->offset &&
	       a->file == b->file && a->build_id == b->build_id;
}

static uint64_t mapping_hash(const struct mapping_rec *m)
{
	uint64_t h = base_hash_u64(BASE_HASH_SEED, m->start);

	h = base_hash_u64(h, m->limit);
	h = base_hash_u64(h, m->offset);
	h = base_hash_u64(h, (uint64_t)m->file);
	return base_hash_u64(h, (uint64_t)m->build_id);
}

uint64_t profile__mapping(struct profile *p, uint64_t start, uint64_t limit, uint64_t offset,
			  const char *file, const char *build_id)
{
	struct mapping_rec m = {.start = start, .limit = limit, .offset = offset};
	uint64_t hash;
	size_t i;

	m.file = base_strtab__intern(&p->strs, file);
	m.build_id = base_strtab__intern(&p->strs, build_id);
	if (m.file < 0 || m.build_id < 0)
		return 0;
	hash = mapping_hash(&m);
	i = base_hmap__find(&p->map_idx, hash, mapping_eq, p, &m);
	if (i != SIZE_MAX)
		return i + 1;
	if (base_grow((void **)&p->maps, &p->cap_maps, p->n_maps + 1, sizeof(m)) ||
	    base_hmap__insert(&p->map_idx, hash, p->n_maps))
		return 0;
	p->maps[p->n_maps++] = m;
	return p->n_maps;
}

size_t profile__n_mappings(const struct profile *p)
{
	return p->n_maps;
}

int profile__get_mapping(const struct profile *p, uint64_t id, struct profile_mapping *out)
{
	const struct mapping_rec *m;

	if (id == 0 || id > p->n_maps)
		return -ENOENT;
	m = &p->maps[id - 1];
	out->start = m->start;
	out->limit = m->limit;
	out->offset = m->offset;
	out->file = p->strs.strs[m->file];
	out->build_id = p->strs.strs[m->build_id];
	out->is_kernel = strcmp(out->file, PROFILE_KERNEL_MAPPING) == 0;
	return 0;
}

int profile__mapping_sids(const struct profile *p, uint64_t id, int64_t *file, int64_t *build_id)
{
	if (id == 0 || id > p->n_maps)
		return -ENOENT;
	*file = p->maps[id - 1].file;
	*build_id = p->maps[id - 1].build_id;
	return 0;
}

/* ---- functions ---- */

static bool function_eq(const void *ctx, size_t idx, const void *key)
{
	const struct function_rec *a = &((const struct profile *)ctx)->funcs[idx], *b = key;

	return a->name == b->name && a->system_name == b->system_name && a->filename == b->filename;
}

uint64_t profile__function(struct profile *p, const char *name, const char *system_name,
			   const char *filename)
{
	int64_t sids[3] = {
	    base_strtab__intern(&p->strs, name),
	    base_strtab__intern(&p->strs, system_name),
	    base_strtab__intern(&p->strs, filename),
	};

	return profile__function_by_sids(p, sids);
}

size_t profile__n_functions(const struct profile *p)
{
	return p->n_funcs;
}

int profile__get_function(const struct profile *p, uint64_t id, struct profile_function *out)
{
	const struct function_rec *f;

	if (id == 0 || id > p->n_funcs)
		return -ENOENT;
	f = &p->funcs[id - 1];
	out->name = p->strs.strs[f->name];
	out->system_name = p->strs.strs[f->system_name];
	out->filename = p->strs.strs[f->filename];
	return 0;
}

uint64_t profile__function_by_sids(struct profile *p, const int64_t sids[3])
{
	struct function_rec f = {sids[0], sids[1], sids[2]};
	uint64_t hash;
	size_t i;

	for (int k = 0; k < 3; k++)
		if (sids[k] < 0 || (size_t)sids[k] >= p->strs.n)
			return 0;
	hash = base_hash_u64(BASE_HASH_SEED, (uint64_t)f.name);
	hash = base_hash_u64(hash, (uint64_t)f.system_name);
	hash = base_hash_u64(hash, (uint64_t)f.filename);
	i = base_hmap__find(&p->func_idx, hash, function_eq, p, &f);
	if (i != SIZE_MAX)
		return i + 1;
	if (base_grow((void **)&p->funcs, &p->cap_funcs, p->n_funcs + 1, sizeof(f)) ||
	    base_hmap__insert(&p->func_idx, hash, p->n_funcs))
		return 0;
	p->funcs[p->n_funcs++] = f;
	return p->n_funcs;
}

int profile__function_sids(const struct profile *p, uint64_t id, int64_t sids[3])
{
	if (id == 0 || id > p->n_funcs)
		return -ENOENT;
	sids[0] = p->funcs[id - 1].name;
	sids[1] = p->funcs[id - 1].system_name;
	sids[2] = p->funcs[id - 1].filename;
	return 0;
}

/* ---- locations ---- */

/* A location key; exact also compares lines (profile__location_exact). */
struct location_key {
	uint64_t mapping_id, address;
	const struct profile_line *lines;
	size_t n_lines;
	bool exact;
};

static bool location_eq(const void *ctx, size_t idx, const void *key)
{
	const struct location_rec *a = &((const struct profile *)ctx)->locs[idx];
	const struct location_key *k = key;

	if (a->mapping_id != k->mapping_id || a->address != k->address)
		return false;
	if (!k->exact)
		return true;
	if (a->n_lines != k->n_lines)
		return false;
	for (size_t i = 0; i < k->n_lines; i++)
		if (a->lines[i].function_id != k->lines[i].function_id ||
		    a->lines[i].line != k->lines[i].line)
			return false;
	return true;
}

static bool location_args_ok(const struct profile *p, const struct location_key *k)
{
	if (k->mapping_id > p->n_maps || (k->n_lines && !k->lines))
		return false;
	for (size_t i = 0; i < k->n_lines; i++)
		if (k->lines[i].function_id == 0 || k->lines[i].function_id > p->n_funcs)
			return false;
	return true;
}

static uint64_t location_add(struct profile *p, const struct location_key *k)
{
	/* Only (mapping, address) is hashed, so exact and plain lookups share one index. */
	uint64_t hash = base_hash_u64(base_hash_u64(BASE_HASH_SEED, k->mapping_id), k->address);
	struct location_rec *l;
	size_t i;

	if (!location_args_ok(p, k))
		return 0;
	i = base_hmap__find(&p->loc_idx, hash, location_eq, p, k);
	if (i != SIZE_MAX)
		return i + 1;
	if (base_grow((void **)&p->locs, &p->cap_locs, p->n_locs + 1, sizeof(*l)))
		return 0;
	l = &p->locs[p->n_locs];
	*l = (struct location_rec){.mapping_id = k->mapping_id, .address = k->address};
	if (k->n_lines) {
		l->lines =
		    base_arena__copy(&p->sample_arena, k->lines, k->n_lines, sizeof(*l->lines));
		if (!l->lines)
			return 0;
		l->n_lines = k->n_lines;
	}
	if (base_hmap__insert(&p->loc_idx, hash, p->n_locs))
		return 0; /* the lines' arena memory goes with the profile */
	return ++p->n_locs;
}

uint64_t profile__location(struct profile *p, uint64_t mapping_id, uint64_t address,
			   const struct profile_line *lines, size_t n_lines)
{
	struct location_key k = {mapping_id, address, lines, n_lines, false};

	return location_add(p, &k);
}

uint64_t profile__location_exact(struct profile *p, uint64_t mapping_id, uint64_t address,
				 const struct profile_line *lines, size_t n_lines)
{
	struct location_key k = {mapping_id, address, lines, n_lines, true};

	return location_add(p, &k);
}

size_t profile__n_locations(const struct profile *p)
{
	return p->n_locs;
}

int profile__get_location(const struct profile *p, uint64_t id, struct profile_location *out)
{
	const struct location_rec *l;

	if (id == 0 || id > p->n_locs)
		return -ENOENT;
	l = &p->locs[id - 1];
	out->mapping_id = l->mapping_id;
	out->address = l->address;
	out->n_lines = l->n_lines;
	out->lines = l->lines;
	return 0;
}

/* ---- strings ---- */

size_t profile__n_strings(const struct profile *p)
{
	return p->strs.n;
}

const char *profile__string(const struct profile *p, size_t id)
{
	return id < p->strs.n ? p->strs.strs[id] : NULL;
}

int64_t profile__string_id(const struct profile *p, const char *s)
{
	return base_strtab__find(&p->strs, s);
}

int64_t profile__intern_string(struct profile *p, const char *s)
{
	return base_strtab__intern(&p->strs, s);
}

/* ---- samples ---- */

/* A sample key: location ids and labels already interned and sorted. */
struct sample_key {
	const uint64_t *locs;
	size_t n_locs;
	const struct profile_label *labels;
	size_t n_labels;
};

static bool sample_eq(const void *ctx, size_t idx, const void *key)
{
	const struct sample_rec *a = &((const struct profile *)ctx)->samples[idx];
	const struct sample_key *k = key;

	if (a->n_locs != k->n_locs || a->n_labels != k->n_labels)
		return false;
	if (k->n_locs && memcmp(a->locs, k->locs, k->n_locs * sizeof(*k->locs)) != 0)
		return false;
	/* label strings are interned: equal strings are the same pointer */
	for (size_t i = 0; i < k->n_labels; i++)
		if (a->labels[i].key != k->labels[i].key || a->labels[i].str != k->labels[i].str ||
		    a->labels[i].num != k->labels[i].num)
			return false;
	return true;
}

static uint64_t sample_hash(const struct sample_key *k)
{
	uint64_t h = BASE_HASH_SEED;

	for (size_t i = 0; i < k->n_locs; i++)
		h = base_hash_u64(h, k->locs[i]);
	for (size_t i = 0; i < k->n_labels; i++) {
		h = base_hash_u64(h, (uintptr_t)k->labels[i].key);
		h = base_hash_u64(h, (uintptr_t)k->labels[i].str);
		h = base_hash_u64(h, (uint64_t)k->labels[i].num);
	}
	return h;
}

int profile_label__cmp(const void *va, const void *vb)
{
	const struct profile_label *a = va, *b = vb;
	int c = strcmp(a->key, b->key);

	if (c)
		return c;
	if (!a->str != !b->str)
		return a->str ? 1 : -1;
	if (a->str)
		return strcmp(a->str, b->str);
	return a->num < b->num ? -1 : a->num > b->num;
}

static bool label_same(const struct profile_label *a, const struct profile_label *b)
{
	if (strcmp(a->key, b->key) || !a->str != !b->str)
		return false;
	return a->str ? strcmp(a->str, b->str) == 0 : a->num == b->num;
}

/* Empties the label cache for n new labels. 0 or -ENOMEM. */
static int labels_reset(struct label_cache *c, size_t n)
{
	c->valid = false;
	c->committed = NULL;
	if (n > c->cap) {
		/* both arrays grow alike from c->cap; it moves once both have grown */
		size_t cap_in = c->cap, cap_sorted = c->cap;

		if (base_grow((void **)&c->in, &cap_in, n, sizeof(*c->in)) ||
		    base_grow((void **)&c->sorted, &cap_sorted, n, sizeof(*c->sorted)))
			return -ENOMEM;
		c->cap = cap_sorted;
	}
	return 0;
}

/* Sorts the n labels just put in c->in into c->sorted; the cache is valid again. */
static void labels_sort(struct label_cache *c, size_t n)
{
	if (n)
		memcpy(c->sorted, c->in, n * sizeof(*c->sorted));
	if (n > 1)
		qsort(c->sorted, n, sizeof(*c->sorted), profile_label__cmp);
	c->n = n;
	c->valid = true;
}

/* Interns labels (in the caller's order) into the cache unless they equal the last
 * call's; p->lc.sorted then holds them interned and sorted. String labels get num 0. */
static int labels_intern(struct profile *p, const struct profile_label *in, size_t n)
{
	struct label_cache *c = &p->lc;
	size_t i;

	for (i = 0; c->valid && n == c->n && i < n; i++)
		if (!label_same(&in[i], &c->in[i]))
			break;
	if (c->valid && n == c->n && i == n)
		return 0;
	if (labels_reset(c, n))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		int64_t k = base_strtab__intern(&p->strs, in[i].key);
		int64_t s = in[i].str ? base_strtab__intern(&p->strs, in[i].str) : 0;

		if (k < 0 || s < 0)
			return -ENOMEM;
		c->in[i].key = p->strs.strs[k];
		c->in[i].str = in[i].str ? p->strs.strs[s] : NULL;
		c->in[i].num = in[i].str ? 0 : in[i].num;
	}
	labels_sort(c, n);
	return 0;
}

/* labels_intern for labels given as string ids of p (already interned: equal
 * strings are equal pointers). 0, -EINVAL (string id out of range), -ENOMEM. */
static int labels_sids(struct profile *p, const struct profile_label_sids *in, size_t n)
{
	struct label_cache *c = &p->lc;
	struct profile_label l;
	size_t i;

	for (i = 0; i < n; i++)
		if (in[i].key < 0 || (size_t)in[i].key >= p->strs.n || in[i].str < 0 ||
		    (size_t)in[i].str >= p->strs.n)
			return -EINVAL;
	for (i = 0; c->valid && n == c->n && i < n; i++) {
		l = (struct profile_label){p->strs.strs[in[i].key],
					   in[i].str ? p->strs.strs[in[i].str] : NULL,
					   in[i].str ? 0 : in[i].num};
		if (l.key != c->in[i].key || l.str != c->in[i].str || l.num != c->in[i].num)
			break;
	}
	if (c->valid && n == c->n && i == n)
		return 0;
	if (labels_reset(c, n))
		return -ENOMEM;
	for (i = 0; i < n; i++)
		c->in[i] = (struct profile_label){p->strs.strs[in[i].key],
						  in[i].str ? p->strs.strs[in[i].str] : NULL,
						  in[i].str ? 0 : in[i].num};
	labels_sort(c, n);
	return 0;
}

/* The arena copy of the label cache's sorted labels that samples share. */
static struct profile_label *labels_commit(struct profile *p)
{
	struct label_cache *c = &p->lc;

	if (!c->committed && c->n)
		c->committed =
		    base_arena__copy(&p->sample_arena, c->sorted, c->n, sizeof(*c->committed));
	return c->committed;
}

/* Appends the sample of key k (known to be new); its labels, when it has any, are
 * labels (in the sample arena, shared). Indexing is left to index_samples. */
static int sample_append(struct profile *p, const struct sample_key *k,
			 const int64_t values[PROFILE_N_VALUES], struct profile_label *labels)
{
	struct sample_rec s = {.n_locs = k->n_locs, .n_labels = k->n_labels, .labels = labels};
	bool in_room = k->locs && k->locs == p->room;

	if (in_room && k->n_locs > p->room_n)
		return -EINVAL; /* written past the room */
	p->room = NULL;		/* the arena's end moves on: the room is gone either way */
	p->room_n = 0;
	if (base_grow((void **)&p->samples, &p->cap_samples, p->n_samples + 1, sizeof(s)))
		return -ENOMEM;
	if (k->n_locs) {
		/* locations written into the room are taken where they are: no copy */
		s.locs =
		    in_room ? base_arena__take(&p->locs_arena, k->n_locs, sizeof(*s.locs))
			    : base_arena__copy(&p->locs_arena, k->locs, k->n_locs, sizeof(*s.locs));
		if (!s.locs)
			return -ENOMEM;
	}
	memcpy(s.values, values, sizeof(s.values));
	p->samples[p->n_samples++] = s;
	return 0;
}

/* Puts the samples appended without an index entry into sample_idx. */
static int index_samples(struct profile *p)
{
	for (; p->n_indexed < p->n_samples; p->n_indexed++) {
		const struct sample_rec *r = &p->samples[p->n_indexed];
		struct sample_key k = {r->locs, r->n_locs, r->labels, r->n_labels};

		if (base_hmap__insert(&p->sample_idx, sample_hash(&k), p->n_indexed))
			return -ENOMEM;
	}
	return 0;
}

/* Adds (or sums into) the sample of key k, whose labels are the label cache's. */
static int sample_add_key(struct profile *p, struct sample_key *k,
			  const int64_t values[PROFILE_N_VALUES])
{
	uint64_t hash = sample_hash(k);
	struct profile_label *labels = NULL;
	size_t i;
	int err = index_samples(p);

	if (err)
		return err;
	i = base_hmap__find(&p->sample_idx, hash, sample_eq, p, k);
	if (i != SIZE_MAX) {
		for (int v = 0; v < PROFILE_N_VALUES; v++)
			p->samples[i].values[v] = base_sat_add(p->samples[i].values[v], values[v]);
		return 0;
	}
	if (k->n_labels && !(labels = labels_commit(p)))
		return -ENOMEM;
	err = sample_append(p, k, values, labels);
	if (!err && base_hmap__insert(&p->sample_idx, hash, p->n_indexed)) {
		p->n_samples--; /* its arena memory goes with the profile */
		return -ENOMEM;
	}
	if (!err)
		p->n_indexed++;
	return err;
}

static int sample_args_ok(const struct profile *p, const uint64_t *locs, size_t n_locs,
			  const int64_t *values, const struct profile_label *labels,
			  size_t n_labels)
{
	if (!values || (n_locs && !locs) || (n_labels && !labels))
		return -EINVAL;
	for (size_t i = 0; i < n_locs; i++)
		if (locs[i] == 0 || locs[i] > p->n_locs)
			return -EINVAL;
	for (size_t i = 0; i < n_labels; i++)
		if (!labels[i].key)
			return -EINVAL;
	return 0;
}

int profile__add_sample(struct profile *p, const uint64_t *locs, size_t n_locs,
			const int64_t values[PROFILE_N_VALUES], const struct profile_label *labels,
			size_t n_labels)
{
	struct sample_key k = {locs, n_locs, NULL, n_labels};
	int err = sample_args_ok(p, locs, n_locs, values, labels, n_labels)
		      ?: labels_intern(p, labels, n_labels);

	if (err)
		return err;
	k.labels = p->lc.sorted;
	return sample_add_key(p, &k, values);
}

int profile__append_sample(struct profile *p, const uint64_t *locs, size_t n_locs,
			   const int64_t values[PROFILE_N_VALUES],
			   const struct profile_label *labels, size_t n_labels)
{
	struct sample_key k = {locs, n_locs, NULL, n_labels};
	struct profile_label *shared = NULL;
	int err = sample_args_ok(p, locs, n_locs, values, labels, n_labels)
		      ?: labels_intern(p, labels, n_labels);

	if (err)
		return err;
	if (n_labels && !(shared = labels_commit(p)))
		return -ENOMEM;
	k.labels = shared;
	return sample_append(p, &k, values, shared);
}

int profile__add_sample_sids(struct profile *p, const uint64_t *locs, size_t n_locs,
			     const int64_t values[PROFILE_N_VALUES],
			     const struct profile_label_sids *labels, size_t n_labels)
{
	struct sample_key k = {locs, n_locs, NULL, n_labels};
	int err = sample_args_ok(p, locs, n_locs, values, NULL, 0);

	if (err || (n_labels && !labels))
		return err ? err : -EINVAL;
	err = labels_sids(p, labels, n_labels);
	if (err)
		return err;
	k.labels = p->lc.sorted;
	return sample_add_key(p, &k, values);
}

uint64_t *profile__sample_locs_room(struct profile *p, size_t max_n)
{
	p->room = base_arena__room(&p->locs_arena, max_n ? max_n : 1, sizeof(*p->room));
	p->room_n = p->room ? max_n : 0;
	return p->room;
}

size_t profile__n_samples(const struct profile *p)
{
	return p->n_samples;
}

int profile__sample(const struct profile *p, size_t i, struct profile_sample *out)
{
	const struct sample_rec *s;

	if (i >= p->n_samples)
		return -ENOENT;
	s = &p->samples[i];
	out->n_locs = s->n_locs;
	out->locs = s->locs;
	memcpy(out->values, s->values, sizeof(out->values));
	out->n_labels = s->n_labels;
	out->labels = s->labels;
	return 0;
}

int64_t profile__total(const struct profile *p, int i)
{
	int64_t t = 0;

	if (i < 0 || i >= PROFILE_N_VALUES)
		return 0;
	for (size_t s = 0; s < p->n_samples; s++)
		t = base_sat_add(t, p->samples[s].values[i]);
	return t;
}
