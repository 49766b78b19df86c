/* procmaps: parse /proc/PID/maps into a sorted array of mappings, the
 * first step from a user instruction pointer to a file and an offset. */
#ifndef PROFD_PROCMAPS_H
#define PROFD_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct procmap {
	uint64_t start, end, offset, inode;
	uint32_t dev_major, dev_minor;
	uint32_t prot; /* PROT_READ|PROT_WRITE|PROT_EXEC bits */
	char *path;    /* "" for anonymous, "[vdso]" etc. kept verbatim */
	bool deleted;  /* the " (deleted)" suffix was present (and stripped) */
};

struct procmaps {
	struct procmap *maps; /* one allocation: array then path strings */
	size_t n;
};

/* Parse maps text (need not be NUL-terminated).  Blank lines are
 * ignored; any other malformed line gives -EINVAL.  Sorted by start.
 * 0 or -errno; on error *out is empty. */
int procmaps_parse(const char *text, size_t len, struct procmaps *out);
/* Read /proc/PID/maps: -ESRCH if the process is gone, -EACCES when not
 * allowed.  A kernel thread or zombie yields n == 0. */
int procmaps_read(int pid, struct procmaps *out);
/* Same under another proc mount (tests, or a host /proc bind mount). */
int procmaps_read_at(const char *proc_root, int pid, struct procmaps *out);
/* The mapping containing addr, or NULL. */
const struct procmap *procmaps_find(const struct procmaps *m, uint64_t addr);
/* A copy with its own block (a forked child's maps are its parent's):
 * 0 or -ENOMEM (dst empty). */
int procmaps_copy(struct procmaps *dst, const struct procmaps *src);
void procmaps_free(struct procmaps *m);

/* What a mapped file is, by its name (PROCMAPS_LIBC_* bits): glibc's
 * libc.so.6 (libc-2.x.so before 2.34) a C library, its ld-linux*.so* a
 * loader, musl's one file (ld-musl-*.so.1, libc.musl-*) both.  Uprobes on
 * C library functions (GPU ioctls, mmap profiles) attach per such file. */
enum { PROCMAPS_LIBC_C = 1, PROCMAPS_LIBC_LOADER = 2 };
unsigned procmaps_libc_kind(const char *path);

/* Call fn for every process under proc_root (its numeric entries) until
 * fn returns -ENOMEM, which is then returned; else 0 or -errno of the
 * directory.  Other errors of fn (a process gone) do not stop the walk. */
int proc_for_each_pid(const char *proc_root, int (*fn)(void *ctx, uint32_t pid), void *ctx);

#endif
