/* Driver-API launches as Triton, inductor and cuBLAS make them, for
 * tests/e2e/test_gpu_cuda13.sh: kernel handles from cuModuleGetFunction,
 * cuLibraryGetKernel and cuKernelGetFunction, launched with
 * cuLaunchKernel and cuLaunchKernelEx (the function as its second
 * argument), against the stub libcuda.so.1.  Each handle is launched
 * once at start; when the go file appears, known numbers of times from
 * known functions; then the module is unloaded and a new kernel loaded,
 * whose handle may take the freed one's address. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

typedef int CUresult;
typedef void *CUmodule, *CUfunction;

CUresult cuModuleLoadData(CUmodule *mod, const void *image);
CUresult cuLibraryLoadData(CUmodule *lib, const void *code, void *jit_opts, void *jit_vals,
			   unsigned njit, void *lib_opts, void *lib_vals, unsigned nlib);
CUresult cuModuleGetFunction(CUfunction *f, CUmodule mod, const char *name);
CUresult cuLibraryGetKernel(CUfunction *k, CUmodule lib, const char *name);
CUresult cuKernelGetFunction(CUfunction *f, CUfunction kernel);
CUresult cuModuleUnload(CUmodule mod);
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			unsigned by, unsigned bz, unsigned shmem, void *stream, void **params,
			void **extra);
CUresult cuLaunchKernelEx(const void *config, CUfunction f, void **params, void **extra);

struct launch_config { /* CUlaunchConfig's leading fields */
	unsigned grid[3], block[3], shmem;
	void *stream, *attrs;
	unsigned nattrs;
};

static CUfunction f_add, k_gemm, f_gemm;

__attribute__((noinline)) static void launch(CUfunction f)
{
	cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
}

__attribute__((noinline)) static void launch_triton(int n)
{
	for (int i = 0; i < n; i++)
		launch(f_add);
}

__attribute__((noinline)) static void launch_ex(int n)
{
	struct launch_config cfg = {{1, 1, 1}, {128, 1, 1}, 0, NULL, NULL, 0};

	for (int i = 0; i < n; i++)
		cuLaunchKernelEx(&cfg, f_gemm, NULL, NULL);
}

__attribute__((noinline)) static void launch_kernel_handle(int n)
{
	for (int i = 0; i < n; i++)
		launch(k_gemm); /* a CUkernel is launched as a CUfunction */
}

__attribute__((noinline)) static void launch_reloaded(CUfunction f, int n)
{
	for (int i = 0; i < n; i++)
		launch(f);
}

static void touch(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* argv: ready-file go-file done-file */
int main(int argc, char **argv)
{
	CUmodule mod, lib, mod2;
	CUfunction f_sum;

	if (argc != 4 || cuModuleLoadData(&mod, "") ||
	    cuLibraryLoadData(&lib, "", 0, 0, 0, 0, 0, 0) ||
	    cuModuleGetFunction(&f_add, mod, "triton_poi_fused_add_0") ||
	    cuLibraryGetKernel(&k_gemm, lib, "_Z9gemm_tileILi128EEvPKfPf") ||
	    cuKernelGetFunction(&f_gemm, k_gemm))
		return 2;
	launch(f_add);
	launch(k_gemm);
	touch(argv[1], "");
	while (access(argv[2], F_OK))
		usleep(10000);
	launch_triton(10);
	launch_ex(7);
	launch_kernel_handle(5);
	cuModuleUnload(mod);
	if (cuModuleLoadData(&mod2, "") ||
	    cuModuleGetFunction(&f_sum, mod2, "triton_red_fused_sum_1"))
		return 2;
	launch_reloaded(f_sum, 4);
	/* Whether the new handle took the unloaded one's address: the
	 * test then knows the name was replaced, not only added. */
	touch(argv[3], f_sum == f_add ? "reused\n" : "new\n");
	return 0;
}
