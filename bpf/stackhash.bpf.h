/* stackhash.bpf.h: content-hashed stack storage shared by every BPF
 * program that records stacks.  A stack's ID is a 64-bit hash of its kind
 * and frames, so the same stack always gets the same ID and two stacks can
 * share one only through a 64-bit hash collision.  Userspace copies a new
 * stack out and deletes it (the NEW flag tells it to), which keeps the map
 * small: it holds only stacks userspace has not read yet. */
#ifndef PROFD_STACKHASH_BPF_H
#define PROFD_STACKHASH_BPF_H

#include "common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192); /* resized by userspace */
	__type(key, __u64);
	__type(value, struct profd_stack);
} stacks SEC(".maps");

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

/* A global function: the verifier checks it once, on its own.  Inlined,
 * its loop was walked again for every verifier state reaching each of
 * the three call sites (~300k instructions, a third of a second at
 * every daemon start). */
__noinline __u64 stackhash_of(const struct profd_stack *st)
{
	__u64 h;
	__u32 i;

	if (!st)
		return 1;
	h = stackhash_mix(((__u64)st->kind << 32) | st->nr);

	for (i = 0; i < PROFD_MAX_STACK_DEPTH && i < st->nr; i++)
		h = stackhash_mix(h ^ st->ips[i]) + i;
	return h ? h : 1; /* 0 means "no stack" */
}

/* Store st if new; returns its ID (0 on failure, counted in full_counter).
 * Sets new_flag in *flags when this call inserted it. */
static __always_inline __u64 stackhash_store(struct profd_stack *st, __u32 *flags, __u32 new_flag,
					     __u32 full_counter)
{
	__u64 h = stackhash_of(st);
	long err;

	err = bpf_map_update_elem(&stacks, &h, st, BPF_NOEXIST);
	if (err == 0) {
		*flags |= new_flag;
	} else if (err != -17 /* EEXIST: already stored, unread */) {
		count(full_counter);
		return 0;
	}
	return h;
}

#endif
