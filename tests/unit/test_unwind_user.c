/* Unit tests for unwind_user: the userspace walk from a blocked thread's
 * pc and sp (no rbp) over made-up code and stack memory, honest and
 * lying: a whole walk, a frame that needs rbp nobody saved, a loop of
 * forged return addresses, a return address into no code, a CFA that
 * does not move up, memory that ends, and the deadline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "unwind_user.h"

#define STACK 0x7000ull
#define WORDS 4096

/* Made-up code: A at 0x1000 (CFA rsp+16, saves rbp at CFA-16), B at
 * 0x2000 (a frame-pointer function: CFA rbp+16, rbp at CFA-16), C at
 * 0x3000 (outermost), Z at 0x4000 (CFA rsp+0: never moves up). */
static const struct profd_unwind_row ROW_A = {0, 16, PROFD_UNWIND_CFA_RSP, -2, 0, {0}};
static const struct profd_unwind_row ROW_B = {0, 16, PROFD_UNWIND_CFA_RBP, -2, 0, {0}};
static const struct profd_unwind_row ROW_C = {0, 0, PROFD_UNWIND_CFA_END, 0, 0, {0}};
static const struct profd_unwind_row ROW_Z = {0, 0, PROFD_UNWIND_CFA_RSP, 0, 0, {0}};
/* arm64 rows: L a leaf (CFA sp, return address still in x30), M saves
 * x30 alone at CFA-16 (no frame pointer), R a frame record (x29 at
 * CFA-32, x30 just above it) with the CFA from x29. */
static const struct profd_unwind_row ROW_L = {0, 0, PROFD_UNWIND_CFA_SP, 0, PROFD_UNWIND_RA_LR,
					      {0}};
static const struct profd_unwind_row ROW_M = {0, 32, PROFD_UNWIND_CFA_SP, 0, -2, {0}};
static const struct profd_unwind_row ROW_R = {0, 32, PROFD_UNWIND_CFA_FP, -4, -3, {0}};

static uint64_t mem[WORDS]; /* the stack, from STACK up */

static const struct profd_unwind_row *row(void *arg, uint64_t pc)
{
	(void)arg;
	switch (pc & ~0xfffull) {
	case 0x1000: return &ROW_A;
	case 0x2000: return &ROW_B;
	case 0x3000: return &ROW_C;
	case 0x4000: return &ROW_Z;
	case 0x5000: return &ROW_L;
	case 0x6000: return &ROW_M;
	case 0x7000: return &ROW_R;
	default: return NULL;
	}
}

static int read_word(void *arg, uint64_t addr, uint64_t *out)
{
	(void)arg;
	if (addr < STACK || addr + 8 > STACK + sizeof(mem) || addr % 8)
		return -14; /* -EFAULT */
	*out = mem[(addr - STACK) / 8];
	return 0;
}

static void put(uint64_t addr, uint64_t v)
{
	mem[(addr - STACK) / 8] = v;
}

static const struct unwind_user_ops OPS = {.row = row, .read = read_word};

static enum unwind_user_end walk(uint64_t pc, uint64_t sp, uint64_t *pcs, uint32_t max,
				 uint32_t *n)
{
	struct unwind_user_regs r = {.pc = pc, .sp = sp};

	return unwind_user_walk(&OPS, r, pcs, max, n);
}

static int setup(void **state)
{
	(void)state;
	memset(mem, 0, sizeof(mem));
	return 0;
}

/* A -> B -> C: B needs rbp, which A saved. */
static void test_whole(void **state)
{
	uint64_t pcs[8];
	uint32_t n;

	(void)state;
	put(STACK + 0, STACK + 32); /* A saved B's rbp */
	put(STACK + 8, 0x2010);	    /* A returns into B */
	put(STACK + 32, 0);	    /* B saved C's rbp */
	put(STACK + 40, 0x3010);    /* B returns into C */
	assert_int_equal(walk(0x1000, STACK, pcs, 8, &n), UNWIND_USER_END);
	assert_int_equal(n, 3);
	assert_int_equal(pcs[0], 0x1000);
	assert_int_equal(pcs[1], 0x2010);
	assert_int_equal(pcs[2], 0x3010);
}

/* Blocked in B itself: its CFA needs rbp, which no callee saved. */
static void test_needs_bp(void **state)
{
	uint64_t pcs[8];
	uint32_t n;

	(void)state;
	assert_int_equal(walk(0x2000, STACK, pcs, 8, &n), UNWIND_USER_NEED_BP);
	assert_int_equal(n, 1);
}

/* Every return address forged into A: each frame 16 bytes up, until the
 * depth cap (and with memory that ends first, the failed read). */
static void test_forged_loop(void **state)
{
	uint64_t pcs[128];
	uint32_t n, i;

	(void)state;
	for (i = 0; i < WORDS; i++)
		mem[i] = 0x1010;
	assert_int_equal(walk(0x1000, STACK, pcs, 128, &n), UNWIND_USER_DEPTH);
	assert_int_equal(n, 128);
	assert_int_equal(walk(0x1000, STACK + sizeof(mem) - 64, pcs, 128, &n), UNWIND_USER_READ);
	assert_true(n <= 5);
}

/* A return address into no code; a CFA that stays put. */
static void test_forged_target(void **state)
{
	uint64_t pcs[8];
	uint32_t n;

	(void)state;
	put(STACK + 8, 0xdead0000);
	assert_int_equal(walk(0x1000, STACK, pcs, 8, &n), UNWIND_USER_UNKNOWN);
	assert_int_equal(n, 2);
	assert_int_equal(pcs[1], 0xdead0000);
	assert_int_equal(walk(0x4000, STACK, pcs, 8, &n), UNWIND_USER_BAD);
	assert_int_equal(n, 1);
}

/* A walk past its deadline stops before its first frame. */
static void test_deadline(void **state)
{
	struct unwind_user_ops ops = OPS;
	struct unwind_user_regs r = {.pc = 0x1000, .sp = STACK};
	uint64_t pcs[8];
	uint32_t n;

	(void)state;
	ops.deadline_ns = 1;
	assert_int_equal(unwind_user_walk(&ops, r, pcs, 8, &n), UNWIND_USER_TIME);
	assert_int_equal(n, 0);
}

/* A pointer authentication signature in the bits above a 48-bit
 * address, as arm64 leaves on a saved return address. */
#define PAC(a) ((a) | 0x002d000000000000ull)

/* arm64: leaf L (return address in x30, signed) -> M (x30 saved alone)
 * -> R (frame record, CFA from x29, which M left alone) -> C.  Every
 * return address is signed and comes back stripped. */
static void test_arm64_whole(void **state)
{
	struct unwind_user_ops ops = OPS;
	struct unwind_user_regs r = {.pc = 0x5000, .sp = STACK, .lr = PAC(0x6010ull)};
	uint64_t pcs[8];
	uint32_t n;

	(void)state;
	ops.code_mask = (1ull << 48) - 1;
	/* M: CFA = sp + 32, x30 at CFA - 16 */
	put(STACK + 16, PAC(0x7010ull));
	/* R: CFA = x29 + 32 with x29 = STACK + 32 + 16; record at CFA - 32 */
	r.bp = STACK + 48;
	r.have_bp = true;
	put(STACK + 48, 0);		  /* caller's x29 */
	put(STACK + 56, PAC(0x3010ull)); /* caller's pc */
	assert_int_equal(unwind_user_walk(&ops, r, pcs, 8, &n), UNWIND_USER_END);
	assert_int_equal(n, 4);
	assert_int_equal(pcs[1], 0x6010);
	assert_int_equal(pcs[2], 0x7010);
	assert_int_equal(pcs[3], 0x3010);
}

/* The link register holds the leaf's return address only: a row that
 * says "in x30" above the leaf stops the walk instead of reusing it, and
 * a leaf whose x30 is unknown stops at once. */
static void test_arm64_lr_leaf_only(void **state)
{
	struct unwind_user_ops ops = OPS;
	struct unwind_user_regs r = {.pc = 0x5000, .sp = STACK, .lr = 0x5010};
	uint64_t pcs[8];
	uint32_t n;

	(void)state;
	assert_int_equal(unwind_user_walk(&ops, r, pcs, 8, &n), UNWIND_USER_STOP);
	assert_int_equal(n, 2);
	assert_int_equal(pcs[1], 0x5010);
	r.lr = 0;
	assert_int_equal(unwind_user_walk(&ops, r, pcs, 8, &n), UNWIND_USER_STOP);
	assert_int_equal(n, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_whole, setup),
	    cmocka_unit_test_setup(test_needs_bp, setup),
	    cmocka_unit_test_setup(test_forged_loop, setup),
	    cmocka_unit_test_setup(test_forged_target, setup),
	    cmocka_unit_test_setup(test_deadline, setup),
	    cmocka_unit_test_setup(test_arm64_whole, setup),
	    cmocka_unit_test_setup(test_arm64_lr_leaf_only, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
