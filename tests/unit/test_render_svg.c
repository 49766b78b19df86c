/* render_svg: structure and numbers of the generated flamegraph. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "buf.h"
#include "render_svg.h"
#include "stackset.h"

#define PLOT_W (1200.0 - 20.0) /* default width minus both paddings */

struct node {
	uint64_t s, n;
	unsigned d;
	char name[256];
	double pct, x, w, y;
	int rects;
};

static void add(struct stackset *ss, uint64_t count, const char *a, const char *b, const char *c)
{
	static const uint32_t kinds[] = { FRAME_PYTHON, FRAME_NATIVE, FRAME_KERNEL };
	const char *names[] = { a, b, c };
	uint32_t depth = c ? 3 : b ? 2 : 1;

	assert_int_equal(stackset_add_named(ss, kinds, names, depth, count), 0);
}

/* 100 samples: main 100 = f 70 (x 50, y 20) + g 30 (self). */
static struct stackset *known_profile(void)
{
	struct stackset *ss = stackset_new();

	assert_non_null(ss);
	add(ss, 50, "main (/a.py:1)", "f", "x_[k]");
	add(ss, 20, "main (/a.py:1)", "f", "y_[k]");
	add(ss, 30, "main (/a.py:1)", "<g> & co", NULL);
	return ss;
}

static char *render(const struct stackset *ss, const struct svg_options *o)
{
	struct buf out;

	buf_init(&out);
	assert_int_equal(render_svg(ss, o, &out), 0);
	assert_non_null(buf_cstr(&out));
	return out.data;
}

/* Tag balance: enough to catch unclosed or misnested elements. */
static void check_balanced(const char *s)
{
	const char *stack[64], *p = s, *end;
	size_t lens[64], depth = 0, n;

	while ((p = strchr(p, '<'))) {
		if (!strncmp(p, "<?", 2) || !strncmp(p, "<!--", 4) || !strncmp(p, "<![CDATA[", 9)) {
			end = strstr(p, p[1] == '?' ? "?>" : p[2] == '-' ? "-->" : "]]>");
			assert_non_null(end);
			p = end + 1;
			continue;
		}
		end = strchr(p, '>');
		assert_non_null(end);
		assert_null(memchr(p + 1, '<', (size_t)(end - p - 1))); /* '<' escaped */
		if (p[1] == '/') {
			assert_true(depth > 0);
			depth--;
			n = strcspn(p + 2, " >");
			assert_int_equal(n, lens[depth]);
			assert_memory_equal(p + 2, stack[depth], n);
		} else if (end[-1] != '/') {
			assert_true(depth < 64);
			stack[depth] = p + 1;
			lens[depth++] = strcspn(p + 1, " >/");
		}
		p = end + 1;
	}
	assert_int_equal(depth, 0);
}

static const char *tmp_dir(void)
{
	const char *dir = getenv("PROFD_TEST_TMP");
	char path[4096];

	if (!dir || !*dir)
		return "/tmp";
	assert_true(strlen(dir) < sizeof(path));
	strcpy(path, dir);
	/* mkdir -p */
	for (char *p = path + 1;; p++) {
		if (*p == '/' || !*p) {
			char c = *p;

			*p = '\0';
			assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
			*p = c;
		}
		if (!*p)
			break;
	}
	return dir;
}

/* Full XML parse when python3 is around; the tag check always runs. */
static void check_well_formed(const char *svg, const char *name)
{
	char path[4096], cmd[8400];
	FILE *f;

	check_balanced(svg);
	snprintf(path, sizeof(path), "%s/%s.svg", tmp_dir(), name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(svg, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	if (system("command -v python3 >/dev/null 2>&1"))
		return;
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' '%s'",
		 path);
	assert_int_equal(system(cmd), 0);
}

static const char *attr(const char *p, const char *name, const char *limit)
{
	const char *a = strstr(p, name);

	assert_non_null(a);
	assert_true(a < limit);
	return a + strlen(name);
}

/* Parse every <g data-s=...> frame group back into numbers. */
static size_t parse_nodes(const char *svg, struct node *nodes, size_t max)
{
	const char *p = strstr(svg, "<g id=\"frames\"");
	size_t count = 0;

	assert_non_null(p);
	while ((p = strstr(p, "<g data-s=\""))) {
		const char *end = strstr(p, "</g>"), *t, *r;
		struct node *nd = &nodes[count];

		assert_non_null(end);
		assert_true(count < max);
		memset(nd, 0, sizeof(*nd));
		nd->s = strtoull(p + 11, NULL, 10);
		nd->n = strtoull(attr(p, "data-n=\"", end), NULL, 10);
		nd->d = (unsigned)strtoul(attr(p, "data-d=\"", end), NULL, 10);
		t = attr(p, "<title>", end);
		assert_true(strcspn(t, "\n") < sizeof(nd->name));
		memcpy(nd->name, t, strcspn(t, "\n"));
		nd->pct = strtod(attr(t + strcspn(t, "\n"), " (", end), NULL);
		for (r = p; (r = strstr(r, "<rect")) && r < end; r++)
			nd->rects++;
		r = attr(p, "<rect", end);
		nd->x = strtod(attr(r, "x=\"", end), NULL);
		nd->y = strtod(attr(r, "y=\"", end), NULL);
		nd->w = strtod(attr(r, "width=\"", end), NULL);
		count++;
		p = end;
	}
	return count;
}

static const struct node *find(const struct node *nodes, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(nodes[i].name, name))
			return &nodes[i];
	fail_msg("no frame named %s", name);
	return NULL;
}

static void test_known_profile(void **state)
{
	static const struct {
		const char *name;
		uint64_t n;
		unsigned d;
	} want[] = {
		{ "all", 100, 0 },	     { "main (/a.py:1)", 100, 1 }, { "f", 70, 2 },
		{ "&lt;g&gt; &amp; co", 30, 2 }, { "x_[k]", 50, 3 },	   { "y_[k]", 20, 3 },
	};
	struct stackset *ss = known_profile();
	struct node nodes[16];
	char *svg = render(ss, NULL);
	size_t n = parse_nodes(svg, nodes, 16);

	(void)state;
	check_well_formed(svg, "known");
	assert_int_equal(n, 6);
	for (size_t i = 0; i < 6; i++) {
		const struct node *nd = find(nodes, n, want[i].name);

		assert_int_equal(nd->n, want[i].n);
		assert_int_equal(nd->d, want[i].d);
		assert_int_equal(nd->rects, 1);
		assert_true(fabs(nd->w - (double)nd->n / 100.0 * PLOT_W) < 0.006);
		assert_true(fabs(nd->x - (10 + (double)nd->s / 100.0 * PLOT_W)) < 0.006);
		assert_true(fabs(nd->pct - (double)nd->n) < 0.006); /* total is 100 */
	}
	/* Siblings do not overlap and children sit inside their parent. */
	assert_true(find(nodes, n, "x_[k]")->x >= find(nodes, n, "f")->x);
	assert_true(find(nodes, n, "y_[k]")->x >= find(nodes, n, "x_[k]")->x + 50 * PLOT_W / 100 - 0.01);
	/* Flame view: the root is the bottom row. */
	assert_true(find(nodes, n, "all")->y > find(nodes, n, "x_[k]")->y);
	assert_non_null(strstr(svg, "<title>f\n70 samples (70.00%), self 0</title>"));
	assert_null(strstr(svg, "<g> & co"));
	free(svg);
	stackset_free(ss);
}

static void test_header(void **state)
{
	struct stackset *ss = known_profile();
	struct svg_options o = { .subtitle = "sub & title", .inverted = true, .width = 800 };
	struct node nodes[16];
	char *svg;
	size_t n;

	(void)state;
	assert_int_equal(stackset_set_str(&ss->title, "python3 (pid 42)"), 0);
	ss->start_ns = 1700000000ull * 1000000000ull;
	ss->end_ns = ss->start_ns + 30ull * 1000000000ull;
	ss->rate_hz = 99;
	svg = render(ss, &o);
	check_well_formed(svg, "header");
	assert_non_null(strstr(svg, ">python3 (pid 42)</text>"));
	assert_non_null(strstr(svg, ">sub &amp; title</text>"));
	assert_non_null(strstr(svg, "cpu profile"));
	assert_non_null(strstr(svg, "2023-11-14 22:13:20 \xe2\x80\x93 22:13:50 UTC (30.0 s)"));
	assert_non_null(strstr(svg, "100 samples"));
	assert_non_null(strstr(svg, "99 Hz"));
	assert_non_null(strstr(svg, "width=\"800\""));
	assert_non_null(strstr(svg, "data-inv=\"1\""));
	/* Legend lists the kinds present. */
	assert_non_null(strstr(svg, ">Python</text>"));
	assert_non_null(strstr(svg, ">kernel</text>"));
	assert_null(strstr(svg, ">GPU</text>"));
	n = parse_nodes(svg, nodes, 16);
	assert_int_equal(n, 6);
	/* Icicle: the root is the top row. */
	assert_true(find(nodes, n, "all")->y < find(nodes, n, "x_[k]")->y);
	assert_true(fabs(find(nodes, n, "f")->w - 0.7 * 780) < 0.006);
	free(svg);
	stackset_free(ss);
}

/* A plot taller than a first screen starts as an icicle, so a deep
 * profile opens on its root; --flame (o.flame) keeps the root at the
 * bottom, and a shallow profile keeps it there by default. */
static void test_deep_profile_starts_as_icicle(void **state)
{
	struct stackset *shallow = known_profile(), *deep = stackset_new();
	struct svg_options o = { .width = 800 };
	uint32_t kinds[150];
	const char *names[150];
	char buf[150][16];
	char *svg;
	int i;

	(void)state;
	assert_non_null(deep);
	for (i = 0; i < 150; i++) {
		kinds[i] = FRAME_NATIVE;
		snprintf(buf[i], sizeof(buf[i]), "f%d", i);
		names[i] = buf[i];
	}
	assert_int_equal(stackset_add_named(deep, kinds, names, 150, 5), 0);
	svg = render(deep, &o);
	assert_non_null(strstr(svg, "data-inv=\"1\""));
	free(svg);
	o.flame = true;
	svg = render(deep, &o);
	assert_non_null(strstr(svg, "data-inv=\"0\""));
	free(svg);
	o.flame = false;
	svg = render(shallow, &o);
	assert_non_null(strstr(svg, "data-inv=\"0\""));
	free(svg);
	stackset_free(shallow);
	stackset_free(deep);
}

static void test_labels(void **state)
{
	static const uint32_t kinds[] = { FRAME_NATIVE, FRAME_NATIVE };
	const char *names[2] = { "a_very_long_function_name_that_cannot_possibly_fit_in_a_small_box",
				 "bad\xff\xfeutf8\xc3" };
	struct stackset *ss = stackset_new();
	char *svg, *t;

	(void)state;
	assert_int_equal(stackset_add_named(ss, kinds, names, 1, 1), 0);
	assert_int_equal(stackset_add_named(ss, kinds, names + 1, 1, 1), 0);
	assert_int_equal(stackset_add_named(ss, kinds, names, 1, 18), 0); /* 19 of 20 */
	svg = render(ss, &(struct svg_options){ .width = 300 });
	check_well_formed(svg, "labels");
	/* 0.95 * 280 px holds 35 characters: 33 of the name, then "..". */
	t = strstr(svg, "<text x=");
	while (t && strncmp(strchr(t, '>'), ">a_very", 7))
		t = strstr(t + 1, "<text x=");
	assert_non_null(t);
	assert_non_null(strstr(t, ">a_very_long_function_name_that_ca..</text>"));
	assert_non_null(strstr(svg, "bad??utf8?"));
	free(svg);
	stackset_free(ss);
}

/* Occurrences of needle in s.  memmem, not strstr: the sanitizer's strstr
 * measures the whole haystack on every call, quadratic over a big SVG. */
static size_t count_of(const char *s, const char *needle)
{
	const char *end = s + strlen(s), *p = s;
	size_t n = 0, len = strlen(needle);

	while ((p = memmem(p, (size_t)(end - p), needle, len))) {
		n++;
		p++;
	}
	return n;
}

static void test_coalescing(void **state)
{
	struct stackset *ss = stackset_new();
	char mod[32], fn[32], *full, *small;
	size_t groups_full, groups_small;

	(void)state;
	for (int i = 0; i < 100000; i++) {
		snprintf(mod, sizeof(mod), "mod_%d", i % 100);
		snprintf(fn, sizeof(fn), "fn_%d", i);
		add(ss, i < 10 ? 20000 : 1, "root", mod, fn);
	}
	assert_int_equal(ss->nstacks, 100000);
	full = render(ss, &(struct svg_options){ .min_frame_px = -1 });
	small = render(ss, NULL);
	groups_full = count_of(full, "<g data-s=");
	groups_small = count_of(small, "<g data-s=");
	/* all + root + 100 modules + 100,000 leaves. */
	assert_int_equal(groups_full, 100102);
	/* The 99,990 one-sample leaves are ~0.004 px wide. */
	assert_int_equal(groups_small, 112);
	assert_true(strlen(small) < 200000);
	assert_non_null(strstr(small, "99,990 frames under 0.1 px not drawn"));
	check_well_formed(small, "coalesced");
	free(full);
	free(small);
	stackset_free(ss);
}

static void test_empty(void **state)
{
	struct stackset *ss = stackset_new();
	char *svg;

	(void)state;
	svg = render(ss, NULL);
	check_well_formed(svg, "empty");
	assert_non_null(strstr(svg, ">no samples</text>"));
	assert_null(strstr(svg, "<g data-s="));
	assert_non_null(strstr(svg, "0 samples"));
	free(svg);
	stackset_free(ss);
}

static void test_deterministic_and_errors(void **state)
{
	struct stackset *ss = known_profile();
	char *a = render(ss, NULL), *b = render(ss, NULL);
	struct buf out;

	(void)state;
	assert_string_equal(a, b);
	buf_init(&out);
	assert_int_equal(render_svg(ss, &(struct svg_options){ .width = 50 }, &out), -EINVAL);
	buf_free(&out);
	free(a);
	free(b);
	stackset_free(ss);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_profile), cmocka_unit_test(test_header),
		cmocka_unit_test(test_deep_profile_starts_as_icicle),
		cmocka_unit_test(test_labels),	      cmocka_unit_test(test_coalescing),
		cmocka_unit_test(test_empty),	      cmocka_unit_test(test_deterministic_and_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
