/*
 * libFuzzer target for the config file's syntax (cli_conf_parse, src/cli/conf_parse.c):
 * the input is a whole file as an administrator might write it. Any input must parse
 * or fail with -EINVAL and a message naming a line, never crash, hang or read out of
 * bounds; every entry handed to the callback must be well formed (a key of the allowed
 * characters, a NUL-terminated value no longer than a line).
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int check_entry(void *ctx, const struct cli_conf_entry *e, char *err, size_t errlen)
{
	size_t *n = ctx;

	(void)err;
	(void)errlen;
	if (e->line < 1 || strlen(e->section) > CLI_CONF_MAX_NAME)
		abort();
	if (e->key) {
		if (!*e->key || strlen(e->key) > CLI_CONF_MAX_NAME ||
		    strspn(e->key, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(e->key) ||
		    strlen(e->value) > CLI_CONF_MAX_LINE)
			abort();
	}
	(*n)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256] = "";
	size_t n = 0;
	char *copy;
	int e;

	/* exactly size bytes, no terminator: the parser must not read past them */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	e = cli_conf_parse(copy, size, check_entry, &n, err, sizeof(err));
	if (e != 0 && (e != -EINVAL || strncmp(err, "line ", 5)))
		abort();
	free(copy);
	return 0;
}
