#include "pyoffsets.h"

#include <errno.h>
#include <string.h>

#include "log.h"

#define N PYOFF_NONE

/* Fields shared by every supported version (x86_64, 8-byte pointers). */
/* clang-format off */
#define PYOFF_COMMON                                                            \
	.interp_next = 0, .tstate_next = 8, .tstate_interp = 16,                \
	.object_type = 8, .type_name = 24, .bytes_size = 16, .bytes_data = 32,  \
	.unicode_length = 16, .unicode_state = 32,                              \
	.frame_tlbc_index = N, .code_tlbc = N,                                  \
	.gil_last_holder = 8, .gil_locked = 16

/* Python 3.9: Include/cpython/{pystate,frameobject,code}.h,
 * Include/internal/{pycore_runtime,pycore_interp}.h. */
static const struct profd_pyoffsets py39 = {
	PYOFF_COMMON,
	.version = 0x0309,
	.gil_runtime_state = 0x160, /* _PyRuntime.ceval.gil */
	.frame_kind = PYOFF_FRAME_OBJECT,
	.instr_kind = PYOFF_INSTR_LASTI_BYTES,
	.line_format = PYOFF_LINES_LNOTAB,
	.runtime_interp_head = 32,
	.interp_tstate_head = 8,
	.tstate_thread_id = 176,
	.tstate_native_thread_id = N,
	.tstate_frame = 24,
	.cframe_current_frame = N,
	.frame_previous = 24,
	.frame_code = 32,
	.frame_instr = 104,
	.frame_owner = N,
	.frame_is_entry = N,
	.frame_owner_cstack = N,
	.code_filename = 104,
	.code_name = 112,
	.code_qualname = N,
	.code_firstlineno = 40,
	.code_linetable = 120, /* co_lnotab */
	.code_adaptive = N,
	.unicode_ascii_data = 48,
	.unicode_compact_data = 72,
	.unicode_has_ready_bit = 1,
};

/* Python 3.10: as 3.9 but f_lasti moved and counts code units, and
 * co_lnotab became the PEP 626 co_linetable in the same slot. */
static const struct profd_pyoffsets py310 = {
	PYOFF_COMMON,
	.version = 0x030a,
	.gil_runtime_state = 0x160,
	.frame_kind = PYOFF_FRAME_OBJECT,
	.instr_kind = PYOFF_INSTR_LASTI_UNITS,
	.line_format = PYOFF_LINES_PEP626,
	.runtime_interp_head = 32,
	.interp_tstate_head = 8,
	.tstate_thread_id = 176,
	.tstate_native_thread_id = N,
	.tstate_frame = 24,
	.cframe_current_frame = N,
	.frame_previous = 24,
	.frame_code = 32,
	.frame_instr = 96,
	.frame_owner = N,
	.frame_is_entry = N,
	.frame_owner_cstack = N,
	.code_filename = 104,
	.code_name = 112,
	.code_qualname = N,
	.code_firstlineno = 40,
	.code_linetable = 120,
	.code_adaptive = N,
	.unicode_ascii_data = 48,
	.unicode_compact_data = 72,
	.unicode_has_ready_bit = 1,
};

/* Python 3.11: _PyInterpreterFrame behind tstate->cframe; Python-to-Python
 * calls stay in one C eval loop, whose first frame has is_entry set. */
static const struct profd_pyoffsets py311 = {
	PYOFF_COMMON,
	.version = 0x030b,
	.gil_runtime_state = 0x168,
	.frame_kind = PYOFF_FRAME_CFRAME,
	.instr_kind = PYOFF_INSTR_PREV_PTR,
	.line_format = PYOFF_LINES_LOCATIONS,
	.runtime_interp_head = 40,
	.interp_tstate_head = 16, /* threads.head */
	.tstate_thread_id = 152,
	.tstate_native_thread_id = 160,
	.tstate_frame = 56, /* cframe */
	.cframe_current_frame = 8,
	.frame_previous = 48,
	.frame_code = 32,
	.frame_instr = 56,
	.frame_owner = 69,
	.frame_is_entry = 68,
	.frame_owner_cstack = N,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_firstlineno = 72,
	.code_linetable = 136,
	.code_adaptive = 184,
	.unicode_ascii_data = 48,
	.unicode_compact_data = 72,
	.unicode_has_ready_bit = 1,
};

/* Python 3.12: entry into the C eval loop pushes a shim frame owned by
 * the C stack (owner 3); PyASCIIObject lost its wstr pointer. */
static const struct profd_pyoffsets py312 = {
	PYOFF_COMMON,
	.version = 0x030c,
	.gil_interp_ptr = 0x180, /* interp->ceval.gil */
	.frame_kind = PYOFF_FRAME_CFRAME,
	.instr_kind = PYOFF_INSTR_PREV_PTR,
	.line_format = PYOFF_LINES_LOCATIONS,
	.runtime_interp_head = 40,
	.interp_tstate_head = 72, /* threads.head */
	.tstate_thread_id = 136,
	.tstate_native_thread_id = 144,
	.tstate_frame = 56, /* cframe */
	.cframe_current_frame = 0,
	.frame_previous = 8,
	.frame_code = 0,
	.frame_instr = 56,
	.frame_owner = 70,
	.frame_is_entry = N,
	.frame_owner_cstack = 3,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_firstlineno = 68,
	.code_linetable = 136,
	.code_adaptive = 192,
	.unicode_ascii_data = 40,
	.unicode_compact_data = 56,
	.unicode_has_ready_bit = 0,
};
/* clang-format on */

const struct profd_pyoffsets *pyoffsets_builtin(int major, int minor)
{
	if (major != 3)
		return NULL;
	switch (minor) {
	case 9:
		return &py39;
	case 10:
		return &py310;
	case 11:
		return &py311;
	case 12:
		return &py312;
	default:
		return NULL;
	}
}

/* _Py_DebugOffsets, as bytes in the target: every member is a uint64_t and
 * most groups start with the size of their struct.  The layout of the block
 * itself changes between minor versions (3.14 and 3.15 insert members in
 * the middle), never within one, so each minor version's layout is written
 * down below from its Include/internal/pycore_debug_offsets.h; the values
 * in it, the offsets the walker uses, are always the process's own.  Only
 * the groups up to the unicode one are described: what follows is unused.
 * Members named _n are there to keep the layout and are not read. */
struct dbg_runtime {
	uint64_t size, finalizing, interpreters_head;
};

/* ceval_gil: where interp->ceval.gil (a pointer) is; gil: where the
 * interpreter's own _gil is, gil_locked and gil_holder its members (both
 * from the start of the interpreter state). */
struct dbg_interp313 {
	uint64_t size, id, next, threads_head, _n[4], ceval_gil, gil, gil_enabled, gil_locked;
	uint64_t gil_holder;
};

/* 3.14 adds threads.main after threads.head, and two generation counters
 * at the end. */
struct dbg_interp314 {
	uint64_t size, id, next, threads_head, _n[5], ceval_gil, gil, gil_enabled, gil_locked;
	uint64_t gil_holder, _n2[2];
};

struct dbg_tstate313 {
	uint64_t size, prev, next, interp, current_frame, thread_id;
	uint64_t native_thread_id, datastack_chunk, status;
};

/* 3.15 adds base_frame and two last_profiled_frame members before
 * thread_id, and four after status. */
struct dbg_tstate315 {
	uint64_t size, prev, next, interp, current_frame, _n1[3], thread_id;
	uint64_t native_thread_id, datastack_chunk, status, _n2[4];
};

struct dbg_frame313 {
	uint64_t size, previous, executable, instr_ptr, localsplus, owner;
};

/* 3.14 adds stackpointer and tlbc_index (free-threaded builds). */
struct dbg_frame314 {
	uint64_t size, previous, executable, instr_ptr, localsplus, owner;
	uint64_t stackpointer, tlbc_index;
};

struct dbg_code313 {
	uint64_t size, filename, name, qualname, linetable, firstlineno;
	uint64_t argcount, localsplusnames, localspluskinds, adaptive;
};

/* 3.14 adds co_tlbc (free-threaded builds). */
struct dbg_code314 {
	uint64_t size, filename, name, qualname, linetable, firstlineno;
	uint64_t argcount, localsplusnames, localspluskinds, adaptive, tlbc;
};

struct dbg_object {
	uint64_t size, ob_type;
};

struct dbg_type {
	uint64_t size, tp_name, _n[2];
};

struct dbg_bytes {
	uint64_t size, ob_size, ob_sval;
};

struct dbg_unicode313 {
	uint64_t size, state, length, ascii_size;
};

/* 3.15 says sizeof(PyCompactUnicodeObject) itself. */
struct dbg_unicode315 {
	uint64_t size, state, length, ascii_size, compact_size;
};

/* What follows unicode, up to the generator group (3.14+): the gc
 * group is 2 members on 3.14, 5 on 3.15. */
struct dbg_gen {
	uint64_t size, gi_name, gi_iframe, gi_frame_state;
};

#define DBG_HEAD                                                                                   \
	char cookie[8];                                                                            \
	uint64_t version;                                                                          \
	uint64_t free_threaded;                                                                    \
	struct dbg_runtime runtime

struct dbg313 {
	DBG_HEAD;
	struct dbg_interp313 interp;
	struct dbg_tstate313 tstate;
	struct dbg_frame313 frame;
	struct dbg_code313 code;
	struct dbg_object object;
	struct dbg_type type;
	uint64_t tuple[3], list[3], dict[3], flt[2], lng[3];
	struct dbg_bytes bytes;
	struct dbg_unicode313 unicode;
};

/* 3.14: a set group before the dict one. */
struct dbg314 {
	DBG_HEAD;
	struct dbg_interp314 interp;
	struct dbg_tstate313 tstate;
	struct dbg_frame314 frame;
	struct dbg_code314 code;
	struct dbg_object object;
	struct dbg_type type;
	uint64_t tuple[3], list[3], set[4], dict[3], flt[2], lng[3];
	struct dbg_bytes bytes;
	struct dbg_unicode313 unicode;
	uint64_t gc[2];
	struct dbg_gen gen;
};

/* 3.15: an err_stackitem group after the thread state, tp_basicsize and
 * tp_dictoffset in the type group, then a heap type group. */
struct dbg315 {
	DBG_HEAD;
	struct dbg_interp314 interp;
	struct dbg_tstate315 tstate;
	uint64_t err_stackitem[1];
	struct dbg_frame314 frame;
	struct dbg_code314 code;
	struct dbg_object object;
	struct dbg_type type;
	uint64_t type_more[2], heap_type[2];
	uint64_t tuple[3], list[3], set[4], dict[3], flt[2], lng[3];
	struct dbg_bytes bytes;
	struct dbg_unicode315 unicode;
	uint64_t gc[5];
	struct dbg_gen gen;
};

/* Where the unicode group starts, as counted on the headers; a slip in
 * the descriptions above would move it. */
_Static_assert(offsetof(struct dbg313, unicode) == 536, "3.13 layout");
_Static_assert(offsetof(struct dbg314, unicode) == 616, "3.14 layout");
_Static_assert(offsetof(struct dbg315, unicode) == 712, "3.15 layout");
_Static_assert(offsetof(struct dbg314, gen) == 664, "3.14 layout");
_Static_assert(offsetof(struct dbg315, gen) == 792, "3.15 layout");
_Static_assert(sizeof(struct dbg315) <= PYOFF_DEBUG_READ_SIZE, "read size");

/* The members the walker uses, whatever the layout they came from. */
struct dbg_use {
	uint64_t version, free_threaded;
	struct dbg_runtime runtime;
	struct {
		uint64_t size, next, threads_head, ceval_gil, gil, gil_locked, gil_holder;
	} interp;
	struct {
		uint64_t size, next, interp, current_frame, thread_id, native_thread_id;
	} tstate;
	struct {
		uint64_t size, previous, executable, instr_ptr, owner, tlbc_index;
	} frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, adaptive, tlbc;
	} code;
	struct dbg_object object;
	struct {
		uint64_t size, tp_name;
	} type;
	struct dbg_bytes bytes;
	struct dbg_unicode315 unicode;
};

/* Copy the members every layout names alike; TLBC and COMPACT are the
 * ones a layout may lack (PYOFF_NONE, 0). */
#define DBG_PICK(u, d, TLBC_INDEX, CO_TLBC, COMPACT)                                               \
	do {                                                                                       \
		(u)->version = (d)->version;                                                       \
		(u)->free_threaded = (d)->free_threaded;                                           \
		(u)->runtime = (d)->runtime;                                                       \
		(u)->interp.size = (d)->interp.size;                                               \
		(u)->interp.next = (d)->interp.next;                                               \
		(u)->interp.threads_head = (d)->interp.threads_head;                               \
		(u)->interp.ceval_gil = (d)->interp.ceval_gil;                                     \
		(u)->interp.gil = (d)->interp.gil;                                                 \
		(u)->interp.gil_locked = (d)->interp.gil_locked;                                   \
		(u)->interp.gil_holder = (d)->interp.gil_holder;                                   \
		(u)->tstate.size = (d)->tstate.size;                                               \
		(u)->tstate.next = (d)->tstate.next;                                               \
		(u)->tstate.interp = (d)->tstate.interp;                                           \
		(u)->tstate.current_frame = (d)->tstate.current_frame;                             \
		(u)->tstate.thread_id = (d)->tstate.thread_id;                                     \
		(u)->tstate.native_thread_id = (d)->tstate.native_thread_id;                       \
		(u)->frame.size = (d)->frame.size;                                                 \
		(u)->frame.previous = (d)->frame.previous;                                         \
		(u)->frame.executable = (d)->frame.executable;                                     \
		(u)->frame.instr_ptr = (d)->frame.instr_ptr;                                       \
		(u)->frame.owner = (d)->frame.owner;                                               \
		(u)->frame.tlbc_index = (TLBC_INDEX);                                              \
		(u)->code.size = (d)->code.size;                                                   \
		(u)->code.filename = (d)->code.filename;                                           \
		(u)->code.name = (d)->code.name;                                                   \
		(u)->code.qualname = (d)->code.qualname;                                           \
		(u)->code.linetable = (d)->code.linetable;                                         \
		(u)->code.firstlineno = (d)->code.firstlineno;                                     \
		(u)->code.adaptive = (d)->code.adaptive;                                           \
		(u)->code.tlbc = (CO_TLBC);                                                        \
		(u)->object = (d)->object;                                                         \
		(u)->type.size = (d)->type.size;                                                   \
		(u)->type.tp_name = (d)->type.tp_name;                                             \
		(u)->bytes = (d)->bytes;                                                           \
		(u)->unicode.size = (d)->unicode.size;                                             \
		(u)->unicode.state = (d)->unicode.state;                                           \
		(u)->unicode.length = (d)->unicode.length;                                         \
		(u)->unicode.ascii_size = (d)->unicode.ascii_size;                                 \
		(u)->unicode.compact_size = (COMPACT);                                             \
	} while (0)

static const char debug_cookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};

int pyoffsets_has_debug(const void *data, size_t len, uint64_t *hexversion)
{
	uint64_t v;

	if (len < 16 || memcmp(data, debug_cookie, sizeof(debug_cookie)))
		return 0;
	memcpy(&v, (const char *)data + 8, sizeof(v));
	*hexversion = v;
	return 1;
}

/* The block's members in one shape, from the layout of its minor version.
 * -EPROTONOSUPPORT for a minor version whose layout is not known. */
static int pick(const void *data, size_t len, unsigned int minor, struct dbg_use *u)
{
	union {
		struct dbg313 v13;
		struct dbg314 v14;
		struct dbg315 v15;
	} d;
	size_t need = minor == 13 ? sizeof(d.v13) : minor == 14 ? sizeof(d.v14) : sizeof(d.v15);

	if (minor < 13 || minor > 15)
		return -EPROTONOSUPPORT;
	if (len < need)
		return -EINVAL;
	memcpy(&d, data, need);
	if (minor == 13)
		DBG_PICK(u, &d.v13, PYOFF_NONE, PYOFF_NONE, 0);
	else if (minor == 14)
		DBG_PICK(u, &d.v14, d.v14.frame.tlbc_index, d.v14.code.tlbc, 0);
	else
		DBG_PICK(u, &d.v15, d.v15.frame.tlbc_index, d.v15.code.tlbc,
			 d.v15.unicode.compact_size);
	return 0;
}

/* An offset is usable if it lies inside its struct, which itself must be
 * of a believable size. */
static int fits(uint64_t off, uint64_t size, uint64_t width)
{
	return size > 0 && size < (1u << 20) && off + width <= size;
}

static int check_threads(const struct dbg_use *d)
{
	return fits(d->runtime.interpreters_head, d->runtime.size, 8) &&
	       fits(d->interp.next, d->interp.size, 8) &&
	       fits(d->interp.threads_head, d->interp.size, 8) &&
	       fits(d->tstate.next, d->tstate.size, 8) &&
	       fits(d->tstate.interp, d->tstate.size, 8) &&
	       fits(d->tstate.current_frame, d->tstate.size, 8) &&
	       fits(d->tstate.thread_id, d->tstate.size, 8) &&
	       fits(d->tstate.native_thread_id, d->tstate.size, 8);
}

/* tlbc_index and co_tlbc are 0 in builds with the GIL: only a
 * free-threaded build has per-thread bytecode. */
static int check_frames(const struct dbg_use *d)
{
	int tlbc = d->free_threaded && d->frame.tlbc_index != PYOFF_NONE;

	return fits(d->frame.previous, d->frame.size, 8) &&
	       fits(d->frame.executable, d->frame.size, 8) &&
	       fits(d->frame.instr_ptr, d->frame.size, 8) &&
	       fits(d->frame.owner, d->frame.size, 1) &&
	       (!tlbc || (fits(d->frame.tlbc_index, d->frame.size, 4) &&
			  fits(d->code.tlbc, d->code.size, 8)));
}

static int check_objects(const struct dbg_use *d)
{
	return fits(d->code.filename, d->code.size, 8) && fits(d->code.name, d->code.size, 8) &&
	       fits(d->code.qualname, d->code.size, 8) &&
	       fits(d->code.linetable, d->code.size, 8) &&
	       fits(d->code.firstlineno, d->code.size, 4) && d->code.adaptive <= d->code.size &&
	       fits(d->object.ob_type, d->object.size, 8) &&
	       fits(d->type.tp_name, d->type.size, 8) && fits(d->bytes.ob_size, d->bytes.size, 8) &&
	       d->bytes.ob_sval < d->bytes.size && fits(d->unicode.state, d->unicode.size, 4) &&
	       fits(d->unicode.length, d->unicode.size, 8) &&
	       d->unicode.ascii_size < d->unicode.size && d->unicode.compact_size < d->unicode.size;
}

/* A member of _gil: inside it (its first 256 bytes) and the interpreter
 * state. */
static int in_gil(const struct dbg_use *d, uint64_t member, uint64_t width)
{
	return member >= d->interp.gil && member - d->interp.gil < 256 &&
	       fits(member, d->interp.size, width);
}

static int gil_usable(const struct dbg_use *d)
{
	return d->interp.ceval_gil && fits(d->interp.ceval_gil, d->interp.size, 8) &&
	       in_gil(d, d->interp.gil_holder, 8) && in_gil(d, d->interp.gil_locked, 4);
}

static uint32_t tlbc_off(const struct dbg_use *d, uint64_t off)
{
	return d->free_threaded && d->frame.tlbc_index != PYOFF_NONE ? (uint32_t)off : PYOFF_NONE;
}

static void fill(const struct dbg_use *d, struct profd_pyoffsets *o)
{
	memset(o, 0, sizeof(*o));
	o->version = (uint32_t)(((d->version >> 24) & 0xff) << 8 | ((d->version >> 16) & 0xff));
	o->frame_kind = PYOFF_FRAME_DIRECT;
	o->instr_kind = PYOFF_INSTR_CUR_PTR;
	o->line_format = PYOFF_LINES_LOCATIONS;
	o->runtime_interp_head = (uint32_t)d->runtime.interpreters_head;
	o->interp_next = (uint32_t)d->interp.next;
	o->interp_tstate_head = (uint32_t)d->interp.threads_head;
	o->tstate_next = (uint32_t)d->tstate.next;
	o->tstate_interp = (uint32_t)d->tstate.interp;
	o->tstate_thread_id = (uint32_t)d->tstate.thread_id;
	o->tstate_native_thread_id = (uint32_t)d->tstate.native_thread_id;
	o->tstate_frame = (uint32_t)d->tstate.current_frame;
	o->cframe_current_frame = PYOFF_NONE;
	o->frame_previous = (uint32_t)d->frame.previous;
	o->frame_code = (uint32_t)d->frame.executable;
	o->frame_instr = (uint32_t)d->frame.instr_ptr;
	o->frame_owner = (uint32_t)d->frame.owner;
	o->frame_is_entry = PYOFF_NONE;
	/* FRAME_OWNED_BY_CSTACK (3.13) and FRAME_OWNED_BY_INTERPRETER
	 * (3.14+) are both 3, the last owner value; the block does not say
	 * so itself. */
	o->frame_owner_cstack = 3;
	o->frame_tlbc_index = tlbc_off(d, d->frame.tlbc_index);
	o->code_filename = (uint32_t)d->code.filename;
	o->code_name = (uint32_t)d->code.name;
	o->code_qualname = (uint32_t)d->code.qualname;
	o->code_firstlineno = (uint32_t)d->code.firstlineno;
	o->code_linetable = (uint32_t)d->code.linetable;
	o->code_adaptive = (uint32_t)d->code.adaptive;
	o->code_tlbc = tlbc_off(d, d->code.tlbc);
	o->object_type = (uint32_t)d->object.ob_type;
	o->type_name = (uint32_t)d->type.tp_name;
	o->bytes_size = (uint32_t)d->bytes.ob_size;
	o->bytes_data = (uint32_t)d->bytes.ob_sval;
	o->unicode_length = (uint32_t)d->unicode.length;
	o->unicode_state = (uint32_t)d->unicode.state;
	o->unicode_ascii_data = (uint32_t)d->unicode.ascii_size;
	/* PyCompactUnicodeObject adds utf8_length and utf8 to the ASCII
	 * header; before 3.15 the block does not say so itself. */
	o->unicode_compact_data = d->unicode.compact_size ? (uint32_t)d->unicode.compact_size
							  : (uint32_t)d->unicode.ascii_size + 16;
	o->unicode_has_ready_bit = 0;
	o->free_threaded = d->free_threaded ? 1 : 0;
	/* The GIL of builds that have one: interp->ceval.gil points at the
	 * interpreter's own _gil or at the main one's (same layout), so the
	 * members are taken relative to _gil. */
	if (!o->free_threaded && gil_usable(d)) {
		o->gil_interp_ptr = (uint32_t)d->interp.ceval_gil;
		o->gil_last_holder = (uint32_t)(d->interp.gil_holder - d->interp.gil);
		o->gil_locked = (uint32_t)(d->interp.gil_locked - d->interp.gil);
	}
}

int pyoffsets_from_debug(const void *data, size_t len, struct profd_pyoffsets *out)
{
	struct dbg_use d;
	uint64_t hex;
	unsigned int major, minor;
	int err;

	if (!pyoffsets_has_debug(data, len, &hex))
		return -EINVAL;
	major = (unsigned int)(hex >> 24) & 0xff;
	minor = (unsigned int)(hex >> 16) & 0xff;
	if (major != 3 || minor < 13) {
		log_warn("pyoffsets: debug offsets claim version %#llx", (unsigned long long)hex);
		return -EINVAL;
	}
	err = pick(data, len, minor, &d);
	if (err == -EPROTONOSUPPORT)
		log_warn("pyoffsets: _Py_DebugOffsets layout of Python %u.%u "
			 "is not known yet",
			 major, minor);
	if (err)
		return err;
	if (d.free_threaded > 1 || !check_threads(&d) || !check_frames(&d) || !check_objects(&d)) {
		log_warn("pyoffsets: implausible _Py_DebugOffsets for %u.%u", major, minor);
		return -EINVAL;
	}
	fill(&d, out);
	return 0;
}

/* The generator, frame-stack, int and set members asyncio introspection
 * reads, from the 3.14 or 3.15 layout. */
#define ASYNC_PICK(out, d)                                                                         \
	do {                                                                                       \
		(out)->gen_size = (d)->gen.size;                                                   \
		(out)->gen_iframe = (d)->gen.gi_iframe;                                            \
		(out)->gen_frame_state = (d)->gen.gi_frame_state;                                  \
		(out)->frame_size = (d)->frame.size;                                               \
		(out)->frame_stackpointer = (d)->frame.stackpointer;                               \
		memcpy((out)->lng, (d)->lng, sizeof((out)->lng));                                  \
		memcpy((out)->set, (d)->set, sizeof((out)->set));                                  \
	} while (0)

static void pick_async(const void *data, unsigned int minor, struct pyoff_async *out)
{
	union {
		struct dbg314 v14;
		struct dbg315 v15;
	} d;

	if (minor == 14) {
		memcpy(&d.v14, data, sizeof(d.v14));
		ASYNC_PICK(out, &d.v14);
		out->state_yield_from = -1; /* FRAME_SUSPENDED_YIELD_FROM */
		out->state_done = 1;	    /* FRAME_COMPLETED, FRAME_CLEARED */
		out->await_depth = 1;
	} else {
		memcpy(&d.v15, data, sizeof(d.v15));
		ASYNC_PICK(out, &d.v15);
		out->state_yield_from = 2; /* FRAME_SUSPENDED_YIELD_FROM */
		out->state_done = 5;	   /* FRAME_CLEARED (no COMPLETED any more) */
		out->await_depth = 2;	   /* SEND keeps one more item above it */
	}
}

int pyoffsets_async_from_debug(const void *data, size_t len, struct pyoff_async *out)
{
	uint64_t hex;
	unsigned int minor;

	if (!pyoffsets_has_debug(data, len, &hex) || (hex >> 24) != 3)
		return -EINVAL;
	minor = (unsigned int)(hex >> 16) & 0xff;
	if (minor < 14 || minor > 15)
		return -EPROTONOSUPPORT; /* no asyncio debug section before 3.14 */
	if (len < sizeof(struct dbg315))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->minor = minor;
	pick_async(data, minor, out);
	/* The frame lies inside the generator; its state byte before it. */
	if (!fits(out->gen_iframe, out->gen_size, 1) ||
	    !fits(out->gen_frame_state, out->gen_size, 1) ||
	    out->gen_frame_state >= out->gen_iframe ||
	    !fits(out->frame_stackpointer, out->frame_size, 8) ||
	    !fits(out->lng[1], out->lng[0], 8) || !fits(out->lng[2], out->lng[0] + 64, 4) ||
	    !fits(out->set[1], out->set[0], 8) || !fits(out->set[2], out->set[0], 8) ||
	    !fits(out->set[3], out->set[0], 8)) {
		log_warn("pyoffsets: implausible generator or object offsets for 3.%u", minor);
		return -EINVAL;
	}
	return 0;
}

/* ---- fast locals (profctl stacks --locals) ---- */

/* PyVarObject's ob_size at 16, what follows it at 24 (x86_64, GIL). */
#define OBJECTS_OLD                                                                                \
	.tuple_size = 16, .tuple_items = 24, .list_size = 16, .list_items = 24, .float_value = 16, \
	.long_size = 16, .long_digits = 24, .dict_used = 16

/* clang-format off */
static const struct pyoff_locals locals_builtin[] = {
	/* 3.9: f_localsplus follows f_blockstack[CO_MAXBLOCKS]. */
	{ .frame_localsplus = 360, .code_argcount = 16, .code_kwonlyargcount = 24,
	  .code_flags = 36, .code_nlocals = 28, .code_varnames = 72, .code_freevars = 80,
	  .code_cellvars = 88, .code_cell2arg = 96, .code_localsplusnames = PYOFF_NONE,
	  .code_localspluskinds = PYOFF_NONE, OBJECTS_OLD,
	  .dict_keys = 32, .dict_values = 40 },
	/* 3.10: f_stacktop went, f_stackdepth (an int) came. */
	{ .frame_localsplus = 352, .code_argcount = 16, .code_kwonlyargcount = 24,
	  .code_flags = 36, .code_nlocals = 28, .code_varnames = 72, .code_freevars = 80,
	  .code_cellvars = 88, .code_cell2arg = 96, .code_localsplusnames = PYOFF_NONE,
	  .code_localspluskinds = PYOFF_NONE, OBJECTS_OLD,
	  .dict_keys = 32, .dict_values = 40 },
	/* 3.11: co_flags, then co_warmup and a short before co_argcount. */
	{ .frame_localsplus = 72, .code_argcount = 56, .code_kwonlyargcount = 64,
	  .code_flags = 48, .code_nlocals = PYOFF_NONE, .code_varnames = PYOFF_NONE,
	  .code_freevars = PYOFF_NONE, .code_cellvars = PYOFF_NONE, .code_cell2arg = PYOFF_NONE,
	  .code_localsplusnames = 96, .code_localspluskinds = 104, OBJECTS_OLD,
	  .dict_keys = 32, .dict_values = 40 },
	/* 3.12: co_argcount right after co_flags, as in every later one. */
	{ .frame_localsplus = 72, .code_argcount = 52, .code_kwonlyargcount = 60,
	  .code_flags = 48, .code_nlocals = PYOFF_NONE, .code_varnames = PYOFF_NONE,
	  .code_freevars = PYOFF_NONE, .code_cellvars = PYOFF_NONE, .code_cell2arg = PYOFF_NONE,
	  .code_localsplusnames = 96, .code_localspluskinds = 104, OBJECTS_OLD,
	  .dict_keys = 32, .dict_values = 40, .long_tagged = 1 },
};
/* clang-format on */

struct dbg_locals {
	uint64_t frame_size, localsplus, code_size, argcount, names, kinds;
	uint64_t tuple[3], list[3], dict[3], flt[2], lng[3]; /* size, then members */
};

#define LOCALS_PICK(u, d)                                                                          \
	do {                                                                                       \
		(u)->frame_size = (d)->frame.size;                                                 \
		(u)->localsplus = (d)->frame.localsplus;                                           \
		(u)->code_size = (d)->code.size;                                                   \
		(u)->argcount = (d)->code.argcount;                                                \
		(u)->names = (d)->code.localsplusnames;                                            \
		(u)->kinds = (d)->code.localspluskinds;                                            \
		memcpy((u)->tuple, (d)->tuple, sizeof((u)->tuple));                                \
		memcpy((u)->list, (d)->list, sizeof((u)->list));                                   \
		memcpy((u)->dict, (d)->dict, sizeof((u)->dict));                                   \
		memcpy((u)->flt, (d)->flt, sizeof((u)->flt));                                      \
		memcpy((u)->lng, (d)->lng, sizeof((u)->lng));                                      \
	} while (0)

/* tuple: size, ob_item, ob_size; list: the same (ob_item a pointer);
 * float: size, ob_fval; int: size, lv_tag, ob_digit. */
static int objects_fit(const struct dbg_locals *u)
{
	return fits(u->tuple[1], u->tuple[0] + 8, 8) && fits(u->tuple[2], u->tuple[0], 8) &&
	       fits(u->list[1], u->list[0], 8) && fits(u->list[2], u->list[0], 8) &&
	       fits(u->flt[1], u->flt[0], 8) && fits(u->lng[1], u->lng[0], 8) &&
	       fits(u->lng[2], u->lng[0] + 8, 4) && fits(u->dict[1], u->dict[0], 8) &&
	       fits(u->dict[2], u->dict[0], 8);
}

static int locals_from_debug(int minor, const void *data, size_t len, struct pyoff_locals *out)
{
	union {
		struct dbg313 v13;
		struct dbg314 v14;
		struct dbg315 v15;
	} d;
	struct dbg_locals u;
	uint64_t hex;

	if (!pyoffsets_has_debug(data, len, &hex) || (int)((hex >> 16) & 0xff) != minor ||
	    len < sizeof(d.v15))
		return -EINVAL;
	memcpy(&d, data, sizeof(d.v15));
	if (minor == 13)
		LOCALS_PICK(&u, &d.v13);
	else if (minor == 14)
		LOCALS_PICK(&u, &d.v14);
	else
		LOCALS_PICK(&u, &d.v15);
	/* localsplus is the frame's trailing array: it starts at its end.
	 * co_flags and co_kwonlyargcount sit 4 before and 8 after argcount. */
	if (!u.frame_size || u.localsplus > u.frame_size || u.frame_size >= 4096 ||
	    u.argcount < 4 || !fits(u.argcount + 8, u.code_size, 4) ||
	    !fits(u.names, u.code_size, 8) || !fits(u.kinds, u.code_size, 8) || !objects_fit(&u))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->frame_localsplus = (uint32_t)u.localsplus;
	out->code_argcount = (uint32_t)u.argcount;
	out->code_flags = (uint32_t)u.argcount - 4;
	out->code_kwonlyargcount = (uint32_t)u.argcount + 8;
	out->code_nlocals = out->code_varnames = PYOFF_NONE;
	out->code_cellvars = out->code_freevars = out->code_cell2arg = PYOFF_NONE;
	out->code_localsplusnames = (uint32_t)u.names;
	out->code_localspluskinds = (uint32_t)u.kinds;
	out->tuple_size = (uint32_t)u.tuple[2];
	out->tuple_items = (uint32_t)u.tuple[1];
	out->list_size = (uint32_t)u.list[2];
	out->list_items = (uint32_t)u.list[1];
	out->float_value = (uint32_t)u.flt[1];
	out->long_size = (uint32_t)u.lng[1];
	out->long_digits = (uint32_t)u.lng[2];
	out->dict_used = (uint32_t)u.lng[1]; /* ma_used and ob_size both follow the header */
	out->dict_keys = (uint32_t)u.dict[1];
	out->dict_values = (uint32_t)u.dict[2];
	out->long_tagged = 1;
	out->stackref = minor >= 14;
	return 0;
}

int pyoffsets_locals(int minor, const void *debug, size_t len, struct pyoff_locals *out)
{
	if (minor >= 9 && minor <= 12) {
		*out = locals_builtin[minor - 9];
		return 0;
	}
	if (minor >= 13 && minor <= 15)
		return locals_from_debug(minor, debug, len, out);
	return -EPROTONOSUPPORT;
}

/* ---- thread names (pythreads.h) ---- */

/* PyTypeObject's head has kept its shape since 3.8 (tp_vectorcall_offset):
 * tp_basicsize at 32, tp_flags at 168, tp_dictoffset at 288; md_dict
 * right after the object header. */
#define THREADS_TYPE .type_basicsize = 32, .type_flags = 168, .type_dictoffset = 288, \
	.module_dict = 16

/* clang-format off */
static const struct pyoff_threads threads_builtin[] = {
	{ .interp_modules = 856, .heap_cached_keys = 864, THREADS_TYPE }, /* 3.9 */
	/* 3.10: PyAsyncMethods gained am_send. */
	{ .interp_modules = 856, .heap_cached_keys = 872, THREADS_TYPE },
	/* 3.11: the interpreter state grew before modules. */
	{ .interp_modules = 888, .heap_cached_keys = 872, THREADS_TYPE },
	/* 3.12: modules moved into interp->imports; tp_watched. */
	{ .interp_modules = 944, .heap_cached_keys = 880, THREADS_TYPE },
	/* 3.13, 3.14: interp_modules from _Py_DebugOffsets. */
	{ .interp_modules = PYOFF_NONE, .heap_cached_keys = 880, THREADS_TYPE },
	{ .interp_modules = PYOFF_NONE, .heap_cached_keys = 880, THREADS_TYPE },
	{ .interp_modules = PYOFF_NONE, .heap_cached_keys = PYOFF_NONE, THREADS_TYPE },
};
/* clang-format on */

/* The interpreter group's imports_modules: after gc (3.13), after
 * threads_main and gc (3.14+); 3.15's heap type group: size, then
 * ht_cached_keys. */
_Static_assert(offsetof(struct dbg313, interp._n[1]) == 88, "3.13 imports_modules");
_Static_assert(offsetof(struct dbg314, interp._n[2]) == 96, "3.14 imports_modules");
_Static_assert(offsetof(struct dbg315, interp._n[2]) == 96, "3.15 imports_modules");
_Static_assert(offsetof(struct dbg315, heap_type[1]) == 536, "3.15 ht_cached_keys");

static int threads_from_debug(int minor, const void *data, size_t len, struct pyoff_threads *out)
{
	union {
		struct dbg313 v13;
		struct dbg314 v14;
		struct dbg315 v15;
	} d;
	uint64_t hex, modules, isize;

	if (!pyoffsets_has_debug(data, len, &hex) || (int)((hex >> 16) & 0xff) != minor ||
	    len < sizeof(d.v15))
		return -EINVAL;
	memcpy(&d, data, sizeof(d.v15));
	if (d.v13.free_threaded)
		return -EPROTONOSUPPORT; /* a larger object header: not laid out here */
	modules = minor == 13 ? d.v13.interp._n[1] : d.v14.interp._n[2];
	isize = minor == 13 ? d.v13.interp.size : d.v14.interp.size;
	if (!fits(modules, isize, 8))
		return -EINVAL;
	out->interp_modules = (uint32_t)modules;
	if (minor == 15) {
		/* The heap type is a type object and a few pointers more. */
		if (d.v15.heap_type[1] < 400 || !fits(d.v15.heap_type[1], d.v15.heap_type[0], 8))
			return -EINVAL;
		out->heap_cached_keys = (uint32_t)d.v15.heap_type[1];
	}
	return 0;
}

int pyoffsets_threads(int minor, const void *debug, size_t len, struct pyoff_threads *out)
{
	if (minor < 9 || minor > 15)
		return -EPROTONOSUPPORT;
	*out = threads_builtin[minor - 9];
	return minor >= 13 ? threads_from_debug(minor, debug, len, out) : 0;
}
