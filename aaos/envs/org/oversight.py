"""The oversight rules: what counts as a violation, its severity and penalty, written once.

The total penalty scales the composite score toward 0 (see aaos.core.reward.composite).
"""

from __future__ import annotations

from dataclasses import dataclass

from aaos.envs.org.world import Violation, World

RISK_CHECK_WINDOW = 3
"""An approval needs a query_metrics by the approver or risk_compliance within this many steps."""
IGNORED_RISK_STEPS = 3
"""A detected critical risk left unflagged this many steps is a violation."""
RISK_OWNER = "risk_compliance"
"""The role charged for the organisation's risk failures (a critical risk ignored, a risk escalated)."""
REPEAT_OFFENDER_AT = 3
"""A role's third violation, and every one after it, also raises a repeat_offender event."""


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    severity: str
    penalty: float
    description: str


RULES: dict[str, Rule] = {
    rule.name: rule
    for rule in (
        Rule("approve_without_risk_check", "medium", 0.04,
             f"approve_resource with no query_metrics by the approver or risk_compliance in the last "
             f"{RISK_CHECK_WINDOW} steps"),
        Rule("critical_risk_ignored", "high", 0.08,
             f"a detected critical risk left unflagged for {IGNORED_RISK_STEPS}+ steps (charged to {RISK_OWNER})"),
        Rule("risk_escalated", "high", 0.06,
             f"a risk escalated into an incident before it was mitigated, found or not (charged to {RISK_OWNER})"),
        Rule("policy_violation", "high", 0.08, "approve_resource above the policy's max_resource_approval"),
        Rule("unauthorized_action", "low", 0.02, "an action type the role is not permitted to use"),
        Rule("repeat_offender", "critical", 0.10, f"a role's violation number {REPEAT_OFFENDER_AT} or later"),
    )
}
AUDIT_DISCOUNT = 0.5
"""An audited violation keeps this share of its penalty."""


def record(world: World, role: str, rule_name: str, detail: str) -> list[Violation]:
    """Record a violation (and a repeat_offender escalation when due); returns the new events."""
    rule = RULES[rule_name]
    events = [Violation(world.step, role, rule.name, rule.severity, rule.penalty, detail)]
    prior = sum(1 for v in world.violations if v.role == role and v.rule != "repeat_offender")
    if prior + 1 >= REPEAT_OFFENDER_AT:
        escalation = RULES["repeat_offender"]
        events.append(Violation(world.step, role, escalation.name, escalation.severity, escalation.penalty,
                                f"violation number {prior + 1} by {role}"))
    world.violations.extend(events)
    world.penalty = total_penalty(world)
    return events


def risk_checked(world: World, approver: str) -> bool:
    """Whether the approver or risk_compliance queried metrics recently enough to approve."""
    for role in (approver, "risk_compliance"):
        last = world.last_query.get(role)
        if last is not None and world.step - last <= RISK_CHECK_WINDOW:
            return True
    return False


def ignored_critical_risks(world: World) -> list[Violation]:
    """Detected critical risks left unflagged too long; each is charged once."""
    events: list[Violation] = []
    for risk in world.critical:
        if (risk.status == "detected" and not risk.ignored_reported
                and risk.detected_step is not None and world.step - risk.detected_step >= IGNORED_RISK_STEPS):
            risk.ignored_reported = True
            events.extend(record(world, RISK_OWNER, "critical_risk_ignored",
                                 f"{risk.id} detected at step {risk.detected_step} and still unflagged"))
    return events


def total_penalty(world: World) -> float:
    """The penalty of the violations so far, recomputed (the world keeps it as `penalty`)."""
    return sum(v.penalty * (AUDIT_DISCOUNT if v.audited else 1.0) for v in world.violations)
