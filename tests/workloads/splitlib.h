/*
 * The loop every hot function of the split workload runs: a dependent chain of
 * multiply-adds (about 4 cycles each, whatever the code alignment), its result
 * handed to split_keep(). That call also makes every hot function a non-leaf, so
 * GCC gives it a frame pointer (it sets none up in a leaf that needs no stack,
 * -fno-omit-frame-pointer or not).
 */
#ifndef SPLITLIB_H
#define SPLITLIB_H

void split_keep(unsigned long x);
void lib_hot_c(long n);

#define SPLIT_SPIN(n)                                                                              \
	do {                                                                                       \
		unsigned long x_ = (unsigned long)(n);                                             \
		for (long i_ = 0; i_ < (n); i_++)                                                  \
			x_ = x_ * 6364136223846793005ul + 1442695040888963407ul;                   \
		split_keep(x_);                                                                    \
	} while (0)

#endif
