/* filekind.c: see filekind.h.  One list, so that every refusal of a
 * path names its kind in the same words. */
#include <sys/stat.h>

#include "filekind.h"

const char *filekind_name(mode_t mode)
{
	if (S_ISREG(mode))
		return "a regular file";
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISLNK(mode))
		return "a symbolic link";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	return "a file of unknown kind";
}
