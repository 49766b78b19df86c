/* pythreads: Python's own names for a process's threads, as py-spy shows
 * them ("MainThread", "Thread-2 (worker)"), read from outside the process.
 *
 * threading._active maps each thread's ident (pthread_self(), the thread
 * state's thread_id) to its Thread object, whose _name attribute is the
 * name.  The module is found in each interpreter's sys.modules; the
 * attribute in the instance's dict, wherever the version keeps it:
 * tp_dictoffset (3.9, 3.10), the managed dict or values before the object
 * (3.11, 3.12), inline values after it (3.13+), with the keys shared in
 * the class (ht_cached_keys).  A process that never imported threading,
 * or whose memory lies, has no names: never an error to the caller. */
#ifndef PROFD_PYTHREADS_H
#define PROFD_PYTHREADS_H

#include <stddef.h>
#include <stdint.h>

#include "pyruntime.h"

#define PYTHREADS_MAX 4096	 /* entries of threading._active looked at */
#define PYTHREADS_NAME_MAX 64	 /* bytes of a name, NUL included (UTF-8 kept whole) */
#define PYTHREADS_MAX_INTERPS 16 /* interpreters looked at */

typedef int (*pythreads_fn)(uint64_t ident, const char *name, void *arg);

/* Calls fn for each thread threading._active names (at most
 * PYTHREADS_MAX); stops at fn's first nonzero return and returns it.  0
 * (also when there is nothing to name), -EPROTONOSUPPORT (a version with
 * no layout here), -EFAULT where the module could not be reached. */
int pythreads_names(const struct pyruntime *rt, pythreads_fn fn, void *arg);

#endif
