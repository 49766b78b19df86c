/* stackhash.bpf.h: content-hashed stacks shared by every BPF program
 * that records them.  A stack's ID is a 64-bit hash of its kind and frames,
 * so the same stack always gets the same ID and two stacks can share one
 * only through a 64-bit hash collision.
 *
 * The frames travel to userspace once: the first time a stack is seen in
 * the current generation, its record goes into the events ring before the
 * event that names it, and its ID into stacks_known.  Later events carry
 * the ID alone, and userspace never reads or deletes anything in a map per
 * sample.  Userspace keeps the frames of two generations; when it drops the
 * older it bumps stack_gen, so every stack it no longer holds is sent again
 * the next time it is seen. */
#ifndef PROFD_STACKHASH_BPF_H
#define PROFD_STACKHASH_BPF_H

#include <bpf/bpf_helpers.h>

#include "common.bpf.h"
#include "profd_abi.h"

/* Samples, GPU-free events and stack records (sample.bpf.c). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* resized by userspace */
} events SEC(".maps");

/* Which stacks were sent in which generation: a direct-mapped table,
 * slot = the ID's low bits, holding the ID's other bits and the
 * generation's low 16 (stackhash_tag).  One cache line per look-up and
 * a plain store per new stack, where a hash map cost a bucket, an
 * element and, for an LRU, list work on every insert: at 99 Hz all of
 * them are cold at each sample.  Two IDs sharing a slot only push each
 * other out: a stack is then sent once more, never skipped.  Racing
 * writers store whole words, each true of its ID in a generation
 * userspace still holds. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 18); /* resized by userspace: a power of 2, >= 2^16 */
	__type(key, __u32);
	__type(value, __u64);
} stacks_known SEC(".maps");

/* max_entries of stacks_known - 1, set by userspace with the size. */
const volatile __u32 stacks_known_mask = (1 << 18) - 1;

/* Written by userspace when it drops a generation of stacks. */
volatile __u32 stack_gen = 1;

/* Userspace is woken only once this much waits in the events ring; it
 * also reads the ring once a second and before a dump (run_loop in profd),
 * so a quiet machine's samples are never late by more than that.  One wakeup
 * per batch instead of one per sample: the fixed cost of a wakeup would
 * otherwise be most of a sample's cost. */
const volatile __u64 wakeup_bytes = 64 * 1024;

static __always_inline __u64 events_wakeup_flag(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									       : BPF_RB_NO_WAKEUP;
}

/* One per-CPU slot per stack kind, so the kernel, user and Python stacks of
 * one sample are built without overwriting each other. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, struct profd_stack);
} stack_scratch SEC(".maps");

static __always_inline struct profd_stack *stackhash_scratch(__u32 kind)
{
	__u32 slot = kind - 1; /* kinds start at 1 */

	return bpf_map_lookup_elem(&stack_scratch, &slot);
}

static __always_inline __u64 stackhash_mix(__u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* The ID of a stack: one multiply and one shift per word, the full mix
 * once at the end: a stack has up to 256 words, and mixing each in fully
 * (two multiplies, three shifts) was most of a short stack's cost.  Each
 * step is a bijection of h ^ word, so stacks differing in one word never
 * collide, and the final mix spreads every bit over the ID. */
static __always_inline __u64 stackhash_compute(const struct profd_stack *st)
{
	__u64 h;
	__u32 i;

	if (!st)
		return 1;
	h = stackhash_mix(((__u64)st->kind << 32) | st->nr);

	for (i = 0; i < PROFD_STACK_WORDS && i < st->nr; i++) {
		h = (h ^ st->ips[i]) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	h = stackhash_mix(h);
	return h ? h : 1; /* 0 means "no stack" */
}

/* The hash runs in a global function: the verifier checks it once, on
 * its own.  Inlined, its loop was walked again for every verifier state
 * reaching each of the three call sites (~300k instructions, a third of
 * a second at every daemon start). */
#ifndef PROFD_LEGACY
__noinline __u64 stackhash_of(const struct profd_stack *st)
{
	return stackhash_compute(st);
}
#else
/* 5.10's global functions take scalars only: the legacy object copies
 * the stack into a per-CPU buffer and names it by number.  Programs that
 * interrupt one another on a CPU nest strictly, so a per-CPU depth picks
 * a buffer no caller below is using. */
#define STACKHASH_LEGACY_DEPTH 4
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STACKHASH_LEGACY_DEPTH);
	__type(key, __u32);
	__type(value, struct profd_stack);
} stackhash_legacy_buf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} stackhash_legacy_depth SEC(".maps");

__noinline __u64 stackhash_of_buf(__u32 slot)
{
	return stackhash_compute(bpf_map_lookup_elem(&stackhash_legacy_buf, &slot));
}

/* 0 when no buffer was free (the stack is then lost, never misnamed). */
static __always_inline __u64 stackhash_of(const struct profd_stack *st)
{
	__u32 zero = 0, d, n;
	__u32 *depth = bpf_map_lookup_elem(&stackhash_legacy_depth, &zero);
	struct profd_stack *buf;
	__u64 h = 0;

	if (!depth || !st)
		return 0;
	d = *depth;
	*depth = d + 1;
	buf = d < STACKHASH_LEGACY_DEPTH ? bpf_map_lookup_elem(&stackhash_legacy_buf, &d) : NULL;
	if (buf) {
		n = st->nr < PROFD_STACK_WORDS ? st->nr : PROFD_STACK_WORDS;
		barrier_var(n);
		buf->kind = st->kind;
		buf->nr = n;
		if (n <= PROFD_STACK_WORDS)
			bpf_probe_read_kernel(buf->ips, n * sizeof(__u64), st->ips);
		h = stackhash_of_buf(d);
	}
	*depth = d;
	return h;
}
#endif

/* What stacks_known holds for ID h sent in generation gen: the slot
 * index gives the low 16 bits of h (the table has at least 2^16 slots),
 * the tag the rest, with the generation in their place.  Generations
 * 2^16 apart share a tag: a slot untouched that long could skip a send
 * (bumps come minutes apart: that is months). */
static __always_inline __u64 stackhash_tag(__u64 h, __u32 gen)
{
	return (h & ~0xffffULL) | (gen & 0xffff);
}

/* The ID of st, sending its frames first when userspace may not hold
 * them (sets new_flag in *flags then).  0 when the record could not be
 * sent: the ring is full, and the event will say "[stack lost]". */
static __always_inline __u64 stackhash_store(struct profd_stack *st, __u32 *flags, __u32 new_flag,
					     __u32 full_counter)
{
	__u64 h = stackhash_of(st), size, tag;
	__u32 slot = (__u32)h & stacks_known_mask;
	__u64 *known = bpf_map_lookup_elem(&stacks_known, &slot);

	if (!h) {
		count(full_counter);
		return 0;
	}
	tag = stackhash_tag(h, stack_gen);
	if (known && *known == tag)
		return h;
	st->type = PROFD_EV_STACK;
	st->tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	st->id = h;
	size = PROFD_STACK_REC_BYTES((__u64)st->nr);
	if (size > sizeof(*st))
		size = sizeof(*st);
	if (bpf_ringbuf_output(&events, st, size, events_wakeup_flag())) {
		count(full_counter);
		return 0;
	}
	if (known)
		*known = tag;
	count(PROFD_CNT_STACKS_SENT);
	*flags |= new_flag;
	return h;
}

#endif
