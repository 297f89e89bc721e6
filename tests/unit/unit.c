/*
 * Runner for the unit-test binaries: runs every registered test (or those
 * named on the command line), prints PASS/FAIL per test and a summary.
 */
#include "unit.h"
#include "profile/profile.h"

#include <stdlib.h>
#include <zlib.h>
#include <unistd.h>

#define UNIT_MAX 512

static struct {
	const char *name;
	unit_fn fn;
} tests[UNIT_MAX];
static int n_tests;
static char tmp_dir[256];

void unit_register(const char *name, unit_fn fn)
{
	if (n_tests == UNIT_MAX) {
		fprintf(stderr, "unit: more than %d tests in one binary\n", UNIT_MAX);
		exit(2);
	}
	tests[n_tests].name = name;
	tests[n_tests].fn = fn;
	n_tests++;
}

const char *unit_data_dir(void)
{
	const char *d = getenv("HEARTH_TEST_DATA");
	return d ? d : "tests/unit/data";
}

static void remove_tmp(void)
{
	char cmd[300];

	if (tmp_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "unit: could not remove %s\n", tmp_dir);
	}
}

const char *unit_tmp_dir(void)
{
	if (!tmp_dir[0]) {
		snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/hearth-unit-XXXXXX");
		if (!mkdtemp(tmp_dir)) {
			perror("mkdtemp");
			exit(2);
		}
		atexit(remove_tmp);
	}
	return tmp_dir;
}

uint8_t *unit_gzip_zeros(size_t total, size_t *out_len)
{
	size_t chunk = 1 << 20, cap = total / 500 + 4096;
	uint8_t *zeros = calloc(1, chunk), *out = malloc(cap);
	z_stream z = {0};
	int zr = Z_OK;

	if (!zeros || !out || deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY)) {
		free(zeros);
		free(out);
		return NULL;
	}
	z.next_out = out;
	z.avail_out = (uInt)cap;
	for (size_t done = 0; done < total && zr == Z_OK; done += chunk) {
		z.next_in = zeros;
		z.avail_in = (uInt)(total - done < chunk ? total - done : chunk);
		zr = deflate(&z, done + chunk >= total ? Z_FINISH : Z_NO_FLUSH);
	}
	*out_len = z.total_out;
	deflateEnd(&z);
	free(zeros);
	if (zr != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	return out;
}

static int selected(int argc, char **argv, const char *name)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;

	for (int i = 0; i < n_tests; i++) {
		int f = 0;

		if (!selected(argc, argv, tests[i].name))
			continue;
		tests[i].fn(&f);
		printf("%s %s\n", f ? "FAIL" : "PASS", tests[i].name);
		fflush(stdout);
		if (f)
			failed++;
		else
			passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

char *unit_folded(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	folded_write(p, f);
	fclose(f);
	return buf;
}
