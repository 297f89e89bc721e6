/*
 * Per-sample labels the collector does not add: exe, container and unit, read
 * from the process table (cgroup v2 path) and parsed from the cgroup path the
 * way container runtimes and systemd name their cgroups:
 *
 *   /system.slice/docker-<64 hex>.scope              docker (systemd driver)
 *   /docker/<64 hex>                                 docker (cgroupfs driver)
 *   /kubepods.slice/.../cri-containerd-<64 hex>.scope containerd (CRI)
 *   /kubepods.slice/.../crio-<64 hex>.scope          cri-o
 *   /machine.slice/libpod-<64 hex>.scope             podman
 *   /system.slice/nginx.service                      systemd unit
 *
 * The relabelled profile is a copy: mappings, functions and locations are
 * interned again in id order, so every id keeps its value.
 *
 * Series identity (docs/storage.md, "Series identity"): a sample's process is
 * its executable's basename (not the 15-byte comm: "clickhouse-serv"), which
 * with exe, container and unit makes its series; pid, tid and the thread's comm
 * are no series labels (one series per pid made 871 series in 5 minutes of a
 * busy host); they become a task location at the root end of its stack
 * (PROFILE_TASK_MAPPING: pid and tid in its address, comm its function's name),
 * which the query layer strips, filters (pid="…", comm="…") and groups by.
 */
#include "agent_impl.h"
#include "base/base.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return n > 0;
}

/* The container id in one path component, or NULL/0. */
static const char *component_container(const char *c, size_t n, size_t *idlen)
{
	static const char *const prefixes[] = {"docker-", "cri-containerd-", "crio-", "libpod-",
					       "containerd-"};

	if (n > 6 && !strncmp(c + n - 6, ".scope", 6))
		n -= 6;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i]);

		if (n > pl && !strncmp(c, prefixes[i], pl)) {
			c += pl;
			n -= pl;
			break;
		}
	}
	if (n == 64 && all_hex(c, n)) {
		*idlen = n;
		return c;
	}
	return NULL;
}

void agent_cgroup_container(const char *cgroup, char *out, size_t len)
{
	const char *p = cgroup, *id = NULL;
	size_t idlen = 0;

	out[0] = '\0';
	while (p && *p) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p), l;
		const char *c = component_container(p, n, &l);

		if (c) {
			id = c;
			idlen = l;
		}
		p = slash ? slash + 1 : NULL;
	}
	if (id)
		snprintf(out, len, "%.*s", (int)idlen, id);
}

void agent_cgroup_unit(const char *cgroup, char *out, size_t len)
{
	const char *p = cgroup, *unit = NULL, *scope = NULL;
	size_t ul = 0, sl = 0, l;

	out[0] = '\0';
	while (p && *p) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (n > 8 && !strncmp(p + n - 8, ".service", 8)) {
			unit = p;
			ul = n;
		} else if (n > 6 && !strncmp(p + n - 6, ".scope", 6) &&
			   !component_container(p, n, &l)) {
			scope = p;
			sl = n;
		}
		p = slash ? slash + 1 : NULL;
	}
	if (unit)
		snprintf(out, len, "%.*s", (int)ul, unit);
	else if (scope)
		snprintf(out, len, "%.*s", (int)sl, scope);
}

/* Copies mappings, functions and locations in id order (ids stay the same).
 * Locations by (mapping, address, lines): a Python code object's lines share
 * its address (collect.c, python_location). */
static int copy_symbols(const struct profile *src, struct profile *dst)
{
	struct profile_mapping m;
	struct profile_function f;
	struct profile_location l;

	for (uint64_t id = 1; id <= profile__n_mappings(src); id++)
		if (profile__get_mapping(src, id, &m) ||
		    profile__mapping(dst, m.start, m.limit, m.offset, m.file, m.build_id) != id)
			return -ENOMEM;
	for (uint64_t id = 1; id <= profile__n_functions(src); id++)
		if (profile__get_function(src, id, &f) ||
		    profile__function(dst, f.name, f.system_name, f.filename) != id)
			return -ENOMEM;
	for (uint64_t id = 1; id <= profile__n_locations(src); id++)
		if (profile__get_location(src, id, &l) ||
		    profile__location_exact(dst, l.mapping_id, l.address, l.lines, l.n_lines) != id)
			return -ENOMEM;
	for (size_t i = 0; i < profile__n_comments(src); i++)
		if (profile__add_comment(dst, profile__comment(src, i)))
			return -ENOMEM;
	return 0;
}

/* Slots of relabel's per-pass cache of process labels (a power of two). */
#define RELABEL_PIDS 256

/* What a sample's process adds to its labels. */
struct relabel_proc {
	int64_t pid; /* 0: empty slot */
	char *exe;   /* owned; "" when unknown */
	char container[80], unit[256];
};

/* What relabelling one profile needs besides its source. */
struct relabel {
	struct proc_table *pt; /* borrowed */
	uint64_t task_mapping; /* PROFILE_TASK_MAPPING's id in the copy */
	uint64_t *locs;	       /* owned: a stack with its task location */
	size_t cap;
	/* owned, RELABEL_PIDS slots: a pid's labels, looked up once per pass, not
	 * per sample (a process that exited is looked for in /proc again at every
	 * lookup, for pid reuse: on bench/fleet's churn, ~60 failed opens a second).
	 * Copies, not the table's pointers: a lookup may evict an entry. */
	struct relabel_proc *procs;
};

/* The labels of pid's process (proc_table__lookup, any start), through the
 * pass's cache; NULL without memory. */
static const struct relabel_proc *relabel_process(struct relabel *r, int64_t pid)
{
	size_t i = (size_t)((uint64_t)pid * 2654435761u) & (RELABEL_PIDS - 1);
	struct relabel_proc *rp;
	struct proc_process *p;

	if (!r->procs && !(r->procs = calloc(RELABEL_PIDS, sizeof(*r->procs))))
		return NULL;
	rp = &r->procs[i];
	if (rp->pid == pid)
		return rp;
	free(rp->exe);
	*rp = (struct relabel_proc){.pid = pid};
	p = proc_table__lookup(r->pt, (uint32_t)pid, 0);
	if (p) {
		agent_cgroup_container(p->cgroup ? p->cgroup : "", rp->container,
				       sizeof(rp->container));
		agent_cgroup_unit(p->cgroup ? p->cgroup : "", rp->unit, sizeof(rp->unit));
	}
	rp->exe = strdup(p && p->exe ? p->exe : "");
	if (!rp->exe) {
		rp->pid = 0;
		return NULL;
	}
	return rp;
}

static void relabel_free(struct relabel *r)
{
	for (size_t i = 0; r->procs && i < RELABEL_PIDS; i++)
		free(r->procs[i].exe);
	free(r->procs);
	free(r->locs);
}

static const char *exe_basename(const char *exe)
{
	const char *slash = strrchr(exe, '/');

	return slash && slash[1] ? slash + 1 : exe;
}

/* s's locations and its task location (pid, tid, the thread's name comm as its
 * one line's function) at the root end, into r->locs. */
static int task_stack(struct relabel *r, const struct profile_sample *s, struct profile *dst,
		      int64_t pid, int64_t tid, const char *comm)
{
	struct profile_line line = {0, 0};
	uint64_t loc;

	if (base_grow((void **)&r->locs, &r->cap, s->n_locs + 1, sizeof(*r->locs)))
		return -ENOMEM;
	if (s->n_locs)
		memcpy(r->locs, s->locs, s->n_locs * sizeof(*r->locs));
	if (comm && *comm && !(line.function_id = profile__function(dst, comm, comm, "")))
		return -ENOMEM;
	loc = profile__location_exact(dst, r->task_mapping,
				      PROFILE_TASK_ADDR((uint32_t)pid, (uint32_t)tid),
				      line.function_id ? &line : NULL, line.function_id ? 1 : 0);
	if (!loc)
		return -ENOMEM;
	r->locs[s->n_locs] = loc;
	return 0;
}

/* Copies one sample: process named after the executable, exe/container/unit added,
 * pid, tid and comm moved into the stack's task location. */
static int copy_sample(struct relabel *r, const struct profile_sample *s, struct profile *dst)
{
	struct profile_label labels[8];
	const char *exe = "", *comm = NULL, *container = "", *unit = "";
	size_t n = 0, at_process = SIZE_MAX;
	int64_t pid = -1, tid = 0;
	int e;

	for (size_t i = 0; i < s->n_labels && n < 3; i++) {
		if (!strcmp(s->labels[i].key, PROFILE_LABEL_TID)) {
			tid = s->labels[i].num;
			continue;
		}
		if (!strcmp(s->labels[i].key, PROFILE_LABEL_PID)) {
			pid = s->labels[i].num;
			continue;
		}
		if (!strcmp(s->labels[i].key, PROFILE_LABEL_COMM)) {
			comm = s->labels[i].str; /* a thread's name: no series per name */
			continue;
		}
		if (!strcmp(s->labels[i].key, PROFILE_LABEL_PROCESS))
			at_process = n;
		labels[n++] = s->labels[i];
	}
	if (pid > 0) {
		const struct relabel_proc *rp = relabel_process(r, pid);

		if (!rp)
			return -ENOMEM;
		exe = rp->exe;
		container = rp->container;
		unit = rp->unit;
	}
	labels[n++] = (struct profile_label){.key = PROFILE_LABEL_EXE, .str = exe};
	if (container[0])
		labels[n++] =
		    (struct profile_label){.key = PROFILE_LABEL_CONTAINER, .str = container};
	if (unit[0])
		labels[n++] = (struct profile_label){.key = PROFILE_LABEL_UNIT, .str = unit};
	if (exe[0] && at_process != SIZE_MAX)
		labels[at_process].str = exe_basename(exe);
	if (pid < 0) /* not the collector's sample: its stack as it is */
		return profile__add_sample(dst, s->locs, s->n_locs, s->values, labels, n);
	if ((e = task_stack(r, s, dst, pid, tid, comm)))
		return e;
	return profile__add_sample(dst, r->locs, s->n_locs + 1, s->values, labels, n);
}

struct profile *agent_relabel(struct proc_table *pt, const struct profile *src)
{
	struct profile *dst = profile__new(profile__period_ns(src));
	struct relabel r = {.pt = pt};
	struct profile_sample s;

	if (!dst)
		return NULL;
	profile__set_time(dst, profile__time_ns(src), profile__duration_ns(src));
	if (profile__set_type(dst, profile__type(src)) || copy_symbols(src, dst))
		goto fail;
	r.task_mapping = profile__mapping(dst, 0, 0, 0, PROFILE_TASK_MAPPING, NULL);
	if (!r.task_mapping)
		goto fail;
	for (size_t i = 0; i < profile__n_samples(src); i++)
		if (profile__sample(src, i, &s) || copy_sample(&r, &s, dst))
			goto fail;
	relabel_free(&r);
	return dst;
fail:
	relabel_free(&r);
	profile__free(dst);
	return NULL;
}
