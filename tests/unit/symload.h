/* symload.h: a file-symbol loader (symcache.h) for tests that records
 * what it was asked and answers only when the test does, with
 * symcache_load() and symbolizer_file_loaded(): the worker's reading of a
 * file, slowed down at will. */
#ifndef PROFD_TEST_SYMLOAD_H
#define PROFD_TEST_SYMLOAD_H

#include "procmaps.h"
#include "symcache.h"

struct load_req {
	unsigned n; /* times asked */
	int pid;
	struct procmap map;
};

static inline void record_load(void *ctx, int pid, const struct procmap *m)
{
	struct load_req *r = ctx;

	r->n++;
	r->pid = pid;
	r->map = *m;
}

#endif
