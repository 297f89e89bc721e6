/* The shared-library part of the split workload (10% of its CPU). */
#include "splitlib.h"

static volatile unsigned long split_sink;

__attribute__((noinline)) void split_keep(unsigned long x)
{
	split_sink = x;
}

__attribute__((noinline)) void lib_hot_c(long n)
{
	SPLIT_SPIN(n);
}
