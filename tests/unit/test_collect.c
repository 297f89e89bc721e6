/*
 * Tests of collect/: raw samples of this very process (addresses of functions in
 * the test binary and in libc) are aggregated and symbolized into a profile with
 * the right names, labels, kernel frames and module+offset fallbacks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "collect/collect.h"
#include "unit.h"

__attribute__((noinline)) int collect_test_leaf(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) int collect_test_caller(int x)
{
	return collect_test_leaf(x) + 2;
}

static const char *name_at(const struct profile *p, const struct profile_sample *s, size_t i,
			   char *buf, size_t len)
{
	struct profile_location loc;

	if (i >= s->n_locs || profile__get_location(p, s->locs[i], &loc) || loc.n_lines == 0)
		return "";
	return profile__frame_name(p, &loc, loc.n_lines - 1, buf, len);
}

static const char *label_str(const struct profile_sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_labels; i++)
		if (!strcmp(s->labels[i].key, key))
			return s->labels[i].str;
	return NULL;
}

static const char *write_kallsyms(void)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/kallsyms", unit_tmp_dir());
	f = fopen(path, "w");
	if (!f)
		return NULL;
	fprintf(f, "ffffffff81000000 T _stext\nffffffff81001000 T do_syscall_64\n"
		   "ffffffff81002000 T entry_SYSCALL_64\nffffffff81003000 T _etext\n");
	fclose(f);
	return path;
}

/* A collector over this machine's /proc, with its proc table and symbolizer. */
struct fixture {
	struct proc_table *pt;
	struct symbolizer *sym;
	struct collector *c;
	struct profile *p; /* the test's built profile, freed on close */
};

static struct collector *fixture_open(struct fixture *f, const struct sym_opts *so)
{
	f->p = NULL;
	f->pt = proc_table__new("/proc");
	f->sym = symbolizer__new(so);
	f->c = f->pt && f->sym ? collector__new(f->pt, f->sym) : NULL;
	return f->c;
}

static void fixture_close(struct fixture *f)
{
	profile__free(f->p);
	collector__free(f->c);
	symbolizer__free(f->sym);
	proc_table__free(f->pt);
}

/* A sample of this process, thread "tester", with n user frames. */
static struct sampler_sample own_sample(const uint64_t *user, size_t n, uint64_t count)
{
	return (struct sampler_sample){ .pid = (uint32_t)getpid(), .tid = (uint32_t)getpid(),
					.comm = "tester", .n_user = n, .user = user, .count = count };
}

TEST(collect_symbolizes_own_process)
{
	struct sym_opts so = {.kallsyms_path = write_kallsyms()};
	struct fixture f;
	struct collector *c = fixture_open(&f, &so);
	struct profile_sample s;
	struct collect_stats st;
	char buf[256];
	/* leaf first: an address inside the leaf, then a return address into the caller */
	uint64_t user[2] = {(uint64_t)(uintptr_t)collect_test_leaf + 2,
			    (uint64_t)(uintptr_t)collect_test_caller + 5};
	uint64_t kernel[2] = {0xffffffff81001010ull, 0xffffffff81002008ull};
	struct sampler_sample cs = own_sample(user, 2, 3);

	CHECK(c);
	collector__event(c, &(struct sampler_event){.kind = HEARTH_EV_NEW, .pid = cs.pid});
	CHECK(collector__add(c, &cs) == 0);
	CHECK(collector__add(c, &cs) == 0); /* identical: aggregated */
	cs.n_kernel = 2;
	cs.kernel = kernel;
	CHECK(collector__add(c, &cs) == 0);
	collector__stats(c, &st);
	CHECK(st.entries == 2 && st.samples == 9);

	f.p = collector__build(c, 10000000, 1, 2);
	CHECK(f.p);
	CHECK(profile__n_samples(f.p) == 2);
	CHECK(profile__total(f.p, 0) == 9);
	CHECK(profile__total(f.p, 1) == 9 * 10000000ll);
	for (size_t i = 0; i < 2; i++) {
		CHECK(profile__sample(f.p, i, &s) == 0);
		CHECK_STREQ(label_str(&s, "comm"), "tester");
		CHECK(label_str(&s, "process") != NULL);
		if (s.n_locs == 2) {
			CHECK_STREQ(name_at(f.p, &s, 0, buf, sizeof(buf)), "collect_test_leaf");
			CHECK_STREQ(name_at(f.p, &s, 1, buf, sizeof(buf)), "collect_test_caller");
		} else {
			CHECK(s.n_locs == 4);
			CHECK_STREQ(name_at(f.p, &s, 0, buf, sizeof(buf)), "do_syscall_64_[k]");
			CHECK_STREQ(name_at(f.p, &s, 1, buf, sizeof(buf)), "entry_SYSCALL_64_[k]");
			CHECK_STREQ(name_at(f.p, &s, 2, buf, sizeof(buf)), "collect_test_leaf");
		}
	}
	collector__stats(c, &st);
	CHECK(st.entries == 0); /* build forgets what it built */
cleanup:
	fixture_close(&f);
}

TEST(collect_keeps_module_and_offset_when_unresolved)
{
	struct fixture f;
	struct collector *c = fixture_open(&f, NULL);
	struct profile_sample s;
	char buf[256];
	void *anon = malloc(1 << 20); /* heap: a mapping with no file */
	uint64_t user[2] = {(uint64_t)(uintptr_t)anon + 64, 0x10 /* in no mapping */};
	struct sampler_sample cs = own_sample(user, 2, 1);

	CHECK(c && anon);
	collector__event(c, &(struct sampler_event){.kind = HEARTH_EV_NEW, .pid = cs.pid});
	CHECK(collector__add(c, &cs) == 0);
	f.p = collector__build(c, 1000, 0, 0);
	CHECK(f.p && profile__sample(f.p, 0, &s) == 0 && s.n_locs == 2);
	/* the heap is "[heap]" or anonymous: named after it, never a bare [unknown] */
	name_at(f.p, &s, 0, buf, sizeof(buf));
	CHECKF(strstr(buf, "+0x") && strncmp(buf, "[unknown]", 9) != 0, "%s", buf);
	name_at(f.p, &s, 1, buf, sizeof(buf));
	CHECKF(strncmp(buf, "[unknown] 0x", 12) == 0, "%s", buf);
cleanup:
	free(anon);
	fixture_close(&f);
}

/* Samples that differ only where entry_matches says "the same" (a NULL or ""
 * process name, NULL or non-NULL pointers to no frames) add up into one entry,
 * and thousands of distinct ones each keep their own count across the index's
 * growth. */
TEST(collect_aggregates_equal_samples_once)
{
	struct fixture f;
	struct collector *c = fixture_open(&f, NULL);
	struct collect_stats st;
	uint64_t none[1] = {0};
	struct sampler_sample a = {.pid = 0, .tid = 0, .comm = "swapper", .count = 1};
	struct sampler_sample b = a;
	const uint32_t n = 3000;

	CHECK(c);
	b.pcomm = "";
	b.user = none;
	b.kernel = none;
	CHECK(collector__add(c, &a) == 0);
	CHECK(collector__add(c, &b) == 0);
	collector__stats(c, &st);
	CHECKF(st.entries == 1 && st.samples == 2, "entries %llu", (unsigned long long)st.entries);
	for (uint32_t round = 0; round < 2; round++) {
		for (uint32_t i = 0; i < n; i++) {
			struct sampler_sample s = {.pid = 0, .tid = i, .comm = "t", .count = i + 1};

			CHECK(collector__add(c, &s) == 0);
		}
	}
	collector__stats(c, &st);
	CHECK(st.entries == 1 + n && st.dropped == 0);
	f.p = collector__build(c, 1, 0, 0);
	CHECK(f.p && profile__n_samples(f.p) == 1 + n);
	/* 2 for the first entry, then twice 1..n */
	CHECK(profile__total(f.p, 0) == 2 + (int64_t)n * (n + 1));
cleanup:
	fixture_close(&f);
}

/* Sample counts saturate: two adds of INT64_MAX samples stay INT64_MAX samples
 * and INT64_MAX nanoseconds, never a negative or wrapped total (before: the
 * count wrapped and count x period overflowed, which UBSan aborts on). */
TEST(collect_counts_saturate)
{
	struct fixture f;
	struct collector *c = fixture_open(&f, NULL);
	struct sampler_sample s = {.comm = "swapper", .count = INT64_MAX};
	struct collect_stats st;

	CHECK(c);
	CHECK(collector__add(c, &s) == 0);
	s.count = UINT64_MAX;
	CHECK(collector__add(c, &s) == 0);
	collector__stats(c, &st);
	CHECK(st.entries == 1 && st.samples == UINT64_MAX);
	f.p = collector__build(c, 10000000, 0, 0);
	CHECK(f.p && profile__n_samples(f.p) == 1);
	CHECKF(profile__total(f.p, 0) == INT64_MAX, "%lld", (long long)profile__total(f.p, 0));
	CHECKF(profile__total(f.p, 1) == INT64_MAX, "%lld", (long long)profile__total(f.p, 1));
cleanup:
	fixture_close(&f);
}
