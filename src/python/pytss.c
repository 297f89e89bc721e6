/*
 * pytss: where glibc keeps a thread's pthread_getspecific value of a key, as an offset
 * from the thread pointer, so that the BPF walk can read a Python thread's
 * PyThreadState (the value of the interpreter's autoTSSkey) from the task's fs base.
 *
 * glibc's struct pthread starts at the thread pointer (x86-64: pthread_self() == fs
 * base) and holds specific_1stblock[32], an array of {uintptr_t seq; void *data;}: the
 * value of key k < 32 is at tp + base + 16 * k + 8. The layout is glibc's private
 * business, so it is measured at run time in hearth's own process: create two keys,
 * store known pointers, find the first in a bounded window above pthread_self() and
 * check the second sits 16 bytes per key further. Targets use the same glibc (the
 * machine's); a process in a container with another glibc could differ (docs/python.md).
 * Keys >= 32 live in a second-level array (an extra pointer hop): not supported.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "python/python_impl.h"

#define TSS_FIRST_LEVEL 32   /* PTHREAD_KEY_2NDLEVEL_SIZE */
#define TSS_STRIDE	16   /* sizeof(struct pthread_key_data) */
#define TSS_WINDOW	4096 /* struct pthread is about 2.3 KiB in glibc 2.36 */
#define TSS_CHUNK	512

static pthread_once_t tss_once = PTHREAD_ONCE_INIT;
static int tss_err;
static uint64_t tss_base; /* offset of specific_1stblock[0].data from tp */

/* Reads what can be read of [tp, tp + TSS_WINDOW) of our own thread into buf, chunk by
 * chunk (a chunk past the end of the mapping reads as zeros). */
static void read_window(uint64_t tp, uint8_t *buf)
{
	memset(buf, 0, TSS_WINDOW);
	for (size_t off = 0; off < TSS_WINDOW; off += TSS_CHUNK)
		if (py_read((uint32_t)getpid(), tp + off, buf + off, TSS_CHUNK))
			break;
}

static void tss_find(void)
{
	static const char marker[2] = {'a', 'b'}; /* two addresses no slot holds by chance */
	pthread_key_t k[2];
	uint8_t buf[TSS_WINDOW];
	uint64_t tp = (uint64_t)pthread_self(), want0 = (uint64_t)&marker[0];
	uint64_t want1 = (uint64_t)&marker[1];
	int made = 0;

	tss_err = -ENOTSUP;
	for (; made < 2; made++)
		if (pthread_key_create(&k[made], NULL) != 0) {
			tss_err = -EAGAIN;
			goto cleanup;
		}
	if (k[0] >= TSS_FIRST_LEVEL || k[1] >= TSS_FIRST_LEVEL ||
	    pthread_setspecific(k[0], &marker[0]) || pthread_setspecific(k[1], &marker[1]))
		goto cleanup;
	read_window(tp, buf);
	for (size_t at = 0; at + 8 <= TSS_WINDOW; at += 8) {
		uint64_t w, base, at1;

		memcpy(&w, buf + at, 8);
		if (w != want0 || at < TSS_STRIDE * (uint64_t)k[0])
			continue;
		base = at - TSS_STRIDE * (uint64_t)k[0];
		at1 = base + TSS_STRIDE * (uint64_t)k[1];
		if (at1 + 8 > TSS_WINDOW)
			continue;
		memcpy(&w, buf + at1, 8);
		if (w == want1) {
			tss_base = base;
			tss_err = 0;
			break;
		}
	}
cleanup:
	for (int i = 0; i < made; i++)
		pthread_key_delete(k[i]);
}

int py_tss_offset(uint32_t key, uint64_t *offset)
{
	pthread_once(&tss_once, tss_find);
	if (tss_err)
		return tss_err;
	if (key >= TSS_FIRST_LEVEL)
		return -PYTHON_E_TSS_KEY;
	*offset = tss_base + TSS_STRIDE * (uint64_t)key;
	return 0;
}
