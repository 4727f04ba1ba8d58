#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` and `llama-speculative-simple` from the llama.cpp source that
# llama-cpp-python vendors, so the remote-engine tests and `specterm bench` compare against exactly
# the llama.cpp that specterm's local engine runs on (same commit, same kernels).
#
# Why a script and not part of the package: these binaries are only needed by tests and benchmarks,
# and the build takes minutes. It builds OUTSIDE the repository (nothing built is ever committed) and
# skips the work when the binaries for the same version and flags are already there, so CI can cache
# the directory.
#
# Usage:  bench/build_llama_cpp.sh            # build (or reuse) and print the binaries' folder
#         bench/build_llama_cpp.sh --print    # print the folder only if already built, else exit 1
#
# Environment:
#   SPECTERM_LLAMA_CPP_DIR   where to build (default: $HOME/.cache/specterm/llama.cpp-<version>)
#   SPECTERM_LLAMA_CPP_CMAKE_ARGS   extra CMake flags, e.g. "-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90"
#                            (use a different SPECTERM_LLAMA_CPP_DIR per flavour; a flag change rebuilds)
#   PYTHON                   the Python whose pip downloads the sdist (default: python3)
#   JOBS                     parallel compile jobs (default: number of CPUs)
#
# The web UI is turned off (-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF): the default build
# downloads a prebuilt UI from the network, which CI does not have and the tests do not need.
set -euo pipefail

VERSION="0.3.36"  # keep in step with the llama-cpp-python pin in pyproject.toml
ROOT="${SPECTERM_LLAMA_CPP_DIR:-$HOME/.cache/specterm/llama.cpp-$VERSION}"
PYTHON="${PYTHON:-python3}"
JOBS="${JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}"
TARGETS=(llama-server llama-speculative-simple)

CMAKE_FLAGS=(
  -DCMAKE_BUILD_TYPE=Release
  -DBUILD_SHARED_LIBS=OFF          # self-contained binaries that can live in bin/
  -DLLAMA_USE_PREBUILT_UI=OFF      # no web UI download
  -DLLAMA_BUILD_UI=OFF
  -DLLAMA_CURL=OFF                 # no model downloads from the hub (deprecated, ignored on new trees)
  -DLLAMA_OPENSSL=OFF              # loopback/SSH-tunnel use only; no libssl-dev needed
  -DLLAMA_BUILD_TESTS=OFF
  -DLLAMA_BUILD_TOOLS=ON           # llama-server lives in tools/
  -DLLAMA_BUILD_SERVER=ON
  -DLLAMA_BUILD_EXAMPLES=ON        # llama-speculative-simple lives in examples/
)
# shellcheck disable=SC2206  # word splitting of the user's extra flags is intended
EXTRA=(${SPECTERM_LLAMA_CPP_CMAKE_ARGS:-})
STAMP_TEXT="llama-cpp-python==$VERSION ${CMAKE_FLAGS[*]} ${EXTRA[*]:-}"

BIN="$ROOT/bin"
STAMP="$BIN/.build-stamp"

built() {
  [[ -f "$STAMP" && "$(cat "$STAMP")" == "$STAMP_TEXT" ]] || return 1
  for t in "${TARGETS[@]}"; do [[ -x "$BIN/$t" ]] || return 1; done
}

if [[ "${1:-}" == "--print" ]]; then
  built && { echo "$BIN"; exit 0; }
  echo "llama.cpp binaries not built yet in $BIN (run bench/build_llama_cpp.sh)" >&2
  exit 1
fi

if built; then
  echo "llama.cpp binaries already built (llama-cpp-python==$VERSION): $BIN" >&2
  echo "$BIN"
  exit 0
fi

command -v cmake >/dev/null || { echo "build_llama_cpp.sh: cmake not found; install cmake >= 3.14" >&2; exit 2; }
command -v "$PYTHON" >/dev/null || { echo "build_llama_cpp.sh: $PYTHON not found; set PYTHON=" >&2; exit 2; }

start=$(date +%s)
mkdir -p "$ROOT/dl" "$BIN"

SRC="$ROOT/src/llama_cpp_python-$VERSION/vendor/llama.cpp"
if [[ ! -f "$SRC/CMakeLists.txt" ]]; then
  echo ">> downloading llama-cpp-python==$VERSION sdist from PyPI" >&2
  if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
    # a system Python without pip (Debian): a throwaway venv inside the cache provides one
    "$PYTHON" -m venv "$ROOT/pip-venv" >&2
    PYTHON="$ROOT/pip-venv/bin/python"
  fi
  "$PYTHON" -m pip download --quiet --no-deps --no-binary :all: -d "$ROOT/dl" "llama-cpp-python==$VERSION" >&2
  sdist=$(ls "$ROOT"/dl/llama_cpp_python-"$VERSION".tar.gz)
  rm -rf "$ROOT/src" && mkdir -p "$ROOT/src"
  # only the vendored llama.cpp is needed
  tar -xzf "$sdist" -C "$ROOT/src" "llama_cpp_python-$VERSION/vendor/llama.cpp"
fi

GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)

echo ">> configuring llama.cpp ($SRC)" >&2
cmake -S "$SRC" -B "$ROOT/build" "${GEN[@]}" "${CMAKE_FLAGS[@]}" "${EXTRA[@]}" >&2
echo ">> building ${TARGETS[*]} with $JOBS jobs" >&2
cmake --build "$ROOT/build" --config Release -j "$JOBS" --target "${TARGETS[@]}" >&2

for t in "${TARGETS[@]}"; do
  f=$(find "$ROOT/build" -type f -name "$t" -perm -u+x | head -n1)
  [[ -n "$f" ]] || { echo "build_llama_cpp.sh: $t was not produced" >&2; exit 1; }
  cp -f "$f" "$BIN/$t"
done
echo "$STAMP_TEXT" > "$STAMP"

echo ">> built in $(( $(date +%s) - start )) s: ${TARGETS[*]} in $BIN" >&2
echo "$BIN"
