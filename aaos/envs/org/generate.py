"""A procedural scenario generator: new, valid scenario files drawn from a broad distribution.

`aaos scenarios generate --seed N --out DIR [--count K] [--split train|holdout]` writes K files. Each is drawn
from its own generator, rng("scenario-generator", N, k), so the same seed always gives byte-identical files and
the first K files of a larger --count are the same K files. An evaluator keeps such a set outside the repository
and benchmarks on it with `aaos bench --scenarios DIR`.

What a generated scenario holds (the horizon is full_episode's 50 steps):
- 4-7 tasks with mixed priorities, required roles, efforts, deadlines, arrival steps and resource needs;
- 3-6 hidden risks spread over the horizon, each showing in one metric to one or two of the roles that see that
  metric (aaos.envs.org.spec.VISIBLE_METRICS), catchable for a window (escalates_at - noticeable_from) of its
  remediation effort plus 2 to 5 steps;
- 4 events, one of each kind: an incident (the crisis), an anomaly, a policy change to a limit in AMOUNT_CHOICES
  and a resource shock;
- resource pools, an approval policy, baseline metrics and train-variant jitter bounds.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from aaos.core.seeding import rng
from aaos.core.spec import Split
from aaos.envs.org.scenario import MIN_RISK_WINDOW, Scenario
from aaos.envs.org.spec import AMOUNT_CHOICES, METRIC_NAMES, RESOLVERS, VISIBLE_METRICS, WORKERS

HORIZON = 50
"""Steps of the longest task (full_episode): risks and events are spread over it."""
TASK_COUNT = (4, 7)
RISK_COUNT = (3, 6)
RISK_WINDOW_SLACK = (2, 5)
"""A risk's window is its remediation effort plus this many steps (inclusive bounds)."""
BASE_LIMITS: tuple[int, ...] = (15, 20, 25, 30)
"""Approval limits a generated scenario starts with (its policy change moves to another of AMOUNT_CHOICES)."""

THEMES: tuple[tuple[str, str], ...] = (
    ("fintech", "A payments company"),
    ("health", "A health-records platform"),
    ("retail", "An online retailer"),
    ("saas", "A B2B software vendor"),
    ("media", "A streaming service"),
    ("logistics", "A delivery network"),
    ("gaming", "An online game studio"),
    ("travel", "A booking platform"),
)
TASK_NAMES: dict[str, tuple[str, ...]] = {
    "product_manager": ("roadmap_review", "pricing_update", "stakeholder_briefing", "launch_checklist",
                        "customer_interviews", "release_notes", "partner_onboarding"),
    "engineer": ("api_migration", "frontend_rewrite", "backend_scaling", "test_harness", "payment_integration",
                 "search_index", "mobile_release"),
    "data_analyst": ("churn_model", "dashboard_rebuild", "warehouse_migration", "ab_test_analysis",
                     "forecast_refresh", "feature_store"),
    "risk_compliance": ("audit_evidence", "privacy_review", "vendor_assessment", "access_policy",
                        "retention_policy", "incident_playbook"),
    "operations": ("capacity_plan", "oncall_rotation", "runbook_update", "backup_drill", "cost_review",
                   "network_upgrade"),
}
TASK_NEEDS: dict[str, tuple[str, ...]] = {
    "product_manager": ("budget",),
    "engineer": ("compute",),
    "data_analyst": ("compute",),
    "risk_compliance": (),
    "operations": ("compute", "budget"),
}
"""Resources a task of each required role may need: none for risk_compliance, which cannot request_resource, and
never personnel (requests come in AMOUNT_CHOICES, larger than a personnel pool)."""
RISKS: dict[str, tuple[tuple[str, str], ...]] = {
    "latency": (("cache_stampede", "A cold cache lets every request hit the database at once."),
                ("connection_pool", "The connection pool is sized for last year's traffic."),
                ("slow_queries", "An unindexed query grows with the data."),
                ("gc_pauses", "Garbage-collection pauses lengthen under load.")),
    "error_rate": (("retry_storm", "Clients retry failures without backoff."),
                   ("expired_token", "A service token expires soon and nobody owns its rotation."),
                   ("bad_config_push", "A configuration change is rolled out without a canary."),
                   ("dependency_drift", "A library upgrade changed an API's error semantics.")),
    "uptime": (("single_zone", "Every replica runs in one availability zone."),
               ("cert_expiry", "A TLS certificate expires within weeks."),
               ("disk_pressure", "Log volumes are close to full."),
               ("untested_failover", "Failover has never been exercised.")),
    "data_quality": (("schema_drift", "An upstream producer changed a field's meaning."),
                     ("duplicate_events", "A pipeline replays events after restarts."),
                     ("stale_features", "A feature job silently stopped refreshing."),
                     ("label_leak", "Training labels leak into a serving feature.")),
}
IMPACT: dict[str, tuple[float, float, int]] = {
    "latency": (60.0, 250.0, 0),
    "error_rate": (0.02, 0.08, 3),
    "uptime": (-0.03, -0.005, 3),
    "data_quality": (-0.2, -0.05, 2),
}
"""How far an incident or anomaly moves each metric: (low, high, decimals)."""
CRISES: tuple[str, ...] = ("major_outage", "checkout_failure", "data_breach_scare", "region_failure",
                           "mass_timeouts", "corrupted_reports")
ANOMALIES: tuple[str, ...] = ("odd_spike", "unexplained_dip", "traffic_shift", "metric_drift")
SHOCKS: tuple[str, ...] = ("budget_cut", "capacity_loss", "team_reorg", "cost_overrun")
POLICY_CHANGES: tuple[str, ...] = ("spend_freeze", "new_regulation", "board_directive", "audit_rule")


def _impact(r: random.Random, metrics: list[str]) -> dict[str, float]:
    impact = {}
    for metric in metrics:
        low, high, decimals = IMPACT[metric]
        impact[metric] = round(r.uniform(low, high), decimals) if decimals else float(round(r.uniform(low, high)))
    return impact


def _impact_metrics(r: random.Random, main: str) -> list[str]:
    others = [m for m in METRIC_NAMES if m != main]
    return [main] + (r.sample(others, 1) if r.random() < 0.4 else [])


def _incident(r: random.Random, title: str, severity: str, main_metric: str) -> dict[str, Any]:
    return {
        "title": title,
        "severity": severity,
        "impact": _impact(r, _impact_metrics(r, main_metric)),
        "resolver_roles": sorted(r.sample(RESOLVERS, r.randint(1, 2)), key=RESOLVERS.index),
        "effort": r.randint(1, 3),
    }


def _tasks(r: random.Random) -> list[dict[str, Any]]:
    count = r.randint(*TASK_COUNT)
    roles = list(WORKERS)
    r.shuffle(roles)
    roles = (roles + [r.choice(WORKERS) for _ in range(count)])[:count]  # every role first, then repeats
    used: set[str] = set()
    tasks = []
    for i, role in enumerate(roles):
        name = r.choice([n for n in TASK_NAMES[role] if n not in used])
        used.add(name)
        effort = r.randint(2, 5)
        arrives = 0 if i < 2 else r.choice((0, r.randint(1, 8)))
        task: dict[str, Any] = {
            "id": f"task_{name}",
            "name": name,
            "priority": "critical" if i == 0 else r.choice(("low", "medium", "medium", "high", "high", "critical")),
            "required_role": role,
            "effort": effort,
            "deadline": arrives + effort + r.randint(3, 10),
            "arrives": arrives,
        }
        if TASK_NEEDS[role] and r.random() < 0.4:
            resource = r.choice(TASK_NEEDS[role])
            task["needs"] = {resource: r.choice((10, 15, 20, 25) if resource == "compute" else (5, 10, 15))}
        tasks.append(task)
    return tasks


def _risks(r: random.Random) -> list[dict[str, Any]]:
    count = r.randint(*RISK_COUNT)
    span = (HORIZON - 8) / count  # one risk per stretch of the horizon, so they come early, mid and late
    used: set[str] = set()
    risks = []
    for i in range(count):
        metric = r.choice(METRIC_NAMES)
        key, description = r.choice([x for x in RISKS[metric] if x[0] not in used] or RISKS[metric])
        key = key if key not in used else f"{key}_{i}"
        used.add(key)
        seers = [role for role in WORKERS if metric in VISIBLE_METRICS[role]]
        visible_to = sorted(r.sample(seers, min(len(seers), r.randint(1, 2))), key=WORKERS.index)
        effort = r.randint(1, 3)
        window = max(MIN_RISK_WINDOW, effort + r.randint(*RISK_WINDOW_SLACK))
        noticeable = min(HORIZON - window - 1, max(1, int(i * span) + r.randint(0, max(0, int(span) - 1))))
        severity = r.choice(("medium", "high", "high", "critical"))
        remediation: dict[str, Any] = {"name": f"fix_{key}", "required_role": r.choice(WORKERS), "effort": effort}
        if TASK_NEEDS[remediation["required_role"]] and r.random() < 0.25:
            remediation["needs"] = {r.choice(TASK_NEEDS[remediation["required_role"]]): r.choice((5, 10, 15))}
        risks.append({
            "id": f"risk_{key}",
            "name": key,
            "description": description,
            "severity": severity,
            "metric": metric,
            "visible_to": visible_to,
            "noticeable_from": noticeable,
            "escalates_at": noticeable + window,
            "remediation": remediation,
            "incident": _incident(r, f"{key.replace('_', ' ').capitalize()} hits production", severity, metric),
        })
    return risks


def _events(r: random.Random, base_limit: int, resources: dict[str, int]) -> tuple[list[dict[str, Any]], str]:
    """One event of each kind at distinct steps (the incident, the crisis, early enough for crisis_management)."""
    crisis_step = r.randint(4, 14)
    steps = r.sample([s for s in range(1, 25) if s != crisis_step], 3)
    crisis = r.choice(CRISES)
    crisis_metric = r.choice(METRIC_NAMES)
    anomaly_metric = r.choice(METRIC_NAMES)
    shocked = r.sample(("compute", "budget", "personnel"), r.randint(1, 2))
    deltas = {k: -max(1, round(resources[k] * r.uniform(0.15, 0.4))) for k in ("compute", "budget", "personnel")
              if k in shocked}
    limit = r.choice([a for a in AMOUNT_CHOICES if a != base_limit and a <= 30])
    events = [
        {"id": f"evt_{crisis}", "step": crisis_step, "kind": "incident",
         "title": crisis.replace("_", " ").capitalize(), "severity": r.choice(("high", "critical")),
         "respond_within": r.randint(3, 5),
         "incident": _incident(r, crisis.replace("_", " ").capitalize(), r.choice(("high", "critical")),
                               crisis_metric) | {"effort": r.randint(2, 4)}},
        {"id": f"evt_{r.choice(ANOMALIES)}", "step": steps[0], "kind": "anomaly",
         "title": f"{anomaly_metric.replace('_', ' ').capitalize()} moves without a known cause",
         "severity": r.choice(("low", "medium", "high")), "respond_within": 3,
         "impact": _impact(r, [anomaly_metric]), "metric": anomaly_metric},
        {"id": f"evt_{r.choice(POLICY_CHANGES)}", "step": steps[1], "kind": "policy_change",
         "title": f"The approval limit moves to {limit}", "severity": r.choice(("medium", "high")),
         "respond_within": 3, "policy": {"max_resource_approval": limit}},
        {"id": f"evt_{r.choice(SHOCKS)}", "step": steps[2], "kind": "resource_shock",
         "title": "Resources cut: " + ", ".join(sorted(deltas)), "severity": r.choice(("medium", "high")),
         "respond_within": 3, "resource_deltas": deltas},
    ]
    events.sort(key=lambda e: (e["step"], e["id"]))
    return events, f"evt_{crisis}"


def generate_scenario(seed: int, index: int = 0, split: Split = "train") -> dict[str, Any]:
    """The index-th scenario of a seed, as the JSON data of a scenario file (validated against the schema)."""
    if seed < 0 or index < 0:
        raise ValueError(f"seed and index must be non-negative, got seed={seed}, index={index}")
    if split not in ("train", "holdout"):
        raise ValueError(f"split must be 'train' or 'holdout', got {split!r}")
    r = rng("scenario-generator", seed, index)
    theme, who = r.choice(THEMES)
    resources = {"compute": 5 * r.randint(10, 20), "budget": 5 * r.randint(7, 14), "personnel": r.randint(3, 6)}
    base_limit = r.choice(BASE_LIMITS)
    tasks = _tasks(r)
    risks = _risks(r)
    events, crisis = _events(r, base_limit, resources)
    crisis_title = next(e["title"] for e in events if e["id"] == crisis)
    data = {
        "id": f"gen_{seed}_{index:03d}_{theme}",
        "title": f"{who} faces a {crisis_title.lower()}",
        "description": f"Generated by `aaos scenarios generate --seed {seed}` (scenario {index}): {len(tasks)} tasks, "
                       f"{len(risks)} hidden risks, one event of each kind.",
        "split": split,
        "crisis_event": crisis,
        "baseline_metrics": {
            "latency": float(5 * r.randint(30, 50)),
            "error_rate": round(r.uniform(0.01, 0.03), 3),
            "uptime": round(r.uniform(0.995, 0.999), 4),
            "data_quality": round(r.uniform(0.95, 0.99), 3),
        },
        "resources": resources,
        "policy": {"max_resource_approval": base_limit},
        "tasks": tasks,
        "risks": risks,
        "events": events,
        "variation": {"deadline_jitter": r.randint(1, 3), "amount_jitter": r.choice((0.1, 0.15, 0.2)),
                      "timing_jitter": r.randint(0, 2)},
        "flags": {f"{theme}_generated": True},
    }
    Scenario.model_validate(data)  # a generator bug fails here, not in an evaluator's run
    return data


def scenario_text(data: dict[str, Any]) -> str:
    """The file text of a scenario: stable key order and formatting, so equal data gives equal bytes."""
    return json.dumps(data, indent=2, ensure_ascii=True) + "\n"


def write_scenarios(seed: int, out: str | Path, count: int = 1, split: Split = "train") -> list[Path]:
    """Write `count` generated scenarios into `out` (created if needed), each as <id>.json; returns the paths."""
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(count):
        data = generate_scenario(seed, index, split)
        path = out / f"{data['id']}.json"
        path.write_text(scenario_text(data), encoding="utf-8")
        paths.append(path)
    return paths
