"""Statistics over episode records: bootstrap confidence intervals, success and pass^k, summaries."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from math import comb
from typing import Any

from aaos.agents.llm import fallbacks, not_credited
from aaos.core.seeding import rng, split_label

SUCCESS_THRESHOLD = 0.7
"""An episode with score at least this counts as a success."""
BOOTSTRAP_SAMPLES = 2000


def bootstrap_ci(values: Sequence[float], samples: int = BOOTSTRAP_SAMPLES, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (seeded, so the same values give the same interval)."""
    if not values:
        return (float("nan"), float("nan"))
    if len(values) == 1:
        return (values[0], values[0])
    draw = rng("bootstrap", seed, len(values))
    n = len(values)
    means = sorted(sum(values[draw.randrange(n)] for _ in range(n)) / n for _ in range(samples))
    tail = (1 - level) / 2
    low = means[int(tail * (samples - 1))]
    high = means[int((1 - tail) * (samples - 1))]
    return (low, high)


def pass_hat_k(successes: int, trials: int, k: int) -> float | None:
    """pass^k: the chance that k trials drawn without replacement from these all succeed (tau-bench)."""
    if trials < k:
        return None
    return comb(successes, k) / comb(trials, k)


READS_HIDDEN_STATE = "it reads hidden state (the ground truth): a reference, not an agent"
"""Why the row of a policy that reads hidden state (aaos.core.policy.Policy.reads_hidden_state, recorded per
episode) is never ranked: the benchmark plays such an oracle only to show the headroom information is worth."""
VERSION_KEYS = ("env", "env_version", "reward_version")
"""What a summary row is of, besides policy and split: records of different environments or versions are never
pooled (a record older than the version fields has None for them)."""


def record_group(record: Mapping[str, Any]) -> tuple[Any, ...]:
    """The leaderboard group an episode record counts in: (*VERSION_KEYS, split, split_label), the label from the
    record's holdout salt (records older than the split_label field too)."""
    return (*(record.get(name) for name in VERSION_KEYS), record["split"],
            split_label(record["split"], record.get("holdout_salt")))


def row_group(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """The leaderboard group of a summary row, as record_group gives it for the row's records."""
    return (*(row.get(name) for name in VERSION_KEYS), row["split"], row["split_label"])


def summarise(records: Iterable[dict[str, Any]], k: int = 2) -> list[dict[str, Any]]:
    """One row per (env, env_version, reward_version, policy, split, split_label: public and salted holdout
    episodes are never pooled): mean with 95 % CI, success rate, pass^k,
    component means, rates. A row is `unranked`, with the reason, when its policy reads hidden state
    (READS_HIDDEN_STATE) or is a model whose actions were mostly fallbacks (aaos.agents.llm.FALLBACK_LIMIT); every
    other row has None there."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("error") is None:
            *version, split, label = record_group(record)
            groups[(*version, record["policy"], split, label)].append(record)
    rows = []
    for key, group in sorted(groups.items(), key=lambda item: tuple(str(part) for part in item[0])):
        *version, policy, split, label = key
        scores = [r["score"] for r in group]
        low, high = bootstrap_ci(scores)
        by_case: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
        for r in group:
            by_case[(r["env"], r["task"], r["scenario"])].append(r["score"] >= SUCCESS_THRESHOLD)
        pass_k = [pass_hat_k(sum(v), len(v), k) for v in by_case.values()]
        pass_k = [p for p in pass_k if p is not None]
        components = sorted({name for r in group for name in r["components"]})
        actions = sum(r["actions"] for r in group)
        decisions = Counter[str]()
        for r in group:
            decisions.update((r.get("llm") or {}).get("decisions", {}))
        decided = sum(decisions.values())
        rows.append({
            **dict(zip(VERSION_KEYS, version, strict=True)),
            "policy": policy,
            "split": split,
            "split_label": label,
            "episodes": len(group),
            "mean_score": statistics.mean(scores),
            "ci_low": low,
            "ci_high": high,
            "success_rate": sum(s >= SUCCESS_THRESHOLD for s in scores) / len(scores),
            f"pass^{k}": statistics.mean(pass_k) if pass_k else None,
            **{f"mean_{c}": statistics.mean(r["components"][c] or 0.0 for r in group) for c in components},
            "invalid_action_rate": sum(r["invalid_actions"] for r in group) / actions if actions else 0.0,
            "hard_violations_per_episode": statistics.mean(r["hard_violations"] for r in group),
            "fallback_rate": fallbacks(decisions) / decided if decided else 0.0,
            "unranked": (READS_HIDDEN_STATE if any(r.get("reads_hidden_state") for r in group)
                         else not_credited(decisions)),
            "tokens": sum((r.get("llm") or {}).get("prompt_tokens", 0) + (r.get("llm") or {}).get(
                "completion_tokens", 0) for r in group),
            "mean_call_latency_s": _mean_latency(group),
            "mean_episode_s": statistics.mean(r["wall_s"] for r in group),
        })
    return rows


def _mean_latency(group: list[dict[str, Any]]) -> float | None:
    calls = sum(r["llm"]["calls"] for r in group if r.get("llm"))
    return sum(r["llm"]["latency_s"] for r in group if r.get("llm")) / calls if calls else None
