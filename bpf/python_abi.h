/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ABI of the CPython frame walker, shared by bpf/profile.bpf.c and src/python/.
 *
 * User space recognises a CPython process (libpython3.X or a static python3.X),
 * works out where each thread's PyThreadState is and the offsets the walk needs,
 * and writes one struct hearth_py_proc per process into the `py_procs` hash map.
 * On each sample of such a process the program reads the thread's PyThreadState
 * through glibc's pthread_getspecific slot of the interpreter's autoTSSkey (an
 * offset from the thread pointer, the task's fs base), follows the frame chain
 * and records, per Python frame, the code object's address and where in it the
 * frame is (HEARTH_PY_FRAME_*). User space names them (co_qualname, co_filename,
 * line table) and splices them in place of the _PyEval_EvalFrameDefault frames
 * they ran in (docs/python.md).
 */
#ifndef HEARTH_BPF_PYTHON_ABI_H
#define HEARTH_BPF_PYTHON_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Python frames a sample carries (bpf_loop iterations, one per frame). */
#define HEARTH_PY_MAX_FRAMES 128
/* CPython processes described at once. */
#define HEARTH_PY_MAX_PROCS 4096
/* Bytes of a frame read at once: every field offset given must be below this. */
#define HEARTH_PY_FRAME_READ 128

/* How frames are chained and where an evaluation loop's run of frames ends. */
enum hearth_py_layout {
	/* 3.10: PyThreadState.frame -> PyFrameObject, f_back chain; f_lasti is an
	 * int (instruction index); every frame is its own _PyEval_EvalFrameDefault. */
	HEARTH_PY_LAYOUT_310 = 1,
	/* 3.11: tstate->cframe->current_frame -> _PyInterpreterFrame, `previous`
	 * chain; prev_instr is a pointer; `is_entry` marks the outermost frame of
	 * one _PyEval_EvalFrameDefault call. */
	HEARTH_PY_LAYOUT_311 = 2,
	/* 3.12: as 3.11, but a frame owned by the C stack (owner ==
	 * HEARTH_PY_OWNED_BY_CSTACK, a shim with no Python code) sits below the
	 * outermost frame of each call. */
	HEARTH_PY_LAYOUT_312 = 3,
	/* 3.13: tstate->current_frame directly (no cframe); f_executable, which may
	 * be something else than a code object (checked against PyCode_Type);
	 * instr_ptr; C-stack shim frames as in 3.12. */
	HEARTH_PY_LAYOUT_313 = 4,
};

#define HEARTH_PY_OWNED_BY_CSTACK 3
#define HEARTH_PY_NO_OFFSET 0xffff

/* One CPython process: value of `py_procs`, keyed by pid (tgid). Offsets in
 * bytes; HEARTH_PY_NO_OFFSET where the layout has no such field. */
struct hearth_py_proc {
	__u64 pstart;	    /* process start (ns since boot) this is for */
	__u64 tss_slot;	    /* PyThreadState* of the thread at fs_base + tss_slot */
	__u64 code_type;    /* runtime address of PyCode_Type (a frame's code is checked) */
	__u32 version;	    /* major << 16 | minor << 8 | micro, e.g. 0x030b07 */
	__u16 layout;	    /* enum hearth_py_layout */
	__u16 ts_frame;	    /* PyThreadState: frame (3.10), cframe (3.11, 3.12), current_frame (3.13) */
	__u16 cframe_frame; /* _PyCFrame.current_frame (3.11, 3.12) */
	__u16 f_previous;   /* f_back (3.10), previous */
	__u16 f_code;	    /* f_code, f_executable (3.13) */
	__u16 f_instr;	    /* f_lasti (3.10, an int), prev_instr (3.11, 3.12), instr_ptr (3.13) */
	__u16 f_owner;	    /* owner (3.11+, a char) */
	__u16 f_is_entry;   /* is_entry (3.11, a bool) */
	__u16 ob_type;	    /* PyObject.ob_type (8 on every 64-bit build) */
	__u16 pad;
};
_Static_assert(sizeof(struct hearth_py_proc) == 48, "py proc ABI");

/*
 * A Python frame in a sample: two words. The first is the code object's address;
 * the second is where the frame is in it (f_lasti for 3.10, the instruction
 * pointer for 3.11+), with HEARTH_PY_FRAME_ENTRY set on the outermost frame of one
 * _PyEval_EvalFrameDefault call (every frame in 3.10): the frames from the leaf up
 * to the first entry run in the innermost native _PyEval_EvalFrameDefault frame,
 * the next run in the next one, and so on.
 */
#define HEARTH_PY_FRAME_ENTRY (1ull << 63)
#define HEARTH_PY_FRAME_INSTR (~HEARTH_PY_FRAME_ENTRY)

/* Per-CPU counters of the walk (`py_stats`): what happened to samples of CPython
 * processes, and why a walk stopped. */
enum hearth_py_stat {
	HEARTH_PY_SAMPLES = 0,	/* samples of described processes */
	HEARTH_PY_WALKED,	/* of those, with at least one Python frame */
	HEARTH_PY_NO_TSTATE,	/* the thread has no PyThreadState (not a Python thread) */
	HEARTH_PY_NO_FRAME,	/* a PyThreadState with no current frame (idle in C) */
	HEARTH_PY_READ_FAIL,	/* a read of interpreter memory failed */
	HEARTH_PY_NOT_CODE,	/* a frame's code is not a code object: walk stopped */
	HEARTH_PY_TRUNCATED,	/* more than HEARTH_PY_MAX_FRAMES frames */
	HEARTH_PY_FRAMES,	/* Python frames recorded */
	HEARTH_PY_STAT_MAX,
};

#endif /* HEARTH_BPF_PYTHON_ABI_H */
