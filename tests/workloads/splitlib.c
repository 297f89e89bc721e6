/* The shared-library part of the split workload (10% of its CPU). */
__attribute__((noinline)) void lib_hot_c(long n)
{
	for (volatile long i = 0; i < n; i++)
		;
}
