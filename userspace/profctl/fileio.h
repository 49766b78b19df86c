/* fileio: profctl's whole-file reads and writes, and the profiles it
 * renders into them (dump, record, render, diff).  "-" means stdin or
 * stdout.  The functions taking a ctl report their errors
 * (client_error) and return 0 or 1, an exit code. */
#ifndef PROFCTL_FILEIO_H
#define PROFCTL_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "client.h"
#include "render.h"
#include "stackset.h"

/* Folded text is untrusted input: refuse anything absurdly large. */
#define FILEIO_MAX_INPUT (1ull << 30)

/* Append the whole file to b.  0, -errno, or -EFBIG past max bytes. */
int fileio_read(const char *path, struct buf *b, size_t max);
/* Write b to path (created 0644, truncated), or stdout for NULL or "-". */
int fileio_write(const char *path, const struct buf *b);
/* Whether output to path goes to stdout (NULL or "-"). */
bool fileio_is_stdout(const char *path);

/* Parse a folded-stacks file into ss and name the profile after the file. */
int fileio_load_folded(const struct ctl *ctl, const char *path, struct stackset *ss);
/* Render ss as format into out. */
int fileio_render(const struct ctl *ctl, const char *format, const struct stackset *ss,
		  const struct render_opts *ro, struct buf *out);
/* Render timeline t (gecko, trace) into out. */
int fileio_render_timeline(const struct ctl *ctl, const char *format, const struct tlset *t,
			   struct buf *out);
/* fileio_write, its error reported. */
int fileio_save(const struct ctl *ctl, const char *path, const struct buf *b);
/* Say what was written to path: under --json an object on stdout (the
 * file, its format and size, the profile's total weight and unit), so a
 * script learns what it got; otherwise, when note is set, "wrote FILE
 * (N samples)" on stderr. */
int fileio_report(const struct ctl *ctl, const char *path, const char *format,
		  const struct stackset *ss, size_t bytes, bool note);

#endif
