/* libFuzzer target: the /proc/kallsyms parser and its lookups. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "kallsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kallsyms *ks = kallsyms_parse((const char *)data, size);
	uint64_t addr, off;
	const char *name;
	size_t i;

	if (!ks) {
		CHECK(errno == EPERM || errno == ENODATA || errno == ENOMEM);
		return 0;
	}
	CHECK(kallsyms_count(ks) > 0);
	/* Addresses taken from the input itself hit real symbols. */
	for (i = 0; i + 8 <= size && i < 256; i += 8) {
		addr = fuzz_u64(data, size, i, 8);
		name = kallsyms_lookup(ks, addr, &off);
		if (name) {
			CHECK(off <= addr);
			CHECK(*name && strlen(name) <= size);
		}
	}
	kallsyms_lookup(ks, 0, NULL);
	kallsyms_lookup(ks, UINT64_MAX, &off);
	kallsyms_free(ks);
	return 0;
}
