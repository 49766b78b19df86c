/* gpu: command-name tables, /proc/devices parsing (hostile input too),
 * command filtering by number and never by the full value, --gpu-device
 * handling, and the leaf frame names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

#define IOC(dir, type, nr, size) \
	((uint32_t)(dir) << 30 | (uint32_t)(size) << 16 | (uint32_t)(type) << 8 | (uint32_t)(nr))

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(gpu_cmd_name(PROFD_GPU_CLASS_NVIDIA, IOC(3, 'F', 0x2a, 32)),
			    "NV_ESC_RM_CONTROL");
	assert_string_equal(gpu_cmd_name(PROFD_GPU_CLASS_NVIDIA, IOC(3, 'F', 0x2b, 48)),
			    "NV_ESC_RM_ALLOC");
	assert_string_equal(gpu_cmd_name(PROFD_GPU_CLASS_NVIDIA, IOC(3, 'F', 0x29, 16)),
			    "NV_ESC_RM_FREE");
	assert_string_equal(gpu_cmd_name(PROFD_GPU_CLASS_NVIDIA, IOC(3, 'F', 0x4e, 56)),
			    "NV_ESC_RM_MAP_MEMORY");
	assert_string_equal(gpu_cmd_name(PROFD_GPU_CLASS_NVIDIA, IOC(3, 'F', 201, 4)),
			    "NV_ESC_REGISTER_FD");
	assert_string_equal(gpu_cmd_name(PROFD_GPU_CLASS_UVM, 33), "UVM_MAP_EXTERNAL_ALLOCATION");
	assert_string_equal(gpu_cmd_name(PROFD_GPU_CLASS_UVM, 0x30000001), "UVM_INITIALIZE");
	assert_string_equal(gpu_cmd_name(PROFD_GPU_CLASS_UVM, 2047), "UVM_IS_8_SUPPORTED");
	assert_string_equal(gpu_cmd_name(PROFD_GPU_CLASS_KFD, IOC(3, 'K', 0x0c, 24)),
			    "AMDKFD_IOC_WAIT_EVENTS");
	assert_string_equal(gpu_cmd_name(PROFD_GPU_CLASS_DRM, IOC(3, 'd', 0xc3, 32)),
			    "DRM_IOCTL_SYNCOBJ_WAIT");
	assert_null(gpu_cmd_name(PROFD_GPU_CLASS_NVIDIA, IOC(3, 'F', 0x01, 4)));
	assert_null(gpu_cmd_name(PROFD_GPU_CLASS_GENERIC, IOC(3, 'F', 0x2b, 48)));
	assert_null(gpu_cmd_name(PROFD_GPU_CLASS_MAX, 0));
	assert_null(gpu_cmd_name(PROFD_GPU_CLASS_UVM, 0x30000003)); /* not UVM_RESERVE_VA */
}

/* Struct sizes change between driver versions: the name must not. */
static void test_names_ignore_size(void **state)
{
	uint32_t size;

	(void)state;
	for (size = 0; size < (1u << 14); size += 97) {
		assert_string_equal(gpu_cmd_name(PROFD_GPU_CLASS_NVIDIA, IOC(3, 'F', 0x2a, size)),
				    "NV_ESC_RM_CONTROL");
		assert_string_equal(gpu_cmd_name(PROFD_GPU_CLASS_KFD, IOC(1, 'K', 0x16, size)),
				    "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU");
	}
}

static void test_filter_by_nr(void **state)
{
	static uint8_t filter[PROFD_GPU_CMD_FILTER_ENTRIES];
	struct profd_gpu_dev nv = { PROFD_GPU_CLASS_NVIDIA, 'F', 0, 0 };
	struct profd_gpu_dev any = { PROFD_GPU_CLASS_GENERIC, PROFD_GPU_ANY_TYPE, 0, 0 };
	struct profd_gpu_dev bad = { PROFD_GPU_CLASS_MAX, PROFD_GPU_ANY_TYPE, 0, 0 };

	(void)state;
	memset(filter, 0, sizeof(filter));
	filter[PROFD_GPU_CLASS_NVIDIA * 256 + 0x2a] = 1;
	filter[PROFD_GPU_CLASS_GENERIC * 256 + 0x2b] = 1;
	/* Any size and direction of NV_ESC_RM_CONTROL; nothing else. */
	assert_true(gpu_cmd_traced(&nv, filter, IOC(3, 'F', 0x2a, 32)));
	assert_true(gpu_cmd_traced(&nv, filter, IOC(3, 'F', 0x2a, 0x3fff)));
	assert_true(gpu_cmd_traced(&nv, filter, IOC(0, 'F', 0x2a, 0)));
	assert_false(gpu_cmd_traced(&nv, filter, IOC(3, 'F', 0x2b, 32)));
	/* Another driver's command with the same number: not NVIDIA's. */
	assert_false(gpu_cmd_traced(&nv, filter, IOC(3, 'T', 0x2a, 32)));
	/* The generic class takes any type, filters by number all the same. */
	assert_true(gpu_cmd_traced(&any, filter, IOC(3, 'T', 0x2b, 8)));
	assert_false(gpu_cmd_traced(&any, filter, IOC(3, 'T', 0x2a, 8)));
	assert_false(gpu_cmd_traced(&bad, filter, 0));
	assert_int_equal(gpu_class_ioc_type(PROFD_GPU_CLASS_UVM), 0);
	assert_int_equal(gpu_class_ioc_type(PROFD_GPU_CLASS_KFD), 'K');
}

static const char proc_devices[] = "Character devices:\n"
				   "  1 mem\n"
				   "  5 /dev/tty\n"
				   "195 nvidia-frontend\n"
				   "195 nvidia-modeset\n"
				   "226 drm\n"
				   "234 nvidia-uvm\n"
				   "235 nvidia-nvswitch\n"
				   "240 kfd\n"
				   "\n"
				   "Block devices:\n"
				   "  7 loop\n"
				   "240 kfd\n"; /* a block driver of that name: not ours */

static const struct gpu_device *find(const struct gpu_device *d, int n, uint32_t major)
{
	int i;

	for (i = 0; i < n; i++)
		if (d[i].key >> PROFD_GPU_MINORBITS == major)
			return &d[i];
	return NULL;
}

static void test_proc_devices(void **state)
{
	struct gpu_device d[16];
	const struct gpu_device *x;
	int n;

	(void)state;
	n = gpu_parse_proc_devices(proc_devices, strlen(proc_devices), d, 16);
	assert_int_equal(n, 4);
	x = find(d, n, 195);
	assert_non_null(x);
	assert_int_equal(x->dev.cls, PROFD_GPU_CLASS_NVIDIA);
	assert_int_equal(x->key & PROFD_GPU_ALL_MINORS, PROFD_GPU_ALL_MINORS);
	assert_int_equal(x->dev.ioc_type, 'F');
	x = find(d, n, 226);
	assert_non_null(x);
	assert_int_equal(x->dev.cls, PROFD_GPU_CLASS_DRM);
	assert_int_equal(x->dev.minor_min, 128); /* render nodes only */
	assert_int_equal(x->dev.minor_max, 255);
	assert_int_equal(find(d, n, 234)->dev.cls, PROFD_GPU_CLASS_UVM);
	assert_int_equal(find(d, n, 240)->dev.cls, PROFD_GPU_CLASS_KFD);
	assert_null(find(d, n, 235));
	/* Room for fewer: no overflow. */
	assert_int_equal(gpu_parse_proc_devices(proc_devices, strlen(proc_devices), d, 2), 2);
	assert_int_equal(gpu_parse_proc_devices(proc_devices, strlen(proc_devices), d, 0), 0);
}

static void test_proc_devices_hostile(void **state)
{
	static const char *const bad[] = {
		"",
		"no header at all\n195 nvidia\n",
		"Character devices:\n99999999999999999999 nvidia\n", /* overflow */
		"Character devices:\n4096 nvidia\n",                  /* > 12 bits */
		"Character devices:\n-1 kfd\n",
		"Character devices:\n195nvidia\n",
		"Character devices:\n195 \n",
		"Character devices:\n 240 kfdkfdkfdkfdkfdkfdkfdkfdkfdkfdkfdkfdkfdkfdkfdkfdkfdkfdkfdkfdkfdkfdkfd\n",
		"Character devices:\n240", /* no name, no newline */
		"Character devices:",
	};
	struct gpu_device d[4];
	char big[8192];
	size_t i;
	int n;

	(void)state;
	assert_int_equal(gpu_parse_proc_devices(bad[0], 0, d, 4), -EINVAL);
	assert_int_equal(gpu_parse_proc_devices(bad[1], strlen(bad[1]), d, 4), -EINVAL);
	for (i = 2; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(gpu_parse_proc_devices(bad[i], strlen(bad[i]), d, 4), 0);
	/* Not NUL-terminated: the length is the limit. */
	assert_int_equal(gpu_parse_proc_devices("Character devices:\n240 kfdXXXX", 26, d, 4), 1);
	/* Many duplicates and junk, no more than max. */
	n = snprintf(big, sizeof(big), "Character devices:\n");
	while (n < (int)sizeof(big) - 32)
		n += snprintf(big + n, sizeof(big) - (size_t)n, "195 nvidia\n\x01\xff junk\n");
	assert_int_equal(gpu_parse_proc_devices(big, (size_t)n, d, 4), 1);
}

static void test_classes(void **state)
{
	(void)state;
	assert_int_equal(gpu_class_from_name("nvidia"), PROFD_GPU_CLASS_NVIDIA);
	assert_int_equal(gpu_class_from_name("uvm"), PROFD_GPU_CLASS_UVM);
	assert_int_equal(gpu_class_from_name("nvidia-uvm"), PROFD_GPU_CLASS_UVM);
	assert_int_equal(gpu_class_from_name("kfd"), PROFD_GPU_CLASS_KFD);
	assert_int_equal(gpu_class_from_name("drm"), PROFD_GPU_CLASS_DRM);
	assert_int_equal(gpu_class_from_name("generic"), PROFD_GPU_CLASS_GENERIC);
	assert_int_equal(gpu_class_from_name("NVIDIA"), -1);
	assert_int_equal(gpu_class_from_name(""), -1);
}

static void test_gpu_device_option(void **state)
{
	const char *ok[] = { "/dev/null=kfd" };
	const char *notchr[] = { "/" };
	const char *badclass[] = { "/dev/null=radeon" };
	struct gpu_opts o = { .mode = GPU_MODE_AUTO, .proc_devices = "/nonexistent" };
	struct profd_gpu_event e = { .source = PROFD_GPU_SRC_IOCTL, .cls = PROFD_GPU_CLASS_KFD };
	const struct gpu_device *d;
	struct gpu *g;
	char buf[128];

	(void)state;
	o.devices = ok;
	o.ndevices = 1;
	g = gpu_new(&o);
	assert_non_null(g);
	assert_true(gpu_enabled(g));
	e.rdev = 1u << PROFD_GPU_MINORBITS | 3; /* /dev/null is 1:3 */
	d = gpu_find_device(g, e.rdev);
	assert_non_null(d);
	assert_string_equal(d->path, "/dev/null");
	assert_null(gpu_find_device(g, 1u << PROFD_GPU_MINORBITS | 5));
	e.cmd = IOC(3, 'K', 0x0c, 24);
	gpu_call_frame(g, &e, buf, sizeof(buf));
	assert_string_equal(buf, "AMDKFD_IOC_WAIT_EVENTS");
	e.cmd = IOC(3, 'K', 0x7f, 24);
	gpu_call_frame(g, &e, buf, sizeof(buf));
	assert_string_equal(buf, "AMDKFD_IOC 0x7f");
	e.source = PROFD_GPU_SRC_POLL;
	gpu_call_frame(g, &e, buf, sizeof(buf));
	assert_string_equal(buf, "poll on /dev/null");
	gpu_free(g);

	o.devices = notchr;
	assert_null(gpu_new(&o));
	assert_int_equal(errno, EINVAL);
	o.devices = badclass;
	assert_null(gpu_new(&o));
	assert_int_equal(errno, EINVAL);
	/* Off: nothing watched, nothing checked. */
	o.mode = GPU_MODE_OFF;
	g = gpu_new(&o);
	assert_non_null(g);
	assert_false(gpu_enabled(g));
	gpu_free(g);
	gpu_free(NULL);
}

static void test_frames(void **state)
{
	struct profd_gpu_event e = { .source = PROFD_GPU_SRC_IOCTL };
	char buf[128];

	(void)state;
	e.cls = PROFD_GPU_CLASS_GENERIC;
	e.rdev = 136u << PROFD_GPU_MINORBITS | 7;
	e.cmd = IOC(3, 'F', 0x2b, 48);
	gpu_call_frame(NULL, &e, buf, sizeof(buf));
	assert_string_equal(buf, "ioctl 0x2b on dev 136:7");
	e.cls = PROFD_GPU_CLASS_NVIDIA;
	e.cmd = IOC(3, 'F', 0x01, 4);
	gpu_call_frame(NULL, &e, buf, sizeof(buf));
	assert_string_equal(buf, "NV_ESC 0x01");
	e.cls = PROFD_GPU_CLASS_DRM;
	e.cmd = IOC(3, 'd', 0x44, 24);
	gpu_call_frame(NULL, &e, buf, sizeof(buf));
	assert_string_equal(buf, "DRM driver ioctl 0x04");
	e.cls = PROFD_GPU_CLASS_UVM;
	e.cmd = 999;
	gpu_call_frame(NULL, &e, buf, sizeof(buf));
	assert_string_equal(buf, "UVM ioctl 999");
	e.source = PROFD_GPU_SRC_POLL;
	gpu_call_frame(NULL, &e, buf, sizeof(buf));
	assert_string_equal(buf, "poll on nvidia-uvm");
	e.source = PROFD_GPU_SRC_CUDA;
	e.nr = PROFD_CUDA_cudaLaunchKernel;
	gpu_call_frame(NULL, &e, buf, sizeof(buf));
	assert_string_equal(buf, "cudaLaunchKernel");
	e.nr = PROFD_CUDA_FN_MAX;
	gpu_call_frame(NULL, &e, buf, sizeof(buf));
	assert_string_equal(buf, "cuda?");
	/* Truncation is safe. */
	e.source = PROFD_GPU_SRC_IOCTL;
	e.cls = PROFD_GPU_CLASS_NVIDIA;
	e.cmd = IOC(3, 'F', 0x5e, 8);
	gpu_call_frame(NULL, &e, buf, 8);
	assert_string_equal(buf, "NV_ESC_");
}

static void test_cuda_functions(void **state)
{
	uint32_t fn;

	(void)state;
	for (fn = 1; fn < PROFD_CUDA_FN_MAX; fn++) {
		const char *name = gpu_cuda_fn_name(fn);

		assert_non_null(name);
		/* The runtime API's names start with "cuda", the driver's with "cu" only. */
		assert_int_equal(gpu_cuda_fn_runtime(fn), strncmp(name, "cuda", 4) == 0);
	}
	assert_null(gpu_cuda_fn_name(PROFD_CUDA_NONE));
	assert_null(gpu_cuda_fn_name(PROFD_CUDA_FN_MAX));
	assert_string_equal(gpu_cuda_fn_name(PROFD_CUDA_cuMemAlloc_v2), "cuMemAlloc_v2");
	assert_true(gpu_cuda_fn_has_stub(PROFD_CUDA_cudaLaunchKernel));
	assert_false(gpu_cuda_fn_has_stub(PROFD_CUDA_cuLaunchKernel));
}

/* A sample's frame names the call as the symbolizer found it. */
static void test_comm_frames(void **state)
{
	uint32_t fn;

	(void)state;
	for (fn = PROFD_COMM_NONE + 1; fn < PROFD_COMM_FN_MAX; fn++)
		assert_int_equal(gpu_comm_fn_of_frame(gpu_comm_fn_label(fn)), fn);
	assert_int_equal(gpu_comm_fn_of_frame("PMPI_Allreduce"), PROFD_COMM_MPI_Allreduce);
	assert_int_equal(gpu_comm_fn_of_frame("MPI_Wait"), PROFD_COMM_MPI_Wait);
	assert_int_equal(gpu_comm_fn_of_frame("c10d::Work::wait(std::chrono::duration<long, "
					      "std::ratio<1l, 1000l> >)"),
			 PROFD_COMM_c10d_Work_wait);
	/* Only whole names: a longer MPI name, a method of another class, a
	 * Python frame, the profiling prefix on a non-MPI name. */
	assert_int_equal(gpu_comm_fn_of_frame("MPI_Allreduce_init"), PROFD_COMM_NONE);
	assert_int_equal(gpu_comm_fn_of_frame("MPI_Waitall_x"), PROFD_COMM_NONE);
	assert_int_equal(gpu_comm_fn_of_frame("c10d::Work::waitx()"), PROFD_COMM_NONE);
	assert_int_equal(gpu_comm_fn_of_frame("ncclAllReduce (/srv/a.py:3)"), PROFD_COMM_NONE);
	assert_int_equal(gpu_comm_fn_of_frame("PMncclAllReduce"), PROFD_COMM_NONE);
	assert_int_equal(gpu_comm_fn_of_frame("PMPI_"), PROFD_COMM_NONE);
	assert_int_equal(gpu_comm_fn_of_frame(""), PROFD_COMM_NONE);
	assert_int_equal(gpu_comm_fn_of_frame("P"), PROFD_COMM_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_names_ignore_size),
		cmocka_unit_test(test_filter_by_nr),
		cmocka_unit_test(test_proc_devices),
		cmocka_unit_test(test_proc_devices_hostile),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_gpu_device_option),
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_cuda_functions),
		cmocka_unit_test(test_comm_frames),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
