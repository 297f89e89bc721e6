/*
 * bench/offcpu/run's floor rows: loads empty.bpf.o, attaches the programs
 * named on the command line (empty_switch, empty_exit, empty_rseq), prints
 * "Attaching" and holds them until SIGINT or SIGTERM.
 *
 *   empty_load OBJ PROG...
 */
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static void on_signal(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *p;

	if (argc < 3) {
		fprintf(stderr, "usage: empty_load OBJ PROG...\n");
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj)
		return 1;
	bpf_object__for_each_program(p, obj) bpf_program__set_autoload(p, false);
	for (int i = 2; i < argc; i++) {
		p = bpf_object__find_program_by_name(obj, argv[i]);
		if (!p) {
			fprintf(stderr, "empty_load: no program %s\n", argv[i]);
			return 1;
		}
		bpf_program__set_autoload(p, true);
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "empty_load: loading %s failed\n", argv[1]);
		return 1;
	}
	for (int i = 2; i < argc; i++)
		if (!bpf_program__attach(bpf_object__find_program_by_name(obj, argv[i]))) {
			fprintf(stderr, "empty_load: attaching %s failed\n", argv[i]);
			return 1;
		}
	fprintf(stderr, "Attaching %d probes\n", argc - 2);
	pause();
	bpf_object__close(obj);
	return 0;
}
