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
	.unicode_length = 16, .unicode_state = 32

/* Python 3.9: Include/cpython/{pystate,frameobject,code}.h,
 * Include/internal/{pycore_runtime,pycore_interp}.h. */
static const struct profd_pyoffsets py39 = {
	PYOFF_COMMON,
	.version = 0x0309,
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

/* The 3.13 _Py_DebugOffsets layout, as bytes in the target: every member
 * is a uint64_t and each group starts with the size of its struct.  Only
 * the groups up to the unicode one are described; what follows is unused.
 * Later versions insert members in the middle, so each layout needs its
 * own description, chosen by the version field. */
struct dbg313 {
	char cookie[8];
	uint64_t version;
	uint64_t free_threaded;
	struct {
		uint64_t size, finalizing, interpreters_head;
	} runtime;
	struct {
		uint64_t size, id, next, threads_head, gc, imports_modules;
		uint64_t sysdict, builtins, ceval_gil, gil, gil_enabled;
		uint64_t gil_locked, gil_holder;
	} interp;
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id;
		uint64_t native_thread_id, datastack_chunk, status;
	} tstate;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus;
		uint64_t owner;
	} frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno;
		uint64_t argcount, localsplusnames, localspluskinds, adaptive;
	} code;
	struct {
		uint64_t size, ob_type;
	} object;
	struct {
		uint64_t size, tp_name, tp_repr, tp_flags;
	} type;
	uint64_t tuple[3], list[3], dict[3], flt[2], lng[3];
	struct {
		uint64_t size, ob_size, ob_sval;
	} bytes;
	struct {
		uint64_t size, state, length, ascii_size;
	} unicode;
};

_Static_assert(sizeof(struct dbg313) <= PYOFF_DEBUG_READ_SIZE, "read size");

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

/* An offset is usable if it lies inside its struct, which itself must be
 * of a believable size. */
static int fits(uint64_t off, uint64_t size, uint64_t width)
{
	return size > 0 && size < (1u << 20) && off + width <= size;
}

static int check313(const struct dbg313 *d)
{
	return fits(d->runtime.interpreters_head, d->runtime.size, 8) &&
	       fits(d->interp.next, d->interp.size, 8) &&
	       fits(d->interp.threads_head, d->interp.size, 8) &&
	       fits(d->tstate.next, d->tstate.size, 8) &&
	       fits(d->tstate.interp, d->tstate.size, 8) &&
	       fits(d->tstate.current_frame, d->tstate.size, 8) &&
	       fits(d->tstate.thread_id, d->tstate.size, 8) &&
	       fits(d->tstate.native_thread_id, d->tstate.size, 8) &&
	       fits(d->frame.previous, d->frame.size, 8) &&
	       fits(d->frame.executable, d->frame.size, 8) &&
	       fits(d->frame.instr_ptr, d->frame.size, 8) &&
	       fits(d->frame.owner, d->frame.size, 1) && fits(d->code.filename, d->code.size, 8) &&
	       fits(d->code.name, d->code.size, 8) && fits(d->code.qualname, d->code.size, 8) &&
	       fits(d->code.linetable, d->code.size, 8) &&
	       fits(d->code.firstlineno, d->code.size, 4) && d->code.adaptive <= d->code.size &&
	       fits(d->object.ob_type, d->object.size, 8) &&
	       fits(d->type.tp_name, d->type.size, 8) && fits(d->bytes.ob_size, d->bytes.size, 8) &&
	       d->bytes.ob_sval < d->bytes.size && fits(d->unicode.state, d->unicode.size, 4) &&
	       fits(d->unicode.length, d->unicode.size, 8) &&
	       d->unicode.ascii_size < d->unicode.size;
}

static void fill313(const struct dbg313 *d, struct profd_pyoffsets *o)
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
	o->frame_owner_cstack = 3; /* FRAME_OWNED_BY_CSTACK, not in the block */
	o->code_filename = (uint32_t)d->code.filename;
	o->code_name = (uint32_t)d->code.name;
	o->code_qualname = (uint32_t)d->code.qualname;
	o->code_firstlineno = (uint32_t)d->code.firstlineno;
	o->code_linetable = (uint32_t)d->code.linetable;
	o->code_adaptive = (uint32_t)d->code.adaptive;
	o->object_type = (uint32_t)d->object.ob_type;
	o->type_name = (uint32_t)d->type.tp_name;
	o->bytes_size = (uint32_t)d->bytes.ob_size;
	o->bytes_data = (uint32_t)d->bytes.ob_sval;
	o->unicode_length = (uint32_t)d->unicode.length;
	o->unicode_state = (uint32_t)d->unicode.state;
	o->unicode_ascii_data = (uint32_t)d->unicode.ascii_size;
	/* PyCompactUnicodeObject adds utf8_length and utf8 to the ASCII
	 * header; the block does not say so itself. */
	o->unicode_compact_data = (uint32_t)d->unicode.ascii_size + 16;
	o->unicode_has_ready_bit = 0;
}

int pyoffsets_from_debug(const void *data, size_t len, struct profd_pyoffsets *out)
{
	struct dbg313 d;
	uint64_t hex;
	unsigned int major, minor;

	if (!pyoffsets_has_debug(data, len, &hex))
		return -EINVAL;
	major = (unsigned int)(hex >> 24) & 0xff;
	minor = (unsigned int)(hex >> 16) & 0xff;
	if (major != 3 || minor < 13) {
		log_warn("pyoffsets: debug offsets claim version %#llx", (unsigned long long)hex);
		return -EINVAL;
	}
	if (minor > 13) {
		log_warn("pyoffsets: _Py_DebugOffsets layout of Python %u.%u "
			 "is not known yet",
			 major, minor);
		return -EPROTONOSUPPORT;
	}
	if (len < sizeof(d))
		return -EINVAL;
	memcpy(&d, data, sizeof(d));
	if (d.free_threaded) {
		log_warn("pyoffsets: free-threaded Python %u.%u is not supported", major, minor);
		return -ENOTSUP;
	}
	if (!check313(&d)) {
		log_warn("pyoffsets: implausible _Py_DebugOffsets for %u.%u", major, minor);
		return -EINVAL;
	}
	fill313(&d, out);
	return 0;
}
