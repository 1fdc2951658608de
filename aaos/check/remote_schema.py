"""The JSON Schema a server publishes (GET /schema) as `aaos check --url` uses it: whether a value satisfies it,
the least value it allows (the noop), random values that satisfy it, and hostile values made from valid ones.

It covers what pydantic writes: local `$ref`s, `const`, `enum`, `anyOf`/`oneOf`/`allOf`, `type` (or a list of
types), object `properties`/`required`/`additionalProperties`/`propertyNames`, array `items`/`prefixItems`/
`minItems`/`maxItems`, string `minLength`/`maxLength`/`pattern`, number bounds and `multipleOf`. A string with a
`pattern` is sampled from the strings the environment showed (an observation's ids, say) that match it; a schema
that needs more than that raises Unsampleable, saying where. A random string is mostly one the environment showed
(Vocabulary: a property named like an id draws from the ids an observation lists), so that it names something.
"""

from __future__ import annotations

import contextlib
import copy
import math
import random
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Node = dict[str, Any]
Path = tuple[str | int, ...]

MAX_SAMPLE_DEPTH = 6
"""How deep sampling goes into nested objects and arrays before it settles for the least value."""
INCLUDE_OPTIONAL = 0.5
"""The chance that a random object carries each optional property."""
FROM_OBSERVATION = 0.8
"""The chance that a random string is one the environment showed (when one fits), not random letters."""
UNKNOWN_FIELD = "aaos_check_unknown_field"
NOT_A_MEMBER = "aaos-check-not-a-member"
HUGE_TEXT = 20_000
"""Characters in a huge string: large, yet under the 64 KB frame limits servers commonly set."""
HUGE_ITEMS = 5_000
DEEP_NESTING = 200
HUGE_INTEGER = 10**30
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,), "null": (type(None),),
    "integer": (int,), "number": (int, float),
}
_FORMATS: dict[str, str] = {
    "date-time": "2024-01-01T00:00:00Z", "date": "2024-01-01", "time": "00:00:00", "email": "check@example.com",
    "uri": "https://example.com/aaos-check", "uuid": "00000000-0000-4000-8000-000000000000",
}
"""A valid value of each common string format (a random string rarely is one)."""


class Unsampleable(ValueError):
    """The schema asks for something the sampler cannot make (the message says what, and where)."""


def json_type(value: Any) -> str:
    """The JSON type of a decoded value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    for name in ("object", "array", "string", "null"):
        if isinstance(value, _JSON_TYPES[name]):
            return name
    return type(value).__name__


def _is(value: Any, kind: str) -> bool:
    """Whether a decoded value is of JSON Schema type `kind` (1.0 is an integer; true is no number)."""
    if isinstance(value, bool):
        return kind == "boolean"
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _JSON_TYPES.get(kind, ()))


def _where(path: Path, root: str = "the value") -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path) or root


@dataclass(frozen=True, slots=True)
class Hostile:
    """A value made to break the schema (`invalid`: the schema forbids it, so a server must refuse it) or to
    strain the server while the schema allows it (huge or deep: a server may accept or refuse it)."""

    label: str
    value: Any
    invalid: bool


class Vocabulary:
    """The strings a decoded JSON value (an observation) shows, each with the keys it sits under, so that a random
    string property can name what the environment listed: a property named like an id (`task_id`) draws from the
    ids shown under a key holding its stem (`visible_tasks[0].id`)."""

    def __init__(self, value: Any = None, limit: int = 5_000) -> None:
        self.entries: list[tuple[tuple[str, ...], str]] = []
        stack: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
        while stack and len(self.entries) < limit:
            item, keys = stack.pop()
            if isinstance(item, str):
                self.entries.append((keys, item))
            elif isinstance(item, dict):
                for key, inner in reversed(list(item.items())):
                    self.entries.append((keys, str(key)))
                    stack.append((inner, (*keys, str(key))))
            elif isinstance(item, list):
                stack.extend((inner, keys) for inner in reversed(item))

    def candidates(self, name: str | None) -> list[str]:
        """The strings a property called `name` should draw from: those shown under a key of that name; for a
        name ending in "id", the ids shown under a key holding its stem, else any ids; else every string."""
        tiers = [[s for keys, s in self.entries if keys and keys[-1] == name]]
        if name and name.lower().endswith("id"):
            stem = name[:-2].rstrip("_").lower()
            ids = [(keys, s) for keys, s in self.entries if keys and (keys[-1] == "id" or keys[-1].endswith("_id"))]
            tiers += [[s for keys, s in ids if stem and any(stem in key.lower() for key in keys[:-1])],
                      [s for _, s in ids]]
        tiers.append([s for _, s in self.entries])
        return list(dict.fromkeys(next((tier for tier in tiers if tier), [])))


NOTHING_SEEN = Vocabulary()


class Schema:
    """A published JSON Schema (its `$defs` resolve against `root`)."""

    def __init__(self, root: Node) -> None:
        if not isinstance(root, dict):
            raise ValueError(f"a JSON Schema is an object, not {json_type(root)}")
        self.root = root

    def node(self, node: Any) -> Node:
        """`node` with its local `$ref`s followed (siblings of a `$ref` are kept, the referenced schema wins ties)."""
        seen: set[str] = set()
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#") or ref in seen:
                raise Unsampleable(f"the reference {ref!r} is not local to the schema (or loops)")
            seen.add(ref)
            target: Any = self.root
            for part in filter(None, ref[1:].split("/")):
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(target, dict) or part not in target:
                    raise Unsampleable(f"the reference {ref!r} points at nothing in the schema")
                target = target[part]
            node = {**{k: v for k, v in node.items() if k != "$ref"}, **target}
        if node is True or node is None:
            return {}
        if node is False:
            return {"not": {}}
        if not isinstance(node, dict):
            raise Unsampleable(f"a schema node must be an object, not {json_type(node)}")
        return node

    # --- validation -----------------------------------------------------------------------------------------

    def errors(self, value: Any, node: Any = None, path: Path = ()) -> list[str]:
        """What is wrong with `value` under `node` (the root by default): one line each, naming where; empty
        when it is valid."""
        n = self.node(self.root if node is None else node)
        where = _where(path)
        if "not" in n and not self.errors(value, n["not"], path):
            return [f"{where}: matches a schema it must not"]
        if "const" in n and not _same(value, n["const"]):
            return [f"{where}: must be {n['const']!r}"]
        if "enum" in n and not any(_same(value, member) for member in n["enum"]):
            return [f"{where}: must be one of {n['enum']!r}"]
        kinds = n.get("type")
        if kinds is not None:
            kinds = [kinds] if isinstance(kinds, str) else kinds
            if not any(_is(value, kind) for kind in kinds):
                return [f"{where}: must be {' or '.join(kinds)}, not {json_type(value)}"]
        problems: list[str] = []
        for branch in n.get("allOf", ()):
            problems += self.errors(value, branch, path)
        if "anyOf" in n and all(self.errors(value, branch, path) for branch in n["anyOf"]):
            problems.append(f"{where}: matches none of its {len(n['anyOf'])} alternatives")
        if "oneOf" in n:
            matches = sum(not self.errors(value, branch, path) for branch in n["oneOf"])
            if matches != 1:
                problems.append(f"{where}: matches {matches} of its alternatives, not exactly one")
        if isinstance(value, dict):
            problems += self._object_errors(value, n, path)
        elif isinstance(value, list):
            problems += self._array_errors(value, n, path)
        elif isinstance(value, str):
            problems += _string_errors(value, n, where)
        elif _is(value, "number"):
            problems += _number_errors(value, n, where)
        return problems

    def _object_errors(self, value: dict[str, Any], n: Node, path: Path) -> list[str]:
        problems = [f"{_where(path)}: {name!r} is required" for name in n.get("required", ()) if name not in value]
        properties = n.get("properties", {})
        extra = n.get("additionalProperties", True)
        for name, item in value.items():
            if "propertyNames" in n and self.errors(name, n["propertyNames"]):
                problems.append(f"{_where(path)}: {name!r} is not an allowed property name")
            if name in properties:
                problems += self.errors(item, properties[name], (*path, name))
            elif extra is False:
                problems.append(f"{_where(path)}: {name!r} is not an allowed property")
            elif isinstance(extra, dict):
                problems += self.errors(item, extra, (*path, name))
        return problems

    def _array_errors(self, value: list[Any], n: Node, path: Path) -> list[str]:
        problems = []
        if len(value) < n.get("minItems", 0) or len(value) > n.get("maxItems", math.inf):
            problems.append(f"{_where(path)}: holds {len(value)} items, outside [{n.get('minItems', 0)}, "
                            f"{n.get('maxItems', 'inf')}]")
        prefix = n.get("prefixItems", [])
        for index, item in enumerate(value):
            schema = prefix[index] if index < len(prefix) else n.get("items", {})
            problems += self.errors(item, schema, (*path, index))
        return problems

    # --- the least value -------------------------------------------------------------------------------------

    def least(self, node: Any = None, path: Path = ()) -> Any:
        """The least value the schema allows: a property's default where it has one, else required properties
        only, the first member of an enum, null where allowed, the empty string, zero (or the bound nearest it),
        the fewest items. For an action schema, what a policy that does nothing sends."""
        n = self.node(self.root if node is None else node)
        if "default" in n:
            return copy.deepcopy(n["default"])
        if "const" in n:
            return copy.deepcopy(n["const"])
        if "enum" in n:
            return copy.deepcopy(n["enum"][0])
        for key in ("anyOf", "oneOf"):
            if key in n:
                branches = [self.node(branch) for branch in n[key]]
                nullable = [b for b in branches if b.get("type") == "null"]
                return None if nullable else self.least(branches[0], path)
        if "allOf" in n:
            return self.least(_merged([self.node(branch) for branch in n["allOf"]], n), path)
        kind = self._kind(n, path, prefer_null=True)
        if kind == "object":
            properties = n.get("properties", {})
            return {name: self.least(properties.get(name, {}), (*path, name)) for name in n.get("required", ())}
        if kind == "array":
            prefix = n.get("prefixItems", [])
            return [self.least(prefix[i] if i < len(prefix) else n.get("items", {}), (*path, i))
                    for i in range(n.get("minItems", 0))]
        if kind == "string":
            return self._text(n, path, random.Random(0), NOTHING_SEEN, least=True)
        if kind in ("integer", "number"):
            low, high = _bounds(n, kind)
            zero = min(max(0, low if low is not None else 0), high if high is not None else 0)
            return zero if kind == "integer" else float(zero)
        return False if kind == "boolean" else None

    # --- random values ---------------------------------------------------------------------------------------

    def sample(self, rng: random.Random, seen: Vocabulary = NOTHING_SEEN, node: Any = None, path: Path = ()) -> Any:
        """A random value the schema allows, drawn with `rng`; a string is mostly one the environment showed
        (`seen`: Vocabulary.candidates) when one fits, else random letters. What cannot be made is left out where
        the schema allows (another alternative of a union, an optional property left out); Unsampleable where it
        does not."""
        n = self.node(self.root if node is None else node)
        if len(path) > MAX_SAMPLE_DEPTH:
            return self.least(n, path)
        if "const" in n:
            return copy.deepcopy(n["const"])
        if "enum" in n:
            return copy.deepcopy(rng.choice(n["enum"]))
        for key in ("anyOf", "oneOf"):
            if key in n:
                branches = [self.node(branch) for branch in n[key]]
                valued = [b for b in branches if b.get("type") != "null"] or branches
                return self._any_of(rng.sample(valued, len(valued)), rng, seen, path)
        if "allOf" in n:
            return self.sample(rng, seen, _merged([self.node(branch) for branch in n["allOf"]], n), path)
        kind = self._kind(n, path, prefer_null=False, rng=rng)
        if kind == "object":
            return self._random_object(n, rng, seen, path)
        if kind == "array":
            low = n.get("minItems", 0)
            count = rng.randint(low, max(low, min(n.get("maxItems", low + 3), low + 3)))
            prefix = n.get("prefixItems", [])
            return [self.sample(rng, seen, prefix[i] if i < len(prefix) else n.get("items", {}), (*path, i))
                    for i in range(count)]
        if kind == "string":
            return self._text(n, path, rng, seen, least=False)
        if kind in ("integer", "number"):
            return _random_number(n, kind, rng, path)
        if kind == "boolean":
            return rng.random() < 0.5
        return None

    def _any_of(self, branches: list[Node], rng: random.Random, seen: Vocabulary, path: Path) -> Any:
        """A sample of the first of `branches` that can be sampled."""
        for branch in branches[:-1]:
            try:
                return self.sample(rng, seen, branch, path)
            except Unsampleable:
                continue
        return self.sample(rng, seen, branches[-1], path)

    def _random_object(self, n: Node, rng: random.Random, seen: Vocabulary, path: Path) -> dict[str, Any]:
        properties, required = n.get("properties", {}), set(n.get("required", ()))
        value: dict[str, Any] = {}
        for name, schema in properties.items():
            if name in required:
                value[name] = self.sample(rng, seen, schema, (*path, name))
            elif rng.random() < INCLUDE_OPTIONAL:
                with contextlib.suppress(Unsampleable):
                    value[name] = self.sample(rng, seen, schema, (*path, name))
        extra = n.get("additionalProperties", True)
        names = self.node(n.get("propertyNames", {}))
        if isinstance(extra, dict) and extra and not properties and ("const" in names or "enum" in names):
            for name in ([names["const"]] if "const" in names else names["enum"]):
                if rng.random() < INCLUDE_OPTIONAL:
                    value[name] = self.sample(rng, seen, extra, (*path, name))
        return value

    def _kind(self, n: Node, path: Path, prefer_null: bool, rng: random.Random | None = None) -> str | None:
        kinds = n.get("type")
        if kinds is None:
            return "object" if "properties" in n else "array" if "items" in n else None
        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        if not kinds:
            raise Unsampleable(f"{_where(path)}: the schema allows no type")
        if "null" in kinds and (prefer_null or len(kinds) == 1):
            return "null"
        valued = [kind for kind in kinds if kind != "null"]
        return valued[0] if rng is None else rng.choice(valued)

    def _text(self, n: Node, path: Path, rng: random.Random, seen: Vocabulary, least: bool) -> str:
        low, high = n.get("minLength", 0), n.get("maxLength", math.inf)
        pattern = n.get("pattern")
        name = next((part for part in reversed(path) if isinstance(part, str)), None)
        fitting = [s for s in seen.candidates(name)
                   if low <= len(s) <= high and (pattern is None or re.search(pattern, s))]
        if pattern is not None:
            known = [v for v in (n.get("default"), *n.get("examples", ())) if isinstance(v, str)
                     and re.search(pattern, v)]
            if not (fitting or known):
                raise Unsampleable(f"{_where(path)}: a string matching {pattern!r} (none that the environment showed "
                                   "matches it)")
            return (known or fitting)[0] if least else rng.choice(fitting or known)
        if "format" in n and n["format"] in _FORMATS and low <= len(_FORMATS[n["format"]]) <= high:
            return _FORMATS[n["format"]]
        if least:
            return "a" * low
        if fitting and rng.random() < FROM_OBSERVATION:
            return rng.choice(fitting)
        length = rng.randint(low, max(low, min(high, low + 12)))
        return "".join(rng.choice(string.ascii_lowercase) for _ in range(length))

    # --- hostile values --------------------------------------------------------------------------------------

    def hostile(self, valid: Any, root: str = "the value") -> list[Hostile]:
        """Hostile values made from `valid` (a value the schema allows): at each place in it, a value of a type
        no validator coerces, a required property left out, an unknown property, a non-member of an enum, a
        number or a length just past its bound, and, where the schema sets no bound, a huge string, a huge
        array, a huge integer and deep nesting. Each is labelled by where it is (`root` names the whole value) and
        by whether the schema forbids it."""
        made: list[Hostile] = []
        for path, node in self._places(valid, self.root, ()):
            for label, mutated in self._mutations(valid, path, node):
                made.append(Hostile(f"{_where(path, root)}: {label}", mutated, bool(self.errors(mutated))))
        return made

    def _places(self, value: Any, node: Any, path: Path) -> Iterator[tuple[Path, Node]]:
        """Every place in `value` with the schema node that governs it (the branch it matches, for unions)."""
        n = self._matching(value, self.node(node))
        yield path, n
        if isinstance(value, dict):
            properties, extra = n.get("properties", {}), n.get("additionalProperties", True)
            for name, item in value.items():
                child = properties.get(name, extra if isinstance(extra, dict) else {})
                yield from self._places(item, child, (*path, name))
        elif isinstance(value, list):
            prefix = n.get("prefixItems", [])
            for index, item in enumerate(value):
                yield from self._places(item, prefix[index] if index < len(prefix) else n.get("items", {}),
                                        (*path, index))

    def _matching(self, value: Any, n: Node) -> Node:
        for key in ("anyOf", "oneOf"):
            for branch in n.get(key, ()):
                if not self.errors(value, branch):
                    return self._matching(value, self.node(branch))
        if "allOf" in n:
            return _merged([self.node(branch) for branch in n["allOf"]], n)
        return n

    def _mutations(self, valid: Any, path: Path, n: Node) -> Iterator[tuple[str, Any]]:
        current = _at(valid, path)
        wrong = 7 if isinstance(current, dict) else {"aaos_check": "a value of the wrong type"}
        yield f"{json_type(wrong)} in place of {json_type(current)}", _replaced(valid, path, wrong)
        if path:
            yield "null", _replaced(valid, path, None)
        if "enum" in n or "const" in n:
            yield "not a member of its enum", _replaced(valid, path, NOT_A_MEMBER)
        if isinstance(current, dict):
            for name in n.get("required", ()):
                if name in current:
                    yield f"required {name!r} left out", _replaced(valid, path, {k: v for k, v in current.items()
                                                                                 if k != name})
            yield "an unknown property", _replaced(valid, path, {**current, UNKNOWN_FIELD: 1})
            yield f"{DEEP_NESTING} levels of nesting", _replaced(valid, path, {**current, UNKNOWN_FIELD: _deep()})
        elif isinstance(current, list):
            count = n["maxItems"] + 1 if "maxItems" in n else HUGE_ITEMS
            filler = current[0] if current else self.least(n.get("items", {}))
            yield f"{count} items", _replaced(valid, path, [copy.deepcopy(filler) for _ in range(count)])
        elif isinstance(current, str) and "enum" not in n and "const" not in n:
            length = n["maxLength"] + 1 if "maxLength" in n else HUGE_TEXT
            yield f"a string of {length} characters", _replaced(valid, path, "x" * length)
        elif isinstance(current, int | float) and not isinstance(current, bool):
            low, high = _bounds(n, json_type(current))
            yield "an integer past its maximum" if high is not None else "a huge integer", _replaced(
                valid, path, (math.floor(high) + 1) if high is not None else HUGE_INTEGER)
            if low is not None:
                yield "a number below its minimum", _replaced(valid, path, math.ceil(low) - 1)


def _merged(branches: list[Node], outer: Node) -> Node:
    """allOf's branches as one object schema (properties and required merged); other keys of the first win."""
    merged: Node = {k: v for k, v in outer.items() if k != "allOf"}
    for branch in branches:
        for key, value in branch.items():
            if key == "properties":
                merged["properties"] = {**merged.get("properties", {}), **value}
            elif key == "required":
                merged["required"] = [*merged.get("required", []), *value]
            else:
                merged.setdefault(key, value)
    return merged


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 and 1.0 are the same number, true is not 1."""
    if _is(a, "number") and _is(b, "number"):
        return a == b
    return json_type(a) == json_type(b) and a == b


def _bounds(n: Node, kind: str) -> tuple[float | None, float | None]:
    """The least and greatest number allowed (exclusive bounds moved in by one for integers, by a hair for
    numbers)."""
    step = 1 if kind == "integer" else 1e-9
    lows = [n.get("minimum"), *([n["exclusiveMinimum"] + step] if "exclusiveMinimum" in n else [])]
    highs = [n.get("maximum"), *([n["exclusiveMaximum"] - step] if "exclusiveMaximum" in n else [])]
    low = max((v for v in lows if v is not None), default=None)
    high = min((v for v in highs if v is not None), default=None)
    if kind == "integer":
        low = None if low is None else math.ceil(low)
        high = None if high is None else math.floor(high)
    return low, high


def _random_number(n: Node, kind: str, rng: random.Random, path: Path) -> int | float:
    low, high = _bounds(n, kind)
    if low is not None and high is not None and low > high:
        raise Unsampleable(f"{_where(path)}: no number lies in [{low}, {high}]")
    low = low if low is not None else (min(0, high - 100) if high is not None else 0)
    high = high if high is not None else low + 100
    step = n.get("multipleOf")
    if step is not None:
        first, last = math.ceil(low / step), math.floor(high / step)
        if first > last:
            raise Unsampleable(f"{_where(path)}: no multiple of {step} lies in [{low}, {high}]")
        value = rng.randint(first, last) * step
        return int(value) if kind == "integer" else float(value)
    return rng.randint(int(low), int(high)) if kind == "integer" else rng.uniform(low, high)


def _string_errors(value: str, n: Node, where: str) -> list[str]:
    problems = []
    if not n.get("minLength", 0) <= len(value) <= n.get("maxLength", math.inf):
        problems.append(f"{where}: {len(value)} characters, outside [{n.get('minLength', 0)}, "
                        f"{n.get('maxLength', 'inf')}]")
    if "pattern" in n and not re.search(n["pattern"], value):
        problems.append(f"{where}: does not match {n['pattern']!r}")
    return problems


def _number_errors(value: float, n: Node, where: str) -> list[str]:
    problems = []
    for key, broken in (("minimum", value < n.get("minimum", -math.inf)),
                        ("maximum", value > n.get("maximum", math.inf)),
                        ("exclusiveMinimum", value <= n.get("exclusiveMinimum", -math.inf)),
                        ("exclusiveMaximum", value >= n.get("exclusiveMaximum", math.inf))):
        if broken:
            problems.append(f"{where}: {value!r} breaks its {key} {n[key]!r}")
    step = n.get("multipleOf")
    if step and not math.isclose(value / step, round(value / step), abs_tol=1e-9):
        problems.append(f"{where}: {value!r} is not a multiple of {step!r}")
    return problems


def _at(value: Any, path: Path) -> Any:
    for part in path:
        value = value[part]
    return value


def _replaced(value: Any, path: Path, new: Any) -> Any:
    """A copy of `value` with the item at `path` replaced by `new`."""
    if not path:
        return new
    head, *rest = path
    copied = copy.copy(value)
    copied[head] = _replaced(value[head], tuple(rest), new)
    return copied


def _deep() -> Any:
    nested: Any = 0
    for _ in range(DEEP_NESTING):
        nested = {"a": nested}
    return nested
