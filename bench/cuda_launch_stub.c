/* A libcudart stand-in whose entry points return at once: the launch-heavy
 * bench (bench/cuda_launch_tax.py) measures what tracing costs a call,
 * not what a GPU takes.  Built as libcudart.so.12 so profd attaches to it
 * as to NVIDIA's runtime. */
#include <stddef.h>

#ifndef DRIVER_API

typedef struct {
	unsigned x, y, z;
} dim3;

int cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
		     void *stream)
{
	(void)func, (void)grid, (void)block, (void)args, (void)shmem, (void)stream;
	return 0;
}

/* What profd traces by default on a CUDA library: present, so the default
 * attaches here as it would to the real runtime. */
int cudaDeviceSynchronize(void)
{
	return 0;
}

int cudaMalloc(void **p, size_t size)
{
	(void)size;
	*p = NULL;
	return 0;
}

int cudaFree(void *p)
{
	(void)p;
	return 0;
}

int cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	(void)dst, (void)src, (void)n, (void)kind;
	return 0;
}

#else
/* -DDRIVER_API: libcuda.so.1 for bench/cuda_launch_names.py, the driver
 * API's launch and where its handles are made, each returning at once
 * (only these: a program linked to both libraries calls them here). */
int cuModuleGetFunction(void **f, void *mod, const char *name)
{
	static char handle[64]; /* one kernel: any address will do */

	(void)mod, (void)name;
	*f = handle;
	return 0;
}

int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		   unsigned bz, unsigned shmem, void *stream, void **params, void **extra)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz;
	(void)shmem, (void)stream, (void)params, (void)extra;
	return 0;
}
#endif
