/* perfmap: JIT symbol maps, /tmp/perf-PID.map ("START SIZE name" per
 * line, hex), as written by V8, the JVM agents, .NET, LuaJIT and
 * CPython 3.12's perf trampoline.  Later lines win over earlier ones
 * at the same start, since JITs append as they recompile. */
#ifndef PROFD_PERFMAP_H
#define PROFD_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define PERFMAP_MAX_BYTES (64u << 20)

struct perfmap;

/* Whether a perf map owned by file_uid may describe a process whose
 * effective uid is proc_uid: only its own or root's, as perf does, since
 * /tmp is everyone's and a map names the process's code. */
bool perfmap_owner_ok(uid_t file_uid, uid_t proc_uid);

/* Garbage lines are skipped.  NULL + errno (ENOMEM). */
struct perfmap *perfmap_parse(const char *text, size_t len);

/* A map built from several sources (a perf map, a jitdump): new, add
 * (later adds win at the same start), finish (before any lookup).
 * perfmap_add: 0, -EINVAL (empty, wrapping, a NUL in the name), -EFBIG
 * (names past PERFMAP_MAX_BYTES) or -ENOMEM. */
struct perfmap *perfmap_new(void);
int perfmap_add(struct perfmap *pm, uint64_t start, uint64_t size, const char *name, size_t len);
/* A perf map's text: bad lines skipped; 0 or -ENOMEM. */
int perfmap_add_text(struct perfmap *pm, const char *text, size_t len);
void perfmap_finish(struct perfmap *pm);
/* The entry covering addr or NULL; *off (optional) gets addr - start. */
const char *perfmap_lookup(const struct perfmap *pm, uint64_t addr, uint64_t *off);
size_t perfmap_count(const struct perfmap *pm);
void perfmap_free(struct perfmap *pm);

/* What is known of a process's perf map between two loads: whose it is
 * (from /proc/PID/status) and the file last read or refused. */
struct perfmap_file {
	uint64_t refused_ino; /* last file refused, logged once */
	uint64_t size, ino;
	struct timespec mtime;
};

struct perfmap_stamp {
	int nspid;		 /* its pid in its own namespace; 0: status not read yet */
	uid_t uid;		 /* its effective uid; -1: unknown (root's maps only) */
	struct perfmap_file map;  /* /tmp/perf-NSPID.map */
	struct perfmap_file dump; /* its jitdump (jitdump.h) */
};

/* A load's answer: stamp as it is now, and pm, a map read anew (NULL:
 * unchanged, missing, unreadable or refused). */
struct perfmap_loaded {
	struct perfmap_stamp stamp;
	struct perfmap *pm;
	bool refused;
};

/* Read pid's perf map, <proc_root>/PID/root/tmp/perf-NSPID.map, and its
 * jitdump (the jit-NSPID.dump file it maps, else /tmp's), into one map,
 * unless both are the ones prev describes.  Opens files of another
 * process and may parse up to PERFMAP_MAX_BYTES of names: the daemon runs
 * it on its worker, never on the thread that counts samples. */
void perfmap_load(const char *proc_root, int pid, const struct perfmap_stamp *prev,
		  struct perfmap_loaded *out);

#endif
