/*
 * ingest: the one way a profile enters hearth's storage. Every producer —
 * POST /ingest (after its HTTP and format decoding), hearth run's in-process
 * agent, later scrapers and other backends — fills a struct ingest_request
 * (series labels, time range, flat profile) and calls ingest__store, which
 * applies the rules every stored profile follows (docs/api.md, "Time") and
 * hands the flat profile to the store's one append path. Profiles become query
 * strings and pprof bytes only at an HTTP or spool boundary, never on the way
 * from a producer in this process to a stored row.
 *
 * The label vocabulary lives here: the names producers and readers agree on.
 *
 * Return contract: 0 on success, -errno on failure with one sentence in err
 * (may be NULL). The caller's mistakes: -EINVAL (bad label, from after until),
 * -E2BIG (too many or too long labels), -EDQUOT (series limit), -ERANGE (a time
 * before 1970 or beyond the clock skew), -EDOM (a negative sample value).
 * Anything else (-ENOMEM, -EIO, -ENOSPC) is the store's or the host's.
 */
#ifndef HEARTH_INGEST_H
#define HEARTH_INGEST_H

#include "profile/profile.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Label holding the application name of a Pyroscope `name=APP{...}` ingest; the
 * query syntax `APP{...}` matches it. */
#define INGEST_NAME_LABEL PROFILE_LABEL_NAME
/* Application name of hearth's own agent. */
#define INGEST_AGENT_APP "hearth"
/*
 * The labels Grafana's Pyroscope data source relies on (docs/grafana.md).
 * Every stored series has both: ingest__store fills in what a producer left out.
 *  - STORE_PROFILE_TYPE_LABEL ("__profile_type__"): a request label of that
 *    name becomes the series' profile type (not a stored label); without one,
 *    the type the profile's own sample types name (profile_flat__type: an
 *    off-CPU or wall pprof or model), else STORE_CPU_PROFILE_TYPE.
 *  - INGEST_SERVICE_LABEL: a push's app name (__name__); for hearth's agent
 *    (__name__ INGEST_AGENT_APP, or none), per sample, the sample's systemd
 *    unit, else its process, else its comm, else the app name.
 */
#define INGEST_SERVICE_LABEL PROFILE_LABEL_SERVICE
/* Per-profile labels of hearth's agent. */
#define INGEST_HOST_LABEL   PROFILE_LABEL_HOST
#define INGEST_KERNEL_LABEL PROFILE_LABEL_KERNEL
/*
 * Per-sample labels of hearth's agent that become series labels; other sample
 * labels are dropped (e.g. tid, which would make a series per thread). Since
 * issue 30 hearth's agent sends neither pid nor comm (a series per process or
 * thread name): it keeps pid and tid in each stack's task location
 * (PROFILE_TASK_MAPPING); a pushed profile's pid and comm (OTLP's process.pid,
 * thread.name) still become series labels, as in stores written before.
 * ingest_sample_labels holds the same names, NULL-terminated (the store's
 * store_opts.sample_labels).
 */
#define INGEST_SAMPLE_LABELS                                                                       \
	{                                                                                          \
		PROFILE_LABEL_PID, PROFILE_LABEL_COMM, PROFILE_LABEL_PROCESS, PROFILE_LABEL_EXE,   \
		    PROFILE_LABEL_CONTAINER, PROFILE_LABEL_UNIT, INGEST_SERVICE_LABEL,             \
		    INGEST_REASON_LABEL                                                            \
	}
#define INGEST_N_SAMPLE_LABELS 8
/* Why an off-CPU (or wall) sample's thread waited (docs/offcpu.md): a series
 * label, so a view filters or groups by it. The same string as OFFCPU_LABEL_REASON. */
#define INGEST_REASON_LABEL "reason"
extern const char *const ingest_sample_labels[INGEST_N_SAMPLE_LABELS + 1];

/* Most series labels a request may carry (name=APP{...} plus the profile's own). */
#define INGEST_MAX_LABELS 32
/* A stored profile may start at most this far ahead of the clock: a later time
 * would outlive retention and keep rollups busy (docs/api.md). */
#define INGEST_MAX_CLOCK_SKEW_NS (10 * 60 * 1000000000LL)
/* Longer profile durations are clamped to this (a chunk lives until start + duration). */
#define INGEST_MAX_PROFILE_DURATION_NS (3600 * 1000000000LL)

/* One profile to store. */
struct ingest_request {
	/* Series labels of the whole profile (e.g. __name__, host, kernel); a
	 * sample's own kept labels override one of the same name. Borrowed. */
	const struct store_label *labels;
	size_t n_labels;
	/* Time range of the profile, ns since the epoch; has_range false: the
	 * profile's own time_ns/duration_ns. */
	bool has_range;
	int64_t from_ns, until_ns;
	/* Borrowed; its time_ns/duration_ns are set in place to what is stored. */
	struct profile_flat *profile;
};

/*
 * Stores req->profile in store s (either backend: store.h)
 * under req->labels at [from, until) (or the profile's own time), after the rules of every stored
 * profile: from <= until (-EINVAL), a start before 1970 or more than INGEST_MAX_CLOCK_SKEW_NS after
 * now_ns
 * (-ERANGE), negative sample values (-EDOM); the duration is clamped to
 * [0, INGEST_MAX_PROFILE_DURATION_NS]. Atomic (store__append_flat): on error
 * nothing is stored. res may be NULL.
 */
int ingest__store(struct store *s, struct ingest_request *req, int64_t now_ns,
		  struct store_append_result *res, char *err, size_t errlen);

/*
 * 0, or -ERANGE when t is before 1970 or more than INGEST_MAX_CLOCK_SKEW_NS
 * after now_ns; err names `what`, the time and the allowed skew.
 */
int ingest_check_time(const char *what, int64_t t, int64_t now_ns, char *err, size_t errlen);

/* The realtime clock in ns since the epoch. */
int64_t ingest_now_ns(void);

#endif /* HEARTH_INGEST_H */
