"""`specterm doctor` for a remote backend: is the server there, what is it, does it draft, how fast.

It connects exactly as the editor would (same URL normalisation, key, retries and error messages),
lists the server kind, version and model, then sends one short greedy completion to measure the
round trip — time to the first token and to the last — and to see whether the server drafts and
reports acceptance. Failures (TLS, auth, connection, wrong URL) come back as the same user-facing
messages `RemoteEngine` raises, so doctor explains exactly what the app would hit.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, TextIO

from ..errors import EngineError
from ..requests import Finished, GenerateRequest, TextDelta
from ..settings import SamplingSettings
from .client import ServerHTTPError
from .engine import RemoteEngine
from .server_stats import describe_acceptance
from .settings import RemoteSettings, ServerInfo

PROBE_PROMPT = "def add(a, b):\n    "
PROBE_TOKENS = 16
# What an edit (engine/edit_prompt.py) gets on a server: the same prompt, but the server cannot take
# the region as a prediction, so it decodes plainly (or with its own drafter).
EDITS_NOTE = ("plain decoding: the server cannot draft from the code being replaced "
              "(the local backend does)")
# Draft trees (engine/token_tree.py) are the local loop's: a server verifies its own linear drafts.
TREES_NOTE = "linear drafts only: the server verifies its own drafts, not specterm's trees (the local backend does)"


@dataclass
class RoundTrip:
    """One short greedy completion, timed from the client."""

    first_token_s: float | None
    total_s: float
    tokens: int
    drafted: int
    accepted: int
    acceptance: float | None
    acceptance_text: str  # "77%", "no drafts yet" or "not reported by server"
    finish_reason: str


@dataclass
class RemoteReport:
    url: str
    api_key_env: str | None
    api_key_set: bool
    server: ServerInfo | None = None
    round_trip: RoundTrip | None = None
    problem: str | None = None
    http_status: int | None = None  # set when the server answered but refused (auth, wrong path)

    @property
    def ok(self) -> bool:
        return self.problem is None and self.server is not None

    @property
    def drafting(self) -> bool | None:
        """Whether the server drafts: its own report, or what the test reply showed."""
        if self.round_trip is not None and self.round_trip.drafted > 0:
            return True
        return self.server.drafting if self.server else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "ok": self.ok,
            "problem": self.problem,
            "http_status": self.http_status,
            "api_key_env": self.api_key_env,
            "api_key_set": self.api_key_set,
            "server": asdict(self.server) if self.server else None,
            "drafting": self.drafting,
            "round_trip": asdict(self.round_trip) if self.round_trip else None,
            "edits": EDITS_NOTE,
            "trees": TREES_NOTE,
        }

    def write(self, out: TextIO) -> None:
        out.write(f"{'Remote server':<14}{self.url}\n")
        if self.api_key_env:
            state = "set" if self.api_key_set else "not set"
            out.write(f"  {'API key':<12}${self.api_key_env} {state}\n")
        else:
            out.write(f"  {'API key':<12}none configured ([engine] api_key_env is empty)\n")
        if self.server is None:
            reach = f"yes, but it refused (HTTP {self.http_status})" if self.http_status else "NO"
            out.write(f"  {'reachable':<12}{reach}\n\nProblem\n")
            for line in (self.problem or "unknown failure").splitlines():
                out.write(f"  {line}\n")
            out.write("\nThe remote backend cannot be used: fix the problem above.\n")
            return
        srv = self.server
        out.write(f"  {'reachable':<12}yes (GET /v1/models answered in {srv.latency_s * 1000:.0f} ms)\n")
        version = f" ({srv.version})" if srv.version else ""
        out.write(f"  {'server':<12}{srv.kind}{version}\n")
        ctx = f"  (context {srv.n_ctx})" if srv.n_ctx else ""
        out.write(f"  {'model':<12}{srv.model}{ctx}\n")
        if len(srv.models) > 1:
            out.write(f"  {'also serves':<12}{', '.join(m for m in srv.models if m != srv.model)}\n")
        drafting = "unknown (not reported by server)" if self.drafting is None else ("yes" if self.drafting else "no")
        out.write(f"  {'drafting':<12}{drafting}\n")
        out.write(f"  {'edits':<12}{EDITS_NOTE}\n")
        out.write(f"  {'trees':<12}{TREES_NOTE}\n")
        rt = self.round_trip
        if rt is not None:
            first = f"first token {rt.first_token_s * 1000:.0f} ms, " if rt.first_token_s is not None else ""
            out.write(f"  {'round trip':<12}{first}{rt.tokens} tokens in {rt.total_s * 1000:.0f} ms\n")
            detail = f" ({rt.accepted} of {rt.drafted} draft tokens)" if rt.drafted else ""
            out.write(f"  {'acceptance':<12}{rt.acceptance_text}{detail} in the test reply\n")
        if self.problem:
            out.write(f"\nProblem\n  {self.problem}\n\nThe remote backend cannot be used: fix the problem above.\n")
        else:
            out.write("\nOK: the server answers and generates.\n")


async def check_remote(settings: RemoteSettings, make_engine: Callable[[], RemoteEngine]) -> RemoteReport:
    """Connect, identify, and time one short completion. Never raises for server trouble.
    `make_engine` is the application's engine factory, so doctor builds the engine the app would."""
    try:
        engine = make_engine()  # an unusable URL is reported here
    except EngineError as err:
        return RemoteReport(url=settings.url or "(none)", api_key_env=settings.api_key_env,
                            api_key_set=bool(settings.api_key), problem=str(err))
    report = RemoteReport(url=engine.root, api_key_env=settings.api_key_env, api_key_set=bool(settings.api_key))
    try:
        try:
            await engine.start()
        except EngineError as err:
            report.problem = str(err)
            report.http_status = err.status if isinstance(err, ServerHTTPError) else None
            return report
        report.server = engine.server
        request = GenerateRequest(
            prompt=PROBE_PROMPT, max_tokens=PROBE_TOKENS, sampling=SamplingSettings(temperature=0.0)
        )
        t0 = time.perf_counter()
        first: float | None = None
        finished: Finished | None = None
        try:
            async for event in engine.stream(request):
                if isinstance(event, TextDelta) and first is None:
                    first = time.perf_counter() - t0
                elif isinstance(event, Finished):
                    finished = event
        except EngineError as err:
            report.problem = f"the server is reachable but the test completion failed: {err}"
            return report
        total = time.perf_counter() - t0
        if finished is None or finished.reason == "error":
            why = finished.error if finished else "no result"
            report.problem = f"the server is reachable but the test completion failed: {why}"
            return report
        s = finished.stats
        report.round_trip = RoundTrip(
            first_token_s=first,
            total_s=total,
            tokens=s.tokens,
            drafted=s.drafted,
            accepted=s.accepted,
            acceptance=s.acceptance,
            acceptance_text=describe_acceptance(s),
            finish_reason=finished.reason,
        )
        return report
    finally:
        await engine.close()
