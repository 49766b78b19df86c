/* A stand-in for libcuda.so.1 (the CUDA driver API) with the real entry
 * point names and known durations, for tests/e2e/test_gpu_cuda*.sh.  No
 * GPU: every call "succeeds" after sleeping a fixed time.  Kernel
 * handles are heap objects, as the real driver's are: an unloaded
 * module's are freed, so a later handle may reuse the address. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef uint64_t CUdeviceptr;

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts))
		;
}

CUresult cuInit(unsigned flags)
{
	(void)flags;
	return 0;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			unsigned bz, unsigned shmem, void *stream, void **params, void **extra)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz;
	(void)shmem, (void)stream, (void)params, (void)extra;
	sleep_us(100);
	return 0;
}

CUresult cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			     unsigned by, unsigned bz, unsigned shmem, void *stream, void **params,
			     void **extra)
{
	return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra);
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size)
{
	*p = 0x7f0000000000ull + size;
	return 0;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
	(void)p;
	return 0;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	(void)dst, (void)src, (void)n;
	sleep_us(2000);
	return 0;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	(void)dst, (void)src, (void)n;
	sleep_us(2000);
	return 0;
}

CUresult cuCtxSynchronize(void)
{
	sleep_us(20000);
	return 0;
}

CUresult cuStreamSynchronize(void *stream)
{
	(void)stream;
	sleep_us(5000);
	return 0;
}

/* A module or library: the handles it made, freed with it. */
#define MAX_HANDLES 16
struct fake_module {
	void *handles[MAX_HANDLES];
	int n;
};

CUresult cuModuleLoadData(struct fake_module **mod, const void *image)
{
	(void)image;
	*mod = calloc(1, sizeof(**mod));
	return *mod ? 0 : 2;
}

CUresult cuLibraryLoadData(struct fake_module **lib, const void *code, void *jit_opts,
			   void *jit_vals, unsigned njit, void *lib_opts, void *lib_vals,
			   unsigned nlib)
{
	(void)jit_opts, (void)jit_vals, (void)njit, (void)lib_opts, (void)lib_vals, (void)nlib;
	return cuModuleLoadData(lib, code);
}

/* A new handle of mod for the kernel called name.  The name is read, as
 * the real driver reads it to find the kernel: a profiler reading it
 * when the call returns finds its page in memory. */
static CUresult new_handle(void **out, struct fake_module *mod, const char *name)
{
	if (!mod || mod->n == MAX_HANDLES || !name || !strlen(name))
		return 1;
	*out = malloc(48);
	if (!*out)
		return 2;
	mod->handles[mod->n++] = *out;
	return 0;
}

CUresult cuModuleGetFunction(void **f, struct fake_module *mod, const char *name)
{
	return new_handle(f, mod, name);
}

CUresult cuLibraryGetKernel(void **k, struct fake_module *lib, const char *name)
{
	return new_handle(k, lib, name);
}

/* The function of a kernel in the current context: a handle of its own. */
CUresult cuKernelGetFunction(void **f, void *kernel)
{
	(void)kernel;
	*f = malloc(40);
	return *f ? 0 : 2;
}

static CUresult unload(struct fake_module *mod)
{
	int i;

	for (i = 0; mod && i < mod->n; i++)
		free(mod->handles[i]);
	free(mod);
	return 0;
}

CUresult cuModuleUnload(struct fake_module *mod)
{
	return unload(mod);
}

CUresult cuLibraryUnload(struct fake_module *lib)
{
	return unload(lib);
}

/* CUlaunchConfig is read by the real driver; here only its address
 * comes, as the first argument, the function second. */
CUresult cuLaunchKernelEx(const void *config, void *f, void **params, void **extra)
{
	(void)config, (void)f, (void)params, (void)extra;
	sleep_us(100);
	return 0;
}

CUresult cuLaunchKernelEx_ptsz(const void *config, void *f, void **params, void **extra)
{
	return cuLaunchKernelEx(config, f, params, extra);
}
