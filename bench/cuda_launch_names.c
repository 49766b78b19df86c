/* The launch loop of bench/cuda_launch_names.py: N launches of one kind,
 * against bench/cuda_launch_stub.c built as libcudart.so.12 and
 * libcuda.so.1 (every entry point returns at once), so that what is
 * measured is what tracing and naming a launch cost.
 *   stub    as nvcc 13 launches: from the kernel's host stub (named as
 *           nvcc names it), passing a handle, a heap object;
 *   driver  cuLaunchKernel of a handle from cuModuleGetFunction;
 *   legacy  cudaLaunchKernel(host function), as older nvcc does.
 * It waits half a second first: profd probes a library once it has read
 * the maps of a process that mapped it, after it started.  Prints
 * "launches N cpu_s S" (its own user + system time over the launches). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

typedef struct {
	unsigned x, y, z;
} dim3;

int cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
		     void *stream);
int cuModuleGetFunction(void **f, void *mod, const char *name);
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		   unsigned bz, unsigned shmem, void *stream, void **params, void **extra);

static void *handle;

/* nvcc's stub for __global__ void vecAdd(float *, int), by its symbol. */
__attribute__((noinline)) void _Z26__device_stub__Z6vecAddPfiPfi(float *a, int n)
{
	void *args[] = { &a, &n };
	dim3 g = { 1, 1, 1 }, b = { 32, 1, 1 };

	cudaLaunchKernel(handle, g, b, args, 0, NULL);
	__asm__ volatile("" ::: "memory"); /* not a tail call: the stub stays the caller */
}

__attribute__((noinline)) void vecAdd_host(float *a, int n)
{
	(void)a, (void)n;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

int main(int argc, char **argv)
{
	long i, n = argc > 2 ? atol(argv[2]) : 200000;
	dim3 g = { 1, 1, 1 }, b = { 32, 1, 1 };
	void *f = NULL;
	double t0;

	if (argc < 2)
		return 2;
	usleep(500000);
	handle = malloc(64);
	cuModuleGetFunction(&f, NULL, "_Z6vecAddPfi");
	t0 = cpu_s();
	for (i = 0; i < n; i++) {
		if (!strcmp(argv[1], "stub"))
			_Z26__device_stub__Z6vecAddPfiPfi(NULL, 32);
		else if (!strcmp(argv[1], "driver"))
			cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
		else
			cudaLaunchKernel((const void *)vecAdd_host, g, b, NULL, 0, NULL);
	}
	printf("launches %ld cpu_s %.6f\n", n, cpu_s() - t0);
	return 0;
}
