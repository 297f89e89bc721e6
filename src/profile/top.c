/*
 * The top table: one row per function, the one definition behind both the
 * `go tool pprof -top` text (top_write: `hearth record`, /api/profile?format=top)
 * and the web UI's JSON table (/api/profile?format=topjson: query_top_json feeds
 * the store's distinct stacks through top__add and writes top__rows):
 *
 *     Type: cpu
 *     Duration: 10s, Total samples = 1.98s (19.80%)
 *     Showing nodes accounting for 1.98s, 100% of 1.98s total
 *           flat  flat%   sum%        cum   cum%
 *          1.20s 60.61% 60.61%      1.20s 60.61%  main.hot
 *
 * Rows are functions by display name: an inlined callee is its own row (as in
 * pprof, without the _[i] suffix, so a function inlined at one call site and
 * called at another is one row), kernel functions carry _[k]. A row's self
 * (pprof's "flat" column) is the value of stacks whose innermost frame is the
 * function, its total (pprof's "cum") the value of stacks in which it appears
 * at least once. The text counts cpu nanoseconds, or sample counts when the
 * profile has no time. Numbers are formatted the way pprof's measurement
 * package does (one unit for the whole table, chosen from the smallest row and
 * the total; "%.2f" with ".00" dropped; Go's Percentage).
 */
#include "profile_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct top_acc {
	int64_t self, total;
	size_t stamp; /* 1 + index of the last stack counted into total */
};

struct top {
	const struct profile *p; /* borrowed; may gain locations between top__add calls */
	int vi;			 /* the value counted */
	size_t n_stacks;	 /* stacks counted so far */
	int64_t total;
	struct base_strtab names; /* row i is names.strs[i]; id 0 ("") unused */
	struct top_acc *rows;
	size_t cap_rows;
	/*
	 * Row ids of each location's lines, named once per location rather than once
	 * per frame of every sample (a merged profile has millions of frames over tens
	 * of thousands of locations): loc_off[loc id] is 1 + the offset of its entry
	 * (count, then row ids) in loc_rows, 0 while unnamed; cap_loc_off entries,
	 * grown with the profile.
	 */
	size_t *loc_off, cap_loc_off;
	size_t *loc_rows, n_loc_rows, cap_loc_rows;
};

/* One unit of pprof's time table (measurement.go); factor in nanoseconds. */
struct top_unit {
	const char *name;
	double factor;
};

static const struct top_unit time_units[] = {
    {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"hrs", 3.6e12},
};
static const struct top_unit count_unit = {"", 1};

/* pprof's autoScale: the largest unit in which the value is still >= 1 ("s" for 0). */
static const struct top_unit *auto_unit(bool time_mode, int64_t v)
{
	const struct top_unit *best = NULL;
	double a = fabs((double)v);

	if (!time_mode)
		return &count_unit;
	for (size_t i = 0; i < sizeof(time_units) / sizeof(time_units[0]); i++)
		if (a / time_units[i].factor >= 1.0)
			best = &time_units[i];
	return best ? best : &time_units[3];
}

/* pprof's ScaledLabel: "%.2f" in the unit, ".00" dropped, zero as a bare "0". */
static void format_value(int64_t v, const struct top_unit *u, char *buf, size_t len)
{
	char num[64];
	size_t n;

	snprintf(num, sizeof(num), "%.2f", (double)v / u->factor);
	n = strlen(num);
	if (n > 3 && strcmp(num + n - 3, ".00") == 0)
		num[n - 3] = '\0';
	if (strcmp(num, "0") == 0 || strcmp(num, "-0") == 0)
		snprintf(buf, len, "0");
	else
		snprintf(buf, len, "%s%s", num, u->name);
}

/* pprof's measurement.Percentage: always 6 columns wide. */
static void format_pct(int64_t v, int64_t total, char *buf, size_t len)
{
	double r = total ? fabs((double)v / (double)total) * 100 : 0;

	if (r >= 99.95 && r <= 100.05)
		snprintf(buf, len, "  100%%");
	else if (r >= 1.0)
		snprintf(buf, len, "%5.2f%%", r);
	else
		snprintf(buf, len, "%5.2g%%", r);
}

static int64_t abs64(int64_t v)
{
	return v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v;
}

/* Row id of a frame name, its row created at zero; -ENOMEM. */
static int64_t row_of(struct top *t, const char *name)
{
	int64_t id = base_strtab__intern(&t->names, name);
	size_t old = t->cap_rows;

	if (id < 0 || base_grow((void **)&t->rows, &t->cap_rows, (size_t)id + 1, sizeof(*t->rows)))
		return -ENOMEM;
	if (t->cap_rows > old)
		memset(t->rows + old, 0, (t->cap_rows - old) * sizeof(*t->rows));
	return id;
}

/* Location id's entry in loc_rows: its count of lines (at least one), then their row
 * ids; named on first use. A location p does not have gets an empty entry, not
 * remembered (a bad id must not grow loc_off). NULL on ENOMEM. */
static const size_t *loc_rows(struct top *t, uint64_t id)
{
	static const size_t unknown[1] = {0};
	char name[PROFILE_NAME_MAX];
	struct profile_location loc;
	size_t n, at = t->n_loc_rows;

	if (id < t->cap_loc_off && t->loc_off[id])
		return &t->loc_rows[t->loc_off[id] - 1];
	if (profile__get_location(t->p, id, &loc))
		return unknown;
	n = loc.n_lines ? loc.n_lines : 1;
	if (id >= t->cap_loc_off) {
		size_t old = t->cap_loc_off;

		if (id == SIZE_MAX ||
		    base_grow((void **)&t->loc_off, &t->cap_loc_off, id + 1, sizeof(*t->loc_off)))
			return NULL;
		memset(t->loc_off + old, 0, (t->cap_loc_off - old) * sizeof(*t->loc_off));
	}
	if (base_grow((void **)&t->loc_rows, &t->cap_loc_rows, at + n + 1, sizeof(*t->loc_rows)))
		return NULL;
	t->loc_rows[at] = n;
	for (size_t l = 0; l < n; l++) {
		int64_t r =
		    row_of(t, profile__frame_name_ex(t->p, &loc, l, false, name, sizeof(name)));

		if (r < 0)
			return NULL;
		t->loc_rows[at + 1 + l] = (size_t)r;
	}
	t->n_loc_rows = at + n + 1;
	t->loc_off[id] = at + 1;
	return &t->loc_rows[at];
}

/* Counts one stack: self for its innermost frame, total once per distinct function. */
int top__add(struct top *t, const uint64_t *locs, size_t n, int64_t v)
{
	bool leaf = true;

	t->n_stacks++;
	t->total = base_sat_add(t->total, abs64(v)); /* pprof's total is of |v| */
	for (size_t i = 0; i < n; i++) {
		const size_t *ids = loc_rows(t, locs[i]);

		if (!ids)
			return -ENOMEM;
		for (size_t l = 1; l <= ids[0]; l++) {
			struct top_acc *r = &t->rows[ids[l]];

			if (leaf)
				r->self = base_sat_add(r->self, v);
			leaf = false;
			if (r->stamp != t->n_stacks)
				r->total = base_sat_add(r->total, v);
			r->stamp = t->n_stacks;
		}
	}
	return 0;
}

int64_t top__line_row(struct top *t, const struct profile_location *loc, size_t line,
		      const char *frame_name)
{
	char name[PROFILE_NAME_MAX];

	/* the names differ only by the suffix of an inlined line */
	if (line + 1 < loc->n_lines)
		frame_name = profile__frame_name_ex(t->p, loc, line, false, name, sizeof(name));
	return row_of(t, frame_name);
}

int top__add_rows(struct top *t, const size_t *rows, size_t n, int64_t v)
{
	t->n_stacks++;
	t->total = base_sat_add(t->total, abs64(v));
	for (size_t i = 0; i < n; i++) {
		struct top_acc *r;

		if (rows[i] == 0 || rows[i] >= t->names.n)
			return -EINVAL;
		r = &t->rows[rows[i]];
		if (i + 1 == n)
			r->self = base_sat_add(r->self, v);
		if (r->stamp != t->n_stacks)
			r->total = base_sat_add(r->total, v);
		r->stamp = t->n_stacks;
	}
	return 0;
}

const struct profile *top__profile(const struct top *t)
{
	return t->p;
}

int top__new(const struct profile *p, int value_index, struct top **out)
{
	struct top *t;

	*out = NULL;
	if (value_index < 0 || value_index >= PROFILE_N_VALUES)
		return -EINVAL;
	if (!(t = calloc(1, sizeof(*t))))
		return -ENOMEM;
	t->p = p;
	t->vi = value_index;
	if (base_strtab__init(&t->names)) {
		free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

void top__free(struct top *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t->loc_off);
	free(t->loc_rows);
	base_strtab__fini(&t->names);
	free(t);
}

int64_t top__total(const struct top *t)
{
	return t->total;
}

static int count_all(struct top *t)
{
	struct profile_sample s;
	int err = 0;

	for (size_t i = 0; i < profile__n_samples(t->p) && !err; i++)
		if (profile__sample(t->p, i, &s) == 0)
			err = top__add(t, s.locs, s.n_locs, s.values[t->vi]);
	return err;
}

static int item_cmp(const void *va, const void *vb)
{
	const struct top_row *a = va, *b = vb;

	if (a->self != b->self)
		return a->self > b->self ? -1 : 1;
	if (a->total != b->total)
		return a->total > b->total ? -1 : 1;
	return strcmp(a->name, b->name);
}

int top__rows(const struct top *t, struct top_row **out, size_t *n)
{
	struct top_row *items = calloc(t->names.n ? t->names.n : 1, sizeof(*items));

	*n = 0;
	*out = items;
	if (!items)
		return -ENOMEM;
	for (size_t id = 1; id < t->names.n; id++)
		items[(*n)++] =
		    (struct top_row){t->names.strs[id], t->rows[id].self, t->rows[id].total, id};
	if (*n > 1)
		qsort(items, *n, sizeof(*items), item_cmp);
	return 0;
}

/* Whether the table counts time: CPU nanoseconds, or a typed profile's (off-CPU,
 * wall) nanoseconds; else counts (samples, and a memory type's values). */
static bool time_mode_of(const struct top *t)
{
	return !strcmp(profile__unit(t->p, t->vi), "nanoseconds");
}

/* pprof's "Type:": a typed profile's sample type (off_cpu, wall...), else cpu or
 * samples. */
static void print_type(const struct top *t, FILE *f)
{
	char tf[PROFILE_TYPE_FIELDS][PROFILE_TYPE_FIELD_MAX];
	const char *type = profile__type(t->p);

	if (type && !profile_type_split(type, tf))
		fprintf(f, "Type: %s\n", tf[1]);
	else
		fprintf(f, "Type: %s\n", t->vi == 1 ? "cpu" : "samples");
}

/* pprof's selectOutputUnit: the unit of the smallest row, or of 100x it when the
 * total needs a larger unit, so small rows read "0.01s" rather than "10ms". */
static const struct top_unit *pick_unit(const struct top *t, const struct top_row *items, size_t n)
{
	const struct top_unit *umin, *umax;
	int64_t min = 0, min100;
	bool time_mode = time_mode_of(t);

	for (size_t i = 0; i < n; i++) {
		int64_t v = items[i].self ? abs64(items[i].self) : abs64(items[i].total);

		if (v > 0 && (min == 0 || v < min))
			min = v;
	}
	if (!min)
		min = t->total;
	min100 = base_sat_mul(min, 100);
	umin = auto_unit(time_mode, min);
	umax = auto_unit(time_mode, t->total);
	if (umin != umax && min100 < t->total)
		umin = auto_unit(time_mode, min100);
	return umin;
}

/* "Time: Jan 2, 2006 at 3:04pm (MST)", Go's layout in local time. */
static void print_time(FILE *f, int64_t time_ns)
{
	time_t secs = (time_t)(time_ns / 1000000000);
	char buf[128];
	struct tm tm;

	if (localtime_r(&secs, &tm) &&
	    strftime(buf, sizeof(buf), "%b %-d, %Y at %-I:%M%P (%Z)", &tm))
		fprintf(f, "Time: %s\n", buf);
}

static void print_labels(const struct top *t, FILE *f, const struct top_unit *u)
{
	int64_t dur = profile__duration_ns(t->p);
	char dbuf[64], tbuf[64], pct[16];

	for (size_t i = 0; i < profile__n_comments(t->p); i++) {
		const char *c = profile__comment(t->p, i);

		if (c[0] != '#') /* pprof hides comments starting with '#' */
			fprintf(f, "%s\n", c);
	}
	print_type(t, f);
	if (profile__time_ns(t->p))
		print_time(f, profile__time_ns(t->p));
	if (!dur)
		return;
	format_value(dur, auto_unit(true, dur), dbuf, sizeof(dbuf));
	format_value(t->total, u, tbuf, sizeof(tbuf));
	if (time_mode_of(t) && t->total) {
		format_pct(t->total, dur, pct, sizeof(pct));
		fprintf(f, "Duration: %s, Total samples = %s (%s)\n", dbuf, tbuf, pct);
	} else {
		fprintf(f, "Duration: %s, Total samples = %s\n", dbuf, tbuf);
	}
}

static void print_rows(const struct top *t, FILE *f, const struct top_unit *u,
		       const struct top_row *items, size_t n)
{
	char flat[64], cum[64], fp[16], sp[16], cp[16];
	int64_t sum = 0;

	fprintf(f, "%10s %5s%% %5s%% %10s %5s%%\n", "flat", "flat", "sum", "cum", "cum");
	for (size_t i = 0; i < n; i++) {
		sum = base_sat_add(sum, items[i].self);
		format_value(items[i].self, u, flat, sizeof(flat));
		format_value(items[i].total, u, cum, sizeof(cum));
		format_pct(items[i].self, t->total, fp, sizeof(fp));
		format_pct(sum, t->total, sp, sizeof(sp));
		format_pct(items[i].total, t->total, cp, sizeof(cp));
		fprintf(f, "%10s %s %s %10s %s  ", flat, fp, sp, cum, cp);
		/* names come from outside (decoded profiles): keep one row per line */
		for (const unsigned char *c = (const unsigned char *)items[i].name; *c; c++)
			fputc(*c < 0x20 || *c == 0x7f ? '_' : *c, f);
		fputc('\n', f);
	}
}

static void print_table(const struct top *t, FILE *f, const struct top_row *items, size_t n,
			size_t max_rows)
{
	size_t shown = max_rows && max_rows < n ? max_rows : n;
	const struct top_unit *u = pick_unit(t, items, shown);
	char sum_s[64], total_s[64], pct[16];
	int64_t sum = 0;

	for (size_t i = 0; i < shown; i++)
		sum = base_sat_add(sum, items[i].self);
	print_labels(t, f, u);
	format_value(sum, u, sum_s, sizeof(sum_s));
	format_value(t->total, u, total_s, sizeof(total_s));
	format_pct(sum, t->total, pct, sizeof(pct));
	fprintf(f, "Showing nodes accounting for %s, %s of %s total\n", sum_s,
		pct + strspn(pct, " "), total_s);
	if (shown < n)
		fprintf(f, "Showing top %zu nodes out of %zu\n", shown, n);
	print_rows(t, f, u, items, shown);
}

int top_write(const struct profile *p, FILE *f, size_t max_rows)
{
	struct top *t = NULL;
	struct top_row *items = NULL;
	size_t n = 0;
	/* pprof's -top counts cpu time when the profile has any, else samples */
	int err = top__new(p, profile__total(p, 1) != 0, &t);

	if (!err)
		err = count_all(t) ?: top__rows(t, &items, &n);
	if (!err) {
		print_table(t, f, items, n, max_rows);
		if (fflush(f) != 0 || ferror(f))
			err = -EIO;
	}
	free(items);
	top__free(t);
	return err;
}
