/* kallsyms: kernel text symbols from /proc/kallsyms (core kernel,
 * [module] and BPF JIT bpf_prog_* entries) in a sorted array, for
 * naming kernel frames. */
#ifndef PROFD_KALLSYMS_H
#define PROFD_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

#define KALLSYMS_DEFAULT_PATH "/proc/kallsyms"

struct kallsyms;

/* Parse kallsyms text; garbage lines are skipped.  NULL + errno:
 * EPERM when every address reads as zero (kernel.kptr_restrict hides
 * them from us), ENODATA when there is no text symbol at all. */
struct kallsyms *kallsyms_parse(const char *text, size_t len);
/* Read and parse a file (default KALLSYMS_DEFAULT_PATH when NULL). */
struct kallsyms *kallsyms_load(const char *path);
/* The text symbol covering addr or NULL; *off (optional) gets the
 * distance from its start.  A symbol ends where the next one starts. */
const char *kallsyms_lookup(const struct kallsyms *ks, uint64_t addr, uint64_t *off);
size_t kallsyms_count(const struct kallsyms *ks);
void kallsyms_free(struct kallsyms *ks);

#endif
