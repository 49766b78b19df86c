/* framename: take apart the frame names of the contract (DESIGN.md,
 * "Frame names") for formats that keep function, file and line apart
 * (pprof, speedscope, pstats, json).  Results point into the name; they
 * are slices, not NUL-terminated strings. */
#ifndef PROFD_FRAMENAME_H
#define PROFD_FRAMENAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct framename_py {
	const char *func; /* qualname */
	size_t func_len;
	const char *file; /* path */
	size_t file_len;
	uint64_t line;
};

struct framename_mod {
	const char *module; /* e.g. "libfoo.so" */
	size_t module_len;
	uint64_t offset; /* file offset or address within the module */
};

/* "qualname (path:line)": non-empty qualname and path, decimal line.
 * False (and *out untouched) for anything else. */
bool framename_python(const char *name, struct framename_py *out);

/* "[module+0xOFFSET]": non-empty module, 1-16 hex digits.  False for
 * "[unknown]" and anything else. */
bool framename_module(const char *name, struct framename_mod *out);

/* Short lower-case label of a frame kind ("python", "kernel", ...). */
const char *framename_kind(uint32_t kind);

#endif
