#!/bin/bash
# programs.sh: the C programs end-to-end tests build from tests/workloads
# with $CC (default cc), one recipe each, sourced by lib.sh:
#   build_nofp DIR          DIR/nofp and DIR/libnofp.so: no frame pointers
#                           (return addresses signed on arm64)
#   build_cuda_stubs DIR    the CUDA stand-in libraries (below)
#   build_gpu_app DIR       DIR/gpu_app, linked against DIR/lib's stubs
#
# In the kernel matrix's guests a compiler under TCG takes 3 s (x86-64)
# to 10 s (arm64) a file, most of a GPU test's time there: the host
# builds them once beforehand, for the guest's architecture
# (programs.sh OUTDIR, CC a cross compiler where it differs), and the
# guests name that tree in PROFD_TEST_PROGRAMS.  Each build_* then copies
# its files from there instead; one missing there fails, as a compiler
# error would.

# arch_cflags: what the target of $CC needs beyond the recipe (arm64:
# return addresses signed with pointer authentication, as distributions
# build for it: the walk must strip them).
arch_cflags() {
	case $(${CC:-cc} -dumpmachine) in aarch64*) echo -mbranch-protection=standard ;; esac
}

# prebuilt NAME DIR: copy PROFD_TEST_PROGRAMS/NAME's files into DIR, if
# the guest has that tree (status 0), else status 1 (build here).
prebuilt() {
	[ -n "${PROFD_TEST_PROGRAMS:-}" ] || return 1
	[ -d "$PROFD_TEST_PROGRAMS/$1" ] || {
		echo "FAIL: programs: $PROFD_TEST_PROGRAMS/$1 missing (tests/e2e/programs.sh builds it)" >&2
		exit 1
	}
	mkdir -p "$2" && cp -a "$PROFD_TEST_PROGRAMS/$1/." "$2/"
}

build_nofp() {
	local cc=${CC:-cc} w=$SRC/tests/workloads/nofp flags
	prebuilt nofp "$1" && return 0
	flags="-O2 -fomit-frame-pointer -fno-optimize-sibling-calls $(arch_cflags)"
	mkdir -p "$1"
	# shellcheck disable=SC2086
	$cc $flags -shared -fPIC -o "$1/libnofp.so" "$w/lib.c" &&
		$cc $flags -o "$1/nofp" "$w/chain.c" -ldl
}

# build_cuda_stubs DIR: the stand-in libcuda.so.1 and libcudart.so.12 (real
# entry-point names, known sleeps) and a library of kernel host stubs.
build_cuda_stubs() {
	local gpu=$SRC/tests/workloads/gpu cc=${CC:-cc}
	prebuilt cuda_stubs "$1" && return 0
	mkdir -p "$1"
	$cc -O2 -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$1/libcuda.so.1" "$gpu/cuda_driver_stub.c" &&
		ln -sf libcuda.so.1 "$1/libcuda.so" &&
		$cc -O2 -shared -fPIC -Wl,-soname,libcudart.so.12 -Wl,-rpath,'$ORIGIN' \
			-o "$1/libcudart.so.12" "$gpu/cuda_runtime_stub.c" &&
		ln -sf libcudart.so.12 "$1/libcudart.so" &&
		$cc -O2 -shared -fPIC -o "$1/libkernels.so" "$gpu/kernels_stub.c"
}

# build_gpu_app DIR: the C program of the CUDA tests, finding the stubs
# in DIR/lib (build_cuda_stubs) wherever DIR is.
build_gpu_app() {
	local cc=${CC:-cc}
	prebuilt gpu_app "$1" && return 0
	$cc -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -o "$1/gpu_app" \
		"$SRC/tests/workloads/gpu/gpu_app.c" -L"$1/lib" -lcudart -lcuda -lkernels \
		-Wl,-rpath,'$ORIGIN/lib'
}

# programs.sh OUTDIR: all of them into OUTDIR, for a guest.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -eu
	SRC=$(cd "$(dirname "$0")/../.." && pwd)
	out=${1:?usage: programs.sh OUTDIR}
	unset PROFD_TEST_PROGRAMS
	rm -rf "$out.part"
	build_nofp "$out.part/nofp"
	build_cuda_stubs "$out.part/cuda_stubs"
	# gpu_app links against those stubs, found as its lib/ there; a test
	# puts its own copy there.
	mkdir -p "$out.part/gpu_app"
	ln -s ../cuda_stubs "$out.part/gpu_app/lib"
	build_gpu_app "$out.part/gpu_app"
	rm "$out.part/gpu_app/lib"
	rm -rf "$out" && mv "$out.part" "$out"
fi
