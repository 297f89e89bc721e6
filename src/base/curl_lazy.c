/*
 * libcurl, opened with dlopen on its first use instead of linked: the functions of
 * libcurl that hearth calls are defined here and forward to the library, loaded once
 * (pthread_once) by whichever is called first. Linked, libcurl and the 20-odd
 * libraries it needs (OpenSSL, Kerberos, LDAP, SSH, ...) were relocated at every start
 * of hearth, ~5 ms of CPU, half of the start-up of a short command such as `hearth
 * symbolize`, which never uses it. The callers (the agent's sender, the scraper,
 * `hearth query`, the ClickHouse store) are unchanged: they include <curl/curl.h> and
 * call these as they called libcurl.
 *
 * Without libcurl (not installed), every call fails as libcurl fails: curl_easy_init
 * and curl_slist_append return NULL, the others CURLE_FAILED_INIT.
 *
 * curl_easy_setopt and curl_easy_getinfo are variadic: the one argument is read by the
 * type its option number says (curl.h's CURLOPTTYPE_ ranges: long, object pointer,
 * function pointer, curl_off_t, blob pointer; getinfo's is always a pointer) and passed
 * on as that type.
 */
#define CURL_DISABLE_TYPECHECK /* curl.h's checking macros would rename these */
#include "base.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>

static struct {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	void (*easy_cleanup)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_reset)(CURL *);
	char *(*easy_escape)(CURL *, const char *, int);
	const char *(*easy_strerror)(CURLcode);
	void (*free)(void *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	bool ok;
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

/* (a data pointer converted to a function pointer: POSIX's dlsym contract) */
#define SYM(h, field, name) (*(void **)&lib.field = dlsym(h, name))

static void lib_load(void)
{
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
	lib.ok = SYM(h, global_init, "curl_global_init") && SYM(h, easy_init, "curl_easy_init") &&
		 SYM(h, easy_setopt, "curl_easy_setopt") &&
		 SYM(h, easy_perform, "curl_easy_perform") &&
		 SYM(h, easy_cleanup, "curl_easy_cleanup") &&
		 SYM(h, easy_getinfo, "curl_easy_getinfo") &&
		 SYM(h, easy_reset, "curl_easy_reset") && SYM(h, easy_escape, "curl_easy_escape") &&
		 SYM(h, easy_strerror, "curl_easy_strerror") && SYM(h, free, "curl_free") &&
		 SYM(h, slist_append, "curl_slist_append") &&
		 SYM(h, slist_free_all, "curl_slist_free_all");
	if (!lib.ok)
		dlclose(h);
}

/* Whether libcurl is there (loaded on the first call). */
static bool loaded(void)
{
	pthread_once(&lib_once, lib_load);
	return lib.ok;
}

CURLcode curl_global_init(long flags)
{
	return loaded() ? lib.global_init(flags) : CURLE_FAILED_INIT;
}

CURL *curl_easy_init(void)
{
	return loaded() ? lib.easy_init() : NULL;
}

CURLcode curl_easy_setopt(CURL *c, CURLoption opt, ...)
{
	CURLcode r;
	va_list ap;

	if (!loaded())
		return CURLE_FAILED_INIT;
	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		r = lib.easy_setopt(c, opt, va_arg(ap, long));
	else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
		r = lib.easy_setopt(c, opt, va_arg(ap, void *));
	else if (opt < CURLOPTTYPE_OFF_T)
		r = lib.easy_setopt(c, opt, va_arg(ap, void (*)(void)));
	else if (opt < CURLOPTTYPE_BLOB)
		r = lib.easy_setopt(c, opt, va_arg(ap, curl_off_t));
	else
		r = lib.easy_setopt(c, opt, va_arg(ap, void *));
	va_end(ap);
	return r;
}

CURLcode curl_easy_perform(CURL *c)
{
	return loaded() ? lib.easy_perform(c) : CURLE_FAILED_INIT;
}

void curl_easy_cleanup(CURL *c)
{
	if (loaded())
		lib.easy_cleanup(c);
}

CURLcode curl_easy_getinfo(CURL *c, CURLINFO info, ...)
{
	CURLcode r;
	va_list ap;

	if (!loaded())
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	r = lib.easy_getinfo(c, info, va_arg(ap, void *));
	va_end(ap);
	return r;
}

void curl_easy_reset(CURL *c)
{
	if (loaded())
		lib.easy_reset(c);
}

char *curl_easy_escape(CURL *c, const char *s, int len)
{
	return loaded() ? lib.easy_escape(c, s, len) : NULL;
}

const char *curl_easy_strerror(CURLcode code)
{
	return loaded() ? lib.easy_strerror(code) : "libcurl could not be loaded";
}

void curl_free(void *p)
{
	if (loaded())
		lib.free(p);
}

struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{
	return loaded() ? lib.slist_append(l, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *l)
{
	if (loaded())
		lib.slist_free_all(l);
}
