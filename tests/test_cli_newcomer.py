"""What a newcomer stumbled on: a command whose install extra is missing says so in one line, output piped to a
reader that stops early ends quietly, `aaos bench --help` says where it writes, and the Space listens where
Gradio's conventions say. Each through the real entry point in a subprocess where it concerns the process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO_ROOT

from aaos.cli import READER_GONE, main
from aaos.server.address import SPACE_PORT, space_address


def without(modules: tuple[str, ...], *argv: str) -> subprocess.CompletedProcess[str]:
    """`aaos ARGV` in a subprocess where `modules` cannot be imported, as on an install without their extra."""
    script = (f"import sys\nfor name in {modules!r}:\n    sys.modules[name] = None\n"
              f"from aaos.cli import main\nraise SystemExit(main({list(argv)!r}))\n")
    return subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("blocked", "argv", "extra"), [
    (("uvicorn",), ("serve", "--port", "0"), "server"),
    (("tqdm",), ("bench", "--policy", "noop", "--episodes", "1"), "bench"),
], ids=["serve", "bench"])
def test_a_command_without_its_extra_says_which_in_one_line(tmp_path: Path, blocked: tuple[str, ...],
                                                            argv: tuple[str, ...], extra: str) -> None:
    out = tmp_path / "out"
    done = without(blocked, *argv, *(("--out", str(out)) if argv[0] == "bench" else ()))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [f"aaos: {blocked[0]} is not installed; it comes with the {extra!r} extra: "
                                        f"pip install 'aaos[{extra}]'"]
    assert not out.exists()  # the command stopped before it started: no episode played, nothing written


@pytest.mark.parametrize("argv", [("run", "--seed", "1"), ("list",)], ids=["run", "list"])
def test_output_whose_reader_went_away_ends_quietly(argv: tuple[str, ...]) -> None:
    """As `aaos run | head` when head has read its lines: the pipe's reader is gone before the command writes."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "aaos.cli", *argv], cwd=REPO_ROOT, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (READER_GONE, "")


def test_bench_help_says_where_it_writes_and_that_it_resumes_there(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "output folder (default runs/bench," in shown
    assert "resumes it: the episodes already recorded there are not played again" in shown


@pytest.mark.parametrize(("environ", "address"), [
    ({}, ("127.0.0.1", SPACE_PORT)),
    ({"GRADIO_SERVER_NAME": "0.0.0.0", "GRADIO_SERVER_PORT": "7860"}, ("0.0.0.0", 7860)),
    ({"HOST": "0.0.0.0", "PORT": "8080"}, ("0.0.0.0", 8080)),
    ({"GRADIO_SERVER_NAME": "10.0.0.5", "HOST": "0.0.0.0", "GRADIO_SERVER_PORT": "9000", "PORT": "8080"},
     ("10.0.0.5", 9000)),
    ({"GRADIO_SERVER_NAME": "", "HOST": "127.0.0.2", "GRADIO_SERVER_PORT": "", "PORT": "8081"}, ("127.0.0.2", 8081)),
], ids=["default", "gradio", "host-port", "gradio-first", "blank-gradio"])
def test_the_space_listens_where_gradio_s_variables_then_host_and_port_say(environ: dict[str, str],
                                                                           address: tuple[str, int]) -> None:
    assert space_address(environ) == address


@pytest.mark.parametrize(("environ", "variable"), [({"GRADIO_SERVER_PORT": "http"}, "GRADIO_SERVER_PORT"),
                                                   ({"PORT": "70000"}, "PORT"), ({"PORT": "-1"}, "PORT")])
def test_a_port_that_is_not_one_is_refused_naming_the_variable(environ: dict[str, str], variable: str) -> None:
    with pytest.raises(ValueError, match=f"^{variable} must be a port number from 0 to 65535, got"):
        space_address(environ)
