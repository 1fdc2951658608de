"""A FAKE of the few Hugging Face Hub HTTP routes an upload uses, on loopback, for offline tests.

Not a Hub and not a mirror of one: it answers only what `huggingface_hub` (2.x) calls to create a
dataset repo and commit small files to it, keeps what was committed in memory, and records every
request (with its Authorization header) so tests can check what reached "the Hub":

- POST /api/repos/create                          create_repo (409 with the url if it exists, as the Hub)
- POST /api/validate-yaml                         create_commit checks a root README.md's YAML header
- POST /api/{type}s/{ns}/{name}/preupload/{rev}   always answers uploadMode "regular", so files travel
                                                  base64-encoded inside the commit (no LFS, no Xet), and
                                                  the git oid of a file already there (unchanged files
                                                  are then left out of the commit)
- POST /api/{type}s/{ns}/{name}/commit/{rev}      the NDJSON commit; `commit_status` makes it fail
- GET  /api/{type}s/{ns}/{name}/revision/{rev}    repo info: what a commit with no change asks for

Any other route answers 404, and is still recorded, so a test can see an unexpected call.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import yaml
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from aaos.server.background import BackgroundServer


@dataclass
class Received:
    """One request the fake received."""

    method: str
    path: str
    authorization: str | None


@dataclass
class FakeRepo:
    """A repo as the fake holds it: how it was created and the files committed so far."""

    repo_type: str
    visibility: str | None
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[dict[str, Any]] = field(default_factory=list)
    head: str | None = None


@dataclass
class FakeHub:
    """State shared between the fake and the test: repos by id, every request, and failure switches."""

    repos: dict[str, FakeRepo] = field(default_factory=dict)
    requests: list[Received] = field(default_factory=list)
    commit_status: int = 200
    """Answer commits with this status (e.g. 401, 500); the error body echoes the request's Authorization
    header, as a careless server might, so tests can check that the client's error hides it."""
    url: str = ""

    @property
    def authorizations(self) -> list[str | None]:
        return [r.authorization for r in self.requests]

    @property
    def routes(self) -> list[str]:
        return [f"{r.method} {r.path}" for r in self.requests]


def _check_front_matter(content: str) -> None:
    """Raise yaml.YAMLError or ValueError unless the Markdown starts with a YAML header that parses to a mapping."""
    if not content.startswith("---\n"):
        raise ValueError("no YAML header")
    header, _, _ = content[len("---\n"):].partition("\n---\n")
    if not isinstance(yaml.safe_load(header), dict):
        raise ValueError("the YAML header is not a mapping")


def git_oid(content: bytes) -> str:
    """The git blob id of a file's content."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def _apply_commit(repo: FakeRepo, body: bytes) -> None:
    """Store the files of an NDJSON commit and its header line's value."""
    header: dict[str, Any] = {}
    for line in body.splitlines():
        item = json.loads(line)
        if item["key"] == "header":
            header = item["value"]
        elif item["key"] == "file":
            assert item["value"]["encoding"] == "base64"
            repo.files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
        else:
            raise ValueError(f"the fake hub does not support {item['key']!r} commit lines")
    repo.commits.append(header)


def build_app(hub: FakeHub) -> FastAPI:
    app = FastAPI()

    @app.middleware("http")
    async def record(request: Request, call_next: Any) -> Any:
        hub.requests.append(Received(request.method, request.url.path, request.headers.get("authorization")))
        return await call_next(request)

    @app.post("/api/repos/create")
    async def create(request: Request) -> JSONResponse:
        payload = await request.json()
        repo_type = payload.get("type") or "model"
        repo_id = f"{payload['organization']}/{payload['name']}"
        url = f"{hub.url}/{repo_type}s/{repo_id}"
        if repo_id in hub.repos:  # like the Hub, a 409 still carries the url (exist_ok reads it)
            return JSONResponse({"error": "You already created this repo", "url": url}, status_code=409)
        hub.repos[repo_id] = FakeRepo(repo_type, payload.get("visibility"))
        return JSONResponse({"url": url, "name": repo_id})

    @app.post("/api/validate-yaml")
    async def validate_yaml(request: Request) -> JSONResponse:
        try:
            _check_front_matter((await request.json())["content"])
        except (ValueError, yaml.YAMLError) as error:
            return JSONResponse({"errors": [{"message": str(error)}], "warnings": []}, status_code=400)
        return JSONResponse({"errors": [], "warnings": []})

    @app.post("/api/{repo_type}s/{namespace}/{name}/preupload/{revision}")
    async def preupload(repo_type: str, namespace: str, name: str, revision: str, request: Request) -> JSONResponse:
        if f"{namespace}/{name}" not in hub.repos:
            return JSONResponse({"error": "Repository not found"}, status_code=404,
                                headers={"X-Error-Code": "RepoNotFound"})
        stored = hub.repos[f"{namespace}/{name}"].files
        files = (await request.json())["files"]
        return JSONResponse({"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                                        "oid": git_oid(stored[f["path"]]) if f["path"] in stored else None}
                                       for f in files]})

    @app.post("/api/{repo_type}s/{namespace}/{name}/commit/{revision}")
    async def commit(repo_type: str, namespace: str, name: str, revision: str, request: Request) -> JSONResponse:
        repo_id = f"{namespace}/{name}"
        if hub.commit_status != 200:
            echo = f"rejected request with authorization {request.headers.get('authorization')}"
            return JSONResponse({"error": echo}, status_code=hub.commit_status)
        body = await request.body()
        repo = hub.repos[repo_id]
        _apply_commit(repo, body)
        repo.head = hashlib.sha1(body).hexdigest()
        return JSONResponse({"success": True, "commitOid": repo.head,
                             "commitUrl": f"{hub.url}/{repo_type}s/{repo_id}/commit/{repo.head}"})

    @app.get("/api/{repo_type}s/{namespace}/{name}/revision/{revision}")
    async def info(repo_type: str, namespace: str, name: str, revision: str) -> JSONResponse:
        repo = hub.repos[f"{namespace}/{name}"]
        return JSONResponse({"id": f"{namespace}/{name}", "sha": repo.head, "private": repo.visibility == "private"})

    return app


@contextmanager
def serve(hub: FakeHub) -> Iterator[FakeHub]:
    """Run the fake on 127.0.0.1 for the duration of the block; `hub.url` is its base URL (the endpoint)."""
    with BackgroundServer(build_app(hub)) as server:
        hub.url = server.url
        yield hub
