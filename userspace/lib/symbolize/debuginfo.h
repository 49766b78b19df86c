/* debuginfo: find the separate debug file of a stripped ELF the way gdb
 * does: by build-id under /usr/lib/debug/.build-id/, then by
 * .gnu_debuglink next to the file, in its .debug/ and under
 * /usr/lib/debug/<dir>/.  Every path resolves under the process's root,
 * so containers find their own debug files.  Internal to elfsym. */
#ifndef PROFD_DEBUGINFO_H
#define PROFD_DEBUGINFO_H

#include "elffile.h"

#define DEBUGINFO_DIR "/usr/lib/debug"
/* A .gnu_debuglink candidate is read whole for its CRC: larger ones are
 * skipped (counted in elffile_too_big), so a 1 TB sparse file planted as
 * the debug file costs nothing.  Build-id matches need no CRC. */
#define DEBUGINFO_MAX_CRC_BYTES (1ull << 30)

/* main: the stripped file, open; main_fd: its fd (to skip itself);
 * path_in_root: its path as the process sees it (may be NULL).
 * On success *out is open on *out_fd, both the caller's to close.
 * 0 or -ENOENT. */
int debuginfo_open(struct elffile *main, int main_fd, const char *root, const char *path_in_root,
		   struct elffile *out, int *out_fd);
/* fd, a debug file from elsewhere (debuginfod), as main's: *out open on
 * it when its build-id is main's (the caller closes both), else -ENOENT. */
int debuginfo_open_given(struct elffile *main, int fd, struct elffile *out);

#endif
