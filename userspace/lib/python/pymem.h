/* pymem: read another process's memory with process_vm_readv.  Used by
 * the Python stack reader and the code-object symbolizer; everything read
 * this way is untrusted and may change under our feet. */
#ifndef PROFD_PYMEM_H
#define PROFD_PYMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Read exactly len bytes: 0, -EFAULT (short or unmapped), -ESRCH,
 * -EPERM, ... */
int pymem_read(pid_t pid, uint64_t addr, void *buf, size_t len);
/* Read one pointer-sized / int-sized value. */
int pymem_read_u64(pid_t pid, uint64_t addr, uint64_t *out);
int pymem_read_u32(pid_t pid, uint64_t addr, uint32_t *out);

#endif
