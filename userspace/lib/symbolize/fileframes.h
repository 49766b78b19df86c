/* fileframes: what a user address was named, kept by the file it is in
 * (device and inode, the symbol cache's identity) and the offset in that
 * file, so every process that maps the file shares it.  A process's own
 * frame cache starts empty at its fork or exec and at every maps reload;
 * without this, each DataLoader worker, each process of an exec storm
 * and each dlopen looked up and demangled every frame of the same
 * libraries again.  Only names that depend on the file alone go here
 * (its symbol table), never a perf map's (per process).
 *
 * Exact: a file is found by its full identity, an offset by its value.
 * Bounded: past max entries the cache starts over. */
#ifndef PROFD_FILEFRAMES_H
#define PROFD_FILEFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "procmaps.h"

struct fileframes {
	struct hashmap files; /* hash(dev, inode) (+ probe) -> struct ff_file * */
	size_t entries, max;
	uint64_t resets; /* times it started over */
};

void fileframes_init(struct fileframes *ff, size_t max);
void fileframes_free(struct fileframes *ff);
/* The value kept for addr in file mapping m (false: none, or m is not a
 * file with an identity). */
bool fileframes_get(const struct fileframes *ff, const struct procmap *m, uint64_t addr,
		    uint64_t *val);
/* Keep val for addr in file mapping m (nothing for other mappings, or
 * without memory: it is a cache). */
void fileframes_put(struct fileframes *ff, const struct procmap *m, uint64_t addr, uint64_t val);

#endif
