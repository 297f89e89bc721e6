/*
 * The server's threads besides libmicrohttpd's one event thread: a few workers per
 * class of route (server_class), a thread per live profile, and a sweeper; plus the
 * table of open connections that lets the sweeper close slow ones.
 *
 * A request whose route is not INLINE is deferred: the access handler suspends its
 * connection (MHD then neither reads nor times it out) and queues the request on its
 * class; a worker runs the handler, which leaves its answer in r->resp, and resumes
 * the connection; MHD calls the access handler again, which queues the answer. So a
 * socket costs a thread only while a worker computes its answer, the number of
 * decodes and queries at once is the number of workers of their class (the slots),
 * and a request that waited longer than its class allows is answered 503.
 *
 * /debug/pprof/profile?seconds=N is deferred with a due time: it waits in the queue,
 * suspended, and no worker is held until then; the sweeper notices when its client
 * hangs up meanwhile.
 *
 * The connection table (server_conn, one per socket, from MHD's connection
 * notifications) is what MHD does not give: a deadline for the headers (its timeout
 * measures only silence, so a header trickled a byte every few seconds would hold a
 * socket forever) and room for new clients (past SERVER_MAX_CONNECTIONS -
 * SERVER_CONN_SPARE, the oldest connection that is idle or still in its headers is
 * closed). A connection is closed by shutdown(2) of its socket under the table's
 * lock: MHD then reads an end of file and closes it itself; the entry leaves the
 * table (under the same lock) before MHD closes the descriptor, so a descriptor
 * shut down is never one reused by another connection.
 *
 * Lock order: pool->lock, then conn_lock, then MHD's own (MHD_suspend_connection
 * under pool->lock); MHD calls server_pool__notify possibly under its lock, and that
 * takes only conn_lock, under which nothing but MHD's own is taken.
 */
#include "server_impl.h"
#include "base/base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* How often the sweeper looks whether the client of a waiting profile hung up (only
 * while one waits; otherwise it sleeps until the next deadline). */
#define SERVER_SWEEP_MS 100

enum conn_state {
	CONN_HEADERS, /* waiting for (the rest of) a request's headers: idle or slow */
	CONN_BODY,    /* headers read, the body coming in */
	CONN_BUSY,    /* being answered */
};

struct server_conn {
	int fd;
	enum conn_state state;
	int64_t since_ns; /* when the state began (CLOCK_MONOTONIC) */
	bool shut;	  /* shutdown(2) already done */
	bool linked;	  /* in the pool's list */
	struct server_conn *prev, *next;
};

struct class_queue {
	struct server_req *head, *tail;
	pthread_t *workers;
	int nworkers, started;
};

struct server_pool {
	struct server *s;
	pthread_mutex_t lock; /* queues, stopping, live threads */
	pthread_cond_t cond;  /* a job queued, or stopping */
	pthread_cond_t live_done;
	struct class_queue q[SERVER_CLASS_MAX];
	int live_threads;
	bool stopping;
	pthread_t sweeper;
	bool sweeper_started;

	pthread_mutex_t conn_lock;
	pthread_cond_t sweep_cond; /* with conn_lock: wakes the sweeper */
	uint64_t kick;		   /* under conn_lock: bumped by whatever may need the sweeper */
	struct server_conn *conns; /* open connections, oldest first */
	struct server_conn *conns_tail;
	int nconns;
	uint64_t header_timeouts, body_timeouts, evicted; /* atomic reads in /metrics */
};

static int64_t mono_ns(void)
{
	return base_clock_ns(CLOCK_MONOTONIC);
}

int server_class_wait_s(enum server_class cls)
{
	return cls == SERVER_CLASS_DECODE ? SERVER_DECODE_WAIT_S : SERVER_QUERY_WAIT_S;
}

/* ---- the table of connections ---- */

/* Tells the sweeper to look again (under conn_lock). */
static void kick_locked(struct server_pool *p)
{
	p->kick++;
	pthread_cond_signal(&p->sweep_cond);
}

static void conn_shut(struct server_conn *c)
{
	if (!c->shut)
		shutdown(c->fd, SHUT_RDWR);
	c->shut = true;
}

/* The oldest connection that is idle or in its headers, other than skip. */
static struct server_conn *oldest_idle(struct server_pool *p, struct server_conn *skip)
{
	struct server_conn *best = NULL;

	for (struct server_conn *c = p->conns; c; c = c->next)
		if (c != skip && !c->shut && c->state == CONN_HEADERS &&
		    (!best || c->since_ns < best->since_ns))
			best = c;
	return best;
}

static void conn_started(struct server_pool *p, struct MHD_Connection *mc, void **ctx)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct server_conn *c = calloc(1, sizeof(*c)), *old;

	*ctx = c;
	if (!c || !ci)
		return; /* untracked: MHD's own idle timeout still closes it */
	c->fd = ci->connect_fd;
	c->linked = true;
	c->state = CONN_HEADERS;
	c->since_ns = mono_ns();
	pthread_mutex_lock(&p->conn_lock);
	c->prev = p->conns_tail;
	if (p->conns_tail)
		p->conns_tail->next = c;
	else
		p->conns = c;
	p->conns_tail = c;
	if (++p->nconns > SERVER_MAX_CONNECTIONS - SERVER_CONN_SPARE && (old = oldest_idle(p, c))) {
		conn_shut(old);
		__atomic_add_fetch(&p->evicted, 1, __ATOMIC_RELAXED);
	}
	kick_locked(p); /* a new header deadline */
	pthread_mutex_unlock(&p->conn_lock);
}

static void conn_closed(struct server_pool *p, void **ctx)
{
	struct server_conn *c = *ctx;

	*ctx = NULL;
	if (!c)
		return;
	pthread_mutex_lock(&p->conn_lock);
	if (c->linked) {
		if (c->prev)
			c->prev->next = c->next;
		else
			p->conns = c->next;
		if (c->next)
			c->next->prev = c->prev;
		else
			p->conns_tail = c->prev;
		p->nconns--;
	}
	pthread_mutex_unlock(&p->conn_lock);
	free(c);
}

void server_pool__notify(void *cls, struct MHD_Connection *mc, void **socket_context,
			 enum MHD_ConnectionNotificationCode code)
{
	struct server *s = cls;

	if (!s->pool)
		return;
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		conn_started(s->pool, mc, socket_context);
	else
		conn_closed(s->pool, socket_context);
}

static void conn_set(struct server *s, struct server_conn *c, enum conn_state st)
{
	if (!c)
		return;
	pthread_mutex_lock(&s->pool->conn_lock);
	c->state = st;
	c->since_ns = mono_ns();
	if (st != CONN_BUSY)
		kick_locked(s->pool); /* a new deadline */
	pthread_mutex_unlock(&s->pool->conn_lock);
}

void server_conn__busy(struct server_req *r)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	r->sc = ci ? ci->socket_context : NULL;
	conn_set(r->srv, r->sc, CONN_BODY);
}

void server_conn__dispatched(struct server_req *r)
{
	conn_set(r->srv, r->sc, CONN_BUSY);
}

void server_conn__idle(struct server_req *r)
{
	conn_set(r->srv, r->sc, CONN_HEADERS);
}

/* Closes connections past their header or body deadline (under conn_lock); the next
 * deadline, INT64_MAX when none. */
static int64_t sweep_conns_locked(struct server_pool *p, int64_t now)
{
	int64_t hdr = SERVER_HEADER_DEADLINE_S * 1000000000LL;
	int64_t body = SERVER_BODY_DEADLINE_S * 1000000000LL, next = INT64_MAX;

	for (struct server_conn *c = p->conns; c; c = c->next) {
		int64_t due = c->since_ns + (c->state == CONN_HEADERS ? hdr : body);

		if (c->shut || c->state == CONN_BUSY)
			continue;
		if (now <= due) {
			next = due < next ? due : next;
			continue;
		}
		conn_shut(c);
		__atomic_add_fetch(c->state == CONN_HEADERS ? &p->header_timeouts
							    : &p->body_timeouts,
				   1, __ATOMIC_RELAXED);
	}
	return next;
}

/* ---- deferred requests ---- */

/* Whether r's client has closed its end (0 bytes at a non-blocking peek). */
static bool client_gone(struct server_req *r)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	char c;

	return ci && recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* Marks waiting requests whose client hung up as due now, so they end. When to look
 * again: in SERVER_SWEEP_MS while one waits for its time, else INT64_MAX. */
static int64_t sweep_waiting(struct server_pool *p, int64_t now)
{
	int64_t next = INT64_MAX;
	bool woke = false;

	pthread_mutex_lock(&p->lock);
	for (int k = 0; k < SERVER_CLASS_MAX; k++)
		for (struct server_req *r = p->q[k].head; r; r = r->job_next) {
			if (r->job_due_ns <= now)
				continue;
			if (client_gone(r)) {
				r->job_gone = true;
				r->job_due_ns = now;
				woke = true;
			} else {
				next = now + SERVER_SWEEP_MS * 1000000LL;
			}
		}
	if (woke)
		pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return next;
}

/*
 * Sleeps until the next header or body deadline (or the next look at a waiting
 * profile's client), never on a fixed tick: an idle server's threads all sleep.
 */
static void *sweeper_main(void *arg)
{
	struct server_pool *p = arg;

	for (;;) {
		int64_t wake, conn_wake;
		uint64_t kick;
		bool stop;

		pthread_mutex_lock(&p->lock);
		stop = p->stopping;
		pthread_mutex_unlock(&p->lock);
		if (stop)
			return NULL;
		pthread_mutex_lock(&p->conn_lock);
		kick = p->kick;
		pthread_mutex_unlock(&p->conn_lock);
		wake = sweep_waiting(p, mono_ns());
		pthread_mutex_lock(&p->conn_lock);
		conn_wake = sweep_conns_locked(p, mono_ns());
		wake = conn_wake < wake ? conn_wake : wake;
		if (p->kick == kick) { /* nothing new since the look: sleep */
			if (wake == INT64_MAX) {
				pthread_cond_wait(&p->sweep_cond, &p->conn_lock);
			} else {
				wake += 1000000; /* just past the deadline */
				struct timespec ts = {wake / 1000000000, wake % 1000000000};

				pthread_cond_timedwait(&p->sweep_cond, &p->conn_lock, &ts);
			}
		}
		pthread_mutex_unlock(&p->conn_lock);
	}
}

/* Takes the first due request of q (under p->lock); *wake_ns: the earliest due time of
 * the others, INT64_MAX if none. */
static struct server_req *take_due(struct class_queue *q, int64_t now, int64_t *wake_ns)
{
	struct server_req **pp = &q->head, *prev = NULL;

	*wake_ns = INT64_MAX;
	for (; *pp; prev = *pp, pp = &(*pp)->job_next) {
		struct server_req *r = *pp;

		if (r->job_due_ns > now) {
			if (r->job_due_ns < *wake_ns)
				*wake_ns = r->job_due_ns;
			continue;
		}
		*pp = r->job_next;
		if (q->tail == r)
			q->tail = prev;
		r->job_next = NULL;
		return r;
	}
	return NULL;
}

/* Runs one request's handler (or answers it without) and resumes its connection. */
static void run_job(struct server *s, struct server_req *r, bool stopping)
{
	int64_t waited =
	    mono_ns() - (r->job_due_ns > r->job_queued_ns ? r->job_due_ns : r->job_queued_ns);
	enum MHD_Result ret = MHD_YES;

	if (r->job_gone || client_gone(r)) {
		snprintf(r->error, sizeof(r->error), "no answer: the client went away");
		r->close = true;
	} else if (stopping) {
		ret = server_error(r, 503, SERVER_REJ_BUSY,
				   "the server is stopping; retry on another instance");
	} else if (waited > (int64_t)server_class_wait_s(r->job_cls) * 1000000000LL) {
		ret = server_error(r, 503, SERVER_REJ_BUSY,
				   "%s: every worker stayed busy for %d s (the limit); retry later",
				   r->url, server_class_wait_s(r->job_cls));
	} else {
		ret = r->job(s, r);
	}
	if (ret == MHD_NO && !r->resp)
		r->close = true;
	MHD_resume_connection(r->conn);
}

struct worker_arg {
	struct server_pool *p;
	enum server_class cls;
};

static void *worker_main(void *arg)
{
	struct server_pool *p = ((struct worker_arg *)arg)->p;
	struct class_queue *q = &p->q[((struct worker_arg *)arg)->cls];
	struct server_req *r;
	int64_t wake;

	free(arg);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		r = take_due(q, p->stopping ? INT64_MAX : mono_ns(), &wake);
		if (r) {
			bool stopping = p->stopping;

			pthread_mutex_unlock(&p->lock);
			run_job(p->s, r, stopping);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		if (p->stopping)
			break;
		if (wake == INT64_MAX) {
			pthread_cond_wait(&p->cond, &p->lock);
		} else {
			/* the condition variable waits on CLOCK_MONOTONIC (set at init) */
			struct timespec ts = {wake / 1000000000, wake % 1000000000};

			pthread_cond_timedwait(&p->cond, &p->lock, &ts);
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int server_defer(struct server_req *r, enum server_class cls, int64_t due_ns, server_handler_fn fn)
{
	struct server_pool *p = r->srv->pool;
	struct class_queue *q = &p->q[cls];

	pthread_mutex_lock(&p->lock);
	if (p->stopping || !q->started) {
		pthread_mutex_unlock(&p->lock);
		return -ECANCELED;
	}
	r->deferred = true; /* before the worker can see r */
	MHD_suspend_connection(r->conn);
	r->job = fn;
	r->job_cls = cls;
	r->job_queued_ns = mono_ns();
	r->job_due_ns = due_ns;
	r->job_next = NULL;
	if (q->tail)
		q->tail->job_next = r;
	else
		q->head = r;
	q->tail = r;
	pthread_cond_broadcast(&p->cond);
	if (due_ns) { /* the sweeper watches its client while it waits */
		pthread_mutex_lock(&p->conn_lock);
		kick_locked(p);
		pthread_mutex_unlock(&p->conn_lock);
	}
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static void *live_main(void *arg)
{
	struct server_req *r = arg;
	struct server_pool *p = r->srv->pool;

	run_job(r->srv, r, false);
	pthread_mutex_lock(&p->lock);
	if (--p->live_threads == 0)
		pthread_cond_broadcast(&p->live_done);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int server_spawn(struct server_req *r, server_handler_fn fn)
{
	struct server_pool *p = r->srv->pool;
	pthread_attr_t at;
	pthread_t t;
	int err;

	pthread_mutex_lock(&p->lock);
	if (p->stopping) {
		pthread_mutex_unlock(&p->lock);
		return -ECANCELED;
	}
	r->job = fn;
	r->job_cls = SERVER_CLASS_QUERY;
	r->job_queued_ns = r->job_due_ns = mono_ns();
	r->deferred = true;
	MHD_suspend_connection(r->conn);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &at, live_main, r);
	pthread_attr_destroy(&at);
	if (err) {
		pthread_mutex_unlock(&p->lock);
		r->deferred = false;
		MHD_resume_connection(r->conn);
		return -err;
	}
	p->live_threads++;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/* ---- life cycle ---- */

static int start_workers(struct server_pool *p, enum server_class cls, int n)
{
	struct class_queue *q = &p->q[cls];

	if (!(q->workers = calloc((size_t)n, sizeof(*q->workers))))
		return -ENOMEM;
	q->nworkers = n;
	for (int i = 0; i < n; i++) {
		struct worker_arg *a = malloc(sizeof(*a));
		int err;

		if (!a)
			return -ENOMEM;
		*a = (struct worker_arg){p, cls};
		if ((err = pthread_create(&q->workers[i], NULL, worker_main, a))) {
			free(a);
			return -err;
		}
		q->started++;
	}
	return 0;
}

int server_pool__start(struct server *s)
{
	struct server_pool *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;
	int err;

	if (!p)
		return -ENOMEM;
	p->s = s;
	s->pool = p;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->conn_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_cond_init(&p->sweep_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&p->live_done, NULL);
	if ((err = start_workers(p, SERVER_CLASS_LIGHT, SERVER_LIGHT_WORKERS)) ||
	    (err = start_workers(p, SERVER_CLASS_QUERY, SERVER_MAX_QUERIES)) ||
	    (err = start_workers(p, SERVER_CLASS_DECODE, SERVER_MAX_DECODES)))
		return err;
	if ((err = pthread_create(&p->sweeper, NULL, sweeper_main, p)))
		return -err;
	p->sweeper_started = true;
	return 0;
}

void server_pool__drain(struct server *s)
{
	struct server_pool *p = s->pool;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_lock(&p->conn_lock);
	kick_locked(p);
	pthread_mutex_unlock(&p->conn_lock);
	/* the workers answer what is queued (503) before they end */
	for (int k = 0; k < SERVER_CLASS_MAX; k++)
		for (int i = 0; i < p->q[k].started; i++)
			pthread_join(p->q[k].workers[i], NULL);
	for (int k = 0; k < SERVER_CLASS_MAX; k++)
		p->q[k].started = 0;
	if (p->sweeper_started)
		pthread_join(p->sweeper, NULL);
	p->sweeper_started = false;
	pthread_mutex_lock(&p->lock);
	while (p->live_threads)
		pthread_cond_wait(&p->live_done, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

void server_pool__free(struct server *s)
{
	struct server_pool *p = s->pool;

	if (!p)
		return;
	server_pool__drain(s);
	for (int k = 0; k < SERVER_CLASS_MAX; k++)
		free(p->q[k].workers);
	/* entries of connections MHD has closed are gone; any left are freed with it */
	for (struct server_conn *c = p->conns, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->conn_lock);
	pthread_cond_destroy(&p->cond);
	pthread_cond_destroy(&p->sweep_cond);
	pthread_cond_destroy(&p->live_done);
	free(p);
	s->pool = NULL;
}

void server_pool__metrics(struct server *s, FILE *f)
{
	struct server_pool *p = s->pool;

	if (!p)
		return;
	fprintf(f,
		"# HELP hearth_server_connections_closed_total Connections the server closed, by "
		"reason.\n# TYPE hearth_server_connections_closed_total counter\n"
		"hearth_server_connections_closed_total{reason=\"header_deadline\"} %llu\n"
		"hearth_server_connections_closed_total{reason=\"body_deadline\"} %llu\n"
		"hearth_server_connections_closed_total{reason=\"evicted_idle\"} %llu\n",
		(unsigned long long)__atomic_load_n(&p->header_timeouts, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&p->body_timeouts, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&p->evicted, __ATOMIC_RELAXED));
	pthread_mutex_lock(&p->conn_lock);
	fprintf(f,
		"# HELP hearth_server_connections Open connections.\n"
		"# TYPE hearth_server_connections gauge\nhearth_server_connections %d\n",
		p->nconns);
	pthread_mutex_unlock(&p->conn_lock);
}
