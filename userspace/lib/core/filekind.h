/* filekind: what a file is, in words for a log line ("a FIFO"), where
 * profd refuses a path that is not the kind it expects. */
#ifndef PROFD_FILEKIND_H
#define PROFD_FILEKIND_H

#include <sys/types.h>

/* The kind of file st_mode names, with its article: "a regular file",
 * "a directory", "a symbolic link" (from lstat), "a FIFO", "a socket",
 * "a device".  Never NULL. */
const char *filekind_name(mode_t mode);

#endif
