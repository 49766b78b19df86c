/* pytstate: every thread state of every interpreter of a process, read
 * from outside (process_vm_readv): the walk the asyncio task lister and
 * the Python stack reader share.  The lists are the target's memory,
 * untrusted and changing under our feet: both are bounded, and a thread
 * state seen twice (a list that loops back) ends its list. */
#ifndef PROFD_PYTSTATE_H
#define PROFD_PYTSTATE_H

#include <stdint.h>

#include "pyruntime.h"

#define PYTSTATE_MAX_INTERPS 16
#define PYTSTATE_MAX_THREADS 4096 /* per interpreter */

/* Called for each thread state of interp (newest first, as CPython links
 * them), then once with tstate 0 when interp's list is done.  A nonzero
 * return stops the walk. */
typedef int (*pytstate_fn)(const struct pyruntime *rt, uint64_t interp, uint64_t tstate, void *arg);

/* 0, fn's first nonzero return, or -errno: -ENOMEM, or -EFAULT/-ESRCH/
 * -EPERM when _PyRuntime's interpreter list cannot be read at all (an
 * unreadable link further on just ends that list). */
int pytstate_each(const struct pyruntime *rt, pytstate_fn fn, void *arg);

#endif
