/* gpu_names.c: what the numbers mean.  Command numbers from the drivers'
 * public interface headers (NVIDIA's nv_escape.h, nv-ioctl-numbers.h and
 * uvm_ioctl.h; Linux UAPI kfd_ioctl.h and drm.h), by number only: the
 * size bits of a command change between driver versions, its number does
 * not. */
#include <stdio.h>
#include <string.h>

#include "gpu.h"

struct cmd_name {
	uint32_t nr;
	const char *name;
};

/* NVIDIA frontend ('F'): resource-manager escapes and the OS ones
 * from NV_IOCTL_BASE (200) on. */
static const struct cmd_name nvidia_cmds[] = {
	{ 0x27, "NV_ESC_RM_ALLOC_MEMORY" },
	{ 0x28, "NV_ESC_RM_ALLOC_OBJECT" },
	{ 0x29, "NV_ESC_RM_FREE" },
	{ 0x2a, "NV_ESC_RM_CONTROL" },
	{ 0x2b, "NV_ESC_RM_ALLOC" },
	{ 0x34, "NV_ESC_RM_DUP_OBJECT" },
	{ 0x35, "NV_ESC_RM_SHARE" },
	{ 0x39, "NV_ESC_RM_I2C_ACCESS" },
	{ 0x41, "NV_ESC_RM_IDLE_CHANNELS" },
	{ 0x4a, "NV_ESC_RM_VID_HEAP_CONTROL" },
	{ 0x4d, "NV_ESC_RM_ACCESS_REGISTRY" },
	{ 0x4e, "NV_ESC_RM_MAP_MEMORY" },
	{ 0x4f, "NV_ESC_RM_UNMAP_MEMORY" },
	{ 0x52, "NV_ESC_RM_GET_EVENT_DATA" },
	{ 0x54, "NV_ESC_RM_ALLOC_CONTEXT_DMA2" },
	{ 0x56, "NV_ESC_RM_ADD_VBLANK_CALLBACK" },
	{ 0x57, "NV_ESC_RM_MAP_MEMORY_DMA" },
	{ 0x58, "NV_ESC_RM_UNMAP_MEMORY_DMA" },
	{ 0x59, "NV_ESC_RM_BIND_CONTEXT_DMA" },
	{ 0x5c, "NV_ESC_RM_EXPORT_OBJECT_TO_FD" },
	{ 0x5d, "NV_ESC_RM_IMPORT_OBJECT_FROM_FD" },
	{ 0x5e, "NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO" },
	{ 0x5f, "NV_ESC_RM_LOCKLESS_DIAGNOSTIC" },
	{ 200, "NV_ESC_CARD_INFO" },
	{ 201, "NV_ESC_REGISTER_FD" },
	{ 206, "NV_ESC_ALLOC_OS_EVENT" },
	{ 207, "NV_ESC_FREE_OS_EVENT" },
	{ 209, "NV_ESC_STATUS_CODE" },
	{ 210, "NV_ESC_CHECK_VERSION_STR" },
	{ 211, "NV_ESC_IOCTL_XFER_CMD" }, /* only if the inner command was unreadable */
	{ 212, "NV_ESC_ATTACH_GPUS_TO_FD" },
	{ 213, "NV_ESC_QUERY_DEVICE_INTR" },
	{ 214, "NV_ESC_SYS_PARAMS" },
	{ 217, "NV_ESC_EXPORT_TO_DMABUF_FD" },
	{ 218, "NV_ESC_WAIT_OPEN_COMPLETE" },
};

/* nvidia-uvm: plain command numbers, no _IOC encoding. */
static const struct cmd_name uvm_cmds[] = {
	{ 1, "UVM_RESERVE_VA" },
	{ 2, "UVM_RELEASE_VA" },
	{ 3, "UVM_REGION_COMMIT" },
	{ 4, "UVM_REGION_DECOMMIT" },
	{ 5, "UVM_REGION_SET_STREAM" },
	{ 6, "UVM_SET_STREAM_RUNNING" },
	{ 7, "UVM_SET_STREAM_STOPPED" },
	{ 10, "UVM_ADD_SESSION" },
	{ 12, "UVM_ENABLE_COUNTERS" },
	{ 13, "UVM_MAP_COUNTER" },
	{ 14, "UVM_CREATE_EVENT_QUEUE" },
	{ 15, "UVM_REMOVE_EVENT_QUEUE" },
	{ 16, "UVM_MAP_EVENT_QUEUE" },
	{ 17, "UVM_EVENT_CTRL" },
	{ 20, "UVM_GET_GPU_UUID_TABLE" },
	{ 21, "UVM_REGION_SET_BACKING" },
	{ 22, "UVM_REGION_UNSET_BACKING" },
	{ 23, "UVM_CREATE_RANGE_GROUP" },
	{ 24, "UVM_DESTROY_RANGE_GROUP" },
	{ 25, "UVM_REGISTER_GPU_VASPACE" },
	{ 26, "UVM_UNREGISTER_GPU_VASPACE" },
	{ 27, "UVM_REGISTER_CHANNEL" },
	{ 28, "UVM_UNREGISTER_CHANNEL" },
	{ 29, "UVM_ENABLE_PEER_ACCESS" },
	{ 30, "UVM_DISABLE_PEER_ACCESS" },
	{ 31, "UVM_SET_RANGE_GROUP" },
	{ 33, "UVM_MAP_EXTERNAL_ALLOCATION" },
	{ 34, "UVM_FREE" },
	{ 35, "UVM_MEM_MAP" },
	{ 37, "UVM_REGISTER_GPU" },
	{ 38, "UVM_UNREGISTER_GPU" },
	{ 39, "UVM_PAGEABLE_MEM_ACCESS" },
	{ 40, "UVM_PREVENT_MIGRATION_RANGE_GROUPS" },
	{ 41, "UVM_ALLOW_MIGRATION_RANGE_GROUPS" },
	{ 42, "UVM_SET_PREFERRED_LOCATION" },
	{ 43, "UVM_UNSET_PREFERRED_LOCATION" },
	{ 44, "UVM_ENABLE_READ_DUPLICATION" },
	{ 45, "UVM_DISABLE_READ_DUPLICATION" },
	{ 46, "UVM_SET_ACCESSED_BY" },
	{ 47, "UVM_UNSET_ACCESSED_BY" },
	{ 51, "UVM_MIGRATE" },
	{ 53, "UVM_MIGRATE_RANGE_GROUP" },
	{ 56, "UVM_TOOLS_INIT_EVENT_TRACKER" },
	{ 57, "UVM_TOOLS_SET_NOTIFICATION_THRESHOLD" },
	{ 58, "UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS" },
	{ 59, "UVM_TOOLS_EVENT_QUEUE_DISABLE_EVENTS" },
	{ 60, "UVM_TOOLS_ENABLE_COUNTERS" },
	{ 61, "UVM_TOOLS_DISABLE_COUNTERS" },
	{ 62, "UVM_TOOLS_READ_PROCESS_MEMORY" },
	{ 63, "UVM_TOOLS_WRITE_PROCESS_MEMORY" },
	{ 64, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE" },
	{ 65, "UVM_MAP_DYNAMIC_PARALLELISM_REGION" },
	{ 66, "UVM_UNMAP_EXTERNAL" },
	{ 67, "UVM_TOOLS_FLUSH_EVENTS" },
	{ 68, "UVM_ALLOC_SEMAPHORE_POOL" },
	{ 69, "UVM_CLEAN_UP_ZOMBIE_RESOURCES" },
	{ 70, "UVM_PAGEABLE_MEM_ACCESS_ON_GPU" },
	{ 71, "UVM_POPULATE_PAGEABLE" },
	{ 72, "UVM_VALIDATE_VA_RANGE" },
	{ 73, "UVM_CREATE_EXTERNAL_RANGE" },
	{ 74, "UVM_MAP_EXTERNAL_SPARSE" },
	{ 75, "UVM_MM_INITIALIZE" },
	{ 76, "UVM_TOOLS_INIT_EVENT_TRACKER_V2" },
	{ 77, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_V2" },
	{ 78, "UVM_ALLOC_DEVICE_P2P" },
	{ 79, "UVM_CLEAR_ALL_ACCESS_COUNTERS" },
	{ 80, "UVM_DISCARD" },
	{ 2047, "UVM_IS_8_SUPPORTED" },
};

#define UVM_INITIALIZE 0x30000001u
#define UVM_DEINITIALIZE 0x30000002u

/* /dev/kfd ('K'). */
static const struct cmd_name kfd_cmds[] = {
	{ 0x01, "AMDKFD_IOC_GET_VERSION" },
	{ 0x02, "AMDKFD_IOC_CREATE_QUEUE" },
	{ 0x03, "AMDKFD_IOC_DESTROY_QUEUE" },
	{ 0x04, "AMDKFD_IOC_SET_MEMORY_POLICY" },
	{ 0x05, "AMDKFD_IOC_GET_CLOCK_COUNTERS" },
	{ 0x06, "AMDKFD_IOC_GET_PROCESS_APERTURES" },
	{ 0x07, "AMDKFD_IOC_UPDATE_QUEUE" },
	{ 0x08, "AMDKFD_IOC_CREATE_EVENT" },
	{ 0x09, "AMDKFD_IOC_DESTROY_EVENT" },
	{ 0x0a, "AMDKFD_IOC_SET_EVENT" },
	{ 0x0b, "AMDKFD_IOC_RESET_EVENT" },
	{ 0x0c, "AMDKFD_IOC_WAIT_EVENTS" },
	{ 0x0d, "AMDKFD_IOC_DBG_REGISTER_DEPRECATED" },
	{ 0x0e, "AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED" },
	{ 0x0f, "AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED" },
	{ 0x10, "AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED" },
	{ 0x11, "AMDKFD_IOC_SET_SCRATCH_BACKING_VA" },
	{ 0x12, "AMDKFD_IOC_GET_TILE_CONFIG" },
	{ 0x13, "AMDKFD_IOC_SET_TRAP_HANDLER" },
	{ 0x14, "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW" },
	{ 0x15, "AMDKFD_IOC_ACQUIRE_VM" },
	{ 0x16, "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU" },
	{ 0x17, "AMDKFD_IOC_FREE_MEMORY_OF_GPU" },
	{ 0x18, "AMDKFD_IOC_MAP_MEMORY_TO_GPU" },
	{ 0x19, "AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU" },
	{ 0x1a, "AMDKFD_IOC_SET_CU_MASK" },
	{ 0x1b, "AMDKFD_IOC_GET_QUEUE_WAVE_STATE" },
	{ 0x1c, "AMDKFD_IOC_GET_DMABUF_INFO" },
	{ 0x1d, "AMDKFD_IOC_IMPORT_DMABUF" },
	{ 0x1e, "AMDKFD_IOC_ALLOC_QUEUE_GWS" },
	{ 0x1f, "AMDKFD_IOC_SMI_EVENTS" },
	{ 0x20, "AMDKFD_IOC_SVM" },
	{ 0x21, "AMDKFD_IOC_SET_XNACK_MODE" },
	{ 0x22, "AMDKFD_IOC_CRIU_OP" },
	{ 0x23, "AMDKFD_IOC_AVAILABLE_MEMORY" },
	{ 0x24, "AMDKFD_IOC_EXPORT_DMABUF" },
	{ 0x25, "AMDKFD_IOC_RUNTIME_ENABLE" },
	{ 0x26, "AMDKFD_IOC_DBG_TRAP" },
};

/* DRM core ('d') as render nodes use it; 0x40-0x9f belong to the driver. */
static const struct cmd_name drm_cmds[] = {
	{ 0x00, "DRM_IOCTL_VERSION" },
	{ 0x01, "DRM_IOCTL_GET_UNIQUE" },
	{ 0x02, "DRM_IOCTL_GET_MAGIC" },
	{ 0x05, "DRM_IOCTL_GET_CLIENT" },
	{ 0x06, "DRM_IOCTL_GET_STATS" },
	{ 0x07, "DRM_IOCTL_SET_VERSION" },
	{ 0x09, "DRM_IOCTL_GEM_CLOSE" },
	{ 0x0a, "DRM_IOCTL_GEM_FLINK" },
	{ 0x0b, "DRM_IOCTL_GEM_OPEN" },
	{ 0x0c, "DRM_IOCTL_GET_CAP" },
	{ 0x0d, "DRM_IOCTL_SET_CLIENT_CAP" },
	{ 0x2d, "DRM_IOCTL_PRIME_HANDLE_TO_FD" },
	{ 0x2e, "DRM_IOCTL_PRIME_FD_TO_HANDLE" },
	{ 0x3a, "DRM_IOCTL_WAIT_VBLANK" },
	{ 0xbf, "DRM_IOCTL_SYNCOBJ_CREATE" },
	{ 0xc0, "DRM_IOCTL_SYNCOBJ_DESTROY" },
	{ 0xc1, "DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD" },
	{ 0xc2, "DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE" },
	{ 0xc3, "DRM_IOCTL_SYNCOBJ_WAIT" },
	{ 0xc4, "DRM_IOCTL_SYNCOBJ_RESET" },
	{ 0xc5, "DRM_IOCTL_SYNCOBJ_SIGNAL" },
	{ 0xca, "DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT" },
	{ 0xcb, "DRM_IOCTL_SYNCOBJ_QUERY" },
	{ 0xcc, "DRM_IOCTL_SYNCOBJ_TRANSFER" },
	{ 0xcd, "DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL" },
	{ 0xce, "DRM_IOCTL_MODE_GETFB2" },
};

#define DRM_COMMAND_BASE 0x40
#define DRM_COMMAND_END 0xa0
#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *lookup(const struct cmd_name *t, size_t n, uint32_t nr)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].nr == nr)
			return t[i].name;
	return NULL;
}

const char *gpu_cmd_name(uint32_t cls, uint32_t cmd)
{
	uint32_t nr = cmd & 0xff;

	switch (cls) {
	case PROFD_GPU_CLASS_NVIDIA:
		return lookup(nvidia_cmds, N(nvidia_cmds), nr);
	case PROFD_GPU_CLASS_UVM:
		if (cmd == UVM_INITIALIZE)
			return "UVM_INITIALIZE";
		if (cmd == UVM_DEINITIALIZE)
			return "UVM_DEINITIALIZE";
		return lookup(uvm_cmds, N(uvm_cmds), cmd);
	case PROFD_GPU_CLASS_KFD:
		return lookup(kfd_cmds, N(kfd_cmds), nr);
	case PROFD_GPU_CLASS_DRM:
		return lookup(drm_cmds, N(drm_cmds), nr);
	default:
		return NULL;
	}
}

/* Where the call went, for names without a table. */
static void device_label(const struct gpu *g, const struct profd_gpu_event *e, char *buf,
			 size_t len)
{
	const struct gpu_device *d = g ? gpu_find_device(g, e->rdev) : NULL;

	if (d && d->path)
		snprintf(buf, len, "%s", d->path);
	else if (e->cls != PROFD_GPU_CLASS_GENERIC)
		snprintf(buf, len, "%s", gpu_class_name(e->cls));
	else
		snprintf(buf, len, "dev %u:%u", e->rdev >> PROFD_GPU_MINORBITS,
			 e->rdev & ((1u << PROFD_GPU_MINORBITS) - 1));
}

void gpu_call_frame(const struct gpu *g, const struct profd_gpu_event *e, char *buf, size_t len)
{
	const char *name = gpu_cmd_name(e->cls, e->cmd);
	char dev[160];

	if (e->source == PROFD_GPU_SRC_CUDA) {
		name = gpu_cuda_fn_name(e->nr);
		snprintf(buf, len, "%s", name ? name : "cuda?");
		return;
	}
	if (e->source == PROFD_GPU_SRC_COMM) {
		name = gpu_comm_fn_label(e->nr);
		snprintf(buf, len, "%s", name ? name : "comm?");
		return;
	}
	device_label(g, e, dev, sizeof(dev));
	if (e->source == PROFD_GPU_SRC_POLL)
		snprintf(buf, len, "poll on %s", dev);
	else if (name)
		snprintf(buf, len, "%s", name);
	else if (e->cls == PROFD_GPU_CLASS_NVIDIA)
		snprintf(buf, len, "NV_ESC 0x%02x", e->cmd & 0xff);
	else if (e->cls == PROFD_GPU_CLASS_UVM)
		snprintf(buf, len, "UVM ioctl %u", e->cmd);
	else if (e->cls == PROFD_GPU_CLASS_KFD)
		snprintf(buf, len, "AMDKFD_IOC 0x%02x", e->cmd & 0xff);
	else if (e->cls == PROFD_GPU_CLASS_DRM && (e->cmd & 0xff) >= DRM_COMMAND_BASE &&
		 (e->cmd & 0xff) < DRM_COMMAND_END)
		snprintf(buf, len, "DRM driver ioctl 0x%02x", (e->cmd & 0xff) - DRM_COMMAND_BASE);
	else
		snprintf(buf, len, "ioctl 0x%02x on %s", e->cmd & 0xff, dev);
}

/* CUDA entry points by enum profd_cuda_fn; runtime ones start at
 * PROFD_CUDA_cudaLaunchKernel. */
#define FN(x) [PROFD_CUDA_##x] = #x
static const char *const cuda_fns[PROFD_CUDA_FN_MAX] = {
	FN(cuLaunchKernel),
	FN(cuLaunchKernel_ptsz),
	FN(cuLaunchKernelEx),
	FN(cuLaunchKernelEx_ptsz),
	FN(cuLaunchCooperativeKernel),
	FN(cuGraphLaunch),
	FN(cuGraphLaunch_ptsz),
	FN(cuMemAlloc_v2),
	FN(cuMemAllocManaged),
	FN(cuMemAllocHost_v2),
	FN(cuMemAllocAsync),
	FN(cuMemFree_v2),
	FN(cuMemcpy),
	FN(cuMemcpyAsync),
	FN(cuMemcpyHtoD_v2),
	FN(cuMemcpyDtoH_v2),
	FN(cuMemcpyDtoD_v2),
	FN(cuMemcpyHtoDAsync_v2),
	FN(cuMemcpyDtoHAsync_v2),
	FN(cuMemcpyHtoD_v2_ptds),
	FN(cuMemcpyDtoH_v2_ptds),
	FN(cuCtxSynchronize),
	FN(cuStreamSynchronize),
	FN(cuStreamSynchronize_ptsz),
	FN(cuEventSynchronize),
	FN(cudaLaunchKernel),
	FN(cudaLaunchKernel_ptsz),
	FN(cudaLaunchCooperativeKernel),
	FN(cudaGraphLaunch),
	FN(cudaMalloc),
	FN(cudaMallocManaged),
	FN(cudaMallocHost),
	FN(cudaMallocAsync),
	FN(cudaFree),
	FN(cudaMemcpy),
	FN(cudaMemcpy_ptds),
	FN(cudaMemcpyAsync),
	FN(cudaMemcpyAsync_ptsz),
	FN(cudaDeviceSynchronize),
	FN(cudaStreamSynchronize),
	FN(cudaStreamSynchronize_ptsz),
	FN(cudaEventSynchronize),
	FN(cuModuleGetFunction),
	FN(cuLibraryGetKernel),
	FN(cuKernelGetFunction),
	FN(cuModuleUnload),
	FN(cuLibraryUnload),
};
#undef FN

const char *gpu_cuda_fn_name(uint32_t fn)
{
	return fn < PROFD_CUDA_FN_MAX ? cuda_fns[fn] : NULL;
}

/* Kernel and graph launches: tens of thousands a second in training,
 * where the other entry points come by the hundred. */
bool gpu_cuda_fn_launch(uint32_t fn)
{
	const char *name = gpu_cuda_fn_name(fn);

	return name && (strstr(name, "Launch") != NULL);
}

int gpu_cuda_fn_runtime(uint32_t fn)
{
	return fn >= PROFD_CUDA_cudaLaunchKernel && fn <= PROFD_CUDA_cudaEventSynchronize;
}

bool gpu_cuda_fn_names(uint32_t fn)
{
	return fn >= PROFD_CUDA_cuModuleGetFunction && fn <= PROFD_CUDA_cuLibraryUnload;
}

bool gpu_cuda_fn_driver_launch(uint32_t fn)
{
	return fn == PROFD_CUDA_cuLaunchKernel || fn == PROFD_CUDA_cuLaunchKernel_ptsz ||
	       fn == PROFD_CUDA_cuLaunchKernelEx || fn == PROFD_CUDA_cuLaunchKernelEx_ptsz ||
	       fn == PROFD_CUDA_cuLaunchCooperativeKernel;
}

/* nvcc names the host stub of kernel K (mangled _ZK...) __device_stub__ZK
 * (its own parameters follow in the stub's mangling, which the demangler
 * turns into the parameter list): the kernel's mangled name is the
 * identifier after the prefix with the '_' put back. */
#define STUB_PREFIX "__device_stub__"

bool gpu_stub_kernel(const char *sym, char *buf, size_t len)
{
	const char *k = strstr(sym, STUB_PREFIX);
	size_t n;

	if (!k || (k != sym && k[-1] != ' ' && k[-1] != ':'))
		return false;
	k += strlen(STUB_PREFIX);
	n = strcspn(k, "(");
	if (n == 0 || n + 2 > len)
		return false;
	if (k[0] == 'Z') { /* a C++ name: _Z... */
		buf[0] = '_';
		memcpy(buf + 1, k, n);
		buf[n + 1] = '\0';
	} else { /* an extern "C" kernel keeps its plain name */
		memcpy(buf, k, n);
		buf[n] = '\0';
	}
	return true;
}

bool gpu_is_launch_helper(const char *sym)
{
	return strncmp(sym, "__cudaLaunchKernel_helper", 25) == 0 ||
	       strncmp(sym, "__cudaLaunch", 12) == 0;
}

bool gpu_cuda_fn_has_stub(uint32_t fn)
{
	return fn == PROFD_CUDA_cudaLaunchKernel || fn == PROFD_CUDA_cudaLaunchKernel_ptsz ||
	       fn == PROFD_CUDA_cudaLaunchCooperativeKernel;
}
