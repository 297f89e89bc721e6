/*
 * The `go tool pprof -top` table, computed from the model without pprof:
 *
 *     Type: cpu
 *     Duration: 10s, Total samples = 1.98s (19.80%)
 *     Showing nodes accounting for 1.98s, 100% of 1.98s total
 *           flat  flat%   sum%        cum   cum%
 *          1.20s 60.61% 60.61%      1.20s 60.61%  main.hot
 *
 * Rows are functions by display name: an inlined callee is its own row (as in
 * pprof, without the _[i] suffix), kernel functions carry _[k]. flat is the value
 * of samples whose innermost frame is the function, cum the value of samples in
 * which it appears at least once. Values are cpu nanoseconds, or sample counts
 * when the profile has no time. Numbers are formatted the way pprof's
 * measurement package does (one unit for the whole table, chosen from the
 * smallest row and the total; "%.2f" with ".00" dropped; Go's Percentage).
 */
#include "profile_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct top_row {
	int64_t flat, cum;
	size_t stamp; /* 1 + index of the last sample counted into cum */
};

struct top {
	const struct profile *p;
	bool time_mode; /* values are cpu ns (else sample counts) */
	int64_t total;
	struct base_strtab names; /* row i is names.strs[i]; id 0 ("") unused */
	struct top_row *rows;
	size_t cap_rows;
	/*
	 * Row ids of each location's lines, named once per location rather than once
	 * per frame of every sample (a merged profile has millions of frames over tens
	 * of thousands of locations): loc_off[loc id] is 1 + the offset of its ids in
	 * loc_rows, 0 while unnamed.
	 */
	size_t *loc_off;
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

	if (id < 0 ||
	    base_grow((void **)&t->rows, &t->cap_rows, (size_t)id + 1, sizeof(*t->rows)))
		return -ENOMEM;
	if (t->cap_rows > old)
		memset(t->rows + old, 0, (t->cap_rows - old) * sizeof(*t->rows));
	return id;
}

/* The row ids of location id's lines (at least one), naming them on first use. */
static const size_t *loc_rows(struct top *t, uint64_t id, const struct profile_location *loc)
{
	char name[PROFILE_NAME_MAX];
	size_t n = loc->n_lines ? loc->n_lines : 1, at = t->n_loc_rows;

	if (t->loc_off[id])
		return &t->loc_rows[t->loc_off[id] - 1];
	if (base_grow((void **)&t->loc_rows, &t->cap_loc_rows, at + n, sizeof(*t->loc_rows)))
		return NULL;
	for (size_t l = 0; l < n; l++) {
		int64_t r = row_of(t, profile__frame_name_ex(t->p, loc, l, false, name, sizeof(name)));

		if (r < 0)
			return NULL;
		t->loc_rows[at + l] = (size_t)r;
	}
	t->n_loc_rows = at + n;
	t->loc_off[id] = at + 1;
	return &t->loc_rows[at];
}

/* Counts one sample: flat for its innermost frame, cum once per distinct function. */
static int count_sample(struct top *t, const struct profile_sample *s, size_t stamp)
{
	int64_t v = t->time_mode ? s->values[1] : s->values[0];
	struct profile_location loc;
	bool leaf = true;

	t->total = base_sat_add(t->total, abs64(v)); /* pprof's total is of |v| */
	for (size_t i = 0; i < s->n_locs; i++) {
		const size_t *ids;

		if (profile__get_location(t->p, s->locs[i], &loc))
			continue;
		if (!(ids = loc_rows(t, s->locs[i], &loc)))
			return -ENOMEM;
		for (size_t l = 0; l < (loc.n_lines ? loc.n_lines : 1); l++) {
			struct top_row *r = &t->rows[ids[l]];

			if (leaf)
				r->flat = base_sat_add(r->flat, v);
			leaf = false;
			if (r->stamp != stamp)
				r->cum = base_sat_add(r->cum, v);
			r->stamp = stamp;
		}
	}
	return 0;
}

static int count_all(struct top *t)
{
	struct profile_sample s;
	int err = 0;

	t->time_mode = profile__total(t->p, 1) != 0;
	for (size_t i = 0; i < profile__n_samples(t->p) && !err; i++)
		if (profile__sample(t->p, i, &s) == 0)
			err = count_sample(t, &s, i + 1);
	return err;
}

struct top_item {
	const char *name; /* borrowed from top.names */
	int64_t flat, cum;
};

static int item_cmp(const void *va, const void *vb)
{
	const struct top_item *a = va, *b = vb;

	if (a->flat != b->flat)
		return a->flat > b->flat ? -1 : 1;
	if (a->cum != b->cum)
		return a->cum > b->cum ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* The rows as a sorted array of items; *n of them. */
static struct top_item *sorted_items(const struct top *t, size_t *n)
{
	struct top_item *items = calloc(t->names.n ? t->names.n : 1, sizeof(*items));

	*n = 0;
	if (!items)
		return NULL;
	for (size_t id = 1; id < t->names.n; id++)
		items[(*n)++] =
		    (struct top_item){t->names.strs[id], t->rows[id].flat, t->rows[id].cum};
	if (*n > 1)
		qsort(items, *n, sizeof(*items), item_cmp);
	return items;
}

/* pprof's selectOutputUnit: the unit of the smallest row, or of 100x it when the
 * total needs a larger unit, so small rows read "0.01s" rather than "10ms". */
static const struct top_unit *pick_unit(const struct top *t, const struct top_item *items, size_t n)
{
	const struct top_unit *umin, *umax;
	int64_t min = 0, min100;

	for (size_t i = 0; i < n; i++) {
		int64_t v = items[i].flat ? abs64(items[i].flat) : abs64(items[i].cum);

		if (v > 0 && (min == 0 || v < min))
			min = v;
	}
	if (!min)
		min = t->total;
	if (__builtin_mul_overflow(min, 100, &min100))
		min100 = INT64_MAX;
	umin = auto_unit(t->time_mode, min);
	umax = auto_unit(t->time_mode, t->total);
	if (umin != umax && min100 < t->total)
		umin = auto_unit(t->time_mode, min100);
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
	fprintf(f, "Type: %s\n", t->time_mode ? "cpu" : "samples");
	if (profile__time_ns(t->p))
		print_time(f, profile__time_ns(t->p));
	if (!dur)
		return;
	format_value(dur, auto_unit(true, dur), dbuf, sizeof(dbuf));
	format_value(t->total, u, tbuf, sizeof(tbuf));
	if (t->time_mode && t->total) {
		format_pct(t->total, dur, pct, sizeof(pct));
		fprintf(f, "Duration: %s, Total samples = %s (%s)\n", dbuf, tbuf, pct);
	} else {
		fprintf(f, "Duration: %s, Total samples = %s\n", dbuf, tbuf);
	}
}

static void print_rows(const struct top *t, FILE *f, const struct top_unit *u,
		       const struct top_item *items, size_t n)
{
	char flat[64], cum[64], fp[16], sp[16], cp[16];
	int64_t sum = 0;

	fprintf(f, "%10s %5s%% %5s%% %10s %5s%%\n", "flat", "flat", "sum", "cum", "cum");
	for (size_t i = 0; i < n; i++) {
		sum = base_sat_add(sum, items[i].flat);
		format_value(items[i].flat, u, flat, sizeof(flat));
		format_value(items[i].cum, u, cum, sizeof(cum));
		format_pct(items[i].flat, t->total, fp, sizeof(fp));
		format_pct(sum, t->total, sp, sizeof(sp));
		format_pct(items[i].cum, t->total, cp, sizeof(cp));
		fprintf(f, "%10s %s %s %10s %s  ", flat, fp, sp, cum, cp);
		/* names come from outside (decoded profiles): keep one row per line */
		for (const unsigned char *c = (const unsigned char *)items[i].name; *c; c++)
			fputc(*c < 0x20 || *c == 0x7f ? '_' : *c, f);
		fputc('\n', f);
	}
}

static void print_table(const struct top *t, FILE *f, const struct top_item *items, size_t n,
			size_t max_rows)
{
	size_t shown = max_rows && max_rows < n ? max_rows : n;
	const struct top_unit *u = pick_unit(t, items, shown);
	char sum_s[64], total_s[64], pct[16];
	int64_t sum = 0;

	for (size_t i = 0; i < shown; i++)
		sum = base_sat_add(sum, items[i].flat);
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
	struct top t = {.p = p};
	struct top_item *items = NULL;
	size_t n = 0;
	int err = base_strtab__init(&t.names);

	t.loc_off = calloc(profile__n_locations(p) + 1, sizeof(*t.loc_off));
	if (!err && !t.loc_off)
		err = -ENOMEM;
	if (!err)
		err = count_all(&t);
	if (!err) {
		items = sorted_items(&t, &n);
		err = items ? 0 : -ENOMEM;
	}
	if (!err) {
		print_table(&t, f, items, n, max_rows);
		if (fflush(f) != 0 || ferror(f))
			err = -EIO;
	}
	free(items);
	free(t.rows);
	free(t.loc_off);
	free(t.loc_rows);
	base_strtab__fini(&t.names);
	return err;
}
