/*
 * libFuzzer target for the /proc text parsers: proc_parse_maps_line and
 * proc_parse_stat on a NUL-terminated copy of the input. Beyond "no crash, no leak",
 * it checks what a successful parse promises: start < end and an owned path.
 */
#include "proc/proc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = malloc(size + 1), comm[32];
	struct proc_mapping m;
	uint64_t ticks;

	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	if (proc_parse_maps_line(line, &m) == 0) {
		if (m.start >= m.end || !m.path || strchr(m.path, '\n'))
			__builtin_trap();
		proc_mapping__fini(&m);
	} else if (m.path) {
		__builtin_trap(); /* a failed parse owns nothing */
	}
	if (proc_parse_stat(line, comm, sizeof(comm), &ticks) == 0 && strlen(comm) >= sizeof(comm))
		__builtin_trap();
	free(line);
	return 0;
}
