/*
 * Flame tree, diff (tree and per-function table) and top table of a request
 * as typed results (query.h; result.c writes their JSON), each made one way:
 * from the request's merge by stack (query_stacks), whose store location ids a
 * store_builder names into a profile of locations only. Frames are named as
 * folded/top name them (profile__frame_name); names are interned in a
 * base_strtab. A tree has two value slots, one per selection of a diff. Both
 * the tree of one selection (the web UI's request) and a diff's are built from
 * the stacks sorted by name, making only the nodes they keep (see "one
 * selection's tree" below); node by node (a node keyed by (parent, name id): its
 * parent's short children list, or a base_hmap for wide parents) remains as the
 * diff's reference build (query_diff_by_node, for tests): the same answer. Only
 * the max_nodes largest nodes are kept. The top table's rows (and the diff's
 * per-function table, two of them merged by name) are
 * profile/top.c's (top__add, or top__line_row and top__add_rows as the tree
 * walks the stacks), the one definition of the table.
 *
 * Each node also names its module (the basename of the mapping's file,
 * "[kernel]" for kernel frames; from the first location that made the node),
 * which the web UI colours by (QUERY_NONE when unknown).
 */
#include "query_impl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * 56 bytes: a 1 h merge of the benchmark makes 1.8 million nodes (stacks of
 * ~35 frames that share little), so their size is memory traffic. Indexes are
 * 32-bit (more nodes or names: -ENOMEM).
 */
#define TREE_NONE UINT32_MAX
struct node {
	uint32_t name, parent, first, next; /* first/next: children list, TREE_NONE = none */
	uint32_t module;		    /* name id of the module; TREE_NONE = unknown */
	uint32_t nkids : 31, keep : 1;
	int64_t self[2], total[2];
};

/*
 * A node's children are found by walking its list while it has at most
 * TREE_LIST_MAX of them, through child_map (keyed by (parent, name)) beyond:
 * most nodes of a large tree have one child, so most frames cost neither a map
 * probe nor a map entry.
 */
#define TREE_LIST_MAX 8
/* Nodes reserved up front (tree_add): 4 Mi nodes, 224 MiB of address space. */
#define TREE_RESERVE ((size_t)1 << 22)

struct tree {
	struct node *n;
	size_t nn, cap;
	struct base_strtab names;   /* id 0 is "" (unused), id 1 "total" */
	struct base_hmap child_map; /* (parent, name) -> node index, for wide parents */
	/* Per store location of the stacks being added: loc_off[id] is 1 + the
	 * index in pool of (count, module id, name ids outer line first); 0 = not
	 * named yet. Naming a frame (snprintf + hash) once per location, not once
	 * per sample frame. loc_cap entries, grown on demand. */
	size_t *loc_off, *pool;
	size_t loc_cap, pool_n, pool_cap;
	/* borrowed, or NULL: a top table counted as the stacks are named (the tree of
	 * one selection); each location's pool entry then also holds its row ids,
	 * outer line first, after its names */
	struct top *top;
	/* per mapping id of the profile being named: 1 + its module id, SIZE_MAX for
	 * none, 0 = not yet (a mapping has many locations) */
	size_t *mod_of, mod_cap;
	/* borrowed, or NULL: a diff side's functions per interval, counted with
	 * t->top's row ids as the stacks are named (stats.c) */
	struct fn_stats *stats;
};

static int intern_name(struct tree *t, const char *s, size_t *id)
{
	int64_t i;

	if (t->names.n >= TREE_NONE - 1)
		return -ENOMEM;
	if ((i = base_strtab__intern(&t->names, s)) < 0)
		return (int)i;
	*id = (size_t)i;
	return 0;
}

static uint64_t child_hash(size_t parent, size_t name)
{
	return base_hash_u64(base_hash_u64(BASE_HASH_SEED, parent), name);
}

struct child_key {
	uint32_t parent, name;
};

static bool child_eq(const void *ctx, size_t idx, const void *key)
{
	const struct node *n = &((const struct tree *)ctx)->n[idx];
	const struct child_key *k = key;

	return n->parent == k->parent && n->name == k->name;
}

/* parent: TREE_NONE for the root. */
static int new_node(struct tree *t, uint32_t parent, size_t name, size_t *out)
{
	if (t->nn >= TREE_NONE - 1 || base_grow((void **)&t->n, &t->cap, t->nn + 1, sizeof(*t->n)))
		return -ENOMEM;
	t->n[t->nn] = (struct node){.name = (uint32_t)name,
				    .parent = parent,
				    .first = TREE_NONE,
				    .next = TREE_NONE,
				    .module = TREE_NONE};
	if (parent != TREE_NONE) {
		t->n[t->nn].next = t->n[parent].first;
		t->n[parent].first = (uint32_t)t->nn;
		t->n[parent].nkids++;
	}
	*out = t->nn++;
	return 0;
}

/* Moves the children of a node whose list is full into child_map. */
static int kids_to_map(struct tree *t, size_t parent)
{
	for (uint32_t c = t->n[parent].first; c != TREE_NONE; c = t->n[c].next)
		if (base_hmap__insert(&t->child_map, child_hash(parent, t->n[c].name), c))
			return -ENOMEM;
	return 0;
}

/* The child of parent named name, made when missing (see TREE_LIST_MAX). */
static int child(struct tree *t, size_t parent, size_t name, size_t *out)
{
	struct child_key k = {(uint32_t)parent, (uint32_t)name};
	uint64_t h;
	size_t i;

	if (t->n[parent].nkids <= TREE_LIST_MAX) {
		for (uint32_t c = t->n[parent].first; c != TREE_NONE; c = t->n[c].next)
			if (t->n[c].name == name) {
				*out = c;
				return 0;
			}
		if (t->n[parent].nkids < TREE_LIST_MAX)
			return new_node(t, (uint32_t)parent, name, out);
		if (kids_to_map(t, parent))
			return -ENOMEM;
	}
	h = child_hash(parent, name);
	if ((i = base_hmap__find(&t->child_map, h, child_eq, t, &k)) != SIZE_MAX) {
		*out = i;
		return 0;
	}
	return new_node(t, (uint32_t)parent, name, out)
		   ?: base_hmap__insert(&t->child_map, h, *out);
}

static int tree_init(struct tree *t)
{
	size_t root, name = 0;

	memset(t, 0, sizeof(*t));
	if (base_strtab__init(&t->names))
		return -ENOMEM;
	return intern_name(t, "total", &name) ?: new_node(t, TREE_NONE, name, &root);
}

/* tree_init for a tree of values[vi]: -EINVAL for a vi out of range (t then
 * zeroed, so that tree_fini may run). */
static int tree_start(struct tree *t, int vi)
{
	if (vi < 0 || vi >= PROFILE_N_VALUES) {
		memset(t, 0, sizeof(*t));
		return -EINVAL;
	}
	return tree_init(t);
}

static void tree_fini(struct tree *t)
{
	free(t->n);
	free(t->loc_off);
	free(t->mod_of);
	free(t->pool);
	base_strtab__fini(&t->names);
	base_hmap__fini(&t->child_map);
}

/* The module of a location, interned into *id: its mapping file's basename,
 * "[kernel]" for kernel frames, SIZE_MAX when unknown. */
static int name_module_of(struct tree *t, const struct profile *p, uint64_t mapping_id, size_t *id)
{
	struct profile_mapping m;
	const char *slash;

	*id = SIZE_MAX;
	if (!mapping_id || profile__get_mapping(p, mapping_id, &m))
		return 0;
	if (m.is_kernel)
		return intern_name(t, "[kernel]", id);
	if (!m.file || !m.file[0])
		return 0;
	slash = strrchr(m.file, '/');
	return intern_name(t, slash && slash[1] ? slash + 1 : m.file, id);
}

/* name_module_of, once per mapping. */
static int name_module(struct tree *t, const struct profile *p, const struct profile_location *loc,
		       size_t *id)
{
	uint64_t m = loc->mapping_id;
	int e;

	if (m < t->mod_cap && t->mod_of[m]) {
		*id = t->mod_of[m] == SIZE_MAX ? SIZE_MAX : t->mod_of[m] - 1;
		return 0;
	}
	if ((e = name_module_of(t, p, m, id)))
		return e;
	if (m < SIZE_MAX - 1 &&
	    !base_grow_zeroed((void **)&t->mod_of, &t->mod_cap, m + 1, sizeof(*t->mod_of)))
		t->mod_of[m] = *id == SIZE_MAX ? SIZE_MAX : *id + 1;
	return 0;
}

/*
 * The stacks a tree is made of: the distinct stacks of a query_stacks, whose
 * store location ids b names into p (a profile of locations only).
 */
struct stack_src {
	struct profile *p;	       /* owned: the locations named */
	const struct query_stacks *qs; /* borrowed */
	struct store_builder *b;       /* owned: translates qs's store location ids into p */
	uint64_t *group_locs;	       /* owned: p's location of each group of qs (by name id) */
	const struct query_buckets *bk; /* borrowed, or NULL: qs's stacks per interval */
};

/* p's location id of qs's location id: a store location through the builder, a
 * group location (query_stacks, group_by) from group_locs. */
static int src_location(const struct stack_src *src, uint64_t id, uint64_t *out)
{
	const struct query_stacks *qs = src->qs;

	if (src->group_locs && id >= qs->group_loc0 && id - qs->group_loc0 < qs->groups.n) {
		*out = src->group_locs[id - qs->group_loc0];
		return 0;
	}
	return store_builder__location(src->b, id, out);
}

/* Names the frames of location id into the pool; *at is its pool index. */
static int name_location(struct tree *t, const struct stack_src *src, uint64_t id, size_t *at)
{
	const struct profile *p = src->p;
	char buf[1024];
	struct profile_location loc;
	uint64_t pid = id;
	size_t n;
	int e;

	if (id < t->loc_cap && t->loc_off[id]) {
		*at = t->loc_off[id] - 1;
		return 0;
	}
	if (id >= t->loc_cap) {
		size_t old = t->loc_cap;

		if (id == SIZE_MAX ||
		    base_grow((void **)&t->loc_off, &t->loc_cap, id + 1, sizeof(*t->loc_off)))
			return -ENOMEM;
		memset(t->loc_off + old, 0, (t->loc_cap - old) * sizeof(*t->loc_off));
	}
	if ((e = src_location(src, id, &pid)))
		return e;
	if (profile__get_location(p, pid, &loc))
		return -EINVAL;
	n = loc.n_lines ? loc.n_lines : 1;
	if (base_grow((void **)&t->pool, &t->pool_cap, t->pool_n + 2 * n + 2, sizeof(*t->pool)))
		return -ENOMEM;
	*at = t->pool_n;
	t->pool[t->pool_n++] = n;
	if ((e = name_module(t, p, &loc, &t->pool[t->pool_n++])))
		return e;
	for (size_t l = n; l-- > 0;) {
		const char *name = profile__frame_name(p, &loc, l, buf, sizeof(buf));
		int64_t row = 0;

		if ((e = intern_name(t, name, &t->pool[t->pool_n])))
			return e;
		if (t->top && (row = top__line_row(t->top, &loc, l, name)) < 0)
			return (int)row;
		t->pool[t->pool_n + n] = (size_t)row; /* the top table's row, after the names */
		t->pool_n++;
	}
	t->pool_n += t->top ? n : 0; /* the rows, after the names */
	t->loc_off[id] = *at + 1;
	return 0;
}

/* The frames of one stack, root first: name ids and module ids, n of each, and
 * with a top table (t->top) its row ids. */
struct stack_buf {
	size_t *names, *mods, *rows; /* owned, cap entries each */
	size_t cap, n;
};

/* Names the frames of a stack (n_locs location ids, leaf first) into b (grown). */
static int stack_names(struct tree *t, const struct stack_src *src, const uint64_t *locs,
		       size_t n_locs, struct stack_buf *b)
{
	size_t at, need, cap_names, cap_rows;

	b->n = 0;
	for (size_t i = n_locs; i-- > 0;) {
		int e = name_location(t, src, locs[i], &at);
		if (e)
			return e;
		need = b->n + t->pool[at];
		cap_names = cap_rows = b->cap; /* the three grow alike: b->cap is the last's */
		if (base_grow((void **)&b->names, &cap_names, need, sizeof(*b->names)) ||
		    base_grow((void **)&b->rows, &cap_rows, need, sizeof(*b->rows)) ||
		    base_grow((void **)&b->mods, &b->cap, need, sizeof(*b->mods)))
			return -ENOMEM;
		memcpy(b->names + b->n, &t->pool[at + 2], t->pool[at] * sizeof(*b->names));
		if (t->top) /* the rows, after the names */
			memcpy(b->rows + b->n, &t->pool[at + 2 + t->pool[at]],
			       t->pool[at] * sizeof(*b->rows));
		for (size_t k = 0; k < t->pool[at]; k++)
			b->mods[b->n + k] = t->pool[at + 1];
		b->n += t->pool[at];
	}
	return 0;
}

/* Starts naming the locations of new stacks (another selection's store builder). */
static void names_reset(struct tree *t)
{
	free(t->loc_off);
	free(t->mod_of);
	t->loc_off = NULL;
	t->mod_of = NULL;
	t->loc_cap = t->mod_cap = 0;
	t->pool_n = 0;
}

/* A node's module as frames of module mod (SIZE_MAX: none) join it: the first's,
 * TREE_MIXED (written as none) once two differ or one has none: a module is never
 * borrowed from another object. TREE_NONE: no frame yet. */
#define TREE_MIXED (UINT32_MAX - 1)
static void tree_module(struct node *n, size_t mod)
{
	uint32_t m = mod == SIZE_MAX ? TREE_MIXED : (uint32_t)mod;

	if (n->module == TREE_NONE)
		n->module = m;
	else if (n->module != m)
		n->module = TREE_MIXED;
}

/* Adds every stack of src to slot `slot` of the tree, and to t->top when set (a
 * table of src's profile: each location is named once for both). */
static int tree_add(struct tree *t, const struct stack_src *src, int vi, int slot)
{
	const struct query_stacks *qs = src->qs;
	struct stack_buf b = {0};
	size_t at;
	int e = 0;

	names_reset(t);
	/* Room for a node per frame (at most TREE_RESERVE nodes) at once: the array,
	 * mmapped at this size, is touched only where nodes are made, where growing
	 * it step by step copied it and faulted its pages in again at every step. */
	if (base_grow((void **)&t->n, &t->cap,
		      t->nn + (qs->off[qs->n] < TREE_RESERVE ? qs->off[qs->n] : TREE_RESERVE),
		      sizeof(*t->n)))
		return -ENOMEM;
	for (size_t i = 0; !e && i < qs->n; i++) {
		int64_t v = qs->v[i][vi];

		e = stack_names(t, src, qs->locs + qs->off[i], qs->off[i + 1] - qs->off[i], &b);
		at = 0;
		t->n[0].total[slot] = base_sat_add(t->n[0].total[slot], v);
		for (size_t k = 0; !e && k < b.n; k++) {
			e = child(t, at, b.names[k], &at);
			if (e)
				break;
			t->n[at].total[slot] = base_sat_add(t->n[at].total[slot], v);
			tree_module(&t->n[at], b.mods[k]);
		}
		if (!e)
			t->n[at].self[slot] = base_sat_add(t->n[at].self[slot], v);
		if (!e && t->top)
			e = top__add_rows(t->top, b.rows, b.n, v);
		if (!e && t->stats && src->bk)
			e = fn_stats__add(t->stats, b.rows, b.n, src->bk->v + i * src->bk->k,
					  (double)qs->v[i][0]);
	}
	free(b.names);
	free(b.mods);
	free(b.rows);
	return e;
}

static int64_t rank(const struct node *n)
{
	return n->total[0] > n->total[1] ? n->total[0] : n->total[1];
}

/* qsort_r comparator over node indexes; ctx is the node array. */
static int by_rank(const void *a, const void *b, void *ctx)
{
	const struct node *base = ctx;
	const struct node *x = &base[*(const size_t *)a], *y = &base[*(const size_t *)b];
	size_t ia = *(const size_t *)a, ib = *(const size_t *)b;

	if (rank(x) != rank(y))
		return rank(x) > rank(y) ? -1 : 1;
	return ia < ib ? -1 : ia > ib; /* parents (created first) before children */
}

/* The k-th largest value of v[0..n) (k < n), reordering v: quickselect. */
static int64_t kth_largest(int64_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		int64_t pivot = v[lo + (hi - lo) / 2], tmp;
		size_t i = lo, j = hi;

		while (i <= j) {
			while (v[i] > pivot)
				i++;
			while (v[j] < pivot)
				j--;
			if (i <= j) {
				tmp = v[i], v[i] = v[j], v[j] = tmp;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return v[k];
}

/*
 * Marks the max_nodes nodes of largest rank, ties broken by index: a set closed
 * under parents, since a parent ranks at least as high as its child and was
 * created before it. O(n): a quickselect finds the threshold.
 */
static int prune(struct tree *t, size_t max_nodes)
{
	int64_t *r, thr;
	size_t kept = 0;

	if (t->nn <= max_nodes) {
		for (size_t i = 0; i < t->nn; i++)
			t->n[i].keep = true;
		return 0;
	}
	r = malloc(t->nn * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < t->nn; i++)
		r[i] = rank(&t->n[i]);
	thr = kth_largest(r, t->nn, max_nodes - 1);
	free(r);
	for (size_t i = 0; i < t->nn; i++)
		if (rank(&t->n[i]) > thr)
			t->n[i].keep = true, kept++;
	for (size_t i = 0; i < t->nn && kept < max_nodes; i++)
		if (rank(&t->n[i]) == thr)
			t->n[i].keep = true, kept++;
	return 0;
}

/*
 * The typed tree (query.h) of the kept nodes below `root`, in pre-order, each
 * node's kept children by rank. An explicit stack, not recursion: a stack of
 * 200,000 frames makes a chain of max_nodes nested nodes, and the web UI asks
 * for 20,000 of them (a recursive walk died of a stack overflow there). The
 * children of every open node sit in one shared buffer (kids), a level's run at
 * its end, so the buffer holds at most the kept nodes and is popped as levels
 * close.
 */
struct flat_level {
	size_t kid_off, nk, next; /* kids[kid_off .. +nk), next to visit */
};

struct flattener {
	struct tree *t;
	struct query_tree *out;
	size_t cap;
	size_t *kids, nkids, kids_cap;
	struct flat_level *lv;
	size_t depth, lv_cap;
};

/* Appends node i (at the current depth) and opens it as the innermost level,
 * its kept children sorted by rank at the end of kids. */
static int flat_open(struct flattener *f, size_t i)
{
	struct tree *t = f->t;
	struct query_node *qn;
	size_t off = f->nkids;

	if (f->depth >= TREE_NONE ||
	    base_grow((void **)&f->out->nodes, &f->cap, f->out->n_nodes + 1, sizeof(*qn)) ||
	    base_grow((void **)&f->lv, &f->lv_cap, f->depth + 1, sizeof(*f->lv)))
		return -ENOMEM;
	for (uint32_t c = t->n[i].first; c != TREE_NONE; c = t->n[c].next) {
		if (!t->n[c].keep)
			continue;
		if (base_grow((void **)&f->kids, &f->kids_cap, f->nkids + 1, sizeof(*f->kids)))
			return -ENOMEM;
		f->kids[f->nkids++] = c;
	}
	if (f->nkids > off)
		qsort_r(f->kids + off, f->nkids - off, sizeof(*f->kids), by_rank, t->n);
	qn = &f->out->nodes[f->out->n_nodes++];
	*qn = (struct query_node){.name = t->n[i].name,
				  .module = t->n[i].module == TREE_MIXED ? TREE_NONE : t->n[i].module,
				  .depth = (uint32_t)f->depth,
				  .n_kids = (uint32_t)(f->nkids - off)};
	memcpy(qn->self, t->n[i].self, sizeof(qn->self));
	memcpy(qn->total, t->n[i].total, sizeof(qn->total));
	f->lv[f->depth++] = (struct flat_level){off, f->nkids - off, 0};
	return 0;
}

/* The kept tree of t into out (nodes, and t's names, moved: t keeps none). */
static int flatten(struct tree *t, bool diff, struct query_tree *out)
{
	struct flattener f = {.t = t, .out = out};
	int e;

	out->diff = diff;
	out->own = malloc(sizeof(*out->own));
	if (!out->own)
		return -ENOMEM;
	*out->own = t->names; /* the names, moved */
	memset(&t->names, 0, sizeof(t->names));
	out->names = out->own->strs;
	out->n_names = out->own->n;
	e = flat_open(&f, 0);
	while (!e && f.depth) {
		struct flat_level *l = &f.lv[f.depth - 1];

		if (l->next < l->nk) {
			e = flat_open(&f, f.kids[l->kid_off + l->next++]); /* may move f.lv */
			continue;
		}
		f.nkids = l->kid_off;
		f.depth--;
	}
	free(f.kids);
	free(f.lv);
	return e;
}

static size_t nodes_limit(size_t max_nodes)
{
	if (!max_nodes)
		return QUERY_DEFAULT_MAX_NODES;
	return max_nodes > QUERY_MAX_NODES ? QUERY_MAX_NODES : max_nodes;
}

/* The value's unit, from the merged series' profile type (set on the profile). */
static const char *unit(const struct profile *p, int vi)
{
	return profile__unit(p, vi);
}

/* ---- top: profile/top.c's rows of the distinct stacks ---- */

/* Counts every stack of src into t, its store location ids translated into p's
 * (once per location: pid_of[store id] is p's id, 0 = not yet). */
static int top_add_stacks(struct top *t, const struct stack_src *src, int vi)
{
	const struct query_stacks *qs = src->qs;
	uint64_t *pid_of = NULL, *locs = NULL;
	size_t pid_cap = 0, locs_cap = 0;
	int e = 0;

	for (size_t i = 0; !e && i < qs->n; i++) {
		size_t n = qs->off[i + 1] - qs->off[i];

		if (base_grow((void **)&locs, &locs_cap, n ? n : 1, sizeof(*locs))) {
			e = -ENOMEM;
			break;
		}
		for (size_t k = 0; !e && k < n; k++) {
			uint64_t id = qs->locs[qs->off[i] + k];
			size_t old = pid_cap;

			if (id >= pid_cap) {
				if (id == SIZE_MAX || base_grow((void **)&pid_of, &pid_cap, id + 1,
								sizeof(*pid_of))) {
					e = -ENOMEM;
					break;
				}
				memset(pid_of + old, 0, (pid_cap - old) * sizeof(*pid_of));
			}
			if (!pid_of[id])
				e = src_location(src, id, &pid_of[id]);
			locs[k] = pid_of[id];
		}
		if (!e)
			e = top__add(t, locs, n, qs->v[i][vi]);
	}
	free(pid_of);
	free(locs);
	return e;
}

/* The names of rows[0..n) copied into one block (*pool), the rows pointed at it. */
static int pool_names(struct top_row *rows, size_t n, char **pool)
{
	size_t len = 1;
	char *o;

	for (size_t i = 0; i < n; i++)
		len += strlen(rows[i].name) + 1;
	if (!(*pool = o = malloc(len)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(rows[i].name) + 1;

		memcpy(o, rows[i].name, k);
		rows[i].name = o;
		o += k;
	}
	return 0;
}

int query_top__from(struct query_top *out, const struct top *t, int value_index, size_t max_nodes)
{
	size_t n = 0, lim = nodes_limit(max_nodes);
	int e;

	memset(out, 0, sizeof(*out));
	snprintf(out->unit, sizeof(out->unit), "%s", unit(top__profile(t), value_index));
	out->total = top__total(t);
	if ((e = top__rows(t, &out->rows, &n)))
		return e;
	out->n = n < lim ? n : lim;
	return pool_names(out->rows, out->n, &out->pool);
}

/* The top table of src's stacks, at most rows rows. */
static int top_make(const struct stack_src *src, int vi, size_t rows, struct query_top *out)
{
	struct top *t = NULL;
	int e = top__new(src->p, vi, &t) ?: top_add_stacks(t, src, vi) ?:
		query_top__from(out, t, vi, rows);

	top__free(t);
	return e;
}

/* ---- the diff: one tree of both selections, and its per-function table ---- */

static int64_t abs_i64(int64_t v)
{
	return v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v;
}

/* Largest |share_change| first, then larger |self_change|, larger
 * |total_change|, then by name. */
static int by_change(const void *a, const void *b)
{
	const struct query_diff_row *x = a, *y = b;
	double dx = x->share_change < 0 ? -x->share_change : x->share_change;
	double dy = y->share_change < 0 ? -y->share_change : y->share_change;

	if (dx != dy)
		return dx > dy ? -1 : 1;
	if (abs_i64(x->self_change) != abs_i64(y->self_change))
		return abs_i64(x->self_change) > abs_i64(y->self_change) ? -1 : 1;
	if (abs_i64(x->total_change) != abs_i64(y->total_change))
		return abs_i64(x->total_change) > abs_i64(y->total_change) ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* One function's row from its two sides' top rows (either may be NULL). */
static struct query_diff_row diff_row(const struct top_row *l, const struct top_row *r,
				      const int64_t total[2])
{
	struct query_diff_row d = {.name = l ? l->name : r->name};

	d.self[0] = l ? l->self : 0;
	d.total[0] = l ? l->total : 0;
	d.self[1] = r ? r->self : 0;
	d.total[1] = r ? r->total : 0;
	d.id[0] = l ? l->id : 0;
	d.id[1] = r ? r->id : 0;
	d.self_change = base_sat_sub(d.self[1], d.self[0]);
	d.total_change = base_sat_sub(d.total[1], d.total[0]);
	d.share_change = 100.0 * ((total[1] ? (double)d.self[1] / (double)total[1] : 0) -
				  (total[0] ? (double)d.self[0] / (double)total[0] : 0));
	return d;
}

static uint64_t name_hash(const char *name)
{
	return base_hash_bytes(BASE_HASH_SEED, name, strlen(name));
}

/* Whether diff row idx (ctx: the rows) is function key's. */
static bool row_is(const void *ctx, size_t idx, const void *key)
{
	return !strcmp(((const struct query_diff_row *)ctx)[idx].name, key);
}

/* Significant self changes first, the larger first; then by_change. */
static int by_significance(const void *a, const void *b)
{
	const struct query_diff_row *x = a, *y = b;
	bool sx = x->self_diff.verdict != QUERY_NOISE, sy = y->self_diff.verdict != QUERY_NOISE;

	if (sx != sy)
		return sx ? -1 : 1;
	if (sx && fabs(x->self_diff.change) != fabs(y->self_diff.change))
		return fabs(x->self_diff.change) > fabs(y->self_diff.change) ? -1 : 1;
	return by_change(a, b);
}

/* Each side's functions per interval, and what a diff row needs of them. */
struct diff_sides {
	struct fn_stats f[2];
	struct query_stats_side s[2];
	enum query_norm norm;
	double z;
};

/* Every row's self and total change with its interval. */
static int diff_significance(struct query_diff *d, const struct diff_sides *ds, size_t n)
{
	size_t k = ds->s[0].n > ds->s[1].n ? ds->s[0].n : ds->s[1].n;
	double *x = malloc((k + 1) * sizeof(*x));

	if (!x)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct query_diff_row *row = &d->rows[i];
		struct query_est e[2][2]; /* [kind: self, total][side] */

		for (int side = 0; side < 2; side++)
			for (int kind = 0; kind < 2; kind++)
				fn_stats__estimate(&ds->f[side], &ds->s[side], row->id[side], kind,
						   ds->norm, x, &e[kind][side]);
		query_stats__compare(&e[0][0], &e[0][1], ds->z, &row->self_diff);
		query_stats__compare(&e[1][0], &e[1][1], ds->z, &row->total_diff);
	}
	free(x);
	return 0;
}

/* The rows of both tables, joined by name (a hash index of the left's rows: no
 * sort of 40,000 names), ranked and cut to max_rows. */
static int diff_rows(struct query_diff *d, const struct top_row *l, size_t nl,
		     const struct top_row *r, size_t nr, size_t max_rows,
		     const struct diff_sides *ds)
{
	struct base_hmap idx = {0};
	size_t n = 0;
	int e = 0;

	if (!(d->rows = malloc((nl + nr + 1) * sizeof(*d->rows))))
		return -ENOMEM;
	for (size_t i = 0; !e && i < nl; i++) { /* a table has one row per name */
		d->rows[n] = diff_row(&l[i], NULL, d->total);
		e = base_hmap__insert(&idx, name_hash(l[i].name), n++);
	}
	for (size_t k = 0; !e && k < nr; k++) {
		size_t at = base_hmap__find(&idx, name_hash(r[k].name), row_is, d->rows, r[k].name);

		if (at == SIZE_MAX)
			d->rows[n++] = diff_row(NULL, &r[k], d->total);
		else
			d->rows[at] = diff_row(&l[at], &r[k], d->total);
	}
	base_hmap__fini(&idx);
	if (e)
		return e;
	if (ds && (e = diff_significance(d, ds, n)))
		return e;
	if (n)
		qsort(d->rows, n, sizeof(*d->rows), ds ? by_significance : by_change);
	d->n_rows = n < nodes_limit(max_rows) ? n : nodes_limit(max_rows);
	return 0;
}

/* The rows' names into the diff's own pool (they pointed into the tops'). */
static int diff_pool(struct query_diff *d)
{
	struct top_row *tmp = malloc((d->n_rows + 1) * sizeof(*tmp));
	int e;

	if (!tmp)
		return -ENOMEM;
	for (size_t i = 0; i < d->n_rows; i++)
		tmp[i] = (struct top_row){d->rows[i].name, 0, 0, 0};
	e = pool_names(tmp, d->n_rows, &d->pool);
	for (size_t i = 0; !e && i < d->n_rows; i++)
		d->rows[i].name = tmp[i].name;
	free(tmp);
	return e;
}

/* The per-function table of the two selections' whole merges, from their top
 * tables (tl, tr: counted as the diff's tree named the stacks). */
static int diff_table(const struct top *tl, const struct top *tr, size_t max_rows,
		      const struct diff_sides *ds, struct query_diff *d)
{
	struct top_row *rl = NULL, *rr = NULL;
	size_t nl = 0, nr = 0;
	int e = top__rows(tl, &rl, &nl) ?: top__rows(tr, &rr, &nr) ?:
		diff_rows(d, rl, nl, rr, nr, max_rows, ds) ?: diff_pool(d);

	free(rl);
	free(rr);
	return e;
}

bool query_diff_by_node;

static int sorted_diff_build(struct tree *t, const struct stack_src *l, const struct stack_src *r,
			     int vi, size_t max_nodes, struct top *tops[2],
			     struct fn_stats *stats[2]);

/* The diff's tree node by node (query_diff_by_node: the reference the sorted
 * build is tested against): every node made, then pruned. */
static int diff_by_node(struct tree *t, const struct stack_src *l, const struct stack_src *r,
			int vi, size_t max_nodes, struct top *tops[2], struct fn_stats *stats[2])
{
	int e;

	t->top = tops[0];
	t->stats = stats[0];
	e = tree_add(t, l, vi, 0);
	t->top = tops[1];
	t->stats = stats[1];
	e = e ?: tree_add(t, r, vi, 1);
	t->top = NULL;
	t->stats = NULL;
	return e ?: prune(t, max_nodes);
}

static int diff_make(const struct stack_src *l, const struct stack_src *r, int value_index,
		     size_t max_nodes, size_t max_rows, struct query_diff *out)
{
	struct top *tops[2] = {NULL, NULL}, *tl, *tr;
	struct tree t;
	struct diff_sides ds = {.norm = out->normalize, .z = query_confidence_z(out->confidence)};
	struct fn_stats *stats[2] = {&ds.f[0], &ds.f[1]};
	/* each side's top table (and functions per interval) counted as its stacks are named */
	int e = tree_start(&t, value_index) ?: top__new(l->p, value_index, &tops[0]) ?:
		top__new(r->p, value_index, &tops[1]);

	tl = tops[0];
	tr = tops[1];
	fn_stats__init(&ds.f[0], l->bk ? l->bk->k : 1);
	fn_stats__init(&ds.f[1], r->bk ? r->bk->k : 1);
	if (!e)
		e = (query_diff_by_node ? diff_by_node : sorted_diff_build)(
		    &t, l, r, value_index, nodes_limit(max_nodes), tops, stats);
	if (e)
		goto cleanup;
	snprintf(out->tree.unit, sizeof(out->tree.unit), "%s", unit(l->p, value_index));
	out->total[0] = t.n[0].total[0];
	out->total[1] = t.n[0].total[1];
	fn_stats__unit(out->tree.unit, out->normalize, out->stats_unit, sizeof(out->stats_unit));
	for (int i = 0; i < 2; i++) {
		const struct query_buckets *bk = (i ? r : l)->bk;
		struct query_est est;

		if (bk)
			fn_stats__side(bk, out->tree.unit, out->normalize, &ds.s[i]);
		/* the side's intervals with data and their seconds */
		query_stats__estimate(&ds.s[i], ds.s[i].total, ds.s[i].samples,
				      QUERY_NORM_RATE, &est);
		out->intervals[i] = est.intervals;
		for (size_t k = 0; k < ds.s[i].n; k++)
			out->seconds[i] += ds.s[i].wall_s[k] > 0 ? ds.s[i].wall_s[k] : 0;
	}
	e = flatten(&t, true, &out->tree) ?:
	    diff_table(tl, tr, max_rows, l->bk && r->bk ? &ds : NULL, out);
cleanup:
	tree_fini(&t);
	top__free(tl);
	top__free(tr);
	fn_stats__fini(&ds.f[0]);
	fn_stats__fini(&ds.f[1]);
	return e;
}

/*
 * ---- one selection's tree, from its stacks sorted by frame names ----
 *
 * The flame tree of one selection is not built node by node (a 1 h merge of the
 * benchmark: 2.1 million frames made 1.8 million nodes, ~100 MB, of which the UI
 * keeps 20,000). Its stacks are written out by frame name, root first, and
 * sorted: the tree is then the trie of the sorted list. A node on the paths of
 * two or more stacks ("shared") is made for real, from the sweep over the list;
 * below where a stack parts from both its neighbours, its frames are a chain of
 * nodes of its own, each of total its value: a run of equal ranks, counted, not
 * made. Only the nodes kept by maxNodes become tree nodes, and the writer above
 * writes them.
 *
 * A diff sorts the stacks of both selections as one list, the right's after the
 * left's in the merge's order (as tree_add adds them), each node with both
 * sides' sums; stacks of equal names (most of a diff's: the two sides run the
 * same code) are one position of the list (merge_equal_stacks).
 *
 * The answer is the one a node-by-node build gives (tests/unit/test_query.c
 * compares it with the diff's node-by-node reference): a node is made
 * at the first stack, in the merge's order, that passes through it, so its
 * index there is (that stack's ordinal, depth) here, which orders ties at the
 * maxNodes cut and among siblings; its module is that of the first stack in the
 * merge's order whose frame there has one. Totals are summed in another order,
 * which saturating sums of non-negative values (what ingest admits) allow.
 */

/*
 * What the walk over every frame reads of a store location: one 16-byte record
 * indexed by its id, not loc_off and then the pool (a 1 h merge has 2 million
 * frames over ~40,000 locations; two dependent cache misses a frame were a
 * third of the tree's time).
 */
struct loc_rec {
	uint32_t name, mod, row; /* of a location of one line (mod TREE_NONE: none) */
	uint32_t lines;		 /* 0: not named yet (or: more than one line, read the pool) */
};

/* Frames of every stack by name, root first. */
struct named_stacks {
	uint32_t *names, *mods; /* name and module (TREE_NONE: none) ids of each frame */
	size_t *off;		/* n + 1: stack i is names[off[i] .. off[i + 1]) */
	size_t n, cap;
	size_t *rows, n_rows, rows_cap; /* the top table's row ids of the stack being named */
	struct loc_rec *rec;		/* by store location id, rec_cap of them */
	size_t rec_cap;
};

/* Names of the first TREE_KEY frames of a stack (+ 1; 0 past its end) beside its
 * index, so that most comparisons of the sort read no frame array. */
#define TREE_KEY 7
struct sort_key {
	uint32_t k[TREE_KEY], stack;
};

/* A node on the paths of the stacks at sorted positions first..last (two or more;
 * the root: all of them). */
struct shared {
	uint32_t name, depth, parent; /* parent: index in the shared array */
	uint32_t first, last, ord;    /* ord: the least stack ordinal among them */
	uint32_t out;		      /* the tree node it became; TREE_NONE = not kept */
	int64_t self[2], total[2];    /* per selection (a diff's two; a tree's slot 0) */
};

struct sorted_tree {
	struct named_stacks ns;
	/* the stacks of selection 0, then (a diff) those of selection 1: stack i of
	 * ns is qs[0]'s i below n0, qs[1]'s i - n0 from there */
	const struct query_stacks *qs[2];
	size_t n0;
	int vi;
	struct sort_key *key; /* n: the stacks in name order ("positions") */
	uint32_t *lcp;	      /* n + 1: frames position j shares with j - 1; 0 at 0 and n */
	uint32_t *attach;     /* n: per position, its deepest shared node; its own chain
			       * hangs below it */
	uint32_t *keep;	      /* n: per position, how many of its chain's nodes are kept */
	/* Stacks of equal frame names are one position (both sides of a diff share
	 * most of theirs: else every node of the merge is a shared node): n_pos
	 * positions, key[u] the first of its stacks (the least ordinal), members
	 * [mem_off[u], mem_off[u + 1]) of members its stacks, pv[u] their values */
	size_t n_pos;
	uint32_t *members, *mem_off;
	int64_t (*pv)[2];
	struct shared *sh;    /* sh[0] is the root */
	size_t n_sh, cap_sh;
};

static void sorted_tree_fini(struct sorted_tree *st)
{
	free(st->ns.names);
	free(st->ns.mods);
	free(st->ns.off);
	free(st->ns.rows);
	free(st->ns.rec);
	free(st->key);
	free(st->lcp);
	free(st->attach);
	free(st->keep);
	free(st->members);
	free(st->mem_off);
	free(st->pv);
	free(st->sh);
}

/* Makes room for n more frames, and n more rows when counting a top table. */
static int frames_room(struct tree *t, struct named_stacks *ns, size_t nf, size_t n)
{
	size_t cap = ns->cap;

	if (nf + n > ns->cap &&
	    (nf + n >= TREE_NONE ||
	     base_grow((void **)&ns->names, &cap, nf + n, sizeof(*ns->names)) ||
	     base_grow((void **)&ns->mods, &ns->cap, nf + n, sizeof(*ns->mods))))
		return -ENOMEM;
	if (t->top && ns->n_rows + n > ns->rows_cap &&
	    base_grow((void **)&ns->rows, &ns->rows_cap, ns->n_rows + n, sizeof(*ns->rows)))
		return -ENOMEM;
	return 0;
}

/* Names location id into the pool (*at: its entry) and, when it has one line, its
 * record. */
static int remember_location(struct tree *t, const struct stack_src *src, uint64_t id,
			     struct named_stacks *ns, size_t *at)
{
	const size_t *pl;
	int e = name_location(t, src, id, at);

	if (e)
		return e;
	pl = t->pool + *at;
	if (pl[0] == 1 && (!t->top || pl[3] < UINT32_MAX) &&
	    (id < ns->rec_cap ||
	     !base_grow_zeroed((void **)&ns->rec, &ns->rec_cap, id + 1, sizeof(*ns->rec))))
		ns->rec[id] = (struct loc_rec){(uint32_t)pl[2],
					       pl[1] == SIZE_MAX ? TREE_NONE : (uint32_t)pl[1],
					       t->top ? (uint32_t)pl[3] : 0, 1};
	return 0;
}

/* Appends the frames of location id from its pool entry (any number of lines). */
static int name_frames_slow(struct tree *t, const struct stack_src *src, uint64_t id,
			    struct named_stacks *ns, size_t *nf)
{
	size_t at, n;
	const size_t *pl;
	uint32_t mod;
	int e = remember_location(t, src, id, ns, &at);

	if (e || (e = frames_room(t, ns, *nf, (n = t->pool[at]))))
		return e;
	pl = t->pool + at;
	mod = pl[1] == SIZE_MAX ? TREE_NONE : (uint32_t)pl[1];
	for (size_t k = 0; k < n; k++) {
		ns->names[*nf + k] = (uint32_t)pl[2 + k];
		ns->mods[*nf + k] = mod;
	}
	*nf += n;
	if (t->top) {
		memcpy(ns->rows + ns->n_rows, pl + 2 + n, n * sizeof(*ns->rows));
		ns->n_rows += n;
	}
	return 0;
}

/*
 * Names every location of the merge before the walk, in store id order: the
 * store's keys of locations, and of their functions and strings, lie about in id
 * order, so naming streams through them rather than reading each at random as
 * the walk first meets it (~5 cache misses a location, ~40,000 locations an hour).
 */
static int name_locations_in_order(struct tree *t, const struct stack_src *src,
				   struct named_stacks *ns)
{
	const struct query_stacks *qs = src->qs;
	size_t n = qs->off[qs->n], at;
	uint64_t max = 0, *seen;
	int e = 0;

	for (size_t k = 0; k < n; k++)
		max = qs->locs[k] > max ? qs->locs[k] : max;
	if (max >= SIZE_MAX / 2 || !(seen = calloc(max / 64 + 1, sizeof(*seen))))
		return -ENOMEM;
	for (size_t k = 0; k < n; k++)
		seen[qs->locs[k] / 64] |= 1ull << (qs->locs[k] % 64);
	for (uint64_t w = 0; !e && w <= max / 64; w++)
		for (uint64_t bits = seen[w]; !e && bits; bits &= bits - 1)
			e = remember_location(t, src, w * 64 + (uint64_t)__builtin_ctzll(bits), ns,
					      &at);
	free(seen);
	return e;
}

/* Appends the frames of location id (its lines, outer first) to ns, their top
 * table rows to ns->rows. Runs once per frame of the merge: the common case (a
 * one-line location, all named before the walk; room enough) reads one record. */
static inline int name_frames(struct tree *t, const struct stack_src *src, uint64_t id,
			      struct named_stacks *ns, size_t *nf)
{
	const struct loc_rec *r = id < ns->rec_cap ? &ns->rec[id] : NULL;

	if (!r || r->lines != 1 || *nf >= ns->cap || (t->top && ns->n_rows >= ns->rows_cap))
		return name_frames_slow(t, src, id, ns, nf);
	ns->names[*nf] = r->name;
	ns->mods[(*nf)++] = r->mod;
	if (t->top)
		ns->rows[ns->n_rows++] = r->row;
	return 0;
}

/* Starts loading the records of the next stack's first frames (random reads). */
static void prefetch_stack(const struct named_stacks *ns, const struct query_stacks *qs, size_t i)
{
	for (size_t k = qs->off[i + 1]; k > qs->off[i] && k + 32 > qs->off[i + 1]; k--)
		if (qs->locs[k - 1] < ns->rec_cap)
			__builtin_prefetch(&ns->rec[qs->locs[k - 1]]);
}

/* Names the frames of every stack of src, root first, after the ns->n stacks ns
 * already holds (a diff's other selection: its locations named anew, since their
 * rows are of another top table). With t->stats and src->bk, counts each stack's
 * functions per interval too. */
static int named_stacks_fill(struct tree *t, const struct stack_src *src, int vi,
			     struct named_stacks *ns)
{
	const struct query_stacks *qs = src->qs;
	const struct query_buckets *bk = t->stats ? src->bk : NULL;
	size_t base = ns->n, nf = base ? ns->off[base] : 0, cap, cap_off = base ? base + 1 : 0;
	int e = 0;

	names_reset(t);
	free(ns->rec);
	ns->rec = NULL;
	ns->rec_cap = 0;
	if (base + qs->n >= TREE_NONE ||
	    base_grow((void **)&ns->off, &cap_off, base + qs->n + 1, sizeof(*ns->off)))
		return -ENOMEM;
	ns->off[base] = nf;
	cap = ns->cap; /* a frame per location, more with inlined lines */
	if (base_grow((void **)&ns->names, &cap, nf + qs->off[qs->n] + 1, sizeof(*ns->names)) ||
	    base_grow((void **)&ns->mods, &ns->cap, nf + qs->off[qs->n] + 1, sizeof(*ns->mods)))
		return -ENOMEM;
	e = name_locations_in_order(t, src, ns);
	for (size_t i = 0; !e && i < qs->n; i++) {
		ns->n_rows = 0;
		if (i + 1 < qs->n)
			prefetch_stack(ns, qs, i + 1);
		for (size_t k = qs->off[i + 1]; !e && k-- > qs->off[i];)
			e = name_frames(t, src, qs->locs[k], ns, &nf);
		ns->off[base + i + 1] = nf;
		if (!e && t->top)
			e = top__add_rows(t->top, ns->rows, ns->n_rows, qs->v[i][vi]);
		if (!e && bk)
			e = fn_stats__add(t->stats, ns->rows, ns->n_rows, bk->v + i * bk->k,
					  (double)qs->v[i][0]);
	}
	ns->n = e ? ns->n : base + qs->n;
	return e;
}

/* Order of sort keys: by frame names, a prefix first, then by stack (all distinct). */
static inline int key_cmp(const struct named_stacks *ns, const struct sort_key *x,
			  const struct sort_key *y)
{
	for (int i = 0; i < TREE_KEY; i++)
		if (x->k[i] != y->k[i])
			return x->k[i] < y->k[i] ? -1 : 1;
	if (x->k[TREE_KEY - 1]) { /* both go on: compare the rest */
		const uint32_t *p = ns->names + ns->off[x->stack] + TREE_KEY,
			       *q = ns->names + ns->off[y->stack] + TREE_KEY,
			       *pe = ns->names + ns->off[x->stack + 1],
			       *qe = ns->names + ns->off[y->stack + 1];

		for (; p < pe && q < qe; p++, q++)
			if (*p != *q)
				return *p < *q ? -1 : 1;
		if (p < pe || q < qe)
			return p < pe ? 1 : -1;
	}
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static void insertion_sort(struct sort_key *a, size_t lo, size_t hi, const struct named_stacks *ns)
{
	for (size_t i = lo + 1; i < hi; i++) {
		struct sort_key tmp = a[i];
		size_t j = i;

		for (; j > lo && key_cmp(ns, &tmp, &a[j - 1]) < 0; j--)
			a[j] = a[j - 1];
		a[j] = tmp;
	}
}

/* Hoare's partition of a[lo, hi) (hi - lo >= 3) around the median of three: the
 * index p (lo < p < hi) where a[lo, p) <= a[p, hi). */
static size_t partition(struct sort_key *a, size_t lo, size_t hi, const struct named_stacks *ns)
{
	size_t mid = lo + (hi - lo) / 2, i = lo, j = hi - 1;
	struct sort_key tmp, pivot;

	if (key_cmp(ns, &a[mid], &a[lo]) < 0)
		tmp = a[mid], a[mid] = a[lo], a[lo] = tmp;
	if (key_cmp(ns, &a[hi - 1], &a[mid]) < 0) {
		tmp = a[mid], a[mid] = a[hi - 1], a[hi - 1] = tmp;
		if (key_cmp(ns, &a[mid], &a[lo]) < 0)
			tmp = a[mid], a[mid] = a[lo], a[lo] = tmp;
	}
	pivot = a[mid]; /* a[lo] <= pivot <= a[hi - 1]: the scans below stop in range */
	for (;;) {
		while (key_cmp(ns, &a[i], &pivot) < 0)
			i++;
		while (key_cmp(ns, &a[j], &pivot) > 0)
			j--;
		if (i >= j)
			return j + 1 < hi ? j + 1 : j;
		tmp = a[i], a[i] = a[j], a[j] = tmp;
		i++, j--;
	}
}

/* qsort_r's comparator of sort keys (ctx: the stacks), for sort_keys' fallback. */
static int by_names(const void *a, const void *b, void *ctx)
{
	return key_cmp(ctx, a, b);
}

/*
 * Sorts the keys by key_cmp: a quicksort with the comparison inlined (qsort_r's
 * call per comparison was most of the sort's time), the smaller side first and
 * the larger on an explicit stack (at most log2(n) deep: no recursion), insertion
 * sort for short ranges. A range still unsorted after 2 log2(n) partitions (stacks
 * crafted against the median of three) goes to qsort_r (glibc's merge sort,
 * n log n whatever the input).
 */
static void sort_keys(struct sort_key *a, size_t n, const struct named_stacks *ns)
{
	size_t stack[64][3], depth = 0, lo = 0, hi = n, level = 0;
	size_t budget = 2 * (size_t)(64 - __builtin_clzll((unsigned long long)n | 1));

	for (;;) {
		while (hi - lo > 16 && level < budget) {
			size_t p = partition(a, lo, hi, ns);

			level++;
			if (p - lo < hi - p) {
				stack[depth][0] = p, stack[depth][1] = hi,
				stack[depth++][2] = level;
				hi = p;
			} else {
				stack[depth][0] = lo, stack[depth][1] = p,
				stack[depth++][2] = level;
				lo = p;
			}
		}
		if (hi - lo > 16)
			qsort_r(a + lo, hi - lo, sizeof(*a), by_names, (void *)ns);
		else
			insertion_sort(a, lo, hi, ns);
		if (!depth)
			return;
		depth--;
		lo = stack[depth][0], hi = stack[depth][1], level = stack[depth][2];
	}
}

/* The stacks in name order and, per position, the frames shared with the last. */
static int sort_stacks(struct sorted_tree *st)
{
	const struct named_stacks *ns = &st->ns;
	size_t n = ns->n;

	st->key = malloc((n ? n : 1) * sizeof(*st->key));
	st->lcp = calloc(n + 1, sizeof(*st->lcp));
	if (!st->key || !st->lcp)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t len = ns->off[i + 1] - ns->off[i];

		st->key[i].stack = (uint32_t)i;
		for (size_t k = 0; k < TREE_KEY; k++)
			st->key[i].k[k] = k < len ? ns->names[ns->off[i] + k] + 1 : 0;
	}
	if (n > 1)
		sort_keys(st->key, n, ns);
	for (size_t j = 1; j < n; j++) {
		const uint32_t *p = ns->names + ns->off[st->key[j - 1].stack],
			       *q = ns->names + ns->off[st->key[j].stack];
		size_t lp = ns->off[st->key[j - 1].stack + 1] - ns->off[st->key[j - 1].stack],
		       lq = ns->off[st->key[j].stack + 1] - ns->off[st->key[j].stack], l = 0;

		while (l < lp && l < lq && p[l] == q[l])
			l++;
		st->lcp[j] = (uint32_t)l;
	}
	return 0;
}

static int64_t stack_value(const struct sorted_tree *st, uint32_t stack)
{
	return stack < st->n0 ? st->qs[0]->v[stack][st->vi] : st->qs[1]->v[stack - st->n0][st->vi];
}

/* The selection (value slot) of a stack. */
static int stack_slot(const struct sorted_tree *st, uint32_t stack)
{
	return stack >= st->n0;
}

static size_t stack_len(const struct sorted_tree *st, uint32_t stack)
{
	return st->ns.off[stack + 1] - st->ns.off[stack];
}

/* Makes the sorted stacks of equal frame names one position each (n_pos of
 * them), their values summed per side; lcp and key follow. */
static int merge_equal_stacks(struct sorted_tree *st)
{
	size_t n = st->ns.n, u = 0;

	st->members = malloc((n ? n : 1) * sizeof(*st->members));
	st->mem_off = malloc((n + 1) * sizeof(*st->mem_off));
	st->pv = calloc(n ? n : 1, sizeof(*st->pv));
	if (!st->members || !st->mem_off || !st->pv)
		return -ENOMEM;
	for (size_t j = 0; j < n; j++) {
		uint32_t stack = st->key[j].stack;
		int s = stack_slot(st, stack);

		if (!j || st->lcp[j] != stack_len(st, stack) ||
		    st->lcp[j] != stack_len(st, st->key[j - 1].stack)) {
			st->key[u] = st->key[j];
			st->lcp[u] = st->lcp[j];
			st->mem_off[u++] = (uint32_t)j;
		}
		st->members[j] = stack;
		st->pv[u - 1][s] = base_sat_add(st->pv[u - 1][s], stack_value(st, stack));
	}
	st->mem_off[u] = (uint32_t)n;
	st->lcp[u] = 0;
	st->n_pos = u;
	return 0;
}

/* A new shared node at depth `depth` of position j's stack, below parent. */
static int shared_new(struct sorted_tree *st, uint32_t parent, uint32_t depth, uint32_t j)
{
	uint32_t stack = depth ? st->key[j].stack : 0; /* the root: maybe no stacks at all */

	if (st->n_sh >= TREE_NONE - 1 ||
	    base_grow((void **)&st->sh, &st->cap_sh, st->n_sh + 1, sizeof(*st->sh)))
		return -ENOMEM;
	st->sh[st->n_sh++] = (struct shared){
	    .name = depth ? st->ns.names[st->ns.off[stack] + depth - 1] : 0,
	    .depth = depth,
	    .parent = parent,
	    .first = j,
	    .ord = UINT32_MAX,
	    .out = TREE_NONE,
	};
	return 0;
}

/* Closes shared node i after position last: its sums go to its parent. */
static void shared_close(struct sorted_tree *st, uint32_t i, uint32_t last)
{
	struct shared *x = &st->sh[i], *p = &st->sh[x->parent];

	x->last = last;
	p->total[0] = base_sat_add(p->total[0], x->total[0]);
	p->total[1] = base_sat_add(p->total[1], x->total[1]);
	p->ord = x->ord < p->ord ? x->ord : p->ord;
}

/*
 * The shared nodes, from one sweep over the sorted stacks: a node at depth d
 * opens where a stack shares d frames with the next and not with the last, and
 * closes where the next shares fewer. Each stack's value goes to its deepest
 * shared node (attach), closed nodes pass their sums up: no walk over a path.
 * path[d] is the open node at depth d (path[0] the root).
 */
static int shared_sweep(struct sorted_tree *st)
{
	size_t n = st->n_pos, depth = 0, path_cap = 0;
	uint32_t *path = NULL;
	int e = shared_new(st, 0, 0, 0);

	st->attach = malloc((n ? n : 1) * sizeof(*st->attach));
	if (e || !st->attach || base_grow((void **)&path, &path_cap, 1, sizeof(*path))) {
		free(path);
		return -ENOMEM;
	}
	path[0] = 0;
	for (uint32_t j = 0; !e && j < n; j++) {
		uint32_t stack = st->key[j].stack;
		const int64_t *v = st->pv[j];
		struct shared *x;

		for (; depth > st->lcp[j]; depth--)
			shared_close(st, path[depth], j - 1);
		for (; !e && depth < st->lcp[j + 1]; depth++) {
			e = base_grow((void **)&path, &path_cap, depth + 2, sizeof(*path))
				?: shared_new(st, path[depth], (uint32_t)depth + 1, j);
			if (!e)
				path[depth + 1] = (uint32_t)st->n_sh - 1;
		}
		if (e)
			break;
		x = &st->sh[path[depth]];
		x->total[0] = base_sat_add(x->total[0], v[0]);
		x->total[1] = base_sat_add(x->total[1], v[1]);
		x->ord = stack < x->ord ? stack : x->ord;
		if (stack_len(st, stack) == depth) { /* the stack ends here */
			x->self[0] = base_sat_add(x->self[0], v[0]);
			x->self[1] = base_sat_add(x->self[1], v[1]);
		}
		st->attach[j] = path[depth];
	}
	for (; !e && depth > 0; depth--)
		shared_close(st, path[depth], (uint32_t)n - 1);
	st->sh[0].last = n ? (uint32_t)n - 1 : 0;
	free(path);
	return e;
}

/* A node's rank, as rank() ranks it (values are not negative; a one-sided
 * node's other total is 0). */
static int64_t rank1(int64_t total)
{
	return total > 0 ? total : 0;
}

static int64_t rank2(const int64_t total[2])
{
	return rank1(total[0] > total[1] ? total[0] : total[1]);
}

/* Frames of position j's own chain (below its deepest shared node). */
static size_t chain_len(const struct sorted_tree *st, size_t j)
{
	return stack_len(st, st->key[j].stack) - st->sh[st->attach[j]].depth;
}

/* A run of count nodes of one rank (a shared node: count 1), or, for ties, a
 * run in node order: (ord, depth); what: shared index, or position + n_sh. */
struct rank_run {
	int64_t rank;
	uint32_t ord, depth;
	size_t count, what;
};

static int by_node_order(const void *a, const void *b)
{
	const struct rank_run *x = a, *y = b;

	if (x->ord != y->ord)
		return x->ord < y->ord ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* Every node's rank run, shared nodes first (runs[i] is shared node i). */
static struct rank_run *rank_runs(const struct sorted_tree *st, size_t *n_runs, size_t *n_nodes)
{
	struct rank_run *r = malloc((st->n_sh + st->n_pos) * sizeof(*r));
	size_t n = 0;

	*n_nodes = 0;
	if (!r)
		return NULL;
	for (size_t i = 0; i < st->n_sh; i++)
		r[n++] =
		    (struct rank_run){rank2(st->sh[i].total), st->sh[i].ord, st->sh[i].depth, 1, i};
	for (size_t j = 0; j < st->n_pos; j++) {
		size_t c = chain_len(st, j);

		if (c)
			r[n++] = (struct rank_run){
			    rank2(st->pv[j]), st->key[j].stack,
			    st->sh[st->attach[j]].depth + 1, c, st->n_sh + j};
	}
	*n_runs = n;
	for (size_t i = 0; i < n; i++)
		*n_nodes += r[i].count;
	return r;
}

/* Marks a run kept, up to count nodes of it. */
static void keep_run(struct sorted_tree *st, const struct rank_run *r, size_t count)
{
	if (r->what < st->n_sh)
		st->sh[r->what].out = 0; /* kept; its tree index comes later */
	else
		st->keep[r->what - st->n_sh] = (uint32_t)count;
}

/* A rank and how many nodes have it, for the selection below. */
struct wrank {
	int64_t rank;
	size_t count;
};

static int64_t median3(int64_t a, int64_t b, int64_t c)
{
	if (a > b)
		a ^= b, b ^= a, a ^= b;
	return c <= a ? a : c >= b ? b : c;
}

/*
 * The rank of the k-th largest node (k >= 1, at most the nodes w counts),
 * reordering w: a quickselect over counted ranks, three-way partitions (many
 * runs share a rank), O(n) expected, no recursion.
 */
static int64_t kth_rank(struct wrank *w, size_t n, size_t k)
{
	size_t lo = 0, hi = n;

	for (;;) {
		int64_t p = median3(w[lo].rank, w[lo + (hi - lo) / 2].rank, w[hi - 1].rank);
		size_t gt = lo, i = lo, lt = hi, above = 0, at = 0;
		struct wrank tmp;

		while (i < lt) { /* [lo, gt) > p, [gt, i) == p, [lt, hi) < p */
			if (w[i].rank > p) {
				above += w[i].count;
				tmp = w[gt], w[gt++] = w[i], w[i++] = tmp;
			} else if (w[i].rank < p) {
				tmp = w[--lt], w[lt] = w[i], w[i] = tmp;
			} else {
				at += w[i++].count;
			}
		}
		if (above >= k)
			hi = gt;
		else if (above + at >= k)
			return p;
		else
			k -= above + at, lo = lt;
	}
}

/*
 * Marks the max_nodes nodes of largest rank kept (prune()'s set): the threshold
 * rank by selection; every run above it; of the runs at it, the first in node
 * order, the last maybe in part.
 */
static int sorted_prune(struct sorted_tree *st, size_t max_nodes)
{
	size_t n_runs, n_nodes, above = 0, ties = 0;
	struct rank_run *r = rank_runs(st, &n_runs, &n_nodes);
	struct wrank *w = NULL;
	int64_t thr = 0;

	st->keep = calloc(st->n_pos ? st->n_pos : 1, sizeof(*st->keep));
	if (!r || !st->keep || !(w = malloc(n_runs * sizeof(*w)))) {
		free(r);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n_runs; i++)
		w[i] = (struct wrank){r[i].rank, r[i].count};
	if (n_nodes > max_nodes)
		thr = kth_rank(w, n_runs, max_nodes);
	free(w);
	for (size_t i = 0; i < n_runs; i++) {
		if (n_nodes <= max_nodes || r[i].rank > thr) {
			keep_run(st, &r[i], r[i].count);
			above += r[i].count;
		} else if (r[i].rank == thr) {
			r[ties++] = r[i]; /* i >= ties: nothing unread is overwritten */
		}
	}
	qsort(r, ties, sizeof(*r), by_node_order);
	for (size_t k = 0; k < ties && above < max_nodes; k++) {
		size_t c = r[k].count < max_nodes - above ? r[k].count : max_nodes - above;

		keep_run(st, &r[k], c);
		above += c;
	}
	free(r);
	return 0;
}

/* The module of shared node x: that of its frames when they all have the same,
 * else none: a node merging one function name from several objects (`_start` of
 * python3 and of hearth) has no module of its own, and must not show one of them. */
static uint32_t shared_module(const struct sorted_tree *st, const struct shared *x)
{
	uint32_t mod = TREE_NONE;

	for (uint32_t i = st->mem_off[x->first]; x->depth && i < st->mem_off[x->last + 1]; i++) {
		uint32_t stack = st->members[i], m = st->ns.mods[st->ns.off[stack] + x->depth - 1];

		if (i > st->mem_off[x->first] && m != mod)
			return TREE_NONE;
		mod = m;
	}
	return mod;
}

/* The module of the node at depth d (0: the first frame) of position j's chain:
 * as shared_module, over the stacks of the position. */
static uint32_t chain_module(const struct sorted_tree *st, size_t j, size_t d)
{
	uint32_t mod = TREE_NONE;

	for (uint32_t i = st->mem_off[j]; i < st->mem_off[j + 1]; i++) {
		uint32_t m = st->ns.mods[st->ns.off[st->members[i]] + d];

		if (i > st->mem_off[j] && m != mod)
			return TREE_NONE;
		mod = m;
	}
	return mod;
}

/* Makes tree node of kept shared node i (its parent made before it). */
static int make_shared(struct tree *t, struct sorted_tree *st, size_t i)
{
	struct shared *x = &st->sh[i];
	size_t at;
	int e = new_node(t, st->sh[x->parent].out, x->name, &at);

	if (e)
		return e;
	x->out = (uint32_t)at;
	memcpy(t->n[at].self, x->self, sizeof(x->self));
	memcpy(t->n[at].total, x->total, sizeof(x->total));
	t->n[at].module = shared_module(st, x);
	t->n[at].keep = true;
	return 0;
}

/* Makes the tree nodes of the kept part of position j's chain. */
static int make_chain(struct tree *t, const struct sorted_tree *st, size_t j)
{
	uint32_t stack = st->key[j].stack, parent = st->sh[st->attach[j]].out;
	size_t d0 = st->sh[st->attach[j]].depth, len = stack_len(st, stack), at;
	const int64_t *v = st->pv[j];

	for (size_t d = d0; d < d0 + st->keep[j]; d++) {
		size_t f = st->ns.off[stack] + d;
		int e = new_node(t, parent, st->ns.names[f], &at);

		if (e)
			return e;
		memcpy(t->n[at].total, v, sizeof(t->n[at].total));
		if (d + 1 == len)
			memcpy(t->n[at].self, v, sizeof(t->n[at].self));
		t->n[at].module = chain_module(st, j, d);
		t->n[at].keep = true;
		parent = (uint32_t)at;
	}
	return 0;
}

/* Makes the kept nodes in node order (parents first, as the writer's ties want). */
static int make_kept(struct tree *t, struct sorted_tree *st)
{
	struct rank_run *r = malloc((st->n_sh + st->n_pos) * sizeof(*r));
	size_t n = 0;
	int e = 0;

	if (!r)
		return -ENOMEM;
	for (size_t i = 1; i < st->n_sh; i++)
		if (st->sh[i].out != TREE_NONE)
			r[n++] = (struct rank_run){0, st->sh[i].ord, st->sh[i].depth, 1, i};
	for (size_t j = 0; j < st->n_pos; j++)
		if (st->keep[j])
			r[n++] = (struct rank_run){
			    0, st->key[j].stack, st->sh[st->attach[j]].depth + 1, 0, st->n_sh + j};
	qsort(r, n, sizeof(*r), by_node_order);
	st->sh[0].out = 0; /* the root is node 0 of the tree */
	memcpy(t->n[0].self, st->sh[0].self, sizeof(st->sh[0].self));
	memcpy(t->n[0].total, st->sh[0].total, sizeof(st->sh[0].total));
	t->n[0].keep = true;
	for (size_t i = 0; !e && i < n; i++)
		e = r[i].what < st->n_sh ? make_shared(t, st, r[i].what)
					 : make_chain(t, st, r[i].what - st->n_sh);
	free(r);
	return e;
}

/* The pruned tree of src's stacks into t (tree_init'ed), values vi in slot 0. */
static int sorted_tree_build(struct tree *t, const struct stack_src *src, int vi, size_t max_nodes)
{
	struct sorted_tree st = {.qs = {src->qs, src->qs}, .n0 = src->qs->n, .vi = vi};
	int e = named_stacks_fill(t, src, vi, &st.ns) ?: sort_stacks(&st) ?:
		merge_equal_stacks(&st) ?: shared_sweep(&st) ?: sorted_prune(&st, max_nodes) ?:
		make_kept(t, &st);

	sorted_tree_fini(&st);
	return e;
}

/*
 * The pruned diff tree of l's and r's stacks into t (tree_init'ed), l's values in
 * slot 0, r's in slot 1: the stacks of both sorted as one list, r's after l's in
 * the merge's order (as tree_add adds them), each side's top table (tops[side])
 * and functions per interval (stats[side]) counted as its stacks are named.
 */
static int sorted_diff_build(struct tree *t, const struct stack_src *l, const struct stack_src *r,
			     int vi, size_t max_nodes, struct top *tops[2], struct fn_stats *stats[2])
{
	struct sorted_tree st = {.qs = {l->qs, r->qs}, .n0 = l->qs->n, .vi = vi};
	int e;

	t->top = tops[0];
	t->stats = stats[0];
	e = named_stacks_fill(t, l, vi, &st.ns);
	t->top = tops[1];
	t->stats = stats[1];
	e = e ?: named_stacks_fill(t, r, vi, &st.ns);
	t->top = NULL;
	t->stats = NULL;
	e = e ?: sort_stacks(&st) ?: merge_equal_stacks(&st) ?: shared_sweep(&st) ?:
		sorted_prune(&st, max_nodes) ?: make_kept(t, &st);
	sorted_tree_fini(&st);
	return e;
}

/* ---- the tree, with the top table when asked for ---- */

/* The top table, when asked for, is counted as the tree names the stacks (one
 * walk over the merge's frames, each location named once for both). */
static int tree_make(const struct stack_src *src, const struct query_request *q, void *res)
{
	struct query_tree *out = res;
	int vi = q->value_index;
	struct top *top = NULL;
	struct tree t;
	int e = tree_start(&t, vi);

	if (!e && q->top_rows)
		e = top__new(src->p, vi, &top);
	if (e)
		goto cleanup;
	t.top = top;
	if ((e = sorted_tree_build(&t, src, vi, nodes_limit(q->max_nodes))))
		goto cleanup;
	snprintf(out->unit, sizeof(out->unit), "%s", unit(src->p, vi));
	if ((e = flatten(&t, false, out)))
		goto cleanup;
	tree_fini(&t); /* before the top: its memory is not needed by then */
	memset(&t, 0, sizeof(t));
	if (top) {
		out->has_top = true;
		e = query_top__from(&out->top, top, vi, q->top_rows);
	}
cleanup:
	tree_fini(&t);
	top__free(top);
	return e;
}

static int top_make_q(const struct stack_src *src, const struct query_request *q, void *res)
{
	return top_make(src, q->value_index, q->max_nodes, res);
}

/* ---- over the store: merged by stack (query_stacks), no profile samples ---- */

/* A source over src->qs: a profile of the locations only, filled as they are named. */
static int stack_src_open(struct stack_src *src, struct store *s)
{
	const struct query_stacks *qs = src->qs;
	struct profile *p = profile__new(qs->period_ns);

	src->p = p;
	if (p && profile__set_type(p, qs->type)) /* the unit of the values */
		return -ENOMEM;
	if (!p)
		return -ENOMEM;
	profile__set_group_unnamed(p, qs->group_unnamed);
	/* the groups' frames: a function each, no mapping (no module) */
	if (qs->groups.n > 1 && !(src->group_locs = calloc(qs->groups.n, sizeof(uint64_t))))
		return -ENOMEM;
	for (size_t g = 1; g < qs->groups.n; g++) {
		struct profile_line line = {0};

		line.function_id = profile__function(p, qs->groups.strs[g], qs->groups.strs[g], NULL);
		if (!line.function_id ||
		    !(src->group_locs[g] = profile__location_exact(p, 0, g, &line, 1)))
			return -ENOMEM;
	}
	return store_builder__new(s, p, &src->b);
}

static void stack_src_close(struct stack_src *src)
{
	free(src->group_locs);
	src->group_locs = NULL;
	store_builder__free(src->b);
	profile__free(src->p);
	src->b = NULL;
	src->p = NULL;
}

static int with_stacks(struct store *s, const struct query_request *q, void *out, char *err,
		       size_t errlen,
		       int (*make)(const struct stack_src *, const struct query_request *, void *))
{
	struct query_stacks qs;
	struct stack_src src = {NULL, &qs, NULL, NULL, NULL};
	int e = query_stacks(s, q, &qs, err, errlen);

	if (!e)
		e = stack_src_open(&src, s);
	if (!e && (e = make(&src, q, out)))
		query_fail(err, errlen, e, "building the result failed: %s", strerror(-e));
	stack_src_close(&src);
	query_stacks__fini(&qs);
	return e;
}

int query_tree(struct store *s, const struct query_request *q, struct query_tree *out, char *err,
	       size_t errlen)
{
	memset(out, 0, sizeof(*out));
	return with_stacks(s, q, out, err, errlen, tree_make);
}

int query_top(struct store *s, const struct query_request *q, struct query_top *out, char *err,
	      size_t errlen)
{
	memset(out, 0, sizeof(*out));
	return with_stacks(s, q, out, err, errlen, top_make_q);
}

int query_diff(struct store *s, const struct query_request *left, const struct query_request *right,
	       struct query_diff *out, char *err, size_t errlen)
{
	struct query_stacks l, r;
	struct query_buckets lb, rb;
	struct stack_src ls = {NULL, &l, NULL, NULL, &lb}, rs = {NULL, &r, NULL, NULL, &rb};
	int e;

	memset(out, 0, sizeof(*out));
	memset(&rb, 0, sizeof(rb));
	out->confidence = left->confidence > 0 ? left->confidence : QUERY_DEFAULT_CONFIDENCE;
	out->normalize = left->normalize == QUERY_NORM_RATE ? QUERY_NORM_RATE : QUERY_NORM_SHARE;
	/* each side cut into its intervals (query_buckets_width of its range) */
	e = query_stacks_buckets(s, left, left->interval_ns, &l, &lb, err, errlen);
	if (!e)
		e = query_stacks_buckets(s, right, left->interval_ns, &r, &rb, err, errlen);
	else
		memset(&r, 0, sizeof(r));
	if (!e && !query_same_type(l.type, r.type))
		e = query_fail(err, errlen, -EINVAL,
			       "the two selections are of different profile types (%s and %s): a "
			       "diff compares one type",
			       l.type ? l.type : "CPU", r.type ? r.type : "CPU");
	e = e ?: stack_src_open(&ls, s) ?: stack_src_open(&rs, s);
	/* the table's rows: topRows when asked, as the tree's top table, else maxNodes */
	if (!e && (e = diff_make(&ls, &rs, left->value_index, left->max_nodes,
				 left->top_rows ? left->top_rows : left->max_nodes, out)))
		query_fail(err, errlen, e, "building the diff failed: %s", strerror(-e));
	stack_src_close(&ls);
	stack_src_close(&rs);
	query_stacks__fini(&l);
	query_stacks__fini(&r);
	query_buckets__fini(&lb);
	query_buckets__fini(&rb);
	return e;
}

/* ---- one side of a comparison named by function (regress.c) ---- */

int query_fn_side(struct store *s, const struct query_stacks *qs, const struct query_buckets *bk,
		  int value_index, struct query_top *top, struct fn_stats *f)
{
	struct stack_src src = {NULL, qs, NULL, NULL, bk};
	struct stack_buf b = {0};
	struct top *t = NULL;
	struct tree tr;
	/* the diff's walk without its tree: each location named once, each stack
	 * counted into the top table and into f by the table's row ids */
	int e = tree_start(&tr, value_index) ?: stack_src_open(&src, s) ?:
		top__new(src.p, value_index, &t);

	memset(top, 0, sizeof(*top));
	tr.top = t;
	for (size_t i = 0; !e && i < qs->n; i++) {
		e = stack_names(&tr, &src, qs->locs + qs->off[i], qs->off[i + 1] - qs->off[i], &b) ?:
		    top__add_rows(t, b.rows, b.n, qs->v[i][value_index]) ?:
		    fn_stats__add(f, b.rows, b.n, bk->v + i * bk->k, (double)qs->v[i][0]);
	}
	e = e ?: query_top__from(top, t, value_index, QUERY_MAX_NODES);
	free(b.names);
	free(b.mods);
	free(b.rows);
	top__free(t);
	tree_fini(&tr);
	stack_src_close(&src);
	return e;
}
