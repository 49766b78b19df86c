# Cross build for arm64 (AArch64) on a Debian x86-64 host:
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# The compiler from crossbuild-essential-arm64; the libraries are Debian's
# arm64 -dev packages installed side by side with the amd64 ones through
# multiarch (packaging/setup.sh: dpkg --add-architecture arm64), so their
# files live under /usr/lib/aarch64-linux-gnu and /usr/include.  The BPF
# objects are built for arm64 too (BpfSkeleton.cmake reads
# CMAKE_SYSTEM_PROCESSOR): -D__TARGET_ARCH_arm64 and vmlinux/arm64/.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# pkg-config reads only the arm64 .pc files (and the architecture-free
# ones), never the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# Programs (clang for BPF, bpftool) are the host's; libraries and headers
# only the target's, from its multiarch directories.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
