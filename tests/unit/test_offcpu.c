/*
 * Tests of offcpu/ and of the off-CPU path through the sampler's record parser
 * and the collector (docs/offcpu.md): names of reasons, kinds and counters; the
 * --off-cpu-min parser; an off-CPU ring-buffer record (trailing nanoseconds,
 * reason in kind) and its malformed variants; an off-CPU profile built with its
 * type, one value per sample, the `reason` label and the leaf pseudo-frame;
 * on-CPU samples as wall time.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "collect/collect.h"
#include "offcpu/offcpu.h"
#include "unit.h"

TEST(offcpu_names)
{
	char buf[512];
	uint64_t st[HEARTH_OFFCPU_STAT_MAX] = {
	    [HEARTH_OFFCPU_SWITCHES] = 7, [HEARTH_OFFCPU_RINGBUF_FULL] = 2};

	CHECK_STREQ(offcpu_reason_name(HEARTH_OFFCPU_RUNQUEUE), "runqueue");
	CHECK_STREQ(offcpu_reason_name(HEARTH_OFFCPU_THROTTLED), "throttled");
	CHECK(offcpu_reason_name(HEARTH_OFFCPU_REASON_MAX) == NULL);
	CHECK(offcpu_kind_label(0) == NULL && offcpu_kind_frame(0) == NULL);
	CHECK(offcpu_kind_addr(0) == 0);
	CHECK_STREQ(
	    offcpu_kind_label(HEARTH_RB_KIND_MAKE(HEARTH_RB_KIND_OFFCPU, HEARTH_OFFCPU_LOCK)),
	    "lock");
	CHECK_STREQ(offcpu_kind_frame(HEARTH_RB_KIND_MAKE(HEARTH_RB_KIND_OFFCPU, HEARTH_OFFCPU_IO)),
		    "[off-cpu: io]");
	CHECK_STREQ(offcpu_kind_label(HEARTH_RB_KIND_RUNNING), "running");
	CHECK_STREQ(offcpu_kind_frame(HEARTH_RB_KIND_RUNNING), "[on-cpu]");
	CHECK(offcpu_kind_frame(HEARTH_RB_KIND_MAKE(HEARTH_RB_KIND_OFFCPU, 200)) == NULL);
	/* every reason has a distinct frame address, none 0 */
	for (unsigned r = 0; r < HEARTH_OFFCPU_REASON_MAX; r++) {
		uint64_t a = offcpu_kind_addr(HEARTH_RB_KIND_MAKE(HEARTH_RB_KIND_OFFCPU, r));

		CHECK(a != 0 && a != offcpu_kind_addr(HEARTH_RB_KIND_RUNNING));
		for (unsigned q = 0; q < r; q++)
			CHECK(a != offcpu_kind_addr(HEARTH_RB_KIND_MAKE(HEARTH_RB_KIND_OFFCPU, q)));
	}
	for (int i = 0; i < HEARTH_OFFCPU_STAT_MAX; i++)
		CHECK(offcpu_stat_name(i) != NULL);
	CHECK(offcpu_stat_is_loss(HEARTH_OFFCPU_RINGBUF_FULL) &&
	      !offcpu_stat_is_loss(HEARTH_OFFCPU_LEAF_ONLY));
	offcpu_format_stats(st, buf, sizeof(buf));
	CHECK(strstr(buf, "7 switches") && strstr(buf, "2 ring buffer full"));
cleanup:;
}

TEST(offcpu_parse_duration)
{
	uint64_t ns = 0;

	CHECK(offcpu_parse_duration("1ms", &ns) == 0 && ns == 1000000);
	CHECK(offcpu_parse_duration("5", &ns) == 0 && ns == 5000000); /* ms when no unit */
	CHECK(offcpu_parse_duration("250us", &ns) == 0 && ns == 250000);
	CHECK(offcpu_parse_duration("2s", &ns) == 0 && ns == 2000000000ull);
	CHECK(offcpu_parse_duration("1500ns", &ns) == 0 && ns == 1500);
	CHECK(offcpu_parse_duration("999ns", &ns) == -EINVAL); /* under 1us */
	CHECK(offcpu_parse_duration("11s", &ns) == -EINVAL);   /* over 10s */
	CHECK(offcpu_parse_duration("1 ms", &ns) == -EINVAL);
	CHECK(offcpu_parse_duration("ms", &ns) == -EINVAL);
	CHECK(offcpu_parse_duration("", &ns) == -EINVAL);
	CHECK(offcpu_parse_duration("nan", &ns) == -EINVAL);
	CHECK(offcpu_parse_duration("1h", &ns) == -EINVAL);
cleanup:;
}

/* An off-CPU record: header, 2 user + 1 kernel frames, then the nanoseconds. */
struct rec {
	struct hearth_rb_sample h;
	uint64_t w[4];
};

static struct rec make_rec(unsigned reason, uint64_t ns)
{
	struct rec r = {.h = {.pid = 10,
			      .tid = 11,
			      .ulen = 2,
			      .klen = 1,
			      .kind = HEARTH_RB_KIND_MAKE(HEARTH_RB_KIND_OFFCPU, reason)},
			.w = {0x401000, 0x402000, 0xffffffff81001000ull, ns}};

	memcpy(r.h.comm, "worker", 7);
	return r;
}

TEST(offcpu_rb_record)
{
	char comm[HEARTH_COMM_LEN + 1], pcomm[HEARTH_COMM_LEN + 1];
	struct sampler_sample s;
	struct rec r = make_rec(HEARTH_OFFCPU_SLEEP, 7000000);

	CHECK(sampler_parse_rb_sample(&r, sizeof(r), &s, comm, pcomm) == 0);
	CHECK(s.count == 7000000 && s.kind == r.h.kind && s.n_user == 2 && s.n_kernel == 1);
	CHECK(s.kernel[0] == 0xffffffff81001000ull && s.user[1] == 0x402000);
	CHECK_STREQ(s.comm, "worker");
	/* the trailing word missing */
	CHECK(sampler_parse_rb_sample(&r, sizeof(r) - 8, &s, comm, pcomm) == -EINVAL);
	/* a reason out of range, an unknown kind */
	r.h.kind = HEARTH_RB_KIND_MAKE(HEARTH_RB_KIND_OFFCPU, HEARTH_OFFCPU_REASON_MAX);
	CHECK(sampler_parse_rb_sample(&r, sizeof(r), &s, comm, pcomm) == -EINVAL);
	r.h.kind = HEARTH_RB_KIND_MAKE(7, 0);
	CHECK(sampler_parse_rb_sample(&r, sizeof(r), &s, comm, pcomm) == -EINVAL);
	r.h.kind = HEARTH_RB_KIND_MAKE(HEARTH_RB_KIND_RUNNING, 1); /* running has no reason */
	CHECK(sampler_parse_rb_sample(&r, sizeof(r), &s, comm, pcomm) == -EINVAL);
	/* "running": CPU samples inside the thread's own walk, their count trailing */
	r.h.kind = HEARTH_RB_KIND_RUNNING;
	r.w[3] = 3;
	CHECK(sampler_parse_rb_sample(&r, sizeof(r), &s, comm, pcomm) == 0);
	CHECK(s.count == 3 && s.kind == HEARTH_RB_KIND_RUNNING && s.n_user == 2);
	CHECK(sampler_parse_rb_sample(&r, sizeof(r) - 8, &s, comm, pcomm) == -EINVAL);
	/* an on-CPU record of the same frames needs no trailing word and counts 1 */
	r.h.kind = 0;
	CHECK(sampler_parse_rb_sample(&r, sizeof(r) - 8, &s, comm, pcomm) == 0);
	CHECK(s.count == 1 && s.kind == 0);
cleanup:;
}

static const char *label_str(const struct profile_sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_labels; i++)
		if (!strcmp(s->labels[i].key, key))
			return s->labels[i].str;
	return NULL;
}

static const char *leaf_name(const struct profile *p, const struct profile_sample *s, char *buf,
			     size_t len)
{
	struct profile_location loc;

	if (!s->n_locs || profile__get_location(p, s->locs[0], &loc) || !loc.n_lines)
		return "";
	return profile__frame_name(p, &loc, 0, buf, len);
}

TEST(offcpu_collector_profile)
{
	struct proc_table *pt = proc_table__new("/proc");
	struct symbolizer *sym = symbolizer__new(&(struct sym_opts){0});
	struct collector *c = pt && sym ? collector__new(pt, sym) : NULL;
	struct profile *p = NULL;
	struct profile_sample s;
	uint64_t user[1] = {0x1000};
	struct sampler_sample sleep = {
	    .pid = (uint32_t)getpid(),
	    .tid = 5,
	    .comm = "t",
	    .n_user = 1,
	    .user = user,
	    .count = 3000000,
	    .kind = HEARTH_RB_KIND_MAKE(HEARTH_RB_KIND_OFFCPU, HEARTH_OFFCPU_SLEEP)};
	struct sampler_sample lock = sleep, cpu = sleep, wall;
	char buf[128];
	bool seen[3] = {false};

	CHECK(c);
	CHECK(collector__set_type(c, OFFCPU_WALL_TYPE) == 0);
	lock.kind = HEARTH_RB_KIND_MAKE(HEARTH_RB_KIND_OFFCPU, HEARTH_OFFCPU_LOCK);
	lock.count = 1000000;
	cpu.kind = 0;
	cpu.count = 4;
	offcpu_wall_sample(&cpu, 10000000, &wall); /* 4 samples at 100 Hz: 40 ms */
	CHECK(wall.count == 40000000 && wall.kind == HEARTH_RB_KIND_RUNNING);
	CHECK(collector__add(c, &sleep) == 0);
	CHECK(collector__add(c, &sleep) == 0); /* same stack and reason: one entry */
	CHECK(collector__add(c, &lock) == 0);  /* same stack, another reason: its own */
	CHECK(collector__add(c, &wall) == 0);
	p = collector__build(c, 10000000, 1, 2);
	CHECK(p);
	CHECK_STREQ(profile__type(p), OFFCPU_WALL_TYPE);
	CHECK(profile__n_samples(p) == 3);
	CHECK(profile__total(p, 0) == 6000000 + 1000000 + 40000000);
	CHECK(profile__total(p, 1) == profile__total(p, 0)); /* one value, both slots */
	for (size_t i = 0; i < 3; i++) {
		const char *r;

		CHECK(profile__sample(p, i, &s) == 0);
		CHECK(s.n_locs == 2); /* the pseudo-frame, then the user frame */
		r = label_str(&s, OFFCPU_LABEL_REASON);
		CHECK(r);
		if (!strcmp(r, "sleep")) {
			CHECK_STREQ(leaf_name(p, &s, buf, sizeof(buf)), "[off-cpu: sleep]");
			CHECK(s.values[0] == 6000000);
			seen[0] = true;
		} else if (!strcmp(r, "lock")) {
			CHECK_STREQ(leaf_name(p, &s, buf, sizeof(buf)), "[off-cpu: lock]");
			seen[1] = true;
		} else {
			CHECK_STREQ(r, "running");
			CHECK_STREQ(leaf_name(p, &s, buf, sizeof(buf)), "[on-cpu]");
			seen[2] = true;
		}
	}
	CHECK(seen[0] && seen[1] && seen[2]);
cleanup:
	profile__free(p);
	collector__free(c);
	symbolizer__free(sym);
	proc_table__free(pt);
}

TEST(offcpu_cpu_profile_unchanged)
{
	struct proc_table *pt = proc_table__new("/proc");
	struct symbolizer *sym = symbolizer__new(&(struct sym_opts){0});
	struct collector *c = pt && sym ? collector__new(pt, sym) : NULL;
	struct profile *p = NULL;
	struct profile_sample s;
	uint64_t user[1] = {0x1000};
	struct sampler_sample cpu = {.pid = (uint32_t)getpid(),
				     .tid = 5,
				     .comm = "t",
				     .n_user = 1,
				     .user = user,
				     .count = 2};

	CHECK(c);
	CHECK(collector__add(c, &cpu) == 0);
	p = collector__build(c, 10000000, 1, 2);
	CHECK(p && profile__type(p) == NULL);
	CHECK(profile__sample(p, 0, &s) == 0);
	CHECK(s.n_locs == 1 && !label_str(&s, OFFCPU_LABEL_REASON)); /* no pseudo-frame */
	CHECK(s.values[0] == 2 && s.values[1] == 20000000);
cleanup:
	profile__free(p);
	collector__free(c);
	symbolizer__free(sym);
	proc_table__free(pt);
}
