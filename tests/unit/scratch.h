/* scratch.h: a private scratch directory per test case, under
 * $PROFD_TEST_TMP (else /tmp), removed afterwards.  Header-only for the
 * unit tests; the directory's path is in `dir`. */
#ifndef PROFD_TEST_SCRATCH_H
#define PROFD_TEST_SCRATCH_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static char dir[256];

static int scratch_setup(const char *name)
{
	const char *base = getenv("PROFD_TEST_TMP");

	if (base && *base)
		mkdir(base, 0755);
	snprintf(dir, sizeof(dir), "%s/%s.XXXXXX", base && *base ? base : "/tmp", name);
	return mkdtemp(dir) ? 0 : -1;
}

static int scratch_teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

#endif
