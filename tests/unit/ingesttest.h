/* ingesttest.h: the fixture of the ingest tests (header only: each
 * tests/unit/test_*.c is its own executable): ingest + aggregate +
 * proctable fed sample events from a fake stack source, symbolized
 * against this very process, and dumps of what they counted. */
#ifndef PROFD_TEST_INGESTTEST_H
#define PROFD_TEST_INGESTTEST_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "aggregate.h"
#include "ingest.h"
#include "procmaps.h"
#include "proctable.h"
#include "render_folded.h"
#include "symbolize.h"

__attribute__((noinline, used)) void victim_leaf(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}

__attribute__((noinline, used)) void victim_caller(void)
{
	victim_leaf();
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}

/* Named as CPython's: an off-CPU stack through it waits for the GIL. */
__attribute__((noinline, used)) void take_gil(void)
{
	__asm__ volatile("nop; nop; nop; nop; nop; nop; nop; nop");
}

/* The stack BPF would send: its record goes in before the next sample
 * naming it when present is set (once, as BPF sends it once). */
struct fake_source {
	uint64_t id;
	struct profd_stack st;
	bool present;
	uint32_t gens_told, last_gen;
};

static inline void fake_gen(void *ctx, uint32_t gen)
{
	struct fake_source *f = ctx;

	f->gens_told++;
	f->last_gen = gen;
}

static inline void send_record(struct ingest *in, struct fake_source *src)
{
	src->st.type = PROFD_EV_STACK;
	src->st.id = src->id;
	ingest_event(in, &src->st, PROFD_STACK_REC_BYTES(src->st.nr));
}

struct fixture {
	struct fake_source src;
	struct symbolizer *sym;
	struct proctable pt;
	struct aggregate agg;
	struct ingest in;
	uint64_t clock_ns; /* when set, the samples' time (tests of rate limits) */
};

static inline int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct symbolizer_opts so = { 0 };
	struct ingest_backend s = { 0 };

	so.kallsyms_path = "/nonexistent"; /* no privileges needed */
	f->sym = symbolizer_new(&so);
	assert_non_null(f->sym);
	proctable_init(&f->pt, 0, "/proc");
	assert_int_equal(aggregate_own_procs(&f->pt), 0);
	assert_int_equal(aggregate_init(&f->agg, 0), 0);
	s.stack_gen = fake_gen;
	s.ctx = &f->src;
	assert_int_equal(ingest_init(&f->in, &s, f->sym, &f->pt, &f->agg), 0);
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	struct fixture *f = *state;

	ingest_free(&f->in);
	proctable_free(&f->pt);
	aggregate_free(&f->agg);
	symbolizer_free(f->sym);
	free(f);
	return 0;
}

static inline uint64_t mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void send_sample(struct fixture *f, uint64_t ustack, uint32_t flags, uint32_t tid)
{
	struct profd_sample e;

	memset(&e, 0, sizeof(e));
	e.type = PROFD_EV_SAMPLE;
	e.pid = (uint32_t)getpid();
	e.tid = tid;
	e.time_ns = f->clock_ns ? f->clock_ns : mono_now();
	e.ustack_id = ustack;
	e.flags = flags;
	strcpy(e.comm, "worker");
	if (f->src.present && ustack == f->src.id) {
		send_record(&f->in, &f->src);
		f->src.present = false;
	}
	ingest_event(&f->in, &e, sizeof(e));
}

static inline char *dump_proc_query(struct fixture *f, struct proc *p, const struct agg_query *qp)
{
	struct agg_query q = *qp;
	struct stackset *ss = stackset_new();
	struct buf b;
	char *s;

	assert_non_null(p);
	assert_int_equal(aggregate_dump(&f->agg, p, &q, ss), 0);
	buf_init(&b);
	assert_int_equal(render_folded(ss, &b), 0);
	s = strdup(buf_cstr(&b) ? b.data : "");
	buf_free(&b);
	stackset_free(ss);
	return s;
}

static inline char *dump_query(struct fixture *f, const struct agg_query *q)
{
	return dump_proc_query(f, proctable_find_live(&f->pt, (uint32_t)getpid()), q);
}

static inline char *dump_proc_folded(struct fixture *f, struct proc *p)
{
	struct agg_query q = { 0, 0, 0, AGG_CPU, 0 };

	return dump_proc_query(f, p, &q);
}

static inline char *dump_folded(struct fixture *f, uint32_t flags, uint64_t since)
{
	struct agg_query q = { since, 0, flags, AGG_CPU, 0 };

	return dump_query(f, &q);
}

static inline char *dump_type(struct fixture *f, int type, uint64_t scale)
{
	struct agg_query q = { 0, 0, 0, type, scale };

	return dump_query(f, &q);
}

static inline void prepare_stack(struct fixture *f)
{
	f->src.id = 0xabcdef;
	f->src.present = true;
	f->src.st.kind = PROFD_STACK_USER;
	f->src.st.nr = 2;
	/* Leaf first, as bpf_get_stack returns them; the caller's entry is a
	 * return address just past the call. */
	f->src.st.ips[0] = (uint64_t)(uintptr_t)&victim_leaf + 2;
	f->src.st.ips[1] = (uint64_t)(uintptr_t)&victim_caller + 6;
}

#endif
