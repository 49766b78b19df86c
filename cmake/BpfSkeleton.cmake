# bpf_skeleton(<target> <file.bpf.c>...)
# Compiles each BPF program with clang into a CO-RE object, generates its
# skeleton with bpftool, and exposes the skeleton headers through an
# INTERFACE target.  clang's own system include dirs are passed with
# -idirafter so <linux/types.h> and friends resolve without the host's
# asm headers shadowing vmlinux.h.
find_program(BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /usr/local/sbin REQUIRED)

execute_process(
  COMMAND sh -c "${BPF_CLANG} -v -E - </dev/null 2>&1 | sed -n '/<...> search starts here:/,/End of search list./s|^ \\(/.*\\)|\\1|p'"
  OUTPUT_VARIABLE _bpf_dirs OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REPLACE "\n" ";" _bpf_dirs "${_bpf_dirs}")

# The target's architecture: libbpf's __TARGET_ARCH_* (bpf_tracing.h,
# bpf/arch.bpf.h), its vmlinux.h (x86-64's at vmlinux/, the others in
# vmlinux/<arch>/) and its multiarch include directory.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(BPF_ARCH arm64)
  set(BPF_VMLINUX_DIR ${CMAKE_SOURCE_DIR}/vmlinux/arm64)
  set(BPF_MULTIARCH aarch64-linux-gnu)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(BPF_ARCH x86)
  set(BPF_VMLINUX_DIR ${CMAKE_SOURCE_DIR}/vmlinux)
  set(BPF_MULTIARCH x86_64-linux-gnu)
else()
  message(FATAL_ERROR "BPF: no vmlinux.h nor bpf/arch header for ${CMAKE_SYSTEM_PROCESSOR}")
endif()

# clang's search list is the host's: its multiarch directory (asm/ types)
# becomes the target's.
set(BPF_SYS_INCLUDES)
foreach(dir ${_bpf_dirs})
  string(REGEX REPLACE "/x86_64-linux-gnu$" "/${BPF_MULTIARCH}" dir "${dir}")
  list(APPEND BPF_SYS_INCLUDES -idirafter ${dir})
endforeach()
# Every BPF compile: the objects, and the check that each bpf/*.bpf.h
# compiles on its own (tests/bpf_headers.sh).
set(BPF_CFLAGS -g -O2 -target bpf -D__TARGET_ARCH_${BPF_ARCH} -Wall -Werror
    -I${BPF_VMLINUX_DIR} -I${CMAKE_SOURCE_DIR}/bpf ${BPF_SYS_INCLUDES})

function(bpf_skeleton target)
  set(skel_dir ${CMAKE_BINARY_DIR}/skel)
  file(MAKE_DIRECTORY ${skel_dir})
  set(headers)
  # Every object depends on every BPF source: sample_legacy.bpf.c includes
  # sample.bpf.c.
  file(GLOB bpf_deps ${CMAKE_SOURCE_DIR}/bpf/*.h ${CMAKE_SOURCE_DIR}/bpf/arch/*.h
    ${CMAKE_SOURCE_DIR}/bpf/*.bpf.c)
  foreach(src ${ARGN})
    get_filename_component(name ${src} NAME_WE)
    set(obj ${skel_dir}/${name}.bpf.o)
    set(skel ${skel_dir}/${name}.skel.h)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${BPF_CLANG} ${BPF_CFLAGS} -c ${src} -o ${obj}
      DEPENDS ${src} ${bpf_deps}
      COMMENT "BPF ${name}.bpf.c"
      VERBATIM)
    add_custom_command(
      OUTPUT ${skel}
      COMMAND sh -c "${BPFTOOL} gen skeleton ${obj} name ${name}_bpf > ${skel}.tmp && mv ${skel}.tmp ${skel}"
      DEPENDS ${obj}
      COMMENT "skeleton ${name}.skel.h"
      VERBATIM)
    list(APPEND headers ${skel})
  endforeach()
  add_custom_target(${target}_gen DEPENDS ${headers})
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_gen)
  target_include_directories(${target} INTERFACE ${skel_dir})
endfunction()
