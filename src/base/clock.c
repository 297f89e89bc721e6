/*
 * Clocks as nanoseconds. Every module times intervals and stamps profiles in ns
 * (int64: until the year 2262 for CLOCK_REALTIME), read through this one call.
 */
#include "base.h"

struct timespec base_ns_timespec(int64_t ns)
{
	int64_t rem = ns % 1000000000;

	if (rem < 0) /* a time before 1970 or a negative interval: tv_nsec stays in [0, 1e9) */
		rem += 1000000000;
	return (struct timespec){.tv_sec = (time_t)((ns - rem) / 1000000000), .tv_nsec = (long)rem};
}

int64_t base_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
