"""The AAOS Space entry point.

Until the interactive Gradio Space lands, this serves a status page on http://127.0.0.1:7860 that plays
one champion episode per scenario with the real simulation core and shows the scores.
"""

from __future__ import annotations

import html
import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import aaos


def champion_scores() -> list[dict[str, object]]:
    rows = []
    for scenario in aaos.list_scenarios():
        env = aaos.make("full_episode", scenario=scenario["id"], seed=0)
        policy = aaos.policies.make("heuristic")
        observation = env.reset()
        while True:
            result = env.step(policy.act(observation))
            observation = result.observation
            if result.done:
                break
        rows.append({"scenario": scenario["id"], "split": scenario["split"], "title": scenario["title"],
                     "score": round(result.info["score"], 3)})
    return rows


def render(rows: list[dict[str, object]]) -> str:
    cells = "".join(
        f"<tr><td>{html.escape(str(r['scenario']))}</td><td>{r['split']}</td>"
        f"<td>{html.escape(str(r['title']))}</td><td>{r['score']}</td></tr>"
        for r in rows
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>AAOS</title></head><body>"
        "<h1>AAOS: Autonomous AI Organization Simulator</h1>"
        "<p>The simulation core is running. The interactive Space (manual play, agent runs, benchmark) is "
        "not built yet; below, the heuristic champion's full_episode score on every scenario (seed 0).</p>"
        f"<table border='1' cellpadding='4'><tr><th>scenario</th><th>split</th><th>title</th><th>score</th></tr>"
        f"{cells}</table></body></html>"
    )


class Handler(BaseHTTPRequestHandler):
    page = ""
    scores = ""

    def do_GET(self) -> None:
        body, kind = (self.scores, "application/json") if self.path == "/scores" else (self.page, "text/html")
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    rows = champion_scores()
    Handler.page = render(rows)
    Handler.scores = json.dumps(rows)
    host, port = os.environ.get("HOST", "0.0.0.0"), int(os.environ.get("PORT", "7860"))
    print(f"AAOS status page on http://127.0.0.1:{port}")
    ThreadingHTTPServer((host, port), Handler).serve_forever()


if __name__ == "__main__":
    main()
