/* gpu: the per-process kernel handle tables (handles made, an address
 * reused by another kernel, unloads, the cap, the shared counts) and the
 * kernel named inside a CUDA host stub's symbol. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "gpu.h"

#define MOD_A 0x5550000ull
#define MOD_B 0x5551000ull

static void test_put_get(void **state)
{
	uint64_t live = 0, over = 0, v = 0, owner = 0;
	struct gpu_ktab *t = gpu_ktab_new(16, (struct gpu_ktab_counts){&live, &over});

	(void)state;
	assert_non_null(t);
	assert_false(gpu_ktab_get(t, 0x1000, &v, &owner));
	assert_int_equal(gpu_ktab_put(t, 0x1000, MOD_A, 7), 0);
	assert_int_equal(gpu_ktab_put(t, 0x2000, MOD_A, 8), 0);
	assert_true(gpu_ktab_get(t, 0x1000, &v, &owner));
	assert_int_equal(v, 7);
	assert_int_equal(owner, MOD_A);
	assert_int_equal(live, 2);
	gpu_ktab_free(t);
	assert_int_equal(live, 0); /* a process's exit gives its count back */
	assert_false(gpu_ktab_get(NULL, 0x1000, &v, NULL));
	gpu_ktab_free(NULL);
}

/* A handle freed by an unload and made again for another kernel, in the
 * same or another module, names the new kernel. */
static void test_reuse(void **state)
{
	uint64_t live = 0, v = 0, owner = 0;
	struct gpu_ktab *t = gpu_ktab_new(16, (struct gpu_ktab_counts){&live, NULL});

	(void)state;
	assert_int_equal(gpu_ktab_put(t, 0x1000, MOD_A, 7), 0);
	assert_int_equal(gpu_ktab_put(t, 0x1000, MOD_B, 9), 0); /* no unload seen */
	assert_true(gpu_ktab_get(t, 0x1000, &v, &owner));
	assert_int_equal(v, 9);
	assert_int_equal(owner, MOD_B);
	assert_int_equal(live, 1);
	/* The old module's unload must not drop the handle now MOD_B's. */
	assert_int_equal(gpu_ktab_drop_owner(t, MOD_A), 0);
	assert_true(gpu_ktab_get(t, 0x1000, &v, NULL));
	assert_int_equal(v, 9);
	gpu_ktab_free(t);
}

static void test_unload(void **state)
{
	uint64_t live = 0, v = 0;
	struct gpu_ktab *t = gpu_ktab_new(64, (struct gpu_ktab_counts){&live, NULL});
	uint64_t h;

	(void)state;
	for (h = 1; h <= 40; h++)
		assert_int_equal(gpu_ktab_put(t, h * 0x40, h % 2 ? MOD_A : MOD_B, h), 0);
	assert_int_equal(gpu_ktab_drop_owner(t, MOD_A), 20);
	assert_int_equal(gpu_ktab_len(t), 20);
	assert_int_equal(live, 20);
	for (h = 1; h <= 40; h++)
		assert_int_equal(gpu_ktab_get(t, h * 0x40, &v, NULL), h % 2 == 0);
	/* Made again after the unload: kept again. */
	assert_int_equal(gpu_ktab_put(t, 0x40, MOD_A, 100), 0);
	assert_true(gpu_ktab_get(t, 0x40, &v, NULL));
	assert_int_equal(v, 100);
	assert_int_equal(gpu_ktab_drop_owner(t, 0xdead), 0);
	gpu_ktab_free(t);
	assert_int_equal(live, 0);
}

static void test_cap(void **state)
{
	uint64_t live = 0, over = 0, v = 0;
	struct gpu_ktab *t = gpu_ktab_new(4, (struct gpu_ktab_counts){&live, &over});
	uint64_t h;

	(void)state;
	for (h = 1; h <= 4; h++)
		assert_int_equal(gpu_ktab_put(t, h, MOD_A, h), 0);
	assert_int_equal(gpu_ktab_put(t, 5, MOD_A, 5), -ENOSPC);
	assert_int_equal(over, 1);
	assert_false(gpu_ktab_get(t, 5, &v, NULL));
	/* A known handle renamed at the cap is no new entry. */
	assert_int_equal(gpu_ktab_put(t, 4, MOD_B, 44), 0);
	assert_int_equal(over, 1);
	assert_int_equal(live, 4);
	gpu_ktab_drop_owner(t, MOD_A);
	assert_int_equal(gpu_ktab_put(t, 5, MOD_A, 5), 0); /* room again */
	gpu_ktab_free(t);
	assert_int_equal(live, 0);
}

static void stub_is(const char *sym, const char *want)
{
	char buf[128];

	assert_true(gpu_stub_kernel(sym, buf, sizeof(buf)));
	assert_string_equal(buf, want);
}

/* Symbols as nvcc 13 makes them, demangled by the symbolizer. */
static void test_stub_names(void **state)
{
	char buf[16];

	(void)state;
	stub_is("__device_stub__Z6vecAddPfi(float*, int)", "_Z6vecAddPfi");
	stub_is("__device_stub__Z5scaleIfEvPT_S0_(float*, float)", "_Z5scaleIfEvPT_S0_");
	stub_is("ns::__device_stub__ZN2ns4axpyEfPf(float, float*)", "_ZN2ns4axpyEfPf");
	stub_is("__device_stub__plain(int*)", "plain");
	assert_false(gpu_stub_kernel("vecAdd(float*, int)", buf, sizeof(buf)));
	assert_false(gpu_stub_kernel("my__device_stub__Zx(int)", buf, sizeof(buf)));
	assert_false(gpu_stub_kernel("__device_stub__(int)", buf, sizeof(buf)));
	/* Too long for the buffer: no cut name. */
	assert_false(
	    gpu_stub_kernel("__device_stub__Z20averyveryverylongnamev()", buf, sizeof(buf)));
	assert_true(gpu_is_launch_helper("__cudaLaunchKernel_helper(CUkern_st*, dim3, dim3, "
					 "void**, unsigned long, CUstream_st*)"));
	assert_false(gpu_is_launch_helper("cudaLaunchKernel"));
}

static void test_fn_kinds(void **state)
{
	(void)state;
	assert_true(gpu_cuda_fn_names(PROFD_CUDA_cuModuleGetFunction));
	assert_true(gpu_cuda_fn_names(PROFD_CUDA_cuLibraryUnload));
	assert_false(gpu_cuda_fn_names(PROFD_CUDA_cuLaunchKernel));
	assert_int_equal(gpu_cuda_fn_runtime(PROFD_CUDA_cuModuleGetFunction), 0);
	assert_int_equal(gpu_cuda_fn_runtime(PROFD_CUDA_cudaEventSynchronize), 1);
	assert_false(gpu_cuda_fn_launch(PROFD_CUDA_cuKernelGetFunction));
	assert_true(gpu_cuda_fn_driver_launch(PROFD_CUDA_cuLaunchKernelEx_ptsz));
	assert_false(gpu_cuda_fn_driver_launch(PROFD_CUDA_cudaLaunchKernel));
	assert_string_equal(gpu_cuda_fn_name(PROFD_CUDA_cuLibraryGetKernel), "cuLibraryGetKernel");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_put_get),    cmocka_unit_test(test_reuse),
	    cmocka_unit_test(test_unload),     cmocka_unit_test(test_cap),
	    cmocka_unit_test(test_stub_names), cmocka_unit_test(test_fn_kinds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
