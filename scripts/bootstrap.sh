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
