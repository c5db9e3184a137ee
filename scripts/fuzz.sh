#!/usr/bin/env bash
# Fuzzes the two parsers moacert exposes to untrusted text, with libFuzzer
# under AddressSanitizer (with LeakSanitizer) and UBSan (Debian's clang):
#
#   fuzz_case_json   case files (oracle/case_json.cpp)
#   fuzz_token       reproduction tokens (properties/token.cpp)
#
#   bash scripts/fuzz.sh [SECONDS] [BUILD_DIR]
#
# Each target starts from its seed corpus (fuzz/corpus/<target>/, never
# modified: new inputs go to a scratch copy) and runs SECONDS (default 60);
# any crash, leak or sanitizer report fails the script, and the input that
# caused it is left in BUILD_DIR (default build-fuzz). .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
out=${2:-build-fuzz}
mkdir -p "$out"
cxx=${CXX_FUZZ:-clang++}
# Debian's clang 14 has no _Float16 on x86-64 (clang 15 has): its storage
# type __fp16 converts the same way (one rounding, to nearest even), which
# is all the parsers need. No -Werror: clang warns where g++ does not, and
# the main build (g++, -Werror) is the one that keeps the code clean.
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -I. -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -include fuzz/half_shim.hpp -D_Float16=moacert_fuzz_half)

build() {  # build TARGET SOURCES... -- LIBS...
  local target=$1
  shift
  local sources=() libs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do sources+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  libs=("$@")
  echo "fuzz: building $target"
  # compiler-rt's builtins: __fp16's conversions live there.
  "$cxx" "${flags[@]}" "${sources[@]}" -o "$out/$target" "${libs[@]}" \
    "$("$cxx" -print-libgcc-file-name --rtlib=compiler-rt)"
}

build fuzz_case_json fuzz/fuzz_case_json.cpp oracle/case_json.cpp oracle/rounding.cpp \
  -- -lmpfr -lgmp
build fuzz_token fuzz/fuzz_token.cpp properties/token.cpp properties/case_gen.cpp \
  -- -lrapidcheck

status=0
for target in fuzz_case_json fuzz_token; do
  corpus="$out/corpus_$target"
  rm -rf "$corpus"
  mkdir -p "$corpus"
  echo "fuzz: running $target for ${seconds} s"
  if ! (cd "$out" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "./$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -print_final_stats=1 "corpus_$target" "../fuzz/corpus/${target#fuzz_}" \
        > "$target.log" 2>&1); then
    echo "fuzz: $target FAILED (log: $out/$target.log)"
    tail -n 40 "$out/$target.log"
    status=1
  else
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$out/$target.log" |
      sed "s/^/fuzz: $target /"
  fi
done
exit $status
