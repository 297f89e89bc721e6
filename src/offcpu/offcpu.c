/*
 * offcpu: names of the off-CPU reasons, sample kinds and counters. Small and
 * table-driven: the one spelling of each, shared by the collector (labels and
 * pseudo-frames), record's summary and the agent's /metrics.
 */
#include "offcpu.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const reason_names[HEARTH_OFFCPU_REASON_MAX] = {
    [HEARTH_OFFCPU_RUNQUEUE] = "runqueue",   [HEARTH_OFFCPU_IO] = "io",
    [HEARTH_OFFCPU_LOCK] = "lock",	     [HEARTH_OFFCPU_SLEEP] = "sleep",
    [HEARTH_OFFCPU_THROTTLED] = "throttled", [HEARTH_OFFCPU_OTHER] = "other",
};

static const char *const reason_frames[HEARTH_OFFCPU_REASON_MAX] = {
    [HEARTH_OFFCPU_RUNQUEUE] = "[off-cpu: runqueue]",	[HEARTH_OFFCPU_IO] = "[off-cpu: io]",
    [HEARTH_OFFCPU_LOCK] = "[off-cpu: lock]",		[HEARTH_OFFCPU_SLEEP] = "[off-cpu: sleep]",
    [HEARTH_OFFCPU_THROTTLED] = "[off-cpu: throttled]", [HEARTH_OFFCPU_OTHER] = "[off-cpu: other]",
};

static const char *const stat_names[HEARTH_OFFCPU_STAT_MAX] = {
    [HEARTH_OFFCPU_SWITCHES] = "switches",
    [HEARTH_OFFCPU_BLOCKS] = "blocks",
    [HEARTH_OFFCPU_SHORT] = "short_blocks",
    [HEARTH_OFFCPU_SHORT_NS] = "short_ns",
    [HEARTH_OFFCPU_SENT_NS] = "sent_ns",
    [HEARTH_OFFCPU_NO_STORAGE] = "dropped_no_storage",
    [HEARTH_OFFCPU_RINGBUF_FULL] = "dropped_ringbuf_full",
    [HEARTH_OFFCPU_LEAF_ONLY] = "leaf_only",
    [HEARTH_OFFCPU_STACK_LOST] = "stack_lost",
    [HEARTH_OFFCPU_FP_FALLBACK] = "fp_fallback",
    [HEARTH_OFFCPU_MERGED] = "merged",
    [HEARTH_OFFCPU_WALK_SAMPLES] = "walk_samples",
};

const char *offcpu_reason_name(unsigned reason)
{
	return reason < HEARTH_OFFCPU_REASON_MAX ? reason_names[reason] : NULL;
}

const char *offcpu_kind_label(uint16_t kind)
{
	if (HEARTH_RB_KIND_TYPE(kind) == HEARTH_RB_KIND_RUNNING)
		return OFFCPU_RUNNING;
	if (HEARTH_RB_KIND_TYPE(kind) == HEARTH_RB_KIND_OFFCPU)
		return offcpu_reason_name(HEARTH_RB_KIND_REASON(kind));
	return NULL;
}

const char *offcpu_kind_frame(uint16_t kind)
{
	unsigned r = HEARTH_RB_KIND_REASON(kind);

	if (HEARTH_RB_KIND_TYPE(kind) == HEARTH_RB_KIND_RUNNING)
		return OFFCPU_ONCPU_FRAME;
	if (HEARTH_RB_KIND_TYPE(kind) == HEARTH_RB_KIND_OFFCPU && r < HEARTH_OFFCPU_REASON_MAX)
		return reason_frames[r];
	return NULL;
}

uint64_t offcpu_kind_addr(uint16_t kind)
{
	if (HEARTH_RB_KIND_TYPE(kind) == HEARTH_RB_KIND_RUNNING)
		return 0x100;
	if (HEARTH_RB_KIND_TYPE(kind) == HEARTH_RB_KIND_OFFCPU)
		return 1 + (uint64_t)HEARTH_RB_KIND_REASON(kind);
	return 0;
}

const char *offcpu_stat_name(int stat)
{
	return stat >= 0 && stat < HEARTH_OFFCPU_STAT_MAX ? stat_names[stat] : NULL;
}

int offcpu_stat_is_loss(int stat)
{
	return stat == HEARTH_OFFCPU_NO_STORAGE || stat == HEARTH_OFFCPU_RINGBUF_FULL;
}

char *offcpu_format_stats(const uint64_t st[HEARTH_OFFCPU_STAT_MAX], char *buf, size_t len)
{
	snprintf(buf, len,
		 "off-cpu: %llu switches, %llu blocks sent (%.3f s), %llu under the minimum "
		 "(%.3f s, no stack); dropped: %llu no task storage, %llu ring buffer full; "
		 "degraded: %llu leaf pc only, %llu stack lost, %llu frame pointers; "
		 "%llu CPU samples inside a thread's walk sent as its on-CPU time",
		 (unsigned long long)st[HEARTH_OFFCPU_SWITCHES],
		 (unsigned long long)st[HEARTH_OFFCPU_BLOCKS], st[HEARTH_OFFCPU_SENT_NS] / 1e9,
		 (unsigned long long)st[HEARTH_OFFCPU_SHORT], st[HEARTH_OFFCPU_SHORT_NS] / 1e9,
		 (unsigned long long)st[HEARTH_OFFCPU_NO_STORAGE],
		 (unsigned long long)st[HEARTH_OFFCPU_RINGBUF_FULL],
		 (unsigned long long)st[HEARTH_OFFCPU_LEAF_ONLY],
		 (unsigned long long)st[HEARTH_OFFCPU_STACK_LOST],
		 (unsigned long long)st[HEARTH_OFFCPU_FP_FALLBACK],
		 (unsigned long long)st[HEARTH_OFFCPU_WALK_SAMPLES]);
	return buf;
}

int offcpu_parse_duration(const char *s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"", 1e6}};
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		v *= units[i].ns;
		if (v < 1e3 || v > 1e10)
			return -EINVAL;
		*ns = (uint64_t)v;
		return 0;
	}
	return -EINVAL;
}

void offcpu_wall_sample(const struct sampler_sample *s, uint64_t period_ns,
			struct sampler_sample *out)
{
	*out = *s;
	out->kind = HEARTH_RB_KIND_RUNNING;
	out->count =
	    period_ns && s->count > UINT64_MAX / period_ns ? UINT64_MAX : s->count * period_ns;
}
