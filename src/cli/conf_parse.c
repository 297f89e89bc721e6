/*
 * The config file's syntax (docs/config.md), with no knowledge of what the keys
 * mean: config.c turns the entries into command-line flags. Kept free of every
 * other module so tests/fuzz/fuzz_config.c can link it alone.
 *
 *   # a comment (whole lines only: a '#' after a value is part of the value)
 *   key = value            global: before the first [section]
 *   [agent]
 *   server = http://10.0.0.5:4100
 *   host = "  quoted keeps blanks, \" and \\ are the only escapes  "
 *
 * Strict on purpose: anything else on a line is an error naming the line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int conf_err(char *err, size_t errlen, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int conf_err(char *err, size_t errlen, int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(err, errlen, "line %d: ", line);
	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* [a-z0-9][a-z0-9-]* of at most max characters: names of flags and commands. */
static bool is_name(const char *s, size_t n, size_t max)
{
	if (n == 0 || n > max || *s == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

/* A "quoted" value starting at s (after the opening quote) into out. 0 or -EINVAL. */
static int unquote(const char *s, const char *end, char *out, int line, char *err, size_t errlen)
{
	size_t n = 0;

	for (; s < end; s++) {
		if (*s == '"')
			break;
		if (*s == '\\') {
			if (s + 1 == end || (s[1] != '"' && s[1] != '\\'))
				return conf_err(
				    err, errlen, line,
				    "unknown escape in a quoted value (only \\\" and \\\\)");
			s++;
		}
		out[n++] = *s;
	}
	if (s == end)
		return conf_err(err, errlen, line, "quoted value has no closing '\"'");
	for (s++; s < end; s++)
		if (!is_blank(*s))
			return conf_err(
			    err, errlen, line,
			    "text after the closing quote (comments take a whole line)");
	out[n] = '\0';
	return 0;
}

/* One line without its newline, len <= CLI_CONF_MAX_LINE. */
static int parse_line(const char *p, size_t len, int line, char *section, cli_conf_fn fn, void *ctx,
		      char *err, size_t errlen)
{
	char key[CLI_CONF_MAX_NAME + 1], value[CLI_CONF_MAX_LINE + 1];
	const char *end = p + len, *eq, *kend;
	struct cli_conf_entry e = {.section = section, .line = line};

	if (len && end[-1] == '\r')
		end--; /* a file edited on Windows */
	for (const char *q = p; q < end; q++)
		if ((unsigned char)*q < 0x20 && *q != '\t')
			return conf_err(err, errlen, line, "control character 0x%02x",
					(unsigned char)*q);
	while (p < end && is_blank(*p))
		p++;
	while (end > p && is_blank(end[-1]))
		end--;
	if (p == end || *p == '#')
		return 0;
	if (*p == '[') {
		if (end[-1] != ']' || !is_name(p + 1, (size_t)(end - p - 2), CLI_CONF_MAX_NAME))
			return conf_err(err, errlen, line,
					"a section is [name], lower-case letters, digits and '-'");
		memcpy(section, p + 1, (size_t)(end - p - 2));
		section[end - p - 2] = '\0';
		return fn(ctx, &e, err, errlen); /* key NULL: the section starts */
	}
	eq = memchr(p, '=', (size_t)(end - p));
	if (!eq)
		return conf_err(err, errlen, line,
				"expected 'key = value', '[section]' or '# comment'");
	e.key = key;
	e.value = value;
	for (kend = eq; kend > p && is_blank(kend[-1]); kend--)
		;
	if (!is_name(p, (size_t)(kend - p), CLI_CONF_MAX_NAME))
		return conf_err(err, errlen, line,
				"a key is a long option's name without '--' (lower-case letters, "
				"digits and '-')");
	memcpy(key, p, (size_t)(kend - p));
	key[kend - p] = '\0';
	p = eq + 1;
	while (p < end && is_blank(*p))
		p++;
	if (p < end && *p == '"') {
		if (unquote(p + 1, end, value, line, err, errlen))
			return -EINVAL;
	} else {
		if (p == end)
			return conf_err(err, errlen, line,
					"'%s' has no value (write \"\" for an empty one)", key);
		memcpy(value, p, (size_t)(end - p));
		value[end - p] = '\0';
	}
	return fn(ctx, &e, err, errlen);
}

int cli_conf_parse(const char *text, size_t len, cli_conf_fn fn, void *ctx, char *err,
		   size_t errlen)
{
	char section[CLI_CONF_MAX_NAME + 1] = "";
	const char *nul;
	int line = 0, ret;

	err[0] = '\0';
	if (len > CLI_CONF_MAX_BYTES)
		return conf_err(err, errlen, 0, "the file is larger than %d bytes",
				CLI_CONF_MAX_BYTES);
	if ((nul = memchr(text, '\0', len))) {
		for (const char *q = text; q < nul; q++)
			line += *q == '\n';
		return conf_err(err, errlen, line + 1, "a NUL byte: not a text file");
	}
	while (len > 0) {
		const char *nl = memchr(text, '\n', len);
		size_t n = nl ? (size_t)(nl - text) : len;

		line++;
		if (n > CLI_CONF_MAX_LINE)
			return conf_err(err, errlen, line, "longer than %d characters",
					CLI_CONF_MAX_LINE);
		ret = parse_line(text, n, line, section, fn, ctx, err, errlen);
		if (ret)
			return ret;
		if (!nl)
			break;
		text += n + 1;
		len -= n + 1;
	}
	return 0;
}
