/* render_pstats: the file Python's pstats.Stats (and snakeviz, tuna,
 * gprof2dot) load: marshal.dumps of the dict cProfile builds,
 *
 *   {(filename, line, funcname): (cc, nc, tt, ct, {caller: (nc, cc, tt, ct)})}
 *
 * A Python-only view built from the Python frames of each stack; native,
 * kernel, GPU and root frames are dropped (a C call's time counts as its
 * Python caller's own time, as cProfile without builtins shows it), and
 * stacks without Python frames are left out.  For a stack of weight w:
 *  - tt (own time) += w for the leaf Python frame's function;
 *  - ct (cumulative) += w for each function on the stack, once per stack;
 *  - nc += w per occurrence, cc += w once per stack, so recursion shows as
 *    "nc/cc" the way cProfile shows recursive calls;
 *  - callers: the edge from the next Python frame up, counted the same
 *    way.  Sampling sees no calls: "calls" are samples on the stack.
 * Functions are keyed by (path, qualname) and carry the smallest line
 * number sampled in them (the profile knows current lines, not where the
 * function starts).  Times are seconds: weight / rate_hz for sample
 * profiles, weight / 1e9 for nanoseconds, the weight itself when the rate
 * is unknown. */
#ifndef PROFD_RENDER_PSTATS_H
#define PROFD_RENDER_PSTATS_H

#include "buf.h"
#include "stackset.h"

/* 0, -ENOMEM, or -ENODATA when no stack has a Python frame (pstats
 * refuses an empty dict, so such a file would be of no use). */
int render_pstats(const struct stackset *ss, struct buf *out);

#endif
