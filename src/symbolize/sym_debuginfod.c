/*
 * sym_debuginfod: fetches debug files by build-id from the servers in DEBUGINFOD_URLS
 * (libdebuginfod), on one background thread, so a slow or absent server never stalls the
 * caller: sym_dbginfod__get only looks at a table under a mutex and queues a request.
 *
 * Results are cached on disk by libdebuginfod itself ($DEBUGINFOD_CACHE_PATH, default
 * ~/.cache/debuginfod_client), so a build-id fetched once is a local file the next run.
 * The table of requests is bounded (SYM_DBGINFOD_MAX); past it, new build-ids are
 * answered -ENOENT. Stopping cancels an ongoing fetch through the progress callback.
 *
 * libdebuginfod is opened with dlopen when DEBUGINFOD_URLS is first seen set, not
 * linked: it brings a second libcurl (the GnuTLS build) and its libraries, whose
 * relocations every start of hearth paid for, whether it fetched anything or not.
 * Without the library (not installed) nothing is fetched, as without DEBUGINFOD_URLS.
 */
#include "symbolize/sym_internal.h"
#include "base/base.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SYM_DBGINFOD_MAX 4096

enum req_state { REQ_QUEUED, REQ_FETCHING, REQ_DONE, REQ_FAILED };

struct dbg_req {
	char bid[OBJECT_BUILD_ID_HEX];
	bool exec;  /* the executable (sym_dbginfod__get_exec), not the debug file */
	char *path; /* owned: cached debug file, when REQ_DONE */
	enum req_state state;
};

struct sym_dbginfod {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake, idle;
	struct dbg_req *reqs; /* guarded by lock */
	size_t n, cap;
	bool stop;		   /* guarded by lock; also read by the progress callback */
	debuginfod_client *client; /* used by the worker only */
};

/* The functions of libdebuginfod used here, from dlopen. */
static struct {
	debuginfod_client *(*begin)(void);
	void (*end)(debuginfod_client *);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	int (*find_executable)(debuginfod_client *, const unsigned char *, int, char **);
	void (*set_user_data)(debuginfod_client *, void *);
	void *(*get_user_data)(debuginfod_client *);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
	bool ok;
} dbg;
static pthread_once_t dbg_once = PTHREAD_ONCE_INIT;

static void dbg_load(void)
{
	void *h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
	/* (a data pointer converted to a function pointer: POSIX's dlsym contract) */
	*(void **)&dbg.begin = dlsym(h, "debuginfod_begin");
	*(void **)&dbg.end = dlsym(h, "debuginfod_end");
	*(void **)&dbg.find_debuginfo = dlsym(h, "debuginfod_find_debuginfo");
	*(void **)&dbg.find_executable = dlsym(h, "debuginfod_find_executable");
	*(void **)&dbg.set_user_data = dlsym(h, "debuginfod_set_user_data");
	*(void **)&dbg.get_user_data = dlsym(h, "debuginfod_get_user_data");
	*(void **)&dbg.set_progressfn = dlsym(h, "debuginfod_set_progressfn");
	dbg.ok = dbg.begin && dbg.end && dbg.find_debuginfo && dbg.find_executable &&
		 dbg.set_user_data && dbg.get_user_data && dbg.set_progressfn;
	if (!dbg.ok)
		dlclose(h);
}

/* Nonzero cancels the transfer: when the symbolizer is being freed. */
static int progress(debuginfod_client *c, long a, long b)
{
	struct sym_dbginfod *d = dbg.get_user_data(c);
	bool stop;

	(void)a;
	(void)b;
	pthread_mutex_lock(&d->lock);
	stop = d->stop;
	pthread_mutex_unlock(&d->lock);
	return stop;
}

/* Index of the next queued request, or -1; called with the lock held. */
static long next_queued(struct sym_dbginfod *d)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->reqs[i].state == REQ_QUEUED)
			return (long)i;
	return -1;
}

static void fetch_one(struct sym_dbginfod *d, size_t i)
{
	char bid[OBJECT_BUILD_ID_HEX], *path = NULL;
	bool exec = d->reqs[i].exec;
	int fd;

	memcpy(bid, d->reqs[i].bid, sizeof(bid));
	d->reqs[i].state = REQ_FETCHING;
	pthread_mutex_unlock(&d->lock);
	fd = exec ? dbg.find_executable(d->client, (const unsigned char *)bid, 0, &path)
		  : dbg.find_debuginfo(d->client, (const unsigned char *)bid, 0, &path);
	if (fd >= 0)
		close(fd);
	pthread_mutex_lock(&d->lock);
	d->reqs[i].path = fd >= 0 ? path : NULL;
	d->reqs[i].state = fd >= 0 && path ? REQ_DONE : REQ_FAILED;
	if (fd < 0)
		free(path);
	pthread_cond_broadcast(&d->idle);
}

static void *worker(void *arg)
{
	struct sym_dbginfod *d = arg;
	long i;

	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		if ((i = next_queued(d)) < 0) {
			pthread_cond_broadcast(&d->idle);
			pthread_cond_wait(&d->wake, &d->lock);
			continue;
		}
		fetch_one(d, (size_t)i);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

struct sym_dbginfod *sym_dbginfod__new(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	struct sym_dbginfod *d;

	if (!urls || !urls[0])
		return NULL;
	pthread_once(&dbg_once, dbg_load);
	if (!dbg.ok || !(d = calloc(1, sizeof(*d))))
		return NULL;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->wake, NULL);
	pthread_cond_init(&d->idle, NULL);
	if (!(d->client = dbg.begin()))
		goto cleanup;
	dbg.set_user_data(d->client, d);
	dbg.set_progressfn(d->client, progress);
	if (pthread_create(&d->thread, NULL, worker, d) != 0)
		goto cleanup;
	return d;
cleanup:
	if (d->client)
		dbg.end(d->client);
	pthread_cond_destroy(&d->wake);
	pthread_cond_destroy(&d->idle);
	pthread_mutex_destroy(&d->lock);
	free(d);
	return NULL;
}

void sym_dbginfod__free(struct sym_dbginfod *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_broadcast(&d->wake);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	dbg.end(d->client);
	for (size_t i = 0; i < d->n; i++)
		free(d->reqs[i].path);
	free(d->reqs);
	pthread_cond_destroy(&d->wake);
	pthread_cond_destroy(&d->idle);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* The request for bid, queued now if new; NULL when the table is full. Lock held. */
static struct dbg_req *request_of(struct sym_dbginfod *d, const char *bid, bool exec)
{
	struct dbg_req *r;

	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->reqs[i].bid, bid) && d->reqs[i].exec == exec)
			return &d->reqs[i];
	if (d->n >= SYM_DBGINFOD_MAX || base_grow((void **)&d->reqs, &d->cap, d->n + 1, sizeof(*r)))
		return NULL;
	r = &d->reqs[d->n++];
	memset(r, 0, sizeof(*r));
	snprintf(r->bid, sizeof(r->bid), "%s", bid);
	r->exec = exec;
	r->state = REQ_QUEUED;
	pthread_cond_signal(&d->wake);
	return r;
}

static int get(struct sym_dbginfod *d, const char *bid, bool exec, char *out, size_t len)
{
	struct dbg_req *r;
	int err;

	if (!d || !bid[0])
		return -ENOENT;
	pthread_mutex_lock(&d->lock);
	r = request_of(d, bid, exec);
	err = !r || r->state == REQ_FAILED ? -ENOENT : r->state == REQ_DONE ? 0 : -EAGAIN;
	if (!err)
		snprintf(out, len, "%s", r->path);
	pthread_mutex_unlock(&d->lock);
	return err;
}

int sym_dbginfod__get(struct sym_dbginfod *d, const char *bid, char *out, size_t len)
{
	return get(d, bid, false, out, len);
}

int sym_dbginfod__get_exec(struct sym_dbginfod *d, const char *bid, char *out, size_t len)
{
	return get(d, bid, true, out, len);
}

void sym_dbginfod__wait(struct sym_dbginfod *d, int timeout_ms)
{
	struct timespec until;

	if (!d)
		return;
	until = base_ns_timespec(base_clock_ns(CLOCK_REALTIME) + (int64_t)timeout_ms * 1000000);
	pthread_mutex_lock(&d->lock);
	for (;;) {
		bool busy = false;

		for (size_t i = 0; i < d->n; i++)
			busy |= d->reqs[i].state == REQ_QUEUED || d->reqs[i].state == REQ_FETCHING;
		if (!busy || pthread_cond_timedwait(&d->idle, &d->lock, &until) != 0)
			break;
	}
	pthread_mutex_unlock(&d->lock);
}
