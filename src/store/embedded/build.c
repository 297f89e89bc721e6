/*
 * Stored stacks back into a profile (store_builder): each store id of a
 * mapping, function or location is translated to the profile's id on first
 * use and remembered in arrays indexed by store id, so a merged profile of
 * many stacks costs one array lookup per frame after warm-up.
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>

static struct estore_builder *of(struct store_builder *b)
{
	return (struct estore_builder *)b; /* its first member */
}

/* The store the builder reads. */
static struct estore *bs(const struct estore_builder *b)
{
	return estore_of(b->base.s);
}

void estore_builder_fini(struct store_builder *sb)
{
	struct estore_builder *b = of(sb);

	for (int t = 0; t < STORE_N_TABS; t++)
		free(b->xl[t]);
	free(b->locs);
}

/* The translation slot of store id in table t (grown on demand, zeroed), or NULL.
 * Sized to the table's ids at once: the table bounds it. */
static uint32_t *slot(struct estore_builder *b, int t, uint64_t id)
{
	if (id >= b->cap[t]) {
		size_t c = bs(b)->tabs[t].n + 1 > id + 1 ? bs(b)->tabs[t].n + 1 : id + 1;

		if (base_grow_zeroed((void **)&b->xl[t], &b->cap[t], c, sizeof(*b->xl[t])))
			return NULL;
	}
	return &b->xl[t][id];
}

/* Remembers profile id pid (0: failed) in slot sl; 0, -ENOMEM or -E2BIG. */
static int remember(uint32_t *sl, uint64_t pid, uint64_t *out)
{
	*out = pid;
	if (pid > UINT32_MAX)
		return -E2BIG;
	*sl = (uint32_t)pid;
	return pid ? 0 : -ENOMEM;
}

/* A stored string (its key ends with the NUL); "" when unknown. */
static const char *str(struct estore_builder *b, uint64_t id)
{
	size_t len;
	const uint8_t *k = store_itab__key(&bs(b)->tabs[STORE_T_STRINGS], id, &len);

	return k && len && k[len - 1] == 0 ? (const char *)k : "";
}

/* Reads n varints of a stored key. */
static int get_n(const uint8_t **p, const uint8_t *end, uint64_t *v, int n)
{
	for (int i = 0; i < n; i++)
		if (base_varint_get(p, end, &v[i]))
			return -EUCLEAN;
	return 0;
}

/* What untranslated found: the slot to fill and the rest of the stored key. */
struct pending_id {
	uint32_t *sl;
	const uint8_t *k, *end;
};

/*
 * Id of table t as the builder knows it: 1 and *out when translated before;
 * else 0, with p the slot to remember its profile id in and v the first n
 * varints of its stored key (p->k, p->end: the rest). -ENOMEM, -EUCLEAN.
 */
static int untranslated(struct estore_builder *b, int t, uint64_t id, uint64_t *v, int n,
			struct pending_id *p, uint64_t *out)
{
	size_t len;

	if (!(p->sl = slot(b, t, id)))
		return -ENOMEM;
	if (*p->sl) {
		*out = *p->sl;
		return 1;
	}
	p->k = store_itab__key(&bs(b)->tabs[t], id, &len);
	p->end = p->k + len;
	if (!p->k || get_n(&p->k, p->end, v, n))
		return -EUCLEAN;
	return 0;
}

static int mapping(struct estore_builder *b, uint64_t id, uint64_t *out)
{
	struct pending_id p;
	uint64_t v[5];
	int r;

	*out = 0;
	if (!id)
		return 0;
	r = untranslated(b, STORE_T_MAPPINGS, id, v, 5, &p, out);
	if (r)
		return r < 0 ? r : 0;
	return remember(
	    p.sl, profile__mapping(b->base.p, v[0], v[1], v[2], str(b, v[3]), str(b, v[4])), out);
}

/* The profile's string id of stored string id (the builder's strings slot holds
 * it + 1: id 0 is ""): a file or system name is shared by many functions, each
 * string is read and hashed once. */
static int string(struct estore_builder *b, uint64_t id, int64_t *out)
{
	uint32_t *sl = slot(b, STORE_T_STRINGS, id);
	int64_t sid;

	if (!sl)
		return -ENOMEM;
	if (*sl) {
		*out = (int64_t)*sl - 1;
		return 0;
	}
	if ((sid = profile__intern_string(b->base.p, str(b, id))) < 0)
		return (int)sid;
	if (sid >= UINT32_MAX)
		return -E2BIG;
	*sl = (uint32_t)sid + 1;
	*out = sid;
	return 0;
}

static int function(struct estore_builder *b, uint64_t id, uint64_t *out)
{
	struct pending_id p;
	uint64_t v[3];
	int64_t sids[3];
	int r = untranslated(b, STORE_T_FUNCTIONS, id, v, 3, &p, out);

	if (r)
		return r < 0 ? r : 0;
	for (int k = 0; k < 3; k++)
		if ((r = string(b, v[k], &sids[k])))
			return r;
	return remember(p.sl, profile__function_by_sids(b->base.p, sids), out);
}

static int location(struct estore_builder *b, uint64_t id, uint64_t *out)
{
	struct profile_line lines[64];
	struct pending_id p;
	uint64_t v[3], mid, l[2];
	int err = untranslated(b, STORE_T_LOCATIONS, id, v, 3, &p, out);

	if (err)
		return err < 0 ? err : 0;
	err = mapping(b, v[0], &mid);
	for (uint64_t i = 0; !err && i < v[2] && i < 64; i++) {
		err = get_n(&p.k, p.end, l, 2) ?: function(b, l[0], &lines[i].function_id);
		lines[i].line = base_unzigzag(l[1]);
	}
	if (err)
		return err;
	/* deeper inline chains are cut to 64 lines (the outermost are kept by pprof tools) */
	return remember(
	    p.sl, profile__location_exact(b->base.p, mid, v[1], lines, v[2] < 64 ? v[2] : 64), out);
}

/* The profile's location ids of a stored stack, leaf first, into *out: b->locs, or
 * with in_room the profile's room for the next sample's locations (no copy when the
 * sample is added); *merged is set when a location new to the builder was already
 * in the profile. */
static int stack_locked(struct estore_builder *b, uint64_t stack_id, bool in_room, uint64_t **out,
			size_t *n, bool *merged)
{
	const uint32_t *xl = b->xl[STORE_T_LOCATIONS];
	size_t xl_cap = b->cap[STORE_T_LOCATIONS];
	size_t len;
	const uint8_t *k = store_itab__key(&bs(b)->tabs[STORE_T_STACKS], stack_id, &len), *end;
	uint64_t lid, *locs = b->locs;
	int err = 0;

	*n = 0;
	if (!k)
		return -ENOENT;
	end = k + len;
	/* a location id takes at least one byte of the key */
	if (in_room) {
		if (!(locs = profile__sample_locs_room(b->base.p, len)))
			return -ENOMEM;
	} else if (base_grow((void **)&b->locs, &b->locs_cap, len + 1, sizeof(*b->locs))) {
		return -ENOMEM;
	} else {
		locs = b->locs;
	}
	*out = locs;
	while (k < end && !err) {
		if (base_varint_get(&k, end, &lid))
			return -EUCLEAN;	       /* a stored key cut short */
		if (!err && lid < xl_cap && xl[lid]) { /* translated before: most frames */
			locs[(*n)++] = xl[lid];
			continue;
		}
		size_t before = profile__n_locations(b->base.p);

		err = err ?: location(b, lid, &locs[*n]);
		if (!err && profile__n_locations(b->base.p) == before)
			*merged = true;
		(*n)++;
		xl = b->xl[STORE_T_LOCATIONS]; /* location() may have grown the table */
		xl_cap = b->cap[STORE_T_LOCATIONS];
	}
	return err;
}

int estore_builder_add(struct store_builder *sb, uint64_t stack_id,
		       const int64_t values[PROFILE_N_VALUES], const struct profile_label *labels,
		       size_t n_labels)
{
	struct estore_builder *b = of(sb);
	size_t n;
	bool merged = false;
	uint64_t *locs;
	int err;

	pthread_mutex_lock(&bs(b)->lock);
	err = stack_locked(b, stack_id, false, &locs, &n, &merged);
	pthread_mutex_unlock(&bs(b)->lock);
	return err ?: profile__add_sample(b->base.p, locs, n, values, labels, n_labels);
}

/* Adds the sample just expanded into locs (see store_builder__append). */
static int add_locs(struct estore_builder *b, uint64_t *locs, size_t n,
		    const struct store_builder_sample *sm, bool merged, bool *distinct)
{
	if (merged)
		*distinct = false;
	if (*distinct)
		return profile__append_sample(b->base.p, locs, n, sm->values, sm->labels,
					      sm->n_labels);
	return profile__add_sample(b->base.p, locs, n, sm->values, sm->labels, sm->n_labels);
}

/* How many stacks ahead store_builder__append prefetches a key (4 and 8 measured
 * the same on the day store; either ~4 ms faster than none on the 1 h merge). */
#define BUILD_KEY_AHEAD 4

int estore_builder_append(struct store_builder *sb, const struct store_builder_sample *sm, size_t n,
			  bool *distinct)
{
	struct estore_builder *b = of(sb);
	const struct store_itab *st = &bs(b)->tabs[STORE_T_STACKS];
	int err = 0;

	pthread_mutex_lock(&bs(b)->lock);
	/* the stacks' offsets, then a few stacks ahead their keys: random reads that
	 * miss the cache, started early */
	for (size_t i = 0; i < n; i++)
		if (sm[i].stack_id && sm[i].stack_id <= st->n)
			__builtin_prefetch(&st->off[sm[i].stack_id - 1]);
	for (size_t i = 0; !err && i < n; i++) {
		bool merged = false;
		uint64_t *locs;
		size_t nl;

		if (i + BUILD_KEY_AHEAD < n && sm[i + BUILD_KEY_AHEAD].stack_id &&
		    sm[i + BUILD_KEY_AHEAD].stack_id <= st->n)
			__builtin_prefetch(st->buf + st->off[sm[i + BUILD_KEY_AHEAD].stack_id - 1]);

		/* expanded straight into the profile's storage of sample locations */
		err = stack_locked(b, sm[i].stack_id, true, &locs, &nl, &merged)
			  ?: add_locs(b, locs, nl, &sm[i], merged, distinct);
	}
	pthread_mutex_unlock(&bs(b)->lock);
	return err;
}

int estore_builder_location(struct store_builder *sb, uint64_t loc_id, uint64_t *out)
{
	struct estore_builder *b = of(sb);
	int err;

	pthread_mutex_lock(&bs(b)->lock);
	err = store_itab__live(&bs(b)->tabs[STORE_T_LOCATIONS], loc_id) ? location(b, loc_id, out)
									: -ENOENT;
	pthread_mutex_unlock(&bs(b)->lock);
	return err;
}

int estore_stack_locations(struct store *base, const uint64_t *stack_ids, size_t n, size_t *off,
			   uint64_t **locs, size_t *cap)
{
	struct estore *s = estore_of(base);
	const struct store_itab *st = &s->tabs[STORE_T_STACKS];
	int err = 0;

	off[0] = 0;
	pthread_mutex_lock(&s->lock);
	/* the ids come in scan order, at random over the table: as in
	 * store_builder__append, their offsets first, then a few stacks ahead their
	 * keys, random reads that miss the cache, started early */
	for (size_t i = 0; i < n; i++)
		if (stack_ids[i] && stack_ids[i] <= st->n)
			__builtin_prefetch(&st->off[stack_ids[i] - 1]);
	for (size_t i = 0; !err && i < n; i++) {
		size_t len, at = off[i];
		const uint8_t *k;

		if (i + BUILD_KEY_AHEAD < n && stack_ids[i + BUILD_KEY_AHEAD] &&
		    stack_ids[i + BUILD_KEY_AHEAD] <= st->n)
			__builtin_prefetch(st->buf + st->off[stack_ids[i + BUILD_KEY_AHEAD] - 1]);
		k = store_itab__key(st, stack_ids[i], &len);
		const uint8_t *end = k + len;

		if (!k) {
			err = -ENOENT;
			break;
		}
		/* a location id takes at least one byte of the key */
		if (base_grow((void **)locs, cap, at + len, sizeof(**locs))) {
			err = -ENOMEM;
			break;
		}
		while (k < end && !err)
			if (base_varint_get(&k, end, &(*locs)[at++]))
				err = -EUCLEAN; /* a stored key cut short */
		off[i + 1] = at;
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

uint64_t estore_max_stack_id(struct store *base)
{
	struct estore *s = estore_of(base);
	uint64_t n;

	pthread_mutex_lock(&s->lock);
	n = s->tabs[STORE_T_STACKS].n;
	pthread_mutex_unlock(&s->lock);
	return n;
}
