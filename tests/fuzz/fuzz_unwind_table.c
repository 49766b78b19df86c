/* libFuzzer target: building the unwind table from a hostile ELF image
 * (libdw reads the CFI, we check the headers and turn it into rows), both
 * from memory (the vdso) and from a file descriptor, the way profd reads
 * a profiled process's libraries (pread, .debug_frame through
 * dwarf_begin_elf, the size caps).  A built table must be sorted, end
 * with a GAP row, and answer lookups as the BPF side would. */
#include <errno.h>
#include <stdint.h>

#include "fuzz.h"
#include "log.h"
#include "unwind_table.h"

static void check(const struct unwind_table *t, const uint8_t *data, size_t size)
{
	const struct profd_unwind_row *r;
	size_t i;

	CHECK(!t->nrows || t->rows);
	CHECK(t->nsegs <= UNWIND_TABLE_MAX_SEGMENTS);
	for (i = 0; i < t->nrows; i++) {
		CHECK(!i || t->rows[i - 1].pc < t->rows[i].pc);
		CHECK(unwind_cfa_name(t->rows[i].cfa_type)[0] != '?');
		r = unwind_table_lookup(t, t->pc_base + t->rows[i].pc);
		CHECK(r == &t->rows[i]);
	}
	if (t->nrows)
		CHECK(t->rows[t->nrows - 1].cfa_type == PROFD_UNWIND_CFA_GAP);
	CHECK(unwind_table_bytes(t) == t->nrows * sizeof(*t->rows));
	unwind_table_lookup(t, fuzz_u64(data, size, 0, 8));
	unwind_table_lookup(t, 0);
	unwind_table_lookup(t, UINT64_MAX);
}

static int memfd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR);
	memfd = memfd_create("fuzz_unwind_table", MFD_CLOEXEC);
	return 0;
}

static void verify(int err, struct unwind_table *t, const uint8_t *data, size_t size)
{
	if (err) {
		CHECK(err == -EINVAL || err == -E2BIG || err == -ENOMEM);
		CHECK(!t->rows && !t->nrows);
		return;
	}
	check(t, data, size);
	unwind_table_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_table t;

	verify(unwind_table_build_mem(data, size, NULL, &t), &t, data, size);
	if (memfd >= 0 && !fuzz_fill_fd(memfd, data, size))
		verify(unwind_table_build_fd(memfd, NULL, &t), &t, data, size);
	return 0;
}
