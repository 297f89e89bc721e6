/*
 * Tests of src/profile: the interned model, pprof encode/decode (checked against
 * the real `go tool pprof`), folded stacks, the SVG flame graph (checked with
 * xmllint and a headless Chromium) and the top table.
 *
 * Most tests use one fixture with a known 60/30/10 split:
 *     app;main;hot;helper_[i]          60 samples  600 ms   (helper inlined into hot)
 *     app;main;warm                    30 samples  300 ms
 *     main;cold;do_syscall_64_[k]      10 samples  100 ms   (no process label)
 */
#include "unit.h"

#include "profile/profile.h"
#include "profile.pb-c.h"

#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define MS 1000000LL

struct fixture {
	struct profile *p;
	uint64_t map_app, map_k;
	uint64_t f_main, f_hot, f_helper, f_warm, f_cold, f_sys;
	uint64_t l_main, l_hot, l_warm, l_cold, l_sys;
};

static int add(struct profile *p, const uint64_t *locs, size_t n, int64_t count,
	       const struct profile_label *labels, size_t n_labels)
{
	int64_t v[PROFILE_N_VALUES] = {count, count * 10 * MS};

	return profile__add_sample(p, locs, n, v, labels, n_labels);
}

static uint64_t loc1(struct profile *p, uint64_t map, uint64_t addr, uint64_t fn, int64_t line)
{
	struct profile_line l = {fn, line};

	return profile__location(p, map, addr, &l, 1);
}

/* The 60/30/10 profile of the file comment; false on failure. */
static bool fixture_init(struct fixture *x)
{
	struct profile_line hot_lines[2];
	struct profile_label app[2] = {{"process", "app", 0}, {"pid", NULL, 42}};
	struct profile *p = x->p = profile__new(10 * MS);

	if (!p)
		return false;
	profile__set_time(p, 1700000000LL * 1000000000LL, 10000 * MS);
	x->map_app = profile__mapping(p, 0x400000, 0x500000, 0, "/usr/bin/app", "abcdef01");
	x->map_k = profile__mapping(p, 0xffffffff81000000ull, 0xffffffff82000000ull, 0,
				    PROFILE_KERNEL_MAPPING, NULL);
	x->f_main = profile__function(p, "main", "main", "app.c");
	x->f_hot = profile__function(p, "hot", "_Z3hotv", "app.c");
	x->f_helper = profile__function(p, "helper", "_Z6helperv", "util.h");
	x->f_warm = profile__function(p, "warm", NULL, "app.c");
	x->f_cold = profile__function(p, "cold", NULL, NULL);
	x->f_sys = profile__function(p, "do_syscall_64", NULL, NULL);
	hot_lines[0] = (struct profile_line){x->f_helper, 5};
	hot_lines[1] = (struct profile_line){x->f_hot, 20};
	x->l_main = loc1(p, x->map_app, 0x401000, x->f_main, 10);
	x->l_hot = profile__location(p, x->map_app, 0x402000, hot_lines, 2);
	x->l_warm = loc1(p, x->map_app, 0x403000, x->f_warm, 30);
	x->l_cold = loc1(p, x->map_app, 0x404000, x->f_cold, 40);
	x->l_sys = loc1(p, x->map_k, 0xffffffff81001000ull, x->f_sys, 0);
	if (!x->l_main || !x->l_hot || !x->l_warm || !x->l_cold || !x->l_sys)
		return false;
	return add(p, (uint64_t[]){x->l_hot, x->l_main}, 2, 60, app, 2) == 0 &&
	       add(p, (uint64_t[]){x->l_warm, x->l_main}, 2, 30, app, 2) == 0 &&
	       add(p, (uint64_t[]){x->l_sys, x->l_cold, x->l_main}, 3, 10, NULL, 0) == 0 &&
	       profile__add_comment(p, "dropped 0 samples") == 0;
}

/* ---- small helpers ---- */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
			buf[n] = '\0';
			if (len)
				*len = (size_t)n;
		} else {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}

/* Runs a writer into a memory string (malloc'd, NUL-terminated); NULL on failure. */
#define CAPTURE(out, call)                                                                         \
	do {                                                                                       \
		size_t cap_len_ = 0;                                                               \
		FILE *cap_f_ = open_memstream(&(out), &cap_len_);                                  \
		int cap_err_ = cap_f_ ? (call) : -ENOMEM;                                          \
		if (cap_f_)                                                                        \
			fclose(cap_f_);                                                            \
		if (cap_err_) {                                                                    \
			free(out);                                                                 \
			(out) = NULL;                                                              \
		}                                                                                  \
	} while (0)

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *s = hay; (s = strstr(s, needle)); s += strlen(needle))
		n++;
	return n;
}

/* Writes a string to tmp/name; returns the path in a static buffer, NULL on failure. */
static const char *write_tmp(const char *name, const void *data, size_t len)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", unit_tmp_dir(), name);
	f = fopen(path, "wb");
	if (!f)
		return NULL;
	if (fwrite(data, 1, len, f) != len) {
		fclose(f);
		return NULL;
	}
	return fclose(f) == 0 ? path : NULL;
}

/* Runs a shell command with stdout and stderr into files; its exit status or -1. */
static int run(const char *cmd, char **out, char **err)
{
	char full[4096], op[512], ep[512];
	int st;

	snprintf(op, sizeof(op), "%s/cmd.out", unit_tmp_dir());
	snprintf(ep, sizeof(ep), "%s/cmd.err", unit_tmp_dir());
	snprintf(full, sizeof(full), "%s >'%s' 2>'%s'", cmd, op, ep);
	st = system(full);
	*out = slurp(op, NULL);
	*err = slurp(ep, NULL);
	if (st == -1 || !WIFEXITED(st) || !*out || !*err)
		return -1;
	return WEXITSTATUS(st);
}

static bool have(const char *tool)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

/* gzip-inflates a pprof into a malloc'd raw profile.proto. */
static uint8_t *gunzip_all(const uint8_t *in, size_t n, size_t *out_len)
{
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z_stream z = {0};
	int zr;

	if (!out || inflateInit2(&z, 15 + 16) != Z_OK) {
		free(out);
		return NULL;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	zr = inflate(&z, Z_FINISH);
	*out_len = z.total_out;
	inflateEnd(&z);
	if (zr != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	return out;
}

/* The fixture as an unpacked message, to be broken by a test. */
static Perftools__Profiles__Profile *fixture_message(void)
{
	struct fixture x = {0};
	Perftools__Profiles__Profile *m = NULL;
	uint8_t *gz = NULL, *raw = NULL;
	size_t gz_len = 0, raw_len = 0;

	if (fixture_init(&x) && pprof_encode(x.p, &gz, &gz_len) == 0 &&
	    (raw = gunzip_all(gz, gz_len, &raw_len)))
		m = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	free(raw);
	free(gz);
	profile__free(x.p);
	return m;
}

/* Packs m raw (no gzip) and decodes it; the decoder's return code. */
static int decode_message(const Perftools__Profiles__Profile *m, char *err, size_t errlen)
{
	size_t n = perftools__profiles__profile__get_packed_size(m);
	uint8_t *buf = malloc(n ? n : 1);
	struct profile *p = NULL;
	int r = -ENOMEM;

	if (buf) {
		perftools__profiles__profile__pack(m, buf);
		r = pprof_decode(buf, n, &p, err, errlen);
	}
	profile__free(p);
	free(buf);
	return r;
}

static bool folded_grammar_ok(const char *text);

/* ---- the model ---- */

TEST(intern_dedups_everything)
{
	struct profile *p = profile__new(MS);
	struct profile_line l = {0, 7};
	struct profile_mapping m;
	struct profile_function f;
	struct profile_location loc;
	uint64_t m1, m2, m3, f1, f2, f3, l1, l2, l3;

	CHECK(p);
	m1 = profile__mapping(p, 0x1000, 0x2000, 0x100, "/lib/x.so", "bid");
	m2 = profile__mapping(p, 0x1000, 0x2000, 0x100, "/lib/x.so", "bid");
	m3 = profile__mapping(p, 0x1000, 0x2000, 0x100, "/lib/x.so", NULL);
	CHECK(m1 == 1 && m2 == 1 && m3 == 2);
	f1 = profile__function(p, "foo", "_Z3foov", "x.c");
	f2 = profile__function(p, "foo", "_Z3foov", "x.c");
	f3 = profile__function(p, "foo", NULL, "x.c");
	CHECK(f1 == 1 && f2 == 1 && f3 == 2);
	l.function_id = f1;
	l1 = profile__location(p, m1, 0x1234, &l, 1);
	l.function_id = f3; /* same key: these lines are ignored */
	l2 = profile__location(p, m1, 0x1234, &l, 1);
	l3 = profile__location(p, m3, 0x1234, &l, 1);
	CHECK(l1 == 1 && l2 == 1 && l3 == 2);
	CHECK(profile__n_locations(p) == 2 && profile__n_functions(p) == 2 &&
	      profile__n_mappings(p) == 2);
	CHECK(profile__get_location(p, l1, &loc) == 0);
	CHECK(loc.mapping_id == m1 && loc.address == 0x1234 && loc.n_lines == 1);
	CHECK(loc.lines[0].function_id == f1 && loc.lines[0].line == 7);
	CHECK(profile__get_mapping(p, m1, &m) == 0);
	CHECK(m.start == 0x1000 && m.limit == 0x2000 && m.offset == 0x100 && !m.is_kernel);
	CHECK_STREQ(m.file, "/lib/x.so");
	CHECK_STREQ(m.build_id, "bid");
	CHECK(profile__get_mapping(p, m3, &m) == 0);
	CHECK_STREQ(m.build_id, "");
	CHECK(profile__get_function(p, f3, &f) == 0);
	CHECK_STREQ(f.name, "foo");
	CHECK_STREQ(f.system_name, "");
	CHECK_STREQ(f.filename, "x.c");
	/* unknown ids */
	CHECK(profile__get_location(p, 0, &loc) == -ENOENT);
	CHECK(profile__get_location(p, 3, &loc) == -ENOENT);
	CHECK(profile__get_function(p, 9, &f) == -ENOENT);
	CHECK(profile__get_mapping(p, 9, &m) == -ENOENT);
	CHECK(profile__location(p, 77, 0x1, NULL, 0) == 0);
	l.function_id = 99;
	CHECK(profile__location(p, m1, 0x5, &l, 1) == 0);
	CHECK(profile__get_mapping(p, profile__mapping(p, 0, 0, 0, PROFILE_KERNEL_MAPPING, NULL),
				   &m) == 0 &&
	      m.is_kernel);
cleanup:
	profile__free(p);
}

TEST(samples_merge_by_stack_and_label_set)
{
	struct profile *p = profile__new(MS);
	struct profile_label ab[2] = {{"a", "1", 0}, {"b", NULL, 2}};
	struct profile_label ba[2] = {{"b", NULL, 2}, {"a", "1", 0}};
	struct profile_label other[2] = {{"b", NULL, 3}, {"a", "1", 0}};
	int64_t v1[2] = {1, 10}, v2[2] = {2, 20};
	struct profile_sample s;
	uint64_t locs[2];

	CHECK(p);
	locs[0] = profile__location(p, 0, 0x10, NULL, 0);
	locs[1] = profile__location(p, 0, 0x20, NULL, 0);
	CHECK(locs[0] == 1 && locs[1] == 2);
	CHECK(profile__add_sample(p, locs, 2, v1, ab, 2) == 0);
	CHECK(profile__add_sample(p, locs, 2, v2, ba, 2) == 0); /* label order does not matter */
	CHECK(profile__n_samples(p) == 1);
	CHECK(profile__add_sample(p, locs, 2, v1, other, 2) == 0);
	CHECK(profile__add_sample(p, locs, 1, v1, ab, 2) == 0);
	CHECK(profile__add_sample(p, locs, 2, v1, NULL, 0) == 0);
	CHECK(profile__n_samples(p) == 4);
	CHECK(profile__sample(p, 0, &s) == 0);
	CHECK(s.values[0] == 3 && s.values[1] == 30 && s.n_locs == 2 && s.n_labels == 2);
	CHECK(s.locs[0] == 1 && s.locs[1] == 2);
	CHECK_STREQ(s.labels[0].key, "a");
	CHECK_STREQ(s.labels[0].str, "1");
	CHECK(s.labels[1].str == NULL && s.labels[1].num == 2);
	CHECK(profile__total(p, 0) == 6 && profile__total(p, 1) == 60);
	CHECK(profile__total(p, 2) == 0 && profile__total(p, -1) == 0);
	/* errors */
	locs[1] = 9;
	CHECK(profile__add_sample(p, locs, 2, v1, NULL, 0) == -EINVAL);
	locs[1] = 0;
	CHECK(profile__add_sample(p, locs, 2, v1, NULL, 0) == -EINVAL);
	CHECK(profile__sample(p, 4, &s) == -ENOENT);
cleanup:
	profile__free(p);
}

/* Adds the same distinct samples to p with add (1) or append (0). */
static int add_distinct(struct profile *p, bool add)
{
	struct profile_label x[2] = {{"pid", NULL, 7}, {"comm", "x", 0}};
	struct profile_label y[1] = {{"comm", "y", 0}};
	int64_t v[2] = {3, 30};
	uint64_t l[3];
	int e = 0;

	for (int i = 0; i < 3; i++)
		l[i] = profile__location(p, 0, 0x10 * (i + 1), NULL, 0);
	/* runs of one label set, as a merge makes them, then a change and back */
	for (int i = 0; !e && i < 3; i++)
		e = add ? profile__add_sample(p, l, i + 1, v, x, 2)
			: profile__append_sample(p, l, i + 1, v, x, 2);
	for (int i = 0; !e && i < 3; i++)
		e = add ? profile__add_sample(p, &l[i], 1, v, y, 1)
			: profile__append_sample(p, &l[i], 1, v, y, 1);
	if (!e)
		e = add ? profile__add_sample(p, &l[2], 1, v, x, 2)
			: profile__append_sample(p, &l[2], 1, v, x, 2);
	if (!e)
		e = add ? profile__add_sample(p, &l[1], 1, v, NULL, 0)
			: profile__append_sample(p, &l[1], 1, v, NULL, 0);
	return e;
}

TEST(append_sample_makes_what_add_sample_makes)
{
	struct profile *a = profile__new(MS), *b = profile__new(MS);
	struct profile_label xr[2] = {{"comm", "x", 0}, {"pid", NULL, 7}};
	uint8_t *ba = NULL, *bb = NULL;
	size_t la, lb;
	int64_t v[2] = {1, 10};
	uint64_t loc = 1, bad = 9;
	struct profile_sample s;

	CHECK(a && b);
	CHECK(add_distinct(a, true) == 0 && add_distinct(b, false) == 0);
	CHECK(profile__n_samples(a) == 8 && profile__n_samples(b) == 8);
	CHECK(pprof_encode(a, &ba, &la) == 0 && pprof_encode(b, &bb, &lb) == 0);
	CHECK(la == lb && memcmp(ba, bb, la) == 0);
	/* a later add finds an appended sample (labels in another order too) */
	CHECK(profile__add_sample(b, &loc, 1, v, xr, 2) == 0);
	CHECK(profile__n_samples(b) == 8);
	CHECK(profile__sample(b, 0, &s) == 0 && s.values[0] == 4 && s.values[1] == 40);
	CHECK(s.n_labels == 2 && strcmp(s.labels[0].key, "comm") == 0);
	/* and an append after an add is indexed too */
	CHECK(profile__append_sample(b, &bad, 1, v, NULL, 0) == -EINVAL);
	CHECK(profile__append_sample(b, &loc, 1, v, (struct profile_label[]){{NULL, "v", 0}}, 1) ==
	      -EINVAL);
	CHECK(profile__n_samples(b) == 8);
	loc = 3;
	CHECK(profile__append_sample(b, &loc, 1, v, NULL, 0) == 0);
	CHECK(profile__add_sample(b, &loc, 1, v, NULL, 0) == 0);
	CHECK(profile__n_samples(b) == 9);
	CHECK(profile__sample(b, 8, &s) == 0 && s.values[0] == 2 && s.n_labels == 0);
cleanup:
	free(ba);
	free(bb);
	profile__free(a);
	profile__free(b);
}

/* A merge's way: each sample's locations written into the room (a location added
 * meanwhile), then appended from there. */
TEST(samples_written_into_the_room_make_the_same_profile)
{
	struct profile *a = profile__new(MS), *b = profile__new(MS);
	struct profile_label x[1] = {{"comm", "x", 0}};
	uint8_t *ba = NULL, *bb = NULL;
	size_t la, lb;
	int64_t v[2] = {1, 10};
	uint64_t *room, *old, l[4];
	struct profile_sample s;

	CHECK(a && b);
	for (size_t n = 1; n <= 4; n++) {
		l[n - 1] = profile__location(a, 0, 0x10 * n, NULL, 0);
		CHECK(profile__add_sample(a, l, n, v, x, 1) == 0);
		room = profile__sample_locs_room(b, n);
		CHECK(room);
		for (size_t i = 0; i + 1 < n; i++)
			room[i] = l[i];
		room[n - 1] = profile__location(b, 0, 0x10 * n, NULL, 0);
		CHECK(profile__append_sample(b, room, n, v, x, 1) == 0);
		/* the sample keeps the room's memory: nothing was copied */
		CHECK(profile__sample(b, n - 1, &s) == 0 && s.locs == room && s.n_locs == n);
	}
	CHECK(pprof_encode(a, &ba, &la) == 0 && pprof_encode(b, &bb, &lb) == 0);
	CHECK(la == lb && memcmp(ba, bb, la) == 0);
	/* more ids than the room holds */
	room = profile__sample_locs_room(b, 1);
	CHECK(room);
	room[0] = l[0];
	CHECK(profile__append_sample(b, room, 2, v, NULL, 0) == -EINVAL);
	CHECK(profile__n_samples(b) == 4);
	/* an add that sums into an existing sample leaves the room; the next append takes it */
	room = profile__sample_locs_room(b, 2);
	CHECK(room);
	room[0] = l[0];
	CHECK(profile__add_sample(b, room, 1, v, x, 1) == 0);
	CHECK(profile__n_samples(b) == 4);
	room[0] = l[1];
	CHECK(profile__add_sample(b, room, 1, v, NULL, 0) == 0);
	CHECK(profile__sample(b, 4, &s) == 0 && s.locs == room && s.locs[0] == l[1]);
	/* once a sample is added the room is gone: its old pointer is copied from */
	old = room;
	room = profile__sample_locs_room(b, 1);
	CHECK(room && room != old);
	room[0] = l[2];
	l[3] = l[0];
	CHECK(profile__append_sample(b, &l[3], 1, v, NULL, 0) == 0);
	CHECK(profile__append_sample(b, room, 1, v, NULL, 0) == 0);
	CHECK(profile__sample(b, 5, &s) == 0 && s.locs[0] == l[0] && s.locs == room);
	CHECK(profile__sample(b, 6, &s) == 0 && s.locs[0] == l[0] && s.locs != room);
	CHECK(profile__sample(b, 0, &s) == 0 && s.values[0] == 2);
cleanup:
	free(ba);
	free(bb);
	profile__free(a);
	profile__free(b);
}

TEST(sample_values_saturate)
{
	struct profile *p = profile__new(MS);
	int64_t big[2] = {INT64_MAX, INT64_MIN}, one[2] = {1, -1};
	uint64_t loc;

	CHECK(p);
	loc = profile__location(p, 0, 0x10, NULL, 0);
	CHECK(profile__add_sample(p, &loc, 1, big, NULL, 0) == 0);
	CHECK(profile__add_sample(p, &loc, 1, one, NULL, 0) == 0);
	CHECK(profile__add_sample(p, &loc, 1, big, NULL, 0) == 0);
	CHECK(profile__total(p, 0) == INT64_MAX && profile__total(p, 1) == INT64_MIN);
cleanup:
	profile__free(p);
}

TEST(model_grows_to_many_entries)
{
	struct profile *p = profile__new(MS);
	char name[32];
	int64_t v[2] = {1, 1};

	CHECK(p);
	for (uint64_t i = 0; i < 20000; i++) {
		uint64_t f, l;

		snprintf(name, sizeof(name), "fn%" PRIu64, i % 5000);
		f = profile__function(p, name, NULL, NULL);
		l = loc1(p, 0, 0x1000 + i, f, 1);
		CHECK(f == i % 5000 + 1 && l == i + 1);
		CHECK(profile__add_sample(p, &l, 1, v, NULL, 0) == 0);
		CHECK(profile__add_sample(p, &l, 1, v, NULL, 0) == 0);
	}
	CHECK(profile__n_functions(p) == 5000 && profile__n_locations(p) == 20000);
	CHECK(profile__n_samples(p) == 20000 && profile__total(p, 0) == 40000);
cleanup:
	profile__free(p);
}

TEST(frame_names)
{
	struct fixture x = {0};
	struct profile_location loc;
	char buf[128], tiny[5];
	uint64_t id;

	CHECK(fixture_init(&x));
	CHECK(profile__get_location(x.p, x.l_main, &loc) == 0);
	CHECK_STREQ(profile__frame_name(x.p, &loc, 0, buf, sizeof(buf)), "main");
	CHECK(profile__get_location(x.p, x.l_hot, &loc) == 0);
	CHECK_STREQ(profile__frame_name(x.p, &loc, 0, buf, sizeof(buf)),
		    "helper" PROFILE_INLINE_SUFFIX);
	CHECK_STREQ(profile__frame_name(x.p, &loc, 1, buf, sizeof(buf)), "hot");
	CHECK(profile__get_location(x.p, x.l_sys, &loc) == 0);
	CHECK_STREQ(profile__frame_name(x.p, &loc, 0, buf, sizeof(buf)),
		    "do_syscall_64" PROFILE_KERNEL_SUFFIX);
	/* unsymbolized: file offset = address - start + offset */
	id = profile__mapping(x.p, 0x7f0000001000, 0x7f0000009000, 0x3000, "/lib/libc.so.6", NULL);
	CHECK(profile__get_location(x.p, profile__location(x.p, id, 0x7f0000001234, NULL, 0),
				    &loc) == 0);
	CHECK_STREQ(profile__frame_name(x.p, &loc, 0, buf, sizeof(buf)), "libc.so.6+0x3234");
	CHECK(profile__get_location(x.p, profile__location(x.p, 0, 0xdeadbeef, NULL, 0), &loc) ==
	      0);
	CHECK_STREQ(profile__frame_name(x.p, &loc, 0, buf, sizeof(buf)), "0xdeadbeef");
	CHECK(profile__frame_name(x.p, &loc, 0, tiny, sizeof(tiny)) == tiny);
	CHECKF(strcmp(tiny, "0xde") == 0, "got %s", tiny);
cleanup:
	profile__free(x.p);
}

/* ---- pprof ---- */

/* Folded output, totals, times and comments of two profiles agree. */
static bool same_profile(const struct profile *a, const struct profile *b)
{
	char *fa = NULL, *fb = NULL;
	bool same;

	CAPTURE(fa, folded_write(a, cap_f_));
	CAPTURE(fb, folded_write(b, cap_f_));
	same = fa && fb && strcmp(fa, fb) == 0 && profile__total(a, 0) == profile__total(b, 0) &&
	       profile__total(a, 1) == profile__total(b, 1) &&
	       profile__time_ns(a) == profile__time_ns(b) &&
	       profile__duration_ns(a) == profile__duration_ns(b) &&
	       profile__period_ns(a) == profile__period_ns(b) &&
	       profile__n_samples(a) == profile__n_samples(b) &&
	       profile__n_comments(a) == profile__n_comments(b);
	free(fa);
	free(fb);
	return same;
}

TEST(pprof_round_trip)
{
	struct fixture x = {0};
	struct profile *back = NULL;
	struct profile_sample s;
	struct profile_location loc;
	struct profile_mapping m;
	struct profile_function f;
	uint8_t *buf = NULL;
	size_t len = 0;
	char err[256];

	CHECK(fixture_init(&x));
	CHECK(pprof_encode(x.p, &buf, &len) == 0);
	CHECK(len > 20 && buf[0] == 0x1f && buf[1] == 0x8b);
	CHECKF(pprof_decode(buf, len, &back, err, sizeof(err)) == 0, "%s", err);
	CHECK(same_profile(x.p, back));
	CHECK_STREQ(profile__comment(back, 0), "dropped 0 samples");
	CHECK(profile__sample(back, 0, &s) == 0 && s.n_labels == 2 && s.values[0] == 60);
	CHECK_STREQ(s.labels[0].key, "pid");
	CHECK(s.labels[0].str == NULL && s.labels[0].num == 42);
	CHECK_STREQ(s.labels[1].str, "app");
	CHECK(profile__get_location(back, s.locs[0], &loc) == 0 && loc.n_lines == 2);
	CHECK(loc.address == 0x402000 && loc.lines[1].line == 20);
	CHECK(profile__get_function(back, loc.lines[0].function_id, &f) == 0);
	CHECK_STREQ(f.name, "helper");
	CHECK_STREQ(f.system_name, "_Z6helperv");
	CHECK_STREQ(f.filename, "util.h");
	CHECK(profile__get_mapping(back, loc.mapping_id, &m) == 0);
	CHECK(m.start == 0x400000 && m.limit == 0x500000);
	CHECK_STREQ(m.file, "/usr/bin/app");
	CHECK_STREQ(m.build_id, "abcdef01");
cleanup:
	free(buf);
	profile__free(back);
	profile__free(x.p);
}

TEST(pprof_empty_profile_round_trips)
{
	struct profile *p = profile__new(MS), *back = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	char err[256];

	CHECK(p);
	CHECK(pprof_encode(p, &buf, &len) == 0);
	CHECKF(pprof_decode(buf, len, &back, err, sizeof(err)) == 0, "%s", err);
	CHECK(profile__n_samples(back) == 0 && profile__period_ns(back) == MS);
cleanup:
	free(buf);
	profile__free(back);
	profile__free(p);
}

/* `go tool pprof ARGS FILE` in a scratch HOME with no network; 0 when it ran cleanly. */
static int go_pprof(const char *args, const char *file, char **out, char **err)
{
	char cmd[2048];
	const char *t = unit_tmp_dir();

	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/home' '%s/gocache' && cd '%s' && env HOME='%s/home' GOPROXY=off "
		 "GOFLAGS=-mod=mod GOCACHE='%s/gocache' GOTOOLCHAIN=local PPROF_TMPDIR='%s' "
		 "go tool pprof %s '%s'",
		 t, t, t, t, t, t, args, file);
	return run(cmd, out, err);
}

TEST(go_tool_pprof_reads_our_pprof)
{
	struct fixture x = {0};
	uint8_t *buf = NULL;
	size_t len = 0;
	char *out = NULL, *err = NULL;
	const char *path;
	int st;

	CHECKF(have("go"), "go is not installed (golang-go); this test needs go tool pprof");
	CHECK(fixture_init(&x));
	CHECK(pprof_encode(x.p, &buf, &len) == 0);
	CHECK((path = write_tmp("fixture.pb.gz", buf, len)));
	st = go_pprof("-raw", path, &out, &err);
	CHECKF(st == 0, "exit %d, stderr: %s", st, err ? err : "");
	CHECKF(!strstr(err, "arning"), "stderr: %s", err);
	CHECKF(strstr(out, "PeriodType: cpu nanoseconds") &&
		   strstr(out, "samples/count cpu/nanoseconds"),
	       "%s", out);
	CHECKF(strstr(out, "60  600000000: ") && strstr(out, "30  300000000: ") &&
		   strstr(out, "10  100000000: "),
	       "%s", out);
	CHECKF(strstr(out, " main ") && strstr(out, " helper ") && strstr(out, " do_syscall_64 "),
	       "%s", out);
	CHECKF(strstr(out, "process:[app]") && strstr(out, "pid:[42]"), "%s", out);
	CHECKF(strstr(out, "/usr/bin/app") && strstr(out, "abcdef01"), "%s", out);
	free(out), free(err), out = err = NULL;
	st = go_pprof("-top", path, &out, &err);
	CHECKF(st == 0 && !strstr(err, "arning"), "exit %d, stderr: %s", st, err ? err : "");
	CHECKF(strstr(out, "Type: cpu") && strstr(out, "dropped 0 samples"), "%s", out);
cleanup:
	free(out);
	free(err);
	free(buf);
	profile__free(x.p);
}

/* The line of text starting with prefix, copied into line (without the newline). */
static bool line_with(const char *text, const char *prefix, char *line, size_t len)
{
	const char *s = strstr(text, prefix);
	size_t n;

	if (!s)
		return false;
	n = strcspn(s, "\n");
	snprintf(line, len, "%.*s", (int)n, s);
	return true;
}

/* Our top table and go tool pprof -top agree on the header and on every row's numbers
 * (pprof sorts ties by name and has no _[k]/(inline) convention of ours: rows are
 * matched by name). */
TEST(top_matches_go_tool_pprof)
{
	static const char *names[] = {"helper", "warm", "do_syscall_64", "main", "hot", "cold"};
	struct fixture x = {0};
	uint8_t *buf = NULL;
	size_t len = 0;
	char *out = NULL, *err = NULL, *ours = NULL, a[256], b[256];
	const char *path;

	CHECKF(have("go"), "go is not installed (golang-go); this test needs go tool pprof");
	CHECK(fixture_init(&x));
	CHECK(pprof_encode(x.p, &buf, &len) == 0);
	CHECK((path = write_tmp("top.pb.gz", buf, len)));
	CHECK(go_pprof("-top", path, &out, &err) == 0);
	CAPTURE(ours, top_write(x.p, cap_f_, 0));
	CHECK(ours);
	CHECK(line_with(out, "Duration:", a, sizeof(a)) &&
	      line_with(ours, "Duration:", b, sizeof(b)));
	CHECKF(strcmp(a, b) == 0, "pprof \"%s\" vs ours \"%s\"", a, b);
	CHECK(line_with(out, "Showing nodes", a, sizeof(a)) &&
	      line_with(ours, "Showing nodes", b, sizeof(b)));
	CHECKF(strcmp(a, b) == 0, "pprof \"%s\" vs ours \"%s\"", a, b);
	CHECK(line_with(out, "      flat", a, sizeof(a)) &&
	      line_with(ours, "      flat", b, sizeof(b)));
	CHECKF(strcmp(a, b) == 0, "pprof \"%s\" vs ours \"%s\"", a, b);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char want[64], *row;

		/* the numeric columns end 2 spaces before the name */
		snprintf(want, sizeof(want), "  %s\n", names[i]);
		row = strstr(out, want);
		if (!row) {
			snprintf(want, sizeof(want), "  %s (inline)\n", names[i]);
			row = strstr(out, want);
		}
		CHECKF(row, "no row for %s in:\n%s", names[i], out);
		while (row > out && row[-1] != '\n')
			row--;
		snprintf(a, sizeof(a), "%.*s", (int)(strstr(row, want) - row), row);
		/* pprof's sum% depends on its order; compare flat, flat%, cum, cum% */
		snprintf(want, sizeof(want), "  %s%s\n", names[i],
			 strcmp(names[i], "do_syscall_64") == 0 ? PROFILE_KERNEL_SUFFIX : "");
		row = strstr(ours, want);
		CHECKF(row, "no row for %s in:\n%s", names[i], ours);
		while (row > ours && row[-1] != '\n')
			row--;
		snprintf(b, sizeof(b), "%.*s", (int)(strstr(row, want) - row), row);
		CHECKF(strncmp(a, b, 17) == 0 && strcmp(a + 24, b + 24) == 0,
		       "pprof \"%s\" vs ours \"%s\"", a, b);
	}
cleanup:
	free(ours);
	free(out);
	free(err);
	free(buf);
	profile__free(x.p);
}

/* A CPU profile written by Go's runtime/pprof (tests/unit/data/profile/go_cpu.pb.gz,
 * with go tool pprof -top's output beside it) decodes, and our top table prints the
 * same numbers from "Duration:" on. */
TEST(decode_go_runtime_profile)
{
	char path[512], *gz = NULL, *want = NULL, *ours = NULL, *folded = NULL;
	struct profile *p = NULL;
	size_t len = 0;
	char err[256];

	snprintf(path, sizeof(path), "%s/profile/go_cpu.pb.gz", unit_data_dir());
	CHECKF((gz = slurp(path, &len)), "cannot read %s", path);
	snprintf(path, sizeof(path), "%s/profile/go_cpu.top", unit_data_dir());
	CHECKF((want = slurp(path, NULL)), "cannot read %s", path);
	CHECKF(pprof_decode((const uint8_t *)gz, len, &p, err, sizeof(err)) == 0, "%s", err);
	CHECK(profile__total(p, 0) == 42 && profile__total(p, 1) == 420 * MS);
	CAPTURE(ours, top_write(p, cap_f_, 0));
	CHECK(ours && strstr(ours, "Duration:") && strstr(want, "Duration:"));
	CHECKF(strcmp(strstr(ours, "Duration:"), strstr(want, "Duration:")) == 0,
	       "ours:\n%s\npprof:\n%s", ours, want);
	CAPTURE(folded, folded_write(p, cap_f_));
	CHECK(folded && folded_grammar_ok(folded));
	CHECKF(strstr(folded, "runtime.main;main.main;main.spinA "), "%s", folded);
cleanup:
	free(folded);
	free(ours);
	free(want);
	free(gz);
	profile__free(p);
}

/* ---- pprof_decode on bad input ---- */

TEST(decode_rejects_truncated_and_invalid_gzip)
{
	struct fixture x = {0};
	struct profile *p = NULL;
	uint8_t *buf = NULL, bad[64];
	size_t len = 0;
	char err[256];

	CHECK(fixture_init(&x));
	CHECK(pprof_encode(x.p, &buf, &len) == 0);
	err[0] = '\0';
	CHECK(pprof_decode(buf, len / 2, &p, err, sizeof(err)) == -EINVAL && !p);
	CHECKF(strstr(err, "truncated"), "%s", err);
	CHECK(pprof_decode(buf, 2, &p, err, sizeof(err)) == -EINVAL && err[0]);
	memcpy(bad, buf, 10); /* a valid gzip header, then garbage */
	memset(bad + 10, 0xff, sizeof(bad) - 10);
	err[0] = '\0';
	CHECK(pprof_decode(bad, sizeof(bad), &p, err, sizeof(err)) == -EINVAL && !p);
	CHECKF(strstr(err, "gzip data is invalid"), "%s", err);
	bad[2] = 7; /* unknown compression method */
	CHECK(pprof_decode(bad, sizeof(bad), &p, err, sizeof(err)) == -EINVAL && err[0]);
	/* NULL err is allowed */
	CHECK(pprof_decode(bad, sizeof(bad), &p, NULL, 0) == -EINVAL);
cleanup:
	free(buf);
	profile__free(p);
	profile__free(x.p);
}

TEST(decode_rejects_garbage_protobuf)
{
	static const uint8_t garbage[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01, 0x02};
	static const uint8_t bad_tag[] = {0x00, 0x00, 0x00};
	struct profile *p = NULL;
	char err[256];

	err[0] = '\0';
	CHECK(pprof_decode(garbage, sizeof(garbage), &p, err, sizeof(err)) == -EINVAL && !p);
	CHECKF(strstr(err, "not a valid profile.proto"), "%s", err);
	err[0] = '\0';
	CHECK(pprof_decode(bad_tag, sizeof(bad_tag), &p, err, sizeof(err)) == -EINVAL && err[0]);
	/* an empty message has no string table */
	err[0] = '\0';
	CHECK(pprof_decode(garbage, 0, &p, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "string table"), "%s", err);
cleanup:
	profile__free(p);
}

/* profile.proto written by hand: what other encoders may send and ours never does
 * (unpacked repeated ids, sparse ids out of order, unknown fields). */
TEST(decode_reads_wire_variants)
{
	static const uint8_t msg[] = {
	    0x0a, 0x04, 0x08, 0x01, 0x10, 0x02,			  /* sample_type {samples, count} */
	    0x12, 0x07, 0x08, 0x09, 0x08, 0x05, 0x12, 0x01, 0x07, /* sample: locs 9, 5 unpacked;
								   * value [7] packed */
	    0x22, 0x08, 0x08, 0x09, 0x18, 0x10, 0x22, 0x02, 0x08, 0x03, /* location 9 at 0x10:
									 * line {function 3} */
	    0x22, 0x08, 0x08, 0x05, 0x18, 0x20, 0x22, 0x02, 0x08, 0x03, /* location 5 at 0x20 */
	    0x2a, 0x04, 0x08, 0x03, 0x10, 0x03, /* function 3, name "main" */
	    0xa0, 0x01, 0x05,			/* field 20: unknown, skipped */
	    0x32, 0x00, 0x32, 0x07, 's',  'a',	'm',  'p',  'l',  'e',	's', /* string table */
	    0x32, 0x05, 'c',  'o',  'u',  'n',	't',  0x32, 0x04, 'm',	'a', 'i', 'n',
	};
	static const uint8_t wrong_type[] = {0x08, 0x01}; /* sample_type as a varint */
	struct profile_sample smp;
	struct profile *p = NULL;
	char err[256];

	CHECKF(pprof_decode(msg, sizeof(msg), &p, err, sizeof(err)) == 0, "%s", err);
	CHECK(profile__n_samples(p) == 1 && profile__total(p, 0) == 7);
	CHECK(profile__sample(p, 0, &smp) == 0 && smp.n_locs == 2);
	CHECK(profile__n_locations(p) == 2 && profile__n_functions(p) == 1);
	profile__free(p);
	p = NULL;
	/* cut anywhere inside the last string: the message is truncated */
	for (size_t cut = sizeof(msg) - 4; cut < sizeof(msg); cut++) {
		err[0] = '\0';
		CHECK(pprof_decode(msg, cut, &p, err, sizeof(err)) == -EINVAL && !p);
		CHECKF(strstr(err, "not a valid profile.proto"), "cut %zu: %s", cut, err);
	}
	err[0] = '\0';
	CHECK(pprof_decode(wrong_type, sizeof(wrong_type), &p, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "not a valid profile.proto"), "%s", err);
cleanup:
	profile__free(p);
}

TEST(decode_validates_indices)
{
	Perftools__Profiles__Profile *m = fixture_message();
	char err[256], *saved_s = NULL;
	int64_t saved;
	uint64_t saved_u;

	CHECK(m);
	CHECKF(decode_message(m, err, sizeof(err)) == 0, "raw protobuf must decode: %s", err);

	saved = m->function[1]->name;
	m->function[1]->name = (int64_t)m->n_string_table;
	CHECK(decode_message(m, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "function 2 name refers to string"), "%s", err);
	m->function[1]->name = -1;
	CHECK(decode_message(m, err, sizeof(err)) == -EINVAL && strstr(err, "string -1"));
	m->function[1]->name = saved;

	saved = m->sample[0]->label[0]->key;
	m->sample[0]->label[0]->key = 100000;
	CHECK(decode_message(m, err, sizeof(err)) == -EINVAL && strstr(err, "label 0 of sample 0"));
	m->sample[0]->label[0]->key = saved;

	saved_u = m->location[0]->mapping_id;
	m->location[0]->mapping_id = 99;
	CHECK(decode_message(m, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "location 1 refers to mapping 99"), "%s", err);
	m->location[0]->mapping_id = saved_u;

	saved_u = m->location[0]->line[0]->function_id;
	m->location[0]->line[0]->function_id = 98;
	CHECK(decode_message(m, err, sizeof(err)) == -EINVAL && strstr(err, "function 98"));
	m->location[0]->line[0]->function_id = saved_u;

	saved_u = m->sample[1]->location_id[0];
	m->sample[1]->location_id[0] = 97;
	CHECK(decode_message(m, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "sample 1 refers to location 97"), "%s", err);
	m->sample[1]->location_id[0] = saved_u;

	m->sample[2]->n_value = 1;
	CHECK(decode_message(m, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "sample 2 has 1 values but the profile has 2 sample types"), "%s", err);
	m->sample[2]->n_value = 2;

	saved_u = m->function[1]->id;
	m->function[1]->id = m->function[0]->id;
	CHECK(decode_message(m, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "two functions have id"));
	m->function[1]->id = 0;
	CHECK(decode_message(m, err, sizeof(err)) == -EINVAL && strstr(err, "id 0"));
	m->function[1]->id = saved_u;

	saved_s = m->string_table[0];
	m->string_table[0] = (char *)"x";
	CHECK(decode_message(m, err, sizeof(err)) == -EINVAL && strstr(err, "empty string"));
	m->string_table[0] = saved_s;

	saved = m->sample_type[0]->unit;
	m->sample_type[0]->unit = 5000;
	CHECK(decode_message(m, err, sizeof(err)) == -EINVAL && strstr(err, "sample unit"));
	m->sample_type[0]->unit = saved;
	CHECKF(decode_message(m, err, sizeof(err)) == 0, "restored message: %s", err);
cleanup:
	if (m && saved_s)
		m->string_table[0] = saved_s;
	if (m)
		perftools__profiles__profile__free_unpacked(m, NULL);
}

/* A profile with only cpu/nanoseconds (as some agents send) gets counts from the period. */
TEST(decode_derives_counts_from_period)
{
	Perftools__Profiles__Profile *m = fixture_message();
	Perftools__Profiles__ValueType *count_type = NULL;
	struct profile *p = NULL;
	uint8_t *buf = NULL;
	size_t n;
	char err[256];

	CHECK(m);
	count_type = m->sample_type[0];
	m->sample_type[0] = m->sample_type[1]; /* [cpu/ns] only */
	m->n_sample_type = 1;
	for (size_t i = 0; i < m->n_sample; i++) {
		m->sample[i]->value[0] = m->sample[i]->value[1];
		m->sample[i]->n_value = 1;
	}
	n = perftools__profiles__profile__get_packed_size(m);
	CHECK((buf = malloc(n)));
	perftools__profiles__profile__pack(m, buf);
	CHECKF(pprof_decode(buf, n, &p, err, sizeof(err)) == 0, "%s", err);
	CHECK(profile__total(p, 0) == 100 && profile__total(p, 1) == 1000 * MS);
	/* neither samples/count nor cpu/nanoseconds: not a CPU profile */
	m->sample_type[0]->unit = 0;
	CHECK(decode_message(m, err, sizeof(err)) == -EINVAL && strstr(err, "not a CPU profile"));
cleanup:
	free(buf);
	profile__free(p);
	if (m) {
		if (count_type) { /* put the message back as unpacked, so it frees exactly */
			m->sample_type[0] = count_type;
			m->n_sample_type = 2;
		}
		perftools__profiles__profile__free_unpacked(m, NULL);
	}
}

TEST(decode_stops_decompression_bomb)
{
	struct profile *p = NULL;
	uint8_t *bomb = NULL;
	size_t len = 0;
	char err[256];

	CHECK((bomb = unit_gzip_zeros(300u << 20, &len)));
	CHECK(len < (2u << 20));
	err[0] = '\0';
	CHECK(pprof_decode(bomb, len, &p, err, sizeof(err)) == -EFBIG && !p);
	CHECKF(strstr(err, "more than 256 MiB"), "%s", err);
cleanup:
	free(bomb);
	profile__free(p);
}

/* Many tiny messages on the wire would unpack into far more memory than the input:
 * 3 M empty samples take 144 MB of 48-byte records, past the budget of 64 MiB + 8
 * bytes per wire byte (112 MiB). The arrays grow up to the budget, not past it. */
TEST(decode_stops_unpack_bomb)
{
	size_t n = 6u << 20; /* 3 M empty samples: "field 2, length 0" */
	uint8_t *raw = malloc(n);
	struct profile *p = NULL;
	char err[256];

	CHECK(raw);
	for (size_t i = 0; i < n; i += 2)
		raw[i] = 0x12, raw[i + 1] = 0x00;
	err[0] = '\0';
	CHECK(pprof_decode(raw, n, &p, err, sizeof(err)) == -EFBIG && !p);
	CHECKF(strstr(err, "memory to unpack"), "%s", err);
cleanup:
	free(raw);
	profile__free(p);
}

/* The gzip trailer's size (ISIZE) sizes the one-shot inflate; a trailer that lies
 * is answered as before: the data is invalid (zlib's length check), nothing built. */
TEST(decode_rejects_a_lying_gzip_trailer_size)
{
	struct fixture x = {0};
	struct profile *p = NULL;
	uint8_t *buf = NULL;
	size_t len = 0, raw_len = 0;
	const uint32_t lies[] = {0, 1, 0x7fffffffu, PPROF_MAX_INFLATED + 1u};
	char err[256];

	CHECK(fixture_init(&x));
	CHECK(pprof_encode(x.p, &buf, &len) == 0);
	raw_len = (size_t)buf[len - 4] | (size_t)buf[len - 3] << 8 | (size_t)buf[len - 2] << 16 |
		  (size_t)buf[len - 1] << 24;
	CHECK(raw_len > 1);
	CHECKF(pprof_decode(buf, len, &p, err, sizeof(err)) == 0, "%s", err);
	CHECK(same_profile(x.p, p));
	profile__free(p);
	p = NULL;
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]) + 2; i++) {
		uint32_t v = i < 2 ? (uint32_t)(raw_len + (i ? 1 : -1)) : lies[i - 2];

		for (int b = 0; b < 4; b++)
			buf[len - 4 + b] = (uint8_t)(v >> (8 * b));
		err[0] = '\0';
		CHECKF(pprof_decode(buf, len, &p, err, sizeof(err)) == -EINVAL && !p,
		       "ISIZE %u: %s", v, err);
		CHECKF(strstr(err, "gzip data is invalid"), "ISIZE %u: %s", v, err);
	}
cleanup:
	free(buf);
	profile__free(p);
	profile__free(x.p);
}

TEST(decode_accepts_concatenated_gzip_members)
{
	struct fixture x = {0};
	struct profile *p = NULL;
	uint8_t *buf = NULL, *two = NULL, *raw = NULL;
	size_t len = 0, raw_len = 0, half;
	char err[256];
	z_stream z = {0};

	CHECK(fixture_init(&x));
	CHECK(pprof_encode(x.p, &buf, &len) == 0);
	CHECK((raw = gunzip_all(buf, len, &raw_len)));
	/* the same bytes as two gzip members */
	CHECK((two = malloc(2 * raw_len + 256)));
	half = raw_len / 2;
	len = 0;
	for (int part = 0; part < 2; part++) {
		CHECK(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
		z.next_in = raw + (part ? half : 0);
		z.avail_in = (uInt)(part ? raw_len - half : half);
		z.next_out = two + len;
		z.avail_out = (uInt)(2 * raw_len + 256 - len);
		CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
		len += z.total_out;
		deflateEnd(&z);
	}
	CHECKF(pprof_decode(two, len, &p, err, sizeof(err)) == 0, "%s", err);
	CHECK(same_profile(x.p, p));
	profile__free(p);
	p = NULL;
	two[len++] = 'x'; /* trailing garbage */
	CHECK(pprof_decode(two, len, &p, err, sizeof(err)) == -EINVAL);
	CHECKF(strstr(err, "not gzip data"), "%s", err);
cleanup:
	free(two);
	free(raw);
	free(buf);
	profile__free(p);
	profile__free(x.p);
}

/* ---- folded ---- */

/* Every line in flamegraph.pl's grammar: non-empty frames, no leading blank, a count. */
static bool folded_grammar_ok(const char *text)
{
	regex_t re;
	char line[4096];
	bool ok = true;

	if (regcomp(&re, "^[^ ;][^;]*(;[^;]+)* [0-9]+$", REG_EXTENDED | REG_NOSUB))
		return false;
	for (const char *s = text; *s && ok;) {
		size_t n = strcspn(s, "\n");

		snprintf(line, sizeof(line), "%.*s", (int)n, s);
		ok = regexec(&re, line, 0, NULL, 0) == 0;
		s += n + (s[n] == '\n');
	}
	regfree(&re);
	return ok;
}

TEST(folded_exact_lines)
{
	struct fixture x = {0};
	char *out = NULL;

	CHECK(fixture_init(&x));
	CAPTURE(out, folded_write(x.p, cap_f_));
	CHECK(out);
	CHECK_STREQ(out, "app;main;hot;helper_[i] 60\n"
			 "app;main;warm 30\n"
			 "main;cold;do_syscall_64_[k] 10\n");
	CHECK(folded_grammar_ok(out));
cleanup:
	free(out);
	profile__free(x.p);
}

TEST(folded_merges_and_sanitizes)
{
	struct profile *p = profile__new(MS);
	struct profile_label pid1[2] = {{"process", "a;b\nc", 0}, {"pid", NULL, 1}};
	struct profile_label pid2[2] = {{"pid", NULL, 2}, {"process", "a;b\nc", 0}};
	struct profile_label blank[1] = {{"process", "  ", 0}};
	uint64_t f1, f2, l1, l2, l3, locs[2];
	char *out = NULL;
	const char *line;

	CHECK(p);
	f1 = profile__function(p, "  std::map<int; int>::find  ", NULL, NULL);
	f2 = profile__function(p, "caller\tx", NULL, NULL);
	l1 = loc1(p, 0, 0x10, f1, 1);
	l2 = loc1(p, 0, 0x20, f2, 1);
	l3 = loc1(p, 0, 0x30, f2, 2); /* another address of the same function */
	CHECK(l1 && l2 && l3);
	locs[0] = l1, locs[1] = l2;
	CHECK(add(p, locs, 2, 5, pid1, 2) == 0);
	CHECK(add(p, locs, 2, 7, pid2, 2) == 0);
	locs[1] = l3;
	CHECK(add(p, locs, 2, 1, pid1, 2) == 0);
	CHECK(add(p, locs, 1, 0, NULL, 0) == 0); /* zero count: not printed */
	CHECK(add(p, locs, 1, 2, blank, 1) == 0);
	CHECK(profile__n_samples(p) == 5);
	CAPTURE(out, folded_write(p, cap_f_));
	CHECK(out);
	CHECK_STREQ(out, "??;std::map<int: int>::find 2\n"
			 "a:b_c;caller_x;std::map<int: int>::find 13\n");
	CHECK(folded_grammar_ok(out));
	/* what flamegraph.pl's parser sees: everything before the last blank, then the count */
	line = strrchr(out, ' ');
	CHECK(line && strcmp(line, " 13\n") == 0 && line[-1] != ' ');
cleanup:
	free(out);
	profile__free(p);
}

/* ---- top ---- */

TEST(top_table_60_30_10)
{
	struct fixture x = {0};
	char *out = NULL, *row;
	double flat[6], cum[6], sum[6];
	char names[6][64];
	int n = 0;

	CHECK(fixture_init(&x));
	CAPTURE(out, top_write(x.p, cap_f_, 0));
	CHECK(out);
	CHECKF(strstr(out, "dropped 0 samples\nType: cpu\nTime: "), "%s", out);
	CHECKF(strstr(out, "\nDuration: 10s, Total samples = 1000ms (10.00%)\n"
			   "Showing nodes accounting for 1000ms, 100% of 1000ms total\n"
			   "      flat  flat%   sum%        cum   cum%\n"
			   "     600ms 60.00% 60.00%      600ms 60.00%  helper\n"
			   "     300ms 30.00% 90.00%      300ms 30.00%  warm\n"
			   "     100ms 10.00%   100%      100ms 10.00%  do_syscall_64_[k]\n"
			   "         0     0%   100%     1000ms   100%  main\n"
			   "         0     0%   100%      600ms 60.00%  hot\n"
			   "         0     0%   100%      100ms 10.00%  cold\n"),
	       "%s", out);
	/* and parsed back: percentages add up */
	row = strstr(out, "cum%\n") + 5;
	while (n < 6 && sscanf(row, "%*s %lf%% %lf%% %*s %lf%% %63s", &flat[n], &sum[n], &cum[n],
			       names[n]) == 4) {
		n++;
		row = strchr(row, '\n') + 1;
	}
	CHECK(n == 6 && *row == '\0');
	CHECK(flat[0] == 60 && flat[1] == 30 && flat[2] == 10 && flat[3] == 0);
	CHECK(sum[2] == 100 && cum[3] == 100 && cum[4] == 60);
	CHECK_STREQ(names[0], "helper");
cleanup:
	free(out);
	profile__free(x.p);
}

TEST(top_counts_when_no_time_and_limits_rows)
{
	struct profile *p = profile__new(0);
	int64_t v[2] = {3, 0};
	uint64_t l1, l2;
	char *out = NULL;

	CHECK(p);
	l1 = loc1(p, 0, 0x10, profile__function(p, "a", NULL, NULL), 1);
	l2 = loc1(p, 0, 0x20, profile__function(p, "b", NULL, NULL), 1);
	CHECK(profile__add_sample(p, &l1, 1, v, NULL, 0) == 0);
	v[0] = 1;
	CHECK(profile__add_sample(p, &l2, 1, v, NULL, 0) == 0);
	CAPTURE(out, top_write(p, cap_f_, 1));
	CHECK(out);
	CHECK_STREQ(out, "Type: samples\n"
			 "Showing nodes accounting for 3, 75.00% of 4 total\n"
			 "Showing top 1 nodes out of 2\n"
			 "      flat  flat%   sum%        cum   cum%\n"
			 "         3 75.00% 75.00%          3 75.00%  a\n");
cleanup:
	free(out);
	profile__free(p);
}

TEST(top_value_units_like_pprof)
{
	struct profile *p = profile__new(10 * MS);
	int64_t v[2] = {1, 10 * MS};
	uint64_t l1, l2;
	char *out = NULL;

	CHECK(p);
	l1 = loc1(p, 0, 0x10, profile__function(p, "small", NULL, NULL), 1);
	l2 = loc1(p, 0, 0x20, profile__function(p, "big", NULL, NULL), 1);
	CHECK(profile__add_sample(p, &l1, 1, v, NULL, 0) == 0);
	v[1] = 2500 * MS;
	CHECK(profile__add_sample(p, &l2, 1, v, NULL, 0) == 0);
	CAPTURE(out, top_write(p, cap_f_, 0));
	CHECK(out);
	/* min row 10ms, total 2.51s: one unit for all, scaled so the small row is 0.01s */
	CHECKF(strstr(out, "     2.50s 99.60% 99.60%      2.50s 99.60%  big\n"
			   "     0.01s   0.4%   100%      0.01s   0.4%  small\n"),
	       "%s", out);
cleanup:
	free(out);
	profile__free(p);
}

/* ---- SVG ---- */

/* The fill of the frame called name: its r, g, b. */
static bool frame_rgb(const char *svg, const char *name, int rgb[3])
{
	char key[128];
	const char *g, *fill;

	snprintf(key, sizeof(key), "data-name=\"%s\"", name);
	g = strstr(svg, key);
	fill = g ? strstr(g, "fill=\"rgb(") : NULL;
	return fill && sscanf(fill, "fill=\"rgb(%d,%d,%d)", &rgb[0], &rgb[1], &rgb[2]) == 3;
}

TEST(svg_frames_titles_and_structure)
{
	struct fixture x = {0};
	char *out = NULL;
	int k[3], u[3];

	CHECK(fixture_init(&x));
	CAPTURE(out, svg_write(x.p, cap_f_, "CPU <test> & more"));
	CHECK(out);
	CHECK(strncmp(out, "<?xml", 5) == 0 && strstr(out, "<svg "));
	CHECK(strcmp(out + strlen(out) - 7, "</svg>\n") == 0);
	CHECK(count_of(out, "<g") == count_of(out, "</g>"));
	CHECK(count_of(out, "<g class=\"f\"") ==
	      9); /* all, app, main, hot, helper, warm; main, cold, sys */
	CHECK(strstr(out, "<title>all (100 samples, 100.00%)</title>"));
	CHECK(strstr(out, "<title>main (90 samples, 90.00%)</title>"));
	CHECK(strstr(out, "<title>main (10 samples, 10.00%)</title>"));
	CHECK(strstr(out, "<title>hot (60 samples, 60.00%)</title>"));
	CHECK(strstr(out, "<title>helper_[i] (60 samples, 60.00%)</title>"));
	CHECK(strstr(out, "<title>do_syscall_64_[k] (10 samples, 10.00%)</title>"));
	CHECK(strstr(out, "data-name=\"app\" data-s=\"0\" data-v=\"90\" data-d=\"1\""));
	CHECK(strstr(out,
		     "<text id=\"title\" x=\"600\" y=\"24\">CPU &lt;test&gt; &amp; more</text>"));
	CHECK(strstr(out, "<![CDATA[") && strstr(out, "function zoom(") &&
	      strstr(out, "function search(") && strstr(out, "Reset Zoom"));
	/* kernel frames blue, user frames red/orange */
	CHECK(frame_rgb(out, "do_syscall_64_[k]", k) && frame_rgb(out, "warm", u));
	CHECK(k[2] > k[0] && u[0] > u[2]);
cleanup:
	free(out);
	profile__free(x.p);
}

TEST(svg_escapes_names_and_parses_as_xml)
{
	struct profile *p = profile__new(MS);
	uint64_t f, l;
	char *out = NULL, *o = NULL, *e = NULL;
	const char *path;
	int st;

	CHECK(p);
	f = profile__function(p, "operator<<(std::ostream&, \"x\") 'q' \x01 \xff \xc3\xa9", NULL,
			      NULL);
	l = loc1(p, 0, 0x10, f, 1);
	CHECK(add(p, &l, 1, 3, NULL, 0) == 0);
	CAPTURE(out, svg_write(p, cap_f_, NULL));
	CHECK(out);
	CHECK(strstr(out, "data-name=\"operator&lt;&lt;(std::ostream&amp;, &quot;x&quot;) "
			  "&apos;q&apos; ? ? \xc3\xa9\""));
	CHECK(!strstr(out, "<<") && !strstr(out, "\xff"));
	CHECK((path = write_tmp("escape.svg", out, strlen(out))));
	if (have("xmllint")) {
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", path);
		st = run(cmd, &o, &e);
		CHECKF(st == 0, "xmllint: %s", e ? e : "");
	} else {
		fprintf(stderr, "  note: xmllint missing, well-formedness not checked\n");
	}
cleanup:
	free(o);
	free(e);
	free(out);
	profile__free(p);
}

TEST(svg_empty_profile)
{
	struct profile *p = profile__new(MS);
	char *out = NULL;

	CHECK(p);
	CAPTURE(out, svg_write(p, cap_f_, "empty"));
	CHECK(out && strstr(out, "No samples") && count_of(out, "<g") == count_of(out, "</g>"));
cleanup:
	free(out);
	profile__free(p);
}

/*
 * The script really runs: headless Chromium loads the SVG with ?f=hot&s=helper (zoom
 * to "hot", search "helper") and dumps the resulting DOM.
 */
TEST(svg_zoom_and_search_in_chromium)
{
	struct fixture x = {0};
	char *out = NULL, *o = NULL, *e = NULL, cmd[1200];
	const char *path, *warm, *main_g, *hot;
	int st;

	CHECKF(have("chromium"), "chromium is not installed; this test runs the SVG's script");
	CHECK(fixture_init(&x));
	CAPTURE(out, svg_write(x.p, cap_f_, "zoom"));
	CHECK(out && (path = write_tmp("zoom.svg", out, strlen(out))));
	snprintf(cmd, sizeof(cmd),
		 "HOME='%s/home' timeout 60 chromium --headless --no-sandbox --disable-gpu "
		 "--user-data-dir='%s/chromium' --dump-dom 'file://%s?f=hot&s=helper'",
		 unit_tmp_dir(), unit_tmp_dir(), path);
	st = run(cmd, &o, &e);
	CHECKF(st == 0, "chromium exit %d: %s", st, e ? e : "");
	CHECKF(strstr(o, "Matched: 100.0%"), "%s", o);
	warm = strstr(o, "data-name=\"warm\"");
	main_g = strstr(o, "data-name=\"main\"");
	hot = strstr(o, "data-name=\"hot\"");
	CHECK(warm && main_g && hot);
	CHECKF(strstr(warm, "display: none") < strstr(warm, "</g>"), "warm not hidden");
	/* main is an ancestor: dimmed, full width; hot fills the width */
	CHECK(strstr(o, "class=\"f parent\" data-name=\"main\""));
	CHECK(strstr(hot, "width=\"1180.00\"") < strstr(hot, "</g>"));
	CHECK(strstr(o, "<text id=\"unzoom\" class=\"\""));
cleanup:
	free(o);
	free(e);
	free(out);
	profile__free(x.p);
}

/* ---- stack depth (issue 12 item 1) ---- */

#define DEEP_FRAMES 200000

/* Frame k (0 = leaf) of the profile's only sample, as the writers name it. */
static const char *deep_frame(const struct profile *p, size_t k, char *buf, size_t len)
{
	struct profile_sample s;
	struct profile_location loc;

	if (profile__n_samples(p) != 1 || profile__sample(p, 0, &s) || k >= s.n_locs ||
	    profile__get_location(p, s.locs[k], &loc))
		return "";
	return profile__frame_name(p, &loc, 0, buf, len);
}

/* One sample of DEEP_FRAMES frames: leaf, then f1 .. f99 repeating to the root. */
static struct profile *deep_profile(void)
{
	struct profile *p = profile__new(10 * MS);
	uint64_t *locs = malloc(DEEP_FRAMES * sizeof(*locs)), ids[100];
	char name[16];
	int err = !p || !locs;

	for (int i = 0; !err && i < 100; i++) {
		snprintf(name, sizeof(name), i ? "f%d" : "leaf", i);
		ids[i] =
		    loc1(p, 0, 0x1000 + (uint64_t)i, profile__function(p, name, NULL, NULL), 0);
	}
	for (size_t i = 0; !err && i < DEEP_FRAMES; i++)
		locs[i] = i ? ids[1 + (i - 1) % 99] : ids[0];
	err = err || add(p, locs, DEEP_FRAMES, 3, NULL, 0);
	free(locs);
	if (err) {
		profile__free(p);
		return NULL;
	}
	return p;
}

/*
 * A pprof of one 200,000-frame sample (what the 325-byte file holds)
 * decodes to PROFILE_MAX_FRAMES frames: the leaf-most ones as they were, then
 * one PROFILE_TRUNCATED_FRAME at the root; the sample's values are kept. The
 * flat decoder (the server's ingest) cuts the same way.
 */
TEST(pprof_deep_stack_is_truncated_at_ingest)
{
	struct profile *p = deep_profile(), *q = NULL;
	struct profile_flat *f = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	char err[256], a[64], b[64];

	CHECK(p && pprof_encode(p, &buf, &len) == 0);
	CHECK(pprof_decode(buf, len, &q, err, sizeof(err)) == 0);
	CHECK(profile__n_samples(q) == 1 && profile__total(q, 0) == 3);
	struct profile_sample s;

	CHECK(profile__sample(q, 0, &s) == 0);
	CHECKF(s.n_locs == PROFILE_MAX_FRAMES, "%zu frames", s.n_locs);
	for (size_t k = 0; k < PROFILE_MAX_FRAMES - 1; k++)
		CHECKF(strcmp(deep_frame(q, k, a, sizeof(a)), deep_frame(p, k, b, sizeof(b))) == 0,
		       "frame %zu: %s, want %s", k, a, b);
	CHECK_STREQ(deep_frame(q, PROFILE_MAX_FRAMES - 1, a, sizeof(a)), PROFILE_TRUNCATED_FRAME);
	CHECK(pprof_decode_flat(buf, len, &f, err, sizeof(err)) == 0);
	CHECK(f->n_samples == 1 && f->samples[0].n_locs == PROFILE_MAX_FRAMES);
	const struct profile_flat_location *l =
	    &f->locations[f->locs[f->samples[0].loc_off + PROFILE_MAX_FRAMES - 1]];

	CHECK(l->n_lines == 1);
	CHECK_STREQ(profile_flat__str(f, f->functions[f->lines[l->line_off].function].name, NULL),
		    PROFILE_TRUNCATED_FRAME);
cleanup:
	profile_flat__free(f);
	free(buf);
	profile__free(q);
	profile__free(p);
}

/* Folded and lines input are cut the same way (they used to refuse the body). */
TEST(text_deep_stack_is_truncated_at_ingest)
{
	size_t cap = 3000 * 8 + 16, n = 0;
	char *text = malloc(cap), err[256], a[64];
	struct profile *p = NULL;

	CHECK(text);
	for (int i = 0; i < 3000; i++)
		n += (size_t)snprintf(text + n, cap - n, "%sf%d", i ? ";;" : "", i);
	n += (size_t)snprintf(text + n, cap - n, " 7\n");
	for (int lines = 0; lines < 2; lines++) {
		CHECKF(profile_text_parse(text, lines ? n - 3 : n, lines, 10 * MS, &p, err,
					  sizeof(err)) == 0,
		       "%s", err);
		struct profile_sample s;

		CHECK(profile__sample(p, 0, &s) == 0 && s.n_locs == PROFILE_MAX_FRAMES);
		CHECK(profile__total(p, 0) == (lines ? 1 : 7));
		CHECK_STREQ(deep_frame(p, 0, a, sizeof(a)), "f2999");
		CHECK_STREQ(deep_frame(p, PROFILE_MAX_FRAMES - 2, a, sizeof(a)), "f1977");
		CHECK_STREQ(deep_frame(p, PROFILE_MAX_FRAMES - 1, a, sizeof(a)),
			    PROFILE_TRUNCATED_FRAME);
		profile__free(p);
		p = NULL;
	}
cleanup:
	free(text);
	profile__free(p);
}

/* The text writers of a profile walk stacks without recursion, at any depth. */
TEST(deep_stack_writers_do_not_recurse)
{
	struct profile *p = deep_profile();
	char *svg = NULL, *folded = NULL, *top = NULL;
	size_t len;
	FILE *out = NULL;

	CHECK(p);
	CHECK((out = open_memstream(&svg, &len)) && svg_write(p, out, "deep") == 0);
	fclose(out);
	CHECK((out = open_memstream(&folded, &len)) && folded_write(p, out) == 0);
	fclose(out);
	CHECK((out = open_memstream(&top, &len)) && top_write(p, out, 10) == 0);
	fclose(out);
	out = NULL;
	CHECK(strstr(svg, "data-name=\"leaf\"") && strstr(folded, "f2;f1;leaf 3\n") &&
	      strstr(top, "leaf"));
cleanup:
	if (out)
		fclose(out);
	free(svg);
	free(folded);
	free(top);
	profile__free(p);
}

/* Heap in use: ASan's count of requested bytes under ASan, glibc's chunks otherwise. */
#if defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t heap_in_use(void)
{
	return __sanitizer_get_current_allocated_bytes();
}
#else
#include <malloc.h>
static size_t heap_in_use(void)
{
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
}
#endif

/* Issue 24 (11): folded text was parsed outside any budget (32 MiB of it took
 * 2 GB). 200,000 lines of distinct one-frame stacks (1.5 MB of text, a ~75 MB
 * model) are refused on a 32 MiB budget and parsed without one; profile__bytes
 * is what the model really takes. */
TEST(text_parse_within_budget)
{
	struct profile *p = NULL;
	size_t cap = 200000 * 16, n = 0, before, used, counted;
	char err[512] = "", *text = malloc(cap);

	CHECK(text);
	for (size_t i = 0; i < 200000; i++)
		n += (size_t)snprintf(text + n, cap - n, "%zx 1\n", i);
	CHECK(profile_text_parse_budget(text, n, false, 10 * MS, 32u << 20, &p, err, sizeof(err)) ==
	      -EFBIG);
	CHECKF(!p && strstr(err, "over the memory budget of 32 MiB"), "%s", err);
	printf("  %zu bytes of folded text, 32 MiB: %s\n", n, err);
	before = heap_in_use();
	CHECKF(profile_text_parse_budget(text, n, false, 10 * MS, 0, &p, err, sizeof(err)) == 0,
	       "%s", err);
	used = heap_in_use() - before;
	counted = profile__bytes(p);
	printf("  model: %zu bytes in use, profile__bytes %zu\n", used, counted);
	CHECKF(counted >= used * 8 / 10 && counted <= used * 12 / 10, "%zu counted, %zu used",
	       counted, used);
cleanup:
	profile__free(p);
	free(text);
}
