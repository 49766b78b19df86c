/* test_elfsplit: a stripped program whose _PyEval_EvalFrameDefault GCC has
 * split into a hot and a .cold part (as in Debian's CPython 3.14 and
 * 3.15) still has the cold part named after the function; other split
 * functions and files with a symbol table are left as they were.  The
 * program is compiled at test time; a compiler that does not split
 * functions is a skip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "elfsym.h"
#include "symtest.h"

#define EVAL "_PyEval_EvalFrameDefault"

/* Unlikely branches calling a cold function: GCC moves them into F.cold,
 * entered by one jump per branch. */
/* clang-format off */
static const char prog_src[] =
	"#include <stdio.h>\n"
	"__attribute__((noinline, cold)) void rare(int i) { printf(\"rare %d\\n\", i); }\n"
	"__attribute__((noinline)) int hot(int x) { return x * 3 + 1; }\n"
	"#define BODY \\\n"
	"	int s = 0; \\\n"
	"	for (int i = 0; i < n; i++) { \\\n"
	"		if (__builtin_expect(v[i] == 7, 0)) { rare(i); s += hot(i); } \\\n"
	"		else if (__builtin_expect(v[i] == 9, 0)) { rare(-i); s -= hot(i); } \\\n"
	"		else if (__builtin_expect(v[i] < 0, 0)) { rare(2 * i); s ^= hot(-i); } \\\n"
	"		else s += v[i]; \\\n"
	"	} \\\n"
	"	return s;\n"
	"__attribute__((noinline)) int " EVAL "(int n, int *v) { BODY }\n"
	"__attribute__((noinline)) int other_loop(int n, int *v) { BODY }\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	int v[4] = {argc, 7, 9, -1};\n"
	"	(void)argv;\n"
	"	return (" EVAL "(4, v) + other_loop(4, v)) & 1;\n"
	"}\n";
/* clang-format on */

static const char *D;
static uint64_t eval_cold, eval_cold_size, other_cold, other_cold_size;

static int build(void **state)
{
	char path[PATH_MAX + 16];

	(void)state;
	D = symtest_setup("elfsplit");
	if (!D || !symtest_fmt(path, "%s/prog.c", D) || symtest_write_str(path, prog_src))
		return -1;
	/* -rdynamic: CPython exports its eval loop in .dynsym too. */
	if (symtest_sh("cd '%s' && %s -O2 -fPIE -pie -rdynamic -o prog prog.c && "
		       "strip --strip-all -o prog.stripped prog && "
		       "objcopy --remove-section .eh_frame_hdr prog.stripped prog.nohdr",
		       D, symtest_cc()))
		return -1;
	if (!symtest_fmt(path, "%s/prog", D))
		return -1;
	if (!symtest_nm(path, EVAL ".cold", &eval_cold, &eval_cold_size))
		eval_cold = 0;
	if (!symtest_nm(path, "other_loop.cold", &other_cold, &other_cold_size))
		other_cold = 0;
	return 0;
}

static struct elfsym *open_in_dir(const char *name)
{
	char path[PATH_MAX + 16];
	struct elfsym *e;

	assert_true(symtest_fmt(path, "%s/%s", D, name));
	e = elfsym_open(path, NULL);
	assert_non_null(e);
	return e;
}

static const char *name_at(const struct elfsym *e, uint64_t addr)
{
	uint64_t off;
	const char *n = elfsym_lookup(e, addr, &off);

	return n ? n : "(none)";
}

static void need_split(void)
{
	if (!eval_cold || !eval_cold_size || !other_cold) {
		print_message("  %s does not split functions into .cold parts\n", symtest_cc());
		skip();
	}
}

static void test_stripped_cold_part_named(void **state)
{
	struct elfsym *e;

	(void)state;
	need_split();
	e = open_in_dir("prog.stripped");
	assert_string_equal(name_at(e, eval_cold), EVAL);
	assert_string_equal(name_at(e, eval_cold + eval_cold_size - 1), EVAL);
	/* Only the eval loop's part is named: mixedstack keys on it, and
	 * a guess elsewhere would only mislead. */
	assert_string_not_equal(name_at(e, other_cold), EVAL);
	assert_string_not_equal(name_at(e, other_cold), "other_loop");
	elfsym_free(e);
}

static void test_symtab_wins(void **state)
{
	struct elfsym *e;

	(void)state;
	need_split();
	e = open_in_dir("prog");
	assert_string_equal(name_at(e, eval_cold), EVAL ".cold");
	elfsym_free(e);
}

/* Without .eh_frame_hdr there is no FDE table to bound the part: nothing
 * is named rather than a guessed range. */
static void test_no_fde_table(void **state)
{
	struct elfsym *e;

	(void)state;
	need_split();
	e = open_in_dir("prog.nohdr");
	assert_string_not_equal(name_at(e, eval_cold), EVAL);
	elfsym_free(e);
}

int main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stripped_cold_part_named),
	    cmocka_unit_test(test_symtab_wins),
	    cmocka_unit_test(test_no_fde_table),
	};
	/* clang-format on */

	return cmocka_run_group_tests(tests, build, NULL);
}
