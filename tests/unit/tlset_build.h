/* Building timelines in the renderers' tests (test_render_gecko.c,
 * test_render_trace.c): a stack from frame kinds and names, an event.
 * Include after cmocka.h and tlset.h. */
#ifndef PROFD_TEST_TLSET_BUILD_H
#define PROFD_TEST_TLSET_BUILD_H

#define T0 1700000000000000000ull /* CLOCK_REALTIME ns */
#define MS 1000000ull

/* The stack of depth frames (root first) in t's stack set. */
static inline uint32_t stack_of(struct tlset *t, const uint32_t *kinds, const char *const *names,
				uint32_t depth)
{
	uint32_t ids[8], i;
	int64_t id;

	assert_true(depth <= 8);
	for (i = 0; i < depth; i++) {
		id = stackset_intern(t->ss, kinds[i], names[i]);
		assert_true(id >= 0);
		ids[i] = (uint32_t)id;
	}
	id = stackset_add_at(t->ss, ids, depth, 1);
	assert_true(id >= 0);
	return (uint32_t)id;
}

static inline void event(struct tlset *t, uint64_t at, uint64_t w, uint32_t th, uint32_t st,
			 int type)
{
	struct tl_event e = {
	    .start_ns = at, .weight = w, .thread = th, .stack = st, .type = (uint32_t)type};

	assert_int_equal(tlset_add(t, &e), 0);
}

#endif
