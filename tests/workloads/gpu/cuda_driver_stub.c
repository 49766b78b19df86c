/* A stand-in for libcuda.so.1 (the CUDA driver API) with the real entry
 * point names and known durations, for tests/e2e/test_gpu_cuda.sh.  No
 * GPU: every call "succeeds" after sleeping a fixed time. */
#include <stddef.h>
#include <stdint.h>
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
