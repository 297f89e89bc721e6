/*
 * bench/unwind_mem: unwind tables for every process on this machine, as
 * `hearth record --unwind dwarf` would build them if every process were
 * sampled. Prints the BPF map bytes in use (rows and chunks), the user-space
 * bytes, total build time, and the build time of libc and of the largest
 * library. Run as root through bench/unwind_tables (which builds it).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "unwind/unwind.h"

int main(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, mm, .map_flags = BPF_F_MMAPABLE);
	size_t rows_total = (size_t)HEARTH_UNWIND_CHUNKS * HEARTH_UNWIND_CHUNK_ROWS;
	struct unwind_mgr *m = NULL;
	struct unwind_mgr_stats st;
	const struct unwind_table *libc, *big;
	struct dirent *de;
	DIR *d = opendir("/proc");
	int rows_fd, procs_fd, n = 0;

	rows_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "uw_rows", 4, sizeof(struct hearth_unwind_row),
				 (uint32_t)rows_total, &mm);
	procs_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "uw_procs", 4,
				  sizeof(struct hearth_unwind_proc), HEARTH_UNWIND_MAX_PROCS, NULL);
	if (!d || rows_fd < 0 || procs_fd < 0 ||
	    unwind_mgr__new(rows_fd, procs_fd, HEARTH_UNWIND_CHUNKS, &m)) {
		fprintf(stderr, "unwind_mem: needs root (BPF maps) and /proc\n");
		return 1;
	}
	while ((de = readdir(d)))
		if (atoi(de->d_name) > 0 && (uint32_t)atoi(de->d_name) != (uint32_t)getpid())
			unwind_mgr__note(m, (uint32_t)atoi(de->d_name), 1);
	closedir(d);
	while (unwind_mgr__work(m, 1000) > 0)
		n++;
	unwind_mgr__stats(m, &st);
	libc = unwind_mgr__find_path(m, "/libc.so");
	big = unwind_mgr__largest(m);
	printf(
	    "processes with a view: %llu; distinct objects with tables: %llu (%llu failed/none)\n",
	    (unsigned long long)st.procs, (unsigned long long)st.tables,
	    (unsigned long long)st.build_failed);
	printf("rows: %llu = %.1f KiB of rows; BPF: %llu of %llu chunks in use = %.1f KiB "
	       "(of a %.1f MiB row map here; hearth record's default is %d chunks)\n",
	       (unsigned long long)st.rows, st.row_bytes / 1024.0,
	       (unsigned long long)st.chunks_used, (unsigned long long)st.chunks_total,
	       st.chunks_used * HEARTH_UNWIND_CHUNK_ROWS * 16 / 1024.0, rows_total * 16 / 1048576.0,
	       HEARTH_UNWIND_DEFAULT_CHUNKS);
	printf("unwind_procs map: %.1f MiB for %d processes\n",
	       HEARTH_UNWIND_MAX_PROCS * sizeof(struct hearth_unwind_proc) / 1048576.0,
	       HEARTH_UNWIND_MAX_PROCS);
	printf("user memory: %.1f KiB; total build time %.1f ms; tables that did not fit: %llu\n",
	       st.user_bytes / 1024.0, st.build_ms, (unsigned long long)st.no_room);
	if (libc)
		printf("libc: %s: %zu rows, built in %.2f ms\n", libc->path, libc->rows.n,
		       libc->build_ms);
	if (big)
		printf("largest: %s: %zu rows, built in %.2f ms\n", big->path, big->rows.n,
		       big->build_ms);
	unwind_mgr__free(m);
	close(rows_fd);
	close(procs_fd);
	return 0;
}
