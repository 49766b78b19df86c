/* pystack: every Python thread's current frames, read from outside the
 * process (process_vm_readv) at the moment it is asked: what `profctl
 * stacks` shows of a thread with no stack from BPF (profd started after
 * it blocked, or runs without --off-cpu).  No ptrace stop: a running
 * thread's frames move while they are read, so every chain is bounded,
 * guarded against loops, and may come out cut.
 *
 * Frames as the BPF walker (bpf/python.bpf.h) takes them: the PyFrameObject
 * chain from tstate->frame (3.9, 3.10), _PyInterpreterFrame from
 * tstate->cframe->current_frame (3.11, 3.12) or tstate->current_frame
 * (3.13+), C-stack shim frames skipped; each as (code object, instruction
 * offset) for pycode_name().
 *
 * Each thread state is matched to its thread: native_thread_id (3.11+),
 * else the tid field of the glibc/musl struct pthread that thread_id
 * (pthread_self()) points to, whose offset is found once per call by
 * looking for the process's thread ids in the thread states' own struct
 * pthread (pystack_tid_offset). */
#ifndef PROFD_PYSTACK_H
#define PROFD_PYSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pyruntime.h"

#define PYSTACK_MAX_FRAMES 256 /* kept per thread: the leafmost */
#define PYSTACK_MAX_WALK 4096  /* frames followed, shims included */
/* Bytes of a struct pthread searched for its tid: glibc keeps it at 720
 * on x86-64, 208 on arm64; musl within the first 64. */
#define PYSTACK_PTHREAD_SCAN 1024

struct pystack_thread {
	uint64_t tstate;
	/* The thread as the process's own pid namespace numbers it (what
	 * gettid() says inside it); 0 when not known. */
	uint32_t tid;
	/* Its thread_id: pthread_self() of the thread, the key of
	 * threading._active (pythreads.h); 0 when not read. */
	uint64_t ident;
	uint32_t nframes;
	/* The chain went on past what is kept, or stopped early: a frame
	 * unreadable, seen twice, or more than PYSTACK_MAX_WALK. */
	bool cut;
	uint64_t code[PYSTACK_MAX_FRAMES]; /* leaf first */
	int64_t instr[PYSTACK_MAX_FRAMES]; /* as pycode_name() takes it */
	uint64_t frame[PYSTACK_MAX_FRAMES]; /* where it is, for pylocals_frame() */
	/* The frame is the first (outermost) of one call of the eval loop,
	 * what places Python frames among native ones (mixedstack.h). */
	bool entry[PYSTACK_MAX_FRAMES];
};

typedef int (*pystack_fn)(const struct pystack_thread *t, void *arg);

/* Calls fn for each thread state of the process with its frames, oldest
 * first (the main interpreter's main thread, as a rule); stops
 * at fn's first nonzero return and returns it.  tids: the process's
 * threads as its namespace numbers them (for threads matched through
 * struct pthread).  0 or -errno (-ENOMEM; -EFAULT, -ESRCH, -EPERM when
 * nothing could be read). */
int pystack_threads(const struct pyruntime *rt, const uint32_t *tids, size_t ntids, pystack_fn fn,
		    void *arg);

/* The frames of one thread state into t (t->tstate, t->tid, t->ident left as they
 * are): 0, or -EFAULT when the thread state itself is unreadable. */
int pystack_walk(const struct pyruntime *rt, uint64_t tstate, struct pystack_thread *t);

/* Where struct pthread keeps the tid: the first 4-aligned offset below
 * PYSTACK_PTHREAD_SCAN at which every readable one of the n structures
 * at pthreads holds a thread id from tids, no two the same.  The offset,
 * or -ENOENT (none does, or none could be read). */
int pystack_tid_offset(int pid, const uint64_t *pthreads, size_t n, const uint32_t *tids,
		       size_t ntids);

#endif
