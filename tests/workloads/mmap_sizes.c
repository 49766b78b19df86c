/* mmap_sizes: mappings of known sizes from known functions, for --type
 * mmap.  It spins until the file GO exists (so profd has found the
 * process and read its unwind tables: libc has no frame pointers), then
 * maps 4 x 64 MiB in alloc_big and 32 x 1 MiB in
 * alloc_small, unmaps two of the big ones in free_some, grows a 4 MiB
 * mapping to 12 MiB with mremap in remap_grow (its first 4 MiB counted
 * there too) and moves the heap's end up 16 MiB with sbrk in heap_grow.
 * Then it writes "function bytes" lines (signed) to the truth file and
 * sleeps until killed.  None of the pages is touched.
 * usage: mmap_sizes TRUTH_FILE GO */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024L * 1024L)

static void *big[4];
static volatile uint64_t sink;

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

__attribute__((noinline)) long alloc_big(void)
{
	for (int i = 0; i < 4; i++)
		big[i] = map_anon(64 * MIB);
	return 4 * 64 * MIB;
}

__attribute__((noinline)) long alloc_small(void)
{
	for (int i = 0; i < 32; i++)
		sink += (uintptr_t)map_anon(MIB);
	return 32 * MIB;
}

__attribute__((noinline)) long free_some(void)
{
	munmap(big[0], 64 * MIB);
	munmap(big[1], 64 * MIB);
	return -2 * 64 * MIB;
}

__attribute__((noinline)) long remap_grow(void)
{
	void *p = map_anon(4 * MIB);

	p = mremap(p, 4 * MIB, 12 * MIB, MREMAP_MAYMOVE);
	if (p == MAP_FAILED) {
		perror("mremap");
		exit(1);
	}
	sink += (uintptr_t)p;
	return 12 * MIB;
}

__attribute__((noinline)) long heap_grow(void)
{
	if (sbrk(16 * MIB) == (void *)-1) {
		perror("sbrk");
		exit(1);
	}
	return 16 * MIB;
}

static void spin(double seconds)
{
	struct timespec a, b;
	uint64_t x = 1;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ull + 1;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
	sink += x;
}

int main(int argc, char **argv)
{
	long n_big, n_small, n_free, n_remap, n_heap;
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: mmap_sizes TRUTH_FILE GO\n");
		return 2;
	}
	while (access(argv[2], F_OK))
		spin(0.05);
	n_big = alloc_big();
	n_small = alloc_small();
	n_free = free_some();
	n_remap = remap_grow();
	n_heap = heap_grow();
	f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	fprintf(f, "alloc_big %ld\nalloc_small %ld\nfree_some %ld\nremap_grow %ld\nheap_grow %ld\n",
		n_big, n_small, n_free, n_remap, n_heap);
	fclose(f);
	for (;;)
		pause();
}
