/* test_pyoffsets: _Py_DebugOffsets blocks of 3.13, 3.14 and 3.15 turned
 * into the walker's offsets.  The blocks are the real ones: the uint64_t
 * members after the cookie as the interpreters carry them at the start of
 * _PyRuntime (pyenv's 3.13.0, Debian sid's 3.14.10 and 3.15.2, x86_64
 * with the GIL).  Each layout puts the members the walker needs at other
 * places in the block, so a wrong layout gives wrong numbers here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "pyoffsets.h"

/* clang-format off */
static const uint64_t py3130[] = {
	51183856, 0, 283320, 608, 632, 194968, 7272, 7264, 7344, 7400, 7656, 7640, 7648, 16, 7752, 0,
	7768, 7760, 304, 0, 8, 16, 72, 152, 160, 232, 32, 80, 8, 0, 56, 72, 70, 208, 112, 120, 128,
	136, 68, 52, 96, 104, 200, 16, 8, 416, 24, 88, 168, 32, 24, 16, 40, 24, 16, 48, 32, 40, 24,
	16, 32, 16, 24, 40, 16, 32, 64, 32, 16, 40,
};

static const uint64_t py31410[] = {
	51251952, 0, 316616, 784, 808, 225864, 7280, 7272, 7344, 7360, 7408, 7688, 7672, 7680, 16,
	7784, 0, 7800, 7792, 7992, 0, 832, 0, 8, 16, 72, 152, 160, 232, 32, 88, 8, 0, 56, 80, 74, 64,
	0, 216, 112, 120, 128, 136, 68, 52, 96, 104, 208, 0, 16, 8, 416, 24, 88, 168, 40, 32, 16, 40,
	24, 16, 200, 24, 40, 32, 48, 32, 40, 24, 16, 32, 16, 24, 40, 16, 32, 64, 32, 16, 40, 264,
	192, 160, 24, 72, 67, 0, 8,
};

static const uint64_t py3152[] = {
	51315440, 0, 346568, 912, 936, 226240, 7272, 7264, 7336, 7352, 7400, 7592, 7576, 7584, 16,
	7736, 0, 7752, 7744, 7944, 0, 888, 0, 8, 16, 72, 80, 88, 96, 176, 184, 256, 32, 36, 40, 136,
	288, 0, 88, 8, 0, 56, 80, 74, 64, 0, 216, 112, 120, 128, 136, 68, 52, 96, 104, 208, 0, 16, 8,
	424, 24, 88, 168, 32, 288, 944, 888, 40, 32, 16, 40, 24, 16, 200, 24, 40, 32, 48, 32, 40, 24,
	16, 32, 16, 24, 40, 16, 32, 64, 32, 16, 40, 56, 176, 112, 120, 1120, 104, 160, 24, 72, 67,
	0, 8,
};
/* clang-format on */

static uint8_t block[PYOFF_DEBUG_READ_SIZE];

/* The block as read from the process: cookie, then the members. */
static void make_block(const uint64_t *members, size_t n)
{
	memset(block, 0, sizeof(block));
	memcpy(block, "xdebugpy", 8);
	memcpy(block + 8, members, n * sizeof(*members));
}

#define MAKE(a) make_block(a, sizeof(a) / sizeof(a[0]))

static void set_member(size_t byte_off, uint64_t v)
{
	memcpy(block + byte_off, &v, sizeof(v));
}

/* What every 3.13+ block gives alike. */
static void assert_common(const struct profd_pyoffsets *o)
{
	assert_int_equal(o->frame_kind, PYOFF_FRAME_DIRECT);
	assert_int_equal(o->instr_kind, PYOFF_INSTR_CUR_PTR);
	assert_int_equal(o->line_format, PYOFF_LINES_LOCATIONS);
	assert_int_equal(o->cframe_current_frame, PYOFF_NONE);
	assert_int_equal(o->frame_is_entry, PYOFF_NONE);
	assert_int_equal(o->frame_owner_cstack, 3);
	assert_int_equal(o->tstate_next, 8);
	assert_int_equal(o->tstate_interp, 16);
	assert_int_equal(o->tstate_frame, 72);
	assert_int_equal(o->frame_previous, 8);
	assert_int_equal(o->frame_code, 0);
	assert_int_equal(o->frame_instr, 56);
	assert_int_equal(o->code_filename, 112);
	assert_int_equal(o->code_name, 120);
	assert_int_equal(o->code_qualname, 128);
	assert_int_equal(o->code_linetable, 136);
	assert_int_equal(o->code_firstlineno, 68);
	assert_int_equal(o->object_type, 8);
	assert_int_equal(o->type_name, 24);
	assert_int_equal(o->bytes_size, 16);
	assert_int_equal(o->bytes_data, 32);
	assert_int_equal(o->unicode_length, 16);
	assert_int_equal(o->unicode_state, 32);
	assert_int_equal(o->unicode_ascii_data, 40);
	assert_int_equal(o->unicode_compact_data, 56);
	assert_int_equal(o->unicode_has_ready_bit, 0);
}

/* The GIL: interp->ceval.gil points at a _gil whose last_holder and
 * locked members the block gives from the interpreter state's start. */
static void assert_gil(const struct profd_pyoffsets *o)
{
	assert_int_equal(o->gil_runtime_state, 0);
	assert_int_equal(o->gil_interp_ptr, 16);
	assert_int_equal(o->gil_last_holder, 8);
	assert_int_equal(o->gil_locked, 16);
}

static void test_313(void **state)
{
	struct profd_pyoffsets o;
	uint64_t hex;

	(void)state;
	MAKE(py3130);
	assert_true(pyoffsets_has_debug(block, sizeof(block), &hex));
	assert_int_equal(hex, 0x030d00f0);
	assert_int_equal(pyoffsets_from_debug(block, sizeof(block), &o), 0);
	assert_common(&o);
	assert_int_equal(o.version, 0x030d);
	assert_gil(&o);
	assert_int_equal(o.runtime_interp_head, 632);
	assert_int_equal(o.interp_next, 7264);
	assert_int_equal(o.interp_tstate_head, 7344);
	assert_int_equal(o.tstate_thread_id, 152);
	assert_int_equal(o.tstate_native_thread_id, 160);
	assert_int_equal(o.frame_owner, 70);
	assert_int_equal(o.code_adaptive, 200);
	assert_int_equal(o.frame_tlbc_index, PYOFF_NONE);
	assert_int_equal(o.code_tlbc, PYOFF_NONE);
	assert_int_equal(o.free_threaded, 0);
}

static void test_314(void **state)
{
	struct profd_pyoffsets o;

	(void)state;
	MAKE(py31410);
	assert_int_equal(pyoffsets_from_debug(block, sizeof(block), &o), 0);
	assert_common(&o);
	assert_int_equal(o.version, 0x030e);
	assert_gil(&o);
	assert_int_equal(o.runtime_interp_head, 808);
	assert_int_equal(o.interp_next, 7272);
	assert_int_equal(o.interp_tstate_head, 7344);
	assert_int_equal(o.tstate_thread_id, 152);
	assert_int_equal(o.tstate_native_thread_id, 160);
	assert_int_equal(o.frame_owner, 74);
	assert_int_equal(o.code_adaptive, 208);
	/* A build with the GIL has no per-thread bytecode. */
	assert_int_equal(o.frame_tlbc_index, PYOFF_NONE);
	assert_int_equal(o.code_tlbc, PYOFF_NONE);
	assert_int_equal(o.free_threaded, 0);
}

/* A _gil member the block puts outside _gil: the walker's other offsets
 * stand, the GIL is left unknown. */
static void test_314_gil_implausible(void **state)
{
	struct profd_pyoffsets o;

	(void)state;
	MAKE(py31410);
	set_member(152, 100); /* interpreter_state.gil_runtime_state_holder */
	assert_int_equal(pyoffsets_from_debug(block, sizeof(block), &o), 0);
	assert_int_equal(o.interp_tstate_head, 7344);
	assert_int_equal(o.gil_interp_ptr, 0);
}

static void test_315(void **state)
{
	struct profd_pyoffsets o;

	(void)state;
	MAKE(py3152);
	assert_int_equal(pyoffsets_from_debug(block, sizeof(block), &o), 0);
	assert_common(&o);
	assert_int_equal(o.version, 0x030f);
	assert_gil(&o);
	assert_int_equal(o.runtime_interp_head, 936);
	assert_int_equal(o.interp_next, 7264);
	assert_int_equal(o.interp_tstate_head, 7336);
	assert_int_equal(o.tstate_thread_id, 176);
	assert_int_equal(o.tstate_native_thread_id, 184);
	assert_int_equal(o.frame_owner, 74);
	assert_int_equal(o.code_adaptive, 208);
	assert_int_equal(o.frame_tlbc_index, PYOFF_NONE);
	assert_int_equal(o.free_threaded, 0);
	/* 3.15 states sizeof(PyCompactUnicodeObject) itself. */
	set_member(744, 64);
	set_member(712, 80);
	assert_int_equal(pyoffsets_from_debug(block, sizeof(block), &o), 0);
	assert_int_equal(o.unicode_compact_data, 64);
}

/* A free-threaded 3.14 block: same layout, the flag set and the
 * per-thread bytecode members filled in. */
static void test_314_free_threaded(void **state)
{
	struct profd_pyoffsets o;

	(void)state;
	MAKE(py31410);
	set_member(16, 1);    /* free_threaded */
	set_member(304, 72);  /* interpreter_frame.tlbc_index */
	set_member(392, 200); /* code_object.co_tlbc */
	assert_int_equal(pyoffsets_from_debug(block, sizeof(block), &o), 0);
	assert_int_equal(o.free_threaded, 1);
	assert_int_equal(o.gil_interp_ptr, 0); /* no GIL to read */
	assert_int_equal(o.frame_tlbc_index, 72);
	assert_int_equal(o.code_tlbc, 200);
	/* A tlbc_index outside the frame is refused, not trusted. */
	set_member(304, 88);
	assert_int_equal(pyoffsets_from_debug(block, sizeof(block), &o), -EINVAL);
}

/* What stacks --async reads: the generator group after gc (2 members on
 * 3.14, 5 on 3.15), the frame's stackpointer, the int and set groups,
 * and the renumbered frame states. */
static void test_async(void **state)
{
	struct pyoff_async a;

	(void)state;
	MAKE(py31410);
	assert_int_equal(pyoffsets_async_from_debug(block, sizeof(block), &a), 0);
	assert_int_equal(a.gen_size, 160);
	assert_int_equal(a.gen_iframe, 72);
	assert_int_equal(a.gen_frame_state, 67);
	assert_int_equal(a.frame_stackpointer, 64);
	assert_int_equal(a.lng[1], 16);
	assert_int_equal(a.lng[2], 24);
	assert_int_equal(a.state_yield_from, -1);
	assert_int_equal(a.await_depth, 1);
	MAKE(py3152);
	assert_int_equal(pyoffsets_async_from_debug(block, sizeof(block), &a), 0);
	assert_int_equal(a.gen_iframe, 72);
	assert_int_equal(a.gen_frame_state, 67);
	assert_int_equal(a.frame_stackpointer, 64);
	assert_int_equal(a.state_yield_from, 2);
	assert_int_equal(a.state_done, 5);
	assert_int_equal(a.await_depth, 2);
	/* A frame past the end of the generator is refused. */
	set_member(792 + 16, 400);
	assert_int_equal(pyoffsets_async_from_debug(block, sizeof(block), &a), -EINVAL);
	/* 3.13 has no asyncio debug section to go with it. */
	MAKE(py3130);
	assert_int_equal(pyoffsets_async_from_debug(block, sizeof(block), &a), -EPROTONOSUPPORT);
}

static void test_refused(void **state)
{
	struct profd_pyoffsets o;

	(void)state;
	/* A layout this code does not know yet. */
	MAKE(py3152);
	set_member(8, 0x031000f0);
	assert_int_equal(pyoffsets_from_debug(block, sizeof(block), &o), -EPROTONOSUPPORT);
	/* 3.12 and older have no block: a cookie claiming one is bogus. */
	set_member(8, 0x030c00f0);
	assert_int_equal(pyoffsets_from_debug(block, sizeof(block), &o), -EINVAL);
	/* 3.14's block read with 3.15's layout: implausible, refused. */
	MAKE(py31410);
	set_member(8, 0x030f02f0);
	assert_int_equal(pyoffsets_from_debug(block, sizeof(block), &o), -EINVAL);
	/* Short read, wrong cookie. */
	MAKE(py31410);
	assert_int_equal(pyoffsets_from_debug(block, 600, &o), -EINVAL);
	block[0] = 'X';
	assert_int_equal(pyoffsets_from_debug(block, sizeof(block), &o), -EINVAL);
	/* native_thread_id past the end of PyThreadState. */
	MAKE(py3152);
	set_member(248, 888);
	assert_int_equal(pyoffsets_from_debug(block, sizeof(block), &o), -EINVAL);
}

int main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_313),
	    cmocka_unit_test(test_314),
	    cmocka_unit_test(test_314_gil_implausible),
	    cmocka_unit_test(test_315),
	    cmocka_unit_test(test_314_free_threaded),
	    cmocka_unit_test(test_async),
	    cmocka_unit_test(test_refused),
	};
	/* clang-format on */

	return cmocka_run_group_tests(tests, NULL, NULL);
}
