/* fileio: profctl's whole-file reads and writes for offline commands
 * (render, diff).  "-" means stdin or stdout. */
#ifndef PROFCTL_FILEIO_H
#define PROFCTL_FILEIO_H

#include <stddef.h>

#include "buf.h"
#include "stackset.h"

/* Folded text is untrusted input: refuse anything absurdly large. */
#define FILEIO_MAX_INPUT (1ull << 30)

/* Append the whole file to b.  0, -errno, or -EFBIG past max bytes. */
int fileio_read(const char *path, struct buf *b, size_t max);
/* Write b to path (created 0644, truncated), or stdout for NULL or "-". */
int fileio_write(const char *path, const struct buf *b);
/* Parse a folded-stacks file into ss and name the profile after the file.
 * Errors are printed as "profctl CMD: ..."; returns 0 or 1. */
int fileio_load_folded(const char *cmd, const char *path, struct stackset *ss);

#endif
