/* check.h: profd --check. */
#ifndef PROFD_CHECK_H
#define PROFD_CHECK_H

#include <stdio.h>

/* check.c: profd --check: the kernel's facts and what each feature can
 * do with them, to out.  The exit status: 0 when CPU sampling can work. */
int daemon_check(FILE *out);

#endif
