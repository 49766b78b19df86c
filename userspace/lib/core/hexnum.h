/* hexnum: hexadecimal numbers in the text files profd reads (/proc maps,
 * kallsyms, perf maps, frame names). */
#ifndef PROFD_HEXNUM_H
#define PROFD_HEXNUM_H

#include <stdbool.h>
#include <stdint.h>

/* The run of hex digits at *p (before end) into *v, *p moved past it.
 * False when there is no digit or the value does not fit 64 bits (*p is
 * then somewhere in the run).  No "0x": callers whose format has one
 * skip it. */
bool hexnum_parse(const char **p, const char *end, uint64_t *v);

#endif
