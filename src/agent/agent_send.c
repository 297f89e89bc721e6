/*
 * The sender thread: takes the oldest spooled profile, delivers it (HTTP POST
 * to SERVER/ingest with libcurl; https:// verified against --tls-ca), and on failure waits with
 * exponential backoff and jitter before trying again. Only a status saying the
 * profile itself is bad (400, 413, 415, 422) drops it, counted as rejected: no
 * retry could make the server take it. Everything else is retried and counted
 * per reason — 401/403 too, since a token fixed on the server (or a server
 * restarted with the right one) lets the same profile through, and dropping
 * profiles for good over a configuration slip loses data. The spool's bounds
 * keep a long refusal from growing memory. The sampling thread never waits
 * for this one.
 *
 * With a local sink (hearth run) there is no HTTP and no spool: profiles stay
 * flat profiles in a small queue (AGENT_SINK_QUEUE, oldest dropped and counted
 * when full) and the thread hands each to the sink as an ingest request, with
 * the same retry and drop rules. Storing and the store's maintenance run here,
 * off the sampling thread.
 */
#include "agent_impl.h"
#include "base/base.h"

#include <curl/curl.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* With nothing queued the sender sleeps until a push kicks it; this bound only
 * guards against a kick that never comes. */
#define AGENT_IDLE_WAIT_S 60.0
/* Series labels of a sink's profiles (the agent gives 3), plus the type. */
#define AGENT_SINK_MAX_LABELS 8

/* A profile waiting for the sink: owned by the queue, then by the thread. */
struct sink_item {
	struct profile_flat *f;
	const char *type; /* NULL: CPU; else a literal (agent_sender__push_flat) */
	int64_t from_ns, until_ns;
};

struct agent_sender {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, kicked, joined;
	double flush_deadline; /* monotonic s; > 0 while stopping */
	struct agent_spool *sp;
	const struct agent_opts *opts; /* borrowed: owned by the agent */
	CURL *curl;
	long status;			   /* HTTP status of the last attempt; 0 when none came */
	char curl_err[CURL_ERROR_SIZE];	   /* libcurl's words for the last failed attempt */
	uint64_t failures[AGENT_FAIL_MAX]; /* atomic */
	unsigned seed;
	/* sink mode, under lock: queue[head .. head + n) (mod AGENT_SINK_QUEUE) */
	struct sink_item queue[AGENT_SINK_QUEUE];
	size_t head, n;
	struct agent_spool_stats sink_stats; /* what the queue did (no bytes, no disk) */
	const struct store_label *labels;    /* borrowed from the agent */
	size_t n_labels;
};

static double mono_s(void)
{
	return (double)base_clock_ns(CLOCK_MONOTONIC) / 1e9;
}

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

static const char *const fail_names[AGENT_FAIL_MAX] = {
    [AGENT_FAIL_CONNECT] = "connect",
    [AGENT_FAIL_AUTH] = "auth",
    [AGENT_FAIL_SERVER] = "server",
    [AGENT_FAIL_SINK] = "sink",
};

const char *agent_send_fail_name(enum agent_send_fail f)
{
	return f < AGENT_FAIL_MAX ? fail_names[f] : "unknown";
}

/* What an HTTP status means for the profile: 0 delivered, -EINVAL the profile
 * is bad (drop), -EACCES the token was refused (retry), -EAGAIN retry. */
static int status_outcome(long status)
{
	if (status >= 200 && status < 300)
		return 0;
	if (status == 400 || status == 413 || status == 415 || status == 422)
		return -EINVAL;
	if (status == 401 || status == 403)
		return -EACCES;
	return -EAGAIN;
}

/* 0 delivered, -EINVAL refused for good, other -errno: retry. */
static int post(struct agent_sender *snd, const char *query, const uint8_t *data, size_t len)
{
	struct curl_slist *hdrs = NULL;
	char url[8192], auth[1100];
	long status = 0;
	CURLcode rc;

	snprintf(url, sizeof(url), "%s/ingest?%s", snd->opts->server_url, query);
	hdrs = curl_slist_append(hdrs, "Content-Type: application/octet-stream");
	if (snd->opts->auth_token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %.1000s",
			 snd->opts->auth_token);
		hdrs = curl_slist_append(hdrs, auth);
	}
	curl_easy_reset(snd->curl);
	snd->curl_err[0] = '\0';
	curl_easy_setopt(snd->curl, CURLOPT_ERRORBUFFER, snd->curl_err);
	curl_easy_setopt(snd->curl, CURLOPT_URL, url);
	curl_easy_setopt(snd->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(snd->curl, CURLOPT_POSTFIELDS, (const char *)data);
	curl_easy_setopt(snd->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(snd->curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(snd->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(snd->curl, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(snd->curl, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(snd->curl, CURLOPT_WRITEFUNCTION, discard);
	/* https:// is verified (peer and host name, libcurl's default); --tls-ca
	 * names the CA of a private PKI or a self-signed server certificate */
	if (snd->opts->tls_ca)
		curl_easy_setopt(snd->curl, CURLOPT_CAINFO, snd->opts->tls_ca);
	rc = curl_easy_perform(snd->curl);
	if (rc == CURLE_OK)
		curl_easy_getinfo(snd->curl, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdrs);
	snd->status = status;
	if (rc != CURLE_OK)
		return -ECONNREFUSED;
	return status_outcome(status);
}

/* The failure kind of a retried delivery error. */
static enum agent_send_fail fail_kind(const struct agent_sender *snd, int err)
{
	if (snd->opts->sink)
		return AGENT_FAIL_SINK;
	if (err == -EACCES)
		return AGENT_FAIL_AUTH;
	return err == -ECONNREFUSED ? AGENT_FAIL_CONNECT : AGENT_FAIL_SERVER;
}

/* Monotonic seconds as an absolute timespec for pthread_cond_timedwait on a
 * condition variable whose clock is CLOCK_MONOTONIC (see agent_sender__start). */
static struct timespec mono_ts(double s)
{
	struct timespec ts;

	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* Waits until kicked, stopped (when idle), the flush deadline passed (when
 * stopping) or delay_s passed, sleeping in one timed wait for whichever comes
 * first: a thread with nothing to do does not wake. Returns true when stopping. */
static bool wait_for(struct agent_sender *snd, double delay_s, bool idle)
{
	double until = mono_s() + delay_s, deadline;
	struct timespec ts;
	bool stop;

	pthread_mutex_lock(&snd->lock);
	for (;;) {
		if (snd->kicked || (idle && snd->stop))
			break;
		deadline = until;
		if (snd->stop && snd->flush_deadline < deadline)
			deadline = snd->flush_deadline;
		if (mono_s() >= deadline)
			break;
		ts = mono_ts(deadline);
		pthread_cond_timedwait(&snd->cond, &snd->lock, &ts);
	}
	snd->kicked = false;
	stop = snd->stop;
	pthread_mutex_unlock(&snd->lock);
	return stop;
}

/* Backoff after `fails` consecutive failures: min * 2^fails capped, times [0.5, 1). */
static double backoff_s(struct agent_sender *snd, unsigned fails)
{
	double ms = AGENT_BACKOFF_MIN_MS;

	for (unsigned i = 1; i < fails && ms < AGENT_BACKOFF_MAX_MS; i++)
		ms *= 2;
	if (ms > AGENT_BACKOFF_MAX_MS)
		ms = AGENT_BACKOFF_MAX_MS;
	return ms / 1000.0 * (0.5 + 0.5 * (double)rand_r(&snd->seed) / RAND_MAX);
}

static bool stopping(struct agent_sender *snd)
{
	bool stop;

	pthread_mutex_lock(&snd->lock);
	stop = snd->stop;
	pthread_mutex_unlock(&snd->lock);
	return stop;
}

static bool flush_over(struct agent_sender *snd)
{
	bool over;

	pthread_mutex_lock(&snd->lock);
	over = snd->stop && mono_s() >= snd->flush_deadline;
	pthread_mutex_unlock(&snd->lock);
	return over;
}

/* One line when the delivery state changes (a new failure reason, a refused
 * profile, delivery again after failures), not one per retry. */
static void log_change(struct agent_sender *snd, int ret, int *last)
{
	FILE *f = snd->opts->log ? snd->opts->log : stderr;
	int kind = ret == 0 ? -1 : ret == -EINVAL ? AGENT_FAIL_MAX : (int)fail_kind(snd, ret);

	if (kind == *last)
		return;
	if (kind == -1)
		fprintf(f, "hearth agent: delivering again\n");
	else if (kind == AGENT_FAIL_MAX && snd->status)
		fprintf(f,
			"hearth agent: the server refused a profile as bad (HTTP %ld): dropped\n",
			snd->status);
	else if (kind == AGENT_FAIL_MAX)
		fprintf(f, "hearth agent: the store refused a profile as bad: dropped\n");
	else if (kind == AGENT_FAIL_AUTH)
		fprintf(f,
			"hearth agent: the server refused the token (HTTP %ld): check "
			"--auth-token-file; profiles stay queued and are retried\n",
			snd->status);
	else if (snd->status)
		fprintf(f, "hearth agent: the server answered HTTP %ld: retrying with backoff\n",
			snd->status);
	else if (kind == AGENT_FAIL_CONNECT)
		/* no URL here: tests find the agent's own URL as the first one it logs;
		 * libcurl's words say why (refused, a certificate not verified...) */
		fprintf(f, "hearth agent: cannot reach the server (%s): retrying with backoff\n",
			snd->curl_err[0] ? snd->curl_err : "no answer");
	else
		fprintf(f, "hearth agent: delivery failed (%s): retrying with backoff\n",
			agent_send_fail_name(kind));
	*last = kind;
}

static void *sender_main(void *arg)
{
	struct agent_sender *snd = arg;
	unsigned fails = 0;
	int last = -1; /* log_change's state: delivering */

	while (!flush_over(snd)) {
		char *query = NULL;
		uint8_t *data = NULL;
		size_t len = 0;
		uint64_t id = 0;
		int ret = agent_spool__peek(snd->sp, &id, &query, &data, &len);

		if (ret == -ENOENT) {
			if (stopping(snd))
				break;				/* stopping and nothing left */
			wait_for(snd, AGENT_IDLE_WAIT_S, true); /* a push kicks us */
			continue;
		}
		if (ret == 0) {
			snd->status = 0;
			ret = post(snd, query, data, len);
			log_change(snd, ret, &last);
		}
		free(query);
		free(data);
		if (ret == 0 || ret == -EINVAL) {
			agent_spool__pop(snd->sp, id, ret == 0); /* -ENOENT: dropped meanwhile */
			fails = 0;
			continue;
		}
		__atomic_add_fetch(&snd->failures[fail_kind(snd, ret)], 1, __ATOMIC_RELAXED);
		fails++;
		wait_for(snd, backoff_s(snd, fails), false);
	}
	return NULL;
}

/* Takes the oldest queued profile into *it. false when the queue is empty. */
static bool sink_take(struct agent_sender *snd, struct sink_item *it)
{
	bool got;

	pthread_mutex_lock(&snd->lock);
	got = snd->n > 0;
	if (got) {
		*it = snd->queue[snd->head];
		snd->head = (snd->head + 1) % AGENT_SINK_QUEUE;
		snd->n--;
		snd->sink_stats.queued = snd->n + 1; /* the one in hand still waits */
	}
	pthread_mutex_unlock(&snd->lock);
	return got;
}

/* Done with the profile in hand: delivered (sent) or refused for good. */
static void sink_done(struct agent_sender *snd, struct sink_item *it, bool sent)
{
	pthread_mutex_lock(&snd->lock);
	if (sent)
		snd->sink_stats.sent++;
	else
		snd->sink_stats.rejected++;
	snd->sink_stats.queued = snd->n;
	pthread_mutex_unlock(&snd->lock);
	profile_flat__free(it->f);
	it->f = NULL;
}

/* The sender of sink mode: one profile in hand, retried until the sink takes
 * it, refuses it for good (-EINVAL), or the flush deadline passes. */
static void *sink_main(void *arg)
{
	struct agent_sender *snd = arg;
	struct sink_item it = {0};
	unsigned fails = 0;
	int last = -1, ret;

	while (!flush_over(snd)) {
		if (!it.f && !sink_take(snd, &it)) {
			if (stopping(snd))
				break;
			wait_for(snd, AGENT_IDLE_WAIT_S, true);
			continue;
		}
		struct store_label typed[AGENT_SINK_MAX_LABELS + 1];
		size_t n_typed = snd->n_labels < AGENT_SINK_MAX_LABELS ? snd->n_labels
									: AGENT_SINK_MAX_LABELS;

		/* An off-CPU or wall profile: its type as the __profile_type__ label. */
		memcpy(typed, snd->labels, n_typed * sizeof(*typed));
		if (it.type)
			typed[n_typed++] = (struct store_label){STORE_PROFILE_TYPE_LABEL, it.type};
		struct ingest_request req = {.labels = typed,
					     .n_labels = n_typed,
					     .has_range = true,
					     .from_ns = it.from_ns,
					     .until_ns = it.until_ns,
					     .profile = it.f};

		ret = snd->opts->sink(snd->opts->sink_ctx, &req);
		log_change(snd, ret, &last);
		if (ret == 0 || ret == -EINVAL) {
			sink_done(snd, &it, ret == 0);
			fails = 0;
			/* the store's append freed its scratch on this thread's arena: give
			 * it back as the sampling thread does after each interval */
			if (snd->opts->trim_memory)
				malloc_trim(0);
			continue;
		}
		__atomic_add_fetch(&snd->failures[AGENT_FAIL_SINK], 1, __ATOMIC_RELAXED);
		fails++;
		wait_for(snd, backoff_s(snd, fails), false);
	}
	profile_flat__free(it.f); /* stopping: not delivered in time */
	return NULL;
}

int agent_sender__push_flat(struct agent_sender *snd, struct profile_flat *f, const char *type,
			    int64_t from_ns, int64_t until_ns)
{
	struct sink_item drop = {0};

	pthread_mutex_lock(&snd->lock);
	if (snd->n == AGENT_SINK_QUEUE) { /* full: the oldest goes */
		drop = snd->queue[snd->head];
		snd->head = (snd->head + 1) % AGENT_SINK_QUEUE;
		snd->n--;
		snd->sink_stats.dropped++;
	}
	snd->queue[(snd->head + snd->n) % AGENT_SINK_QUEUE] =
	    (struct sink_item){f, type, from_ns, until_ns};
	snd->n++;
	snd->sink_stats.queued = snd->n;
	snd->kicked = true;
	pthread_cond_signal(&snd->cond);
	pthread_mutex_unlock(&snd->lock);
	profile_flat__free(drop.f);
	return 0;
}

void agent_sender__sink_stats(struct agent_sender *snd, struct agent_spool_stats *out)
{
	pthread_mutex_lock(&snd->lock);
	*out = snd->sink_stats;
	pthread_mutex_unlock(&snd->lock);
}

int agent_sender__start(const struct agent_opts *opts, struct agent_spool *sp,
			const struct store_label *labels, size_t n_labels,
			struct agent_sender **out)
{
	struct agent_sender *snd = calloc(1, sizeof(*snd));
	pthread_condattr_t ca;

	*out = NULL;
	if (!snd)
		return -ENOMEM;
	snd->opts = opts;
	snd->sp = sp;
	snd->labels = labels;
	snd->n_labels = n_labels;
	snd->seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)snd;
	pthread_mutex_init(&snd->lock, NULL);
	/* Deadlines are monotonic (mono_s): the condition variable must wait on that
	 * clock too. With the default (CLOCK_REALTIME) every deadline lies decades in
	 * the past and each timed wait returns at once: the thread spins. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&snd->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (!opts->sink && !(snd->curl = curl_easy_init()))
		goto fail;
	if (pthread_create(&snd->thread, NULL, opts->sink ? sink_main : sender_main, snd))
		goto fail;
	*out = snd;
	return 0;
fail:
	if (snd->curl)
		curl_easy_cleanup(snd->curl);
	pthread_cond_destroy(&snd->cond);
	pthread_mutex_destroy(&snd->lock);
	free(snd);
	return -ENOMEM;
}

void agent_sender__kick(struct agent_sender *snd)
{
	pthread_mutex_lock(&snd->lock);
	snd->kicked = true;
	pthread_cond_signal(&snd->cond);
	pthread_mutex_unlock(&snd->lock);
}

void agent_sender__stop(struct agent_sender *snd, double flush_s)
{
	if (!snd || snd->joined)
		return;
	pthread_mutex_lock(&snd->lock);
	snd->stop = true;
	snd->flush_deadline = mono_s() + flush_s;
	pthread_cond_signal(&snd->cond);
	pthread_mutex_unlock(&snd->lock);
	pthread_join(snd->thread, NULL);
	snd->joined = true;
}

void agent_sender__free(struct agent_sender *snd)
{
	if (!snd)
		return;
	agent_sender__stop(snd, 0);
	if (snd->curl)
		curl_easy_cleanup(snd->curl);
	for (size_t i = 0; i < snd->n; i++) /* not delivered before the stop */
		profile_flat__free(snd->queue[(snd->head + i) % AGENT_SINK_QUEUE].f);
	pthread_cond_destroy(&snd->cond);
	pthread_mutex_destroy(&snd->lock);
	free(snd);
}

void agent_sender__failures(struct agent_sender *snd, uint64_t out[AGENT_FAIL_MAX])
{
	for (int i = 0; i < AGENT_FAIL_MAX; i++)
		out[i] = snd ? __atomic_load_n(&snd->failures[i], __ATOMIC_RELAXED) : 0;
}
