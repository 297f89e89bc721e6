/*
 * offcpu: the names of off-CPU and wall-clock profiles (docs/offcpu.md): their
 * profile types, the `reason` label and the leaf pseudo-frame each sample of
 * them carries, and the recorder's counters for summaries and /metrics.
 *
 * The BPF side (bpf/offcpu.bpf.h) sends blocks as samples of kind
 * HEARTH_RB_KIND_OFFCPU (bpf/offcpu_abi.h); the collector names them with this.
 */
#ifndef HEARTH_OFFCPU_H
#define HEARTH_OFFCPU_H

#include <stddef.h>
#include <stdint.h>

#include "offcpu_abi.h"	     /* bpf/ */
#include "profile/profile.h"  /* PROFILE_OFF_CPU_TYPE, PROFILE_WALL_TYPE */
#include "sampler/sampler.h" /* struct sampler_sample */

/* Profile types (Pyroscope naming; the contract of issue 28). */
#define OFFCPU_PROFILE_TYPE PROFILE_OFF_CPU_TYPE
#define OFFCPU_WALL_TYPE    PROFILE_WALL_TYPE
/* Series label of a sample's reason; its value in the wall type for on-CPU time. */
#define OFFCPU_LABEL_REASON "reason"
#define OFFCPU_RUNNING	    "running"
#define OFFCPU_ONCPU_FRAME  "[on-cpu]"
/* Name of the pseudo-mapping the reason frames live under. */
#define OFFCPU_MAPPING "[off-cpu]"

/* "runqueue", "io", "lock", "sleep", "throttled", "other"; NULL out of range. */
const char *offcpu_reason_name(unsigned reason);
/* The reason label of a sample kind (sampler_sample.kind): a reason name for an
 * off-CPU block, OFFCPU_RUNNING for HEARTH_RB_KIND_RUNNING, NULL for 0 (CPU). */
const char *offcpu_kind_label(uint16_t kind);
/* The leaf pseudo-frame of a sample kind: "[off-cpu: REASON]", "[on-cpu]", NULL for 0. */
const char *offcpu_kind_frame(uint16_t kind);
/* A stable address for that frame in OFFCPU_MAPPING (1 + reason; 0x100 on-CPU), 0 for 0. */
uint64_t offcpu_kind_addr(uint16_t kind);
/* Metric-style name of a counter ("switches", "dropped_ringbuf_full"...); NULL out of range. */
const char *offcpu_stat_name(int stat);
/* Whether a counter counts a lost block (its time is missing from the profile). */
int offcpu_stat_is_loss(int stat);
/* One line for a summary: "off-cpu: N switches, N blocks sent (X s), N short (Y s),
 * drops: ..." into buf (always NUL-terminated). Returns buf. */
char *offcpu_format_stats(const uint64_t st[HEARTH_OFFCPU_STAT_MAX], char *buf, size_t len);

/* An on-CPU sample as wall-clock time: *out is *s (its pointers borrowed) of
 * kind HEARTH_RB_KIND_RUNNING whose count is count x period_ns (saturating). */
void offcpu_wall_sample(const struct sampler_sample *s, uint64_t period_ns,
			struct sampler_sample *out);

/* Parses a minimum duration: a number with ns, us, ms or s (ms when none),
 * from 1us to 10s, into *ns. 0 or -EINVAL. */
int offcpu_parse_duration(const char *s, uint64_t *ns);

#endif /* HEARTH_OFFCPU_H */
