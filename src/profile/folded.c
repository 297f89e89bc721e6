/*
 * Folded stacks, the input format of flamegraph.pl and most flame graph tools:
 *
 *     process;root;caller;callee_[i];leaf COUNT
 *
 * Stacks print root first, each location expanded into its lines (the real
 * function, then the callees inlined into it), and COUNT is values[0] (samples).
 * Samples that differ only in things folded output cannot show (labels other than
 * "process", addresses that symbolize the same) fold into one line; lines are
 * sorted so output is deterministic.
 *
 * The format has no escaping, so names are made safe instead: ';' separates
 * frames and becomes ':', control characters become '_', and leading and trailing
 * blanks are dropped (the last blank on a line separates the count), and an empty
 * name becomes "??" so no frame is empty.
 */
#include "profile_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct folded_line {
	char *stack; /* owned */
	int64_t count;
};

/* Appends name made safe for folded output (see the file comment). */
static void append_safe(struct base_sbuf *b, const char *name)
{
	size_t start = b->len;

	while (*name == ' ' || *name == '\t') /* a line must not start with a blank either */
		name++;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
		char out = (char)*c;

		if (*c == ';')
			out = ':';
		else if (*c < 0x20 || *c == 0x7f)
			out = '_';
		base_sbuf__append(b, &out, 1);
	}
	while (!b->err && b->len > start && (b->s[b->len - 1] == ' ' || b->s[b->len - 1] == '\t'))
		b->s[--b->len] = '\0';
	if (b->len == start)
		base_sbuf__puts(b, "??");
}

/* The string label "process" of a sample, NULL when absent. */
static const char *process_label(const struct profile_sample *s)
{
	for (size_t i = 0; i < s->n_labels; i++)
		if (s->labels[i].str && strcmp(s->labels[i].key, PROFILE_LABEL_PROCESS) == 0)
			return s->labels[i].str;
	return NULL;
}

/* Appends one sample's stack, root first, frames separated by ';'. */
static void append_stack(const struct profile *p, const struct profile_sample *s,
			 struct base_sbuf *b)
{
	const char *proc = process_label(s);
	char name[PROFILE_NAME_MAX];
	struct profile_location loc;

	if (proc)
		append_safe(b, proc);
	for (size_t i = s->n_locs; i-- > 0;) {
		if (profile__get_location(p, s->locs[i], &loc))
			continue;
		/* the outer function (last line) first, then the callees inlined into it */
		for (size_t l = loc.n_lines ? loc.n_lines : 1; l-- > 0;) {
			if (b->len)
				base_sbuf__append(b, ";", 1);
			append_safe(b, profile__frame_name(p, &loc, l, name, sizeof(name)));
		}
	}
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->stack,
		      ((const struct folded_line *)b)->stack);
}

/* One folded_line per sample with a non-empty stack; *n of them. */
static int collect_lines(const struct profile *p, struct folded_line **out, size_t *n)
{
	size_t ns = profile__n_samples(p);
	struct folded_line *lines = calloc(ns ? ns : 1, sizeof(*lines));
	struct profile_sample s;

	*out = lines;
	*n = 0;
	if (!lines)
		return -ENOMEM;
	for (size_t i = 0; i < ns; i++) {
		struct base_sbuf b = {0};

		if (profile__sample(p, i, &s))
			continue;
		append_stack(p, &s, &b);
		if (b.err || !b.len) {
			int err = b.err;

			base_sbuf__fini(&b);
			if (err)
				return err;
			continue;
		}
		lines[*n].stack = b.s;
		lines[*n].count = s.values[0];
		(*n)++;
	}
	return 0;
}

/* Sorts, merges equal stacks and prints the lines with a positive count. */
static int print_lines(struct folded_line *lines, size_t n, FILE *f)
{
	if (n > 1)
		qsort(lines, n, sizeof(*lines), line_cmp);
	for (size_t i = 0; i < n;) {
		int64_t count = lines[i].count;
		size_t j = i + 1;

		while (j < n && strcmp(lines[j].stack, lines[i].stack) == 0)
			count = base_sat_add(count, lines[j++].count);
		/* flamegraph.pl reads only positive counts; empty stacks carry nothing */
		if (count > 0 && fprintf(f, "%s %" PRId64 "\n", lines[i].stack, count) < 0)
			return -EIO;
		i = j;
	}
	return 0;
}

int folded_write(const struct profile *p, FILE *f)
{
	struct folded_line *lines = NULL;
	size_t n = 0;
	int err = collect_lines(p, &lines, &n);

	if (!err)
		err = print_lines(lines, n, f);
	if (!err && (fflush(f) != 0 || ferror(f)))
		err = -EIO;
	for (size_t i = 0; lines && i < n; i++)
		free(lines[i].stack);
	free(lines);
	return err;
}
