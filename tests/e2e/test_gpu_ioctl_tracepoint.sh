# test_gpu_ioctl.sh with the syscalls hooked by the raw sys_enter/sys_exit
# tracepoints (--gpu-syscall-hook tracepoint): the fallback where BPF
# trampolines cannot attach must count, decode and time the same calls.
PROFD_TEST_GPU_HOOK=tracepoint exec bash "$(dirname "$0")/test_gpu_ioctl.sh"
