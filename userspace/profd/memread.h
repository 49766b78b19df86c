/* memread.h: a read of a profiled process's memory, off the control
 * thread and with a deadline.  The process controls how long its memory
 * takes to read (a page on a FUSE file whose server never answers, a
 * userfaultfd range nobody serves): process_vm_readv then waits in the
 * page fault, for ever.  The control thread hands such a read to a
 * thread of its own and waits for it at most a deadline; a read that
 * misses it is abandoned and frees what it owns when (if) it returns. */
#ifndef PROFD_MEMREAD_H
#define PROFD_MEMREAD_H

#include <stdint.h>

struct proto_stats;

/* Readers that may be stuck at once; a further read is refused. */
#define MEMREAD_MAX_STUCK 8

/* Runs read(arg) on a reader thread of its own and waits up to
 * timeout_ms for it.  0: read returned, and arg is the caller's again.
 * -ETIMEDOUT: the reader is abandoned with arg, and calls drop(arg) when
 * read returns.  -EBUSY: MEMREAD_MAX_STUCK readers are stuck already;
 * read did not run and arg is still the caller's.  -errno: no thread. */
int memread_run(void (*read)(void *arg), void (*drop)(void *arg), void *arg,
		unsigned int timeout_ms);

/* memread_* counters for `profctl stats`. */
void memread_stats(struct proto_stats *s);

#endif
