/*
 * Workload for unwinding through signal frames (issue 14): built -O2
 * -fomit-frame-pointer, so only CFI can unwind it. A SIGPROF timer (every 2 ms
 * of CPU) runs on_tick, which burns about a third of the CPU in handler_burn:
 *   main -> busy_main            (interrupted)
 *        -> [signal frame: libc's __restore_rt] -> on_tick -> handler_burn
 * A walk that stops at the signal frame leaves handler_burn without main; one
 * that reads the signal frame as an ordinary one invents a caller.
 * Usage: sigwork SECONDS   (prints its pid, then runs for SECONDS of wall time)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline, noclone)) void handler_burn(void)
{
	long x = sink;

	for (int i = 0; i < 1500000; i++)
		x = x * 1103515245 + 12345;
	sink = x;
}

__attribute__((noinline, noclone)) void on_tick(int sig)
{
	handler_burn();
	sink += sig; /* after the call: no tail call, on_tick keeps its frame */
}

__attribute__((noinline, noclone)) long busy_main(long x)
{
	for (int i = 0; i < 1000000; i++)
		x = x * 6364136223846793005L + 1442695040888963407L;
	return x;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;
	struct itimerval it = {{0, 2000}, {0, 2000}};
	struct sigaction sa = {0};
	struct timespec t0, t;
	long x = 1;

	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGPROF, &sa, NULL) || setitimer(ITIMER_PROF, &it, NULL)) {
		perror("sigwork: timer");
		return 1;
	}
	printf("%d\n", (int)getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		x = busy_main(x);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	sink = x;
	return 0;
}
