/*
 * offcpu: threads that wait in known ways, and measure it themselves
 * (tests/integration/test_offcpu.sh, docs/offcpu.md).
 *
 *   offcpu MODE [ARG]     prints its pid, then runs until killed
 *
 * Modes (each thread's work is in a function of its own, for the stacks):
 *   sleep    off_sleeper: compute 3 ms (thread CPU clock), nanosleep 7 ms
 *   pipe     off_pipe_reader blocks in read(2) on a pipe that off_pipe_writer
 *            writes every ARG ms (default 20)
 *   lock     two off_locker threads: lock; compute 3 ms; unlock; compute 1 ms
 *   runq     ARG (default 4) off_spinner threads pinned to CPU 0, always runnable
 *   spin     one off_spinner thread (for a cgroup with a CPU quota)
 *
 * Truth, on SIGUSR1 (one line per thread, all clocks CLOCK_MONOTONIC ns):
 *   thread TID KIND WAITED_NS ELAPSED_NS
 * where WAITED_NS is what the thread measured around its waits with
 * clock_gettime (nanosleep, read, pthread_mutex_lock; 0 for spinners: their
 * truth is /proc/PID/task/TID/schedstat) and ELAPSED_NS the time since the
 * thread started.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 16

struct truth {
	pid_t tid;
	const char *kind;
	int64_t start;
	volatile int64_t waited; /* written by the thread, read at SIGUSR1 */
};

static struct truth truths[MAX_THREADS];
static int n_truths;
static volatile sig_atomic_t dump;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int pipefd[2];
static int pipe_ms = 20;
static volatile uint64_t sink;

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Burns ms of this thread's CPU time. */
static void __attribute__((noinline)) burn_ms(int ms)
{
	int64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + (int64_t)ms * 1000000;
	uint64_t x = sink;

	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 1000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

static struct truth *register_thread(const char *kind)
{
	static pthread_mutex_t reg = PTHREAD_MUTEX_INITIALIZER;
	struct truth *t;

	pthread_mutex_lock(&reg);
	t = &truths[n_truths++];
	t->tid = (pid_t)syscall(SYS_gettid);
	t->kind = kind;
	t->start = clock_ns(CLOCK_MONOTONIC);
	pthread_mutex_unlock(&reg);
	return t;
}

static void *__attribute__((noinline)) off_sleeper(void *arg)
{
	struct truth *t = register_thread("sleep");
	struct timespec d = {0, 7 * 1000000};

	(void)arg;
	for (;;) {
		int64_t t0;

		burn_ms(3);
		t0 = clock_ns(CLOCK_MONOTONIC);
		nanosleep(&d, NULL);
		t->waited += clock_ns(CLOCK_MONOTONIC) - t0;
	}
	return NULL;
}

static void *__attribute__((noinline)) off_pipe_reader(void *arg)
{
	struct truth *t = register_thread("pipe");
	char c;

	(void)arg;
	for (;;) {
		int64_t t0 = clock_ns(CLOCK_MONOTONIC);

		if (read(pipefd[0], &c, 1) != 1)
			break;
		t->waited += clock_ns(CLOCK_MONOTONIC) - t0;
	}
	return NULL;
}

static void *__attribute__((noinline)) off_pipe_writer(void *arg)
{
	struct timespec d = {pipe_ms / 1000, (long)(pipe_ms % 1000) * 1000000};

	(void)arg;
	for (;;) {
		nanosleep(&d, NULL);
		if (write(pipefd[1], "x", 1) != 1)
			break;
	}
	return NULL;
}

static void *__attribute__((noinline)) off_locker(void *arg)
{
	struct truth *t = register_thread("lock");

	(void)arg;
	for (;;) {
		int64_t t0 = clock_ns(CLOCK_MONOTONIC);

		pthread_mutex_lock(&lock);
		t->waited += clock_ns(CLOCK_MONOTONIC) - t0;
		burn_ms(3);
		pthread_mutex_unlock(&lock);
		burn_ms(1);
	}
	return NULL;
}

static void *__attribute__((noinline)) off_spinner(void *arg)
{
	cpu_set_t set;

	if (arg) {
		CPU_ZERO(&set);
		CPU_SET(0, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	register_thread("spin");
	for (;;)
		burn_ms(10);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	dump = 1;
}

static void start(void *(*fn)(void *), void *arg)
{
	pthread_t th;

	if (pthread_create(&th, NULL, fn, arg)) {
		perror("pthread_create");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "sleep";
	int arg = argc > 2 ? atoi(argv[2]) : 0, want = 1;

	signal(SIGUSR1, on_usr1);
	if (!strcmp(mode, "sleep")) {
		start(off_sleeper, NULL);
	} else if (!strcmp(mode, "pipe")) {
		if (arg > 0)
			pipe_ms = arg;
		if (pipe(pipefd))
			return 1;
		start(off_pipe_reader, NULL);
		start(off_pipe_writer, NULL);
	} else if (!strcmp(mode, "lock")) {
		start(off_locker, NULL);
		start(off_locker, NULL);
		want = 2;
	} else if (!strcmp(mode, "runq")) {
		want = arg > 0 && arg < MAX_THREADS ? arg : 4;
		for (int i = 0; i < want; i++)
			start(off_spinner, (void *)1);
	} else if (!strcmp(mode, "spin")) {
		start(off_spinner, NULL);
	} else {
		fprintf(stderr, "usage: offcpu sleep|pipe [MS]|lock|runq [N]|spin\n");
		return 2;
	}
	while (__atomic_load_n(&n_truths, __ATOMIC_ACQUIRE) < want)
		usleep(1000);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		pause();
		if (!dump)
			continue;
		dump = 0;
		for (int i = 0; i < n_truths; i++)
			printf("thread %d %s %lld %lld\n", (int)truths[i].tid, truths[i].kind,
			       (long long)truths[i].waited,
			       (long long)(clock_ns(CLOCK_MONOTONIC) - truths[i].start));
		fflush(stdout);
	}
}
