/* Unit tests for unwind_pack: the packed table (page index, rules, 32-bit
 * rows) must give, for every pc, the rule the built rows give.  The
 * reference is unwind_table_lookup(), a plain binary search over the
 * built rows; unwind_packed_lookup() is the step-for-step mirror of the
 * BPF lookup (tests/bpf/test_unwind_lookup.c runs the BPF one itself). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "unwind_pack.h"
#include "unwind_table.h"

static const struct unwind_packed_loc *loc_of(const struct unwind_packed *p,
					      struct unwind_packed_loc *l)
{
	*l = (struct unwind_packed_loc){0, p->npages, p->rules, p->rows};
	return l;
}

/* The packed lookup at row pc tpc agrees with the built rows. */
static void check_pc(const struct unwind_table *t, const struct unwind_packed *p, uint64_t tpc)
{
	const struct profd_unwind_row *want = unwind_table_lookup(t, t->pc_base + tpc);
	struct unwind_packed_loc l;
	struct profd_unwind_rule got;
	int rc = unwind_packed_lookup(p->words, p->nwords, loc_of(p, &l), (uint32_t)tpc, &got);

	/* Past the final GAP row's page the packed table has no page (-1),
	 * which the walk treats as the GAP row: both stop it. */
	if (!want || (rc != 0 && want->cfa_type == PROFD_UNWIND_CFA_GAP)) {
		if (rc == 0)
			assert_int_equal(got.cfa_type, PROFD_UNWIND_CFA_GAP);
		return;
	}
	if (rc != 0 || got.cfa_type != want->cfa_type || got.cfa_off != want->cfa_off ||
	    got.rbp_off != want->rbp_off || got.ra_off != want->ra_off)
		fail_msg("pc %#llx: packed rc %d type %u off %d rbp %d, rows type %u off %d rbp %d",
			 (unsigned long long)tpc, rc, got.cfa_type, got.cfa_off, got.rbp_off,
			 want->cfa_type, want->cfa_off, want->rbp_off);
}

/* Every row's first and last pc and one between, every page boundary,
 * and past the end. */
static void check_all(const struct unwind_table *t)
{
	struct unwind_packed p;
	uint64_t end, page;
	size_t i;

	assert_int_equal(unwind_pack(t, &p), 0);
	assert_int_equal(p.nrows, t->nrows);
	assert_int_equal(p.nwords, p.npages + PROFD_UNWIND_RULE_WORDS * p.nrules + p.nrows);
	for (i = 0; i < t->nrows; i++) {
		uint64_t pc = t->rows[i].pc;

		end = i + 1 < t->nrows ? t->rows[i + 1].pc : pc + 1;
		check_pc(t, &p, pc);
		check_pc(t, &p, pc + (end - pc) / 2);
		check_pc(t, &p, end - 1);
	}
	end = t->rows[t->nrows - 1].pc;
	for (page = 1ull << PROFD_UNWIND_PAGE_BITS; page <= end + (2u << PROFD_UNWIND_PAGE_BITS);
	     page += 1ull << PROFD_UNWIND_PAGE_BITS) {
		check_pc(t, &p, page - 1);
		check_pc(t, &p, page);
	}
	unwind_packed_free(&p);
}

static struct profd_unwind_row row(uint32_t pc, uint8_t type, int16_t off)
{
	return (struct profd_unwind_row){.pc = pc, .cfa_type = type, .cfa_off = off};
}

/* Rows on page boundaries, one byte either side, empty pages between,
 * a page with a single row: the cases the page step must get right. */
static void test_synthetic(void **state)
{
	struct profd_unwind_row rows[] = {
	    row(0, PROFD_UNWIND_CFA_RSP, 8),	    row(1, PROFD_UNWIND_CFA_RSP, 16),
	    row(0xffff, PROFD_UNWIND_CFA_RBP, 16),  row(0x10000, PROFD_UNWIND_CFA_RSP, 24),
	    row(0x10001, PROFD_UNWIND_CFA_GAP, 0),  row(0x50000, PROFD_UNWIND_CFA_RSP, 8),
	    row(0x7fff0, PROFD_UNWIND_CFA_RSP, 32), row(0x80001, PROFD_UNWIND_CFA_PLT, 11),
	    row(0x90000, PROFD_UNWIND_CFA_GAP, 0),
	};
	struct unwind_table t = {.pc_base = 0x1000, .rows = rows, .nrows = 9};
	struct unwind_packed p;
	uint64_t pc;

	(void)state;
	check_all(&t);
	assert_int_equal(unwind_pack(&t, &p), 0);
	for (pc = 0; pc < 0xa0000; pc += 0x7f)
		check_pc(&t, &p, pc);
	unwind_packed_free(&p);
}

static void test_rules_shared(void **state)
{
	struct profd_unwind_row rows[] = {
	    row(0, PROFD_UNWIND_CFA_RSP, 8), row(4, PROFD_UNWIND_CFA_RSP, 16),
	    row(9, PROFD_UNWIND_CFA_RSP, 8), row(20, PROFD_UNWIND_CFA_RSP, 16),
	    row(30, PROFD_UNWIND_CFA_GAP, 0),
	};
	struct unwind_table t = {.rows = rows, .nrows = 5};
	struct unwind_packed p;

	(void)state;
	assert_int_equal(unwind_pack(&t, &p), 0);
	assert_int_equal(p.nrules, 3);
	assert_int_equal(p.npages, 2);
	unwind_packed_free(&p);
}

/* More distinct rules than a 16-bit index holds: refused, not wrapped. */
static void test_too_many_rules(void **state)
{
	size_t n = PROFD_UNWIND_MAX_FILE_RULES + 1, i;
	struct profd_unwind_row *rows = calloc(n, sizeof(*rows));
	struct unwind_table t = {.rows = rows, .nrows = n};
	struct unwind_packed p;

	(void)state;
	assert_non_null(rows);
	for (i = 0; i < n; i++)
		rows[i] = (struct profd_unwind_row){.pc = (uint32_t)i * 4,
						    .cfa_type = PROFD_UNWIND_CFA_RSP,
						    .cfa_off = (int16_t)(i & 0x7fff),
						    .rbp_off = (int8_t)(i >> 15)};
	assert_int_equal(unwind_pack(&t, &p), -E2BIG);
	rows[0].pc = 1;
	assert_int_equal(unwind_pack(&t, &p), -EINVAL); /* row 0 must be at pc 0 */
	free(rows);
}

/* Real files: this test, libc, and when installed the interpreter and
 * the largest library of an ML process (libtorch_cpu: 1.4 million rows
 * over 85 MB). */
static void test_real_files(void **state)
{
	static const char *const files[] = {
	    "/proc/self/exe",
	    "/lib/x86_64-linux-gnu/libc.so.6",
	    "/usr/bin/python3.11",
	    "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13",
	};
	size_t i, checked = 0;

	(void)state;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct unwind_table t;
		int fd = open(files[i], O_RDONLY);

		if (fd < 0)
			continue;
		assert_int_equal(unwind_table_build_fd(fd, NULL, &t), 0);
		close(fd);
		if (t.nrows) {
			struct unwind_packed p;

			check_all(&t);
			assert_int_equal(unwind_pack(&t, &p), 0);
			printf("%s: %zu rows, %u rules, %u pages: %zu bytes packed, %zu built\n",
			       files[i], t.nrows, p.nrules, p.npages, (size_t)p.nwords * 4,
			       unwind_table_bytes(&t));
			unwind_packed_free(&p);
			checked++;
		}
		unwind_table_free(&t);
	}
	assert_true(checked >= 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_synthetic),
	    cmocka_unit_test(test_rules_shared),
	    cmocka_unit_test(test_too_many_rules),
	    cmocka_unit_test(test_real_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
