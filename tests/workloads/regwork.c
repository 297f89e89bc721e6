/*
 * regwork: a paced workload for the regression tests (issue 31). Every 10 ms
 * tick it runs four functions, each for a fixed amount of its thread's CPU time,
 * then sleeps until the next tick. A function's CPU time per second of wall
 * time therefore does not depend on the others, on the CPU's speed or on how
 * busy the machine is (as long as the process gets its ~half a CPU): what the
 * profiler sees as "rate" is set by the budgets below, not by the iteration
 * count of a loop.
 *
 *   slow_path  2500 us per tick  (x 1.10 once the planted regression is on)
 *   fast_path   500 us
 *   steady_a   1000 us
 *   steady_b   1000 us          (all times SCALE, the fourth argument)
 *
 * Each function spins on a dependent multiply-add chain in chunks of about
 * 40 us and reads CLOCK_THREAD_CPUTIME_ID between chunks, until its budget is
 * spent. The four run in a pseudo-random order each tick, so no function sits
 * at a fixed phase of the tick (which a periodic sampler could alias with).
 *
 * The truth a test compares with is measured, not nominal: each call is timed
 * on the thread's CPU clock, and the sums per function are printed.
 *
 * Usage: regwork steady|planted SECONDS [SWITCH_AFTER_S [SCALE]]
 *   planted: after SWITCH_AFTER_S seconds (0: never by time), or at the first
 *   SIGUSR1, slow_path's budget grows by 10% (relative). steady ignores SIGUSR1.
 * Output (stdout, one line each, flushed):
 *   PID                                 first line
 *   t REALTIME_NS PHASE SLOW FAST A B   about every second: CPU ns spent so far
 *                                       in each function (cumulative, both phases)
 *   switch REALTIME_NS                  the moment slow_path's budget grew
 *   phase P WALL_NS SLOW FAST A B LATE  totals of phase P (0 before the switch,
 *                                       1 after), at the switch and at the end;
 *                                       LATE counts restarts of the schedule after
 *                                       falling 100 ms behind (the pacing did not
 *                                       hold: the process did not get its CPU)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REG_TICK_NS 10000000LL
#define REG_CHUNK 40000 /* multiply-adds between two reads of the CPU clock (~40 us) */
#define REG_PLANTED 1.10
#define REG_CATCHUP_NS (10 * REG_TICK_NS) /* the most work caught up after a preemption */

enum { REG_SLOW, REG_FAST, REG_STEADY_A, REG_STEADY_B, REG_NFUNC };

/* CPU microseconds per tick of each function, at scale 1 */
static const double reg_budget_us[REG_NFUNC] = {2500, 500, 1000, 1000};

static volatile sig_atomic_t switch_requested;
static volatile unsigned long reg_sink; /* keeps the chains' results alive */

static void on_usr1(int sig)
{
	(void)sig;
	switch_requested = 1;
}

static long long clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins on a multiply-add chain (multiplier M, distinct per function so that no
 * two functions compile to the same code) until the thread's CPU clock has
 * advanced NS nanoseconds. The clock read makes each function a non-leaf, so it
 * keeps its frame pointer. */
#define REG_SPIN(ns, m)                                                                            \
	do {                                                                                       \
		long long end_ = clock_ns(CLOCK_THREAD_CPUTIME_ID) + (ns);                         \
		unsigned long x_ = reg_sink;                                                       \
		do {                                                                               \
			for (int i_ = 0; i_ < REG_CHUNK; i_++)                                     \
				x_ = x_ * (m) + 1442695040888963407ul;                             \
		} while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end_);                                \
		reg_sink = x_;                                                                     \
	} while (0)

__attribute__((noinline)) void slow_path(long long ns)
{
	REG_SPIN(ns, 6364136223846793005ul);
}

__attribute__((noinline)) void fast_path(long long ns)
{
	REG_SPIN(ns, 2862933555777941757ul);
}

__attribute__((noinline)) void steady_a(long long ns)
{
	REG_SPIN(ns, 3202034522624059733ul);
}

__attribute__((noinline)) void steady_b(long long ns)
{
	REG_SPIN(ns, 3935559000370003845ul);
}

static void (*const reg_funcs[REG_NFUNC])(long long) = {slow_path, fast_path, steady_a, steady_b};

struct reg_phase {
	long long start_ns; /* CLOCK_REALTIME */
	long long spent_ns[REG_NFUNC];
	long late;
};

static void print_phase(int p, const struct reg_phase *ph, long long now_rt)
{
	printf("phase %d %lld %lld %lld %lld %lld %ld\n", p, now_rt - ph->start_ns, ph->spent_ns[0],
	       ph->spent_ns[1], ph->spent_ns[2], ph->spent_ns[3], ph->late);
	fflush(stdout);
}

/* One tick's work: the four functions in a pseudo-random order, each call timed
 * on the thread's CPU clock into ph (and into the cumulative sums). */
static void reg_tick(const long long budget_ns[REG_NFUNC], unsigned long long *rnd,
		     struct reg_phase *ph, long long cum[REG_NFUNC])
{
	int order[REG_NFUNC] = {0, 1, 2, 3};

	for (int i = REG_NFUNC - 1; i > 0; i--) { /* Fisher-Yates on an xorshift */
		int j, k;

		*rnd ^= *rnd << 13;
		*rnd ^= *rnd >> 7;
		*rnd ^= *rnd << 17;
		j = (int)(*rnd % (unsigned long long)(i + 1));
		k = order[i];
		order[i] = order[j];
		order[j] = k;
	}
	for (int i = 0; i < REG_NFUNC; i++) {
		int f = order[i];
		long long t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), d;

		reg_funcs[f](budget_ns[f]);
		d = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		ph->spent_ns[f] += d;
		cum[f] += d;
	}
}

/* Sleeps until the next tick. Work that ran past it (the thread was preempted)
 * is caught up by starting the next ticks at once, so the rates hold on average;
 * more than REG_CATCHUP_NS behind, the schedule restarts from now (a late tick:
 * that time is lost, and the rates of the phase are lower). */
static void reg_wait(long long *next, long *late)
{
	long long now = clock_ns(CLOCK_MONOTONIC);
	struct timespec ts;

	*next += REG_TICK_NS;
	if (now >= *next) {
		if (now - *next > REG_CATCHUP_NS) {
			(*late)++;
			*next = now;
		}
		return;
	}
	ts.tv_sec = *next / 1000000000;
	ts.tv_nsec = *next % 1000000000;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
		; /* EINTR (SIGUSR1): sleep on to the same tick */
}

int main(int argc, char **argv)
{
	struct reg_phase ph[2];
	long long budget_ns[REG_NFUNC], cum[REG_NFUNC] = {0}, next, end, switch_at, last_t;
	unsigned long long rnd = 88172645463325252ull;
	double secs, scale;
	int planted, phase = 0;
	struct sigaction sa;

	if (argc < 3 || (strcmp(argv[1], "steady") && strcmp(argv[1], "planted"))) {
		fprintf(stderr, "usage: regwork steady|planted SECONDS [SWITCH_AFTER_S [SCALE]]\n");
		return 2;
	}
	planted = !strcmp(argv[1], "planted");
	secs = atof(argv[2]);
	scale = argc > 4 ? atof(argv[4]) : 1;
	if (secs <= 0 || scale <= 0 || scale > 2.5) {
		fprintf(stderr, "regwork: SECONDS must be > 0 and SCALE in (0, 2.5]\n");
		return 2;
	}
	for (int f = 0; f < REG_NFUNC; f++)
		budget_ns[f] = (long long)(reg_budget_us[f] * scale * 1000);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = planted ? on_usr1 : SIG_IGN;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	memset(ph, 0, sizeof(ph));
	printf("%d\n", getpid());
	fflush(stdout);

	next = clock_ns(CLOCK_MONOTONIC);
	end = next + (long long)(secs * 1e9);
	switch_at = planted && argc > 3 && atof(argv[3]) > 0 ? next + (long long)(atof(argv[3]) * 1e9)
							       : -1;
	ph[0].start_ns = clock_ns(CLOCK_REALTIME);
	last_t = next;
	while (next < end) {
		if (planted && !phase &&
		    (switch_requested || (switch_at >= 0 && next >= switch_at))) {
			long long rt = clock_ns(CLOCK_REALTIME);

			print_phase(0, &ph[0], rt);
			printf("switch %lld\n", rt);
			fflush(stdout);
			budget_ns[REG_SLOW] = (long long)(reg_budget_us[REG_SLOW] * scale * 1000 *
							  REG_PLANTED);
			phase = 1;
			ph[1].start_ns = rt;
		}
		reg_tick(budget_ns, &rnd, &ph[phase], cum);
		if (next - last_t >= 1000000000) {
			printf("t %lld %d %lld %lld %lld %lld\n", clock_ns(CLOCK_REALTIME), phase,
			       cum[0], cum[1], cum[2], cum[3]);
			fflush(stdout);
			last_t = next;
		}
		reg_wait(&next, &ph[phase].late);
	}
	print_phase(phase, &ph[phase], clock_ns(CLOCK_REALTIME));
	return 0;
}
