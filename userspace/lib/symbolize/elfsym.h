/* elfsym: the function symbols, load segments and identity of one ELF
 * file, read once with libelf and kept in compact sorted arrays so the
 * file can be closed.  Symbols come from .symtab and .dynsym, plus the
 * separate debug file (build-id or .gnu_debuglink) when .symtab is
 * missing.  Everything read from the file is treated as hostile. */
#ifndef PROFD_ELFSYM_H
#define PROFD_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elfsym;

/* Open path as seen under root_prefix ("" for the host, or e.g.
 * "/proc/123/root").  NULL + errno (EINVAL: not ELF or corrupt). */
struct elfsym *elfsym_open(const char *path, const char *root_prefix);
/* Same from an open fd (not closed, not kept).  path_in_root is the
 * file's path under root_prefix, used to find .gnu_debuglink files; it
 * may be NULL. */
struct elfsym *elfsym_open_fd(int fd, const char *path_in_root, const char *root_prefix);
/* Same with debug_fd as its separate debug file (fetched by build-id):
 * used only where its build-id matches the file's, else as if absent. */
struct elfsym *elfsym_open_fd_debug(int fd, const char *path_in_root, const char *root_prefix,
				    int debug_fd);
/* From an ELF image in memory (the vdso); the image is copied. */
struct elfsym *elfsym_open_mem(const void *image, size_t len);
void elfsym_free(struct elfsym *e);

/* The function covering ELF virtual address vaddr, or NULL; *sym_off
 * (optional) gets vaddr minus the symbol's start.  The name lives as
 * long as e and is not demangled. */
const char *elfsym_lookup(const struct elfsym *e, uint64_t vaddr, uint64_t *sym_off);
/* File offset (e.g. ip - map start + map offset) to ELF vaddr through
 * the PT_LOAD segments.  0 or -ENOENT if in no segment. */
int elfsym_offset_to_vaddr(const struct elfsym *e, uint64_t file_off, uint64_t *vaddr);
/* The other way: where in the file the byte at vaddr is (a uprobe's
 * offset).  0 or -ENOENT if no PT_LOAD segment holds it in the file. */
int elfsym_vaddr_to_offset(const struct elfsym *e, uint64_t vaddr, uint64_t *file_off);
/* A symbol by exact name: functions and data/TLS objects (the Python
 * support needs _PyRuntime).  TLS values are offsets in the TLS block.
 * 0 or -ENOENT. */
int elfsym_lookup_symbol(const struct elfsym *e, const char *name, uint64_t *vaddr, uint64_t *size);
/* NT_GNU_BUILD_ID bytes, or NULL with *len = 0. */
const uint8_t *elfsym_build_id(const struct elfsym *e, size_t *len);
/* Number of function symbols (after merging aliases). */
size_t elfsym_nsyms(const struct elfsym *e);
/* True when the symbols came (partly) from a separate debug file. */
bool elfsym_has_debug_file(const struct elfsym *e);
/* Stripped, with a build-id and no debug file found: one worth asking
 * a debuginfod server for. */
bool elfsym_lacks_debug(const struct elfsym *e);

#endif
