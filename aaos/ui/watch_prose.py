"""The Replay and Arena tabs' words (as aaos.ui.prose is the rest of the Space's)."""

from __future__ import annotations

REPLAY_INTRO = (
    "Load an episode, then scrub the timeline (or ◀ ▶): at step t every role's card is its view as its agent saw "
    "it, with the action it chose; below are the step's actions and results, the reward components so far and the "
    "oversight log so far. Episodes are re-executed from their joint actions, so a file needs no views. The "
    "champion marker: the champion plays the same seed alongside and the marker is the first step whose joint "
    "action differs from the champion's (until then both episodes are the same).")
SOURCES: dict[str, str] = {
    "play": "The Play tab's episode",
    "benchmark": "This tab's latest benchmark",
    "committed": "The committed training evaluation",
    "upload": "An uploaded JSONL file",
}
"""Where the Replay tab's episodes come from, by source id."""
UPLOAD_HELP = ("A trajectory JSONL (the Play tab's export, aaos collect, aaos bench --trajectories) or a benchmark "
               "results JSONL (aaos bench, the Benchmark tab's download).")
NO_EPISODES: dict[str, str] = {
    "play": "The Play tab's episode has no steps yet: take a step there (or Run an agent), then press Load.",
    "benchmark": "No benchmark has run in this tab yet: run one in the Benchmark tab, then press Load.",
    "committed": "No training results are committed for {env} (results/training/{env}/eval.jsonl): the Training "
                 "tab says how to produce them.",
    "upload": "Upload a JSONL file above.",
}
LOADED = "Loaded {label}."
BAD_FILE = "That file cannot be replayed: {problem}. Nothing was loaded."
EMPTY_FILE = "the file holds no records"
NOT_EPISODES = ("its lines are neither trajectory records (with a joint_action) nor benchmark result records (with a "
                "policy and a score)")
UNKNOWN_ENV = "environment {env!r} is not registered here"
TOO_LONG = "it has {count:,} lines; the Replay tab reads at most {limit:,}"
MODEL_NOT_REPLAYED = ("{policy} is a model and its result record holds no steps: it cannot be replayed without them "
                      "(aaos bench --trajectories records them; aaos train keeps those of the untrained model, "
                      "of each training stage's and of the final one decoding every legal call)")
FAILED_EPISODE = "the episode failed ({error})"
OTHER_VERSIONS = ("it was played under {env} v{version}, reward v{reward}; this checkout has v{current}, reward "
                  "v{current_reward}, which would play and score it differently")
OTHER_SALT = "it is a holdout episode drawn under another holdout salt than this server's"
SCORES_ONLY = "Shown as its recorded scores only: {why}."
REPLAY_SCORE_DIFFERS = "re-played here it scores {now:.3f}, not the recorded {recorded:.3f}"
REPLAYED = ("The result record holds no steps: {policy} played the same seed again here and scored {score:.3f}, "
            "as recorded.")
DIVERGED = ("It stops replaying exactly at step {step} ({first}); the {exact} steps before it are shown. Was it "
            "recorded by another version of the code?")
NO_STEPS = "No steps to show."
DEPARTS = "First departs from the champion at step {step}."
NEVER_DEPARTS = "Plays exactly as the champion at every step."
DEPARTURE_HERE = "Departs from the champion here:"
RESULT_TITLE = "Recorded result"

ARENA_INTRO = (
    "Two to four agents play the same environment, task, scenario and seed side by side, each with its own "
    "environment, in lock step: Step moves every lane one step, Run plays on until the end (Stop halts it). Blind "
    "mode hides the names (and shuffles the lanes) until you record which agent you think played best.")
ARENA_NONE = "none"
ARENA_LOCAL_COMMITTED = ("{problem}. This lane shows the model's committed evaluation episode (results/training) "
                         "instead: that record holds its scores, not its steps.")
ARENA_LOCAL_REPLAYED = ("{problem}. This lane replays the model's committed evaluation episode (results/training), "
                        "step by step: the actions it chose when it was evaluated.")
ARENA_OTHER_VERSIONS = " Not comparable with the live lanes: {why}."
ARENA_LOCAL_MISSING = ("{problem}. No committed evaluation episode of it matches this episode; the committed ones "
                       "are: {episodes}.")
ARENA_STARTS_ON_STEP = ("No step yet: the local model's server starts on the first step (a minute the first "
                        "time), then each step takes seconds.")
ARENA_NEEDS_TWO = "Choose at least two agents for the arena (lanes set to none are left out)."
ARENA_STARTED = "New arena: {names} on {episode}, seed {seed}. Press Step or Run."
ARENA_STEPPED = "Step {step}: {scores}."
ARENA_OVER = "The episode is over for every lane. {then}"
ARENA_PICK_NOW = "Blind mode: pick the agent you think played best, then Record pick to reveal the names."
ARENA_START_AGAIN = "Press Start for a new round."
ARENA_NOT_STARTED = "Press Start to begin an arena round."
ARENA_STOPPED = "Stopped at step {step}. Step, Run again or Start a new round."
ARENA_PICK_FIRST = "Finish the episode before picking (Run plays it to the end)."
ARENA_PICKED_ALREADY = "This round's pick is recorded already: press Start for a new round."
ARENA_PICK_NONE = "Choose a lane to record your pick."
ARENA_PICKED = "Recorded: you picked {letter}, which was {agent}. The names are revealed."
ARENA_NO_PICKS = "No picks recorded in this tab yet."
ARENA_PICKS_EXPORTED = "Exported {count} picks (CSV)."
ARENA_COMMITTED_LANE = "committed episode: scores only"
ARENA_FINAL_HIDDEN = "final score shown at the end"
ARENA_CANNOT_PLAY = "cannot play"
