/* protocol: profd's control protocol, spoken between the daemon and
 * profctl over a Unix stream socket.
 *
 * Every message is a 16-byte little-endian header followed by `length`
 * payload bytes:
 *
 *   u32 magic   'P','R','F','D' (PROTO_MAGIC)
 *   u16 version PROTO_VERSION
 *   u16 type    enum proto_type
 *   u32 length  payload bytes
 *   u32 flags   0
 *
 * A payload is a list of TLV attributes (u16 tag, u16 reserved 0,
 * u32 length, value).  Integers are little endian and exactly 4 or 8
 * bytes; strings are bytes without a NUL (UTF-8 by convention, not
 * validated: symbol names are whatever the binary holds); a nested
 * attribute's value is itself an attribute list.  Decoders skip tags
 * they do not know, so fields and message types can be added freely;
 * list fields repeat their tag, any other field appearing twice is
 * malformed.
 *
 * Bump PROTO_VERSION when the header changes, or when an existing type
 * or attribute changes its encoding or meaning.  Adding a message type
 * or an attribute is compatible and needs no bump.  Tag and type values
 * travel on the wire: append only, never renumber.
 */
#ifndef PROFD_PROTOCOL_H
#define PROFD_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "stackset.h"

#define PROTO_MAGIC 0x44465250u /* "PRFD" read as a little-endian u32 */
#define PROTO_VERSION 1
#define PROTO_HDR_SIZE 16

#define PROTO_MAX_REQUEST (64u * 1024)
#define PROTO_MAX_RESPONSE (256u * 1024 * 1024)
#define PROTO_MAX_STRING (64u * 1024) /* bytes, any one string */
#define PROTO_MAX_DEPTH 4096          /* frames in one stack */
#define PROTO_MAX_MODULES (1u << 20)  /* binaries in one stackset */
#define PROTO_MAX_BUILD_ID 256        /* hex digits: a 128-byte build-id */

/* Requests are 1..127, responses 128..255.  The daemon answers a
 * request type it does not know with PROTO_RESP_ERROR (EOPNOTSUPP). */
enum proto_type {
	PROTO_REQ_LIST = 1,
	PROTO_REQ_STATS = 2,
	PROTO_REQ_DUMP = 3,
	/* Every thread's current stack: a dump request naming one pid
	 * (PROTO_STACKS_* flags); answered with PROTO_RESP_STACKS. */
	PROTO_REQ_STACKS = 4,
	/* next: RECORD, TOP, DIFF */

	PROTO_RESP_BASE = 128,
	PROTO_RESP_ERROR = 128,
	PROTO_RESP_LIST = 129,
	PROTO_RESP_STATS = 130,
	PROTO_RESP_DUMP = 131,
	/* A stackset with one stack (count 1) per thread, root first; its
	 * root frame (FRAME_ROOT) is the thread's header, tab-separated:
	 * "tid<TAB>name<TAB>state<TAB>wait<TAB>source<TAB>age_ns<TAB>from<TAB>pyname"
	 * (state as /proc's stat letter, wait the kernel wait channel or "",
	 * source where the stack comes from in words, age_ns how old it is,
	 * from the same as a word: "switch-out", "cpu-sample", "read-now"
	 * (read from the process for this answer) or "" (no stack); added
	 * last so that older clients read the first six as before), then
	 * pyname: Python's name of the thread (threading.Thread.name, read
	 * from the process now) or "", after from for the same reason). */
	PROTO_RESP_STACKS = 132,
	/* A dump request with PROTO_DUMP_TIMELINE: the selection's recent
	 * events in time order (proto_tl_attr). */
	PROTO_RESP_TIMELINE = 133,
};

/* PROTO_REQ_STACKS flags.  ASYNC: the process's asyncio tasks instead of
 * its threads (CPython 3.14+): one stack per task, its root frame
 * "address<TAB>name<TAB>tid<TAB>awaited_by" (tid: the thread running it
 * now, 0 when suspended; awaited_by: comma-separated names of the tasks
 * waiting for it), then its coroutine chain, outermost first. */
#define PROTO_STACKS_ASYNC 1u
/* LOCALS: each Python frame read now is followed (leafward) by its
 * arguments and local variables, FRAME_LOCAL frames named
 * "flags<TAB>name<TAB>repr": flags a letter each, 'a' an argument, 'c' a
 * cell (captured by an inner function), 'f' a free variable (captured
 * from an outer one), "-" none; repr a bounded, escaped repr without tabs
 * or newlines.  Only to a client that asks: an older one never sees the
 * kind. */
#define PROTO_STACKS_LOCALS 2u

/* Attribute tags, one namespace per message or nested attribute. */
enum proto_dump_attr {
	PROTO_DUMP_A_PID = 1, /* u32, repeated */
	PROTO_DUMP_A_COMM = 2,
	PROTO_DUMP_A_EXE = 3,
	PROTO_DUMP_A_TYPE = 4,
	PROTO_DUMP_A_SINCE = 5, /* u64 */
	PROTO_DUMP_A_UNTIL = 6, /* u64 */
	PROTO_DUMP_A_FLAGS = 7, /* u32 */
	/* Workload selectors (each process's identity, as listed): */
	PROTO_DUMP_A_SERVICE = 8,
	PROTO_DUMP_A_UNIT = 9,
	PROTO_DUMP_A_CONTAINER = 10, /* the id or a prefix of it */
	PROTO_DUMP_A_CGROUP = 11,    /* the path, or a directory above it */
};

enum proto_list_attr {
	PROTO_LIST_A_PROC = 1, /* nested proto_proc_attr, repeated */
	/* nested proto_type_attr, repeated: the profile types profd counts,
	 * in the order of every process's PROTO_PROC_A_TOTALS */
	PROTO_LIST_A_TYPE = 2,
	PROTO_LIST_A_RATE_HZ = 3,     /* u32: CPU samples a second (absent: unknown) */
	PROTO_LIST_A_COMM_TRACED = 4, /* u32 1: collectives traced, comm-calls counts */
};

enum proto_proc_attr {
	PROTO_PROC_A_PID = 1, /* u32, required */
	PROTO_PROC_A_UID = 2,
	PROTO_PROC_A_FLAGS = 3,
	PROTO_PROC_A_START_TIME = 4, /* u64 */
	PROTO_PROC_A_SAMPLES = 5,    /* u64 CPU samples */
	PROTO_PROC_A_COMM = 6,
	PROTO_PROC_A_EXE = 7,
	PROTO_PROC_A_RSS = 8,        /* u64 bytes, live processes; absent: unknown */
	PROTO_PROC_A_RSS_HISTORY = 9, /* u64 pairs (CLOCK_REALTIME ns, bytes), oldest first */
	PROTO_PROC_A_EXIT_NS = 10,   /* u64 CLOCK_REALTIME, exited processes; absent: unknown */
	/* u64 array: the weight counted for the process under each
	 * PROTO_LIST_A_TYPE, in that type's unit and order; missing ones
	 * are 0.  Two's complement where weights can be negative (mmap). */
	PROTO_PROC_A_TOTALS = 11,
	/* Its workload, strings absent when unknown: PROTO_PROC_A_IDENT +
	 * enum proto_ident (service, unit, ... as proto_ident_name says). */
	PROTO_PROC_A_IDENT = 12, /* 12..31 (PROTO_IDENT_N of them used) */
	PROTO_PROC_A_PPID = 32,  /* u32: its parent at exec (jobs are found by it); absent unknown */
};

/* A process's workload fields on the wire, in tag order. */
enum proto_ident {
	PROTO_IDENT_SERVICE,
	PROTO_IDENT_UNIT,
	PROTO_IDENT_RUNTIME,
	PROTO_IDENT_CONTAINER,
	PROTO_IDENT_POD,
	PROTO_IDENT_QOS,
	PROTO_IDENT_SCRIPT,
	PROTO_IDENT_CGROUP,
	PROTO_IDENT_RANK,	/* its rank in a distributed job (launcher's variables) */
	PROTO_IDENT_LOCAL_RANK,
	PROTO_IDENT_WORLD_SIZE,
	PROTO_IDENT_JOB, /* the job's id on every host ("slurm:42.0", "pmix:...") */
	PROTO_IDENT_N
};
/* "service", "unit", "runtime", "container", "pod", "qos", "script",
 * "cgroup" (JSON keys, labels); NULL past the end. */
const char *proto_ident_name(int i);

enum proto_type_attr {
	PROTO_TYPE_A_NAME = 1, /* "cpu", "off-cpu", ... as a dump's type, required */
	PROTO_TYPE_A_UNIT = 2, /* "samples", "nanoseconds", "bytes", "calls", required */
};

enum proto_stats_attr {
	PROTO_STATS_A_STAT = 1, /* nested proto_stat_attr, repeated */
};

enum proto_stat_attr {
	PROTO_STAT_A_NAME = 1,  /* required */
	PROTO_STAT_A_VALUE = 2, /* u64, required */
};

enum proto_error_attr {
	PROTO_ERROR_A_CODE = 1, /* u32 holding a positive errno, required */
	PROTO_ERROR_A_MESSAGE = 2,
};

/* A stackset: frame ids in a stack are indices into the FRAME
 * attributes in message order; a frame's module is an index + 1 into the
 * MODULE attributes in message order.  Encoders put modules before the
 * frames, decoders accept any order. */
enum proto_ss_attr {
	PROTO_SS_A_TITLE = 1,
	PROTO_SS_A_UNIT = 2,
	PROTO_SS_A_TYPE = 3,
	PROTO_SS_A_START_NS = 4, /* u64 */
	PROTO_SS_A_END_NS = 5,   /* u64 */
	PROTO_SS_A_RATE_HZ = 6,  /* u32 */
	PROTO_SS_A_FRAME = 7,    /* nested proto_frame_attr, repeated */
	PROTO_SS_A_STACK = 8,    /* nested proto_stack_attr, repeated */
	PROTO_SS_A_MODULE = 9,   /* nested proto_module_attr, repeated */
	PROTO_SS_A_WORKLOAD = 10, /* "key=value" lines: stackset.workload */
};

enum proto_frame_attr {
	PROTO_FRAME_A_KIND = 1,   /* u32 enum frame_kind, required */
	PROTO_FRAME_A_NAME = 2,   /* required */
	PROTO_FRAME_A_MODULE = 3, /* u32 module index + 1; absent or 0 = none */
};

enum proto_module_attr {
	PROTO_MODULE_A_PATH = 1,     /* required */
	PROTO_MODULE_A_BUILD_ID = 2, /* lowercase hex; absent = "" */
};

enum proto_stack_attr {
	PROTO_STACK_A_COUNT = 1,  /* u64, required */
	PROTO_STACK_A_FRAMES = 2, /* u32 array, root first, required */
};

/* A timeline: a stackset (nested, as in a dump) whose stacks the events
 * name by index in message order, the type names and threads they name by
 * index, and the events as u64 quadruples (start ns CLOCK_REALTIME,
 * weight, thread << 32 | stack, type), in repeated EVENTS attributes of
 * at most PROTO_TL_EVENTS_CHUNK events each. */
enum proto_tl_attr {
	PROTO_TL_A_STACKSET = 1, /* nested proto_ss_attr, required */
	PROTO_TL_A_TYPE = 2,     /* string, repeated */
	PROTO_TL_A_THREAD = 3,   /* nested proto_tl_thread_attr, repeated */
	PROTO_TL_A_EVENTS = 4,   /* u64 array, repeated */
	PROTO_TL_A_DROPPED = 5,  /* u64: events the daemon's bounds lost */
	PROTO_TL_A_START_NS = 6, /* u64 */
	PROTO_TL_A_END_NS = 7,   /* u64 */
	PROTO_TL_A_RATE_HZ = 8,  /* u32 */
};

enum proto_tl_thread_attr {
	PROTO_TL_THREAD_A_PID = 1, /* u32, required */
	PROTO_TL_THREAD_A_TID = 2, /* u32, required */
	PROTO_TL_THREAD_A_NAME = 3,
	PROTO_TL_THREAD_A_PYNAME = 4, /* string: Python's name of it, where known */
};

#define PROTO_TL_EVENTS_CHUNK 1024
#define PROTO_TL_MAX_THREADS 65536 /* a decoder refuses more */

/* Error codes used throughout: -EINVAL bad argument, -EPROTO malformed
 * bytes or a wrong magic/version, -EMSGSIZE a length over its limit,
 * -ENOMEM.  Encoders append to a buf and leave it as it was on failure;
 * decoders take untrusted bytes and leave their output empty on failure. */

struct proto_hdr {
	uint32_t magic;
	uint16_t version, type;
	uint32_t length, flags;
};

/* Parse and check a header (not the payload that follows).  On failure
 * *out still holds what was read, so a caller can report the peer's
 * version. */
int proto_parse_header(const void *data, size_t len, uint32_t max_payload, struct proto_hdr *out);
/* Check a whole message held in memory: a good header followed by
 * exactly hdr->length bytes; *payload points into data. */
int proto_parse_message(const void *data, size_t len, uint32_t max_payload, struct proto_hdr *hdr,
			const void **payload);
void proto_put_header(struct buf *b, uint16_t type, uint32_t length);

/* Blocking I/O on a stream socket under one deadline for the whole
 * message (timeout_ms < 0 waits forever).  EINTR-safe; copes with
 * partial reads and writes; never raises SIGPIPE.
 * proto_send: -EMSGSIZE if the payload is over the limit for its type.
 * proto_recv: -ETIMEDOUT, -ECONNRESET on EOF, -EPROTO bad magic or
 * version, -EMSGSIZE length over max_payload (nothing read past the
 * header).  The payload buffer only grows as bytes arrive. */
int proto_send(int fd, uint16_t type, const struct buf *payload, int timeout_ms);
int proto_recv(int fd, uint16_t *type, struct buf *payload, uint32_t max_payload, int timeout_ms);
/* Human text for a -errno from this module (either sign accepted). */
const char *proto_strerror(int err);
/* "LIST", "RESP_DUMP", ... or "UNKNOWN"; for logs. */
const char *proto_type_name(uint16_t type);

#define PROTO_DUMP_BY_THREAD (1u << 0)
#define PROTO_DUMP_PYTHON_ONLY (1u << 1)
#define PROTO_DUMP_ALL (1u << 2) /* whole machine, root frame per process */
/* The selected processes and every descendant the daemon knows of (by
 * parent pid and start time), a root frame per process. */
#define PROTO_DUMP_SUBPROCESSES (1u << 3)
/* Each asyncio task's samples under a frame of its own ("[task NAME]"). */
#define PROTO_DUMP_BY_TASK (1u << 4)
/* Decoders keep unknown flag bits; the daemon refuses them so a newer
 * profctl is told instead of silently ignored. */
/* The selection's timeline (PROTO_RESP_TIMELINE) instead of a profile:
 * every type, event by event; type and the BY_* flags do not apply. */
#define PROTO_DUMP_TIMELINE (1u << 5)
#define PROTO_DUMP_KNOWN_FLAGS \
	(PROTO_DUMP_BY_THREAD | PROTO_DUMP_PYTHON_ONLY | PROTO_DUMP_ALL | PROTO_DUMP_SUBPROCESSES | \
	 PROTO_DUMP_BY_TASK | PROTO_DUMP_TIMELINE)

struct proto_dump_req {
	uint32_t *pids;
	size_t npids;
	char *comm;
	char *exe;
	char *type; /* "cpu" when absent on the wire */
	uint64_t since_ns, until_ns; /* CLOCK_REALTIME ns, 0 = open */
	uint32_t flags;
	char *service, *unit, *container, *cgroup; /* workload selectors; NULL: none */
};

int proto_encode_dump_req(struct buf *b, const struct proto_dump_req *r);
int proto_decode_dump_req(const void *data, size_t len, struct proto_dump_req *r);
void proto_dump_req_free(struct proto_dump_req *r);

#define PROTO_PROC_EXITED (1u << 0)
#define PROTO_PROC_PYTHON (1u << 1)

struct proto_proc {
	uint32_t pid, uid, flags;
	uint32_t ppid;       /* 0 unknown */
	uint64_t start_time; /* boot ticks from /proc/PID/stat */
	uint64_t exit_ns;    /* CLOCK_REALTIME, exited processes; 0 unknown */
	uint64_t samples;    /* CPU samples */
	/* Per profile type (proto_list.types, same order): ntotals weights,
	 * the ones past it 0; NULL from a profd that sends none. */
	uint64_t *totals;
	uint32_t ntotals;
	uint64_t rss_bytes; /* resident now (live processes); 0 unknown */
	/* Resident set over time: nrss pairs (CLOCK_REALTIME ns, bytes),
	 * oldest first; NULL when none. */
	uint64_t *rss_history;
	uint32_t nrss;
	char *comm; /* NULL when unknown */
	char *exe;  /* NULL when unknown */
	char *ident[PROTO_IDENT_N]; /* the workload's fields; NULL when unknown */
};

#define PROTO_RSS_POINTS_MAX 1024 /* a decoder refuses more per process */
#define PROTO_TYPES_MAX 64        /* profile types in a list; a decoder refuses more */

struct proto_list_type {
	char *name, *unit;
};

struct proto_list {
	struct proto_proc *procs;
	size_t n;
	struct proto_list_type *types; /* what proto_proc.totals count */
	size_t ntypes;
	uint32_t rate_hz; /* a CPU sample is 1/rate_hz s; 0: unknown */
	/* Collectives traced (profd --collectives): comm-calls counts calls;
	 * else the comm profile is read from samples and counts none. */
	bool comm_traced;
};

int proto_encode_list(struct buf *b, const struct proto_list *l);
int proto_decode_list(const void *data, size_t len, struct proto_list *l);
void proto_list_free(struct proto_list *l);
/* The index of the type named name in l->types, or -1. */
int proto_list_type_index(const struct proto_list *l, const char *name);
/* p's weight of type t (an index in its list's types); 0 when it has none. */
uint64_t proto_proc_total(const struct proto_proc *p, int t);

/* Stats: ordered name/value pairs so the daemon can add counters freely.
 * Start from a zeroed struct. */
struct proto_stat {
	char *name;
	uint64_t value;
};

struct proto_stats {
	struct proto_stat *items;
	size_t n;
};

int proto_stats_add(struct proto_stats *s, const char *name, uint64_t value);
int proto_encode_stats(struct buf *b, const struct proto_stats *s);
int proto_decode_stats(const void *data, size_t len, struct proto_stats *s);
void proto_stats_free(struct proto_stats *s);

struct proto_error {
	int32_t code;  /* positive errno */
	char *message; /* NULL when the peer sent none */
};

/* message may be NULL. */
int proto_encode_error(struct buf *b, int32_t code, const char *message);
int proto_decode_error(const void *data, size_t len, struct proto_error *e);
void proto_error_free(struct proto_error *e);

/* A dump response carries a whole stackset.  Decoding checks frame ids,
 * kinds, module indices, build-ids (lowercase hex, PROTO_MAX_BUILD_ID),
 * module count (PROTO_MAX_MODULES) and depth (PROTO_MAX_DEPTH) and
 * rebuilds the set through stackset_module/stackset_intern_in/
 * stackset_add, so duplicates merge.  NULL on failure
 * with *err (if non-NULL) and errno set. */
int proto_encode_stackset(struct buf *b, const struct stackset *ss);
struct stackset *proto_decode_stackset(const void *data, size_t len, int *err);

/* A timeline response (protocol_timeline.c).  Decoding checks every
 * index an event holds; NULL on failure with *err (if non-NULL) set. */
struct tlset;
int proto_encode_timeline(struct buf *b, const struct tlset *t);
struct tlset *proto_decode_timeline(const void *data, size_t len, int *err);

#endif
