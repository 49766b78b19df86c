/* pystack: read every Python thread's stack out of a live process with
 * process_vm_readv, walking _PyRuntime -> interpreters -> thread states
 * -> frames exactly as the BPF walker does at sample time.  Used to find
 * the threads that are already inside the eval loop when profd starts,
 * and by tests to check the offsets against real interpreters.
 *
 * The process keeps running while we read it: a snapshot may be torn, so
 * every loop is bounded and a thread whose chain breaks is returned with
 * what was read so far and PYSTACK_T_TRUNCATED. */
#ifndef PROFD_PYSTACK_H
#define PROFD_PYSTACK_H

#include <stdint.h>
#include <stdio.h>

#include "pycode.h"
#include "pyruntime.h"

#define PYSTACK_MAX_FRAMES 256
#define PYSTACK_MAX_THREADS 1024
#define PYSTACK_MAX_INTERPS 64

/* x86_64 glibc: struct pthread's tid field, for 3.9/3.10 whose thread
 * states only record pthread_self() (== the thread's fs base). */
#define PYSTACK_GLIBC_PTHREAD_TID 0x2d0

/* pystack_frame.flags */
/* First Python frame of one C-level _PyEval_EvalFrameDefault call: a
 * native eval-loop frame sits between it and the next frame rootward.
 * <= 3.10: every frame; 3.11: frame->is_entry; 3.12+: the frame just
 * above a C-stack shim frame (the shim itself is skipped). */
#define PYSTACK_F_ENTRY (1u << 0)

struct pystack_frame {
	uint64_t code_addr;
	int64_t instr_off; /* see pycode.h */
	uint32_t flags;
	uint32_t _pad;
};

/* pystack_thread.flags */
#define PYSTACK_T_TRUNCATED (1u << 0) /* chain unreadable or too deep */

struct pystack_thread {
	uint64_t tstate;     /* PyThreadState address */
	uint64_t pthread_id; /* tstate->thread_id: pthread_self() */
	uint32_t tid;	     /* kernel TID; 0 if unknown */
	uint32_t nframes;
	uint32_t flags;
	/* index of the interpreter in the runtime's list (0: main) */
	uint32_t interp;
	/* leaf first */
	struct pystack_frame frames[PYSTACK_MAX_FRAMES];
};

struct pystack_dump {
	struct pystack_thread *threads;
	uint32_t nthreads;
};

/* rt comes from pyruntime_detect(pid).  0 (possibly with no threads, e.g.
 * during start-up) or -errno; out must be freed either way. */
int pystack_dump(int pid, const struct pyruntime *rt, struct pystack_dump *out);
void pystack_dump_free(struct pystack_dump *d);

/* Print the dump, one "thread TID" line then one resolved frame per line
 * (leaf first), for tools and test failure messages. */
void pystack_print(FILE *f, const struct pystack_dump *d, struct pycode_cache *c,
		   const struct pyruntime *rt);

/* 3.12+: find where libpython's static TLS block sits below the thread
 * pointer, so that &_Py_tss_tstate == fs_base - *tls_off + tls_tstate_off
 * for every thread (fs_base == pthread_id on x86_64 glibc).  Learnt from
 * the main thread (below other threads' TLS lies their stack, full of
 * tstate pointers) while it holds the GIL: _Py_tss_tstate is NULL in a
 * detached thread.  Then checked against every thread.  -ENOENT: not
 * now, retry; -ENOTSUP: no _Py_tss_tstate symbol (stripped, < 3.12). */
int pystack_find_tls_offset(int pid, const struct pyruntime *rt, const struct pystack_dump *d,
			    uint64_t *tls_off);

#endif
