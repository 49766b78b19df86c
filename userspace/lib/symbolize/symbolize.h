/* symbolize: names for native and kernel frames, the per-frame entry
 * point of the daemon.  Names follow the frame-name contract:
 *   kernel  "symbol_[k]"             (FRAME_KERNEL; "[unknown]_[k]")
 *   native  demangled symbol         (FRAME_NATIVE)
 *   unknown "[libfoo.so+0x1a2b]"     (FRAME_UNKNOWN; the offset is an
 *           ELF vaddr, what `addr2line -e libfoo.so 0x1a2b` accepts),
 *           "[anon]", "[heap]"-style mapping names, or "[unknown]".
 * Not thread-safe: one symbolizer per thread, or a lock around it. */
#ifndef PROFD_SYMBOLIZE_H
#define PROFD_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "procmaps.h"
#include "stackset.h"

#define SYMBOLIZER_DEFAULT_MAX_FILES 512

struct symbolizer_opts {
	size_t max_files;          /* ELF files cached; 0: the default */
	const char *kallsyms_path; /* NULL: /proc/kallsyms */
	const char *proc_root;     /* NULL: "/proc" (tests point elsewhere) */
};

struct symbolizer_counters {
	uint64_t files_cached;    /* ELF files held, with symbols */
	uint64_t files_failed;    /* failures cached (bad or unreadable) */
	uint64_t evictions;
	uint64_t open_failures, parse_failures;
	uint64_t lookups, misses; /* user frames; misses got no symbol */
	uint64_t kernel_lookups, kernel_misses;
	uint64_t perfmap_loads;
	uint64_t perfmap_refused;    /* maps not owned by the process's uid or root */
	uint64_t files_too_big;	     /* ELF sections or debug files over a size cap */
	uint64_t names_left_mangled; /* C++ names whose demangling could cost too much */
	uint64_t kallsyms_symbols; /* 0 when /proc/kallsyms was unusable */
};

struct symbolizer;

/* NULL + errno.  An unreadable kallsyms only warns (kernel frames then
 * show as "[unknown]_[k]"). */
struct symbolizer *symbolizer_new(const struct symbolizer_opts *o);
void symbolizer_free(struct symbolizer *s);

/* Kernel frame.  0, or -ENOMEM when name could not grow. */
int symbolizer_kernel(struct symbolizer *s, uint64_t ip, struct buf *name, uint32_t *kind);
/* Read kallsyms now instead of on the first kernel frame.  The daemon runs
 * it on a second thread while the kernel verifies its BPF programs; no
 * other call may use s until it returns. */
void symbolizer_preload_kernel(struct symbolizer *s);
/* The binary a user frame is in: pprof's Mapping.  path points into the
 * maps given to symbolizer_user (valid while they are); NULL when the
 * code is not in a file (anonymous memory, JIT, no mapping). */
struct sym_module {
	const char *path;
	char build_id[2 * 64 + 1]; /* lowercase hex, "" when none */
	/* Named from the file's own symbols: the same name for the same file
	 * offset in any process (fileframes.h may keep it). */
	bool from_file;
};

/* User frame ip of process pid whose maps are m (may be NULL); mod, when
 * not NULL, receives the binary it is in.
 * is_return_addr: true for every frame but the leaf; ip - 1 is looked
 * up so a call at the very end of a function names that function.
 * JIT code is named from <proc_root>/PID/root/tmp/perf-NSPID.map.
 * 0, or -ENOMEM when name could not grow. */
int symbolizer_user(struct symbolizer *s, int pid, const struct procmaps *m, uint64_t ip,
		    bool is_return_addr, struct buf *name, uint32_t *kind, struct sym_module *mod);
/* Drop per-process state (its perf map); call when pid exits. */
void symbolizer_forget_pid(struct symbolizer *s, int pid);
/* Hooks around loading a file's symbols (symcache.h). */
struct symcache_io;
void symbolizer_set_io(struct symbolizer *s, const struct symcache_io *io);
/* Or have new files read on another thread (symcache.h): a frame in a file
 * being read is named "[file+0x...]" meanwhile and symbolizer_waiting()
 * says so; the reader's answer goes to symbolizer_file_loaded(). */
struct symcache_loader;
struct symcache_loaded;
void symbolizer_set_loader(struct symbolizer *s, const struct symcache_loader *l);
void symbolizer_file_loaded(struct symbolizer *s, const struct procmap *m,
			    struct symcache_loaded *r);
/* A stripped file's symbols again, with the debug file fetched for it
 * since (symcache_upgrade): its frames are named anew from here on. */
void symbolizer_file_upgraded(struct symbolizer *s, const struct procmap *m,
			      struct symcache_loaded *r);
/* Or have perf maps read on another thread: a due (re)load asks
 * load(ctx, pid, seq, stamp), whose answer, from perfmap_load(), goes
 * with the same seq to symbolizer_perfmap_loaded(); the frame waits for
 * it meanwhile (symbolizer_waiting, symbolizer_loading). */
struct perfmap_stamp;
struct perfmap_loaded;
struct symbolizer_perfmap_loader {
	void (*load)(void *ctx, int pid, uint32_t seq, const struct perfmap_stamp *prev);
	void *ctx;
};
void symbolizer_set_perfmap_loader(struct symbolizer *s,
				   const struct symbolizer_perfmap_loader *l);
/* Takes r->pm (freed when seq is not the ask pending for pid). */
void symbolizer_perfmap_loaded(struct symbolizer *s, int pid, uint32_t seq,
			       struct perfmap_loaded *r);
/* Whether the last symbolizer_user() frame waits for its file (or its
 * process's perf map). */
bool symbolizer_waiting(const struct symbolizer *s);
/* Which reading of pid's perf map (or jitdump) names its JIT code now: it
 * changes with each reading that found one (the map was written or
 * grew), 0 while none has. */
uint64_t symbolizer_perfmap_gen(const struct symbolizer *s, int pid);
/* Which load of m's file its names come from now (symcache_seq): names
 * kept by file (fileframes.h) hold while it stays the same. */
uint64_t symbolizer_file_seq(const struct symbolizer *s, const struct procmap *m);
/* Files (and perf maps) being read for it. */
size_t symbolizer_loading(const struct symbolizer *s);
/* Reloading kallsyms (a missing kernel symbol: a new module or BPF
 * program; ~100 ms) on another thread too: with reload set, a due reload
 * asks it (with the path to read) and the answer, from kallsyms_load(),
 * goes to symbolizer_kallsyms_loaded() (NULL: it failed). */
struct kallsyms;
void symbolizer_set_kallsyms_reload(struct symbolizer *s,
				    void (*reload)(void *ctx, const char *path), void *ctx);
void symbolizer_kallsyms_loaded(struct symbolizer *s, struct kallsyms *ks);
void symbolizer_stats(const struct symbolizer *s, struct symbolizer_counters *out);

#endif
