/* pyruntime: find CPython in a process.  The interpreter lives either in
 * the executable (Debian's static non-PIE python3.11, PIE builds) or in a
 * libpython3.X.so mapping (pyenv, embedding programs); whichever defines
 * _PyRuntime is the one.  The version comes from _Py_DebugOffsets (3.13+),
 * Py_Version (3.11+), the library or executable name, and as a last resort
 * the size of _PyRuntime (3.9, 3.10). */
#ifndef PROFD_PYRUNTIME_H
#define PROFD_PYRUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "pyoffsets.h"

#define PYRUNTIME_NO_TLS UINT64_MAX

/* Py_AsyncioModuleDebugOffsets as _asyncio lays it out (3.14+): all
 * uint64_t, offsets from the start of the task, the interpreter state
 * and the thread state. */
struct pyasync_dbg {
	struct {
		uint64_t size, name, awaited_by, is_task, awaited_by_is_set, coro, node;
	} task;
	struct {
		uint64_t size, tasks_head;
	} interp;
	struct {
		uint64_t size, running_loop, running_task, tasks_head;
	} tstate;
};

/* What reading asyncio tasks takes: _asyncio's offsets and the object
 * layouts _Py_DebugOffsets gives (pyasync.h reads them). */
struct pyasync_layout {
	bool known; /* false before 3.14 or while _asyncio is not loaded */
	struct pyasync_dbg dbg;
	struct pyoff_async po;
};

struct pyruntime {
	int pid;
	int major, minor;
	uint64_t runtime_addr; /* &_PyRuntime in the process (bias applied) */
	uint64_t load_bias;    /* of the module holding _PyRuntime */
	/* st_value of _Py_tss_tstate (3.12+, a TLS symbol: offset inside
	 * the module's TLS block; only in .symtab, so absent when the module
	 * is stripped): PYRUNTIME_NO_TLS when unknown. */
	uint64_t tls_tstate_off;
	uint64_t tls_block_size; /* PT_TLS p_memsz of that module, or 0 */
	struct profd_pyoffsets off;	 /* copy: built-in table or the process's */
	char path[256];		 /* the module, as /proc/PID/maps names it (may be cut) */
	struct pyasync_layout async; /* found with the runtime, or later */
};

/* 0; -ENOENT when the process has no CPython; -EPROTONOSUPPORT for a
 * CPython this code has no offsets for (< 3.9, 3.14+ for now); other
 * -errno (-ESRCH gone, -EPERM/-EACCES not allowed). */
int pyruntime_detect(int pid, struct pyruntime *out);
/* The same, allocated: NULL when pid runs no CPython (said in the log at
 * -v when for another reason than its absence) or memory ran out. */
struct pyruntime *pyruntime_find(int pid);

/* Does BPF still need sizeof(struct pthread) of rt's process (3.9 and
 * 3.10 on an architecture whose pthread_self() lies below the thread
 * pointer), and is path a C library that holds it? */
bool pyruntime_needs_pthread_size(const struct pyruntime *rt);
bool pyruntime_is_libc(const char *path);

/* Where the process's _Py_AsyncioModuleDebugOffsets are (the
 * .AsyncioDebug section of _asyncio, 3.14+): 0 and *addr; -ENOENT when
 * asyncio is not loaded (or the version has no such section), -ESRCH. */
int pyruntime_asyncio_debug(const struct pyruntime *rt, uint64_t *addr);

/* Parse "3.X" out of names like "libpython3.11.so.1.0", "python3.10",
 * "libpython3.9d.so": 0 and *minor, or -ENOENT. */
int pyruntime_version_from_name(const char *name, int *minor);

#endif
