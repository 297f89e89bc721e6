/*
 * A tiny unit-test harness: TEST(name) registers a function, CHECK(expr)
 * records a failure and jumps to the function's `cleanup:` label so a
 * failing test still frees what it allocated (ASan stays quiet).
 *
 * Every test binary prints one line per test ("PASS name" / "FAIL name")
 * and exits non-zero when any failed; tests/run.sh adds them up.
 */
#ifndef HEARTH_TESTS_UNIT_H
#define HEARTH_TESTS_UNIT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef void (*unit_fn)(int *failed);
void unit_register(const char *name, unit_fn fn);

#define TEST(name)                                                                                 \
	static void test_##name(int *unit_failed);                                                 \
	__attribute__((constructor)) static void register_##name(void)                             \
	{                                                                                          \
		unit_register(#name, test_##name);                                                 \
	}                                                                                          \
	static void test_##name(int *unit_failed)

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "  %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
			*unit_failed = 1;                                                          \
			goto cleanup;                                                              \
		}                                                                                  \
	} while (0)

/* CHECK with a printf-style explanation of the observed value. */
#define CHECKF(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "  %s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			*unit_failed = 1;                                                          \
			goto cleanup;                                                              \
		}                                                                                  \
	} while (0)

#define CHECK_STREQ(a, b)                                                                          \
	CHECKF((a) != NULL && strcmp((a), (b)) == 0, "got \"%s\", want \"%s\"", (a) ? (a) : "(null)", (b))

struct profile;
/* The folded text of p (folded_write into a malloc'd string), NULL on error. */
char *unit_folded(const struct profile *p);

/* gzip of `total` zero bytes (a decompression bomb), malloc'd; NULL on failure. */
uint8_t *unit_gzip_zeros(size_t total, size_t *out_len);

/* Directory holding test data files (tests/unit/data), for tests that need one. */
const char *unit_data_dir(void);
/* A fresh temporary directory for this test binary (removed at exit). */
const char *unit_tmp_dir(void);

#endif
