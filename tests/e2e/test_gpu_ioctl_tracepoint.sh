# test_gpu_ioctl.sh with the syscalls hooked by the raw sys_enter/sys_exit
# tracepoints (--gpu-syscall-hook tracepoint), the explicit option for
# programs the uprobe hook cannot see: it must count, decode and time the
# same calls (and does run for every system call, which the test checks).
PROFD_TEST_GPU_HOOK=tracepoint exec bash "$(dirname "$0")/test_gpu_ioctl.sh"
