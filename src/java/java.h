/*
 * java: names the Java frames of running HotSpot JVMs (OpenJDK 17 tested).
 *
 * The manager recognises a JVM by its mapped libjvm.so, reads the JVM's own
 * description of itself (gHotSpotVMStructs and friends, src/java/jvmstructs.c)
 * from the process, and publishes one struct hearth_java_proc per JVM into the
 * BPF `java_procs` map (bpf/java_abi.h). It then names the (Method*, bcp) and
 * (Method*, pc) pairs the walk records: "pkg.Class.method" and, for
 * interpreted frames, the line of the bytecode index. Names are cached per
 * (process, Method*) and checked against the Method's ConstMethod at every
 * resolve: a method redefined or unloaded since becomes a counted unknown.
 * See docs/java.md.
 *
 * Thread-safe: one mutex guards the manager.
 */
#ifndef HEARTH_JAVA_H
#define HEARTH_JAVA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "java_abi.h" /* bpf/ */

#define JAVA_NAME_MAX 256
#define JAVA_FILE_MAX 128

struct java_mgr;

/* procs_fd: the BPF `java_procs` map, or -1 (nothing is published: tests). */
int java_mgr__new(int procs_fd, struct java_mgr **out);
void java_mgr__free(struct java_mgr *m);

void java_mgr__note(struct java_mgr *m, uint32_t pid, uint64_t pstart);
void java_mgr__exec(struct java_mgr *m, uint32_t pid, uint64_t pstart);
void java_mgr__exit(struct java_mgr *m, uint32_t pid);
void java_mgr__forget(struct java_mgr *m, uint32_t pid, uint64_t pstart);
/* Probes queued processes for at most budget_ms. Number probed or -errno. */
int java_mgr__work(struct java_mgr *m, int budget_ms);
/* Milliseconds until work has something due, -1 when nothing is queued. */
int java_mgr__next_due_ms(const struct java_mgr *m);

/* Whether pc lies in that JVM's code cache (Java frames replace such frames). */
bool java_mgr__in_code(struct java_mgr *m, uint32_t pid, uint64_t pstart, uint64_t pc);

struct java_frame {
	char name[JAVA_NAME_MAX]; /* "pkg.Class.method", or "[jvm] NAME" for a stub */
	char file[JAVA_FILE_MAX]; /* "pkg/Class" (the class, as JFR's type), "" for stubs */
	int64_t line;		  /* interpreted frames: the bci's line; else 0 */
};

/* Names one recorded frame (the two words, ENTRY and kind bits included): a
 * compiled frame gives the methods inlined at its pc, innermost first, then the
 * nmethod's own method. Number of frames put in out (at most max), -ENOENT
 * (process not described), -EIO (unreadable, or stale: counted). */
int java_mgr__resolve(struct java_mgr *m, uint32_t pid, uint64_t pstart, uint64_t w0, uint64_t w1,
		      struct java_frame *out, int max);
/* Reads and caches a frame's method when not cached yet (the collector calls it
 * for new stacks while the process lives). */
int java_mgr__warm(struct java_mgr *m, uint32_t pid, uint64_t pstart, uint64_t w0, uint64_t w1);

struct java_mgr_stats {
	uint64_t processes;   /* JVMs described now */
	uint64_t probed;      /* probes run */
	uint64_t unsupported; /* a libjvm.so whose tables lack what the walk needs */
	uint64_t methods;     /* methods cached */
	uint64_t stale;	      /* cached methods found changed (redefined/unloaded) */
	uint64_t failed;      /* frames that could not be named */
	uint64_t evicted;     /* cached methods evicted for the memory budget */
	uint64_t bytes;	      /* the name cache's size, charged to MEM_JAVA */
};
void java_mgr__stats(struct java_mgr *m, struct java_mgr_stats *out);

#endif /* HEARTH_JAVA_H */
