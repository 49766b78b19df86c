// A CUDA program for tests/e2e/test_gpu_cuda13.sh, built at test time by
// the real nvcc (CUDA 13: each stub launches a handle from
// __cudaGetKernel, not itself) and linked to the real libcudart.  No GPU
// is needed: without a driver every launch fails fast, but is made.
// Each kernel is launched once at start (its handle made), then, when
// the go file appears, a known number of times from known functions.
#include <cstdio>
#include <unistd.h>

__global__ void vecAdd(float *a, int n)
{
	int i = threadIdx.x;
	if (i < n)
		a[i] += 1;
}

template <typename T> __global__ void scale(T *a, T f)
{
	a[threadIdx.x] *= f;
}

extern "C" __global__ void c_kernel(int *x)
{
	x[0] = 1;
}

__attribute__((noinline)) static void run_vecadd(int n)
{
	for (int i = 0; i < n; i++)
		vecAdd<<<1, 32>>>(nullptr, 32);
}

__attribute__((noinline)) static void run_scale(int n)
{
	for (int i = 0; i < n; i++)
		scale<float><<<1, 32>>>(nullptr, 2.0f);
}

__attribute__((noinline)) static void run_c(int n)
{
	for (int i = 0; i < n; i++)
		c_kernel<<<1, 1>>>(nullptr);
}

__attribute__((noinline)) static void first_launches(void)
{
	vecAdd<<<1, 32>>>(nullptr, 32);
	scale<float><<<1, 32>>>(nullptr, 2.0f);
	c_kernel<<<1, 1>>>(nullptr);
}

static void touch(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f)
		fclose(f);
}

// argv: ready-file go-file done-file
int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	first_launches();
	touch(argv[1]);
	while (access(argv[2], F_OK))
		usleep(10000);
	run_vecadd(12);
	run_scale(6);
	run_c(3);
	touch(argv[3]);
	return 0;
}
