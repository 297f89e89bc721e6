/*
 * Clocks as nanoseconds. Every module times intervals and stamps profiles in ns
 * (int64: until the year 2262 for CLOCK_REALTIME), read through this one call.
 */
#include "base.h"

int64_t base_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
