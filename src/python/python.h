/*
 * python: names the Python frames of running CPython processes (3.10-3.13).
 *
 * The manager recognises CPython processes (libpython3.X.so or a static
 * python3.X executable that exports _PyRuntime and PyCode_Type), works out the
 * offsets the BPF walk needs (bpf/python_abi.h) and publishes one struct
 * hearth_py_proc per process into the `py_procs` map. It then turns the
 * (code object, instruction) pairs the walk records into function names, files
 * and lines by reading the code objects from the process (process_vm_readv),
 * cached per (process, code object). See docs/python.md.
 *
 * Thread-safe: the sampler calls note/exit/work, the collector resolve/is_eval,
 * possibly from other threads; one mutex guards the manager.
 */
#ifndef HEARTH_PYTHON_H
#define HEARTH_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python_abi.h" /* bpf/ */

#define PYTHON_NAME_MAX 256 /* a frame's name: module.qualname */
#define PYTHON_FILE_MAX 512

struct python_mgr;

/* procs_fd: the BPF `py_procs` map, or -1 (nothing is published: tests). */
int python_mgr__new(int procs_fd, struct python_mgr **out);
void python_mgr__free(struct python_mgr *m);

/* A process was seen first: probe it on the next work. Seeing it again under the
 * same (pid, pstart) changes nothing (a sample taken while it exits announces it
 * again, after its exit). */
void python_mgr__note(struct python_mgr *m, uint32_t pid, uint64_t pstart);
/* It exec'd (pid and pstart stay): forget its old image, probe the new one. */
void python_mgr__exec(struct python_mgr *m, uint32_t pid, uint64_t pstart);
/* It exited: its map entry goes; what resolve learnt stays until forget. */
void python_mgr__exit(struct python_mgr *m, uint32_t pid);
/* Drops what is known of the process (pid, pstart) that exited. Nothing when pid
 * names another process by now (pid reuse): that one is kept. pstart 0: pid's,
 * whichever it is. */
void python_mgr__forget(struct python_mgr *m, uint32_t pid, uint64_t pstart);
/* Probes queued processes for at most budget_ms; retries those whose interpreter
 * was not ready yet. Number probed or -errno. */
int python_mgr__work(struct python_mgr *m, int budget_ms);
/* Milliseconds until work has something due, -1 when nothing is queued. */
int python_mgr__next_due_ms(const struct python_mgr *m);

struct python_frame {
	char name[PYTHON_NAME_MAX]; /* "module.Class.method" (module from the file name) */
	char file[PYTHON_FILE_MAX]; /* co_filename */
	int64_t line;		    /* current line, else co_firstlineno, else 0 */
};

/* Names one recorded frame (code object address, second word of the record
 * without HEARTH_PY_FRAME_ENTRY). 0, -ENOENT (process not described), -EIO (the
 * code object could not be read: exited, or not a code object). */
int python_mgr__resolve(struct python_mgr *m, uint32_t pid, uint64_t pstart, uint64_t code,
			uint64_t instr, struct python_frame *out);
/* Reads and caches a code object not cached yet (no read at all when it is): the
 * collector calls it for each new stack's frames while the process lives. 0,
 * -ENOENT, -EIO as resolve. */
int python_mgr__warm(struct python_mgr *m, uint32_t pid, uint64_t pstart, uint64_t code);
/* Whether pc lies in that process's _PyEval_EvalFrameDefault (Python frames
 * replace it in stacks). */
bool python_mgr__is_eval(struct python_mgr *m, uint32_t pid, uint64_t pstart, uint64_t pc);

struct python_mgr_stats {
	uint64_t processes;   /* described now (published) */
	uint64_t probed;      /* probes run */
	uint64_t unsupported; /* CPython that cannot be walked: a version without offsets, a
			       * free-threaded build, an autoTSSkey >= 32 */
	uint64_t not_ready;   /* probes of an interpreter not initialised yet (retried) */
	uint64_t code_cached; /* code objects read and cached */
	uint64_t code_failed; /* code object reads that failed */
};
void python_mgr__stats(struct python_mgr *m, struct python_mgr_stats *out);

/* A sentence for an error of this module (-errno or one of python_impl.h's codes). */
const char *python_strerror(int err);

#endif /* HEARTH_PYTHON_H */
