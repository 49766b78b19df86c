/* libFuzzer target: the folded-stack parser, and render_folded on what
 * it accepts.  Rendering makes names safe and merges stacks that print
 * the same, so render(parse(x)) must parse again to the same total and
 * render to the same bytes (a fixed point after one round). */
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "fuzz.h"
#include "log.h"
#include "render_folded.h"
#include "stackset.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stackset *ss1 = stackset_new(), *ss2 = stackset_new();
	struct buf out1, out2;
	size_t i;

	CHECK(ss1 && ss2);
	buf_init(&out1);
	buf_init(&out2);
	if (folded_parse((const char *)data, size, ss1))
		goto out;
	for (i = 0; i < ss1->nframes; i++)
		CHECK(ss1->frames[i].kind ==
		      folded_infer_kind(ss1->frames[i].name, strlen(ss1->frames[i].name)));
	CHECK(render_folded(ss1, &out1) == 0);
	CHECK(folded_parse((const char *)out1.data, out1.len, ss2) == 0);
	CHECK(ss2->total == ss1->total);
	CHECK(render_folded(ss2, &out2) == 0);
	CHECK(out1.len == out2.len && (!out1.len || !memcmp(out1.data, out2.data, out1.len)));
out:
	buf_free(&out1);
	buf_free(&out2);
	stackset_free(ss1);
	stackset_free(ss2);
	return 0;
}
