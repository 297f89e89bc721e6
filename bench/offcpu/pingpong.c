/*
 * A context-switch-heavy workload for bench/offcpu/run: two processes pass one
 * byte back and forth over two pipes, each blocking in read() until the other
 * writes, so every round trip is two sleeps and two wake-ups (four context
 * switches when both are pinned to one CPU). Prints its throughput, per second
 * of wall time and per second of CPU time of both processes (user + system:
 * what a probe on the context switch adds shows there even when other tasks
 * take the CPU away and make the wall rate noisy):
 *
 *   pingpong SECONDS [CPU]
 *   -> "roundtrips N seconds S rate R cpu C cpurate Q"
 *
 * CPU pins both processes there (-1 or absent: not pinned). Exit 0 on success.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("pingpong: sched_setaffinity");
		exit(1);
	}
}

static double cpu_s(int who)
{
	struct rusage u;

	getrusage(who, &u);
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
	       (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5, t0, t, c0 = cpu_s(RUSAGE_SELF), c;
	int cpu = argc > 2 ? atoi(argv[2]) : -1, to_child[2], to_parent[2];
	unsigned long long n = 0;
	char b = 0;
	pid_t child;

	if (secs <= 0 || pipe(to_child) || pipe(to_parent)) {
		fprintf(stderr, "usage: pingpong SECONDS [CPU]\n");
		return 2;
	}
	pin(cpu);
	child = fork();
	if (child < 0) {
		perror("pingpong: fork");
		return 1;
	}
	if (child == 0) { /* echo every byte back until the parent closes its end */
		close(to_child[1]);
		close(to_parent[0]);
		while (read(to_child[0], &b, 1) == 1)
			if (write(to_parent[1], &b, 1) != 1)
				_exit(1);
		_exit(0);
	}
	close(to_child[0]);
	close(to_parent[1]);
	t0 = now_s();
	for (t = t0; t - t0 < secs; n++) {
		if (write(to_child[1], &b, 1) != 1 || read(to_parent[0], &b, 1) != 1) {
			perror("pingpong: pipe");
			kill(child, SIGKILL);
			return 1;
		}
		if ((n & 255) == 0)
			t = now_s();
	}
	t = now_s();
	close(to_child[1]);
	waitpid(child, NULL, 0);
	c = cpu_s(RUSAGE_SELF) + cpu_s(RUSAGE_CHILDREN) - c0;
	printf("roundtrips %llu seconds %.3f rate %.1f cpu %.3f cpurate %.1f\n", n, t - t0,
	       (double)n / (t - t0), c, c > 0 ? (double)n / c : 0.0);
	return 0;
}
