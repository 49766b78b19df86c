/* unwind.bpf.h: native user stacks without frame pointers.  Userspace
 * (userspace/lib/unwinder.c) turns each ELF file's .eh_frame into sorted
 * rows, packed (profd_abi_unwind.h), and each process's executable
 * mappings into a sorted list; here we walk the stack with them: find the
 * mapping of the pc, its page in the file's page index, binary-search
 * that page's rows, compute the CFA, read the return address at CFA - 8 and the saved
 * rbp, repeat.  Mappings without a table fall back to frame pointers, and
 * so does anonymous executable memory (JIT code), where each frame must
 * pass sanity checks first (copies of a stub userspace recognised,
 * CPython's perf trampolines, by the frame their bytes set up); the walk
 * goes back to the tables when it returns into known code.  Unknown code (a pc in no mapping userspace
 * listed), frames failing the checks and rules the tables cannot express
 * stop the walk and say why in the flags, so a stack is cut short but
 * never made up.  The frame loop runs in bpf_loop (kernel 5.17+; a global
 * step function elsewhere: unwind_loop), the two
 * searches are fixed-bound loops, so the verifier cost does not grow with
 * the stack depth.
 *
 * Include after vmlinux.h.  Userspace must size the three maps before
 * load (unwinder_size_maps()). */
#ifndef PROFD_UNWIND_BPF_H
#define PROFD_UNWIND_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "profd_abi_unwind.h"
#include "common.bpf.h"
#include "kcompat.bpf.h"

/* Frames a walk follows in the legacy object (kcompat.bpf.h). */
#ifndef UNWIND_MAX_FRAMES_LEGACY
#define UNWIND_MAX_FRAMES_LEGACY PROFD_UNWIND_MAX_FRAMES
#endif

/* The rows come in chunks that userspace creates as the tables need
 * them (profd_abi_unwind.h): memory grows with what is profiled, not
 * with the cap.  Both lookups of a word stay inlined by the verifier:
 * the outer array's, and the inner one's, since every chunk has the
 * template's size. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* sized by userspace: the cap in chunks */
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_ARRAY);
		__uint(map_flags, BPF_F_MMAPABLE); /* userspace writes rows without syscalls */
		__uint(max_entries, PROFD_UNWIND_CHUNK_VALUES);
		__type(key, __u32);
		/* struct profd_unwind_words: clang gives BTF only a
		 * forward declaration of a struct this deep in a map. */
		__type(value, __u64);
	});
} unwind_rows SEC(".maps");

/* The mappings in chunks too, looked up the same way. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* sized by userspace: the cap in chunks */
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_ARRAY);
		__uint(map_flags, BPF_F_MMAPABLE);
		__uint(max_entries, PROFD_UNWIND_MAP_CHUNK_VALUES);
		/* By sizes, key too: BTF has only a forward declaration
		 * of the struct here (see unwind_rows), and a map with a
		 * BTF key but none for its value is refused. */
		__uint(key_size, sizeof(__u32));
		__uint(value_size, sizeof(struct profd_unwind_mapping));
	});
} unwind_mappings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by userspace */
	__type(key, __u32);	/* tgid */
	__type(value, struct profd_unwind_proc);
} unwind_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profd_unwind_counters);
} unwind_counters SEC(".maps");

/* struct profd_unwind_rule_cache (profd_abi_unwind.h): this CPU's rules. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profd_unwind_rule_cache);
} unwind_rule_cache SEC(".maps");

/* Bumped by userspace when it reads which processes were sampled
 * (profd_abi_unwind.h, profd_unwind_proc.sampled_epoch). */
volatile __u64 unwind_epoch = 1;

/* The registers a walk starts from; lr is the link register (arm64's
 * x30; 0 where there is none, x86-64). */
struct unwind_regs {
	__u64 ip, sp, bp, lr;
};

/* The bits of a user code address (userspace's arch_code_addr_mask():
 * pointer authentication signs saved return addresses on arm64 in the
 * bits above the virtual address size).  Set before the first walk. */
volatile __u64 unwind_code_mask = ~0ull;

/* State shared with the bpf_loop callback (lives on the caller's stack). */
struct unwind_walk {
	__u64 ip, sp, bp;
	__u64 lr; /* the interrupted frame's link register; 0 once stepped past */
	__u64 sp0; /* the leaf's sp: the stack's frames lie above it */
	__u64 *ips;
	__u32 n, max;
	__u32 flags;
	__u32 map_start, map_count;
	__u32 done;
	__u32 from_anon;	       /* this pc came from a frame pointer in anonymous code */
	struct profd_unwind_mapping m; /* mapping of the previous pc: usually the next one's too */
};

/* This CPU's unwind counters (NULL only if the map were broken). */
static __always_inline struct profd_unwind_counters *unwind_counters_here(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&unwind_counters, &zero);
}

static __always_inline void unwind_count(__u32 which, __u64 n)
{
	struct profd_unwind_counters *c = unwind_counters_here();

	if (c && which < PROFD_UNWIND_CNT_MAX)
		c->c[which] += n;
}

/* The user registers of the current task at a perf_event sample: the
 * sample's own when it interrupted user mode (returns 1), else those
 * saved on kernel entry (returns 0); -1 when there are none (kernel
 * thread). */
static __always_inline int unwind_regs_from_perf(struct bpf_perf_event_data *ctx,
						 struct unwind_regs *r)
{
	const volatile struct profd_user_regs *pr = profd_perf_regs(ctx);
	struct pt_regs *u;

	if (PROFD_UREGS_USER_MODE(pr)) {
		r->ip = PROFD_UREGS_IP(pr);
		r->sp = PROFD_UREGS_SP(pr);
		r->bp = PROFD_UREGS_FP(pr);
		r->lr = PROFD_UREGS_LR(pr);
		return 1;
	}
	if (!BPF_CORE_READ(profd_current_task(), mm))
		return -1;
	u = profd_current_pt_regs();
	/* Probe reads, not loads: clang would otherwise merge these with the
	 * context loads above into one load through a pointer that is ctx
	 * on one path and BTF on the other, which the verifier refuses. */
	if (!u || profd_pt_regs_read(u, &r->ip, &r->sp, &r->bp, &r->lr))
		return -1;
	return 0;
}

/* The binary searches are global functions with scalar arguments: the
 * verifier checks each once, on its own, instead of walking their loops
 * again for every state of the unwinding step around them. */

/* Mapping i of unwind_mappings; NULL out of the map or in a chunk not
 * made. */
static __always_inline struct profd_unwind_mapping *unwind_mapping_at(__u32 i)
{
	__u32 chunk = i >> PROFD_UNWIND_MAP_CHUNK_SHIFT;
	__u32 key = i & (PROFD_UNWIND_MAP_CHUNK_VALUES - 1);
	void *maps = bpf_map_lookup_elem(&unwind_mappings, &chunk);

	return maps ? bpf_map_lookup_elem(maps, &key) : NULL;
}

/* Index of the last mapping in [lo, lo + n) starting at or below ip. */
__noinline __u32 unwind_mapping_index(__u32 lo, __u32 n, __u64 ip)
{
	struct profd_unwind_mapping *m;
	__u32 i, half, mid;

	for (i = 0; i < PROFD_UNWIND_MAPPING_BITS + 1 && n > 1; i++) {
		half = n / 2;
		mid = lo + half;
		m = unwind_mapping_at(mid);
		if (!m)
			return (__u32)-1;
		if (m->start <= ip)
			lo = mid;
		n -= half;
	}
	return lo;
}

/* Word w of unwind_rows (two a map value); -1 when out of the map or
 * in a chunk not created. */
static __always_inline long unwind_word(__u32 w, __u32 *out)
{
	__u32 chunk = (w / 2) >> PROFD_UNWIND_CHUNK_SHIFT;
	__u32 key = (w / 2) & (PROFD_UNWIND_CHUNK_VALUES - 1);
	struct profd_unwind_words *v;
	void *rows = bpf_map_lookup_elem(&unwind_rows, &chunk);

	if (!rows)
		return -1;
	v = bpf_map_lookup_elem(rows, &key);
	if (!v)
		return -1;
	*out = v->w[w & 1];
	return 0;
}

/* Word index of the last row in [lo, lo + n) whose pc's low bits are
 * <= low; row lo itself is never compared (it is in effect at the page's
 * start).  Rows of one page: n <= 2^PROFD_UNWIND_PAGE_BITS + 1. */
__noinline __u32 unwind_row_index(__u32 lo, __u32 n, __u32 low)
{
	__u32 i, half, mid, e;

	for (i = 0; i < PROFD_UNWIND_PAGE_BITS + 2 && n > 1; i++) {
		half = n / 2;
		mid = lo + half;
		if (unwind_word(mid, &e))
			return (__u32)-1;
		if (PROFD_UNWIND_ENTRY_PC(e) <= low)
			lo = mid;
		n -= half;
	}
	return n > 1 ? (__u32)-1 : lo;
}

/* The rule in effect at row pc tpc of a packed table (word indexes as in
 * struct profd_unwind_mapping): the page index narrows the search to one
 * page's rows, then the row names its rule.  Returns the rule's index, or
 * -1 (past the table, or a damaged one).  Global, like the searches: the
 * verifier checks it once, not for each state of the walk around it.
 * userspace's unwind_packed_lookup() is the reference. */
__noinline __s64 unwind_rule_word(__u32 pages, __u32 npages, __u32 rows, __u32 tpc)
{
	__u32 page = tpc >> PROFD_UNWIND_PAGE_BITS, first, next, lo, row, e;

	if (page + 1 >= npages || unwind_word(pages + page, &first) ||
	    unwind_word(pages + page + 1, &next))
		return -1;
	lo = first ? first - 1 : 0;
	if (next <= lo)
		return -1;
	row = unwind_row_index(rows + lo, next - lo, tpc & PROFD_UNWIND_PAGE_MASK);
	if (row == (__u32)-1 || unwind_word(row, &e))
		return -1;
	return PROFD_UNWIND_ENTRY_RULE(e);
}

/* unwind_rule_word() through this CPU's rule cache, keyed by file_id <<
 * 32 | tpc (file_id 0, anonymous code, is not cached).  The rule's index
 * with bit 32 set when the cache had it, or -1.  A program that interrupts
 * this one on the same CPU (a sample in the middle of a tracepoint's walk)
 * sees an entry empty, old or new, never half written: its key is cleared
 * first and set last.  Global, like the searches. */
__noinline __s64 unwind_rule_cached(__u64 key, __u32 pages, __u32 npages, __u32 rows)
{
	__u32 zero = 0, slot;
	struct profd_unwind_rule_cache *c = bpf_map_lookup_elem(&unwind_rule_cache, &zero);
	struct profd_unwind_rule_cache_entry *e = NULL;
	__s64 w;

	if (c && key >> 32) {
		slot = (__u32)((key * 0x9e3779b97f4a7c15ull) >> (64 - PROFD_UNWIND_RULE_CACHE_BITS));
		e = &c->e[slot & ((1u << PROFD_UNWIND_RULE_CACHE_BITS) - 1)];
		if (*(volatile __u64 *)&e->key == key) {
			c->hits++; /* here, not in the walk: a counter there multiplies its states */
			return (__s64)*(volatile __u32 *)&e->rule | (1ll << 32);
		}
	}
	w = unwind_rule_word(pages, npages, rows, (__u32)key);
	if (w >= 0 && e) {
		*(volatile __u64 *)&e->key = 0;
		*(volatile __u32 *)&e->rule = (__u32)w;
		*(volatile __u64 *)&e->key = key;
	}
	return w;
}

/* Rule index of a file whose rules start at word rules, into *rule.
 * 0 or -1. */
static __always_inline long unwind_rule_read(__u32 rules, __u32 index,
					     struct profd_unwind_rule *rule)
{
	__u32 at = rules + PROFD_UNWIND_RULE_WORDS * (index & 0xffff), v[2];

	if (unwind_word(at, &v[0]) || unwind_word(at + 1, &v[1]))
		return -1;
	__builtin_memcpy(rule, v, sizeof(v));
	return 0;
}

/* The rule in effect at row pc tpc of the walk's current mapping.  0 or
 * -1. */
static __always_inline long unwind_lookup_rule(struct unwind_walk *s, __u32 tpc,
					       struct profd_unwind_rule *rule)
{
	__s64 w = unwind_rule_cached((__u64)s->m.file_id << 32 | tpc, s->m.pages, s->m.npages,
				     s->m.rows);

	if (w < 0)
		return -1;
	return unwind_rule_read(s->m.rules, (__u32)w, rule);
}

/* The mapping of s->ip among the process's mappings, into s->m. */
static __always_inline int unwind_find_mapping(struct unwind_walk *s)
{
	struct profd_unwind_mapping *m;
	__u32 idx;

	if (s->ip >= s->m.start && s->ip < s->m.end)
		return 0;
	idx = unwind_mapping_index(s->map_start, s->map_count, s->ip);
	m = unwind_mapping_at(idx);
	if (!m || !s->map_count || s->ip < m->start || s->ip >= m->end)
		return -1;
	s->m = *m;
	return 0;
}

static __always_inline long unwind_stop(struct unwind_walk *s, __u32 flag)
{
	s->flags |= flag;
	s->done = 1;
	return 1;
}

/* One frame by frame pointers: [bp] is the caller's bp, [bp + 8] the
 * return address.  A zero bp is the conventional end of the chain. */
static __always_inline long unwind_fp_step(struct unwind_walk *s, __u64 *cfa, __u64 *bp)
{
	if (!s->bp)
		return unwind_stop(s, PROFD_UNWIND_F_END);
	if (bpf_probe_read_user(bp, sizeof(*bp), (void *)s->bp))
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_READ);
	*cfa = s->bp + 16;
	s->flags |= PROFD_UNWIND_F_FP;
	return 0;
}

/* One frame of anonymous code (JIT) by its frame pointer, trusted only
 * when it looks like a frame of this stack: rbp 8-aligned, at or above
 * sp and less than PROFD_UNWIND_ANON_MAX_STACK above the leaf's sp (the
 * caller then wants a nonzero user return address, and the next step a
 * return address in a known mapping).  A leaf sampled on
 * a prologue's push/mov or on its ret has not set up (or has already
 * popped) its frame: the return address is at the top of the stack.
 * Anything else stops the walk (UNKNOWN): a JIT frame without a frame
 * pointer cuts the stack short rather than make frames up. */
static __always_inline long unwind_anon_step(struct unwind_walk *s, __u32 i, __u64 *cfa, __u64 *bp)
{
	int insn = i ? 0 : profd_leaf_insn(s->ip);

	s->flags |= PROFD_UNWIND_F_ANON;
	if (insn == PROFD_LEAF_ENTRY || insn == PROFD_LEAF_RET) {
		*cfa = s->sp + 8;
		*bp = s->bp;
		return 0;
	}
	if (insn == PROFD_LEAF_SAVED_FP) {
		*cfa = s->sp + 16;
		if (bpf_probe_read_user(bp, sizeof(*bp), (void *)s->sp))
			return unwind_stop(s, PROFD_UNWIND_F_TRUNC_READ);
		return 0;
	}
	if (!s->bp || (s->bp & 7) || s->bp < s->sp || s->bp - s->sp0 >= PROFD_UNWIND_ANON_MAX_STACK)
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_UNKNOWN);
	if (bpf_probe_read_user(bp, sizeof(*bp), (void *)s->bp))
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_READ);
	*cfa = s->bp + 16;
	return 0;
}

/* One frame of a stub copy (PROFD_UNWIND_MAP_STUB: CPython's perf
 * trampolines), by the frame its bytes set up, which needs no frame
 * pointer.  Outside that frame (the copy's first instructions, its ret)
 * only the interrupted leaf can be: its return address is where a call
 * left it (PROFD_SP_AFTER_RET says where the caller's sp is; when that is
 * sp itself, the return address is still in the link register, *ra_at
 * 0).  A return address outside the frame is no frame of this stub. */
static __always_inline long unwind_stub_step(struct unwind_walk *s, __u32 i, __u64 pc, __u64 *cfa,
					     __u64 *bp, __u64 *ra_at)
{
	__u64 off;

	s->flags |= PROFD_UNWIND_F_ANON;
	if (!s->m.stub_chunk || !s->m.stub_stride || pc < s->m.start)
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_UNKNOWN);
	off = (pc - s->m.start) % s->m.stub_chunk % s->m.stub_stride;
	*bp = s->bp;
	if (off >= s->m.stub_lo && off < s->m.stub_hi) {
		*cfa = s->sp + s->m.stub_cfa;
		*ra_at = *cfa - 8;
		if (s->m.stub_fp_off &&
		    bpf_probe_read_user(bp, sizeof(*bp), (void *)(*cfa + (__s64)s->m.stub_fp_off * 8)))
			return unwind_stop(s, PROFD_UNWIND_F_TRUNC_READ);
		return 0;
	}
	if (i)
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_UNKNOWN);
	*cfa = PROFD_SP_AFTER_RET(s->sp);
	if (*cfa != s->sp)
		*ra_at = *cfa - 8;
	else if (!s->lr)
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_STOP);
	return 0;
}

/* The CFA of the current frame from its row; 1 (and flags) to stop. */
static __always_inline long unwind_cfa(struct unwind_walk *s, const struct profd_unwind_rule *r,
				       __u64 *cfa)
{
	switch (r->cfa_type) {
	case PROFD_UNWIND_CFA_RSP:
		*cfa = s->sp + r->cfa_off;
		return 0;
	case PROFD_UNWIND_CFA_RSP_X8:
		*cfa = s->sp + (__s64)r->cfa_off * 8;
		return 0;
	case PROFD_UNWIND_CFA_RBP:
		*cfa = s->bp + r->cfa_off;
		return 0;
	case PROFD_UNWIND_CFA_PLT:
		*cfa = s->sp + 8 + ((s->ip & 15) >= (__u64)r->cfa_off ? 8 : 0);
		return 0;
	case PROFD_UNWIND_CFA_RBP_DEREF:
		if (bpf_probe_read_user(cfa, sizeof(*cfa), (void *)(s->bp + r->cfa_off)))
			return unwind_stop(s, PROFD_UNWIND_F_TRUNC_READ);
		return 0;
	case PROFD_UNWIND_CFA_END:
		return unwind_stop(s, PROFD_UNWIND_F_END);
	case PROFD_UNWIND_CFA_GAP:
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_GAP);
	default:
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_STOP);
	}
}

/* One frame by the tables: CFA, caller's rbp, and where the return
 * address is (*ra_at, or 0 when it is in the link register). */
static __always_inline long unwind_table_step(struct unwind_walk *s, __u64 pc, __u64 *cfa,
					      __u64 *bp, __u64 *ra_at)
{
	struct profd_unwind_rule r;
	__u64 tpc = pc - s->m.bias;

	if (pc < s->m.bias || tpc > 0xffffffffULL)
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_GAP);
	if (unwind_lookup_rule(s, (__u32)tpc, &r))
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_GAP);
	if (unwind_cfa(s, &r, cfa))
		return 1;
	if (r.ra_off == PROFD_UNWIND_RA_LR) {
		if (!s->lr)
			return unwind_stop(s, PROFD_UNWIND_F_TRUNC_STOP); /* past the leaf: lost */
		*ra_at = 0;
	} else {
		*ra_at = *cfa + (r.ra_off ? (__s64)r.ra_off * 8 : -8);
	}
	*bp = s->bp;
	if (r.cfa_type == PROFD_UNWIND_CFA_RBP_DEREF) {
		if (bpf_probe_read_user(bp, sizeof(*bp), (void *)s->bp))
			return unwind_stop(s, PROFD_UNWIND_F_TRUNC_READ);
	} else if (r.rbp_off &&
		   bpf_probe_read_user(bp, sizeof(*bp), (void *)(*cfa + (__s64)r.rbp_off * 8))) {
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_READ);
	}
	return 0;
}

/* One step: record the current pc into ips, then step to the caller. */
static __always_inline long unwind_step_in(__u32 i, struct unwind_walk *s, __u64 *ips)
{
	__u64 cfa = 0, bp = 0, ra = 0, ra_at = 0, pc, idx = i;
	long stop;
	int anon, in_lr;

	if (idx >= PROFD_UNWIND_MAX_FRAMES || idx >= s->max)
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_DEPTH);
	/* Index with the register the verifier saw checked, not a fresh
	 * zero-extension of i. */
	barrier_var(idx);
	ips[idx] = s->ip;
	s->n = idx + 1;
	/* A return address points after the call, maybe into the next
	 * function; the call itself is one byte before.  Not so for the
	 * interrupted leaf. */
	pc = i ? s->ip - 1 : s->ip;
	if (unwind_find_mapping(s)) {
		/* A return address found through anonymous code must be in
		 * code we know: else it was no frame, drop it. */
		if (s->from_anon)
			s->n = idx;
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_UNKNOWN);
	}
	anon = s->m.flags & PROFD_UNWIND_MAP_ANON;
	if (s->m.flags & PROFD_UNWIND_MAP_STUB)
		stop = unwind_stub_step(s, i, pc, &cfa, &bp, &ra_at);
	else if (anon)
		stop = unwind_anon_step(s, i, &cfa, &bp);
	else if (s->m.flags & PROFD_UNWIND_MAP_FP) {
		s->flags |= s->m.flags & PROFD_UNWIND_MAP_WANTED ? PROFD_UNWIND_F_WANTED : 0;
		stop = unwind_fp_step(s, &cfa, &bp);
	}
	else
		stop = unwind_table_step(s, pc, &cfa, &bp, &ra_at);
	if (stop)
		return 1;
	/* Only a table row or a stub's leaf puts the return address in the
	 * link register (ra_at 0); frame pointers always have it at cfa - 8. */
	in_lr = !ra_at && (!(s->m.flags & (PROFD_UNWIND_MAP_ANON | PROFD_UNWIND_MAP_FP)) ||
			   (s->m.flags & PROFD_UNWIND_MAP_STUB));
	/* A leaf whose return address is still in lr may not have moved sp. */
	if (cfa < s->sp || (cfa == s->sp && !in_lr))
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_BAD); /* a loop, or garbage */
	if (in_lr)
		ra = s->lr;
	else if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(ra_at ? ra_at : cfa - 8)))
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_READ);
	ra &= unwind_code_mask; /* pointer authentication's signature */
	/* JIT code is always called: 0 or a kernel address is no caller. */
	if (anon && (__s64)ra <= 0)
		return unwind_stop(s, PROFD_UNWIND_F_TRUNC_UNKNOWN);
	if (!ra)
		return unwind_stop(s, PROFD_UNWIND_F_END);
	s->ip = ra;
	s->sp = cfa;
	s->bp = bp;
	s->lr = 0;
	s->from_anon = anon;
	return 0;
}


#ifdef PROFD_LEGACY
/* The legacy object's loop (kcompat.bpf.h): each step is a global
 * function, which the verifier checks once instead of once per frame,
 * working on the walk kept here, per CPU, in a slot per caller that may
 * interrupt another on a CPU (enum pyrot_slot, common.bpf.h). */
struct unwind_legacy {
	__u32 stop; /* the loop ended (PROFD_LEGACY_LOOP) */
	struct unwind_walk s;
	/* One spare: 5.10's verifier sees unwind_step_in's index bound as
	 * one higher than it is. */
	__u64 ips[PROFD_UNWIND_MAX_FRAMES + 1];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PYROT_SLOTS);
	__type(key, __u32);
	__type(value, struct unwind_legacy);
} unwind_legacy_state SEC(".maps");

__noinline int unwind_step_global(__u32 slot, __u32 i)
{
	struct unwind_legacy *L = bpf_map_lookup_elem(&unwind_legacy_state, &slot);

	if (!L || L->stop)
		return 0;
	if (i > UNWIND_MAX_FRAMES_LEGACY || unwind_step_in(i, &L->s, L->ips))
		L->stop = 1;
	return 0;
}

/* The walk on the slot's state; its frames are copied to s->ips after. */
static __always_inline void unwind_loop(struct unwind_walk *s, __u32 slot)
{
	struct unwind_legacy *L = bpf_map_lookup_elem(&unwind_legacy_state, &slot);
	__u64 *ips = s->ips;
	__u32 n;

	if (!L) {
		s->flags |= PROFD_UNWIND_F_TRUNC_READ;
		return;
	}
	s->ips = NULL; /* no pointer goes into the map */
	L->s = *s;
	L->stop = 0;
	PROFD_LEGACY_LOOP(UNWIND_MAX_FRAMES_LEGACY + 1, unwind_step_global, slot, &L->stop);
	*s = L->s;
	s->ips = ips;
	n = s->n;
	if (n > PROFD_UNWIND_MAX_FRAMES)
		n = PROFD_UNWIND_MAX_FRAMES;
	barrier_var(n); /* copy with the bound the verifier saw checked */
	if (n)
		bpf_probe_read_kernel(ips, n * sizeof(__u64), L->ips);
}
#else
static long unwind_step(__u32 i, void *arg)
{
	struct unwind_walk *s = arg;

	return unwind_step_in(i, s, s->ips);
}

static __always_inline void unwind_loop(struct unwind_walk *s, __u32 slot)
{
	PROFD_OPAQUE(&s->n, s + 1);
	bpf_loop(PROFD_UNWIND_MAX_FRAMES + 1, unwind_step, s, 0);
}
#endif

/* A walk's outcome, in one look-up of this CPU's counters. */
static __always_inline void unwind_count_result(__u32 flags, __u32 n)
{
	struct profd_unwind_counters *c = unwind_counters_here();

	if (!c)
		return;
	c->c[PROFD_UNWIND_CNT_CALLS]++;
	c->c[PROFD_UNWIND_CNT_FRAMES] += n;
	c->c[PROFD_UNWIND_CNT_COMPLETE] += !!(flags & PROFD_UNWIND_F_END);
	c->c[PROFD_UNWIND_CNT_FP_USED] += !!(flags & PROFD_UNWIND_F_FP);
	c->c[PROFD_UNWIND_CNT_DEPTH] += !!(flags & PROFD_UNWIND_F_TRUNC_DEPTH);
	c->c[PROFD_UNWIND_CNT_UNKNOWN] += !!(flags & PROFD_UNWIND_F_TRUNC_UNKNOWN);
	c->c[PROFD_UNWIND_CNT_GAP] += !!(flags & PROFD_UNWIND_F_TRUNC_GAP);
	c->c[PROFD_UNWIND_CNT_STOP] += !!(flags & PROFD_UNWIND_F_TRUNC_STOP);
	c->c[PROFD_UNWIND_CNT_READ] += !!(flags & PROFD_UNWIND_F_TRUNC_READ);
	c->c[PROFD_UNWIND_CNT_BAD] += !!(flags & PROFD_UNWIND_F_TRUNC_BAD);
	c->c[PROFD_UNWIND_CNT_ANON] += !!(flags & PROFD_UNWIND_F_ANON);
}

/* Walk the user stack of the current task (of process tgid) from regs.
 * ips (room for PROFD_UNWIND_MAX_FRAMES, typically a map value) gets the
 * leaf pc first, then return addresses (symbolize those at address - 1),
 * at most max.  *flags gets PROFD_UNWIND_F_*: END when the walk reached
 * the outermost frame, else a TRUNC_* reason; NO_PROC when userspace has
 * no table for tgid, STALE when it has one from before an exec (nothing
 * written in both cases: use bpf_get_stack instead).  slot: the caller's
 * enum pyrot_slot (common.bpf.h), for the legacy object's loop state.
 * Returns the number of frames. */
static __always_inline int unwind_user(const struct unwind_regs *regs, __u32 tgid, __u64 *ips,
				       __u32 max, __u32 *flags, __u32 slot)
{
	struct profd_unwind_proc *p = bpf_map_lookup_elem(&unwind_procs, &tgid);
	struct mm_struct *mm = BPF_CORE_READ(profd_current_task(), mm);
	struct unwind_walk s = {};
	__u64 epoch = unwind_epoch;

	if (!p) {
		*flags = PROFD_UNWIND_F_NO_PROC;
		unwind_count(PROFD_UNWIND_CNT_NO_PROC, 1);
		return 0;
	}
	if (!mm || BPF_CORE_READ(mm, start_stack) != p->start_stack) {
		*flags = PROFD_UNWIND_F_STALE;
		unwind_count(PROFD_UNWIND_CNT_STALE, 1);
		return 0;
	}
	if (p->sampled_epoch != epoch)
		p->sampled_epoch = epoch;
	s.ip = regs->ip;
	s.sp = regs->sp;
	s.bp = regs->bp;
	s.lr = regs->lr & unwind_code_mask;
	s.sp0 = regs->sp;
	s.ips = ips;
	s.max = max;
	s.map_start = p->map_start;
	s.map_count = p->map_count;
	unwind_loop(&s, slot);
	if (!s.done)
		s.flags |= PROFD_UNWIND_F_TRUNC_DEPTH;
	*flags = s.flags;
	unwind_count_result(s.flags, s.n);
	return (int)s.n;
}

#endif
