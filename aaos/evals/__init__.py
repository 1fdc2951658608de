"""AAOS for evaluators' own harnesses: the benchmark as Inspect AI tasks (aaos.evals.inspect_tasks; the `inspect`
extra, which a missing Inspect names). Nothing else in aaos imports this package."""

from aaos.core.extras import require

require("inspect_ai", "inspect")
