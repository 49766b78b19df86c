/* pyoffsets: where the Python frame walker finds things inside CPython's
 * private structures, per interpreter version.
 *
 * 3.9 .. 3.12 come from built-in tables (CPython's headers for x86_64,
 * non-debug, default GIL build; checked against live interpreters).
 * 3.13+ come from the _Py_DebugOffsets block that _PyRuntime starts with,
 * read out of the target process, so a new patch release needs no table.
 *
 * The struct is plain fixed-width data with no pointers so that it can be
 * copied as is into a BPF map later (the ABI twin will live in
 * bpf/profd_abi.h; keep the two in step).  Every offset is in bytes from
 * the start of the named object; PYOFF_NONE marks a field the version does
 * not have. */
#ifndef PROFD_PYOFFSETS_H
#define PROFD_PYOFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "profd_abi.h"

/* The offsets struct and its enums live in profd_abi.h: the BPF walker
 * reads the same struct from a map. */

/* State bits of PyASCIIObject.state, the same on 3.9 .. 3.15 with the GIL. */
#define PYOFF_UNICODE_KIND_SHIFT 2
#define PYOFF_UNICODE_KIND_MASK 0x7u
#define PYOFF_UNICODE_COMPACT (1u << 5)
#define PYOFF_UNICODE_ASCII (1u << 6)
#define PYOFF_UNICODE_READY (1u << 7) /* <= 3.11 only */
#define PYOFF_UNICODE_FT_SHIFT 6 /* free-threaded 3.14+: a byte for interned */

/* Bytes of _PyRuntime to read for pyoffsets_from_debug(). */
#define PYOFF_DEBUG_READ_SIZE 1024

/* The built-in table for 3.9 .. 3.12; NULL for other versions (3.13+
 * must come from pyoffsets_from_debug()). */
const struct profd_pyoffsets *pyoffsets_builtin(int major, int minor);

/* True if data (at least 16 bytes from the start of _PyRuntime) begins
 * with the _Py_DebugOffsets cookie; sets *hexversion (PY_VERSION_HEX). */
int pyoffsets_has_debug(const void *data, size_t len, uint64_t *hexversion);

/* Fill out from a _Py_DebugOffsets block (the first len bytes of
 * _PyRuntime).  0, -EINVAL (no cookie, short or implausible),
 * -EPROTONOSUPPORT (a layout this code does not know: 3.16+).  The block
 * of a free-threaded build (3.13t+) is taken too: its values already
 * account for the larger object header, and per-thread bytecode
 * (frame_tlbc_index, code_tlbc) is filled in. */
int pyoffsets_from_debug(const void *data, size_t len, struct profd_pyoffsets *out);

/* What asyncio introspection (profctl stacks --async) reads beyond the
 * walker's offsets, from _Py_DebugOffsets (3.14+). */
struct pyoff_async {
	unsigned int minor;
	uint64_t gen_size, gen_iframe, gen_frame_state; /* PyGenObject/PyCoroObject */
	uint64_t frame_size, frame_stackpointer;	 /* _PyInterpreterFrame */
	uint64_t lng[3];				 /* PyLongObject: size, lv_tag, ob_digit */
	uint64_t set[4];				 /* PySetObject: size, used, table, mask */
	/* gi_frame_state values (pycore_frame.h; 3.15 renumbered them):
	 * suspended in await / yield from, and from which value up the
	 * frame is gone. */
	int8_t state_yield_from, state_done;
	/* The awaited object is stackpointer[-await_depth]. */
	uint8_t await_depth;
};

/* 0, -EINVAL (no cookie, short, implausible), -EPROTONOSUPPORT (before
 * 3.14: no asyncio debug section, or a layout not known yet). */
int pyoffsets_async_from_debug(const void *data, size_t len, struct pyoff_async *out);

#endif
