/* pyasync: a process's asyncio tasks, read from outside (CPython 3.14+).
 *
 * _asyncio keeps every native Task on a list per thread (and one per
 * interpreter for tasks of threads that are gone), and says where in its
 * .AsyncioDebug section (Py_AsyncioModuleDebugOffsets); the task's
 * coroutine, and the coroutine it awaits in turn, are generator objects
 * whose embedded frame _Py_DebugOffsets describes.  Everything read here
 * is the target's memory: untrusted, changing under our feet, so every
 * walk is bounded and every size checked. */
#ifndef PROFD_PYASYNC_H
#define PROFD_PYASYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "pyruntime.h"

#define PYASYNC_MAX_TASKS 4096 /* listed per request */
#define PYASYNC_MAX_CHAIN 32   /* coroutines followed per task */
#define PYASYNC_MAX_AWAITERS 8 /* awaited_by entries kept per task */
#define PYASYNC_NAME_MAX 128

struct pyasync_task {
	uint64_t addr;
	char name[PYASYNC_NAME_MAX];
	uint32_t tid; /* the thread running it now; 0: suspended */
	/* The coroutine chain, outermost first: code object and the
	 * instruction offset pycode_name() takes. */
	uint32_t nframes;
	uint64_t code[PYASYNC_MAX_CHAIN];
	int64_t instr[PYASYNC_MAX_CHAIN];
	/* Tasks or futures waiting for this one (task addresses). */
	uint32_t nawaiters;
	uint64_t awaited_by[PYASYNC_MAX_AWAITERS];
};

typedef int (*pyasync_fn)(const struct pyasync_task *t, void *arg);

/* Calls fn for each task (at most PYASYNC_MAX_TASKS); stops at fn's
 * first nonzero return and returns it.  0; -ENOENT (asyncio not
 * imported), -EPROTONOSUPPORT (before 3.14), -EINVAL (implausible
 * offsets), -ESRCH, -EFAULT, -EPERM. */
int pyasync_tasks(const struct pyruntime *rt, pyasync_fn fn, void *arg);

/* Fill out from the process (its _asyncio's .AsyncioDebug section and
 * _Py_DebugOffsets): 0 with out->known, or the errors above. */
int pyasync_layout_read(const struct pyruntime *rt, struct pyasync_layout *out);

/* The name of the task at address task, with rt->async known: its own
 * (*named) or "Task-N" made from its number.  0, -ENOENT (layout not
 * known), -EFAULT, -ESRCH. */
int pyasync_task_name(const struct pyruntime *rt, uint64_t task, char *buf, size_t size,
		      bool *named);

#endif
