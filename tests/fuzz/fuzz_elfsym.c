/* libFuzzer target: the ELF symbol reader (elfsym over elffile) on a
 * hostile image, from memory (the vdso path) and from a file (the pread
 * path every mapped library takes).  Whatever opens must answer lookups
 * consistently. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "elfsym.h"
#include "fuzz.h"
#include "log.h"

static int memfd = -1;

static void check(const struct elfsym *e, const uint8_t *data, size_t size)
{
	uint64_t addr = fuzz_u64(data, size, size > 8 ? size - 8 : 0, 8), off, vaddr, sz;
	const uint8_t *id;
	const char *name;
	size_t len;

	name = elfsym_lookup(e, addr, &off);
	if (name) {
		CHECK(off <= addr);
		CHECK(strlen(name) < size);
	}
	elfsym_lookup(e, 0, NULL);
	elfsym_lookup(e, UINT64_MAX, NULL);
	elfsym_offset_to_vaddr(e, addr, &vaddr);
	elfsym_offset_to_vaddr(e, 0, &vaddr);
	if (!elfsym_lookup_symbol(e, "_PyRuntime", &vaddr, &sz))
		elfsym_lookup(e, vaddr, NULL);
	elfsym_lookup_symbol(e, "main", &vaddr, NULL);
	id = elfsym_build_id(e, &len);
	CHECK(!id == !len);
	CHECK(len <= 64);
	elfsym_nsyms(e);
	elfsym_has_debug_file(e);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR);
	memfd = memfd_create("fuzz_elfsym", MFD_CLOEXEC);
	if (memfd < 0) {
		perror("memfd_create");
		return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfsym *e;

	e = elfsym_open_mem(data, size);
	CHECK(e || errno);
	if (e) {
		check(e, data, size);
		elfsym_free(e);
	}
	/* No path: the debug-file search stays to the build-id directory. */
	if (!fuzz_fill_fd(memfd, data, size)) {
		e = elfsym_open_fd(memfd, NULL, NULL);
		if (e) {
			check(e, data, size);
			elfsym_free(e);
		}
	}
	return 0;
}
