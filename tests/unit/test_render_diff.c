/* render_diff: colors, tooltips, widths and the "only in before" summary
 * of differential flamegraphs, read back from the SVG text. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "render_diff.h"
#include "render_folded.h"
#include "stackset.h"

static struct stackset *folded(const char *text)
{
	struct stackset *ss = stackset_new();

	assert_non_null(ss);
	assert_int_equal(folded_parse(text, strlen(text), ss), 0);
	return ss;
}

static const char before_text[] = "main;compute;grow_me 100\n"
				  "main;compute;shrink_me 400\n"
				  "main;compute;steady 200\n"
				  "main;old_path;gone_leaf 150\n"
				  "main;old_path;gone_leaf2 50\n"
				  "main;io 100\n";
static const char after_text[] = "main;compute;grow_me 500\n"
				 "main;compute;shrink_me 100\n"
				 "main;compute;steady 200\n"
				 "main;new_path 100\n"
				 "main;io 100\n";

struct frame {
	char name[64], counts[160];
	unsigned r, g, b;
	double width;
};

/* The drawn frame named name: its tooltip's second line and its fill. */
static bool find_frame(const char *svg, const char *name, struct frame *f)
{
	char key[80];
	const char *p, *nl, *end, *fill, *w;

	snprintf(key, sizeof(key), "><title>%s\n", name);
	p = strstr(svg, key);
	if (!p)
		return false;
	nl = strchr(p + 1, '\n');
	end = strstr(nl, "</title>");
	assert_non_null(end);
	snprintf(f->counts, sizeof(f->counts), "%.*s", (int)(end - nl - 1), nl + 1);
	w = strstr(end, "width=\"");
	fill = strstr(end, "fill=\"#");
	assert_non_null(w);
	assert_non_null(fill);
	f->width = strtod(w + 7, NULL);
	assert_int_equal(sscanf(fill + 7, "%2x%2x%2x", &f->r, &f->g, &f->b), 3);
	snprintf(f->name, sizeof(f->name), "%s", name);
	return true;
}

static void render(const char *b, const char *a, const struct diff_options *o, struct buf *out,
		   struct diff_summary *sum)
{
	struct stackset *before = folded(b), *after = folded(a);

	buf_init(out);
	assert_int_equal(render_diff(before, after, o, out, sum), 0);
	assert_non_null(buf_cstr(out));
	stackset_free(before);
	stackset_free(after);
}

static bool red(const struct frame *f)
{
	return f->r == 0xff && f->g == f->b && f->g < 0xff;
}

static bool blue(const struct frame *f)
{
	return f->b == 0xff && f->r == f->g && f->r < 0xff;
}

static bool grey(const struct frame *f)
{
	return f->r == f->g && f->g == f->b;
}

static void test_colors_and_tooltips(void **state)
{
	struct diff_summary sum;
	struct frame f, g;
	struct buf out;

	(void)state;
	render(before_text, after_text, NULL, &out, &sum);
	assert_true(find_frame(out.data, "grow_me", &f));
	assert_true(red(&f));
	assert_string_equal(f.counts,
			    "before: 100 (10.00%)  after: 500 (50.00%)  delta: +400 (+40.00 pp)");
	assert_true(find_frame(out.data, "shrink_me", &f));
	assert_true(blue(&f));
	assert_string_equal(f.counts,
			    "before: 400 (40.00%)  after: 100 (10.00%)  delta: -300 (-30.00 pp)");
	assert_true(find_frame(out.data, "steady", &f));
	assert_true(grey(&f));
	assert_non_null(strstr(f.counts, "delta: +0 (+0.00 pp)"));
	/* New in after: red, before 0.  Bigger change, deeper color. */
	assert_true(find_frame(out.data, "new_path", &g));
	assert_true(red(&g));
	assert_non_null(strstr(g.counts, "before: 0 (0.00%)"));
	assert_true(find_frame(out.data, "grow_me", &f));
	assert_true(f.g < g.g);
	/* Widths from after: grow_me is half of the 1180 px plot. */
	assert_true(f.width > 589.9 && f.width < 590.1);
	/* Gone paths are listed, not drawn, with their counts. */
	assert_false(find_frame(out.data, "old_path", &f));
	assert_non_null(
	    strstr(out.data, "Only in before (not drawn): 1 path, 200 samples (20.00%)"));
	assert_non_null(
	    strstr(out.data, ">old_path  \xe2\x86\x90 main: before 200 (20.00%), after 0<"));
	assert_int_equal(sum.before_total, 1000);
	assert_int_equal(sum.after_total, 1000);
	assert_int_equal(sum.grew, 3);   /* grow_me, compute, new_path */
	assert_int_equal(sum.shrank, 1); /* shrink_me */
	assert_int_equal(sum.same, 3);   /* steady, io, main */
	assert_int_equal(sum.gone, 1);
	assert_int_equal(sum.gone_samples, 200);
	/* The flamegraph script and its hooks are there. */
	assert_non_null(strstr(out.data, "<g id=\"frames\" data-total=\"1000\""));
	assert_non_null(strstr(out.data, "window.profd"));
	buf_free(&out);
}

/* Twice the samples everywhere: no change in shares, all red in counts. */
static void test_normalized_vs_absolute(void **state)
{
	struct diff_options o = { .absolute = true };
	struct frame f;
	struct buf out;

	(void)state;
	render("a;b 10\na;c 30\n", "a;b 20\na;c 60\n", NULL, &out, NULL);
	assert_true(find_frame(out.data, "b", &f) && grey(&f));
	assert_true(find_frame(out.data, "c", &f) && grey(&f));
	buf_free(&out);
	render("a;b 10\na;c 30\n", "a;b 20\na;c 60\n", &o, &out, NULL);
	assert_true(find_frame(out.data, "b", &f) && red(&f));
	assert_true(find_frame(out.data, "c", &f) && red(&f));
	assert_non_null(strstr(f.counts, "delta: +30 (+0.00 pp)"));
	buf_free(&out);
}

static void test_empty_sides(void **state)
{
	struct diff_summary sum;
	struct frame f;
	struct buf out;

	(void)state;
	render("x;y 5\nz 3\n", "", NULL, &out, &sum);
	assert_non_null(strstr(out.data, ">no samples after<"));
	assert_non_null(strstr(out.data, "Only in before (not drawn): 2 paths, 8 samples"));
	assert_int_equal(sum.gone, 2);
	buf_free(&out);
	render("", "x;y 5\n", NULL, &out, &sum);
	assert_true(find_frame(out.data, "y", &f) && red(&f));
	assert_int_equal(sum.gone, 0);
	buf_free(&out);
	render("", "", NULL, &out, &sum);
	assert_non_null(strstr(out.data, "</svg>"));
	buf_free(&out);
}

static void test_bad_input(void **state)
{
	struct diff_options o = { .width = 10 };
	struct stackset *ss = folded("a<&>\"b;c\xff 1\n");
	struct buf out;

	(void)state;
	buf_init(&out);
	assert_int_equal(render_diff(ss, ss, &o, &out, NULL), -EINVAL);
	assert_int_equal(render_diff(ss, ss, NULL, &out, NULL), 0);
	assert_non_null(buf_cstr(&out));
	assert_non_null(strstr(out.data, "<title>a&lt;&amp;&gt;&quot;b\n"));
	assert_non_null(strstr(out.data, "<title>c?\n"));
	assert_null(strstr(out.data, "\xff"));
	buf_free(&out);
	stackset_free(ss);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_colors_and_tooltips),
		cmocka_unit_test(test_normalized_vs_absolute),
		cmocka_unit_test(test_empty_sides),
		cmocka_unit_test(test_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
