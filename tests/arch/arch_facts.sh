#!/bin/sh
# arch.facts_in_arch_headers: the architecture is named only in bpf/arch/,
# bpf/arch.bpf.h and userspace/lib/arch/ (STYLE.md, "Per-architecture
# code"): no architecture test, syscall wrapper name or thread-pointer
# field in the common code, so that a new architecture is new files.  A
# file of one architecture by its name (unwind_cfi_aarch64.c: the
# .eh_frame compiler that every host runs for that architecture's ELF
# files) names it too.
# Usage: arch_facts.sh SOURCE_DIR
set -eu
cd "$1"
PATTERN='__x86_64__|__aarch64__|__TARGET_ARCH_|__x64_sys_|__arm64_sys_|\bfsbase\b|\btp_value\b|EM_X86_64|EM_AARCH64'
hits=$(grep -rnE "$PATTERN" bpf userspace --include='*.c' --include='*.h' |
	grep -vE '^(bpf/arch/|bpf/arch\.bpf\.h:|userspace/lib/arch/|[^:]*_(x86_64|aarch64)\.c:)' ||
	true)
if [ -n "$hits" ]; then
	printf '%s\n' "$hits"
	echo "FAIL: architecture facts outside the arch headers (move them to bpf/arch/ or userspace/lib/arch/)"
	exit 1
fi
echo "architecture facts only in bpf/arch/ and userspace/lib/arch/"
