/*
 * hearth query's text form of the JSON answers (query_text.c). Kept apart from
 * the rest of the CLI so tests/fuzz/fuzz_query_text.c can link it alone.
 */
#ifndef HEARTH_CLI_QUERY_TEXT_H
#define HEARTH_CLI_QUERY_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* Largest answer read from a server, and deepest JSON nesting parsed (a tree
 * nests two levels a frame; stacks are at most 512 frames deep). */
#define QUERY_TEXT_MAX_BYTES (1 << 30)
#define QUERY_TEXT_MAX_DEPTH 2048

/*
 * Writes the text of format ("labels", "series", "timeline", "tree" or
 * "regressions") from its
 * JSON answer json[0, len) (no NUL needed) to out. 0, -EINVAL with err naming
 * what the answer lacks, or -ENOMEM.
 */
int query_text_render(const char *format, const char *json, size_t len, FILE *out, char *err,
		      size_t errlen);

#endif
