/* symcache: parsed ELF symbol tables keyed by file identity (device and
 * inode from the maps line, confirmed by fstat), so every process that
 * maps libc shares one copy.  Bounded, least-recently-used eviction;
 * files that fail to open or parse are cached as failures too, so a
 * corrupt file is not re-read on every sample. */
#ifndef PROFD_SYMCACHE_H
#define PROFD_SYMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elfsym.h"
#include "procmaps.h"

/* A file that could not be opened is tried again after this long (it
 * may have been a permission or a race); a parse failure is final. */
#define SYMCACHE_RETRY_NS (10ull * 1000000000ull)

struct symcache_stats {
	uint64_t files;          /* entries holding symbols */
	uint64_t failed;         /* entries caching a failure */
	uint64_t hits, loads;
	uint64_t evictions;
	uint64_t open_failures, parse_failures;
};

struct symcache;

/* NULL + errno (EINVAL when max_files is 0). */
struct symcache *symcache_new(size_t max_files);
void symcache_free(struct symcache *c);
/* Symbols of the file behind file mapping m of pid, opened through
 * procfile_open_mapped (map_files/, else the path inside the process's
 * root with the mapping's identity checked).
 * NULL + errno when unusable.  The result stays valid until the next
 * symcache_get or symcache_free. */
const struct elfsym *symcache_get(struct symcache *c, const char *proc_root, int pid,
				  const struct procmap *m);
void symcache_stats(const struct symcache *c, struct symcache_stats *out);
/* Which load of m's file the cache holds symbols from (a number no other
 * load had), 0 when it holds none: what was named from that load may be
 * kept while this stays the same (an evicted and reloaded file, a reused
 * inode, gets a new number).  No effect on the eviction order. */
uint64_t symcache_seq(const struct symcache *c, const struct procmap *m);

/* Called around reading a new file's symbols (disk reads, parsing: up to
 * hundreds of ms for a large library on a busy disk), so the daemon can
 * let other threads at its profile state meanwhile.  The cache itself
 * stays its caller's alone. */
struct symcache_io {
	void (*begin)(void *ctx);
	void (*end)(void *ctx);
	void *ctx;
};
void symcache_set_io(struct symcache *c, const struct symcache_io *io);

/* Or have new files read on another thread: with a loader set,
 * symcache_get does not read a new file itself but asks the loader (once
 * per file, until its answer comes) and returns NULL with errno
 * EINPROGRESS; the loader reads it with symcache_load (which touches no
 * cache) and the cache's owner hands the result to symcache_put. */
struct symcache_loader {
	void (*load)(void *ctx, int pid, const struct procmap *m);
	void *ctx;
};
void symcache_set_loader(struct symcache *c, const struct symcache_loader *l);
struct symcache_loaded {
	struct elfsym *es; /* NULL: failed with err */
	int err;
	bool retry;  /* the failure may pass (open failure, no memory) */
	bool gone;   /* the process was gone: says nothing about the file */
	bool opened; /* the file was opened (a parse was tried) */
};
void symcache_load(const char *proc_root, int pid, const struct procmap *m,
		   struct symcache_loaded *out);
/* Same with debug_fd as the file's separate debug file (elfsym_open_fd_debug). */
void symcache_load_debug(const char *proc_root, int pid, const struct procmap *m, int debug_fd,
			 struct symcache_loaded *out);
/* r's symbols (from a debug file fetched later) replace those the cache
 * holds for m's file, which get a new symcache_seq; dropped where the
 * cache holds none (evicted, failed, or loading anew). */
void symcache_upgrade(struct symcache *c, const struct procmap *m, struct symcache_loaded *r);
/* es (owned by the cache from here) for m's file. */
void symcache_put(struct symcache *c, const struct procmap *m, struct symcache_loaded *r);
/* Files asked of the loader whose answer has not come. */
size_t symcache_loading(const struct symcache *c);

#endif
