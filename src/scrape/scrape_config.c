/*
 * The scrape config: YAML in Parca's and Prometheus' shape, read with libyaml's
 * document API (the whole file as a node tree; every node carries its line),
 * then checked key by key so that every mistake names its line: an unknown key,
 * a value of the wrong kind, a duration that is not one, a timeout longer than
 * its interval, a job name given twice. Only what hearth uses is accepted: a key
 * hearth would silently ignore is refused, so a config never means less than
 * its author thinks.
 */
#include "scrape_impl.h"
#include "base/base.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* The pprof_config keys, their default paths, and whether they are on by default
 * (all are, as in Parca; mutex and block profiles are empty unless the program
 * sets a rate, which costs nothing to fetch). */
static const struct {
	const char *name, *path;
} kinds[SCRAPE_N_KINDS] = {
    [SCRAPE_CPU] = {"process_cpu", "/debug/pprof/profile"},
    [SCRAPE_MEMORY] = {"memory", "/debug/pprof/allocs"},
    [SCRAPE_GOROUTINE] = {"goroutine", "/debug/pprof/goroutine"},
    [SCRAPE_MUTEX] = {"mutex", "/debug/pprof/mutex"},
    [SCRAPE_BLOCK] = {"block", "/debug/pprof/block"},
};

const char *scrape_kind_name(enum scrape_kind k)
{
	return (unsigned)k < SCRAPE_N_KINDS ? kinds[k].name : "?";
}

struct cfg_parse {
	const char *name; /* file name for messages */
	yaml_document_t doc;
	char *err;
	size_t errlen;
	int64_t g_interval, g_timeout; /* global: defaults of every job */
	bool g_has_timeout;
};

__attribute__((format(printf, 4, 5))) static int fail_at(struct cfg_parse *p, yaml_node_t *n,
							 int code, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->err && p->errlen)
		snprintf(p->err, p->errlen, "%s:%zu: %s", p->name, n ? n->start_mark.line + 1 : 1,
			 msg);
	return code;
}

static yaml_node_t *node(struct cfg_parse *p, int id)
{
	return yaml_document_get_node(&p->doc, id);
}

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static const char *node_kind(yaml_node_t *n)
{
	return n->type == YAML_MAPPING_NODE    ? "a mapping"
	       : n->type == YAML_SEQUENCE_NODE ? "a list"
					       : "a value";
}

static int want(struct cfg_parse *p, yaml_node_t *n, yaml_node_type_t t, const char *what)
{
	static const char *names[] = {[YAML_SCALAR_NODE] = "a value",
				      [YAML_SEQUENCE_NODE] = "a list",
				      [YAML_MAPPING_NODE] = "a mapping"};

	if (n->type == t)
		return 0;
	return fail_at(p, n, -EINVAL, "%s must be %s, not %s", what, names[t], node_kind(n));
}

static int dup_str(struct cfg_parse *p, yaml_node_t *n, const char *what, char **out)
{
	int e = want(p, n, YAML_SCALAR_NODE, what);

	if (e)
		return e;
	free(*out);
	*out = strdup(scalar(n));
	return *out ? 0 : -ENOMEM;
}

static int get_duration(struct cfg_parse *p, yaml_node_t *n, const char *key, int64_t *out)
{
	const char *s = scalar(n);
	/* base's one grammar: Prometheus's ms s m h d w terms, and also ns, us and a
	 * plain number of seconds; "0s" (-ERANGE) is well-formed, refused below */
	int e = s ? base_duration_parse(s, out, NULL, 0) : -EINVAL;

	if (e && e != -ERANGE)
		return fail_at(p, n, -EINVAL,
			       "%s: '%s' is not a duration (whole numbers of ms, s, m, h, d, w: "
			       "e.g. 10s, 1m30s)",
			       key, s ? s : node_kind(n));
	/* a timeout may be shorter than the shortest interval, not below 100 ms */
	if (*out <
		(strstr(key, "timeout") ? SCRAPE_MIN_INTERVAL_NS / 10 : SCRAPE_MIN_INTERVAL_NS) ||
	    *out > SCRAPE_MAX_INTERVAL_NS)
		return fail_at(p, n, -EINVAL, "%s: '%s' is outside %s to 1h", key, s,
			       strstr(key, "timeout") ? "100ms" : "1s");
	return 0;
}

static int get_bool(struct cfg_parse *p, yaml_node_t *n, const char *key, bool *out)
{
	const char *s = scalar(n);

	if (s && (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")))
		*out = true;
	else if (s && (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")))
		*out = false;
	else
		return fail_at(p, n, -EINVAL, "%s: '%s' is not true or false", key,
			       s ? s : node_kind(n));
	return 0;
}

/* Label names as Prometheus allows them: [a-zA-Z_][a-zA-Z0-9_]*. */
static bool label_name_ok(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return false;
	for (s++; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

/* Iterates a mapping's pairs: for (pair...) with key string k and value node v. */
#define FOR_PAIRS(p, map, k, kn, v)                                                                \
	for (yaml_node_pair_t *pr_ = (map)->data.mapping.pairs.start;                              \
	     pr_ < (map)->data.mapping.pairs.top && ((kn) = node(p, pr_->key)) &&                  \
	     ((v) = node(p, pr_->value)) && (((k) = scalar(kn)) || 1);                             \
	     pr_++)

static int key_check(struct cfg_parse *p, yaml_node_t *kn, const char *k, const char *where)
{
	if (!k)
		return fail_at(p, kn, -EINVAL, "a key of %s must be a plain value", where);
	return 0;
}

static int parse_labels(struct cfg_parse *p, yaml_node_t *map, struct scrape_target_cfg *t)
{
	yaml_node_t *kn, *v;
	const char *k;
	int e = want(p, map, YAML_MAPPING_NODE, "labels");

	if (e)
		return e;
	FOR_PAIRS(p, map, k, kn, v)
	{
		if (e || (e = key_check(p, kn, k, "labels")))
			return e;
		if (!label_name_ok(k) || !strncmp(k, "__", 2) || !strcmp(k, "job") ||
		    !strcmp(k, "instance"))
			return fail_at(
			    p, kn, -EINVAL,
			    "label name '%s' is not allowed (names are [a-zA-Z_][a-zA-Z0-9_]*; "
			    "job, instance and names starting with __ are hearth's)",
			    k);
		if (!scalar(v))
			return fail_at(p, v, -EINVAL, "label %s must be a value, not %s", k,
				       node_kind(v));
		if (t->n_labels == SCRAPE_MAX_LABELS)
			return fail_at(p, kn, -E2BIG, "more than %d labels", SCRAPE_MAX_LABELS);
		t->labels[t->n_labels].name = strdup(k);
		t->labels[t->n_labels].value = strdup(scalar(v));
		t->n_labels++;
		if (!t->labels[t->n_labels - 1].name || !t->labels[t->n_labels - 1].value)
			return -ENOMEM;
	}
	return e;
}

static bool target_ok(const char *s)
{
	const char *colon = strrchr(s, ':');

	if (!*s || !colon || colon == s || !colon[1] || strlen(s) > 255)
		return false;
	for (; *s; s++)
		if (isspace((unsigned char)*s) || strchr("/?#@", *s))
			return false;
	return true;
}

/* One static_configs entry: its targets, each with the entry's labels. */
static int parse_static(struct cfg_parse *p, yaml_node_t *sc, struct scrape_job_cfg *j,
			size_t *total)
{
	struct scrape_target_cfg proto = {0};
	yaml_node_t *kn, *v, *targets = NULL;
	const char *k;
	int e = want(p, sc, YAML_MAPPING_NODE, "a static_configs entry");

	if (e)
		return e;
	FOR_PAIRS(p, sc, k, kn, v)
	{
		if (e || (e = key_check(p, kn, k, "static_configs")))
			break;
		if (!strcmp(k, "targets"))
			targets = v;
		else if (!strcmp(k, "labels"))
			e = parse_labels(p, v, &proto);
		else
			e = fail_at(p, kn, -EINVAL,
				    "unknown key '%s' in static_configs (known: targets, labels)",
				    k);
	}
	if (!e && !targets)
		e = fail_at(p, sc, -EINVAL, "a static_configs entry without targets");
	if (!e)
		e = want(p, targets, YAML_SEQUENCE_NODE, "targets");
	for (yaml_node_item_t *it = e ? NULL : targets->data.sequence.items.start;
	     it && it < targets->data.sequence.items.top && !e; it++) {
		yaml_node_t *tn = node(p, *it);
		const char *addr = scalar(tn);
		struct scrape_target_cfg *t;

		if (!addr || !target_ok(addr)) {
			e = fail_at(p, tn, -EINVAL, "target '%s' is not HOST:PORT",
				    addr ? addr : node_kind(tn));
			break;
		}
		if (++*total > SCRAPE_MAX_TARGETS) {
			e = fail_at(p, tn, -E2BIG, "more than %d targets", SCRAPE_MAX_TARGETS);
			break;
		}
		t = reallocarray(j->targets, j->n_targets + 1, sizeof(*t));
		if (!t) {
			e = -ENOMEM;
			break;
		}
		j->targets = t;
		t = &j->targets[j->n_targets++];
		memset(t, 0, sizeof(*t));
		if (!(t->address = strdup(addr)))
			e = -ENOMEM;
		for (size_t i = 0; !e && i < proto.n_labels; i++, t->n_labels++) {
			t->labels[i].name = strdup(proto.labels[i].name);
			t->labels[i].value = strdup(proto.labels[i].value);
			if (!t->labels[i].name || !t->labels[i].value)
				e = -ENOMEM;
		}
	}
	scrape_target_cfg__fini(&proto);
	return e;
}

static int parse_profile(struct cfg_parse *p, yaml_node_t *map, enum scrape_kind kind,
			 struct scrape_profile_cfg *pc)
{
	yaml_node_t *kn, *v;
	const char *k;
	bool delta = true;
	int e = want(p, map, YAML_MAPPING_NODE, kinds[kind].name);

	if (e)
		return e;
	FOR_PAIRS(p, map, k, kn, v)
	{
		if (e || (e = key_check(p, kn, k, kinds[kind].name)))
			break;
		if (!strcmp(k, "enabled")) {
			e = get_bool(p, v, "enabled", &pc->enabled);
		} else if (!strcmp(k, "path")) {
			e = dup_str(p, v, "path", &pc->path);
			if (!e && (pc->path[0] != '/' || strpbrk(pc->path, " \t\r\n#?")))
				e = fail_at(p, v, -EINVAL, "path '%s' must start with '/'",
					    pc->path);
		} else if (!strcmp(k, "delta") && kind == SCRAPE_CPU) {
			e = get_bool(p, v, "delta", &delta);
			if (!e && !delta)
				e = fail_at(p, v, -EINVAL,
					    "delta: false is not supported: hearth fetches CPU "
					    "profiles as a delta over each scrape interval");
		} else {
			e = fail_at(p, kn, -EINVAL,
				    "unknown key '%s' in %s (known: enabled, path%s)", k,
				    kinds[kind].name, kind == SCRAPE_CPU ? ", delta" : "");
		}
	}
	return e;
}

static int parse_pprof_config(struct cfg_parse *p, yaml_node_t *map, struct scrape_job_cfg *j)
{
	yaml_node_t *kn, *v;
	const char *k;
	int e = want(p, map, YAML_MAPPING_NODE, "pprof_config");

	if (e)
		return e;
	FOR_PAIRS(p, map, k, kn, v)
	{
		int kind = 0;

		if (e || (e = key_check(p, kn, k, "pprof_config")))
			break;
		while (kind < SCRAPE_N_KINDS && strcmp(k, kinds[kind].name))
			kind++;
		if (kind == SCRAPE_N_KINDS)
			e = fail_at(p, kn, -EINVAL,
				    "unknown profile '%s' in pprof_config (known: process_cpu, "
				    "memory, goroutine, mutex, block)",
				    k);
		else
			e = parse_profile(p, v, (enum scrape_kind)kind, &j->prof[kind]);
	}
	return e;
}

static int get_prefix(struct cfg_parse *p, yaml_node_t *v, char **prefix)
{
	int e = dup_str(p, v, "path_prefix", prefix);

	if (!e && ((*prefix)[0] != '/' || strpbrk(*prefix, " \t\r\n#?")))
		e = fail_at(p, v, -EINVAL, "path_prefix '%s' must start with '/'", *prefix);
	return e;
}

static int parse_profiling(struct cfg_parse *p, yaml_node_t *map, struct scrape_job_cfg *j,
			   char **prefix)
{
	yaml_node_t *kn, *v;
	const char *k;
	int e = want(p, map, YAML_MAPPING_NODE, "profiling_config");

	if (e)
		return e;
	FOR_PAIRS(p, map, k, kn, v)
	{
		if (e || (e = key_check(p, kn, k, "profiling_config")))
			break;
		if (!strcmp(k, "pprof_config"))
			e = parse_pprof_config(p, v, j);
		else if (!strcmp(k, "path_prefix"))
			e = get_prefix(p, v, prefix);
		else
			e = fail_at(p, kn, -EINVAL,
				    "unknown key '%s' in profiling_config (known: pprof_config, "
				    "path_prefix)",
				    k);
	}
	return e;
}

/* Paths with the prefix, defaults where the config gave none. */
static int finish_paths(struct scrape_job_cfg *j, const char *prefix)
{
	for (int k = 0; k < SCRAPE_N_KINDS; k++) {
		const char *path = j->prof[k].path ? j->prof[k].path : kinds[k].path;
		size_t n = strlen(prefix ? prefix : "") + strlen(path) + 1;
		char *full = malloc(n);

		if (!full)
			return -ENOMEM;
		snprintf(full, n, "%s%s", prefix ? prefix : "", path);
		free(j->prof[k].path);
		j->prof[k].path = full;
	}
	return 0;
}

static int job_key(struct cfg_parse *p, yaml_node_t *kn, const char *k, yaml_node_t *v,
		   struct scrape_job_cfg *j, bool *has_timeout, char **prefix, size_t *total)
{
	if (!strcmp(k, "job_name"))
		return dup_str(p, v, "job_name", &j->name);
	if (!strcmp(k, "scrape_interval"))
		return get_duration(p, v, k, &j->interval_ns);
	if (!strcmp(k, "scrape_timeout")) {
		*has_timeout = true;
		return get_duration(p, v, k, &j->timeout_ns);
	}
	if (!strcmp(k, "scheme")) {
		int e = dup_str(p, v, "scheme", &j->scheme);

		if (!e && strcmp(j->scheme, "http") && strcmp(j->scheme, "https"))
			e = fail_at(p, v, -EINVAL, "scheme '%s' is not http or https", j->scheme);
		return e;
	}
	if (!strcmp(k, "static_configs")) {
		int e = want(p, v, YAML_SEQUENCE_NODE, "static_configs");

		for (yaml_node_item_t *it = e ? NULL : v->data.sequence.items.start;
		     it && it < v->data.sequence.items.top && !e; it++)
			e = parse_static(p, node(p, *it), j, total);
		return e;
	}
	if (!strcmp(k, "profiling_config"))
		return parse_profiling(p, v, j, prefix);
	return fail_at(p, kn, -EINVAL,
		       "unknown key '%s' in a scrape config (known: job_name, scrape_interval, "
		       "scrape_timeout, scheme, static_configs, profiling_config)",
		       k);
}

static int parse_job(struct cfg_parse *p, yaml_node_t *map, struct scrape_job_cfg *j, size_t *total)
{
	yaml_node_t *kn, *v;
	const char *k;
	bool has_timeout = p->g_has_timeout;
	char *prefix = NULL;
	int e = want(p, map, YAML_MAPPING_NODE, "a scrape_configs entry");

	j->line = (int)map->start_mark.line + 1;
	j->interval_ns = p->g_interval;
	j->timeout_ns = p->g_timeout;
	for (int i = 0; i < SCRAPE_N_KINDS; i++)
		j->prof[i].enabled = true;
	if (e)
		return e;
	FOR_PAIRS(p, map, k, kn, v)
	{
		if (e || (e = key_check(p, kn, k, "a scrape config")))
			break;
		e = job_key(p, kn, k, v, j, &has_timeout, &prefix, total);
	}
	if (!e && (!j->name || !*j->name))
		e = fail_at(p, map, -EINVAL, "a scrape config without job_name");
	if (!e && !j->scheme && !(j->scheme = strdup("http")))
		e = -ENOMEM;
	if (!e && !has_timeout && j->timeout_ns > j->interval_ns)
		j->timeout_ns =
		    j->interval_ns; /* Prometheus: the default never exceeds the interval */
	if (!e && j->timeout_ns > j->interval_ns)
		e = fail_at(
		    p, map, -EINVAL,
		    "job '%s': scrape_timeout (%llds) is longer than scrape_interval (%llds)",
		    j->name, (long long)(j->timeout_ns / 1000000000),
		    (long long)(j->interval_ns / 1000000000));
	if (!e)
		e = finish_paths(j, prefix);
	free(prefix);
	return e;
}

static int parse_global(struct cfg_parse *p, yaml_node_t *map)
{
	yaml_node_t *kn, *v;
	const char *k;
	int e = want(p, map, YAML_MAPPING_NODE, "global");

	if (e)
		return e;
	FOR_PAIRS(p, map, k, kn, v)
	{
		if (e || (e = key_check(p, kn, k, "global")))
			break;
		if (!strcmp(k, "scrape_interval")) {
			e = get_duration(p, v, k, &p->g_interval);
		} else if (!strcmp(k, "scrape_timeout")) {
			p->g_has_timeout = true;
			e = get_duration(p, v, k, &p->g_timeout);
		} else {
			e = fail_at(p, kn, -EINVAL,
				    "unknown key '%s' in global (known: scrape_interval, "
				    "scrape_timeout)",
				    k);
		}
	}
	return e;
}

static int parse_jobs(struct cfg_parse *p, yaml_node_t *seq, struct scrape_config *c)
{
	size_t total = 0;
	int e = want(p, seq, YAML_SEQUENCE_NODE, "scrape_configs");

	for (yaml_node_item_t *it = e ? NULL : seq->data.sequence.items.start;
	     it && it < seq->data.sequence.items.top && !e; it++) {
		yaml_node_t *jn = node(p, *it);

		if (c->n_jobs == SCRAPE_MAX_JOBS)
			return fail_at(p, jn, -E2BIG, "more than %d scrape configs",
				       SCRAPE_MAX_JOBS);
		c->jobs[c->n_jobs] = (struct scrape_job_cfg){0};
		e = parse_job(p, jn, &c->jobs[c->n_jobs], &total);
		c->n_jobs++; /* freed with the config even when half parsed */
		for (size_t i = 0; !e && i + 1 < c->n_jobs; i++)
			if (!strcmp(c->jobs[i].name, c->jobs[c->n_jobs - 1].name))
				e = fail_at(p, jn, -EINVAL,
					    "job_name '%s' is also the name of the job at line %d",
					    c->jobs[i].name, c->jobs[i].line);
	}
	return e;
}

static int parse_root(struct cfg_parse *p, yaml_node_t *root, struct scrape_config *c)
{
	yaml_node_t *kn, *v, *jobs = NULL, *global = NULL;
	const char *k;
	int e;

	if (!root)
		return fail_at(p, NULL, -EINVAL, "the file is empty (expected scrape_configs)");
	e = want(p, root, YAML_MAPPING_NODE, "the file");
	if (e)
		return e;
	FOR_PAIRS(p, root, k, kn, v)
	{
		if (e || (e = key_check(p, kn, k, "the file")))
			break;
		if (!strcmp(k, "scrape_configs"))
			jobs = v;
		else if (!strcmp(k, "global"))
			global = v;
		else
			e = fail_at(p, kn, -EINVAL,
				    "unknown key '%s' (known: global, scrape_configs)", k);
	}
	if (!e && global)
		e = parse_global(p, global);
	if (!e && p->g_timeout > p->g_interval) {
		if (p->g_has_timeout)
			e = fail_at(p, global, -EINVAL,
				    "global scrape_timeout is longer than scrape_interval");
		p->g_timeout = p->g_interval;
	}
	if (!e && !jobs)
		e = fail_at(p, root, -EINVAL, "no scrape_configs in the file");
	if (!e)
		e = parse_jobs(p, jobs, c);
	return e;
}

/*
 * Refuses a document nested deeper than SCRAPE_MAX_DEPTH (collections in
 * collections, flow or block) before libyaml's document API sees it: libyaml's
 * scanner walks its stack of possible simple keys, one per flow level, for every
 * token, so a file of '[' costs quadratic time (50,000 of them took 7.5 s, 100,000
 * 54 s, 600 KB over 170 s). A pass over the events stops at the first level too
 * deep, the stack still short. 0 (also for a syntax error: the load that follows
 * reports it), -E2BIG with err set, or -ENOMEM.
 */
static int check_depth(const char *name, const char *buf, size_t len, char *err, size_t errlen)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	int depth = 0, e = 0;
	bool done = false;

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done && !e) {
		if (!yaml_parser_parse(&parser, &ev)) {
			e = parser.error == YAML_MEMORY_ERROR ? -ENOMEM : 0;
			break;
		}
		if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
			if (++depth > SCRAPE_MAX_DEPTH) {
				if (err && errlen)
					snprintf(err, errlen,
						 "%s:%zu: nested deeper than %d levels (lists and "
						 "maps in one another)",
						 name, ev.start_mark.line + 1, SCRAPE_MAX_DEPTH);
				e = -E2BIG;
			}
		} else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
			depth--;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return e;
}

int scrape_config__parse(const char *name, const char *buf, size_t len, struct scrape_config **out,
			 char *err, size_t errlen)
{
	struct cfg_parse p = {.name = name ? name : "config",
			      .err = err,
			      .errlen = errlen,
			      .g_interval = SCRAPE_DEFAULT_INTERVAL_NS,
			      .g_timeout = SCRAPE_DEFAULT_TIMEOUT_NS};
	struct scrape_config *c = calloc(1, sizeof(*c));
	yaml_parser_t parser;
	bool have_doc = false;
	int e = 0;

	*out = NULL;
	if (!c || !(c->jobs = calloc(SCRAPE_MAX_JOBS, sizeof(*c->jobs)))) {
		free(c);
		return -ENOMEM;
	}
	if (len > SCRAPE_MAX_CONFIG) { /* scrape_config__load's bound, for any caller */
		if (err && errlen)
			snprintf(err, errlen, "%s:1: the config is larger than %u bytes", p.name,
				 SCRAPE_MAX_CONFIG);
		scrape_config__free(c);
		return -E2BIG;
	}
	if ((e = check_depth(p.name, buf, len, err, errlen))) {
		scrape_config__free(c);
		return e;
	}
	if (!yaml_parser_initialize(&parser)) {
		scrape_config__free(c);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &p.doc)) {
		if (err && errlen)
			snprintf(err, errlen, "%s:%zu: %s%s%s", p.name,
				 parser.problem_mark.line + 1, parser.problem ? parser.problem : "",
				 parser.context ? " " : "", parser.context ? parser.context : "");
		e = parser.error == YAML_MEMORY_ERROR ? -ENOMEM : -EINVAL;
	} else {
		have_doc = true;
		e = parse_root(&p, yaml_document_get_root_node(&p.doc), c);
	}
	if (have_doc)
		yaml_document_delete(&p.doc);
	yaml_parser_delete(&parser);
	if (e)
		scrape_config__free(c);
	else
		*out = c;
	return e;
}

int scrape_config__load(const char *path, struct scrape_config **out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t n;
	int e = 0;

	*out = NULL;
	if (!f) {
		e = -errno;
		snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
		return e;
	}
	buf = malloc(SCRAPE_MAX_CONFIG + 1);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(buf, 1, SCRAPE_MAX_CONFIG + 1, f);
	if (ferror(f)) {
		e = -EIO;
		snprintf(err, errlen, "cannot read '%s'", path);
	} else { /* one byte too many: parse refuses the size */
		e = scrape_config__parse(path, buf, n, out, err, errlen);
	}
	fclose(f);
	free(buf);
	return e;
}

void scrape_target_cfg__fini(struct scrape_target_cfg *t)
{
	free(t->address);
	for (size_t i = 0; i < t->n_labels; i++) {
		free(t->labels[i].name);
		free(t->labels[i].value);
	}
	memset(t, 0, sizeof(*t));
}

void scrape_config__free(struct scrape_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_jobs; i++) {
		struct scrape_job_cfg *j = &c->jobs[i];

		for (size_t t = 0; t < j->n_targets; t++)
			scrape_target_cfg__fini(&j->targets[t]);
		for (int k = 0; k < SCRAPE_N_KINDS; k++)
			free(j->prof[k].path);
		free(j->targets);
		free(j->name);
		free(j->scheme);
	}
	free(c->jobs);
	free(c);
}

size_t scrape_config__n_targets(const struct scrape_config *c)
{
	size_t n = 0;

	for (size_t i = 0; c && i < c->n_jobs; i++)
		n += c->jobs[i].n_targets;
	return n;
}
