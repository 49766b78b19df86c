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

/* What `profctl stacks --locals` reads beyond the walker's offsets: a
 * frame's fast locals and the code object fields that name them.  From
 * CPython's headers for 3.9 .. 3.12 (x86_64, default build), from
 * _Py_DebugOffsets for 3.13+ (the fields next to co_argcount, which it
 * does not list, have kept their places around it since 3.11). */
struct pyoff_locals {
	uint32_t frame_localsplus; /* f_localsplus / localsplus */
	uint32_t code_argcount, code_kwonlyargcount, code_flags; /* ints */
	/* 3.9, 3.10: co_nlocals and three tuples of names (locals, then
	 * cells, then free variables in f_localsplus). */
	uint32_t code_nlocals, code_varnames, code_cellvars, code_freevars;
	uint32_t code_cell2arg; /* Py_ssize_t *: the argument a cell took over */
	/* 3.11+: one tuple of names and a bytes object of their kinds. */
	uint32_t code_localsplusnames, code_localspluskinds;
	/* The objects whose values are shown (3.14 put ob_hash in a tuple
	 * before its items). */
	uint32_t tuple_size, tuple_items, list_size, list_items, float_value;
	uint32_t long_size, long_digits; /* ob_size or lv_tag, ob_digit */
	/* PyDictObject's ma_used, ma_keys, ma_values where its keys object
	 * has the 3.11+ layout (dk_log2_size, dk_log2_index_bytes, dk_kind,
	 * dk_nentries, dk_indices), else PYOFF_NONE. */
	uint32_t dict_used, dict_keys, dict_values;
	uint8_t long_tagged;   /* 3.12+: PyLongObject's lv_tag, not ob_size */
	uint8_t stackref;      /* 3.14+: localsplus holds tagged _PyStackRefs */
};

/* 0; -EPROTONOSUPPORT for a version with no layout here; -EINVAL for a
 * _Py_DebugOffsets block (debug, len: the first bytes of _PyRuntime,
 * needed for 3.13+ only) that is short or implausible. */
int pyoffsets_locals(int minor, const void *debug, size_t len, struct pyoff_locals *out);

/* What reading Python's thread names (pythreads.h) needs beyond the
 * walker's offsets: where the interpreter keeps sys.modules, and the
 * fields of a type that say where an instance's attributes are.  From
 * CPython's headers for 3.9 .. 3.14 (x86_64, default build; the heap
 * type's ht_cached_keys checked against live interpreters), from
 * _Py_DebugOffsets where it names them (imports_modules from 3.13,
 * ht_cached_keys from 3.15). */
struct pyoff_threads {
	uint32_t interp_modules;   /* PyInterpreterState: modules / imports.modules */
	uint32_t type_basicsize;   /* PyTypeObject: tp_basicsize, tp_flags, tp_dictoffset */
	uint32_t type_flags, type_dictoffset;
	uint32_t heap_cached_keys; /* PyHeapTypeObject: ht_cached_keys (3.11+) */
	uint32_t module_dict;	   /* PyModuleObject: md_dict */
};

/* 0; -EPROTONOSUPPORT for a version with no layout here (or a
 * free-threaded build); -EINVAL for a _Py_DebugOffsets block (3.13+) that
 * is short or implausible. */
int pyoffsets_threads(int minor, const void *debug, size_t len, struct pyoff_threads *out);

#endif
