/*
 * Workload with a known CPU split: about 60% in split_hot_a, 30% in split_hot_b
 * (both here) and 10% in lib_hot_c (in libsplitlib.so): 6:3:1 iterations of the
 * same multiply chain (splitlib.h). The iteration ratio is only what it aims
 * at; the truth a test compares with is measured: the thread CPU time
 * (CLOCK_THREAD_CPUTIME_ID) spent in each call, summed from the start.
 * Each round has a pseudo-random length (1.5-2.5 M iterations, 2.3-3.9 ms here, not a
 * fixed ~3 ms): a round as long as 1.5 sampling periods of 499 Hz (3.006 ms)
 * would put every sample at one of a few fixed points of the round, on a quiet
 * machine for seconds, and the shares sampled would be off by whole points.
 * Usage: split SECONDS [PROGRAM ARGS...]
 *   prints its pid, runs for SECONDS of wall time, then execs PROGRAM if given
 *   (same pid, new image: a test of exec handling).
 *   On SIGUSR1 it prints, once the current round is done, one line
 *     cpu A_NS B_NS C_NS TOTAL_NS
 *   the CPU time spent so far in split_hot_a, split_hot_b and lib_hot_c and in
 *   the whole process (CLOCK_PROCESS_CPUTIME_ID), in nanoseconds.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "splitlib.h"

static volatile sig_atomic_t report_requested;
static long long spent_ns[3]; /* split_hot_a, split_hot_b, lib_hot_c */

static void on_usr1(int sig)
{
	(void)sig;
	report_requested = 1;
}

static long long cpu_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) void split_hot_a(long n)
{
	SPLIT_SPIN(n);
}

__attribute__((noinline)) void split_hot_b(long n)
{
	SPLIT_SPIN(n);
}

/* Each call timed on the thread's CPU clock (a system call, under 1 us, of 3 ms rounds). */
__attribute__((noinline)) static void split_round(long unit)
{
	long long t0, t1, t2, t3;

	t0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	split_hot_a(6 * unit);
	t1 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	split_hot_b(3 * unit);
	t2 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	lib_hot_c(unit);
	t3 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	spent_ns[0] += t1 - t0;
	spent_ns[1] += t2 - t1;
	spent_ns[2] += t3 - t2;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;
	struct timespec t0, t;
	struct sigaction sa;
	unsigned long long rnd = 88172645463325252ull;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	printf("%d\n", getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		/* xorshift: units of 150000-249999 iterations, 200000 on average */
		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		split_round(150000 + (long)(rnd % 100000));
		if (report_requested) {
			report_requested = 0;
			printf("cpu %lld %lld %lld %lld\n", spent_ns[0], spent_ns[1], spent_ns[2],
			       cpu_ns(CLOCK_PROCESS_CPUTIME_ID));
			fflush(stdout);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	if (argc > 2) {
		execv(argv[2], argv + 2);
		perror("execv");
		return 1;
	}
	return 0;
}
