/* A stand-in for libcudart.so.12 (the CUDA runtime API).  Like the real
 * one it finds libcuda.so.1 with dlopen and calls the driver API inside,
 * so a profiler must count cudaLaunchKernel once, not twice. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
	unsigned x, y, z;
} dim3;

enum { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };

static int (*p_launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
		       unsigned, void *, void **, void **);
static int (*p_sync)(void);
static int (*p_alloc)(uint64_t *, size_t);
static int (*p_htod)(uint64_t, const void *, size_t);
static int (*p_dtoh)(void *, uint64_t, size_t);

__attribute__((constructor)) static void load_driver(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);

	if (!h)
		return;
	p_launch = (__typeof__(p_launch))dlsym(h, "cuLaunchKernel");
	p_sync = (__typeof__(p_sync))dlsym(h, "cuCtxSynchronize");
	p_alloc = (__typeof__(p_alloc))dlsym(h, "cuMemAlloc_v2");
	p_htod = (__typeof__(p_htod))dlsym(h, "cuMemcpyHtoD_v2");
	p_dtoh = (__typeof__(p_dtoh))dlsym(h, "cuMemcpyDtoH_v2");
}

int cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
		     void *stream)
{
	int r = p_launch((void *)func, grid.x, grid.y, grid.z, block.x, block.y, block.z,
			 (unsigned)shmem, stream, args, NULL);

	return r ? 98 : 0; /* not a tail call: the driver call is nested */
}

int cudaDeviceSynchronize(void)
{
	return p_sync(); /* a tail call at -O2: nested all the same */
}

int cudaMalloc(void **p, size_t size)
{
	return p_alloc((uint64_t *)p, size);
}

int cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	if (kind == cudaMemcpyHostToDevice)
		return p_htod((uint64_t)(uintptr_t)dst, src, n);
	return p_dtoh(dst, (uint64_t)(uintptr_t)src, n);
}
