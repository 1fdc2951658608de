"""The preference stage: its pairs (baseline policies as learner and samplers, no model needed) and its loss (a
tiny randomly initialised llama, where torch is installed)."""

from __future__ import annotations

import math
from typing import Any

import pytest

import aaos
from aaos.core.trajectory import EpisodeMeta
from aaos.policies import baseline
from aaos.training.decisions import parse_answer
from aaos.training.dpo import NLL_WEIGHT, Pair, answer_logp, pair_loss, preference_rows, with_reference
from aaos.training.rft import StateLog, rft_rows
from aaos.training.weighted import Encoded, fit, row_loss, token_losses

META = EpisodeMeta("chief_of_staff", "steady_week", "product_launch", 3)


def test_a_pair_holds_the_best_answer_over_the_learners_worst_where_the_reward_tells_them_apart() -> None:
    logs: list[StateLog] = []
    rows = list(preference_rows(META, baseline("random"), [baseline("random")], "compact", 0.01, logs))
    assert rows and [log.step for log in logs] == list(range(len(logs)))  # every state logged, pairs or not
    by_step = {log.step: log for log in logs}
    spec = aaos.spec(META.env)
    for row in rows:
        log = by_step[row["step"]]
        assert row["chosen_reward"] == log.best >= log.champion  # the chosen answer is RFT's row
        assert row["chosen_reward"] - row["rejected_reward"] >= 0.01
        assert row["rejected_reward"] <= min(log.greedy, log.sampled) + 1e-12  # the learner's worst
        assert row["chosen"] != row["rejected"] and row["decision_chars"]
        assert row["messages"][-1]["role"] == "user"  # the prompt alone; the answers are beside it
    assert len(rows) < len(logs)  # the random learner ties the champion somewhere: no pair there
    env = aaos.make(META.task, scenario=META.scenario, seed=META.seed, env=META.env)
    first = rows[0]
    observation = env.reset()
    if first["step"] == 0:
        for answer in (first["chosen"], first["rejected"]):  # both are answers the LLM agent reads
            assert set(parse_answer(spec, None, answer, observation, "compact")) == set(spec.roles)


def test_the_chosen_answers_are_rfts_rows_and_no_pair_comes_of_answers_that_tie() -> None:
    logs: list[StateLog] = []
    rows = list(preference_rows(META, baseline("random"), [baseline("random")], "compact", 0.0, logs))
    rft_logs: list[StateLog] = []
    rft = {row["step"]: row["messages"][-1]["content"]
           for row in rft_rows(META, baseline("random"), [baseline("random")], "compact", rft_logs)}
    assert rows and all(row["chosen"] == rft[row["step"]] for row in rows)
    champion: list[StateLog] = []
    assert list(preference_rows(META, baseline("heuristic"), [baseline("heuristic")], "compact", 0.0,
                                champion)) == []  # the champion's twin writes the chosen answer: nothing to prefer
    assert champion and all(log.best == log.champion for log in champion)


def _tiny_model() -> Any:
    torch = pytest.importorskip("torch", reason="torch is in the optional [train] extra")
    transformers = pytest.importorskip("transformers", reason="transformers is in the optional [train] extra")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(config)


PROMPT = [5, 6, 7, 8]


def _pair() -> Pair:
    return Pair(Encoded([*PROMPT, 11, 12], [0.0] * len(PROMPT) + [1.0, 8.0]),
                Encoded([*PROMPT, 11, 13], [0.0] * len(PROMPT) + [1.0, 1.0]))


def _preference(model: Any, pair: Pair) -> float:
    import torch

    with torch.no_grad():
        return float(answer_logp(token_losses(model, pair.chosen), pair.chosen)
                     - answer_logp(token_losses(model, pair.rejected), pair.rejected))


def test_at_the_reference_the_preference_term_is_log_2_beside_the_chosen_answers_loss() -> None:
    model = _tiny_model()
    pair = with_reference(model, [_pair()])[0]
    assert pair.reference_chosen < 0 and pair.reference_rejected < 0
    import torch

    with torch.no_grad():
        loss = float(pair_loss(0.1)(model, pair))
        chosen = float(row_loss(model, pair.chosen))
    assert loss == pytest.approx(math.log(2) + NLL_WEIGHT * chosen, rel=1e-5)


def test_training_on_a_pair_moves_probability_from_the_rejected_answer_to_the_chosen_one() -> None:
    model = _tiny_model()
    pair = with_reference(model, [_pair()])[0]
    before = _preference(model, pair)
    log = fit(model, [pair], steps=20, grad_accumulation=1, learning_rate=1e-2, seed=0, loss_of=pair_loss(0.5))
    assert len(log) == 20 and log[-1]["loss"] < log[0]["loss"]
    assert _preference(model, pair) > before + 1.0
