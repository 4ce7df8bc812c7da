"""A stand-in judge: an OpenAI-compatible chat-completions server (stdlib HTTP, in a
thread) that answers the judge's questions (rlvr.feedback.judge) by a rule written in
Python instead of a model. For checking a judge config and the `judge` term's plumbing
without a model, and for demonstrations that need a judge which knows the rule (a small
local model judges near random).

    with RuleJudge(lambda reply: '\"\"\"' in reply).serve() as url:
        ...  # reward.judge.base_url = url

Both of the judge's scorings are answered: with `logprobs` set, one token ("Yes" or
"No") with its top log-probs; else one "N: yes/no" line per criterion listed in the
question. The rule sees the quoted reply only and says whether it meets every criterion.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rlvr.feedback.judge import QUOTE_CLOSE, QUOTE_OPEN

Rule = Callable[[str], bool]
"""The quoted reply -> whether it meets every criterion."""


def quoted_reply(body: dict[str, Any]) -> str:
    """The reply a judge request asks about (between the quote markers of its last message)."""
    text = str(body["messages"][-1]["content"])
    return text.split(QUOTE_OPEN, 1)[-1].split(QUOTE_CLOSE, 1)[0]


class RuleJudge:
    """Answers each request by `rule`: P(yes) = e^yes_logprob / (e^yes_logprob + e^no_logprob)
    read from log-probs when the rule holds (the two swapped when it does not); each answer
    reports `usage` tokens. `requests` keeps every request body answered, in arrival order."""

    def __init__(
        self, rule: Rule, *, yes_logprob: float = -0.1, no_logprob: float = -2.5, usage: tuple[int, int] = (90, 10)
    ) -> None:
        self.rule = rule
        self.yes_logprob, self.no_logprob = yes_logprob, no_logprob
        self.usage = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON answer) for one chat-completions request."""
        meets = self.rule(quoted_reply(body))
        with self._lock:
            self.requests.append(body)
        if body.get("logprobs"):
            first, second = ("Yes", "No") if meets else ("No", "Yes")
            top = [{"token": first, "logprob": self.yes_logprob}, {"token": second, "logprob": self.no_logprob}]
            choice: dict[str, Any] = {
                "message": {"role": "assistant", "content": first},
                "logprobs": {"content": [{"token": first, "logprob": self.yes_logprob, "top_logprobs": top}]},
            }
        else:
            said = "yes" if meets else "no"
            criteria = len(re.findall(r"^\d+\. ", str(body["messages"][-1]["content"]), re.M))
            choice = {"message": {"role": "assistant", "content": self.grade_text(criteria, said)}}
        return 200, {"choices": [choice], "usage": dict(self.usage)}

    def grade_text(self, criteria: int, said: str) -> str:
        """The answer to a `grade` request: one line per criterion."""
        return "\n".join(f"{i}: {said}" for i in range(1, criteria + 1))

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        """Serve on a free local port; yields the base URL (…/v1) and stops on exit."""
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                    status, answer = judge.answer(body)
                except (ValueError, KeyError, TypeError, IndexError) as e:
                    status, answer = 400, {"error": {"message": f"not a chat-completions request: {e}"}}
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_port}/v1"
        finally:
            server.shutdown()
            server.server_close()
