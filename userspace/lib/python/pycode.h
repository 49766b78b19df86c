/* pycode: turn a Python frame as the stack walker reports it, (code object
 * address, instruction offset), into "qualname (filename:line)".
 *
 * The instruction offset is what the walker emits per frame:
 *   3.9    f_lasti, a byte offset (-1 before the first instruction)
 *   3.10   f_lasti, in 2-byte code units (-1 before the first one)
 *   3.11+  (prev_instr or instr_ptr) - (code + co_code_adaptive), in
 *          bytes; negative (-2) for a frame that has not started yet
 * pycode_offset_from_frame() does that arithmetic for userspace walkers.
 *
 * Code objects are read with process_vm_readv and cached by (pid,
 * address) with their decoded line table.  Every hit is re-validated by
 * re-reading the code object's header (type, name, filename, qualname and
 * line table pointers, co_firstlineno): a freed and reused code object is
 * re-read instead of being misnamed, and one that is not the code object
 * sampled (its fingerprint, a hash of the same fields, differs) is not
 * named at all.  Names: co_qualname on 3.11+, co_name on 3.9/3.10 (the
 * qualname lives on the function object there). */
#ifndef PROFD_PYCODE_H
#define PROFD_PYCODE_H

#include <stddef.h>
#include <stdint.h>

#include "pyruntime.h"

#define PYCODE_MAX_STR 1024 /* code points kept from a name or path */
/* Bounds of the cache; it is flushed when either is reached. */
#define PYCODE_CACHE_MAX 65536
#define PYCODE_CACHE_MAX_BYTES (64u << 20)

struct pycode_cache;

/* A resolved frame.  The strings belong to the cache and stay valid
 * until the next pycode_* call on it. */
struct pycode_frame {
	const char *qualname;
	const char *filename;
	int32_t line; /* co_firstlineno when the table has no line */
	int32_t firstlineno;
};

struct pycode_cache *pycode_cache_new(void); /* NULL + errno */
void pycode_cache_free(struct pycode_cache *c);
/* Drop a process's entries (on exit or exec). */
void pycode_cache_forget_pid(struct pycode_cache *c, int pid);
size_t pycode_cache_entries(const struct pycode_cache *c);
size_t pycode_cache_bytes(const struct pycode_cache *c); /* for stats */

/* fp: the code object's fingerprint as the stack walker saw it
 * (profd_abi.h), or 0 (no check).  0; -ESTALE (the code object at
 * code_addr has another fingerprint: the one sampled was freed and its
 * memory reused), -EINVAL (not a code object, malformed), -EFAULT/-ESRCH
 * (unreadable or gone), -ENOMEM. */
int pycode_resolve(struct pycode_cache *c, const struct pyruntime *rt, uint64_t code_addr,
		   uint32_t fp, int64_t instr_off, struct pycode_frame *out);
/* pycode_resolve, then "qualname (filename:line)" into buf. */
int pycode_name(struct pycode_cache *c, const struct pyruntime *rt, uint64_t code_addr, uint32_t fp,
		int64_t instr_off, char *buf, size_t len);

/* A code object of a process that is gone, read in donor instead: a live
 * process holding the same memory from before a fork (the parent, a
 * multiprocessing forkserver), where the child's inherited code objects
 * still are.  Only with the fingerprint the walker saw (fp != 0), which
 * another object at that address fails.  -ESRCH when there is no donor or
 * no fingerprint; else as pycode_name. */
int pycode_name_in_donor(struct pycode_cache *c, const struct pyruntime *rt, int donor,
			 uint64_t code_addr, uint32_t fp, int64_t instr_off, char *buf, size_t len);

/* The walker's instruction offset from the raw frame field: f_lasti (an
 * int, sign-extended) or the prev_instr/instr_ptr pointer. */
int64_t pycode_offset_from_frame(const struct profd_pyoffsets *off, uint64_t code_addr,
				 uint64_t raw_instr);
/* The byte offset into the bytecode that offset designates. */
int64_t pycode_byte_offset(const struct profd_pyoffsets *off, int64_t instr_off);

/* Read a str object as UTF-8 (at most PYCODE_MAX_STR code points, control
 * characters replaced by '?').  0 or -errno; buf always terminated. */
int pycode_read_str(int pid, const struct profd_pyoffsets *off, uint64_t addr, char *buf, size_t len);

#endif
