/* Shared by the libFuzzer targets: an invariant check that libFuzzer
 * reports as a crash, and a memfd for the parsers that want a file. */
#ifndef PROFD_FUZZ_H
#define PROFD_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHECK(cond)                       \
	do {                              \
		if (!(cond))              \
			__builtin_trap(); \
	} while (0)

/* Little-endian integer from the input, zero past its end. */
static inline uint64_t fuzz_u64(const uint8_t *data, size_t size, size_t off, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < n && off + i < size; i++)
		v |= (uint64_t)data[off + i] << (8 * i);
	return v;
}

/* Replace the whole content of fd with data[0..size); 0 or -1. */
static inline int fuzz_fill_fd(int fd, const uint8_t *data, size_t size)
{
	size_t done = 0;

	if (ftruncate(fd, 0))
		return -1;
	while (done < size) {
		ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);

		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

#endif
