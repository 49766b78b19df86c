/* mmap_probe: uprobes on the C library's mmap, munmap, mremap and brk
 * (mmap.bpf.h), attached once per library file: a uprobe belongs to the
 * file (inode), so the first process that maps a given libc brings the
 * probes for every later one.  Processes are looked at when profd starts
 * and when ingest sees a new process or reloads its maps. */
#ifndef PROFD_MMAP_PROBE_H
#define PROFD_MMAP_PROBE_H

#include <stdint.h>

struct bpf_program;
struct procmaps;
struct mmap_probe;

/* prog: the loaded on_libc_mmap program; proc_root "/proc" (tests may
 * point elsewhere).  NULL + errno. */
struct mmap_probe *mmap_probe_new(struct bpf_program *prog, const char *proc_root);
void mmap_probe_free(struct mmap_probe *mp);
/* Probe every C library pid maps (m: its maps) not probed yet. */
int mmap_probe_scan_maps(struct mmap_probe *mp, uint32_t pid, const struct procmaps *m);
/* At start: every running process's C library. */
int mmap_probe_scan_all(struct mmap_probe *mp);
/* Library files probed, and uprobes attached. */
void mmap_probe_counts(const struct mmap_probe *mp, uint64_t *files, uint64_t *uprobes);

#endif
