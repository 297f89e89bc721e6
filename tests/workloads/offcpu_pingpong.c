/*
 * offcpu_pingpong: two processes bounce one byte over two pipes for SECONDS
 * (default 5) and print the round trips per second: a context-switch-heavy
 * workload for the off-CPU recorder's cost (docs/offcpu.md, "Cost").
 *
 *   offcpu_pingpong [SECONDS]   prints "round_trips_per_s N cpu_ns_per_round_trip C"
 *
 * C is the CPU time (user + system) of both processes per round trip: on a
 * shared machine a steadier measure of an added per-switch cost than the rate
 * (BPF programs on sched_switch and sys_exit run on the switching task's time).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5, t0, t, cpu;
	struct rusage self, kids;
	int ab[2], ba[2];
	long n = 0;
	char c = 'x';
	pid_t child;

	if (pipe(ab) || pipe(ba))
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) { /* echo until the parent closes its end */
		close(ab[1]);
		close(ba[0]);
		while (read(ab[0], &c, 1) == 1)
			if (write(ba[1], &c, 1) != 1)
				break;
		_exit(0);
	}
	close(ab[0]);
	close(ba[1]);
	t0 = now_s();
	do {
		for (int i = 0; i < 1000; i++) {
			if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
				return 1;
		}
		n += 1000;
		t = now_s();
	} while (t - t0 < secs);
	close(ab[1]);
	waitpid(child, NULL, 0);
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	cpu = tv_s(self.ru_utime) + tv_s(self.ru_stime) + tv_s(kids.ru_utime) + tv_s(kids.ru_stime);
	printf("round_trips_per_s %.0f cpu_ns_per_round_trip %.0f\n", (double)n / (t - t0),
	       cpu * 1e9 / (double)n);
	return 0;
}
