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

#define PERFMAP_MAX_BYTES (64u << 20)

struct perfmap;

/* Whether a perf map owned by file_uid may describe a process whose
 * effective uid is proc_uid: only its own or root's, as perf does, since
 * /tmp is everyone's and a map names the process's code. */
bool perfmap_owner_ok(uid_t file_uid, uid_t proc_uid);

/* Garbage lines are skipped.  NULL + errno (ENOMEM). */
struct perfmap *perfmap_parse(const char *text, size_t len);
/* The entry covering addr or NULL; *off (optional) gets addr - start. */
const char *perfmap_lookup(const struct perfmap *pm, uint64_t addr, uint64_t *off);
size_t perfmap_count(const struct perfmap *pm);
void perfmap_free(struct perfmap *pm);

#endif
