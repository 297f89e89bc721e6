/*
 * The library latedl loads late (dlopen): three frames without frame pointers
 * (built -O2 -fomit-frame-pointer), ~100k multiplies a call.
 */
static volatile unsigned long lib_sink;

__attribute__((noinline, noclone)) unsigned long late_leaf(unsigned long x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	lib_sink = x;
	return x;
}

__attribute__((noinline, noclone)) unsigned long late_mid(unsigned long x)
{
	unsigned long r = late_leaf(x ^ 7);

	lib_sink += r;
	return r + 1;
}

__attribute__((noinline, noclone)) unsigned long late_entry(unsigned long x)
{
	unsigned long r = late_mid(x + 3);

	lib_sink ^= r;
	return r + 2;
}
