/* ingest naming Python frames through the worker (ingest_pynames.c): a
 * frame never named waits for its answer, a name due for its check is
 * counted under the name last checked while asked again, a changed name
 * reaches memoized stacks, another code object at a freed one's address
 * is named afresh, an unreadable one says so, and an answer for the
 * program before an exec is dropped. */
#include "ingesttest.h"

#include "pyproc.h"
#include "pyruntime.h"

#define PYSTACK_ID 0x5059ull
#define CODE 0x7f0000001000ull
#define FP 0xc0de1u /* the code object's fingerprint */
#define EPOCH_NS (1ull << INGEST_PY_RECHECK_SHIFT)

static struct ingest_py_ask asks[16];
static uint64_t start_ns; /* this process's start, as BPF sends it */
static struct proc *cur;   /* its entry, live or exited since */
static unsigned nasks;

static void fake_py_name(void *ctx, const struct ingest_py_ask *a, const struct pyruntime *rt)
{
	(void)ctx;
	assert_non_null(rt);
	assert_true(nasks < 16);
	asks[nasks++] = *a;
}

/* Detection is never answered: the test gives the process its runtime. */
static void fake_py_detect(void *ctx, uint32_t pid, uint64_t start_time, uint32_t req)
{
	(void)ctx;
	(void)pid;
	(void)start_time;
	(void)req;
}

/* This process's start time as samples carry it (ns since boot, in
 * whole clock ticks, so that /proc's starttime reads the same). */
static uint64_t own_start_ns(void)
{
	char buf[1024], *p;
	unsigned long long ticks = 0;
	FILE *fp = fopen("/proc/self/stat", "r");
	int field;

	assert_non_null(fp);
	assert_non_null(fgets(buf, sizeof(buf), fp));
	fclose(fp);
	p = strrchr(buf, ')');
	assert_non_null(p);
	for (field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	assert_non_null(p);
	ticks = strtoull(p + 1, NULL, 10);
	return ticks * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

static int setup_py(void **state)
{
	struct fixture *f;

	setup(state);
	f = *state;
	f->in.be.py_name = fake_py_name;
	f->in.be.py_detect = fake_py_detect;
	f->clock_ns = 10 * EPOCH_NS;
	nasks = 0;
	start_ns = own_start_ns();
	return 0;
}

/* One sample of a one-frame Python stack (its record sent first): the
 * code object at CODE with fingerprint fp, under stack id. */
static void send_py_frame(struct fixture *f, uint64_t id, uint32_t fp)
{
	struct profd_stack st = { .type = PROFD_EV_STACK, .kind = PROFD_STACK_PYTHON, .nr = 2,
				  .id = id };
	struct profd_sample e = { .type = PROFD_EV_SAMPLE, .pid = (uint32_t)getpid(),
				  .tid = (uint32_t)getpid(), .pystack_id = id };

	st.ips[0] = CODE;
	st.ips[1] = (uint64_t)fp << PROFD_PYFRAME_FP_SHIFT |
		    (uint64_t)PROFD_PYFRAME_ENTRY << PROFD_PYFRAME_FLAGS_SHIFT | 10;
	ingest_event(&f->in, &st, PROFD_STACK_REC_BYTES(st.nr));
	e.time_ns = f->clock_ns;
	e.start_ns = start_ns;
	strcpy(e.comm, "py");
	ingest_event(&f->in, &e, sizeof(e));
}

static void send_py_sample(struct fixture *f)
{
	send_py_frame(f, PYSTACK_ID, FP);
}

/* A runtime as detection would leave it (its fields unused here). */
static void attach_runtime(struct proc *p)
{
	struct pyruntime *rt = calloc(1, sizeof(*rt));

	assert_non_null(rt);
	pyproc_attach(p->ing->py, rt);
}

static struct proc *py_proc(struct fixture *f)
{
	struct proc *p;

	send_py_sample(f); /* makes the process; no runtime yet */
	p = proctable_find_live(&f->pt, (uint32_t)getpid());
	assert_non_null(p);
	attach_runtime(p);
	ingest_end_batch(&f->in);
	ingest_end_batch(&f->in);
	cur = p;
	return p;
}

static void answer(struct fixture *f, unsigned i, int err, const char *name)
{
	assert_true(i < nasks);
	ingest_py_named(&f->in, &asks[i], err, name, false);
}

/* Samples counted under stacks with a frame named want. */
static long count_of(struct fixture *f, const char *want)
{
	char *s = dump_proc_folded(f, cur), *line, *save = NULL;
	long n = 0;

	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strstr(line, want))
			n += strtol(strrchr(line, ' ') + 1, NULL, 10);
	free(s);
	return n;
}

static void test_new_frame_waits_for_its_name(void **state)
{
	struct fixture *f = *state;
	uint64_t counted;

	py_proc(f);
	counted = f->in.c.aggregated;
	send_py_sample(f);
	assert_int_equal(nasks, 1);
	assert_int_equal(asks[0].addr, CODE);
	assert_int_equal(asks[0].off, 10);
	assert_int_equal(asks[0].fp, FP);
	assert_false(asks[0].task);
	ingest_end_batch(&f->in);
	assert_int_equal(f->in.c.aggregated, counted); /* waits */
	send_py_sample(f);
	assert_int_equal(nasks, 1); /* asked once */
	answer(f, 0, 0, "work (job.py:3)");
	ingest_end_batch(&f->in);
	assert_int_equal(f->in.c.aggregated, counted + 2);
	assert_int_equal(count_of(f, "work (job.py:3)"), 2);
	assert_int_equal(count_of(f, "being read"), 0);
	assert_int_equal(f->in.c.py_names_asked, 1);
}

static void test_due_check_counts_old_name_then_renames(void **state)
{
	struct fixture *f = *state;
	uint64_t counted;

	py_proc(f);
	send_py_sample(f);
	answer(f, 0, 0, "work (job.py:3)");
	ingest_end_batch(&f->in);
	send_py_sample(f); /* memoized */
	f->clock_ns += EPOCH_NS;
	counted = f->in.c.aggregated;
	send_py_sample(f); /* due: counted now, asked again */
	assert_int_equal(f->in.c.aggregated, counted + 1);
	assert_int_equal(nasks, 2);
	assert_int_equal(asks[1].epoch, asks[0].epoch + 1);
	/* The code object was freed and its memory reused by other code. */
	answer(f, 1, 0, "other (lib.py:9)");
	send_py_sample(f);
	assert_int_equal(nasks, 2);
	assert_int_equal(count_of(f, "work (job.py:3)"), 3);
	assert_int_equal(count_of(f, "other (lib.py:9)"), 1);
}

/* Another code object at a freed one's address, in the same epoch: its
 * frames carry another fingerprint (another stack too), so they are
 * named afresh, never with the freed one's name. */
static void test_reused_address_named_afresh(void **state)
{
	struct fixture *f = *state;

	py_proc(f);
	send_py_sample(f);
	answer(f, 0, 0, "work_a (first_file.py:6)");
	ingest_end_batch(&f->in);
	send_py_frame(f, PYSTACK_ID + 1, FP + 1);
	assert_int_equal(nasks, 2);
	assert_int_equal(asks[1].addr, CODE);
	assert_int_equal(asks[1].fp, FP + 1);
	answer(f, 1, 0, "work_b (second_file.py:6)");
	ingest_end_batch(&f->in);
	send_py_frame(f, PYSTACK_ID + 1, FP + 1); /* memoized */
	assert_int_equal(nasks, 2);
	assert_int_equal(count_of(f, "work_a (first_file.py:6)"), 1);
	assert_int_equal(count_of(f, "work_b (second_file.py:6)"), 2);
	/* The worker found the address reused again before it read the
	 * name: no name for that fingerprint (pycode's -ESTALE). */
	send_py_frame(f, PYSTACK_ID + 2, FP + 2);
	answer(f, 2, -ESTALE, NULL);
	ingest_end_batch(&f->in);
	assert_int_equal(count_of(f, "[python frame unreadable]"), 1);
	assert_int_equal(count_of(f, "work_b (second_file.py:6)"), 2);
}

static void test_unreadable_says_so(void **state)
{
	struct fixture *f = *state;

	py_proc(f);
	send_py_sample(f);
	answer(f, 0, -EFAULT, NULL);
	ingest_end_batch(&f->in);
	send_py_sample(f); /* not asked again this epoch */
	assert_int_equal(nasks, 1);
	assert_int_equal(count_of(f, "[python frame unreadable]"), 2);
}

static void test_answer_from_before_exec_dropped(void **state)
{
	struct fixture *f = *state;
	struct proc *p = py_proc(f);

	send_py_sample(f);
	proctable_exec(&f->pt, p->pid, "py");
	attach_runtime(p); /* the new program runs Python too */
	answer(f, 0, 0, "old (gone.py:1)");
	assert_int_equal(p->ing->py->names.len, 0);
}

/* The last samples of a program come after its exit: a name asked while
 * it lived still names them; one that cannot be read any more says so. */
static void test_answer_after_exit_names_late_samples(void **state)
{
	struct fixture *f = *state;
	struct proc *p = py_proc(f);

	send_py_sample(f);
	proctable_exit(&f->pt, p->pid, 1);
	answer(f, 0, 0, "work (job.py:3)");
	ingest_end_batch(&f->in);
	ingest_end_batch(&f->in);
	send_py_sample(f); /* later still: from the cache, nothing asked */
	assert_int_equal(nasks, 1);
	assert_int_equal(count_of(f, "work (job.py:3)"), 2);
}

static void test_gone_before_read_is_unreadable(void **state)
{
	struct fixture *f = *state;
	struct proc *p = py_proc(f);

	send_py_sample(f);
	proctable_exit(&f->pt, p->pid, 1);
	answer(f, 0, -ESRCH, NULL); /* the worker skips a forgotten program */
	ingest_end_batch(&f->in);
	ingest_end_batch(&f->in);
	assert_int_equal(count_of(f, "[python frame unreadable]"), 1);
	assert_int_equal(count_of(f, "being read"), 0);
}

/* A name the worker could not take (its queue full) is not "unreadable":
 * the name last checked stands and it is asked again. */
static void test_busy_worker_asked_again(void **state)
{
	struct fixture *f = *state;

	py_proc(f);
	send_py_sample(f);
	answer(f, 0, 0, "work (job.py:3)");
	ingest_end_batch(&f->in);
	f->clock_ns += EPOCH_NS;
	send_py_sample(f);
	assert_int_equal(nasks, 2);
	answer(f, 1, -EBUSY, NULL);
	send_py_sample(f);
	assert_int_equal(nasks, 3);
	assert_int_equal(count_of(f, "work (job.py:3)"), 3);
	assert_int_equal(count_of(f, "unreadable"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_frame_waits_for_its_name, setup_py, teardown),
		cmocka_unit_test_setup_teardown(test_due_check_counts_old_name_then_renames, setup_py,
						teardown),
		cmocka_unit_test_setup_teardown(test_reused_address_named_afresh, setup_py, teardown),
		cmocka_unit_test_setup_teardown(test_unreadable_says_so, setup_py, teardown),
		cmocka_unit_test_setup_teardown(test_answer_from_before_exec_dropped, setup_py,
						teardown),
		cmocka_unit_test_setup_teardown(test_answer_after_exit_names_late_samples, setup_py,
						teardown),
		cmocka_unit_test_setup_teardown(test_gone_before_read_is_unreadable, setup_py,
						teardown),
		cmocka_unit_test_setup_teardown(test_busy_worker_asked_again, setup_py, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
