/* demangle: C++ (Itanium ABI) symbol names to readable ones. */
#ifndef PROFD_DEMANGLE_H
#define PROFD_DEMANGLE_H

#include <stdint.h>

/* Longer mangled names are left alone. */
#define DEMANGLE_MAX_INPUT 4096
/* Bound on the demangler's output, hence on its time and memory.  Each
 * back-reference (S<n>_, T<n>_) can at most double what was printed, so
 * a name of length L with r of them prints at most L * 2^r bytes: names
 * whose bound is larger are left mangled (0.6% of LLVM's exported
 * names; a hostile 358-byte name would print 11 MB, a 500-byte one GBs). */
#define DEMANGLE_MAX_WORK (4u << 20)
/* Longer results are dropped in favour of the mangled name. */
#define DEMANGLE_MAX_OUTPUT 16384

/* A malloc'd demangled name, or NULL when sym is not a mangled name, or
 * its demangling could cost more than the caps allow (counted). */
char *demangle(const char *sym);
/* Names left mangled for the caps, process-wide. */
uint64_t demangle_refused(void);

#endif
