/*
 * libcurl's global state, set up once per process. curl_global_init is not safe
 * to run while another thread uses libcurl, and several modules (the agent's
 * sender, the scraper, `hearth query`, the ClickHouse store) start threads that
 * do: each calls base_curl_init before its first curl handle, and pthread_once
 * makes the first of them the only one that runs it. It is never undone:
 * curl_global_cleanup would have to follow every thread's last curl call, and
 * the process's exit frees the same memory.
 */
#include "base.h"

#include <curl/curl.h>
#include <pthread.h>

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init_once(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int base_curl_init(void)
{
	pthread_once(&curl_once, curl_init_once);
	return curl_init_result == CURLE_OK ? 0 : -ENOMEM;
}
