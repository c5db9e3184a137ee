#!/usr/bin/env bash
# scripts/device-check.sh [--dry-run | --check] [CARRY]: the device check of issue
# #27, built to fit the GPU machine (/work/.library/device/README.md: at
# most 64 MiB of files in, no package registry, one command of at most 10
# minutes, about 15 minutes in all).
#
# Here (no GPU needed): builds moacert in BUILD_DEVICE (build-device) with
# CUDA for sm_90 and without LibTorch and MPI, the `moacert` target only,
# then packs CARRY (device-carry/, ignored by git): bin/moacert, lib/ with
# the shared libraries it loads but glibc's, the C++ runtime's (libstdc++,
# libgcc_s) and the driver's (libcuda), and the on-device scripts of
# scripts/device/ (run.sh, counts.py, sdpa.py, bench_table.py). It checks
# that the carry is at most 64 MiB (and prints its size), and that the
# carried binary starts with the carried libraries alone: `ldd` resolves
# nothing outside CARRY but the system's C and C++ runtimes, and
# `moacert --version` and `moacert list` run under `env -i`.
#
# Without --dry-run it then prints how to run the on-device half with the
# device tool (its `run` verb, the repository root as the working folder):
#   carry: ["device-carry"]
#   command: bash device-carry/run.sh "$OUT"
# which writes $OUT/summary.log and $OUT/raw.tar.gz in at most 8 minutes
# (scripts/device/run.sh says what it runs).
#
# `--check CARRY` runs only the checks, on a carry packed before (the CTest
# device.carry_check plants a missing library in a copy and expects them
# to name it).
set -euo pipefail
mode=full
case "${1:-}" in
  --dry-run) mode=dry_run; shift ;;
  --check) mode=check; shift ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DEVICE:-build-device}
carry=${1:-device-carry}
carry_arg=$carry  # as given, for the device tool's carry list
limit=$((64 * 1024 * 1024))
# The system's libraries the carry leaves out: glibc (libc, libm, libdl,
# librt, libpthread, the loader, the vDSO), the C++ runtime (libstdc++,
# libgcc_s) and the CUDA driver (libcuda, which the static CUDA runtime
# opens itself).
system_lib='^(linux-vdso|ld-linux[^ ]*|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcuda)\.so'

pack() {
  # The build: the device's architecture only; the binary finds its libraries
  # beside it ($ORIGIN/../lib, the carry's layout as the build tree's), never
  # through a path of this machine.
  echo "device-check: configure and build $build (CUDA sm_90, no LibTorch, no MPI)"
  t0=$(date +%s)
  mkdir -p "$build"
  configure_log=$build/device-check-configure.log
  cmake -S . -B "$build" -G Ninja -DMOACERT_WITH_TORCH=OFF -DMOACERT_WITH_MPI=OFF \
    -DMOACERT_WITH_CUDA=ON -DMOACERT_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON \
    >"$configure_log" 2>&1 || { tail -30 "$configure_log"; exit 1; }
  if ! grep -q "^--   CUDA: found" "$configure_log"; then
    grep "^--   CUDA" "$configure_log" || true
    echo "device-check: this machine has no nvcc: the cuda.* kernels cannot be built here"
    exit 1
  fi
  cmake --build "$build" -j"${JOBS:-2}" --target moacert
  echo "device-check: built in $(($(date +%s) - t0)) s"

  # The carry: the binary, the libraries it loads but the system's runtimes,
  # the on-device scripts.
  if [ -e "$carry" ] && [ ! -f "$carry/run.sh" ]; then
    echo "device-check: $carry exists and is not a carry (no run.sh): not replaced"
    exit 2
  fi
  rm -rf "$carry"
  mkdir -p "$carry/bin" "$carry/lib"
  carry=$(cd "$carry" && pwd)
  strip --strip-unneeded -o "$carry/bin/moacert" "$build/cli/moacert"
  ldd "$build/cli/moacert" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    while read -r name path; do
      [[ $name =~ $system_lib ]] && continue
      strip --strip-unneeded -o "$carry/lib/$name" "$(readlink -f "$path")"
    done
  cp scripts/device/run.sh scripts/device/counts.py scripts/device/sdpa.py \
    scripts/device/bench_table.py "$carry/"
}

if [ "$mode" = check ]; then
  carry=$(cd "$carry" && pwd)
else
  pack
fi
size=$(du -sb "$carry" | cut -f1)
echo "device-check: $carry holds $(find "$carry" -type f | wc -l) files, $size bytes" \
  "($(awk -v b="$size" 'BEGIN {printf "%.1f MiB", b / 1048576}'), the limit 64 MiB):"
(cd "$carry" && du -b bin/* lib/* | sort -rn | awk '{printf "  %8.2f MiB  %s\n", $1 / 1048576, $2}')
if [ "$size" -gt "$limit" ]; then
  echo "device-check: the carry is over 64 MiB"
  exit 1
fi

# The carried binary with the carried libraries alone, as run.sh runs it
# (LD_LIBRARY_PATH=CARRY/lib: the binary's own $ORIGIN/../lib does not
# serve its libraries' needs): everything ldd resolves, for the binary and
# for each library, is in the carry or one of the system's runtimes,
# nothing is missing, and it starts in an otherwise empty environment.
bad=0
for f in "$carry"/bin/moacert "$carry"/lib/*; do
  while read -r line; do
    name=$(awk '{print $1}' <<<"$line")
    path=$(awk '$2 == "=>" {print $3}' <<<"$line")
    if [[ $line == *"not found"* ]]; then
      echo "device-check: $f: $name not found"
      bad=1
    elif [ -n "$path" ] && [[ $path != "$carry/"* ]] &&
      ! [[ $name =~ $system_lib ]]; then
      echo "device-check: $f loads $name from $path, outside the carry"
      bad=1
    fi
  done < <(env -i LD_LIBRARY_PATH="$carry/lib" ldd "$f" 2>&1 | grep -v "statically linked")
done
[ "$bad" -eq 0 ] || exit 1
env -i LD_LIBRARY_PATH="$carry/lib" "$carry/bin/moacert" --version
simt=$(env -i LD_LIBRARY_PATH="$carry/lib" "$carry/bin/moacert" list | awk '/^  simt\./ {n++} END {print n + 0}')
echo "device-check: the carried moacert starts alone and lists $simt simt.* variants" \
  "(their cuda.* twins register on a GPU)"
[ "$simt" -gt 0 ] || exit 1
glibc=$(objdump -T "$carry"/bin/moacert "$carry"/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' |
  sort -uV | tail -1)
glibcxx=$(objdump -T "$carry"/bin/moacert "$carry"/lib/* 2>/dev/null |
  grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)
echo "device-check: the device needs $glibc and $glibcxx or later (its own libc and libstdc++)"

if [ "$mode" != full ]; then
  echo "device-check: $([ "$mode" = check ] && echo check || echo dry run) passed"
  exit 0
fi
cat <<EOT
device-check: $carry is ready. On the GPU machine, with the device tool's run verb:
  carry:   ["$carry_arg"]
  command: bash $carry_arg/run.sh "\$OUT"
  timeout: 540
It writes \$OUT/summary.log and \$OUT/raw.tar.gz within 8 minutes.
EOT
