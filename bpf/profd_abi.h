/* profd_abi.h: the ONLY header shared by the BPF programs and userspace.
 * Fixed-width types, explicit padding, no pointers, no bool.
 * Bump PROFD_ABI_VERSION whenever a layout or constant below changes. */
#ifndef PROFD_ABI_H
#define PROFD_ABI_H

#ifndef __VMLINUX_H__ /* BPF side gets these types from vmlinux.h */
#include <linux/types.h>
#endif

#include "profd_abi_unwind.h" /* native unwinding tables */

#define PROFD_ABI_VERSION 22

#define PROFD_COMM_LEN 16
#define PROFD_MAX_STACK_DEPTH 127 /* frames kept per kernel or user stack */
#define PROFD_MAX_PY_FRAMES 256   /* Python frames kept per stack (2 words each) */
/* Words in profd_stack.ips: room for a native stack or a Python stack's
 * pairs.  A power of two: the Python walker fills it as a ring. */
#define PROFD_STACK_WORDS (2 * PROFD_MAX_PY_FRAMES)
#define PROFD_MAX_PID_FILTER 1024 /* entries in the --pid filter map */

/* Event types carried by the ringbuf; every event starts with __u32 type. */
enum profd_event_type {
	PROFD_EV_SAMPLE = 1,
	PROFD_EV_EXEC = 2,
	PROFD_EV_EXIT = 3,
	PROFD_EV_GPU = 4, /* struct profd_gpu_event (GPU driver call or CUDA entry point) */
	PROFD_EV_STACK = 5, /* struct profd_stack: a stack's frames, sent once per generation */
	PROFD_EV_OFFCPU = 6, /* struct profd_offcpu_event: a thread was off CPU this long */
	PROFD_EV_MEMORY = 7, /* struct profd_memory_event: bytes made resident by a stack */
	PROFD_EV_FORK = 8, /* struct profd_proc_event: a new process (pid) forked by ppid */
	PROFD_EV_MMAP = 9, /* struct profd_memory_event: bytes mapped (>0) or unmapped (<0) */
	PROFD_EV_CUDA_NAME = 10, /* struct profd_cuda_name_event: a kernel handle made or dropped */
};

/* Stack kinds, mixed into the content hash so equal IPs of different
 * kinds never share an ID. */
enum profd_stack_kind {
	PROFD_STACK_KERNEL = 1,
	PROFD_STACK_USER = 2,
	PROFD_STACK_PYTHON = 3,
};

/* profd_sample.flags */
#define PROFD_SAMPLE_KSTACK_NEW (1u << 0) /* the kernel stack's frames were sent just before */
#define PROFD_SAMPLE_USTACK_NEW (1u << 1) /* same for the user stack */
#define PROFD_SAMPLE_KSTACK_TRUNC (1u << 2) /* kernel stack hit PROFD_MAX_STACK_DEPTH */
#define PROFD_SAMPLE_USTACK_TRUNC (1u << 3) /* user stack hit PROFD_MAX_STACK_DEPTH */
#define PROFD_SAMPLE_KERNEL_THREAD (1u << 4) /* no user stack: a kernel thread */
#define PROFD_SAMPLE_PYSTACK_NEW (1u << 5)  /* same for the Python stack */
#define PROFD_SAMPLE_PYSTACK_TRUNC (1u << 6) /* more Python frames than fit: leaf side cut */
#define PROFD_SAMPLE_PYTHON (1u << 7)       /* a Python process (pystack_id 0: thread not in Python) */
#define PROFD_SAMPLE_USTACK_UNKNOWN (1u << 8) /* unwind hit code without a table (maps changed?) or one wanted */
#define PROFD_SAMPLE_USTACK_FP (1u << 9)    /* user stack by frame pointers (no tables yet) */
#define PROFD_SAMPLE_PYSTACK_NOROOT (1u << 10) /* Python walk stopped before the outermost frame */
#define PROFD_SAMPLE_GIL_KNOWN (1u << 11)   /* the GIL's state was read */
#define PROFD_SAMPLE_HOLDS_GIL (1u << 12)   /* ... and this thread holds it */

/* A CPU sample.  Stacks travel by ID: the ID is a 64-bit content hash of
 * the stack, so a reused or colliding slot can never mislabel a sample.
 * An ID of 0 means "no stack" (an empty kernel stack: the thread was in
 * user mode; otherwise see the failure counters).  A stack's frames reach
 * userspace once per generation as a PROFD_EV_STACK record in the same
 * ring, before the first event that names it (see stackhash.bpf.h). */
struct profd_sample {
	__u32 type;
	__u32 pid; /* tgid */
	__u32 tid;
	__u32 cpu;
	__u64 time_ns; /* bpf_ktime_get_ns(), CLOCK_MONOTONIC */
	__u64 kstack_id;
	__u64 ustack_id;
	__u64 pystack_id; /* Python frames, 0 if none */
	__u32 flags;
	__u32 _pad;
	char comm[PROFD_COMM_LEN]; /* thread name */
	/* The process's start, ns since boot (/proc/PID/stat's starttime is
	 * this in clock ticks): with the pid, the process's identity, so a
	 * reused pid is told apart without a look into /proc. */
	__u64 start_ns;
};

/* A thread of a selected process was off CPU (blocked: sleep, lock, I/O)
 * for duration_ns, at least the threshold.  Its stacks are the ones it
 * had when it blocked (captured at switch-out; 0 with
 * PROFD_OFFCPU_UNCAPTURED when that block was not walked). */
struct profd_offcpu_event {
	__u32 type; /* PROFD_EV_OFFCPU */
	__u32 pid;
	__u32 tid;
	__u32 state;       /* prev_state at switch-out (TASK_INTERRUPTIBLE 1, UNINTERRUPTIBLE 2
			    * ...; 0: preempted, runnable) */
	__u64 time_ns;     /* switch-in, CLOCK_MONOTONIC */
	__u64 duration_ns; /* off CPU */
	__u64 kstack_id;
	__u64 ustack_id;
	__u64 pystack_id;
	__u32 flags;       /* PROFD_SAMPLE_* of the capture, PROFD_OFFCPU_* */
	__u32 _pad;
	char comm[PROFD_COMM_LEN];
	__u64 start_ns;    /* the process's start, as in profd_sample */
};
#define PROFD_OFFCPU_UNCAPTURED (1u << 16) /* no stacks: this block was not walked */

/* Memory made resident (page faults in user mode), sampled by bytes: the
 * faulting thread's stacks, weighted by the bytes counted on its CPU
 * since the last event (memory.bpf.h). */
struct profd_memory_event {
	__u32 type; /* PROFD_EV_MEMORY */
	__u32 pid;
	__u32 tid;
	__u32 flags;       /* PROFD_SAMPLE_* of the walk */
	__u64 time_ns;     /* CLOCK_MONOTONIC */
	__u64 bytes;       /* weight */
	__u64 addr;        /* the faulting address of the fault that sent it */
	__u64 kstack_id;   /* 0: the fault path is always the same */
	__u64 ustack_id;
	__u64 pystack_id;
	__u32 _pad;
	char comm[PROFD_COMM_LEN];
	__u32 _pad2;
	__u64 start_ns;    /* the process's start, as in profd_sample */
};

/* Which C library function a mapping uprobe is on (its BPF cookie); a
 * PROFD_EV_MMAP event carries the signed byte change in bytes (two's
 * complement) and the call's address argument in addr (mmap.bpf.h). */
enum profd_mmap_fn {
	PROFD_MMAP_FN_MMAP = 1,   /* mmap(addr, len, ...): +len */
	PROFD_MMAP_FN_MUNMAP = 2, /* munmap(addr, len): -len */
	PROFD_MMAP_FN_MREMAP = 3, /* mremap(old, old_len, new_len, ...): new_len - old_len */
	PROFD_MMAP_FN_BRK = 4,    /* brk(end), also under sbrk(): end - the current break */
	PROFD_MMAP_FN_MAX
};

/* Per-thread off-CPU state (task storage, readable from userspace with a
 * pidfd of the thread): the stacks of its last walked switch-out and of
 * its last CPU sample, for `profctl stacks`. */
struct profd_thread_state {
	__u64 off_ns;        /* switch-out time of the current block, 0 on CPU */
	__u64 last_block_ns; /* length of the previous block */
	__u64 captured_ns;   /* when the stacks below were walked */
	__u64 kstack_id, ustack_id, pystack_id; /* at that switch-out */
	__u32 flags;         /* PROFD_SAMPLE_* of that walk */
	__u32 state;         /* prev_state then */
	__u32 captured;      /* 1: the current block's stacks are the ones above */
	__u32 long_hist;     /* bit i: the i-th last block reached the threshold */
	__u64 sample_ns;     /* the last CPU sample of the thread */
	__u64 sample_kstack_id, sample_ustack_id, sample_pystack_id;
	__u32 sample_flags;
	__u32 pcount_out;    /* sched_info.pcount (low bits) at the last switch-out: the
			      * thread has not been back on a CPU since while it is unchanged */
	__u64 on_ns;         /* the last switch-in (kernels without sched_info only) */
	__u32 walks;         /* off-CPU walks of the thread, up to 255 */
	__u32 _pad;
};

/* Process lifecycle events from tracepoints, in a ring of their own so a
 * flood of samples cannot crowd them out. */
struct profd_proc_event {
	__u32 type;
	__u32 pid;
	__u32 tid;
	__u32 exit_code;
	__u64 time_ns;
	char comm[PROFD_COMM_LEN];
	__u64 start_ns; /* the process's start, as in profd_sample */
	__u32 ppid;     /* the parent's tgid (exec: who started the program; fork: the forker) */
	__u32 _pad2;
	__u64 parent_start_ns; /* fork: the parent's start (so a reused pid is not the parent) */
};

/* A stack as BPF builds it in a per-CPU scratch slot and sends it: only
 * the first nr ips travel (PROFD_STACK_REC_BYTES(nr) bytes). */
struct profd_stack {
	__u32 type; /* PROFD_EV_STACK */
	__u32 kind; /* enum profd_stack_kind */
	__u32 nr;
	/* The process whose walk sent it: userspace names a new Python
	 * stack's code objects while that thread may still be blocked in
	 * it (a sample of a long block comes when it ends, maybe as the
	 * process exits and its memory goes).  Not hashed: the first
	 * sender of a stack shared by processes. */
	__u32 tgid;
	__u64 id;   /* content hash of kind and ips */
	__u64 ips[PROFD_STACK_WORDS]; /* native stacks use the first PROFD_MAX_STACK_DEPTH */
};
#define PROFD_STACK_HDR_BYTES 24
#define PROFD_STACK_REC_BYTES(nr) (PROFD_STACK_HDR_BYTES + (nr) * 8)

/* Counters, one slot each in the per-CPU counters map's single value
 * (struct profd_counters).  Every sample the
 * program sees ends in exactly one of SENT, FILTERED or RB_FULL; stack
 * troubles are counted on top. */
enum profd_counter {
	PROFD_CNT_SEEN = 0,      /* program invocations */
	PROFD_CNT_FILTERED,      /* not a selected pid (or idle) */
	PROFD_CNT_SENT,          /* sample submitted to the ringbuf */
	PROFD_CNT_RB_FULL,       /* ringbuf had no room: sample dropped */
	PROFD_CNT_KSTACK_FAIL,   /* bpf_get_stack failed for the kernel stack */
	PROFD_CNT_USTACK_FAIL,   /* bpf_get_stack failed for the user stack */
	PROFD_CNT_KSTACK_TRUNC,  /* kernel stack deeper than the limit */
	PROFD_CNT_USTACK_TRUNC,  /* user stack deeper than the limit */
	PROFD_CNT_STACKMAP_FULL, /* a new stack's record found the ringbuf full (event sent without it) */
	PROFD_CNT_PROC_SENT,     /* fork/exec/exit events sent */
	PROFD_CNT_PROC_RB_FULL,  /* fork/exec/exit events dropped */
	PROFD_CNT_PY_SAMPLES,    /* samples of Python processes */
	PROFD_CNT_PY_NO_TSTATE,  /* ... whose thread had no PyThreadState */
	PROFD_CNT_PY_TRUNC,      /* ... with frames left out (PYSTACK_TRUNC or PYSTACK_NOROOT) */
	PROFD_CNT_PY_READ_FAIL,  /* ... where reading interpreter memory failed */
	PROFD_CNT_PY_TSTATE_WALKS, /* thread-list searches for a tstate */
	PROFD_CNT_PY_UPROBE_HITS,  /* eval-loop uprobe hits (--python-uprobe) */
	PROFD_CNT_STACKS_SENT,     /* stack records sent (new in this generation) */
	/* Off-CPU (offcpu.bpf.h): each voluntary switch-out of a selected
	 * user thread (or preemption) is BLOCKS; once the thread is back
	 * (seen at its next switch-out, CPU sample or exit) the block ends in
	 * exactly one of OFFCPU_SHORT, OFFCPU_SENT, OFFCPU_RATE_LIMITED,
	 * OFFCPU_RB_FULL or OFFCPU_END_LOST; else it is still open (the
	 * thread is blocked, or has not been seen since).  OFFCPU_END_ESTIMATED
	 * counts, among the ended ones, those whose end was estimated. */
	PROFD_CNT_OFFCPU_BLOCKS,       /* switch-outs seen (blocks and preemptions) */
	PROFD_CNT_OFFCPU_CAPTURES,     /* ... whose stacks were walked */
	PROFD_CNT_OFFCPU_CAPTURE_LIMITED, /* ... not walked: the CPU's walk budget was spent */
	PROFD_CNT_OFFCPU_SHORT,        /* blocks under the threshold (not sent) */
	PROFD_CNT_OFFCPU_SENT,         /* off-CPU events sent */
	PROFD_CNT_OFFCPU_UNCAPTURED,   /* ... sent without stacks (the block was not walked) */
	PROFD_CNT_OFFCPU_RATE_LIMITED, /* blocks not sent: the CPU's event budget was spent */
	PROFD_CNT_OFFCPU_RB_FULL,      /* blocks not sent: ringbuf full */
	PROFD_CNT_OFFCPU_NO_STORAGE,   /* thread state could not be allocated */
	PROFD_CNT_MEMORY_WALKS,        /* page faults that crossed a sampling threshold */
	PROFD_CNT_MEMORY_SENT,         /* memory events sent */
	PROFD_CNT_MEMORY_RB_FULL,      /* memory events dropped: ringbuf full (their bytes lost) */
	PROFD_CNT_OFFCPU_WALK_UNUSED,  /* walks whose block ended under the threshold (not sent) */
	PROFD_CNT_MMAP_CALLS,          /* C library mmap/munmap/mremap/brk calls seen (uprobes) */
	PROFD_CNT_MMAP_SENT,           /* ... sent as mmap events */
	PROFD_CNT_MMAP_RATE_LIMITED,   /* ... not sent: the CPU's event budget was spent */
	PROFD_CNT_MMAP_RB_FULL,        /* ... not sent: ringbuf full */
	PROFD_CNT_OFFCPU_END_ESTIMATED, /* blocks whose switch-in the scheduler did not record,
					 * their end estimated from the thread's run time since */
	PROFD_CNT_OFFCPU_END_LOST,      /* blocks whose end could not be told (unrecorded at
					 * exit, or no run time kept): not sent */
	PROFD_CNT_MEMORY_LARGE_PAGES,   /* huge pages (THP) allocated for a user fault */
	PROFD_CNT_MEMORY_LARGE_WALKS,   /* ... whose bytes crossed a sampling threshold */
	PROFD_CNT_OFFCPU_END_RECALIBRATED, /* blocks settled on a CPU with no fresh clock offset:
					    * measured again from the runqueue's clock */
	PROFD_CNT_MAX
};

/* The counters map's value (key 0), one per CPU. */
struct profd_counters {
	__u64 c[PROFD_CNT_MAX];
};

/* ---- Python ----
 * Where the walker finds things inside CPython, per interpreter version:
 * built-in tables for 3.9-3.12, read from _Py_DebugOffsets for 3.13+
 * (userspace/lib/pyoffsets.c).  One copy per Python process sits in the
 * py_procs map. */
#define PYOFF_NONE 0xffffffffu
/* Low bits of a _PyStackRef (3.14+ f_executable) that tag it rather than
 * address the object (Py_TAG_BITS); objects are 8-byte aligned, so older
 * versions' plain pointers have them clear and the mask changes nothing. */
#define PYOFF_STACKREF_TAG 3ull

/* pyoffsets.instr_kind: what frame_instr holds and how the walker turns it
 * into the instruction offset it emits (see pycode.h). */
enum pyoff_instr_kind {
	PYOFF_INSTR_LASTI_BYTES = 1, /* int f_lasti, byte offset (3.9) */
	PYOFF_INSTR_LASTI_UNITS = 2, /* int f_lasti, 2-byte code units (3.10) */
	PYOFF_INSTR_PREV_PTR = 3,    /* _Py_CODEUNIT *prev_instr (3.11, 3.12) */
	PYOFF_INSTR_CUR_PTR = 4,     /* _Py_CODEUNIT *instr_ptr (3.13+) */
};

/* pyoffsets.frame_kind: the shape of the frame chain. */
enum pyoff_frame_kind {
	PYOFF_FRAME_OBJECT = 1, /* tstate->frame: PyFrameObject (<= 3.10) */
	PYOFF_FRAME_CFRAME = 2, /* tstate->cframe->current_frame (3.11, 3.12) */
	PYOFF_FRAME_DIRECT = 3, /* tstate->current_frame (3.13+) */
};

/* pyoffsets.line_format: how co_linetable/co_lnotab is encoded. */
enum pyoff_line_format {
	PYOFF_LINES_LNOTAB = 1,	   /* 3.9 co_lnotab */
	PYOFF_LINES_PEP626 = 2,	   /* 3.10 co_linetable */
	PYOFF_LINES_LOCATIONS = 3, /* 3.11+ co_linetable (location table) */
};

struct profd_pyoffsets {
	__u32 version;     /* (major << 8) | minor, e.g. 0x030b */
	__u32 frame_kind;  /* enum pyoff_frame_kind */
	__u32 instr_kind;  /* enum pyoff_instr_kind */
	__u32 line_format; /* enum pyoff_line_format */

	/* _PyRuntime */
	__u32 runtime_interp_head; /* interpreters.head */
	/* PyInterpreterState */
	__u32 interp_next;
	__u32 interp_tstate_head; /* tstate_head / threads.head */
	/* PyThreadState */
	__u32 tstate_next;
	__u32 tstate_interp;
	__u32 tstate_thread_id;	  /* unsigned long, pthread_self() */
	__u32 tstate_native_thread_id; /* kernel TID, 3.11+ */
	__u32 tstate_frame;		  /* ->frame, ->cframe or ->current_frame */
	/* _PyCFrame (3.11, 3.12) */
	__u32 cframe_current_frame;

	/* PyFrameObject (<= 3.10) or _PyInterpreterFrame (3.11+) */
	__u32 frame_previous;     /* f_back / previous */
	__u32 frame_code;	     /* f_code / f_executable (3.14+: a tagged
				      * _PyStackRef, see PYOFF_STACKREF_TAG) */
	__u32 frame_instr;	     /* f_lasti / prev_instr / instr_ptr */
	__u32 frame_owner;	     /* char owner, 3.11+ */
	__u32 frame_is_entry;     /* bool is_entry, 3.11 only */
	__u32 frame_owner_cstack; /* owner values from this one up are
				      * not Python frames: C-stack shims
				      * (3.12, 3.13) and interpreter-owned
				      * entry/base frames (3.14+); PYOFF_NONE
				      * before 3.12 */
	__u32 frame_tlbc_index;   /* int32 tlbc_index: which per-thread copy
				      * of the bytecode instr_ptr is in
				      * (free-threaded 3.14+), else PYOFF_NONE */

	/* PyCodeObject */
	__u32 code_filename;
	__u32 code_name;
	__u32 code_qualname;	   /* 3.11+ */
	__u32 code_firstlineno; /* int */
	__u32 code_linetable;   /* co_lnotab (3.9) / co_linetable */
	__u32 code_adaptive;	   /* co_code_adaptive, 3.11+ */
	__u32 code_tlbc;	   /* co_tlbc (_PyCodeArray *), with frame_tlbc_index */

	/* PyObject, PyTypeObject, PyBytesObject */
	__u32 object_type; /* ob_type */
	__u32 type_name;   /* tp_name (const char *) */
	__u32 bytes_size;  /* ob_size */
	__u32 bytes_data;  /* ob_sval */

	/* PyUnicodeObject: compact strings keep their characters right
	 * after the header; ASCII ones after the shorter PyASCIIObject. */
	__u32 unicode_length;	/* code points */
	__u32 unicode_state;		/* the state bitfield word */
	__u32 unicode_ascii_data;	/* sizeof(PyASCIIObject) */
	__u32 unicode_compact_data;	/* sizeof(PyCompactUnicodeObject) */
	__u32 unicode_has_ready_bit; /* 1 on <= 3.11 (state.ready) */
	__u32 free_threaded;	     /* 1: a free-threaded build (3.13t+) */
	/* The GIL (struct _gil_runtime_state), for --type gil: embedded in
	 * _PyRuntime at gil_runtime_state (3.9-3.11), or pointed to from
	 * PyInterpreterState at gil_interp_ptr (3.12+, from _Py_DebugOffsets
	 * from 3.13 on); 0 = unknown (free-threaded builds).
	 * Held by tstate T when locked != 0 and last_holder == T. */
	__u32 gil_runtime_state;
	__u32 gil_interp_ptr;
	__u32 gil_last_holder;
	__u32 gil_locked;
	/* Not CPython's but its C library's, for tstate_thread_id (3.9,
	 * 3.10): sizeof(struct pthread) of the process's glibc, which puts
	 * the thread descriptor right below the thread pointer where the TLS
	 * block follows it (arm64: pthread_self() = tp - this); 0 where
	 * unknown.  x86-64 needs none (pthread_self() is the fs base). */
	__u32 pthread_below_tp;
};


/* Value of the py_procs map (key: tgid). */
struct profd_py_proc {
	__u64 runtime_addr; /* &_PyRuntime in the process */
	struct profd_pyoffsets off;
	/* asyncio (3.14+, once _asyncio is loaded): where the thread state
	 * keeps the task it runs now (Py_AsyncioModuleDebugOffsets'
	 * asyncio_running_task), 0 while unknown. */
	__u64 asyncio_task_off;
};

/* Value of the py_threads map (key: tid): the thread's PyThreadState, or
 * 0 with the time of the last failed search (negative cache). */
struct profd_py_thread {
	__u64 tstate;
	__u64 checked_ns;
};

/* A Python stack in the stacks map (kind PROFD_STACK_PYTHON) holds pairs,
 * leaf first: ips[2i] = code object address, ips[2i+1] = instruction
 * offset (low 32 bits, signed) | PROFD_PYFRAME_* flags << 32 | the code
 * object's fingerprint << PROFD_PYFRAME_FP_SHIFT.  A deeper stack keeps
 * its PROFD_MAX_PY_FRAMES outermost frames (the root side, so a
 * flamegraph does not fragment) and sets PROFD_SAMPLE_PYSTACK_TRUNC. */
#define PROFD_PYFRAME_FLAGS_SHIFT 32
#define PROFD_PYFRAME_FLAGS_MASK 0xffu
#define PROFD_PYFRAME_ENTRY 1u /* first frame run by one C-level eval call */
/* Not a frame: the pair after the outermost frame, ips[2i] = the asyncio
 * task the thread runs now (dumps --by-task group by it). */
#define PROFD_PYFRAME_TASK 2u
/* The fingerprint tells apart code objects that had the same address one
 * after the other (a freed one's memory reused): profd_pyfp() of the
 * fields that name the code, read with the frame at sample time, so the
 * new one makes another stack and gets its own name.  0: not read. */
#define PROFD_PYFRAME_FP_SHIFT 40
#define PROFD_PYFRAME_FP_BITS 24

static inline __u64 profd_pyfp_step(__u64 h, __u64 v)
{
	h = (h ^ v) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

/* The fingerprint of a code object: its co_filename, co_name,
 * co_qualname (0 before 3.11) and line table pointers and co_firstlineno,
 * never 0.  They hold for the code object's life.  A successor at a freed
 * one's address has them all alike only at the same first line and where
 * each of its strings and its line table is the old one's own object or
 * one allocated where that one was freed too; else the two fingerprints
 * differ but in one case in 2^24. */
static inline __u32 profd_pyfp(__u64 filename, __u64 name, __u64 qualname, __u64 linetable,
			       __u32 firstlineno)
{
	__u64 h = profd_pyfp_step(firstlineno, filename);
	__u32 fp;

	h = profd_pyfp_step(h, name);
	h = profd_pyfp_step(h, qualname);
	h = profd_pyfp_step(h, linetable);
	fp = (__u32)(h >> (64 - PROFD_PYFRAME_FP_BITS));
	return fp ? fp : 1;
}

/* ---- GPU ----
 * Driver calls (ioctl and poll on accelerator device files, found by
 * device number) and CUDA entry points (uprobes on libcuda/libcudart),
 * each sent as one profd_gpu_event when the call returns. */

/* Which command table decodes a watched device's ioctls. */
enum profd_gpu_class {
	PROFD_GPU_CLASS_GENERIC = 0, /* no table: "ioctl 0x2b on /dev/foo" */
	PROFD_GPU_CLASS_NVIDIA = 1,  /* /dev/nvidia*, /dev/nvidiactl: NV_ESC_* ('F') */
	PROFD_GPU_CLASS_UVM = 2,     /* /dev/nvidia-uvm: UVM_* (plain numbers) */
	PROFD_GPU_CLASS_KFD = 3,     /* /dev/kfd: AMDKFD_IOC_* ('K') */
	PROFD_GPU_CLASS_DRM = 4,     /* /dev/dri/renderD*: DRM_IOCTL_* ('d') */
	PROFD_GPU_CLASS_MAX
};

enum profd_gpu_source {
	PROFD_GPU_SRC_IOCTL = 1,
	PROFD_GPU_SRC_POLL = 2, /* poll or ppoll with a watched fd among the first few */
	PROFD_GPU_SRC_CUDA = 3, /* outermost CUDA API call of the thread */
	PROFD_GPU_SRC_LIBMAP = 4, /* the process mapped a library we probe: attach (no stacks) */
	PROFD_GPU_SRC_COMM = 5, /* outermost call of a communication library (MPI, gloo, NCCL) */
};

/* Key of the gpu_devs map: a kernel dev_t (major << 20 | minor).  A
 * whole major is keyed with PROFD_GPU_ALL_MINORS as the minor. */
#define PROFD_GPU_MINORBITS 20
#define PROFD_GPU_ALL_MINORS 0xfffffu
#define PROFD_GPU_ANY_TYPE 0xffffffffu
#define PROFD_GPU_MAX_POLL_FDS 8 /* pollfds checked per poll call */
#define PROFD_GPU_NV_XFER_NR 211 /* NV_ESC_IOCTL_XFER_CMD: the real command is inside */

/* Value of the gpu_devs map. */
struct profd_gpu_dev {
	__u32 cls;       /* enum profd_gpu_class */
	__u32 ioc_type;  /* _IOC_TYPE every traced command has, or PROFD_GPU_ANY_TYPE */
	__u32 minor_min; /* whole-major entries: the minors watched */
	__u32 minor_max;
};

/* The cmd_filter array: index cls * 256 + _IOC_NR(cmd), value 1 = trace.
 * By command number, never the full value: struct sizes change between
 * driver versions. */
#define PROFD_GPU_CMD_FILTER_ENTRIES (PROFD_GPU_CLASS_MAX * 256)

struct profd_gpu_event {
	__u32 type; /* PROFD_EV_GPU */
	__u32 pid;
	__u32 tid;
	__u32 source;      /* enum profd_gpu_source */
	__u64 time_ns;     /* when the call began, CLOCK_MONOTONIC */
	__u64 duration_ns;
	__u64 kstack_id;   /* 0 today: the syscall or uprobe entry path tells nothing */
	__u64 ustack_id;   /* the caller's stack (CUDA: leaf is the calling function) */
	__u64 pystack_id;
	__u64 arg;         /* CUDA launches: the kernel (cudaLaunchKernel: host stub or handle;
			    * cuLaunchKernelEx: its second argument, the CUfunction) */
	__u32 flags;       /* PROFD_SAMPLE_* (NEW, TRUNC, PYTHON ...) */
	__u32 cls;         /* enum profd_gpu_class (ioctl, poll) */
	__u32 rdev;        /* the device (ioctl, poll), kernel dev_t */
	__u32 nr;          /* _IOC_NR(cmd), XFER unwrapped; CUDA: enum profd_cuda_fn */
	__u32 cmd;         /* the full ioctl command (XFER: the inner one), for display */
	__s32 ret;         /* syscall return value; CUDA: the low 32 bits of the result */
	char comm[PROFD_COMM_LEN];
};

/* A kernel handle made (cuModuleGetFunction(&f, mod, name),
 * cuLibraryGetKernel(&k, lib, name): handle, owner and name;
 * cuKernelGetFunction(&f, k): handle and owner = k, no name) or its
 * owner dropped (cuModuleUnload(mod), cuLibraryUnload(lib): owner).
 * Sent when the call returns successfully (unloads: at entry). */
#define PROFD_CUDA_NAME_LEN 240
struct profd_cuda_name_event {
	__u32 type; /* PROFD_EV_CUDA_NAME */
	__u32 pid;
	__u32 tid;
	__u32 fn;     /* enum profd_cuda_fn */
	__u64 handle; /* the CUfunction or CUkernel made; 0 for unloads */
	__u64 owner;  /* its CUmodule / CUlibrary (CUkernel for cuKernelGetFunction) */
	__u32 name_len; /* bytes in name without the NUL; PROFD_CUDA_NAME_LEN - 1: cut */
	__u32 _pad;
	char comm[PROFD_COMM_LEN]; /* finds an exited process's entry, as for launches */
	char name[PROFD_CUDA_NAME_LEN];
};

/* CUDA entry points, the uprobe's cookie.  Append only. */
enum profd_cuda_fn {
	PROFD_CUDA_NONE = 0,
	/* libcuda (driver API) */
	PROFD_CUDA_cuLaunchKernel,
	PROFD_CUDA_cuLaunchKernel_ptsz,
	PROFD_CUDA_cuLaunchKernelEx,
	PROFD_CUDA_cuLaunchKernelEx_ptsz,
	PROFD_CUDA_cuLaunchCooperativeKernel,
	PROFD_CUDA_cuGraphLaunch,
	PROFD_CUDA_cuGraphLaunch_ptsz,
	PROFD_CUDA_cuMemAlloc_v2,
	PROFD_CUDA_cuMemAllocManaged,
	PROFD_CUDA_cuMemAllocHost_v2,
	PROFD_CUDA_cuMemAllocAsync,
	PROFD_CUDA_cuMemFree_v2,
	PROFD_CUDA_cuMemcpy,
	PROFD_CUDA_cuMemcpyAsync,
	PROFD_CUDA_cuMemcpyHtoD_v2,
	PROFD_CUDA_cuMemcpyDtoH_v2,
	PROFD_CUDA_cuMemcpyDtoD_v2,
	PROFD_CUDA_cuMemcpyHtoDAsync_v2,
	PROFD_CUDA_cuMemcpyDtoHAsync_v2,
	PROFD_CUDA_cuMemcpyHtoD_v2_ptds,
	PROFD_CUDA_cuMemcpyDtoH_v2_ptds,
	PROFD_CUDA_cuCtxSynchronize,
	PROFD_CUDA_cuStreamSynchronize,
	PROFD_CUDA_cuStreamSynchronize_ptsz,
	PROFD_CUDA_cuEventSynchronize,
	/* libcudart (runtime API) */
	PROFD_CUDA_cudaLaunchKernel,
	PROFD_CUDA_cudaLaunchKernel_ptsz,
	PROFD_CUDA_cudaLaunchCooperativeKernel,
	PROFD_CUDA_cudaGraphLaunch,
	PROFD_CUDA_cudaMalloc,
	PROFD_CUDA_cudaMallocManaged,
	PROFD_CUDA_cudaMallocHost,
	PROFD_CUDA_cudaMallocAsync,
	PROFD_CUDA_cudaFree,
	PROFD_CUDA_cudaMemcpy,
	PROFD_CUDA_cudaMemcpy_ptds,
	PROFD_CUDA_cudaMemcpyAsync,
	PROFD_CUDA_cudaMemcpyAsync_ptsz,
	PROFD_CUDA_cudaDeviceSynchronize,
	PROFD_CUDA_cudaStreamSynchronize,
	PROFD_CUDA_cudaStreamSynchronize_ptsz,
	PROFD_CUDA_cudaEventSynchronize,
	/* libcuda: where kernel handles are made and dropped, probed for
	 * the names of launches (profd_cuda_name_event), not timed */
	PROFD_CUDA_cuModuleGetFunction,
	PROFD_CUDA_cuLibraryGetKernel,
	PROFD_CUDA_cuKernelGetFunction,
	PROFD_CUDA_cuModuleUnload,
	PROFD_CUDA_cuLibraryUnload,
	PROFD_CUDA_FN_MAX
};

/* Blocking calls of communication libraries, the cookie of their
 * uprobes (on_comm_enter): where the ranks of a job wait for each other.
 * Sent as profd_gpu_event with source PROFD_GPU_SRC_COMM and nr the
 * function.  Append only; names in userspace/lib/gpu/comm_names.c. */
enum profd_comm_fn {
	PROFD_COMM_NONE = 0,
	/* MPI (Open MPI's libmpi.so.40, MPICH's libmpi.so.12 / libmpich):
	 * collectives, waits, blocking point-to-point */
	PROFD_COMM_MPI_Allreduce,
	PROFD_COMM_MPI_Reduce,
	PROFD_COMM_MPI_Bcast,
	PROFD_COMM_MPI_Barrier,
	PROFD_COMM_MPI_Allgather,
	PROFD_COMM_MPI_Allgatherv,
	PROFD_COMM_MPI_Gather,
	PROFD_COMM_MPI_Gatherv,
	PROFD_COMM_MPI_Scatter,
	PROFD_COMM_MPI_Scatterv,
	PROFD_COMM_MPI_Alltoall,
	PROFD_COMM_MPI_Alltoallv,
	PROFD_COMM_MPI_Reduce_scatter,
	PROFD_COMM_MPI_Reduce_scatter_block,
	PROFD_COMM_MPI_Scan,
	PROFD_COMM_MPI_Exscan,
	PROFD_COMM_MPI_Wait,
	PROFD_COMM_MPI_Waitall,
	PROFD_COMM_MPI_Waitany,
	PROFD_COMM_MPI_Waitsome,
	PROFD_COMM_MPI_Recv,
	PROFD_COMM_MPI_Send,
	PROFD_COMM_MPI_Ssend,
	PROFD_COMM_MPI_Sendrecv,
	PROFD_COMM_MPI_Probe,
	/* PyTorch's c10d (libtorch_cpu): the wait on a collective's work,
	 * gloo's included (its ops run on a worker thread) */
	PROFD_COMM_c10d_Work_wait,
	/* NCCL (libnccl.so.2): collectives and group calls, each an enqueue
	 * on the GPU's stream (the wait is the CUDA synchronization) */
	PROFD_COMM_ncclAllReduce,
	PROFD_COMM_ncclBroadcast,
	PROFD_COMM_ncclReduce,
	PROFD_COMM_ncclAllGather,
	PROFD_COMM_ncclReduceScatter,
	PROFD_COMM_ncclSend,
	PROFD_COMM_ncclRecv,
	PROFD_COMM_ncclGroupEnd,
	PROFD_COMM_ncclCommInitRank,
	PROFD_COMM_FN_MAX
};

/* GPU counters, one slot each in the per-CPU gpu_counters map. */
enum profd_gpu_counter {
	PROFD_GPU_CNT_IOCTL_SEEN = 0, /* ioctl calls on a watched device (command filter passed) */
	PROFD_GPU_CNT_POLL_SEEN,      /* poll calls with a watched fd */
	PROFD_GPU_CNT_CUDA_SEEN,      /* outermost CUDA API calls */
	PROFD_GPU_CNT_CUDA_NESTED,    /* CUDA calls made inside another (not counted) */
	PROFD_GPU_CNT_SENT,           /* events submitted */
	PROFD_GPU_CNT_RB_FULL,        /* events dropped: ringbuf full */
	PROFD_GPU_CNT_INFLIGHT_FULL,  /* calls not timed: in-flight map full */
	PROFD_GPU_CNT_LIBMAP,         /* libcuda* mappings reported */
	PROFD_GPU_CNT_NAMES,          /* kernel handles made or dropped, reported */
	PROFD_GPU_CNT_COMM_SEEN,      /* outermost communication-library calls */
	PROFD_GPU_CNT_COMM_NESTED,    /* communication calls made inside another */
	PROFD_GPU_CNT_MAX
};


#endif
