/*
 * sym_kallsyms: kernel text symbols from /proc/kallsyms into a sym_table.
 *
 * Lines are "ADDR TYPE NAME" or "ADDR TYPE NAME\t[MODULE]"; text symbols are types
 * t/T (and weak w/W). kallsyms gives no sizes, so a symbol runs to the next one, and
 * the last symbol of the core kernel or of a module runs at most SYM_UNSIZED_TAIL
 * (see sym_table.c). Linker markers that end a text area (_etext, _einittext,
 * __*_text_end) are kept as nameless entries so the gap after them resolves to
 * nothing instead of to the last function before them.
 *
 * Constraint: ~150k lines on a typical kernel, read once, lazily, on the first kernel
 * address. All addresses 0 means kptr_restrict hides them: no symbols at all.
 */
#include "symbolize/sym_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KSYM_RANK_MARKER 0
#define KSYM_RANK_LOCAL 1
#define KSYM_RANK_WEAK 2
#define KSYM_RANK_GLOBAL 3
/* KSYM_NAME_LEN is 512; with " [module]" this is plenty (longer names are cut). */
#define KSYM_DISPLAY_MAX 1024
#define KSYM_READ_BUF (256 * 1024)

struct ksym_line {
	uint64_t addr;
	char type;
	const char *name;
	const char *module; /* NULL for the core kernel */
};

/* Splits one line in place. 0 or -EINVAL. */
static int parse_line(char *line, struct ksym_line *out)
{
	char *s = line, *end;

	out->addr = strtoull(s, &end, 16);
	if (end == s || *end != ' ')
		return -EINVAL;
	s = end + 1;
	out->type = *s;
	if (!out->type || s[1] != ' ')
		return -EINVAL;
	s += 2;
	out->name = s;
	s += strcspn(s, " \t\n");
	out->module = NULL;
	if (*s == '\0' || *s == '\n') {
		*s = '\0';
		return out->name[0] ? 0 : -EINVAL;
	}
	*s++ = '\0';
	s += strspn(s, " \t");
	if (*s == '[') {
		end = strchr(s, ']');
		if (!end)
			return -EINVAL;
		*end = '\0';
		out->module = s + 1;
	}
	return out->name[0] ? 0 : -EINVAL;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Linker symbols that mark the end of a text area, not a function. */
static bool is_end_marker(const char *name)
{
	return strcmp(name, "_etext") == 0 || strcmp(name, "_einittext") == 0 ||
	       (strncmp(name, "__", 2) == 0 && ends_with(name, "_text_end"));
}

static int type_rank(char type)
{
	switch (type) {
	case 'T':
		return KSYM_RANK_GLOBAL;
	case 'W':
		return KSYM_RANK_WEAK;
	case 't':
	case 'w':
		return KSYM_RANK_LOCAL;
	default:
		return -1;
	}
}

/* Region number for a module: a new number whenever the module name changes. */
static uint32_t region_of(const char *module, char *prev, size_t prev_len, uint32_t *next_id)
{
	if (!module) {
		prev[0] = '\0';
		return 0;
	}
	if (strcmp(module, prev) != 0) {
		snprintf(prev, prev_len, "%s", module);
		++*next_id;
	}
	return *next_id;
}

/*
 * The table is built in its final form, not through a sym_builder (whose 40-byte raw
 * symbols, sort keys and growing name blob held ~13 MB beside the ~5 MB kept: the
 * agent's peak under --memory-limit, docs/memory.md). A first pass counts the symbols
 * and their names' bytes, a second fills exactly sized arrays: 24-byte records,
 * sorted in place (kallsyms comes sorted but for modules and BPF programs) and
 * rewritten in place into the 12-byte entries, then shrunk; the names are written
 * once into the blob the table keeps.
 */
struct ksym_rec {
	uint64_t start;
	uint32_t name, display; /* offsets in the blob, SYM_NO_NAME for an end marker */
	uint32_t region_rank;	/* region << 2 | rank */
	uint32_t ord;		/* line order: the last of one address's equals wins */
};

struct ksym_build {
	struct ksym_rec *rec;
	size_t n, cap;
	char *names;
	size_t len, names_cap;
	bool any_display, sorted;
};

/* Whether a core kernel symbol's name is the tail of the one kept before it, the
 * padding symbol in front of each function ("__pfx_NAME" then "NAME", kernels built
 * with function padding: 57,828 of 122,063 text symbols, 1.6 of 3.1 MB of names on
 * this project's 6.18): then it points into that name instead of copying it. */
#define KSYM_PFX "__pfx_"
static bool pads_name(const char *prev, const struct ksym_line *l)
{
	return prev && !l->module && strncmp(prev, KSYM_PFX, sizeof(KSYM_PFX) - 1) == 0 &&
	       strcmp(prev + sizeof(KSYM_PFX) - 1, l->name) == 0;
}

/* Bytes of l's names in the blob (its raw name, and "name [module]"), 0 for one that
 * is not kept; *keep whether it is. */
static size_t line_bytes(const struct ksym_line *l, bool *keep)
{
	size_t n;

	*keep = type_rank(l->type) >= 0 && l->addr != 0;
	if (!*keep || is_end_marker(l->name))
		return 0;
	n = strlen(l->name) + 1;
	if (l->module) {
		size_t d = strlen(l->name) + strlen(l->module) + 3;

		n += (d < KSYM_DISPLAY_MAX - 1 ? d : KSYM_DISPLAY_MAX - 1) + 1;
	}
	return n;
}

static uint32_t put_name(struct ksym_build *b, const char *s, size_t n)
{
	uint32_t at = (uint32_t)b->len;

	memcpy(b->names + b->len, s, n);
	b->names[b->len + n - 1] = '\0';
	b->len += n;
	return at;
}

/* Adds l (second pass); a line the first pass did not see (the file grew between the
 * passes: a module loaded) is skipped. */
static void add_line(struct ksym_build *b, const struct ksym_line *l, uint32_t region)
{
	char display[KSYM_DISPLAY_MAX];
	struct ksym_rec r = {.start = l->addr, .name = SYM_NO_NAME, .display = SYM_NO_NAME};
	const struct ksym_rec *prev = b->n ? &b->rec[b->n - 1] : NULL;
	bool keep;
	size_t need = line_bytes(l, &keep);
	bool shares = keep && need && prev && prev->name != SYM_NO_NAME &&
		      pads_name(b->names + prev->name, l);

	if (shares)
		need = 0;
	if (!keep || b->n >= b->cap || need > b->names_cap - b->len || region > (UINT32_MAX >> 2))
		return;
	r.ord = (uint32_t)b->n;
	if (is_end_marker(l->name)) {
		r.region_rank = region << 2 | KSYM_RANK_MARKER;
	} else {
		r.region_rank = region << 2 | (uint32_t)type_rank(l->type);
		if (shares)
			r.name = r.display = prev->name + (uint32_t)sizeof(KSYM_PFX) - 1;
		else
			r.name = r.display = put_name(b, l->name, strlen(l->name) + 1);
		if (l->module) {
			int d = snprintf(display, sizeof(display), "%s [%s]", l->name, l->module);

			r.display = put_name(b, display,
					     (size_t)(d < KSYM_DISPLAY_MAX - 1 ? d : KSYM_DISPLAY_MAX - 1) + 1);
			b->any_display = true;
		}
	}
	if (b->n && (r.start < b->rec[b->n - 1].start))
		b->sorted = false;
	b->rec[b->n++] = r;
}

static bool rec_less(const struct ksym_rec *a, const struct ksym_rec *b)
{
	return a->start != b->start ? a->start < b->start : a->ord < b->ord;
}

static void sift_down(struct ksym_rec *r, size_t root, size_t n)
{
	for (size_t c; (c = 2 * root + 1) < n; root = c) {
		struct ksym_rec t;

		if (c + 1 < n && rec_less(&r[c], &r[c + 1]))
			c++;
		if (!rec_less(&r[root], &r[c]))
			return;
		t = r[root];
		r[root] = r[c];
		r[c] = t;
	}
}

/* Heap sort by (start, line order): in place, no second array. */
static void rec_sort(struct ksym_rec *r, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift_down(r, i, n);
	for (size_t i = n; i-- > 1;) {
		struct ksym_rec t = r[0];

		r[0] = r[i];
		r[i] = t;
		sift_down(r, 0, i);
	}
}

static size_t underscores(const struct ksym_build *b, const struct ksym_rec *r)
{
	return r->name == SYM_NO_NAME ? 0 : strspn(b->names + r->name, "_");
}

/* Whether later (after earlier in the file, same address) wins: a higher rank, else
 * fewer leading '_', else the later one (as sym_table.c chooses for every table). */
static bool rec_wins(const struct ksym_build *b, const struct ksym_rec *later,
		     const struct ksym_rec *earlier)
{
	if ((later->region_rank & 3) != (earlier->region_rank & 3))
		return (later->region_rank & 3) > (earlier->region_rank & 3);
	return underscores(b, later) <= underscores(b, earlier);
}

/* Keeps one record per address (the winner), in place; returns how many. */
static size_t unique(struct ksym_build *b)
{
	size_t m = 0;

	for (size_t i = 0, j; i < b->n; i = j) {
		struct ksym_rec best = b->rec[i];

		for (j = i + 1; j < b->n && b->rec[j].start == best.start; j++)
			if (rec_wins(b, &b->rec[j], &best))
				best = b->rec[j];
		b->rec[m++] = best;
	}
	return m;
}

/* Where r ends, given the next symbol by address (sym_table.c's rule, no sizes). */
static uint64_t rec_end(const struct ksym_rec *r, const struct ksym_rec *next)
{
	uint64_t tail = r->start > UINT64_MAX - SYM_UNSIZED_TAIL ? UINT64_MAX
								  : r->start + SYM_UNSIZED_TAIL;

	if (next && next->region_rank >> 2 == r->region_rank >> 2)
		return next->start;
	return next && next->start < tail ? next->start : tail;
}

/* Rewrites the m sorted, unique records into t->syms (12 bytes each, in the same
 * array: entry k is written at or before record k's bytes, after records k and k + 1
 * are read) and disp. */
static void to_entries(struct ksym_build *b, size_t m, struct sym_table *t, uint32_t *disp)
{
	struct sym_entry *e = (struct sym_entry *)b->rec;
	struct ksym_rec cur, next;

	t->base = m ? b->rec[0].start : 0;
	t->n = 0;
	if (m)
		cur = b->rec[0];
	for (size_t i = 0; i < m; i++) {
		uint64_t end;
		bool last = i + 1 == m;

		if (!last)
			next = b->rec[i + 1];
		end = rec_end(&cur, last ? NULL : &next);
		/* past 4 GiB from the first symbol: dropped, as for any table */
		if (end > cur.start && cur.start - t->base <= UINT32_MAX) {
			if (disp)
				disp[t->n] = cur.display;
			e[t->n++] = (struct sym_entry){
			    (uint32_t)(cur.start - t->base),
			    end - cur.start > UINT32_MAX ? UINT32_MAX : (uint32_t)(end - cur.start),
			    cur.name};
		}
		cur = next;
	}
}

/* One pass over path: count (counting: b->cap and b->names_cap) or fill. */
static int read_pass(const char *path, struct ksym_build *b, bool counting)
{
	struct ksym_line l;
	char *line = NULL, prev_module[256] = "", prev_name[KSYM_DISPLAY_MAX] = "";
	size_t cap = 0;
	uint32_t next_region = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	/* /proc/kallsyms costs per read(2): big reads make loading ~3x faster (300 -> 110 ms). */
	setvbuf(f, NULL, _IOFBF, KSYM_READ_BUF);
	while (getline(&line, &cap, f) > 0) {
		uint32_t region;
		bool keep;
		size_t n;

		if (parse_line(line, &l))
			continue;
		region = region_of(l.module, prev_module, sizeof(prev_module), &next_region);
		if (!counting) {
			add_line(b, &l, region);
			continue;
		}
		n = line_bytes(&l, &keep);
		if (keep && b->cap < SYM_MAX_SYMBOLS) {
			/* as add_line: a name shared with the padding symbol before it */
			if (n && pads_name(prev_name, &l))
				n -= strlen(l.name) + 1;
			b->cap++;
			b->names_cap += n;
			snprintf(prev_name, sizeof(prev_name), "%s",
				 n || !is_end_marker(l.name) ? l.name : "");
		}
	}
	free(line);
	fclose(f);
	return 0;
}

int sym_kallsyms__load(const char *path, struct sym_table *t)
{
	struct ksym_build b = {.sorted = true};
	uint32_t *disp = NULL;
	size_t m;
	int err;

	memset(t, 0, sizeof(*t));
	if ((err = read_pass(path, &b, true)))
		return err;
	if (b.cap == 0)
		return -ENOENT;
	if (b.names_cap >= SYM_NO_NAME)
		return -ENOMEM;
	b.rec = malloc(b.cap * sizeof(*b.rec));
	b.names = malloc(b.names_cap ? b.names_cap : 1);
	if (!b.rec || !b.names) {
		err = -ENOMEM;
		goto fail;
	}
	if ((err = read_pass(path, &b, false)))
		goto fail;
	if (b.n == 0) {
		err = -ENOENT;
		goto fail;
	}
	if (!b.sorted)
		rec_sort(b.rec, b.n);
	m = unique(&b);
	if (b.any_display && !(disp = malloc(m * sizeof(*disp)))) {
		err = -ENOMEM;
		goto fail;
	}
	to_entries(&b, m, t, disp);
	/* a big block's tail goes back to the kernel */
	t->syms = realloc(b.rec, (t->n ? t->n : 1) * sizeof(*t->syms)); /* layers: a shrink */
	if (!t->syms)
		t->syms = (struct sym_entry *)b.rec; /* shrinking failed: kept as is */
	b.rec = NULL;
	t->names = t->names_owned = b.names;
	t->names_len = b.len;
	b.names = NULL;
	t->display = disp;
	disp = NULL;
	if ((err = sym_table__top_index(t)))
		goto fail;
	return 0;
fail:
	free(disp);
	free(b.rec);
	free(b.names);
	sym_table__fini(t);
	return err;
}
