/*
 * Flame tree, diff tree and top table of a request as JSON, each written one way:
 * from the request's merge by stack (query_stacks), whose store location ids a
 * store_builder names into a profile of locations only. Frames are named as
 * folded/top name them (profile__frame_name); a node is keyed by (parent, name
 * id) (its parent's short children list, or a base_hmap for wide parents), names
 * are interned in a base_strtab. A diff is the same tree with two value slots,
 * one per selection. Only the max_nodes largest nodes are written. The top
 * table's rows are profile/top.c's (top__add), the one definition of the table.
 *
 * Each node also names its module (the basename of the mapping's file,
 * "[kernel]" for kernel frames; from the first location that made the node),
 * which the web UI colours by. Written only when known, to keep the JSON of a
 * 100,000-node tree small.
 */
#include "query_impl.h"

#include <errno.h>
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
	struct base_strtab names; /* id 0 is "" (unused), id 1 "total" */
	char **json; /* names.strs[i] as a quoted JSON string, made when first written */
	struct base_hmap child_map; /* (parent, name) -> node index, for wide parents */
	/* Per store location of the stacks being added: loc_off[id] is 1 + the
	 * index in pool of (count, module id, name ids outer line first); 0 = not
	 * named yet. Naming a frame (snprintf + hash) once per location, not once
	 * per sample frame. loc_cap entries, grown on demand. */
	size_t *loc_off, *pool;
	size_t loc_cap, pool_n, pool_cap;
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

static void tree_fini(struct tree *t)
{
	for (size_t i = 0; t->json && i < t->names.n; i++)
		free(t->json[i]);
	free(t->json);
	free(t->n);
	free(t->loc_off);
	free(t->pool);
	base_strtab__fini(&t->names);
	base_hmap__fini(&t->child_map);
}

/* The module of a location, interned into *id: its mapping file's basename,
 * "[kernel]" for kernel frames, SIZE_MAX when unknown. */
static int name_module(struct tree *t, const struct profile *p, const struct profile_location *loc,
		       size_t *id)
{
	struct profile_mapping m;
	const char *slash;

	*id = SIZE_MAX;
	if (!loc->mapping_id || profile__get_mapping(p, loc->mapping_id, &m))
		return 0;
	if (m.is_kernel)
		return intern_name(t, "[kernel]", id);
	if (!m.file || !m.file[0])
		return 0;
	slash = strrchr(m.file, '/');
	return intern_name(t, slash && slash[1] ? slash + 1 : m.file, id);
}

/*
 * The stacks a tree is made of: the distinct stacks of a query_stacks, whose
 * store location ids b names into p (a profile of locations only).
 */
struct stack_src {
	struct profile *p;	       /* owned: the locations named */
	const struct query_stacks *qs; /* borrowed */
	struct store_builder *b;       /* owned: translates qs's store location ids into p */
};

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
	if ((e = store_builder__location(src->b, id, &pid)))
		return e;
	if (profile__get_location(p, pid, &loc))
		return -EINVAL;
	n = loc.n_lines ? loc.n_lines : 1;
	if (base_grow((void **)&t->pool, &t->pool_cap, t->pool_n + n + 2, sizeof(*t->pool)))
		return -ENOMEM;
	*at = t->pool_n;
	t->pool[t->pool_n++] = n;
	if ((e = name_module(t, p, &loc, &t->pool[t->pool_n++])))
		return e;
	for (size_t l = n; l-- > 0;) {
		e = intern_name(t, profile__frame_name(p, &loc, l, buf, sizeof(buf)),
				&t->pool[t->pool_n]);
		if (e)
			return e;
		t->pool_n++;
	}
	t->loc_off[id] = *at + 1;
	return 0;
}

/* The frames of one stack, root first: name ids and module ids, n of each. */
struct stack_buf {
	size_t *names, *mods; /* owned, cap entries each */
	size_t cap, n;
};

/* Names the frames of a stack (n_locs location ids, leaf first) into b (grown). */
static int stack_names(struct tree *t, const struct stack_src *src, const uint64_t *locs,
		       size_t n_locs, struct stack_buf *b)
{
	size_t at, cap;

	b->n = 0;
	for (size_t i = n_locs; i-- > 0;) {
		int e = name_location(t, src, locs[i], &at);
		if (e)
			return e;
		cap = b->cap;
		if (base_grow((void **)&b->names, &cap, b->n + t->pool[at], sizeof(*b->names)) ||
		    base_grow((void **)&b->mods, &b->cap, b->n + t->pool[at], sizeof(*b->mods)))
			return -ENOMEM;
		memcpy(b->names + b->n, &t->pool[at + 2], t->pool[at] * sizeof(*b->names));
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
	t->loc_off = NULL;
	t->loc_cap = 0;
	t->pool_n = 0;
}

/* Adds every stack of src to slot `slot` of the tree. */
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
			if (t->n[at].module == TREE_NONE && b.mods[k] != SIZE_MAX)
				t->n[at].module = (uint32_t)b.mods[k];
		}
		if (!e)
			t->n[at].self[slot] = base_sat_add(t->n[at].self[slot], v);
	}
	free(b.names);
	free(b.mods);
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
 * The writer below runs once per node of trees the web UI asks 100,000 nodes
 * of: it uses the stdio _unlocked calls (the FILE is ours alone), formats
 * numbers by hand and escapes each distinct name once.
 */
static void put_i64(FILE *out, int64_t v)
{
	char buf[24], *p = buf + sizeof(buf);
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	fwrite_unlocked(p, 1, (size_t)(buf + sizeof(buf) - p), out);
}

/* names.strs[id] quoted and escaped as JSON (as base_json_string writes it). */
static const char *json_name(struct tree *t, size_t id)
{
	const unsigned char *c = (const unsigned char *)t->names.strs[id];
	char *q, *o;

	if (t->json[id])
		return t->json[id];
	if (!(q = o = malloc(strlen(t->names.strs[id]) * 6 + 3)))
		return NULL;
	*o++ = '"';
	for (; *c; c++) {
		if (*c == '"' || *c == '\\')
			*o++ = '\\', *o++ = (char)*c;
		else if (*c < 0x20)
			o += sprintf(o, "\\u%04x", *c);
		else
			*o++ = (char)*c;
	}
	*o++ = '"';
	*o = '\0';
	return t->json[id] = q;
}

/* Makes room for the names' JSON, made as they are first written. */
static int json_names_init(struct tree *t)
{
	t->json = calloc(t->names.n, sizeof(*t->json));
	return t->json ? 0 : -ENOMEM;
}

static void write_value(FILE *out, const int64_t v[2], bool diff)
{
	if (!diff) {
		put_i64(out, v[0]);
		return;
	}
	fputc_unlocked('[', out);
	put_i64(out, v[0]);
	fputc_unlocked(',', out);
	put_i64(out, v[1]);
	fputc_unlocked(']', out);
}

/*
 * The writer walks the tree with an explicit stack, not recursion: a stack of
 * 200,000 frames makes a chain of max_nodes nested nodes, and the web UI asks
 * for 20,000 of them (a recursive writer died of a stack overflow there). Each
 * level is a node whose children are being written; the children of every open
 * node sit in one shared buffer (kids), a level's run at its end, so the buffer
 * holds at most the kept nodes and is popped as levels close.
 */
struct write_level {
	size_t node, kid_off, nk, next; /* kids[kid_off .. +nk), next to write */
};

struct writer {
	struct tree *t;
	bool diff;
	FILE *out;
	size_t *kids, nkids, kids_cap;
	struct write_level *lv;
	size_t depth, lv_cap;
};

/* Writes node i up to its children and pushes it as the innermost open level,
 * its kept children sorted by rank at the end of kids. */
static int open_node(struct writer *w, size_t i)
{
	struct tree *t = w->t;
	const char *name = json_name(t, t->n[i].name), *mod = NULL;
	size_t off = w->nkids;

	if (!name || (t->n[i].module != TREE_NONE && !(mod = json_name(t, t->n[i].module))))
		return -ENOMEM;
	if (base_grow((void **)&w->lv, &w->lv_cap, w->depth + 1, sizeof(*w->lv)))
		return -ENOMEM;
	for (uint32_t c = t->n[i].first; c != TREE_NONE; c = t->n[c].next) {
		if (!t->n[c].keep)
			continue;
		if (base_grow((void **)&w->kids, &w->kids_cap, w->nkids + 1, sizeof(*w->kids)))
			return -ENOMEM;
		w->kids[w->nkids++] = c;
	}
	if (w->nkids > off)
		qsort_r(w->kids + off, w->nkids - off, sizeof(*w->kids), by_rank, t->n);
	w->lv[w->depth++] = (struct write_level){i, off, w->nkids - off, 0};
	fputs_unlocked("{\"name\":", w->out);
	fputs_unlocked(name, w->out);
	if (mod) {
		fputs_unlocked(",\"module\":", w->out);
		fputs_unlocked(mod, w->out);
	}
	fputs_unlocked(",\"self\":", w->out);
	write_value(w->out, t->n[i].self, w->diff);
	fputs_unlocked(",\"total\":", w->out);
	write_value(w->out, t->n[i].total, w->diff);
	return 0;
}

/* Writes the kept subtree of node `root` as nested JSON objects. */
static int write_tree(struct tree *t, size_t root, bool diff, FILE *out)
{
	struct writer w = {.t = t, .diff = diff, .out = out};
	int e = open_node(&w, root);

	while (!e && w.depth) {
		struct write_level *l = &w.lv[w.depth - 1];

		if (l->next < l->nk) {
			fputs_unlocked(l->next ? "," : ",\"children\":[", out);
			e = open_node(&w, w.kids[l->kid_off + l->next++]); /* may move w.lv */
			continue;
		}
		if (l->nk)
			fputc_unlocked(']', out);
		fputc_unlocked('}', out);
		w.nkids = l->kid_off;
		w.depth--;
	}
	free(w.kids);
	free(w.lv);
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

static int diff_write(const struct stack_src *l, const struct stack_src *r, int value_index,
		      size_t max_nodes, FILE *out)
{
	struct tree t;
	int e;

	if (value_index < 0 || value_index >= PROFILE_N_VALUES)
		return -EINVAL;
	e = tree_init(&t) ?: tree_add(&t, l, value_index, 0) ?: tree_add(&t, r, value_index, 1) ?:
		prune(&t, nodes_limit(max_nodes)) ?: json_names_init(&t);
	if (!e) {
		fprintf(out, "{\"unit\":\"%s\",\"left\":%lld,\"right\":%lld,\"tree\":",
			unit(l->p, value_index), (long long)t.n[0].total[0],
			(long long)t.n[0].total[1]);
		e = write_tree(&t, 0, true, out);
		fputs("}\n", out);
	}
	tree_fini(&t);
	return e;
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
				e = store_builder__location(src->b, id, &pid_of[id]);
			locs[k] = pid_of[id];
		}
		if (!e)
			e = top__add(t, locs, n, qs->v[i][vi]);
	}
	free(pid_of);
	free(locs);
	return e;
}

int query_top_rows_json(const struct top *t, int value_index, size_t max_nodes, FILE *out)
{
	struct top_row *rows = NULL;
	size_t n = 0, lim = nodes_limit(max_nodes);
	int e = top__rows(t, &rows, &n);

	if (e)
		return e;
	fprintf(out, "{\"unit\":\"%s\",\"total\":%lld,\"rows\":[",
		unit(top__profile(t), value_index), (long long)top__total(t));
	for (size_t i = 0; i < n && i < lim; i++) {
		fputs(i ? ",\n{\"name\":" : "{\"name\":", out);
		base_json_string(out, rows[i].name);
		fprintf(out, ",\"self\":%lld,\"total\":%lld}", (long long)rows[i].self,
			(long long)rows[i].total);
	}
	fputs("]}", out);
	free(rows);
	return 0;
}

/* The top table object of src's stacks, at most rows rows. */
static int top_object(const struct stack_src *src, int vi, size_t rows, FILE *out)
{
	struct top *t = NULL;
	int e = top__new(src->p, vi, &t) ?: top_add_stacks(t, src, vi) ?:
		query_top_rows_json(t, vi, rows, out);

	top__free(t);
	return e;
}

static int top_json_write(const struct stack_src *src, const struct query_request *q, FILE *out)
{
	int e = top_object(src, q->value_index, q->max_nodes, out);

	fputc('\n', out);
	return e;
}

/* ---- the tree, with the top table when asked for ---- */

static int tree_write(const struct stack_src *src, const struct query_request *q, FILE *out)
{
	int vi = q->value_index;
	struct tree t;
	int e;

	if (vi < 0 || vi >= PROFILE_N_VALUES)
		return -EINVAL;
	e = tree_init(&t) ?: tree_add(&t, src, vi, 0) ?: prune(&t, nodes_limit(q->max_nodes)) ?:
		json_names_init(&t);
	if (!e) {
		fprintf(out, "{\"unit\":\"%s\",\"total\":%lld,\"tree\":", unit(src->p, vi),
			(long long)t.n[0].total[0]);
		e = write_tree(&t, 0, false, out);
	}
	tree_fini(&t); /* before the top: its memory is not needed by then */
	if (!e && q->top_rows) {
		fputs(",\"top\":", out);
		e = top_object(src, vi, q->top_rows, out);
	}
	fputs("}\n", out);
	return e;
}

/* ---- over the store: merged by stack (query_stacks), no profile samples ---- */

/* A source over src->qs: a profile of the locations only, filled as they are named. */
static int stack_src_open(struct stack_src *src, struct store *s)
{
	struct profile *p = profile__new(src->qs->period_ns);

	src->p = p;
	if (p && profile__set_type(p, src->qs->type)) /* the unit of the values */
		return -ENOMEM;
	return p ? store_builder__new(s, p, &src->b) : -ENOMEM;
}

static void stack_src_close(struct stack_src *src)
{
	store_builder__free(src->b);
	profile__free(src->p);
	src->b = NULL;
	src->p = NULL;
}

static int with_stacks(struct store *s, const struct query_request *q, FILE *out, char *err,
		       size_t errlen,
		       int (*write)(const struct stack_src *, const struct query_request *, FILE *))
{
	struct query_stacks qs;
	struct stack_src src = {NULL, &qs, NULL};
	int e = query_stacks(s, q, &qs, err, errlen);

	if (!e)
		e = stack_src_open(&src, s);
	if (!e && (e = write(&src, q, out)))
		query_fail(err, errlen, e, "writing the result failed: %s", strerror(-e));
	stack_src_close(&src);
	query_stacks__fini(&qs);
	return e;
}

int query_tree_json(struct store *s, const struct query_request *q, FILE *out, char *err,
		    size_t errlen)
{
	return with_stacks(s, q, out, err, errlen, tree_write);
}

int query_top_json(struct store *s, const struct query_request *q, FILE *out, char *err,
		   size_t errlen)
{
	return with_stacks(s, q, out, err, errlen, top_json_write);
}

int query_diff_json(struct store *s, const struct query_request *left,
		    const struct query_request *right, FILE *out, char *err, size_t errlen)
{
	struct query_stacks l, r;
	struct stack_src ls = {NULL, &l, NULL}, rs = {NULL, &r, NULL};
	int e = query_stacks(s, left, &l, err, errlen);

	if (!e)
		e = query_stacks(s, right, &r, err, errlen);
	else
		memset(&r, 0, sizeof(r));
	if (!e && !query_same_type(l.type, r.type))
		e = query_fail(err, errlen, -EINVAL,
			       "the two selections are of different profile types (%s and %s): a "
			       "diff compares one type",
			       l.type ? l.type : "CPU", r.type ? r.type : "CPU");
	e = e ?: stack_src_open(&ls, s) ?: stack_src_open(&rs, s);
	if (!e && (e = diff_write(&ls, &rs, left->value_index, left->max_nodes, out)))
		query_fail(err, errlen, e, "writing the diff failed: %s", strerror(-e));
	stack_src_close(&ls);
	stack_src_close(&rs);
	query_stacks__fini(&l);
	query_stacks__fini(&r);
	return e;
}
