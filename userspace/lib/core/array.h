/* array: the one growable-array helper.  Doubles capacity so appends are
 * amortized O(1); fails with -ENOMEM (never aborts) and guards against
 * size overflow, so callers count the failure and carry on. */
#ifndef PROFD_ARRAY_H
#define PROFD_ARRAY_H

#include <stddef.h>

/* Make room for `need` elements of `elem` bytes in *arr (capacity *cap). */
int array_grow(void **arr, size_t *cap, size_t need, size_t elem);

#endif
