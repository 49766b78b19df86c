/* demangle: C++ (Itanium ABI) symbol names to readable ones. */
#ifndef PROFD_DEMANGLE_H
#define PROFD_DEMANGLE_H

/* A malloc'd demangled name, or NULL when sym is not a mangled name
 * (or is too long to be worth the demangler's time on hostile input). */
char *demangle(const char *sym);

#endif
