"""Preference optimisation on the environment's reward: what the model should write over what it did write.

RFT (aaos.training.rft) keeps, at each state, the one answer the rollout reward ranks best, and throws away every
worse answer the model sampled. Once the model imitates the champion well, the champion's answer is best at most
states, so RFT's rows are DAgger's again and teach nothing the reward knows that imitation does not. This stage uses
the answers RFT discards. At every state the model reaches (aaos.training.rft.scored_states: the greedy model
plays, `samples` answers are drawn from it at a temperature, each is scored by the rollout reward), the pair is

    chosen     the best-rewarded of the champion's, the greedy and the sampled answers (the champion's on a tie),
               as RFT's row;
    rejected   the model's own worst-rewarded answer (greedy or sampled),

kept when the reward tells them apart by at least `margin`: a tie (on chief_of_staff the champion makes up for a
wasted step, so a check-in often ties a booking) teaches nothing either way.

The loss (Rafailov et al., 2023, with the chosen answer's likelihood term of Pang et al., 2024) of a pair is

    -log sigmoid(beta * ((log p(chosen) - log p_ref(chosen)) - (log p(rejected) - log p_ref(rejected))))
      + NLL_WEIGHT * the chosen row's weighted mean token loss (aaos.training.weighted)

where log p is the summed log-probability of the answer's tokens and p_ref the model the stage starts from, frozen
(its log-probabilities are computed once, before the first step). The first term moves probability from the
rejected answer to the chosen one; the second keeps the chosen answer likely, which the first alone lets fall
(both answers can lose probability while their margin grows).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import aaos
from aaos.agents.llm import Mode
from aaos.core.trajectory import EpisodeMeta
from aaos.policies import PolicySpec
from aaos.training.dagger import applied
from aaos.training.decisions import answer_text, decision_chars, decisions
from aaos.training.rft import StateLog, scored_states
from aaos.training.sft import valid
from aaos.training.weighted import Encoded, encode, token_losses, weighted_mean

NLL_WEIGHT = 1.0
"""The weight of the chosen answer's own loss beside the preference term (module docstring)."""


def preference_rows(meta: EpisodeMeta, learner: PolicySpec, samplers: Sequence[PolicySpec], mode: Mode,
                    margin: float, logs: list[StateLog]) -> Iterator[dict[str, Any]]:
    """Play one episode with the greedy `learner`; at each state yield the preference pairs (module docstring) whose
    rewards differ by at least `margin`, appending each state's StateLog (its best answer the chosen one) to
    `logs`. A row: the decision's prompt `messages`, the `chosen` and `rejected` answers, the chosen one's
    `decision_chars`, both rewards, and where it comes from. A pair is kept only where the chosen answer would be
    applied and the LLM agent accepts it, as RFT's rows."""
    spec = aaos.spec(meta.env)
    for state in scored_states(meta, learner, samplers):
        chosen = state.best(state.champion)
        rejected = min((state.greedy, *state.samples), key=state.reward)
        logs.append(state.log(meta, chosen))
        if state.reward(chosen) - state.reward(rejected) < margin:
            continue
        taken = applied(state.env, chosen)
        for decision in decisions(state.observation, spec, mode):
            if not set(decision.roles(spec)) <= taken:
                continue
            good = answer_text(decision, chosen, state.observation, spec)
            bad = answer_text(decision, rejected, state.observation, spec)
            if good == bad or not valid(good, decision, state.observation, spec):
                continue
            yield {"messages": decision.messages, "chosen": good, "rejected": bad,
                   "decision_chars": decision_chars(decision, good, state.observation, spec),
                   "chosen_reward": state.reward(chosen), "rejected_reward": state.reward(rejected),
                   "role": decision.role, "env": meta.env, "task": meta.task, "scenario": meta.scenario,
                   "seed": meta.seed, "step": state.step}


@dataclass(frozen=True)
class Pair:
    """One preference pair as the model reads it, with the reference model's log-probabilities of both answers."""

    chosen: Encoded
    """The chosen answer's row, weighted toward its decision tokens (for the likelihood term)."""
    rejected: Encoded
    reference_chosen: float = 0.0
    reference_rejected: float = 0.0


def encode_pair(tokenizer: Any, row: dict[str, Any], decision_weight: float, max_length: int) -> Pair:
    """The pair's two rows as the model reads them (aaos.training.weighted.encode)."""
    chosen = encode(tokenizer, [*row["messages"], {"role": "assistant", "content": row["chosen"]}],
                    row["decision_chars"], decision_weight, max_length)
    rejected = encode(tokenizer, [*row["messages"], {"role": "assistant", "content": row["rejected"]}], [], 1.0,
                      max_length)
    return Pair(chosen, rejected)


def answer_logp(losses: Any, row: Encoded) -> Any:
    """The summed log-probability of the row's answer tokens (those with a weight), from its token losses
    (aaos.training.weighted.token_losses)."""
    import torch

    answer = torch.tensor([w > 0 for w in row.weights[1:]], device=losses.device)
    return -losses[answer].sum()


def with_reference(model: Any, pairs: Sequence[Pair]) -> list[Pair]:
    """The pairs with the reference log-probabilities filled in by `model` as it is now (no gradient)."""
    import torch

    model.eval()
    with torch.no_grad():
        return [Pair(pair.chosen, pair.rejected, float(answer_logp(token_losses(model, pair.chosen), pair.chosen)),
                     float(answer_logp(token_losses(model, pair.rejected), pair.rejected))) for pair in pairs]


def pair_loss(beta: float) -> Any:
    """The loss of one pair (module docstring), for aaos.training.weighted.fit."""
    import torch

    def loss(model: Any, pair: Pair) -> Any:
        chosen = token_losses(model, pair.chosen)
        margin = ((answer_logp(chosen, pair.chosen) - pair.reference_chosen)
                  - (answer_logp(token_losses(model, pair.rejected), pair.rejected) - pair.reference_rejected))
        return -torch.nn.functional.logsigmoid(beta * margin) + NLL_WEIGHT * weighted_mean(chosen, pair.chosen)

    return loss
