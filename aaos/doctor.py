"""`aaos doctor`: the startup audit. Is a model token present (never its value), does the configured model
endpoint answer (and how fast), and does each environment's champion play its easy and medium tasks end to end
(an environment without a champion is skipped, saying so)?

    aaos doctor                # every registered environment
    aaos doctor --env inbox    # one

The endpoint is the one LLMConfig.from_env reads (MODEL_NAME, API_BASE_URL, HF_TOKEN); with no MODEL_NAME the check
is skipped. Each check is ok, warn (worth a look, not a failure), skip or fail; the command exits 1 if any failed.
The Space (app.py) runs the same audit once its server is up and writes these lines to its log.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import aaos
from aaos.agents.llm import LLMConfig
from aaos.bench.stats import SUCCESS_THRESHOLD
from aaos.core.extras import require

Status = Literal["ok", "warn", "skip", "fail"]
TOKEN_VARIABLE = "HF_TOKEN"
ENDPOINT_TIMEOUT_S = 10.0
AUDITED_DIFFICULTIES: tuple[str, ...] = ("easy", "medium")
REDACTED = "[redacted]"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: Status
    detail: str

    def line(self) -> str:
        return f"{self.status:<4}  {self.name:<44} {self.detail}"


def token_check(config: LLMConfig | None, token: str) -> Check:
    """Whether a token is set; its value (or any part of it) is never looked at beyond that."""
    if token:
        return Check("token", "ok", f"{TOKEN_VARIABLE} is present")
    if config is None:
        return Check("token", "skip", f"{TOKEN_VARIABLE} is absent (no model is configured, so none is needed)")
    return Check("token", "warn", f"{TOKEN_VARIABLE} is absent; {config.model} at {config.base_url} is called "
                                  f"without one (fine for a local server, refused by hosted ones)")


def _redact(text: str, secret: str) -> str:
    return text.replace(secret, REDACTED) if secret else text


def endpoint_check(config: LLMConfig | None, timeout_s: float = ENDPOINT_TIMEOUT_S) -> Check:
    """One tiny chat completion to the configured model: whether it answers, and its latency."""
    if config is None:
        return Check("model endpoint", "skip", "no model configured (MODEL_NAME is unset): the champion plays")
    url = f"{config.base_url.rstrip('/')}/chat/completions"
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    request = {"model": config.model, "messages": [{"role": "user", "content": "Reply with OK."}],
               "max_tokens": 1, "temperature": 0}
    where = f"{config.model} at {config.base_url}"
    httpx = require("httpx", "llm")
    started = time.perf_counter()
    try:
        response = httpx.post(url, json=request, headers=headers, timeout=timeout_s)
        latency_ms = (time.perf_counter() - started) * 1000
        answered = response.status_code == 200 and "choices" in response.json()
    except httpx.TimeoutException:
        return Check("model endpoint", "fail", _redact(f"{where}: no answer within {timeout_s:g} s", config.api_key))
    except (httpx.HTTPError, ValueError) as error:  # unreachable, or a body that is not JSON
        return Check("model endpoint", "fail",
                     _redact(f"{where}: {type(error).__name__}: {error}"[:300], config.api_key))
    if not answered:
        return Check("model endpoint", "fail", _redact(f"{where}: HTTP {response.status_code} after "
                                                       f"{latency_ms:.0f} ms, not a chat completion", config.api_key))
    return Check("model endpoint", "ok", _redact(f"{where} answered in {latency_ms:.0f} ms", config.api_key))


def champion_checks(env_id: str, seed: int = 0) -> Iterator[Check]:
    """The champion's episode on each easy and medium task of the environment (its first task if it has
    neither), on the default scenario: it must finish with its return equal to its score in [0, 1]; a score
    under the success threshold is a warning. An environment whose kit gives no champion is skipped."""
    if not aaos.envs.has_champion(env_id):
        yield Check(f"champion {env_id}", "skip", "its kit gives no champion (allowed: noop and random still play)")
        return
    spec = aaos.spec(env_id)
    tasks = [t for t in spec.tasks if t.difficulty in AUDITED_DIFFICULTIES] or list(spec.tasks[:1])
    for task in tasks:
        name = f"champion {env_id}/{task.id}"
        started = time.perf_counter()
        try:
            env = aaos.make(task.id, seed=seed, env=env_id)
            policy = aaos.policies.make("heuristic", seed=seed, env=env_id)
            observation = env.reset()
            total, steps = 0.0, 0
            while True:
                result = env.step(policy.act(observation))
                observation, total, steps = result.observation, total + result.reward, steps + 1
                if result.done:
                    break
        except Exception as error:  # any failure of the episode is what this check reports
            yield Check(name, "fail", f"{type(error).__name__}: {error}"[:300])
            continue
        score = result.info["score"]
        took = f"score {score:.3f} in {steps} steps ({time.perf_counter() - started:.1f} s)"
        if not 0.0 <= score <= 1.0 or abs(total - score) > 1e-6:
            yield Check(name, "fail", f"{took}: return {total:.6f} should equal a score in [0, 1]")
        elif score < SUCCESS_THRESHOLD:
            yield Check(name, "warn", f"{took}, under the success threshold {SUCCESS_THRESHOLD}")
        else:
            yield Check(name, "ok", took)


def audit(env_ids: Sequence[str], token: str, config: LLMConfig | None,
          timeout_s: float = ENDPOINT_TIMEOUT_S, seed: int = 0) -> Iterator[Check]:
    """Every check, in order, as each finishes."""
    yield token_check(config, token)
    yield endpoint_check(config, timeout_s)
    for env_id in env_ids:
        yield from champion_checks(env_id, seed)


def run(env_ids: Sequence[str], token: str, config: LLMConfig | None, say: Callable[[str], None],
        timeout_s: float = ENDPOINT_TIMEOUT_S, seed: int = 0) -> int:
    """Say each check's line, then a summary; 1 if any check failed, else 0."""
    counts: dict[Status, int] = {"ok": 0, "warn": 0, "skip": 0, "fail": 0}
    for check in audit(env_ids, token, config, timeout_s, seed):
        counts[check.status] += 1
        say(check.line())
    say(f"{counts['ok']} ok, {counts['warn']} warnings, {counts['skip']} skipped, {counts['fail']} failed")
    return 1 if counts["fail"] else 0
