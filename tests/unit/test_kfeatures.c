/* kfeatures: the parts that need no kernel: release strings as
 * distributions write them, the lockdown file's selected word, version
 * comparison, and that a probe of this machine fills what needs no
 * privilege (release, files) and prints one line per fact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "kfeatures.h"

static void expect_release(const char *r, int ma, int mi, int pa)
{
	int major = -1, minor = -1, patch = -1;

	assert_int_equal(kfeatures_parse_release(r, &major, &minor, &patch), 0);
	assert_int_equal(major, ma);
	assert_int_equal(minor, mi);
	assert_int_equal(patch, pa);
}

static void test_release(void **state)
{
	int a, b, c;

	(void)state;
	expect_release("6.1.0-18-amd64", 6, 1, 0);           /* Debian 12 */
	expect_release("5.10.0-28-cloud-amd64", 5, 10, 0);   /* Debian 11 */
	expect_release("5.15.0-91-generic", 5, 15, 0);       /* Ubuntu 22.04 */
	expect_release("5.14.0-362.8.1.el9_3.x86_64", 5, 14, 0); /* RHEL 9 */
	expect_release("6.1.72-96.166.amzn2023.x86_64", 6, 1, 72); /* AL2023 */
	expect_release("6.18.44-fc-v669", 6, 18, 44);
	expect_release("6.8.0", 6, 8, 0);
	expect_release("6.9-rc2", 6, 9, 0);
	expect_release("6", 6, 0, 0);
	expect_release("4294967296.1.2", 2147483647, 1, 2); /* clamped, not wrapped */
	assert_int_equal(kfeatures_parse_release("", &a, &b, &c), -EINVAL);
	assert_int_equal(kfeatures_parse_release("linux-6.1", &a, &b, &c), -EINVAL);
	assert_int_equal(a + b + c, 0);
}

static void expect_lockdown(const char *text, const char *word)
{
	char out[32] = "junk";

	assert_int_equal(kfeatures_parse_lockdown(text, out, sizeof(out)), 0);
	assert_string_equal(out, word);
}

static void test_lockdown(void **state)
{
	char small[4];

	(void)state;
	expect_lockdown("[none] integrity confidentiality\n", "none");
	expect_lockdown("none [integrity] confidentiality\n", "integrity");
	expect_lockdown("none integrity [confidentiality]\n", "confidentiality");
	expect_lockdown("none integrity confidentiality\n", ""); /* nothing selected */
	expect_lockdown("", "");
	assert_int_equal(kfeatures_parse_lockdown("[none", small, sizeof(small)), -EINVAL);
	assert_int_equal(kfeatures_parse_lockdown("[integrity]", small, sizeof(small)),
			 -ENAMETOOLONG);
	assert_int_equal(kfeatures_parse_lockdown(NULL, small, sizeof(small)), -EINVAL);
}

static void test_at_least(void **state)
{
	struct kfeatures k = { .major = 5, .minor = 15 };

	(void)state;
	assert_true(kfeatures_at_least(&k, 5, 10));
	assert_true(kfeatures_at_least(&k, 5, 15));
	assert_false(kfeatures_at_least(&k, 5, 17));
	assert_false(kfeatures_at_least(&k, 6, 1));
	assert_true(kfeatures_at_least(&k, 4, 19));
}

/* One line per fact, each "name: value (why)", whatever the machine
 * answers (no privilege needed: a refused probe is a "no"). */
static void test_probe_prints(void **state)
{
	struct kfeatures k;
	struct utsname u;
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *out;
	int lines = 0;

	(void)state;
	assert_int_equal(kfeatures_probe(&k), 0);
	assert_int_equal(uname(&u), 0);
	assert_string_equal(k.release, u.release);
	assert_true(k.major >= 3);
	assert_int_equal(kfeatures_probe(NULL), -EINVAL);
	out = open_memstream(&text, &len);
	assert_non_null(out);
	kfeatures_print(&k, out);
	fclose(out);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		assert_non_null(strstr(line, ": "));
		assert_int_equal(line[strlen(line) - 1], ')');
		lines++;
	}
	assert_int_equal(lines, 20); /* release, 14 yes/no facts, 5 settings */
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_release),
		cmocka_unit_test(test_lockdown),
		cmocka_unit_test(test_at_least),
		cmocka_unit_test(test_probe_prints),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
