/*
 * The query module's small shared helpers: error messages and JSON strings.
 */
#include "query_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int query_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return code;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

int query_explain(char *err, size_t errlen, int code, const char *what)
{
	if (code && err && errlen && !*err)
		query_fail(err, errlen, code, "%s failed: %s", what, strerror(-code));
	return code;
}
