/*
 * Query operations over the store: select the series a selector matches, then
 * list them (labels, values, series), merge their rows over a range into one
 * profile, or sum them per step (timeline, in timeline.c).
 *
 * A merge first sums rows by (series, stack) (an array indexed by stack id, a hash
 * map only for stacks several series share), then rebuilds each distinct pair
 * once through a store_builder: decoding rows is cheap, building profile
 * samples is not, so the expensive step runs once per pair, and appends without
 * the profile's dedup lookup when the pairs are known to be distinct samples.
 * Outputs without sample labels (tree, top, diff) use query_stacks instead: rows
 * summed in an array indexed by stack id, stacks expanded to store location ids,
 * and no profile sample at all (a 1 h merge of the benchmark: ~3x cheaper).
 */
#include "query_impl.h"
#include "ingest/ingest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The matched series, copied out of the store (owned strings). */
struct sel_series {
	uint64_t id;
	char *type;
	size_t n;
	struct store_label *labels;
	bool has_data;
};

struct selection {
	struct sel_series *s;
	size_t n, cap;
	/* owned while selecting: the request's selectors (a series matching any
	 * is selected), and which of them are CPU-only (a merge's selector that
	 * names no type, query.h; bit i for selector i) */
	struct query_selector *sel[QUERY_MAX_MATCHERS];
	size_t n_sel;
	uint64_t cpu_only;
	char *type; /* owned: a merge's one profile type; NULL: CPU */
};
_Static_assert(QUERY_MAX_MATCHERS <= 64, "cpu_only has one bit per selector");

static void sel_series_fini(struct sel_series *d)
{
	for (size_t k = 0; k < d->n; k++) {
		free((char *)d->labels[k].name);
		free((char *)d->labels[k].value);
	}
	free(d->labels);
	free(d->type);
}

static void selection_fini(struct selection *sl)
{
	for (size_t i = 0; i < sl->n; i++)
		sel_series_fini(&sl->s[i]);
	free(sl->s);
	free(sl->type);
}

static int copy_series(struct sel_series *d, const struct store_series *ser)
{
	memset(d, 0, sizeof(*d));
	d->id = ser->id;
	d->type = strdup(ser->profile_type);
	d->labels = calloc(ser->n_labels + 1, sizeof(*d->labels));
	if (!d->type || !d->labels)
		return -ENOMEM;
	for (size_t i = 0; i < ser->n_labels; i++, d->n++) {
		d->labels[i].name = strdup(ser->labels[i].name);
		d->labels[i].value = strdup(ser->labels[i].value);
		if (!d->labels[i].name || !d->labels[i].value) {
			d->n++;
			return -ENOMEM;
		}
	}
	return 0;
}

/* Whether selector i matches ser: its = / != matchers and type only (regex
 * false), or all of it. */
static bool sel_match(const struct selection *sl, size_t i, const struct store_series *ser,
		      bool regex)
{
	if ((sl->cpu_only >> i & 1) && !profile_type_is_cpu(ser->profile_type))
		return false;
	if (!query_selector__match_some(sl->sel[i], ser, false))
		return false;
	return !regex || query_selector__match_some(sl->sel[i], ser, true);
}

static int on_series(void *ctx, const struct store_series *ser)
{
	struct selection *sl = ctx;
	bool any = false;
	int err;

	for (size_t i = 0; i < sl->n_sel && !any; i++)
		any = sel_match(sl, i, ser, false);
	if (!any)
		return 0;
	if (base_grow((void **)&sl->s, &sl->cap, sl->n + 1, sizeof(*sl->s)))
		return -ENOMEM;
	err = copy_series(&sl->s[sl->n], ser);
	sl->n++; /* counted even on failure so that fini frees it */
	return err;
}

/* Index of series id in the selection (ids ascending), or SIZE_MAX. */
static size_t find_series(const struct selection *sl, uint64_t id)
{
	size_t lo = 0, hi = sl->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (sl->s[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sl->n && sl->s[lo].id == id ? lo : SIZE_MAX;
}

static int check_request(const struct query_request *q, char *err, size_t errlen)
{
	if (q->from_ns > q->until_ns)
		return query_fail(err, errlen, -EINVAL, "from (%lld ms) is after until (%lld ms)",
				  (long long)(q->from_ns / 1000000),
				  (long long)(q->until_ns / 1000000));
	if (q->value_index < 0 || q->value_index >= PROFILE_N_VALUES)
		return query_fail(err, errlen, -EINVAL, "value index %d is not 0 or 1",
				  q->value_index);
	return 0;
}

/* Keeps the copied series that the selector's regexes match (in order); of
 * several selectors, those that one of them matches whole. */
static void filter_regex(struct selection *sl)
{
	size_t w = 0;

	for (size_t i = 0; i < sl->n; i++) {
		struct sel_series *d = &sl->s[i];
		struct store_series ser = {d->id, d->type, d->n, d->labels};
		bool keep = sl->n_sel == 1 && query_selector__match_some(sl->sel[0], &ser, true);

		for (size_t k = 0; sl->n_sel > 1 && k < sl->n_sel && !keep; k++)
			keep = sel_match(sl, k, &ser, true);
		if (keep)
			sl->s[w++] = *d;
		else
			sel_series_fini(d);
	}
	sl->n = w;
}

bool query_same_type(const char *a, const char *b)
{
	if (profile_type_is_cpu(a) || profile_type_is_cpu(b))
		return profile_type_is_cpu(a) && profile_type_is_cpu(b);
	return strcmp(a, b) == 0;
}

static bool names_type(const struct query_selector *sel)
{
	for (size_t i = 0; i < sel->n; i++)
		if (!strcmp(sel->m[i].name, STORE_PROFILE_TYPE_LABEL))
			return true;
	return false;
}

/* A merge's selection: one profile type (query.h), kept in sl->type. */
static int one_type(struct selection *sl, char *err, size_t errlen)
{
	for (size_t i = 1; i < sl->n; i++)
		if (!query_same_type(sl->s[0].type, sl->s[i].type))
			return query_fail(err, errlen, -EINVAL,
					  "the selector matches series of several profile types "
					  "(%s and %s); choose one with __profile_type__=\"...\"",
					  sl->s[0].type, sl->s[i].type);
	if (sl->n && !profile_type_is_cpu(sl->s[0].type) && !(sl->type = strdup(sl->s[0].type)))
		return -ENOMEM;
	return 0;
}

/*
 * The series matching q's selector (not yet filtered by data in range). The
 * = and != matchers run under the store's lock (store__series_foreach holds
 * it), the regexes on the copies after it: a regex costs up to
 * len(value) x program size per series, and ingest must not wait for that
 * (a backtracking regex once held the lock for 17 s).
 */
static int select_series(struct store *s, const struct query_request *q, struct selection *sl,
			 bool merge, char *err, size_t errlen)
{
	size_t n = q->n_queries ? q->n_queries : 1;
	int e;

	memset(sl, 0, sizeof(*sl));
	e = check_request(q, err, errlen);
	if (!e && n > QUERY_MAX_MATCHERS)
		e = query_fail(err, errlen, -E2BIG,
			       "%zu label selectors in one request; at most %d (the limit of "
			       "matchers per selector)",
			       n, QUERY_MAX_MATCHERS);
	for (size_t i = 0; !e && i < n; i++, sl->n_sel++) {
		e = query_selector__parse(q->n_queries ? q->queries[i] : q->query, &sl->sel[i], err,
					  errlen);
		if (!e && merge && !names_type(sl->sel[i]))
			sl->cpu_only |= 1ull << i;
	}
	if (!e) {
		e = store__series_foreach(s, on_series, sl);
		if (e == -EINVAL || e == -E2BIG) /* the store's data, not the request */
			e = query_fail(err, errlen, -EUCLEAN, "a stored series does not decode");
	}
	if (!e)
		filter_regex(sl);
	if (!e && merge)
		e = one_type(sl, err, errlen);
	for (size_t i = 0; i < sl->n_sel; i++)
		query_selector__free(sl->sel[i]);
	sl->n_sel = 0;
	return e;
}

static uint64_t *series_ids(const struct selection *sl)
{
	uint64_t *ids = malloc((sl->n ? sl->n : 1) * sizeof(*ids));

	for (size_t i = 0; ids && i < sl->n; i++)
		ids[i] = sl->s[i].id;
	return ids;
}

static int mark_data(void *ctx, const struct store_row *rows, size_t n)
{
	struct selection *sl = ctx;

	for (size_t i = 0; i < n; i++) {
		size_t k = find_series(sl, rows[i].series_id);

		if (k != SIZE_MAX)
			sl->s[k].has_data = true;
	}
	return 0;
}

/* select_series, then marks which have data in the range (totals only: cheap). */
static int select_with_data(struct store *s, const struct query_request *q, struct selection *sl,
			    char *err, size_t errlen)
{
	uint64_t *ids;
	int e = select_series(s, q, sl, false, err, errlen);

	if (e || !sl->n)
		return e;
	ids = series_ids(sl);
	if (!ids)
		return -ENOMEM;
	e = store__scan(
	    s,
	    &(struct store_scan_query){ids, sl->n, q->from_ns, q->until_ns, 0, STORE_SCAN_TOTALS},
	    mark_data, sl);
	free(ids);
	return e;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted distinct copies of v[0..n) into out. */
static int string_set(struct query_strings *out, const char **v, size_t n)
{
	if (n) /* qsort(NULL, 0) is undefined */
		qsort(v, n, sizeof(*v), str_cmp);
	if (!(out->v = malloc((n ? n : 1) * sizeof(*out->v))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (i && strcmp(v[i], v[i - 1]) == 0)
			continue;
		if (!(out->v[out->n] = strdup(v[i])))
			return -ENOMEM;
		out->n++;
	}
	return 0;
}

/* The strings a store listing hands over, copied (they are borrowed for the call). */
struct str_list {
	char **v;
	size_t n, cap;
};

static int keep_str(void *ctx, const char *str)
{
	struct str_list *l = ctx;

	if (base_grow((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v)) ||
	    !(l->v[l->n] = strdup(str)))
		return -ENOMEM;
	l->n++;
	return 0;
}

/* Label names (name NULL) or the values of label name, from the store's own
 * listing (store__label_names/_values) of the selected series with data, sorted
 * and distinct into out. */
static int list_labels(struct store *s, const char *name, const struct query_request *q,
		       struct query_strings *out, char *err, size_t errlen)
{
	struct selection sl;
	struct str_list l = {0};
	uint64_t *ids = NULL;
	int e;

	memset(out, 0, sizeof(*out));
	e = select_series(s, q, &sl, false, err, errlen);
	if (!e && sl.n) {
		struct store_scan_query sq = {ids = series_ids(&sl), sl.n, q->from_ns,
					      q->until_ns,	     0,	   0};

		e = !ids   ? -ENOMEM
		    : name ? store__label_values(s, name, &sq, keep_str, &l)
			   : store__label_names(s, &sq, keep_str, &l);
	}
	if (!e)
		e = string_set(out, (const char **)l.v, l.n);
	for (size_t i = 0; i < l.n; i++)
		free(l.v[i]);
	free(l.v);
	free(ids);
	selection_fini(&sl);
	return query_explain(err, errlen, e, name ? "listing label values" : "listing label names");
}

int query_labels(struct store *s, const struct query_request *q, struct query_strings *out,
		 char *err, size_t errlen)
{
	return list_labels(s, NULL, q, out, err, errlen);
}

static const char *series_label(const struct sel_series *ss, const char *name)
{
	if (strcmp(name, STORE_PROFILE_TYPE_LABEL) == 0)
		return ss->type;
	for (size_t k = 0; k < ss->n; k++)
		if (strcmp(ss->labels[k].name, name) == 0)
			return ss->labels[k].value;
	return NULL;
}

int query_label_values(struct store *s, const char *name, const struct query_request *q,
		       struct query_strings *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!name || !*name)
		return query_fail(err, errlen, -EINVAL, "empty label name");
	return list_labels(s, name, q, out, err, errlen);
}

int query_series(struct store *s, const struct query_request *q, struct query_series_list *out,
		 char *err, size_t errlen)
{
	struct selection sl;
	int e = select_with_data(s, q, &sl, err, errlen);

	memset(out, 0, sizeof(*out));
	if (!e && !(out->s = calloc(sl.n + 1, sizeof(*out->s))))
		e = -ENOMEM;
	for (size_t i = 0; !e && i < sl.n; i++) {
		if (!sl.s[i].has_data)
			continue;
		/* moved: the selection's copies become the answer's */
		out->s[out->n++] = (struct query_series){sl.s[i].type, sl.s[i].n, sl.s[i].labels};
		sl.s[i].type = NULL;
		sl.s[i].labels = NULL;
		sl.s[i].n = 0;
	}
	selection_fini(&sl);
	return query_explain(err, errlen, e, "listing series");
}

/* ---- merge ---- */

struct agg_row {
	uint64_t series_id; /* store id */
	uint32_t series;    /* index in the selection */
	bool mapped;	    /* in the hash map */
	uint64_t stack;
	int64_t v[PROFILE_N_VALUES];
};

/*
 * Rows summed by (series, stack). last[stack id] is 1 + the index of the
 * pair last met with that stack: a stack seldom belongs to more than one
 * series (a process's own code), so that one probe of an array indexed by stack answers
 * most rows, and a stack met for the first time is a new pair. Only stacks
 * shared by several series go through the hash map: their first pair enters it
 * when a second series meets the stack, later pairs when they are made. Pairs
 * keep the order the scan first meets them.
 */
struct merge {
	struct selection *sl;
	struct base_hmap map; /* (series id, stack id) -> pair index, shared stacks only */
	uint32_t *last;
	size_t last_cap; /* entries of last */
	struct agg_row *rows;
	size_t n, cap;
};

static uint64_t pair_hash(uint64_t series_id, uint64_t stack)
{
	return base_hash_u64(base_hash_u64(BASE_HASH_SEED, series_id), stack);
}

/* key: a struct store_row */
static bool pair_eq(const void *ctx, size_t idx, const void *key)
{
	const struct agg_row *a = &((const struct merge *)ctx)->rows[idx];
	const struct store_row *r = key;

	return a->series_id == r->series_id && a->stack == r->stack_id;
}

/* Puts pair i in the hash map (it is not there yet). 0 or -ENOMEM. */
static int pair_map(struct merge *m, size_t i)
{
	if (base_hmap__insert(&m->map, pair_hash(m->rows[i].series_id, m->rows[i].stack), i))
		return -ENOMEM;
	m->rows[i].mapped = true;
	return 0;
}

/* Index of the pair of row r, added when new. 0 or -ENOMEM. */
static int pair_of(struct merge *m, const struct store_row *r, size_t *idx)
{
	uint64_t st = r->stack_id;
	uint32_t last = st < m->last_cap ? m->last[st] : 0;
	/* a stack beyond last_cap (appended during the scan) always goes to the map */
	bool mapped = last || st >= m->last_cap;

	if (last && m->rows[last - 1].series_id == r->series_id) {
		*idx = last - 1;
		return 0;
	}
	if (last && !m->rows[last - 1].mapped && pair_map(m, last - 1))
		return -ENOMEM;
	*idx = mapped ? base_hmap__find(&m->map, pair_hash(r->series_id, st), pair_eq, m, r)
		      : SIZE_MAX;
	if (*idx == SIZE_MAX) {
		*idx = m->n;
		if (m->n >= UINT32_MAX - 1 ||
		    base_grow((void **)&m->rows, &m->cap, m->n + 1, sizeof(*m->rows)))
			return -ENOMEM;
		m->rows[m->n++] = (struct agg_row){
		    r->series_id, (uint32_t)find_series(m->sl, r->series_id), false, st, {0, 0}};
		if (mapped && pair_map(m, *idx))
			return -ENOMEM;
	}
	if (st < m->last_cap)
		m->last[st] = (uint32_t)(*idx + 1);
	return 0;
}

static int on_rows(void *ctx, const struct store_row *rows, size_t n)
{
	struct merge *m = ctx;
	size_t idx;

	for (size_t i = 0; i < n; i++) {
		if (pair_of(m, &rows[i], &idx))
			return -ENOMEM;
		for (int k = 0; k < PROFILE_N_VALUES; k++)
			m->rows[idx].v[k] = base_sat_add(m->rows[idx].v[k], rows[i].values[k]);
	}
	return 0;
}

/* The sample labels of a series (INGEST_SAMPLE_LABELS only), borrowed strings. */
static size_t sample_labels(const struct sel_series *ss, struct profile_label *out)
{
	static const char *const names[] = INGEST_SAMPLE_LABELS;
	size_t n = 0;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = series_label(ss, names[i]);

		if (v)
			out[n++] = (struct profile_label){names[i], v, 0};
	}
	return n;
}

#define QUERY_MAX_SAMPLE_LABELS 16
_Static_assert(sizeof((const char *[])INGEST_SAMPLE_LABELS) / sizeof(const char *) <=
		   QUERY_MAX_SAMPLE_LABELS,
	       "a series' sample labels fit in struct series_labels");

/* The sample labels of one selected series. */
struct series_labels {
	size_t n;
	struct profile_label l[QUERY_MAX_SAMPLE_LABELS];
};

/* Label sets compare as sample_labels lists them: names in one fixed order. */
static int labels_cmp(const void *a, const void *b, void *ctx)
{
	const struct series_labels *x = &((const struct series_labels *)ctx)[*(const size_t *)a];
	const struct series_labels *y = &((const struct series_labels *)ctx)[*(const size_t *)b];

	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	for (size_t i = 0; i < x->n; i++) {
		int c = strcmp(x->l[i].key, y->l[i].key) ?: strcmp(x->l[i].str, y->l[i].str);

		if (c)
			return c;
	}
	return 0;
}

/* Whether no two selected series have the same sample labels (then distinct
 * (series, stack) pairs are distinct samples). */
static bool labels_distinct(const struct series_labels *sls, size_t n)
{
	size_t *order = malloc((n ? n : 1) * sizeof(*order));
	bool ok = order != NULL;

	for (size_t i = 0; ok && i < n; i++)
		order[i] = i;
	if (ok && n > 1)
		qsort_r(order, n, sizeof(*order), labels_cmp, (void *)sls);
	for (size_t i = 1; ok && i < n; i++)
		ok = labels_cmp(&order[i - 1], &order[i], (void *)sls) != 0;
	free(order);
	return ok;
}

/* The sample labels of every selected series; *distinct: whether they all differ. */
static struct series_labels *selection_labels(const struct selection *sl, bool *distinct)
{
	struct series_labels *sls = calloc(sl->n + 1, sizeof(*sls));

	for (size_t i = 0; sls && i < sl->n; i++)
		sls[i].n = sample_labels(&sl->s[i], sls[i].l);
	*distinct = sls && labels_distinct(sls, sl->n);
	return sls;
}

/*
 * Each pair becomes one sample, in pair order, as store_builder__add per pair
 * made it (locations, functions, mappings and strings created in the same
 * order). When no two series share their sample labels, distinct pairs are
 * distinct samples: they are appended without profile__add_sample's lookup
 * (store_builder__append falls back to it if two stacks turn out the same).
 */
#define QUERY_BUILD_BATCH 256

static int build(struct store *s, struct merge *m, struct profile *p)
{
	struct store_builder_sample batch[QUERY_BUILD_BATCH];
	struct store_builder *b = NULL;
	bool distinct;
	struct series_labels *sls = selection_labels(m->sl, &distinct), none = {0};
	int e = !sls ? -ENOMEM : store_builder__new(s, p, &b);

	for (size_t i = 0; !e && i < m->n; i += QUERY_BUILD_BATCH) {
		size_t n = m->n - i < QUERY_BUILD_BATCH ? m->n - i : QUERY_BUILD_BATCH;

		for (size_t k = 0; k < n; k++) {
			const struct agg_row *r = &m->rows[i + k];
			const struct series_labels *l =
			    r->series < m->sl->n ? &sls[r->series] : &none;

			batch[k] =
			    (struct store_builder_sample){r->stack, {r->v[0], r->v[1]}, l->l, l->n};
		}
		e = store_builder__append(b, batch, n, &distinct);
	}
	store_builder__free(b);
	free(sls);
	return e;
}

static int64_t period_of(const struct merge *m)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->rows[i].v[0] > 0)
			return m->rows[i].v[1] / m->rows[i].v[0];
	return 0;
}

/* ---- merge by stack (no sample labels) ---- */

/*
 * Rows summed per store stack id: pos[stack id] is 1 + the stack's index in
 * first-seen order (0: not seen). Stack ids are dense (1..n), so an array indexed by id
 * of 4 bytes per stack of the store beats a hash table: no probing, no key.
 *
 * A request that groups (group_by) or names pid/tid sums by (group, stack)
 * instead, through a hash map (keyed): a row's group is its series' value of
 * the group label, and whether the series lacks a pid/tid a matcher names
 * (deferred: its stacks are judged by their task locations, query_selector__match_task).
 */
struct stack_agg {
	uint32_t *pos;
	size_t cap; /* entries of pos */
	uint64_t *ids;
	int64_t (*v)[PROFILE_N_VALUES];
	size_t n, cap_ids, cap_v;
	/* keyed only */
	bool keyed;
	const struct selection *sl;   /* borrowed */
	const uint32_t *series_group; /* per selected series: a group name id */
	const bool *series_deferred;  /* per selected series */
	struct base_hmap map;	      /* (group, stack) -> index */
	uint32_t *group;	      /* per entry */
	bool *deferred;		      /* per entry */
	size_t cap_group, cap_deferred;
};

static int agg_grow_pos(struct stack_agg *a, uint64_t id)
{
	if (id >= SIZE_MAX / 2 ||
	    base_grow_zeroed((void **)&a->pos, &a->cap, (size_t)id + 1, sizeof(*a->pos)))
		return -ENOMEM;
	return 0;
}

/* A new entry for stack id, in group g; its index. */
static int agg_new(struct stack_agg *a, uint64_t id, uint32_t g, bool deferred, size_t *k)
{
	if (a->n >= UINT32_MAX - 1 ||
	    base_grow((void **)&a->ids, &a->cap_ids, a->n + 1, sizeof(*a->ids)) ||
	    base_grow((void **)&a->v, &a->cap_v, a->n + 1, sizeof(*a->v)) ||
	    base_grow((void **)&a->group, &a->cap_group, a->n + 1, sizeof(*a->group)) ||
	    base_grow((void **)&a->deferred, &a->cap_deferred, a->n + 1, sizeof(*a->deferred)))
		return -ENOMEM;
	a->ids[a->n] = id;
	a->v[a->n][0] = a->v[a->n][1] = 0;
	a->group[a->n] = g;
	a->deferred[a->n] = deferred;
	*k = a->n++;
	return 0;
}

struct agg_key {
	uint64_t stack;
	uint32_t group;
};

static bool agg_key_eq(const void *ctx, size_t idx, const void *key)
{
	const struct stack_agg *a = ctx;
	const struct agg_key *k = key;

	return a->ids[idx] == k->stack && a->group[idx] == k->group;
}

/* Sums one row into its (group, stack) entry; *k is the entry's index. 0 or -ENOMEM. */
static int agg_keyed_row(struct stack_agg *a, const struct store_row *r, size_t *k)
{
	size_t s = find_series(a->sl, r->series_id);
	struct agg_key key = {r->stack_id, s < a->sl->n ? a->series_group[s] : 0};
	bool d = s < a->sl->n && a->series_deferred[s];
	uint64_t h = base_hash_u64(base_hash_u64(BASE_HASH_SEED, key.stack), key.group);

	if ((*k = base_hmap__find(&a->map, h, agg_key_eq, a, &key)) == SIZE_MAX) {
		if (agg_new(a, key.stack, key.group, d, k) || base_hmap__insert(&a->map, h, *k))
			return -ENOMEM;
	}
	a->deferred[*k] |= d;
	for (int j = 0; j < PROFILE_N_VALUES; j++)
		a->v[*k][j] = base_sat_add(a->v[*k][j], r->values[j]);
	return 0;
}

static int on_keyed_rows(struct stack_agg *a, const struct store_row *rows, size_t n)
{
	size_t k;

	for (size_t i = 0; i < n; i++)
		if (agg_keyed_row(a, &rows[i], &k))
			return -ENOMEM;
	return 0;
}

/* Sums one row into its stack's entry; *k is the entry's index. 0 or -ENOMEM. */
static inline int agg_row(struct stack_agg *a, const struct store_row *r, size_t *k)
{
	uint64_t id = r->stack_id;
	uint32_t p;

	if (id >= a->cap && agg_grow_pos(a, id))
		return -ENOMEM;
	if (!(p = a->pos[id])) {
		size_t at;

		if (agg_new(a, id, 0, false, &at))
			return -ENOMEM;
		p = a->pos[id] = (uint32_t)at + 1;
	}
	for (int j = 0; j < PROFILE_N_VALUES; j++)
		a->v[p - 1][j] = base_sat_add(a->v[p - 1][j], r->values[j]);
	*k = p - 1;
	return 0;
}

static int on_stack_rows(void *ctx, const struct store_row *rows, size_t n)
{
	struct stack_agg *a = ctx;
	size_t k;

	if (a->keyed)
		return on_keyed_rows(a, rows, n);
	for (size_t i = 0; i < n; i++)
		if (agg_row(a, &rows[i], &k))
			return -ENOMEM;
	return 0;
}

static int by_id(const void *x, const void *y, void *ctx)
{
	const uint64_t *ids = ctx;
	uint64_t a = ids[*(const uint32_t *)x], b = ids[*(const uint32_t *)y];

	return a < b ? -1 : a > b;
}

/*
 * Puts the aggregated stacks in store id order (and bv's rows of k values with
 * them, when given): the merge's order, which orders ties among a tree's nodes,
 * then does not depend on which chunks (rollups or raw) the scan read first, so
 * a diff (its scan cut at its intervals) and a tree name ties alike.
 */
static int agg_sort(struct stack_agg *a, float *bv, size_t k)
{
	if (a->n < 2)
		return 0;
	uint32_t *ord = malloc((a->n + 1) * sizeof(*ord));
	uint64_t *ids = malloc((a->n + 1) * sizeof(*ids));
	int64_t(*v)[PROFILE_N_VALUES] = malloc((a->n + 1) * sizeof(*v));
	float *b = bv ? malloc((a->n * k + 1) * sizeof(*b)) : NULL;
	uint32_t *grp = a->keyed ? malloc((a->n + 1) * sizeof(*grp)) : NULL;
	bool *def = a->keyed ? malloc((a->n + 1) * sizeof(*def)) : NULL;
	int e = ord && ids && v && (b || !bv) && ((grp && def) || !a->keyed) ? 0 : -ENOMEM;

	for (size_t i = 0; !e && i < a->n; i++)
		ord[i] = (uint32_t)i;
	if (!e)
		qsort_r(ord, a->n, sizeof(*ord), by_id, a->ids);
	for (size_t i = 0; !e && i < a->n; i++) {
		ids[i] = a->ids[ord[i]];
		memcpy(v[i], a->v[ord[i]], sizeof(*v));
		if (bv)
			memcpy(b + i * k, bv + ord[i] * k, k * sizeof(*b));
		if (a->keyed) {
			grp[i] = a->group[ord[i]];
			def[i] = a->deferred[ord[i]];
		}
	}
	if (!e) {
		memcpy(a->ids, ids, a->n * sizeof(*ids));
		memcpy(a->v, v, a->n * sizeof(*v));
		if (bv)
			memcpy(bv, b, a->n * k * sizeof(*b));
		if (a->keyed) { /* the map's indices are stale from here: no more rows */
			memcpy(a->group, grp, a->n * sizeof(*grp));
			memcpy(a->deferred, def, a->n * sizeof(*def));
		}
	}
	free(ord);
	free(ids);
	free(v);
	free(b);
	free(grp);
	free(def);
	return e;
}

/* Expands the aggregated stacks into qs (the arrays move there). */
static int stacks_build(struct store *s, struct stack_agg *a, struct query_stacks *qs)
{
	size_t cap = 0;
	int e;

	for (size_t i = 0; i < a->n && !qs->period_ns; i++)
		if (a->v[i][0] > 0)
			qs->period_ns = a->v[i][1] / a->v[i][0];
	if (!(qs->off = calloc(a->n + 1, sizeof(*qs->off))))
		return -ENOMEM;
	e = store__stack_locations(s, a->ids, a->n, qs->off, &qs->locs, &cap);
	if (!e) {
		qs->v = a->v;
		qs->ids = a->ids;
		qs->n = a->n;
		a->v = NULL;
		a->ids = NULL;
	}
	return e;
}

/* ---- task locations: pid and tid inside the stacks ---- */

/* What the stack pass does beyond stripping task locations. */
struct task_pass {
	struct query_selector *sel; /* owned: the request's selector, when it names pid/tid/comm */
	const char *by;		    /* borrowed: group_by, or NULL */
	bool by_task;		    /* by is pid, tid or comm */
};

/* Whether profile location loc is a task location: then t is filled from it (its
 * comm borrowed from p). Older agents' task locations have no lines: comm "". */
static bool task_of_loc(const struct profile *p, const struct profile_location *loc,
			struct query_task *t)
{
	struct profile_mapping m;
	struct profile_function f;

	memset(t, 0, sizeof(*t));
	t->comm = "";
	if (!loc->mapping_id || profile__get_mapping(p, loc->mapping_id, &m) ||
	    strcmp(m.file, PROFILE_TASK_MAPPING))
		return false;
	t->present = true;
	snprintf(t->pid, sizeof(t->pid), "%u", PROFILE_TASK_PID(loc->address));
	snprintf(t->tid, sizeof(t->tid), "%u", PROFILE_TASK_TID(loc->address));
	if (loc->n_lines && !profile__get_function(p, loc->lines[0].function_id, &f))
		t->comm = f.name;
	return true;
}

/* The task of store location id (t->present false when it is none), named into p. */
static int task_of(struct store_builder *b, const struct profile *p, uint64_t id,
		   struct query_task *t)
{
	struct profile_location loc;
	uint64_t pl;
	int e = store_builder__location(b, id, &pl);

	memset(t, 0, sizeof(*t));
	t->comm = "";
	if (e)
		return e;
	if (profile__get_location(p, pl, &loc))
		return -EINVAL;
	task_of_loc(p, &loc, t);
	return 0;
}

/* The group name id of a stack whose task is t. */
static int task_group(struct query_stacks *qs, const struct task_pass *tp,
		      const struct query_task *t, uint32_t series_group, uint32_t *g)
{
	char name[STORE_MAX_LABEL_LEN + 32];
	int64_t id;

	if (!tp->by_task || !t->present) {
		*g = series_group;
		return 0;
	}
	snprintf(name, sizeof(name), "%s=%s", tp->by, query_task__value(t, tp->by));
	if ((id = base_strtab__intern(&qs->groups, name)) < 0 || id >= UINT32_MAX)
		return -ENOMEM;
	*g = (uint32_t)id;
	return 0;
}

/*
 * Strips every stack's task location, drops the stacks the request's pid/tid
 * matchers refuse, and ends each stack with its group's location (tp->by):
 * qs's arrays are made anew. group/deferred: per stack, as aggregated (NULL
 * when not keyed).
 */
static int tasks_apply(struct store *s, struct query_stacks *qs, const struct task_pass *tp,
		       const uint32_t *group, const bool *deferred, float *bv, size_t bk)
{
	struct profile *p = profile__new(0);
	struct store_builder *b = NULL;
	size_t *off = calloc(qs->n + 1, sizeof(*off)), n = 0, at = 0;
	uint64_t *locs = malloc((qs->off[qs->n] + qs->n + 1) * sizeof(*locs)), max = 0;
	uint32_t *gids = malloc((qs->n + 1) * sizeof(*gids));
	int e = p && off && locs && gids ? store_builder__new(s, p, &b) : -ENOMEM;

	for (size_t k = 0; k < qs->off[qs->n]; k++)
		max = qs->locs[k] > max ? qs->locs[k] : max;
	for (size_t i = 0; !e && i < qs->n; i++) {
		size_t len = qs->off[i + 1] - qs->off[i];
		struct query_task t = {.comm = ""};

		if (len && (e = task_of(b, p, qs->locs[qs->off[i + 1] - 1], &t)))
			break;
		len -= t.present;
		if (tp->sel && (t.present || (deferred && deferred[i])) &&
		    !query_selector__match_task(tp->sel, &t))
			continue;
		memcpy(locs + at, qs->locs + qs->off[i], len * sizeof(*locs));
		at += len;
		if (tp->by && (e = task_group(qs, tp, &t, group ? group[i] : 0, &gids[n])))
			break;
		qs->ids[n] = qs->ids[i];
		memcpy(qs->v[n], qs->v[i], sizeof(qs->v[n]));
		if (bv && n != i) /* the stack's values per interval move with it */
			memcpy(bv + n * bk, bv + i * bk, bk * sizeof(*bv));
		if (tp->by)
			locs[at++] = gids[n]; /* a group name id for now */
		off[++n] = at;
	}
	qs->group_loc0 = max + 1;
	for (size_t k = 0; !e && tp->by && k < n; k++)
		locs[off[k + 1] - 1] += qs->group_loc0;
	if (!e) {
		free(qs->off);
		free(qs->locs);
		qs->off = off;
		qs->locs = locs;
		qs->n = n;
		off = NULL;
		locs = NULL;
	}
	store_builder__free(b);
	profile__free(p);
	free(off);
	free(locs);
	free(gids);
	return e;
}

/* The group name id of each selected series ("BY=VALUE"), and whether it lacks a
 * pid/tid that sel names (then its stacks' task locations are matched). */
static int series_groups(const struct selection *sl, const struct task_pass *tp,
			 struct base_strtab *groups, uint32_t *group, bool *deferred)
{
	char name[2 * STORE_MAX_LABEL_LEN + 2];

	for (size_t i = 0; i < sl->n; i++) {
		const char *v = tp->by ? series_label(&sl->s[i], tp->by) : NULL;
		int64_t id = 0;

		if (tp->by) {
			snprintf(name, sizeof(name), "%s=%s", tp->by, v ? v : "");
			if ((id = base_strtab__intern(groups, name)) < 0 || id >= UINT32_MAX)
				return -ENOMEM;
		}
		group[i] = (uint32_t)id;
		deferred[i] = false;
		for (size_t k = 0; tp->sel && k < tp->sel->n; k++)
			if (query_task_label(tp->sel->m[k].name) &&
			    !series_label(&sl->s[i], tp->sel->m[k].name))
				deferred[i] = true;
	}
	return 0;
}

static int task_pass_init(struct task_pass *tp, const struct query_request *q, char *err,
			  size_t errlen)
{
	int e;

	memset(tp, 0, sizeof(*tp));
	if (q->group_by && *q->group_by) {
		tp->by = q->group_by;
		tp->by_task = query_task_label(q->group_by);
	}
	if (q->n_queries || !q->query)
		return 0;
	if ((e = query_selector__parse(q->query, &tp->sel, err, errlen)))
		return e;
	if (!query_selector__has_task(tp->sel)) {
		query_selector__free(tp->sel);
		tp->sel = NULL;
	}
	return 0;
}

int query_stacks(struct store *s, const struct query_request *q, struct query_stacks *out,
		 char *err, size_t errlen)
{
	struct selection sl;
	struct stack_agg a = {0};
	struct task_pass tp = {0};
	uint64_t *ids = NULL;
	uint32_t *sgroup = NULL;
	bool *sdeferred = NULL;
	int e;

	memset(out, 0, sizeof(*out));
	out->group_unnamed = !q->expand_unnamed;
	e = base_strtab__init(&out->groups);
	e = e ?: select_series(s, q, &sl, true, err, errlen);
	if (!e)
		e = task_pass_init(&tp, q, err, errlen);
	a.keyed = tp.by || tp.sel;
	if (!e && a.keyed && sl.n) {
		sgroup = calloc(sl.n, sizeof(*sgroup));
		sdeferred = calloc(sl.n, sizeof(*sdeferred));
		e = sgroup && sdeferred ? series_groups(&sl, &tp, &out->groups, sgroup, sdeferred)
					: -ENOMEM;
		a.sl = &sl;
		a.series_group = sgroup;
		a.series_deferred = sdeferred;
	}
	if (!e && sl.n) {
		ids = series_ids(&sl);
		e = !ids ? -ENOMEM : a.keyed ? 0 : agg_grow_pos(&a, store__max_stack_id(s));
		e = e
			?: store__scan(s,
				       &(struct store_scan_query){ids, sl.n, q->from_ns,
								  q->until_ns, 0,
								  a.keyed ? STORE_SCAN_MERGE_TIME
									  : STORE_SCAN_MERGE_SERIES},
				       on_stack_rows, &a);
	}
	e = e ?: agg_sort(&a, NULL, 0) ?: stacks_build(s, &a, out);
	e = e ?: tasks_apply(s, out, &tp, a.keyed ? a.group : NULL, a.keyed ? a.deferred : NULL,
			     NULL, 0);
	if (!e) {
		out->type = sl.type; /* taken */
		sl.type = NULL;
	}
	if (e && e != -EINVAL && e != -E2BIG && err && errlen && !*err)
		query_fail(err, errlen, e, "merging the profile failed: %s", strerror(-e));
	free(ids);
	free(a.pos);
	free(a.ids);
	free(a.v);
	free(a.group);
	free(a.deferred);
	base_hmap__fini(&a.map);
	free(sgroup);
	free(sdeferred);
	query_selector__free(tp.sel);
	selection_fini(&sl);
	return query_explain(err, errlen, e, "the merge");
}

/* ---- merge by stack, with each stack's values per time bucket (stats.c) ---- */

int64_t query_buckets_width(int64_t from_ns, int64_t until_ns, int64_t step_ns)
{
	static const int64_t nice[] = {3600, 600, 60, 10};
	int64_t range = until_ns > from_ns ? until_ns - from_ns : 1, w;

	if (step_ns > 0)
		return step_ns;
	w = range / QUERY_STATS_INTERVALS + (range % QUERY_STATS_INTERVALS != 0);
	for (size_t i = 0; i < sizeof(nice) / sizeof(nice[0]); i++) {
		int64_t m = nice[i] * 1000000000ll;

		if (w >= m || i + 1 == sizeof(nice) / sizeof(nice[0]))
			return w / m * m + (w % m ? m : 0);
	}
	return w;
}

/* floor(t / w) for any sign of t. */
static int64_t floor_div(int64_t t, int64_t w)
{
	return t / w - (t % w < 0);
}

struct bucket_agg {
	struct stack_agg a;
	struct query_buckets *b;
	size_t cap_v; /* entries of b->v */
	int64_t first; /* floor(from / width) */
	bool *seen; /* per bucket: has rows */
	int vi;
};

static int on_bucket_rows(void *ctx, const struct store_row *rows, size_t n)
{
	struct bucket_agg *g = ctx;
	struct query_buckets *b = g->b;
	size_t k;

	for (size_t i = 0; i < n; i++) {
		const struct store_row *r = &rows[i];
		int64_t at = floor_div(r->time_ns, b->width_ns) - g->first;
		double v = (double)r->values[g->vi];

		if (g->a.keyed ? agg_keyed_row(&g->a, r, &k) : agg_row(&g->a, r, &k))
			return -ENOMEM;
		if (g->a.n * b->k > g->cap_v &&
		    (g->a.n > SIZE_MAX / 8 / b->k ||
		     base_grow_zeroed((void **)&b->v, &g->cap_v, g->a.n * b->k, sizeof(*b->v))))
			return -ENOMEM;
		at = at < 0 ? 0 : (size_t)at >= b->k ? (int64_t)b->k - 1 : at;
		b->v[k * b->k + (size_t)at] += (float)v;
		b->total[at] += v;
		b->samples += (double)r->values[0];
		g->seen[at] = true;
	}
	return 0;
}

/* The buckets' room: k of them of width_ns from the one from_ns falls in. */
static int buckets_setup(struct bucket_agg *g, const struct query_request *q, int64_t width_ns)
{
	struct query_buckets *b = g->b;
	int64_t last = q->until_ns > q->from_ns ? q->until_ns - 1 : q->from_ns;

	b->width_ns = width_ns > 0 ? width_ns : query_buckets_width(q->from_ns, q->until_ns, 0);
	g->first = floor_div(q->from_ns, b->width_ns);
	if (floor_div(last, b->width_ns) - g->first >= QUERY_MAX_POINTS)
		return -E2BIG;
	b->k = (size_t)(floor_div(last, b->width_ns) - g->first) + 1;
	b->start_ns = g->first * b->width_ns;
	b->total = calloc(b->k, sizeof(*b->total));
	b->wall_s = calloc(b->k, sizeof(*b->wall_s));
	g->seen = calloc(b->k, sizeof(*g->seen));
	g->vi = q->value_index >= 0 && q->value_index < PROFILE_N_VALUES ? q->value_index : 0;
	return b->total && b->wall_s && g->seen ? 0 : -ENOMEM;
}

int query_stacks_buckets(struct store *s, const struct query_request *q, int64_t width_ns,
			 struct query_stacks *out, struct query_buckets *b, char *err,
			 size_t errlen)
{
	struct selection sl;
	struct bucket_agg g = {.b = b};
	struct task_pass tp = {0};
	uint64_t *ids = NULL;
	uint32_t *sgroup = NULL;
	bool *sdeferred = NULL;
	int e;

	memset(out, 0, sizeof(*out));
	memset(b, 0, sizeof(*b));
	out->group_unnamed = !q->expand_unnamed;
	e = base_strtab__init(&out->groups);
	e = e ?: select_series(s, q, &sl, true, err, errlen);
	if (!e && (e = buckets_setup(&g, q, width_ns)) == -E2BIG)
		query_fail(err, errlen, e, "more than %d intervals of %lld s: use a larger step",
			   QUERY_MAX_POINTS, (long long)(b->width_ns / 1000000000));
	if (!e)
		e = task_pass_init(&tp, q, err, errlen);
	/* group_by and pid/tid matchers: summed by (group, stack), as query_stacks */
	g.a.keyed = tp.by || tp.sel;
	if (!e && g.a.keyed && sl.n) {
		sgroup = calloc(sl.n, sizeof(*sgroup));
		sdeferred = calloc(sl.n, sizeof(*sdeferred));
		e = sgroup && sdeferred ? series_groups(&sl, &tp, &out->groups, sgroup, sdeferred)
					: -ENOMEM;
		g.a.sl = &sl;
		g.a.series_group = sgroup;
		g.a.series_deferred = sdeferred;
	}
	if (!e && sl.n) {
		ids = series_ids(&sl);
		e = !ids ? -ENOMEM : g.a.keyed ? 0 : agg_grow_pos(&g.a, store__max_stack_id(s));
		/* no MERGE hint: the rows keep their windows (time_ns); rollups no
		 * longer than a bucket */
		e = e ?: store__scan(s,
				     &(struct store_scan_query){ids, sl.n, q->from_ns,
								q->until_ns, b->width_ns, 0},
				     on_bucket_rows, &g);
	}
	e = e ?: agg_sort(&g.a, b->v, b->k) ?: stacks_build(s, &g.a, out);
	e = e ?: tasks_apply(s, out, &tp, g.a.keyed ? g.a.group : NULL,
			     g.a.keyed ? g.a.deferred : NULL, b->v, b->k);
	if (!e && tp.sel) { /* stacks the pid/tid matchers refused leave the totals */
		for (size_t j = 0; j < b->k; j++)
			b->total[j] = 0;
		b->samples = 0;
		for (size_t i = 0; i < out->n; i++) {
			for (size_t j = 0; j < b->k; j++)
				b->total[j] += b->v[i * b->k + j];
			b->samples += (double)out->v[i][0];
		}
	}
	/* a bucket with data counts its part of [from, until): the same on every
	 * backend, whatever the windows' lengths its rows report */
	for (size_t i = 0; !e && i < b->k; i++) {
		int64_t lo = b->start_ns + (int64_t)i * b->width_ns, hi = lo + b->width_ns;

		lo = lo > q->from_ns ? lo : q->from_ns;
		hi = hi < q->until_ns ? hi : q->until_ns;
		b->wall_s[i] = g.seen[i] && hi > lo ? (double)(hi - lo) / 1e9 : 0;
	}
	if (!e) {
		out->type = sl.type; /* taken */
		sl.type = NULL;
	}
	if (e && e != -EINVAL && e != -E2BIG && err && errlen && !*err)
		query_fail(err, errlen, e, "merging the profile failed: %s", strerror(-e));
	free(ids);
	free(g.a.pos);
	free(g.a.ids);
	free(g.a.v);
	free(g.a.group);
	free(g.a.deferred);
	base_hmap__fini(&g.a.map);
	free(g.seen);
	free(sgroup);
	free(sdeferred);
	query_selector__free(tp.sel);
	selection_fini(&sl);
	return query_explain(err, errlen, e, "the merge");
}

void query_buckets__fini(struct query_buckets *b)
{
	free(b->v);
	free(b->total);
	free(b->wall_s);
	memset(b, 0, sizeof(*b));
}

void query_stacks__fini(struct query_stacks *qs)
{
	base_strtab__fini(&qs->groups);
	free(qs->ids);
	free(qs->off);
	free(qs->locs);
	free(qs->v);
	free(qs->type);
	memset(qs, 0, sizeof(*qs));
}

int64_t query_stacks__total(const struct query_stacks *qs, int vi)
{
	int64_t t = 0;

	for (size_t i = 0; vi >= 0 && vi < PROFILE_N_VALUES && i < qs->n; i++)
		t = base_sat_add(t, qs->v[i][vi]);
	return t;
}

/* ---- query_profile's task pass ---- */

/*
 * A merged profile rebuilt without its task locations: each sample's task (its
 * root-end location in PROFILE_TASK_MAPPING) becomes the sample labels pid and
 * tid (numbers, as `hearth record` writes them: `go tool pprof -tagfocus
 * pid=123`) and comm (the thread's name); samples the request's pid/tid/comm
 * matchers refuse are dropped. Mappings, functions and locations are made in
 * the new profile on first use, so none of the task's is left in it.
 */
struct retask {
	const struct profile *src; /* borrowed */
	struct profile *dst;	   /* borrowed */
	const struct query_selector *sel; /* borrowed: the task matchers, or NULL */
	uint64_t *loc, *map, *fn;	  /* owned: src id -> dst id (0: not yet) */
	uint64_t *locs;			  /* owned: a stack's ids in dst */
	struct profile_line *lines;	  /* owned: a location's lines in dst */
	size_t cap_locs, cap_lines;
};

static int retask_function(struct retask *r, uint64_t id, uint64_t *out)
{
	struct profile_function f;

	if (!r->fn[id]) {
		if (profile__get_function(r->src, id, &f))
			return -EINVAL;
		if (!(r->fn[id] = profile__function(r->dst, f.name, f.system_name, f.filename)))
			return -ENOMEM;
	}
	*out = r->fn[id];
	return 0;
}

static int retask_location(struct retask *r, uint64_t id, uint64_t *out)
{
	struct profile_location l;
	struct profile_mapping m;
	uint64_t mid = 0;
	int e = 0;

	if (r->loc[id]) {
		*out = r->loc[id];
		return 0;
	}
	if (profile__get_location(r->src, id, &l))
		return -EINVAL;
	if (l.mapping_id && !(mid = r->map[l.mapping_id])) {
		if (profile__get_mapping(r->src, l.mapping_id, &m))
			return -EINVAL;
		mid = r->map[l.mapping_id] =
		    profile__mapping(r->dst, m.start, m.limit, m.offset, m.file, m.build_id);
		if (!mid)
			return -ENOMEM;
	}
	if (base_grow((void **)&r->lines, &r->cap_lines, l.n_lines + 1, sizeof(*r->lines)))
		return -ENOMEM;
	for (size_t k = 0; !e && k < l.n_lines; k++) {
		r->lines[k].line = l.lines[k].line;
		e = retask_function(r, l.lines[k].function_id, &r->lines[k].function_id);
	}
	if (!e && !(r->loc[id] = profile__location_exact(r->dst, mid, l.address, r->lines,
							 l.n_lines)))
		e = -ENOMEM;
	*out = r->loc[id];
	return e;
}

/* A sample without a task location: its series' own pid/comm labels answer the
 * matchers (the series passed them), "" where it has none. */
static void task_from_labels(const struct profile_sample *ps, struct query_task *t, char *comm,
			     size_t commlen)
{
	for (size_t i = 0; i < ps->n_labels; i++) {
		const struct profile_label *l = &ps->labels[i];
		char v[24];

		if (!query_task_label(l->key))
			continue;
		if (!l->str)
			snprintf(v, sizeof(v), "%lld", (long long)l->num);
		if (!strcmp(l->key, PROFILE_LABEL_PID))
			snprintf(t->pid, sizeof(t->pid), "%s", l->str ? l->str : v);
		else if (!strcmp(l->key, PROFILE_LABEL_TID))
			snprintf(t->tid, sizeof(t->tid), "%s", l->str ? l->str : v);
		else
			snprintf(comm, commlen, "%s", l->str ? l->str : v);
	}
}

/* Sample ps into r->dst, stripped of its task location and labelled with it. */
static int retask_sample(struct retask *r, const struct profile_sample *ps)
{
	struct profile_label labels[QUERY_MAX_SAMPLE_LABELS + 3];
	struct profile_location root;
	struct query_task t = {.comm = ""};
	char comm[STORE_MAX_LABEL_LEN + 1] = "";
	size_t n = ps->n_locs, nl = 0;
	int e = 0;

	if (n && !profile__get_location(r->src, ps->locs[n - 1], &root) &&
	    task_of_loc(r->src, &root, &t))
		n--;
	else
		task_from_labels(ps, &t, comm, sizeof(comm)), t.comm = comm;
	if (r->sel && !query_selector__match_task(r->sel, &t))
		return 0;
	if (base_grow((void **)&r->locs, &r->cap_locs, n + 1, sizeof(*r->locs)))
		return -ENOMEM;
	for (size_t i = 0; !e && i < n; i++)
		e = retask_location(r, ps->locs[i], &r->locs[i]);
	for (size_t i = 0; i < ps->n_labels && nl < QUERY_MAX_SAMPLE_LABELS; i++)
		if (!t.present || !query_task_label(ps->labels[i].key))
			labels[nl++] = ps->labels[i];
	if (t.present) {
		labels[nl++] = (struct profile_label){PROFILE_LABEL_PID, NULL,
						      PROFILE_TASK_PID(root.address)};
		labels[nl++] = (struct profile_label){PROFILE_LABEL_TID, NULL,
						      PROFILE_TASK_TID(root.address)};
		if (*t.comm)
			labels[nl++] = (struct profile_label){PROFILE_LABEL_COMM, t.comm, 0};
	}
	return e ?: profile__add_sample(r->dst, r->locs, n, ps->values, labels, nl);
}

/* Whether p holds a task location's mapping. */
static bool has_task_mapping(const struct profile *p)
{
	struct profile_mapping m;

	for (uint64_t id = 1; id <= profile__n_mappings(p); id++)
		if (!profile__get_mapping(p, id, &m) && !strcmp(m.file, PROFILE_TASK_MAPPING))
			return true;
	return false;
}

/* *p rebuilt as struct retask says (a new profile replaces it), when it holds
 * task locations or sel names pid/tid/comm. 0, -ENOMEM, -EINVAL (a broken model). */
static int profile_tasks(struct profile **p, const struct query_selector *sel, bool group_unnamed)
{
	struct retask r = {.src = *p, .sel = sel};
	struct profile_sample ps;
	int e = 0;

	if (!sel && !has_task_mapping(*p))
		return 0;
	r.dst = profile__new(profile__period_ns(*p));
	r.loc = calloc(profile__n_locations(*p) + 1, sizeof(*r.loc));
	r.map = calloc(profile__n_mappings(*p) + 1, sizeof(*r.map));
	r.fn = calloc(profile__n_functions(*p) + 1, sizeof(*r.fn));
	if (!r.dst || !r.loc || !r.map || !r.fn)
		e = -ENOMEM;
	else
		profile__set_group_unnamed(r.dst, group_unnamed);
	for (size_t i = 0; !e && i < profile__n_samples(*p); i++)
		e = profile__sample(*p, i, &ps) ? -EINVAL : retask_sample(&r, &ps);
	if (!e) {
		profile__free(*p);
		*p = r.dst;
		r.dst = NULL;
	}
	profile__free(r.dst);
	free(r.loc);
	free(r.map);
	free(r.fn);
	free(r.locs);
	free(r.lines);
	return e;
}

int query_profile(struct store *s, const struct query_request *q, struct profile **out, char *err,
		  size_t errlen)
{
	struct selection sl;
	struct merge m = {.sl = &sl};
	struct task_pass tp = {0};
	uint64_t *ids = NULL;
	int e;

	*out = NULL;
	e = select_series(s, q, &sl, true, err, errlen) ?: task_pass_init(&tp, q, err, errlen);
	if (!e && sl.n) {
		ids = series_ids(&sl);
		m.last_cap = store__max_stack_id(s) + 1;
		m.last = calloc(m.last_cap, sizeof(*m.last));
		e = ids && m.last
			? store__scan(s,
				      &(struct store_scan_query){ids, sl.n, q->from_ns, q->until_ns,
								 0, STORE_SCAN_MERGE_TIME},
				      on_rows, &m)
			: -ENOMEM;
	}
	if (!e) {
		*out = profile__new(period_of(&m));
		if (*out) /* named as tree/top/diff name them (query_stacks) */
			profile__set_group_unnamed(*out, !q->expand_unnamed);
		e = *out ? build(s, &m, *out) : -ENOMEM;
	}
	if (!e)
		e = profile_tasks(out, tp.sel, !q->expand_unnamed);
	if (!e)
		profile__set_time(*out, q->from_ns, q->until_ns - q->from_ns);
	if (!e)
		e = profile__set_type(*out, sl.type); /* pprof's sample type and unit */
	if (e && e != -EINVAL && e != -E2BIG && err && errlen && !*err)
		query_fail(err, errlen, e, "merging the profile failed: %s", strerror(-e));
	if (e) {
		profile__free(*out);
		*out = NULL;
	}
	free(ids);
	free(m.rows);
	free(m.last);
	base_hmap__fini(&m.map);
	query_selector__free(tp.sel);
	selection_fini(&sl);
	return query_explain(err, errlen, e, "the merge");
}

/* ---- timeline ---- */

struct timeline {
	struct selection *sl;
	size_t *group_of; /* per selected series */
	const char **names;
	size_t n_groups;
	int64_t *vals; /* n_groups x points */
	size_t points;
	int64_t from, step;
	int vi;
	const struct query_selected *by_stack; /* borrowed: timeline_by_stack's selection */
};

static int on_totals(void *ctx, const struct store_row *rows, size_t n)
{
	struct timeline *t = ctx;

	for (size_t i = 0; i < n; i++) {
		size_t k = find_series(t->sl, rows[i].series_id);
		int64_t at = (rows[i].time_ns - t->from) / t->step;

		if (k == SIZE_MAX || at < 0 || (size_t)at >= t->points)
			continue;
		int64_t *v = &t->vals[t->group_of[k] * t->points + (size_t)at];
		*v = base_sat_add(*v, rows[i].values[t->vi]);
	}
	return 0;
}

/* Groups series by the group_by value (series without it: ""). */
static int make_groups(struct timeline *t, const char *by, char *err, size_t errlen)
{
	t->group_of = calloc(t->sl->n + 1, sizeof(*t->group_of));
	t->names = calloc(t->sl->n + 1, sizeof(*t->names));
	if (!t->group_of || !t->names)
		return -ENOMEM;
	for (size_t i = 0; i < t->sl->n; i++) {
		const char *v = by && *by ? series_label(&t->sl->s[i], by) : "";
		size_t g;

		v = v ? v : "";
		for (g = 0; g < t->n_groups && strcmp(t->names[g], v); g++)
			;
		if (g == t->n_groups) {
			if (t->n_groups >= QUERY_MAX_GROUPS)
				return query_fail(err, errlen, -E2BIG,
						  "groupBy %.64s gives more than %d groups", by,
						  QUERY_MAX_GROUPS);
			t->names[t->n_groups++] = v;
		}
		t->group_of[i] = g;
	}
	return 0;
}

static int64_t auto_step(int64_t range)
{
	int64_t ten = 10ll * 1000000000ll, st = range / 1000;

	return st < ten ? ten : (st + ten - 1) / ten * ten;
}

static int timeline_setup(struct timeline *t, const struct query_request *q, char *err,
			  size_t errlen)
{
	int64_t range;

	/* A range past INT64_MAX ns (from far before 1970 to far after) cannot
	 * be split into points at all. */
	if (__builtin_sub_overflow(q->until_ns, q->from_ns, &range))
		return query_fail(err, errlen, -E2BIG,
				  "range from %lld to %lld ns is longer than 292 years",
				  (long long)q->from_ns, (long long)q->until_ns);
	t->step = q->step_ns > 0 ? q->step_ns : auto_step(range);
	t->from = q->from_ns;
	t->vi = q->value_index;
	/* ceil(range / step) without range + step - 1, which overflows near INT64_MAX */
	t->points = (size_t)(range / t->step + (range % t->step != 0));
	if (t->points > QUERY_MAX_POINTS)
		return query_fail(
		    err, errlen, -E2BIG,
		    "%zu steps of %lld s, over the limit of %d points: use a larger step",
		    t->points, (long long)(t->step / 1000000000), QUERY_MAX_POINTS);
	if (q->group_by && *q->group_by &&
	    strspn(q->group_by, "abcdefghijklmnopqrstuvwxyz"
				"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") != strlen(q->group_by))
		return query_fail(err, errlen, -EINVAL, "invalid groupBy label \"%.64s\"",
				  q->group_by);
	return 0;
}

static int by_total(const void *a, const void *b, void *ctx)
{
	const int64_t *tot = ctx;
	int64_t x = tot[*(const size_t *)a], y = tot[*(const size_t *)b];

	if (x != y)
		return x > y ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* The groups with data into out, by total descending. */
static int timeline_result(const struct timeline *t, const char *type,
			   const struct query_request *q, struct query_timeline *out)
{
	struct profile *unit_of = profile__new(0); /* the unit of the selection's type */
	int64_t *tot = calloc(t->n_groups + 1, sizeof(*tot));
	size_t *order = calloc(t->n_groups + 1, sizeof(*order)), n = 0;
	int e = 0;

	out->groups = calloc(t->n_groups + 1, sizeof(*out->groups));
	if (!tot || !order || !unit_of || !out->groups || profile__set_type(unit_of, type)) {
		e = -ENOMEM;
		goto cleanup;
	}
	for (size_t g = 0; g < t->n_groups; g++) {
		bool any = false;

		for (size_t i = 0; i < t->points; i++) {
			tot[g] = base_sat_add(tot[g], t->vals[g * t->points + i]);
			any |= t->vals[g * t->points + i] != 0;
		}
		if (any)
			order[n++] = g;
	}
	if (n)
		qsort_r(order, n, sizeof(*order), by_total, tot);
	snprintf(out->unit, sizeof(out->unit), "%s", profile__unit(unit_of, q->value_index));
	out->from_ns = q->from_ns;
	out->until_ns = q->until_ns;
	out->step_ns = t->step;
	out->n_points = t->points;
	for (size_t j = 0; j < n && !e; j++) {
		struct query_timeline_group *gr = &out->groups[out->n_groups++];
		size_t g = order[j];

		gr->total = tot[g];
		gr->group = strdup(t->names[g]);
		gr->values = malloc((t->points + 1) * sizeof(*gr->values));
		if (!gr->group || !gr->values)
			e = -ENOMEM;
		else
			memcpy(gr->values, t->vals + g * t->points,
			       t->points * sizeof(*gr->values));
	}
cleanup:
	free(tot);
	free(order);
	profile__free(unit_of);
	return e;
}

/* Whether q names pid, tid or comm in its selector or group_by: they live in
 * the stacks' task locations, so a timeline or function series reads stacks. */
static bool query_names_task(const struct query_request *q)
{
	struct query_selector *sel = NULL;
	bool task = q->group_by && query_task_label(q->group_by);

	/* a bad selector: the cheap path reports it */
	if (!task && !q->n_queries && q->query && !query_selector__parse(q->query, &sel, NULL, 0))
		task = query_selector__has_task(sel);
	query_selector__free(sel);
	return task;
}

static int on_task_rows(void *ctx, const struct store_row *rows, size_t n)
{
	struct timeline *t = ctx;
	const struct query_selected *sel = t->by_stack;

	for (size_t i = 0; i < n; i++) {
		size_t k = query_selected__find(sel, rows[i].series_id);
		int64_t at = (rows[i].time_ns - t->from) / t->step;
		uint32_t g;

		if (k == SIZE_MAX || at < 0 || (size_t)at >= t->points ||
		    !query_selected__row(sel, k, rows[i].stack_id, &g))
			continue;
		int64_t *v = &t->vals[g * t->points + (size_t)at];
		*v = base_sat_add(*v, rows[i].values[t->vi]);
	}
	return 0;
}

/*
 * The timeline of a request naming pid, tid or comm: the rows of every stack
 * (not the series' totals), each counted when its stack's task passes the
 * matchers, in its task's group (query_selected__row).
 */
static int timeline_by_stack(struct store *s, const struct query_request *q, struct timeline *t,
			     struct query_timeline *out, char *err, size_t errlen)
{
	struct query_selected sel;
	int e = query_select(s, q, &sel, err, errlen);

	t->by_stack = &sel;
	t->names = (const char **)sel.groups;
	t->n_groups = sel.n_groups;
	if (!e && (t->n_groups ? t->n_groups : 1) > SIZE_MAX / 8 / (t->points + 1))
		e = -ENOMEM;
	if (!e && !(t->vals = calloc((t->n_groups ? t->n_groups : 1) * (t->points + 1),
				     sizeof(*t->vals))))
		e = -ENOMEM;
	if (!e && sel.n)
		e = store__scan(s,
				&(struct store_scan_query){sel.ids, sel.n, q->from_ns, q->until_ns,
							   t->step, 0},
				on_task_rows, t);
	if (!e)
		e = timeline_result(t, sel.type, q, out);
	free(t->vals);
	query_selected__fini(&sel);
	return query_explain(err, errlen, e, "the timeline");
}

int query_timeline(struct store *s, const struct query_request *q, struct query_timeline *out,
		   char *err, size_t errlen)
{
	struct selection sl = {0}; /* finied also when timeline_setup fails first */
	struct timeline t = {.sl = &sl};
	uint64_t *ids = NULL;
	int e;

	memset(out, 0, sizeof(*out));
	e = timeline_setup(&t, q, err, errlen);
	if (!e && query_names_task(q))
		return timeline_by_stack(s, q, &t, out, err, errlen);
	e = e ?: select_series(s, q, &sl, true, err, errlen)
		  ?: make_groups(&t, q->group_by, err, errlen);

	if (!e && (t.n_groups ? t.n_groups : 1) > SIZE_MAX / 8 / (t.points + 1))
		e = -ENOMEM;
	if (!e) {
		t.vals = calloc((t.n_groups ? t.n_groups : 1) * (t.points + 1), sizeof(*t.vals));
		ids = series_ids(&sl);
		e = t.vals && ids ? 0 : -ENOMEM;
	}
	if (!e && sl.n)
		e = store__scan(s,
				&(struct store_scan_query){ids, sl.n, q->from_ns, q->until_ns,
							   t.step, STORE_SCAN_TOTALS},
				on_totals, &t);
	if (!e)
		e = timeline_result(&t, sl.type, q, out);
	free(ids);
	free(t.vals);
	free(t.group_of);
	free(t.names);
	selection_fini(&sl);
	return query_explain(err, errlen, e, "the timeline");
}

/* ---- a merge's selection, for the engines in other files (fseries.c) ---- */

/* Groups: the group_by value of each selected series (series without it: ""). */
static int selected_groups(struct query_selected *out, const struct selection *sl, const char *by,
			   char *err, size_t errlen)
{
	if (by && *by &&
	    strspn(by, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") !=
		strlen(by))
		return query_fail(err, errlen, -EINVAL, "invalid groupBy label \"%.64s\"", by);
	out->group = calloc(sl->n + 1, sizeof(*out->group));
	out->groups = calloc(sl->n + 1, sizeof(*out->groups));
	out->cap_groups = sl->n + 1;
	if (!out->group || !out->groups)
		return -ENOMEM;
	for (size_t i = 0; i < sl->n; i++) {
		const char *v = by && *by ? series_label(&sl->s[i], by) : "";
		size_t g;

		v = v ? v : "";
		for (g = 0; g < out->n_groups && strcmp(out->groups[g], v); g++)
			;
		if (g == out->n_groups) {
			if (out->n_groups >= QUERY_MAX_GROUPS)
				return query_fail(err, errlen, -E2BIG,
						  "groupBy %.64s gives more than %d groups", by,
						  QUERY_MAX_GROUPS);
			if (!(out->groups[g] = strdup(v)))
				return -ENOMEM;
			out->n_groups++;
		}
		out->group[i] = (uint32_t)g;
	}
	return 0;
}

/* ---- the per-stack path of a selection (query_selected__row) ---- */

/* A root-end location of the selection's stacks: a task location or not. */
struct stack_root {
	uint64_t loc;	/* store location id */
	bool present;	/* a task location */
	bool pass;	/* the request's task matchers pass it */
	uint32_t group; /* group_by pid/tid/comm: the group of its value */
};

struct query_stack_tasks {
	bool by_task;	 /* group_by is pid, tid or comm */
	bool empty_pass; /* a stack without a task location passes the matchers */
	bool *deferred;	 /* per selected series: lacks a pid/tid/comm a matcher names */
	uint32_t *stack; /* per store stack id: 0 not met, 1 + index in roots */
	size_t n_stack;
	uint64_t *met; /* the met stack ids, in first-met order */
	size_t n_met, cap_met;
	struct stack_root *roots;
	size_t n_roots, cap_roots;
	struct base_hmap map; /* root location id -> index in roots */
};

static void stack_tasks_free(struct query_stack_tasks *st)
{
	if (!st)
		return;
	free(st->deferred);
	free(st->stack);
	free(st->met);
	free(st->roots);
	base_hmap__fini(&st->map);
	free(st);
}

static int on_met_rows(void *ctx, const struct store_row *rows, size_t n)
{
	struct query_stack_tasks *st = ctx;

	for (size_t i = 0; i < n; i++) {
		uint64_t id = rows[i].stack_id;

		if (id >= SIZE_MAX / 2 ||
		    (id >= st->n_stack &&
		     base_grow_zeroed((void **)&st->stack, &st->n_stack, (size_t)id + 1,
				      sizeof(*st->stack))))
			return -ENOMEM;
		if (st->stack[id])
			continue;
		st->stack[id] = UINT32_MAX; /* met; its root is resolved later */
		if (base_grow((void **)&st->met, &st->cap_met, st->n_met + 1, sizeof(*st->met)))
			return -ENOMEM;
		st->met[st->n_met++] = id;
	}
	return 0;
}

/* The index in sel->groups of group value v, added when new. */
static int selected_group(struct query_selected *sel, const char *v, uint32_t *g, char *err,
			  size_t errlen)
{
	for (*g = 0; *g < sel->n_groups && strcmp(sel->groups[*g], v); (*g)++)
		;
	if (*g < sel->n_groups)
		return 0;
	if (sel->n_groups >= QUERY_MAX_GROUPS)
		return query_fail(err, errlen, -E2BIG, "groupBy gives more than %d groups",
				  QUERY_MAX_GROUPS);
	if (base_grow((void **)&sel->groups, &sel->cap_groups, sel->n_groups + 1,
		      sizeof(*sel->groups)))
		return -ENOMEM;
	if (!(sel->groups[sel->n_groups] = strdup(v)))
		return -ENOMEM;
	sel->n_groups++;
	return 0;
}

static bool root_eq(const void *ctx, size_t idx, const void *key)
{
	return ((const struct stack_root *)ctx)[idx].loc == *(const uint64_t *)key;
}

/* The index in st->roots of root-end location loc, resolved when new. */
static int stack_root(struct query_selected *sel, const struct task_pass *tp,
		      struct store_builder *b, const struct profile *p, uint64_t loc, uint32_t *k,
		      char *err, size_t errlen)
{
	struct query_stack_tasks *st = sel->tasks;
	uint64_t h = base_hash_u64(BASE_HASH_SEED, loc);
	size_t at = base_hmap__find(&st->map, h, root_eq, st->roots, &loc);
	struct query_task t = {.comm = ""};
	struct stack_root r = {.loc = loc, .pass = true};
	int e;

	if (at != SIZE_MAX) {
		*k = (uint32_t)at;
		return 0;
	}
	if (loc && (e = task_of(b, p, loc, &t))) /* 0: a stack without locations */
		return e;
	r.present = t.present;
	if (t.present && tp->sel)
		r.pass = query_selector__match_task(tp->sel, &t);
	if (t.present && st->by_task && r.pass &&
	    (e = selected_group(sel, query_task__value(&t, tp->by), &r.group, err, errlen)))
		return e;
	if (st->n_roots >= UINT32_MAX - 2 ||
	    base_grow((void **)&st->roots, &st->cap_roots, st->n_roots + 1, sizeof(*st->roots)) ||
	    base_hmap__insert(&st->map, h, st->n_roots))
		return -ENOMEM;
	st->roots[st->n_roots] = r;
	*k = (uint32_t)st->n_roots++;
	return 0;
}

#define QUERY_ROOTS_BATCH 1024

/* Every stack of the selection over q's range: its root-end location's task. */
static int resolve_roots(struct store *s, const struct query_request *q,
			 struct query_selected *sel, const struct task_pass *tp, char *err,
			 size_t errlen)
{
	struct query_stack_tasks *st = sel->tasks;
	struct profile *p = profile__new(0);
	struct store_builder *b = NULL;
	size_t off[QUERY_ROOTS_BATCH + 1], cap = 0;
	uint64_t *locs = NULL;
	int e = p ? store_builder__new(s, p, &b) : -ENOMEM;

	if (!e && sel->n)
		e = store__scan(s,
				&(struct store_scan_query){sel->ids, sel->n, q->from_ns,
							   q->until_ns, 0, STORE_SCAN_MERGE_SERIES},
				on_met_rows, st);
	for (size_t i = 0; !e && i < st->n_met; i += QUERY_ROOTS_BATCH) {
		size_t n = st->n_met - i < QUERY_ROOTS_BATCH ? st->n_met - i : QUERY_ROOTS_BATCH;

		e = store__stack_locations(s, st->met + i, n, off, &locs, &cap);
		for (size_t j = 0; !e && j < n; j++) {
			uint32_t k = 0;

			e = stack_root(sel, tp, b, p, off[j + 1] > off[j] ? locs[off[j + 1] - 1] : 0,
				       &k, err, errlen);
			st->stack[st->met[i + j]] = k + 1;
		}
	}
	free(locs);
	store_builder__free(b);
	profile__free(p);
	return e;
}

/* sel->tasks for a request that names pid, tid or comm (see query_impl.h). */
static int select_tasks(struct store *s, const struct query_request *q,
			struct query_selected *sel, const struct selection *sl, char *err,
			size_t errlen)
{
	struct task_pass tp;
	struct query_task none = {.comm = ""};
	int e = task_pass_init(&tp, q, err, errlen);

	if (e || (!tp.sel && !tp.by_task))
		goto cleanup;
	if (!(sel->tasks = calloc(1, sizeof(*sel->tasks))) ||
	    !(sel->tasks->deferred = calloc(sl->n + 1, sizeof(bool)))) {
		e = -ENOMEM;
		goto cleanup;
	}
	sel->tasks->by_task = tp.by_task;
	sel->tasks->empty_pass = !tp.sel || query_selector__match_task(tp.sel, &none);
	for (size_t i = 0; i < sl->n; i++)
		for (size_t k = 0; tp.sel && k < tp.sel->n; k++)
			if (query_task_label(tp.sel->m[k].name) &&
			    !series_label(&sl->s[i], tp.sel->m[k].name))
				sel->tasks->deferred[i] = true;
	e = resolve_roots(s, q, sel, &tp, err, errlen);
cleanup:
	query_selector__free(tp.sel);
	return e;
}

bool query_selected__row(const struct query_selected *sel, size_t k, uint64_t stack_id,
			 uint32_t *g)
{
	const struct query_stack_tasks *st = sel->tasks;
	uint32_t c = stack_id < st->n_stack ? st->stack[stack_id] : 0;
	const struct stack_root *r;

	*g = sel->group[k];
	if (!c || c == UINT32_MAX)
		return false; /* appended since the roots were resolved */
	r = &st->roots[c - 1];
	if (!r->present)
		return !st->deferred[k] || st->empty_pass;
	if (st->by_task && r->pass)
		*g = r->group;
	return r->pass;
}

int query_select(struct store *s, const struct query_request *q, struct query_selected *out,
		 char *err, size_t errlen)
{
	struct selection sl;
	int e;

	memset(out, 0, sizeof(*out));
	e = select_series(s, q, &sl, true, err, errlen);
	if (!e && !(out->ids = series_ids(&sl)))
		e = -ENOMEM;
	if (!e) {
		out->n = sl.n;
		out->type = sl.type; /* taken */
		sl.type = NULL;
		e = selected_groups(out, &sl, q->group_by, err, errlen)
			?: select_tasks(s, q, out, &sl, err, errlen);
	}
	selection_fini(&sl);
	return query_explain(err, errlen, e, "selecting series");
}

size_t query_selected__find(const struct query_selected *sel, uint64_t id)
{
	size_t lo = 0, hi = sel->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (sel->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sel->n && sel->ids[lo] == id ? lo : SIZE_MAX;
}

void query_selected__fini(struct query_selected *sel)
{
	for (size_t g = 0; g < sel->n_groups; g++)
		free(sel->groups[g]);
	free(sel->groups);
	free(sel->group);
	free(sel->ids);
	free(sel->type);
	stack_tasks_free(sel->tasks);
	memset(sel, 0, sizeof(*sel));
}
