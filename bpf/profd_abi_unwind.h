/* profd_abi_unwind.h: the layouts shared by the in-kernel .eh_frame
 * unwinder (unwind.bpf.h) and its userspace manager (unwinder.c).
 * Fixed-width types, explicit padding, no pointers, no bool.  Included by
 * profd_abi.h; bump PROFD_ABI_VERSION there when anything here changes.
 *
 * Three maps, all sized by userspace before load:
 *   unwind_rows      ARRAY_OF_MAPS of chunks, each an ARRAY (mmapable) of
 *                    PROFD_UNWIND_CHUNK_VALUES struct profd_unwind_words:
 *                    together the tables of every ELF file as 32-bit
 *                    words, value v in chunk v >> PROFD_UNWIND_CHUNK_SHIFT;
 *                    each file one contiguous slice (which may cross
 *                    chunks): its page index, its rules, its rows (see
 *                    "Packed tables" below).  Userspace creates a chunk
 *                    when a slice first reaches into it and drops those
 *                    at the top once nothing is left in them.
 *   unwind_mappings  ARRAY_OF_MAPS of chunks, each an ARRAY (mmapable) of
 *                    PROFD_UNWIND_MAP_CHUNK_VALUES struct
 *                    profd_unwind_mapping: the executable mappings of
 *                    every process, each process one contiguous slice
 *                    sorted by start (which may cross chunks); made and
 *                    dropped as unwind_rows' chunks are.
 *   unwind_procs     HASH tgid -> struct profd_unwind_proc: where the
 *                    process's slice is. */
#ifndef PROFD_ABI_UNWIND_H
#define PROFD_ABI_UNWIND_H

#ifndef __VMLINUX_H__ /* BPF side gets these types from vmlinux.h */
#include <linux/types.h>
#endif

/* Frames one unwind_user() call writes at most; the ips array it fills
 * must have room for this many. */
#define PROFD_UNWIND_MAX_FRAMES 127
/* Binary-search bounds, so the verifier sees fixed loops.  A file may
 * have at most 2^PROFD_UNWIND_ROW_BITS rows, a process at most
 * 2^PROFD_UNWIND_MAPPING_BITS executable mappings. */
#define PROFD_UNWIND_ROW_BITS 24
#define PROFD_UNWIND_MAPPING_BITS 12
#define PROFD_UNWIND_MAX_FILE_ROWS (1u << PROFD_UNWIND_ROW_BITS)
/* A table's pcs are split in pages of 2^PROFD_UNWIND_PAGE_BITS bytes:
 * a row stores its pc's low bits only, and a lookup searches the rows of
 * one page (at most 2^PROFD_UNWIND_PAGE_BITS + 1 of them). */
#define PROFD_UNWIND_PAGE_BITS 16
#define PROFD_UNWIND_PAGE_MASK ((1u << PROFD_UNWIND_PAGE_BITS) - 1)
/* A file may have at most this many distinct rules (16-bit index). */
#define PROFD_UNWIND_MAX_FILE_RULES (1u << 16)
#define PROFD_UNWIND_MAX_PROC_MAPPINGS (1u << PROFD_UNWIND_MAPPING_BITS)

/* How the CFA (the caller's stack pointer before the call) is found.
 * The names are x86-64's; RSP and RBP mean the stack and frame pointer
 * of any architecture (sp and x29 on arm64: PROFD_UNWIND_CFA_SP/_FP). */
enum profd_unwind_cfa {
	PROFD_UNWIND_CFA_GAP = 0,	/* no FDE covers this pc: stop, truncated */
	PROFD_UNWIND_CFA_RSP = 1,	/* CFA = rsp + cfa_off */
	PROFD_UNWIND_CFA_RBP = 2,	/* CFA = rbp + cfa_off */
	PROFD_UNWIND_CFA_PLT = 3,	/* CFA = rsp + 8, + 8 more when (ip & 15) >= cfa_off */
	PROFD_UNWIND_CFA_RBP_DEREF = 4, /* CFA = *(rbp + cfa_off), caller's rbp = *rbp: gcc's
					 * stack realignment (DRAP); rbp_off unused */
	PROFD_UNWIND_CFA_END = 5,	/* return address undefined: outermost frame */
	PROFD_UNWIND_CFA_STOP = 6,	/* a rule we cannot express: stop, truncated */
	PROFD_UNWIND_CFA_RSP_X8 = 7,	/* CFA = rsp + 8 * cfa_off: frames over 32 KiB */
};
#define PROFD_UNWIND_CFA_SP PROFD_UNWIND_CFA_RSP
#define PROFD_UNWIND_CFA_FP PROFD_UNWIND_CFA_RBP

/* ra_off of a row or rule: where the return address is.  0: at CFA - 8
 * (x86-64's only place, and arm64's x30 saved at the top of the frame);
 * negative: at CFA + 8 * ra_off; PROFD_UNWIND_RA_LR: still in the link
 * register (arm64's x30: a leaf, or a function before it saved x30),
 * known for the interrupted frame only. */
#define PROFD_UNWIND_RA_LR 127

/* One row as userspace builds it: from pc on (to the next row's pc)
 * these rules hold.  The return address is where ra_off says; the
 * builder turns anything it cannot say into a STOP row.  pc is the ELF
 * vaddr minus the file's pc_base, folded into profd_unwind_mapping.bias.
 * The BPF map holds rows packed (below), not this. */
struct profd_unwind_row {
	__u32 pc;
	__s16 cfa_off; /* bytes; see enum profd_unwind_cfa */
	__u8 cfa_type; /* enum profd_unwind_cfa */
	__s8 rbp_off;  /* caller's rbp (x29) saved at CFA + 8 * rbp_off; 0: unchanged */
	__s8 ra_off;   /* PROFD_UNWIND_RA_LR or as above: 0 is CFA - 8 */
	__u8 _pad[3];
};

/* Packed tables.  A file has a few hundred distinct rules but up to
 * millions of rows (libtorch_cpu: 650 rules, 1.4 million rows), so its
 * slice of unwind_rows holds, as 32-bit words:
 *   pages: npages words; word p is the index (in rows) of the first row
 *          whose pc is >= p << PROFD_UNWIND_PAGE_BITS; the last word is
 *          the row count;
 *   rules: one struct profd_unwind_rule (two words) a rule;
 *   rows:  one word a row, PROFD_UNWIND_ENTRY(pc low bits, rule index).
 * A pc in page p is in effect in the rows [first(p) - 1, first(p + 1)):
 * a short binary search over the rows of one page, whose first row (the
 * one in effect at the page's start) it never has to compare.  Row 0 has
 * pc 0, so page 0 starts its search at row 0. */
struct profd_unwind_rule {
	__s16 cfa_off;
	__u8 cfa_type;
	__s8 rbp_off;
	__s8 ra_off;
	__u8 _pad[3];
};
#define PROFD_UNWIND_RULE_WORDS 2

#define PROFD_UNWIND_ENTRY(pc_low, rule) ((__u32)(pc_low) | ((__u32)(rule) << 16))
#define PROFD_UNWIND_ENTRY_PC(e) ((e) & PROFD_UNWIND_PAGE_MASK)
#define PROFD_UNWIND_ENTRY_RULE(e) ((e) >> 16)

/* A chunk of unwind_rows: 2^18 values, 2 MiB (a machine that profiles
 * a few processes needs one or two; a PyTorch job a dozen). */
#define PROFD_UNWIND_CHUNK_SHIFT 18
#define PROFD_UNWIND_CHUNK_VALUES (1u << PROFD_UNWIND_CHUNK_SHIFT)

/* A chunk of unwind_mappings: 4096 mappings, 192 KiB (a page multiple
 * for 4, 16 and 64 KiB pages), where the 65,536 of the default cap took
 * 3 MiB whatever was profiled. */
#define PROFD_UNWIND_MAP_CHUNK_SHIFT 12
#define PROFD_UNWIND_MAP_CHUNK_VALUES (1u << PROFD_UNWIND_MAP_CHUNK_SHIFT)

/* A value of unwind_rows: array map values are 8-byte aligned, so each
 * holds two words; word w is value w / 2, slot w % 2. */
struct profd_unwind_words {
	__u32 w[2];
};

/* profd_unwind_mapping.flags */
#define PROFD_UNWIND_MAP_FP (1u << 0)	/* no table for this file: walk frame pointers */
#define PROFD_UNWIND_MAP_ANON (1u << 1) /* anonymous code (JIT): frame pointers, checked */
/* With _FP: the file has a table that did not fit or gave way to another;
 * a walk through it tells userspace (PROFD_UNWIND_F_WANTED), which loads
 * it again when there is room. */
#define PROFD_UNWIND_MAP_WANTED (1u << 2)
/* The file's table is being built: no rows yet (npages 0), so a walk that
 * reaches it stops there, as at a gap, rather than guess by frame
 * pointers.  For userspace's diagnostics; BPF needs no test for it. */
#define PROFD_UNWIND_MAP_PENDING (1u << 3)
/* With _ANON: the code is copies of one small stub at a fixed stride
 * (CPython's perf trampolines, -X perf), whose frame userspace knows from
 * its bytes, so the walk crosses it without a frame pointer: at offset
 * off = (pc - start) % stub_chunk % stub_stride of a copy, with off in
 * [stub_lo, stub_hi), CFA = sp + stub_cfa, the return address at CFA - 8
 * and the caller's frame pointer at CFA + 8 * stub_fp_off (0: unchanged);
 * elsewhere in the copy (its first instructions, its ret) the frame is
 * not set up: the return address is where a call left it, which only the
 * interrupted leaf can see. */
#define PROFD_UNWIND_MAP_STUB (1u << 4)

/* A frame-pointer frame in anonymous code must lie within this many bytes
 * above the sp the walk started from (the default 8 MiB stack limit). */
#define PROFD_UNWIND_ANON_MAX_STACK (8u << 20)

/* One executable mapping of a process.  A pc in [start, end) is looked
 * up as row pc (ip - bias) in the file's packed table, whose parts start
 * at these word indexes of unwind_rows. */
struct profd_unwind_mapping {
	__u64 start;
	__u64 end;
	__u64 bias;   /* load bias + the file's pc_base */
	union {
		struct {
			__u32 pages;  /* word index of the page index */
			__u32 npages; /* its words (pages + 1); 0 with _FP or _ANON */
			__u32 rules;  /* word index of the rules */
			__u32 rows;   /* word index of the rows */
		};
		struct { /* PROFD_UNWIND_MAP_STUB */
			__u32 stub_chunk;  /* the copies' phase restarts every this many bytes */
			__u16 stub_stride; /* bytes from one copy to the next */
			__u8 stub_lo, stub_hi; /* the copy's offsets where its frame is set up */
			__u8 stub_cfa;	       /* there: CFA = sp + stub_cfa */
			__s8 stub_fp_off;      /* caller's frame pointer at CFA + 8 * this; 0: unchanged */
			__u8 _stub_pad[6];
		};
	};
	__u32 file_id; /* userspace's id of the file (0: anonymous), for diagnostics */
	__u32 flags;   /* PROFD_UNWIND_MAP_* */
};

/* Value of unwind_procs: the process's slice of unwind_mappings.
 * start_stack (mm->start_stack, field 28 of /proc/PID/stat) is random
 * per exec: a walk that finds another value knows the process has exec'ed
 * since userspace wrote the entry and does not trust the slice. */
struct profd_unwind_proc {
	__u32 map_start;
	__u32 map_count;
	__u64 start_stack;
	__u64 sampled_epoch; /* unwind_epoch at a walk since it last changed */
};

/* unwind_epoch, a global of unwind.bpf.h, is bumped by userspace each time
 * it reads which processes were sampled: a walk copies it into its
 * process's entry when they differ (one store per process per epoch, and
 * no clock read per sample).  An entry holding the current epoch was
 * sampled since the last read; userspace keeps the time, and gives the
 * tables of the least recently sampled files way when memory runs out. */

/* Result flags of unwind_user().  END: the walk reached the outermost
 * frame (complete).  FP: some frame came from frame pointers.  ANON: some
 * frame was in anonymous executable memory (JIT code), walked by its
 * frame pointer.  NO_PROC:
 * tgid has no entry; STALE: its entry is from before an exec; in both
 * cases nothing was unwound.  TRUNC_*: why the walk stopped early: more
 * than PROFD_UNWIND_MAX_FRAMES (DEPTH), a pc in no known mapping (JIT
 * code mapped since the list was read, a dlopen not refreshed yet), or
 * anonymous code whose frame pointer fails the checks (UNKNOWN), a pc between the
 * FDEs of a known file (GAP), a CFI rule we cannot express (STOP), user
 * memory not readable (READ), a CFA that did not move up the stack
 * (BAD). */
#define PROFD_UNWIND_F_END (1u << 0)
#define PROFD_UNWIND_F_FP (1u << 1)
#define PROFD_UNWIND_F_NO_PROC (1u << 2)
#define PROFD_UNWIND_F_TRUNC_DEPTH (1u << 3)
#define PROFD_UNWIND_F_TRUNC_UNKNOWN (1u << 4)
#define PROFD_UNWIND_F_TRUNC_GAP (1u << 5)
#define PROFD_UNWIND_F_TRUNC_STOP (1u << 6)
#define PROFD_UNWIND_F_TRUNC_READ (1u << 7)
#define PROFD_UNWIND_F_TRUNC_BAD (1u << 8)
#define PROFD_UNWIND_F_STALE (1u << 9)
#define PROFD_UNWIND_F_ANON (1u << 10)
#define PROFD_UNWIND_F_WANTED (1u << 11) /* walked a PROFD_UNWIND_MAP_WANTED mapping */
#define PROFD_UNWIND_F_TRUNC_MASK (0x1f8u)

/* The unwinder's own counters: slots of struct profd_unwind_counters. */
enum profd_unwind_counter {
	PROFD_UNWIND_CNT_CALLS = 0, /* unwind_user() calls */
	PROFD_UNWIND_CNT_NO_PROC,   /* tgid not known to the unwinder */
	PROFD_UNWIND_CNT_COMPLETE,  /* reached the outermost frame */
	PROFD_UNWIND_CNT_FRAMES,    /* frames produced */
	PROFD_UNWIND_CNT_FP_USED,   /* walks that used frame pointers somewhere */
	PROFD_UNWIND_CNT_DEPTH,	    /* truncated: too deep */
	PROFD_UNWIND_CNT_UNKNOWN,   /* truncated: pc outside known mappings */
	PROFD_UNWIND_CNT_GAP,	    /* truncated: pc without FDE */
	PROFD_UNWIND_CNT_STOP,	    /* truncated: unsupported rule */
	PROFD_UNWIND_CNT_READ,	    /* truncated: user memory read failed */
	PROFD_UNWIND_CNT_BAD,	    /* truncated: CFA sanity check failed */
	PROFD_UNWIND_CNT_STALE,	    /* entry from before an exec: not used */
	PROFD_UNWIND_CNT_ANON,	    /* walks through anonymous code (JIT) by frame pointers */
	PROFD_UNWIND_CNT_MAX
};

/* The unwind_counters map's value (key 0), one per CPU: a walk bumps two
 * to four counters, one look-up for them all. */
struct profd_unwind_counters {
	__u64 c[PROFD_UNWIND_CNT_MAX];
};

/* The per-CPU rule cache: the rule index found at row pc tpc of file file_id,
 * direct-mapped by a hash of both (1024 entries).  A sampled program's hot return
 * addresses recur at every sample: one cache line instead of a page
 * index and a binary search over the rows, cold at 99 Hz.  Rules are
 * the file's own (ids are never reused), so an entry stays true while
 * the file's table moves, gives way or is rebuilt. */
#define PROFD_UNWIND_RULE_CACHE_BITS 10
struct profd_unwind_rule_cache_entry {
	__u64 key; /* file_id << 32 | tpc; 0: empty (file ids start at 1) */
	__u32 rule; /* index into the file's rules */
	__u32 _pad;
};

/* The per-CPU value (one per CPU, key 0); hits are counted here, where
 * the lookup already holds the value. */
struct profd_unwind_rule_cache {
	__u64 hits;
	struct profd_unwind_rule_cache_entry e[1u << PROFD_UNWIND_RULE_CACHE_BITS];
};

/* Event of bpf/unwind_test.bpf.c (the unwinder's own BPF test): one
 * walk as unwind_user() returned it, and for comparison the frame-pointer
 * walk of bpf_get_stack(BPF_F_USER_STACK) of the same sample. */
struct profd_unwind_test_event {
	__u32 tid;
	__u32 nr;
	__u32 flags;	 /* PROFD_UNWIND_F_* */
	__u32 user_mode; /* 1: the sample interrupted user mode */
	__u32 fp_nr;
	__u32 _pad;
	__u64 ips[PROFD_UNWIND_MAX_FRAMES];
	__u64 fp_ips[PROFD_UNWIND_MAX_FRAMES];
};

/* Context of unwind_test.bpf.c's unwind_lookup program (run with
 * BPF_PROG_TEST_RUN by tests/bpf/test_unwind_lookup.c): the rule the
 * BPF lookup finds at row pc tpc of unwind_mappings[mapping]. */
struct profd_unwind_lookup_test {
	__u32 mapping;
	__u32 tpc;
	__s32 rc; /* 0, or -1: no rule (past the table, or no such mapping) */
	struct profd_unwind_rule rule;
	__u32 cache_hit; /* 1: the rule came from the per-CPU rule cache */
};

#endif
