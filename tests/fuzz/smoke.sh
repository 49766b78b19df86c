#!/bin/sh
# CTest's short run of one fuzzer: FUZZER RUNS SEED_DIR [libFuzzer flags].
# New inputs go to a scratch directory, never into the seeds.  stderr of
# the target is closed (-close_fd_mask=2: parsers log every bad line);
# libFuzzer and the sanitizers still report on their own copy of it.
set -eu
fuzzer=$1 runs=$2 seeds=$3
shift 3
scratch=$(mktemp -d "${TMPDIR:-/tmp}/profd-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
"$fuzzer" -runs="$runs" -seed=1 -close_fd_mask=2 "$@" "$scratch" "$seeds"
