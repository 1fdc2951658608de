"""Scenario files, for every environment: reading one into its schema with errors that name the file and
field, the built-in ones of an environment (scenarios/<env id>/*.json), and a scenario by id or path.

A file may not take the id of a built-in scenario it differs from (results and observations would not tell them
apart); one read as the wrong environment's is a SchemaMismatch, which the registry (aaos.envs.scenario_envs)
answers with the environment it belongs to. docs/scenarios.md is the authoring guide."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from aaos.core.spec import ScenarioInfo
from aaos.data import data_dir

MAX_LISTED = 5
"""At most this many schema problems are named in one error."""


class ScenarioError(ValueError):
    """A scenario file is missing, unreadable or does not match the schema; `problems` counts what is wrong with it
    (the message names at most MAX_LISTED)."""

    def __init__(self, message: str, problems: int = 1) -> None:
        super().__init__(message)
        self.problems = problems


class SchemaMismatch(ScenarioError):
    """A scenario file that is JSON but does not match the schema."""


Model = TypeVar("Model", bound=BaseModel)


def read_model(path: str | Path, model: type[Model]) -> Model:
    """A JSON file validated as `model`; ScenarioError names the file and each field that is wrong (SchemaMismatch
    when the JSON does not match the schema)."""
    return _validated(Path(path), _read_json(Path(path)), model)


def _read_json(path: Path) -> Any:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise ScenarioError(f"{path}: no such scenario file") from error
    except UnicodeDecodeError as error:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {error.start}); save the file as UTF-8") from error
    except OSError as error:
        raise ScenarioError(f"{path}: cannot be read ({error.strerror or error})") from error
    except json.JSONDecodeError as error:
        raise ScenarioError(f"{path}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})") \
            from error
    return data


def _validated(path: Path, data: Any, model: type[Model]) -> Model:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        lines = [f"{path}: {'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
                 for e in error.errors()[:MAX_LISTED]]
        if error.error_count() > MAX_LISTED:
            lines.append(f"{path}: and {error.error_count() - MAX_LISTED} more")
        raise SchemaMismatch("\n".join(lines), error.error_count()) from error



class ScenarioShelf(Generic[Model]):
    """One environment's scenarios: its schema and its built-in files in scenarios/<env id>/ (each named
    <id>.json), train ones listed first."""

    def __init__(self, env_id: str, model: type[Model]) -> None:
        self.env_id = env_id
        self.folder = data_dir("scenarios") / env_id
        self.model = model

    def load(self, path: str | Path) -> Model:
        """A scenario file, validated (ScenarioError naming the file and field; SchemaMismatch when it does not
        match the schema: aaos.envs.scenario_envs finds whose it is). One that takes a built-in scenario's id and
        differs from it is refused."""
        scenario: Any = read_model(path, self.model)
        twin = self.builtin.get(scenario.id)
        if twin is not None and twin != scenario:
            raise ScenarioError(f"{path}: id: {scenario.id!r} is the id of a built-in {self.env_id} scenario, which "
                                "this file differs from; give the scenario an id of its own (observations and results "
                                "name a scenario by its id)")
        return scenario

    @cached_property
    def builtin(self) -> dict[str, Model]:
        """The built-in scenarios by id: train ones first, then holdout, each by id."""
        found: list[Any] = []  # scenario models all have an id and a split
        for path in sorted(self.folder.glob("*.json")):
            scenario: Any = read_model(path, self.model)
            if scenario.id != path.stem:
                raise ScenarioError(f"{path}: id: must equal the file name {path.stem!r}, got {scenario.id!r}")
            found.append(scenario)
        found.sort(key=lambda s: (s.split != "train", s.id))
        return {s.id: s for s in found}

    def info(self, path: str) -> ScenarioInfo:
        """A scenario file's id, title and split (the kit's scenario_file)."""
        scenario: Any = self.load(path)
        return scenario.info()

    def resolve(self, name: str) -> Model:
        """A built-in scenario by id, or a scenario file by path (anything ending in .json)."""
        if name.endswith(".json"):
            return self.load(name)
        if name not in self.builtin:
            raise ValueError(f"unknown scenario {name!r}; choose one of: {', '.join(self.builtin)} or give a "
                             ".json path")
        return self.builtin[name]
