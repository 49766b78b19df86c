/* bpfload: which build of the sampling object this kernel gets, and what
 * a refused load names.
 *
 * sample.bpf.c is built twice (bpf/kcompat.bpf.h): for kernels with
 * bpf_loop, bpf_task_pt_regs, BTF current-task pointers and task storage,
 * and as sample_legacy.bpf.c for 5.10 to 5.16.  Both have the same maps,
 * programs and globals, so sample.bpf.c's skeleton drives either.
 *
 * A load the kernel refuses is retried by the sampler without the
 * optional feature whose program or map was refused; bpfload_watch
 * catches libbpf's messages meanwhile, so the user gets one line naming
 * the feature and the kernel's reason instead of a verifier dump. */
#ifndef PROFD_BPFLOAD_H
#define PROFD_BPFLOAD_H

#include <stdbool.h>

struct sample_bpf;

enum bpfload_variant {
	BPFLOAD_AUTO,   /* asked for: whichever the kernel takes */
	BPFLOAD_MODERN, /* bpf_loop and friends (5.17+) */
	BPFLOAD_LEGACY, /* bounded loops, hash maps (5.10+) */
};

struct kfeatures;

/* The variant a kernel with these features can load (the one rule). */
enum bpfload_variant bpfload_variant_for(const struct kfeatures *k);
/* The variant this kernel can load: probed once (kfeatures.h). */
enum bpfload_variant bpfload_pick(void);
const char *bpfload_variant_name(enum bpfload_variant v);

/* Whether pidfd_open takes PIDFD_THREAD (6.9+): userspace can then read
 * any thread's task storage, else only a process's first thread's. */
bool bpfload_thread_pidfd(void);

/* The skeleton over that variant's object (NULL and errno on failure). */
struct sample_bpf *bpfload_open(enum bpfload_variant v);

/* What the kernel refused in a load: a program or map name (one of them
 * set), and the last line of its verifier log or libbpf's complaint. */
struct bpfload_culprit {
	char prog[64];
	char map[64];
	char why[160];
};

/* Between begin and end, libbpf's messages are caught into *c (and shown
 * only under -v); begin clears c. */
void bpfload_watch_begin(struct bpfload_culprit *c);
void bpfload_watch_end(void);

#endif
