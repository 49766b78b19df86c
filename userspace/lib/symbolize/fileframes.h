/* fileframes: what a user address was named, kept by the file it is in
 * and the offset in that file, so every process that maps the file shares
 * it.  A process's own frame cache starts empty at its fork or exec and
 * at every maps reload; without this, each run of the same program, each
 * process of an exec storm and each dlopen looked up and demangled every
 * frame of the same libraries again.  Only names that depend on the file
 * alone go here (its symbol table), never a perf map's (per process).
 *
 * A file is its identity (device, inode), the path it is mapped under (a
 * frame's module is that path: a hard link or a container's bind mount
 * of the same inode keeps its own) and the symbol cache's load its names
 * came from (symcache_seq: a file evicted and read again, or an inode
 * reused by another file, starts afresh), compared in full; an offset is
 * its value.  Bounded: past max entries (a file counts FF_FILE_COST for
 * its own tables) the cache starts over. */
#ifndef PROFD_FILEFRAMES_H
#define PROFD_FILEFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "procmaps.h"

#define FF_FILE_COST 16

struct fileframes {
	struct hashmap files; /* hash(identity, path) (+ probe) -> struct ff_file * */
	size_t entries, max;
	uint64_t resets; /* times it started over */
};

void fileframes_init(struct fileframes *ff, size_t max);
void fileframes_free(struct fileframes *ff);
/* The value kept for addr in file mapping m, named from the symbol
 * cache's load seq (false: none, or m is not a file with an identity, or
 * seq is 0). */
bool fileframes_get(const struct fileframes *ff, const struct procmap *m, uint64_t addr,
		    uint64_t seq, uint64_t *val);
/* Keep val for addr in file mapping m, named from load seq (nothing for
 * other mappings, seq 0, or without memory: it is a cache). */
void fileframes_put(struct fileframes *ff, const struct procmap *m, uint64_t addr, uint64_t seq,
		    uint64_t val);

#endif
