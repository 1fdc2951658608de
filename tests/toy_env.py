"""Parcels: a two-role toy environment that lives only in the tests, to prove the platform is generic.

It is registered like any third-party environment (`aaos.register("toy", "toy_env:KIT")`, or
AAOS_ENVS=toy=toy_env:KIT for subprocesses with tests/ on PYTHONPATH) and must run through every surface
without a line of the platform naming it.

| actions        | role      | payload                 | effect                                                     |
|----------------|-----------|-------------------------|------------------------------------------------------------|
| inspect        | inspector | parcel_id (arrived)     | reveals whether the parcel is faulty                       |
| discard        | inspector | parcel_id (inspected)   | removes a parcel (wasted if it was sound)                  |
| ship           | packer    | parcel_id (arrived)     | ships it; uninspected: violation `unchecked_ship`          |
| label          | packer    | note (free text)        | nothing (free text earns nothing)                          |
| no_op          | both      |                         |                                                            |

Observation: the shared head plus `dock` (arrived parcels: id, inspected, faulty once inspected, status). A
parcel's id is hidden until it arrives (one per step from reset). Episode: exactly max_steps steps.
Reward: potential-based over the composite of delivery (sound parcels shipped / all sound parcels) and
quality (share of shipped parcels that were sound, times the delivered share).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from aaos.core.actions import parse_joint_action, problems, result_record
from aaos.core.env import Environment, Episode, JointAction, Observation, StepResult
from aaos.core.html import card as html_card
from aaos.core.html import chips, esc, items, section
from aaos.core.info import ObservationHead
from aaos.core.kit import EnvKit, Prompting, Rendering
from aaos.core.policy import Action, Policy, action
from aaos.core.reward import RewardLedger, composite
from aaos.core.seeding import rng
from aaos.core.spec import ActionSpec, EnvSpec, RewardComponent, ScenarioInfo, TaskSpec

ROLES = ("inspector", "packer")
PARCELS = {"standard": 8, "rush": 10}
FAULT_RATE = 0.35
WEIGHTS = {"delivery": 0.7, "quality": 0.3}
UNCHECKED_PENALTY = 0.02


class Empty(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ParcelRef(Empty):
    parcel_id: str = Field(min_length=1, max_length=40)


class Note(Empty):
    note: str = Field(min_length=1, max_length=200)


ACTIONS = (
    ActionSpec("no_op", Empty, ROLES, "Do nothing this step."),
    ActionSpec("inspect", ParcelRef, ("inspector",), "Inspect an arrived parcel: reveals whether it is faulty."),
    ActionSpec("discard", ParcelRef, ("inspector",), "Discard an inspected parcel."),
    ActionSpec("ship", ParcelRef, ("packer",), "Ship an arrived parcel (inspect it first)."),
    ActionSpec("label", Note, ("packer",), "Write a note on the dock (changes nothing)."),
)


def toy_spec() -> EnvSpec:
    return EnvSpec(
        id="toy", title="Parcels (toy)", description="An inspector and a packer ship sound parcels.",
        roles=ROLES,
        tasks=(TaskSpec("ship_all", "Ship all", "easy", 12, "Ship every sound parcel.", "after max_steps"),),
        scenarios=(ScenarioInfo("standard", "Standard day", "train"), ScenarioInfo("rush", "Rush day", "holdout")),
        actions=ACTIONS,
        reward_components=(RewardComponent("delivery", 0.7, "sound parcels shipped"),
                           RewardComponent("quality", 0.3, "shipped parcels that were sound")),
        version="1", reward_version="1",
    )


class ToyEnv(Environment):
    describe = staticmethod(toy_spec)
    """Builds the spec (tests/bare_env.py plays the same world under another id)."""

    def _scenario(self, scenario: str) -> int:
        """How many parcels the scenario brings."""
        if scenario not in PARCELS:
            raise ValueError(f"unknown scenario {scenario!r}; choose one of: {', '.join(PARCELS)}")
        return PARCELS[scenario]

    def _build(self, episode: Episode, parcels: int) -> None:
        draw = rng("toy", episode.scenario, episode.seed)
        self.parcels = [{"id": f"parcel_{draw.randrange(16**6):06x}", "faulty": draw.random() < FAULT_RATE,
                         "arrives": i, "inspected": False, "status": "waiting"} for i in range(parcels)]
        self.step_count = 0
        self.max_steps = self.spec.tasks[0].max_steps
        self.penalty = 0.0
        self.results: dict[str, dict[str, Any] | None] = dict.fromkeys(ROLES)
        self.ledger = RewardLedger()
        self.components = self._grade()

    @property
    def done(self) -> bool:
        return self.step_count >= self.max_steps

    def _arrived(self) -> dict[str, dict[str, Any]]:
        return {p["id"]: p for p in self.parcels if p["arrives"] <= self.step_count and p["status"] == "waiting"}

    def legal_actions(self, role: str) -> dict[str, dict[str, Any]]:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; roles are: {', '.join(ROLES)}")
        waiting = list(self._arrived())
        legal: dict[str, dict[str, Any]] = {"no_op": {}}
        if role == "inspector":
            if unseen := [i for i in waiting if not self._arrived()[i]["inspected"]]:
                legal["inspect"] = {"parcel_id": unseen}
            if seen := [i for i in waiting if self._arrived()[i]["inspected"]]:
                legal["discard"] = {"parcel_id": seen}
        else:
            if waiting:
                legal["ship"] = {"parcel_id": waiting}
            legal["label"] = {"note": "text"}
        return legal

    def _grade(self) -> dict[str, float | None]:
        sound = [p for p in self.parcels if not p["faulty"]]
        shipped = [p for p in self.parcels if p["status"] == "shipped"]
        delivery = sum(not p["faulty"] for p in shipped) / len(sound) if sound else 1.0
        quality = delivery * sum(not p["faulty"] for p in shipped) / len(shipped) if shipped else None
        return {"delivery": delivery, "quality": quality}

    def _apply(self, role: str, kind: str, parcel_id: str | None) -> tuple[str, str]:
        parcel = self._arrived().get(parcel_id) if parcel_id is not None else None
        if kind in ("no_op", "label"):
            return "no_effect", "nothing changes"
        if parcel is None:
            return "rejected", f"no waiting parcel {parcel_id!r}; pick one from the dock"
        if kind == "inspect":
            if parcel["inspected"]:
                return "no_effect", "already inspected"
            parcel["inspected"] = True
            return "applied", "faulty" if parcel["faulty"] else "sound"
        if kind == "discard":
            parcel["status"] = "discarded"
            return "applied", "discarded"
        parcel["status"] = "shipped"
        return "applied", "shipped"

    def _step(self, joint_action: JointAction, observe: bool) -> StepResult:
        parsed = parse_joint_action(self.spec, joint_action)
        records: dict[str, dict[str, Any]] = {}
        violations = []
        for role in ROLES:
            if role in parsed.rejected:
                records[role] = parsed.rejected[role].to_dict(self.step_count)
                continue
            chosen = parsed.actions.get(role)
            kind = chosen.action_type if chosen else "no_op"
            payload = dict(chosen.payload.__dict__) if chosen else {}
            unchecked = kind == "ship" and not self._arrived().get(payload.get("parcel_id"), {"inspected": True})[
                "inspected"]
            status, message = self._apply(role, kind, payload.get("parcel_id"))
            if unchecked and status == "applied":
                self.penalty += UNCHECKED_PENALTY
                violations.append({"step": self.step_count, "role": role, "rule": "unchecked_ship",
                                   "severity": "low", "penalty": UNCHECKED_PENALTY, "detail": payload["parcel_id"]})
            records[role] = result_record(self.step_count, role, kind, payload, status, message,
                                          "unknown_id" if status == "rejected" else None)
        self.results = dict(records)
        self.step_count += 1
        self.components = self._grade()
        score = composite(self.components, WEIGHTS, self.penalty)
        delivery = self.ledger.deliver(self.step_count, score, self.done)
        info = {
            "score": score, "step": self.step_count,
            "reward_breakdown": delivery.breakdown(self.components, self.components, self.penalty, self.done),
            "action_results": records, "oversight_events": violations, "scenario_events": [],
            "errors": parsed.errors,
        }
        return StepResult(self.observation() if observe else None, delivery.reward, self.done, info)

    def check(self, joint_action: JointAction) -> list[str]:
        parsed = parse_joint_action(self.spec, joint_action)
        found = problems(parsed)
        found += [f"{role}: no waiting parcel {a.payload.parcel_id!r}" for role, a in parsed.actions.items()
                  if hasattr(a.payload, "parcel_id") and a.payload.parcel_id not in self._arrived()]
        return found

    def _dock(self) -> list[dict[str, Any]]:
        return [{"id": p["id"], "inspected": p["inspected"], "faulty": p["faulty"] if p["inspected"] else None,
                 "status": p["status"]} for p in self.parcels if p["arrives"] <= self.step_count]

    def observation(self) -> Observation:
        dock = self._dock()
        views = {role: {"role": role, "step": self.step_count, "dock": dock, "legal_actions": self.legal_actions(role),
                        "last_action_result": self.results[role]} for role in ROLES}
        public = dict(self.components)
        return {"task": self.task, "scenario_id": self.scenario, "scenario_title": self.scenario.capitalize(),
                "step_count": self.step_count, "max_steps": self.max_steps, "done": self.done,
                "agent_observations": views, "scenario_events": [], "partial_scores": public, "dock": dock}

    def state(self) -> dict[str, Any]:
        return {"task": self.task, "scenario": self.scenario, "seed": self.seed, "step": self.step_count,
                "parcels": [dict(p) for p in self.parcels], "penalty": self.penalty,
                "components": dict(self.components), "score": composite(self.components, WEIGHTS, self.penalty),
                "held_reward": self.ledger.held}


class ToyChampion(Policy):
    """Inspect the oldest uninspected parcel; discard faulty ones; ship sound ones."""

    name = "heuristic"

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        legal = view["legal_actions"]
        waiting = [p for p in view["dock"] if p["status"] == "waiting"]
        if role == "inspector":
            faulty = [p["id"] for p in waiting if p["faulty"]]
            if faulty:
                return action("discard", parcel_id=faulty[0])
            if "inspect" in legal:
                return action("inspect", parcel_id=legal["inspect"]["parcel_id"][0])
            return action("no_op")
        sound = [p["id"] for p in waiting if p["inspected"] and p["faulty"] is False]
        return action("ship", parcel_id=sound[0]) if sound else action("no_op")


def role_card(role: str, view: Any, queued: Any) -> str:
    rows = [f"<code>{esc(p['id'])}</code> {esc(p['status'])}" for p in view["dock"]]
    return html_card(role, view, queued, section("Dock", items(rows, "No parcels yet."), len(rows)))


def world(observation: Any) -> str:
    scores = section("Scores", chips(observation["partial_scores"]))
    return f'<div class="aaos-world" id="aaos-world">{scores}</div>'


class ToyObservation(ObservationHead):
    agent_observations: dict[Literal["inspector", "packer"], dict[str, Any]]
    dock: list[dict[str, Any]]


KIT = EnvKit(
    environment=ToyEnv,
    spec=toy_spec,
    champion=ToyChampion,
    prompting=Prompting(world="Parcels: an {roles} ship sound parcels.",
                        rules="Inspect before shipping; ship only sound parcels.",
                        briefs={"inspector": "Inspect parcels and discard faulty ones.",
                                "packer": "Ship inspected sound parcels."},
                        view_order=("dock",)),
    rendering=Rendering(role_card=role_card, world=world),
    hidden_ids=lambda env: {p["id"] for p in env.parcels if p["arrives"] > env.step_count},  # type: ignore[attr-defined]
    observation_model=ToyObservation,
)
