/*
 * Parsing of the text formats Pyroscope clients push to /ingest:
 *
 *     folded:  "root;caller;leaf COUNT\n"   (flamegraph.pl, collapsed stacks)
 *     lines:   "root;caller;leaf\n"         (one sample per line)
 *
 * Each distinct frame name becomes a function and a location without a mapping
 * (address = function id, so locations are interned once per name); stacks are
 * stored leaf first as the model wants. Outside input: every line is bounded
 * (stacks cut to PROFILE_MAX_FRAMES frames, counts up to 2^53), and one bad
 * line rejects the whole body, naming the line, so nothing half-parsed is ever
 * stored. On a memory budget (profile_text_parse_budget) the model is weighed
 * (profile__bytes) every TEXT_CHECK_BYTES of text: distinct short frame names
 * cost ~50 bytes of model per byte of text, so 32 MiB of them once took 2 GB.
 */
#include "profile.h"
#include "profile_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Text parsed between two weighings of the model: it grows by at most ~400 bytes
 * per byte of text (one new function, location and string per frame), so a
 * parse overshoots its budget by a few MiB at most. */
#define TEXT_CHECK_BYTES (16u << 10)

struct text_parser {
	struct profile *p;
	size_t budget;	/* 0: none */
	uint64_t *locs; /* scratch, PROFILE_MAX_FRAMES entries */
	int64_t period_ns;
	bool lines;
	char *err;
	size_t errlen;
};

static int text_error(struct text_parser *tp, size_t lineno, const char *why)
{
	if (tp->err && tp->errlen)
		snprintf(tp->err, tp->errlen, "line %zu: %s", lineno, why);
	return -EINVAL;
}

/* Splits "stack COUNT" at the last blank; 0, or -EINVAL when the count is malformed. */
static int split_count(char *line, size_t *stack_len, int64_t *count)
{
	char *sp = strrchr(line, ' '), *end;
	unsigned long long v;

	if (!sp || sp[1] < '0' || sp[1] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(sp + 1, &end, 10);
	if (errno || *end || v > (1ull << 53))
		return -EINVAL;
	*count = (int64_t)v;
	*stack_len = (size_t)(sp - line);
	return 0;
}

/* The number of frames of a root-first stack (strtok_r's: empty ones skipped). */
static size_t count_frames(const char *stack)
{
	size_t n = 0;

	for (const char *c = stack; *c; c++)
		n += *c != ';' && (c == stack || c[-1] == ';');
	return n;
}

/* After the first k frames of a stack (and their separator). */
static char *skip_frames(char *stack, size_t k)
{
	for (char *c = stack; *c; c++)
		if (*c != ';' && (c == stack || c[-1] == ';') && k-- == 0)
			return c;
	return stack + strlen(stack);
}

/* The location of a frame named name (a function without a mapping). */
static uint64_t frame_loc(struct text_parser *tp, const char *name)
{
	struct profile_line ln = {profile__function(tp->p, name, name, NULL), 0};

	return ln.function_id ? profile__location(tp->p, 0, ln.function_id, &ln, 1) : 0;
}

/*
 * Interns the frames of a root-first stack, filling tp->locs leaf first. A
 * stack deeper than PROFILE_MAX_FRAMES starts with PROFILE_TRUNCATED_FRAME in
 * place of its root-side frames (see profile.h). Count or -errno.
 */
static int stack_locs(struct text_parser *tp, char *stack, size_t lineno)
{
	size_t n = 0, depth = count_frames(stack);
	char *save = NULL;

	if (depth > PROFILE_MAX_FRAMES) {
		if (!(tp->locs[n++] = frame_loc(tp, PROFILE_TRUNCATED_FRAME)))
			return -ENOMEM;
		stack = skip_frames(stack, depth - (PROFILE_MAX_FRAMES - 1));
	}
	for (char *f = strtok_r(stack, ";", &save); f; f = strtok_r(NULL, ";", &save)) {
		if (n == PROFILE_MAX_FRAMES) /* not reached: count_frames counted them */
			return text_error(tp, lineno, "stack deeper than the frame limit");
		if (!(tp->locs[n++] = frame_loc(tp, f)))
			return -ENOMEM;
	}
	if (n == 0)
		return text_error(tp, lineno, "empty stack");
	for (size_t i = 0; i < n / 2; i++) { /* root first -> leaf first */
		uint64_t t = tp->locs[i];

		tp->locs[i] = tp->locs[n - 1 - i];
		tp->locs[n - 1 - i] = t;
	}
	return (int)n;
}

static int parse_line(struct text_parser *tp, char *line, size_t lineno)
{
	size_t len = strlen(line), stack_len = len;
	int64_t count = 1, values[PROFILE_N_VALUES];
	int n;

	if (len && line[len - 1] == '\r')
		line[--len] = '\0';
	if (len == 0)
		return 0;
	if (!tp->lines && split_count(line, &stack_len, &count))
		return text_error(tp, lineno, "expected \"frame;frame;... COUNT\"");
	line[stack_len] = '\0';
	if (count == 0)
		return 0;
	n = stack_locs(tp, line, lineno);
	if (n < 0)
		return n;
	values[0] = count;
	values[1] = base_sat_mul(count, tp->period_ns); /* 2^53 x 1 s saturates */
	return profile__add_sample(tp->p, tp->locs, (size_t)n, values, NULL, 0);
}

/*
 * Whether the parse is over its budget: the text's copy and the model, plus its
 * flat form to come (profile__to_flat measured at 0.2-0.42 of the model for
 * folded text; half is taken).
 */
static int weigh(struct text_parser *tp, size_t len, size_t lineno)
{
	size_t model = profile__bytes(tp->p);

	if (!tp->budget || len + model + model / 2 <= tp->budget)
		return 0;
	if (tp->err && tp->errlen)
		snprintf(tp->err, tp->errlen,
			 "line %zu: the profile's model takes %zu MiB by this line; with the "
			 "text and its flat form that is over the memory budget of %zu MiB",
			 lineno, model >> 20, tp->budget >> 20);
	return -EFBIG;
}

int profile_text_parse(const char *buf, size_t len, bool lines, int64_t period_ns,
		       struct profile **out, char *err, size_t errlen)
{
	return profile_text_parse_budget(buf, len, lines, period_ns, 0, out, err, errlen);
}

int profile_text_parse_budget(const char *buf, size_t len, bool lines, int64_t period_ns,
			      size_t budget, struct profile **out, char *err, size_t errlen)
{
	struct text_parser tp = {
	    .budget = budget, .period_ns = period_ns, .lines = lines, .err = err, .errlen = errlen};
	char *copy = NULL;
	size_t lineno = 0, pos = 0, weighed = 0;
	int ret = -ENOMEM;

	*out = NULL;
	if (memchr(buf, '\0', len))
		return text_error(&tp, 1, "NUL byte in a text profile");
	if (budget && len >= budget) {
		snprintf(err, errlen, "the text (%zu MiB) is over the memory budget of %zu MiB",
			 len >> 20, budget >> 20);
		return -EFBIG;
	}
	tp.p = profile__new(period_ns);
	tp.locs = malloc(PROFILE_MAX_FRAMES * sizeof(*tp.locs));
	copy = malloc(len + 1);
	if (!tp.p || !tp.locs || !copy)
		goto cleanup;
	memcpy(copy, buf, len);
	copy[len] = '\0';
	ret = 0;
	while (pos < len && !ret) {
		char *nl = memchr(copy + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - copy) : len;

		copy[end] = '\0';
		ret = parse_line(&tp, copy + pos, ++lineno);
		pos = end + 1;
		if (!ret && pos - weighed >= TEXT_CHECK_BYTES) {
			weighed = pos;
			ret = weigh(&tp, len, lineno);
		}
	}
	if (!ret)
		ret = weigh(&tp, len, lineno);
	if (!ret) {
		*out = tp.p;
		tp.p = NULL;
	}
cleanup:
	profile__free(tp.p);
	free(tp.locs);
	free(copy);
	return ret;
}
