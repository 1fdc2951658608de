"""The committed training results as Markdown tables, read from their summaries, for README.md and docs/training.md.

A document holds a table between two markers, `<!-- training:NAME -->` and `<!-- /training:NAME -->`, where NAME is
`overview` (one row per environment) or an environment id (that run's holdout rows, ranked in groups from the
paired comparisons of their evaluation episodes, as `aaos bench` ranks them). `python -m aaos.training.tables`
rewrites every such block from results/training/<env>/summary.json and eval.jsonl; tests/test_training_tables.py
fails while a block says anything else, so the documents cannot drift from the evidence.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aaos.bench import paired
from aaos.bench.paired import Standing, plural
from aaos.bench.runner import read_records
from aaos.data import data_dir
from aaos.training.plots import LEGAL, STAGE_NAMES, label

RESULTS = data_dir("results") / "training"
DOCUMENTS = ("README.md", "docs/training.md")
"""The documents (relative to the repository) whose blocks `main` rewrites."""
BLOCK = re.compile(r"(<!-- training:(?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- /training:(?P=name) -->)", re.S)

Summary = Mapping[str, Any]


def summaries(root: Path = RESULTS) -> dict[str, Summary]:
    """Every committed run's summary, by environment id (sorted)."""
    return {path.parent.name: json.loads(path.read_text(encoding="utf-8"))
            for path in sorted(root.glob("*/summary.json"))}


def standings(found: Mapping[str, Summary], root: Path = RESULTS) -> dict[str, Standing]:
    """Each committed run's rank groups, from the holdout episodes of its evaluation (<env>/eval.jsonl) of the
    policies its summary lists (aaos.bench.paired.standing_of: refused when they were not played on the same
    episodes)."""
    ranked = {}
    for env, summary in found.items():
        policies = list(_rows(summary))
        records = [r for r in read_records(root / env / "eval.jsonl")
                   if r.get("split") == "holdout" and r.get("policy") in policies]
        ranked[env] = paired.standing_of(records, policies)
    return ranked


def _rows(summary: Summary) -> dict[str, Mapping[str, Any]]:
    return {row["policy"]: row for row in summary["holdout"]}


def _score(row: Mapping[str, Any] | None, ci: bool = True) -> str:
    if row is None:
        return "—"
    mean = f"{row['mean_score']:.3f}"
    return f"{mean} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]" if ci else mean


def _share(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


def _minutes(summary: Summary) -> str:
    """The run's time: its stages' seconds, less the evaluation of policies an earlier run played (which it says)."""
    minutes = f"{sum(s for s in summary['stage_seconds'].values() if s is not None) / 60:.0f} min"
    kept = summary.get("evaluation_kept", [])
    return minutes + (f" and {len(kept)} policies' evaluation an earlier run played" if kept else "")


def _stages(summary: Summary) -> str:
    """The stages that made the run's final model ("SFT+DAgger+RFT")."""
    return "+".join(STAGE_NAMES[stage] for stage in summary["trained"])


def _final(summary: Summary) -> str:
    """How the run's final model is marked: shipped where its adapter is published (it beats the untrained model,
    CIs apart), else said not to be."""
    return "shipped" if summary["beats_untrained"] else "not published: not clear of the untrained model"


IMITATION = ("sft", "dagger")
"""The stages that only copy the champion; the model after the last of them that a run trained is what a
reward-driven stage after it is compared with."""


def _imitation(summary: Summary) -> str:
    """The score of the run's model after imitation alone, where a reward-driven stage came after it ("—" where
    not), with the imitation's stages where they are not SFT+DAgger."""
    copied = tuple(stage for stage in summary["trained"] if stage in IMITATION)
    if summary["final"] in IMITATION:
        return "—"
    named = "" if copied == IMITATION else f" ({'+'.join(STAGE_NAMES[stage] for stage in copied)})"
    return _score(_rows(summary)[copied[-1]]) + named


def overview(found: Mapping[str, Summary]) -> str:
    """One row per environment: the baselines, the model untrained, after imitation (SFT+DAgger) where a
    reward-driven stage came after it, and as trained; the verdict and the time."""
    lines = ["| environment, task | episodes a policy | noop | random | champion | untrained | imitation only "
             "(SFT+DAgger) | trained model (95 % CI) | beats random | hard violations / episode (trained) | "
             "one command on 2 cores (preset) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for env, summary in found.items():
        rows = _rows(summary)
        final = rows[summary["final"]]
        name = f"{label(summary['final'], summary['final'])}, {_stages(summary)}" + (
            "" if summary["beats_untrained"] else f", {_final(summary)}")
        lines.append(
            f"| {env}, {summary['task']} | {final['episodes']} | {_score(rows['noop'], False)} | "
            f"{_score(rows['random'])} | {_score(rows['heuristic'], False)} | {_score(rows['untrained'], False)} | "
            f"{_imitation(summary)} | **{_score(final)}** ({name}) | {'yes' if summary['beats_random'] else 'no'} | "
            f"{final['hard_violations_per_episode']:.2f} | {_minutes(summary)} ({summary['preset']}) |")
    return "\n".join(lines) + "\n"


def detail(summary: Summary, standing: Standing) -> str:
    """One run's holdout rows: every policy's rank group (from `standing`), score with its CI, valid actions, hard
    violations, time an episode and its mean of every reward component; under them, how the ranks were made and
    what the episodes can tell apart (or why the policies were not ranked)."""
    components = summary["components"]
    lines = ["| rank | policy | holdout score (95 % CI) | valid actions | hard violations / episode | s / episode | "
             + " | ".join(components) + " |", "|---" * (6 + len(components)) + "|"]
    for row in summary["holdout"]:
        name = label(row["policy"], summary["final"])
        final = row["policy"] == summary["final"]
        seconds = "—" if row["valid_action_rate"] is None else f"{row['mean_episode_s']:.0f}"
        means = " | ".join("—" if row.get(f"mean_{c}") is None else f"{row[f'mean_{c}']:.3f}" for c in components)
        lines.append(f"| {standing.ranks.get(row['policy'], '—')} | "
                     f"{f'**{name}** ({_final(summary)})' if final else name} | {_score(row)} | "
                     f"{_share(row['valid_action_rate'])} | {row['hard_violations_per_episode']:.2f} | {seconds} | "
                     f"{means} |")
    lines.append(f"\n{_ranks(standing)}")
    legal = summary["final"] + LEGAL
    if legal in _rows(summary):
        lines.append(f"\n`{label(legal, summary['final'])}`: the run's final model once more, decoding every legal "
                     "call instead of only those the environment's guardrail admits.")
    return "\n".join(lines) + "\n"


def _ranks(standing: Standing) -> str:
    """How a run's ranks were made, and what its episodes can tell apart; or why it has none."""
    if standing.refused:
        return f"Rank: none, {standing.refused}."
    said = [f"Rank: policies not significantly different from their group's best share its rank (paired sign-flip "
            f"tests on the same {plural(standing.episodes, 'holdout episode')}, Holm-corrected over the "
            f"{plural(len(standing.comparisons), 'pair')}, alpha {paired.ALPHA}; `aaos bench` ranks the same way)."]
    if (why := standing.too_few()) is not None:
        said.append(f"{why[0].upper()}{why[1:]}.")
    said += [f"Noise floor, {floor.task}: {floor.sentence()}." for floor in standing.noise_floors]
    return " ".join(said)


def blocks(found: Mapping[str, Summary], ranked: Mapping[str, Standing]) -> dict[str, str]:
    """Every block a document may hold, by name; `ranked` holds each run's standing (standings)."""
    return {"overview": overview(found), **{env: detail(summary, ranked[env]) for env, summary in found.items()}}


def render(text: str, found: Mapping[str, Summary], ranked: Mapping[str, Standing]) -> str:
    """`text` with every training block rewritten from the summaries and their standings; KeyError naming a block no
    summary gives."""
    made = blocks(found, ranked)

    def body(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in made:
            raise KeyError(f"no committed run gives the training block {name!r}")
        return f"{match[1]}{made[name]}{match[4]}"

    return BLOCK.sub(body, text)


def main(argv: Sequence[str] | None = None, root: Path = Path(".")) -> int:
    """Rewrite the training blocks of the documents (or of the paths given); prints each file it changed."""
    parser = argparse.ArgumentParser(prog="python -m aaos.training.tables", description=main.__doc__)
    parser.add_argument("paths", nargs="*", help=f"documents to rewrite (default: {', '.join(DOCUMENTS)})")
    paths = parser.parse_args(argv).paths
    found = summaries()
    ranked = standings(found)
    for name in paths or DOCUMENTS:
        path = root / name
        text = path.read_text(encoding="utf-8")
        new = render(text, found, ranked)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
