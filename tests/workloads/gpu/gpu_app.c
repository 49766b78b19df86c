/* A CUDA program without a GPU, for tests/e2e/test_gpu_cuda.sh: known
 * numbers of runtime and driver API calls from known functions, linked
 * against the stub libcudart.so.12 and libcuda.so.1.
 * usage: gpu_app GOFILE DONEFILE (waits for GOFILE, then runs; DONEFILE
 * holds the nanoseconds driver_syncs took, timed here around each call) */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <stddef.h>
#include <unistd.h>

typedef struct {
	unsigned x, y, z;
} dim3;

int cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
		     void *stream);
int cudaDeviceSynchronize(void);
int cudaMalloc(void **p, size_t size);
int cudaMemcpy(void *dst, const void *src, size_t n, int kind);
int cuInit(unsigned flags);
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		   unsigned bz, unsigned shmem, void *stream, void **params, void **extra);
int cuMemAlloc_v2(uint64_t *p, size_t size);
int cuCtxSynchronize(void);
int cuStreamSynchronize(void *stream);
void vectorAdd(const float *a, const float *b, float *c, int n) __asm__("_Z9vectorAddPKfS0_Pfi");

static void launch_all(int n)
{
	dim3 grid = { 4, 1, 1 }, block = { 256, 1, 1 };
	int i;

	for (i = 0; i < n; i++)
		cudaLaunchKernel((const void *)vectorAdd, grid, block, NULL, 0, NULL);
}

static void copy_all(int n)
{
	static float host[256];
	void *dev = NULL;
	int i;

	cudaMalloc(&dev, sizeof(host));
	for (i = 0; i < n; i++) {
		cudaMemcpy(dev, host, sizeof(host), 1);
		cudaMemcpy(host, dev, sizeof(host), 2);
	}
}

static void driver_launches(int n)
{
	int i;

	for (i = 0; i < n; i++)
		cuLaunchKernel((void *)0x1234, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Times its calls from the caller's side: a slow machine (an emulated
 * guest) oversleeps, and the test compares profd's figure with this one. */
static int64_t driver_syncs(int n)
{
	int64_t spent = 0, t;
	int i;

	for (i = 0; i < n; i++) {
		t = now_ns();
		cuCtxSynchronize();
		spent += now_ns() - t;
	}
	return spent;
}

/* Written whole under a temporary name: the test reads it once it exists. */
static void write_done(const char *path, int64_t sync_ns)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "%lld\n", (long long)sync_ns);
	if (fclose(f) == 0)
		rename(tmp, path);
}

static void runtime_syncs(int n)
{
	int i;

	for (i = 0; i < n; i++)
		cudaDeviceSynchronize();
}

int main(int argc, char **argv)
{
	int64_t sync_ns;

	if (argc < 3)
		return 2;
	cuInit(0);
	while (access(argv[1], F_OK))
		usleep(20000);
	launch_all(40);
	copy_all(10);
	driver_launches(15);
	sync_ns = driver_syncs(50);
	runtime_syncs(5);
	write_done(argv[2], sync_ns);
	sleep(60); /* stay a live process until the test kills us */
	return 0;
}
