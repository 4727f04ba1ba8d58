"""Map what an OpenAI-compatible server reports about speculative decoding onto `Stats`.

Servers report drafting in two ways, and specterm reads both into the one statistics type the local
engine fills, so the status bar, `--json` and `bench` need no remote special case:

* llama.cpp's `llama-server` attaches a `timings` object to its responses (to every streamed chunk
  when the request asks for `timings_per_token`). When the server drafted anything it carries
  `draft_n` (draft tokens sent to the target) and `draft_n_accepted`; when it drafted nothing the
  keys are absent, which is a real zero, not a missing report.
* vLLM reports per-engine Prometheus counters on `/metrics`: `vllm:spec_decode_num_drafts_total`,
  `..._num_draft_tokens_total`, `..._num_accepted_tokens_total` and
  `..._num_accepted_tokens_per_pos_total{position="i"}` (llama-server exports the same family with
  the `llamacpp:` prefix when started with `--metrics`). They are server-wide and cumulative, so one
  request's figures are the difference of two scrapes taken around it — exact on a server nobody
  else is using, a blend of everyone's traffic on a shared one.

Servers that report neither (e.g. `python -m llama_cpp.server`) get `acceptance_reported=False`:
`Stats.acceptance` is then None and UIs say "not reported by server" — never a made-up figure.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..stats import Stats

NOT_REPORTED = "not reported by server"

# -- llama-server `timings` -------------------------------------------------------------------------


def stats_from_timings(
    timings: Mapping[str, Any] | None,
    *,
    tokens_fallback: int = 0,
    generation_time_fallback_s: float = 0.0,
    prompt_tokens_fallback: int = 0,
    drafting: bool | None = None,
) -> Stats:
    """One request's statistics from llama-server's `timings` object.

    `timings` None means the server sent none (not llama-server): the counts then come from the
    client side (`*_fallback`: tokens streamed, wall time measured here, `usage.prompt_tokens`) and
    acceptance is marked not reported. `drafting` says whether the server is known to draft.
    """
    if not timings:
        return Stats(
            tokens=tokens_fallback,
            prompt_tokens=prompt_tokens_fallback,
            generation_time_s=generation_time_fallback_s,
            requests=1,
            acceptance_reported=False,
            drafting=bool(drafting),
        )
    tokens = int(timings.get("predicted_n") or tokens_fallback)
    drafted = int(timings.get("draft_n") or 0)
    accepted = int(timings.get("draft_n_accepted") or 0)
    prompt_decoded = int(timings.get("prompt_n") or 0)
    cached = int(timings.get("cache_n") or 0)
    gen_ms = float(timings.get("predicted_ms") or 0.0)
    return Stats(
        tokens=tokens,
        drafted=drafted,
        accepted=accepted,
        # Every target pass emits exactly one token of its own plus the draft tokens it accepted,
        # so the passes are the tokens that were not accepted drafts.
        target_passes=max(tokens - accepted, 0),
        prompt_tokens=prompt_decoded + cached or prompt_tokens_fallback,
        prompt_tokens_decoded=prompt_decoded,
        prompt_time_s=float(timings.get("prompt_ms") or 0.0) / 1000.0,
        generation_time_s=gen_ms / 1000.0 if gen_ms > 0 else generation_time_fallback_s,
        drafting=drafted > 0 if drafting is None else drafting,
        requests=1,
        acceptance_reported=True,
    )


# -- Prometheus text exposition ---------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One line of a Prometheus text page: `name{labels} value`."""

    name: str
    labels: Mapping[str, str]
    value: float


_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?P<labels>\{.*\})?\s+(?P<rest>\S.*)$")
_LABEL = re.compile(r'\s*(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*"(?P<val>(?:[^"\\]|\\.)*)"\s*,?')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def _parse_labels(text: str) -> dict[str, str]:
    body = text[1:-1]
    out: dict[str, str] = {}
    pos = 0
    while pos < len(body):
        m = _LABEL.match(body, pos)
        if not m:
            raise ValueError(f"bad label set {text!r}")
        out[m["key"]] = re.sub(r'\\[\\"n]', lambda e: _UNESCAPE[e.group(0)], m["val"])
        pos = m.end()
    return out


def _parse_value(text: str) -> float:
    word = text.split()[0]  # an optional timestamp may follow
    if word in ("+Inf", "Inf"):
        return math.inf
    if word == "-Inf":
        return -math.inf
    return float(word)  # also "NaN"


def parse_prometheus(text: str) -> list[Sample]:
    """Parse the Prometheus text format (version 0.0.4) that vLLM and llama-server serve.

    Comment lines (`# HELP`, `# TYPE`) and blank lines are skipped; malformed lines are skipped
    too, so one odd metric from a newer server never hides the ones specterm needs.
    """
    samples: list[Sample] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        try:
            labels = _parse_labels(m["labels"]) if m["labels"] else {}
            samples.append(Sample(m["name"], labels, _parse_value(m["rest"])))
        except ValueError:
            continue
    return samples


# -- speculative-decoding counters ------------------------------------------------------------------

SPEC_PREFIXES = ("vllm:", "llamacpp:")
_DRAFTS = "spec_decode_num_drafts_total"
_DRAFT_TOKENS = "spec_decode_num_draft_tokens_total"
_ACCEPTED = "spec_decode_num_accepted_tokens_total"
_ACCEPTED_PER_POS = "spec_decode_num_accepted_tokens_per_pos_total"


@dataclass(frozen=True)
class SpecCounters:
    """Cumulative speculative-decoding counters of one server (summed over its engines)."""

    source: str  # the metric prefix they came from: "vllm" or "llamacpp"
    drafts: float = 0.0  # verification steps that carried a draft
    draft_tokens: float = 0.0
    accepted_tokens: float = 0.0
    accepted_per_position: tuple[float, ...] = field(default_factory=tuple)

    def minus(self, before: "SpecCounters") -> "SpecCounters":
        """The counters accrued since `before` (a server restart resets them: then take all)."""
        if self.draft_tokens < before.draft_tokens or self.drafts < before.drafts:
            return self
        n = max(len(self.accepted_per_position), len(before.accepted_per_position))
        mine = list(self.accepted_per_position) + [0.0] * (n - len(self.accepted_per_position))
        theirs = list(before.accepted_per_position) + [0.0] * (n - len(before.accepted_per_position))
        return SpecCounters(
            source=self.source,
            drafts=self.drafts - before.drafts,
            draft_tokens=self.draft_tokens - before.draft_tokens,
            accepted_tokens=self.accepted_tokens - before.accepted_tokens,
            accepted_per_position=tuple(max(a - b, 0.0) for a, b in zip(mine, theirs)),
        )

    @property
    def acceptance(self) -> float | None:
        return self.accepted_tokens / self.draft_tokens if self.draft_tokens > 0 else None


def spec_counters(
    samples: Iterable[Sample] | str, *, model: str | None = None
) -> SpecCounters | None:
    """The speculative-decoding counters on a metrics page, or None when it has none.

    None means the server does not draft (vLLM registers the counters only with a speculative
    config) or does not export them — "not reported", which is different from zero drafts.
    `model` keeps only samples whose `model_name` label matches, for servers hosting several models.
    Only the `_total` series count: `_created` series are timestamps, and the per-position series
    break the accepted total down rather than adding to it.
    """
    if isinstance(samples, str):
        samples = parse_prometheus(samples)
    found: dict[str, dict[str, Any]] = {}
    for s in samples:
        prefix = next((p for p in SPEC_PREFIXES if s.name.startswith(p)), None)
        if prefix is None:
            continue
        if model is not None and "model_name" in s.labels and s.labels["model_name"] != model:
            continue
        if math.isnan(s.value) or math.isinf(s.value):
            continue
        acc = found.setdefault(prefix, {"drafts": 0.0, "draft": 0.0, "accepted": 0.0, "pos": {}, "seen": False})
        short = s.name[len(prefix):]
        if short == _DRAFTS:
            acc["drafts"] += s.value
        elif short == _DRAFT_TOKENS:
            acc["draft"] += s.value
            acc["seen"] = True
        elif short == _ACCEPTED:
            acc["accepted"] += s.value
        elif short == _ACCEPTED_PER_POS:
            try:
                pos = int(s.labels.get("position", ""))
            except ValueError:
                continue
            acc["pos"][pos] = acc["pos"].get(pos, 0.0) + s.value
    for prefix in SPEC_PREFIXES:
        counts = found.get(prefix)
        if counts and counts["seen"]:
            by_pos: dict[int, float] = counts["pos"]
            per_pos = tuple(by_pos.get(i, 0.0) for i in range(max(by_pos) + 1)) if by_pos else ()
            return SpecCounters(
                source=prefix.rstrip(":"),
                drafts=counts["drafts"],
                draft_tokens=counts["draft"],
                accepted_tokens=counts["accepted"],
                accepted_per_position=per_pos,
            )
    return None


def apply_counters(stats: Stats, delta: SpecCounters | None) -> Stats:
    """Put one request's counter difference into `stats` (a copy is returned).

    With no counters the acceptance is marked not reported. Otherwise drafted/accepted come from
    the counters, target passes are the tokens that were not accepted drafts, and the per-position
    figures follow vLLM's own convention: position i was drafted once per draft, so its acceptance
    is accepted_per_pos[i] / drafts.
    """
    out = stats.copy()
    if delta is None:
        out.acceptance_reported = False
        out.target_passes = 0
        return out
    out.acceptance_reported = True
    out.drafted = int(round(delta.draft_tokens))
    out.accepted = int(round(delta.accepted_tokens))
    out.drafting = True
    out.target_passes = max(out.tokens - out.accepted, 0) if out.tokens else int(round(delta.drafts))
    drafts = int(round(delta.drafts))
    out.num_drafts = drafts
    out.drafted_by_position = [drafts] * len(delta.accepted_per_position)
    out.accepted_by_position = [int(round(v)) for v in delta.accepted_per_position]
    return out


def describe_acceptance(stats: Stats) -> str:
    """What a UI prints for acceptance: a percentage, "no drafts yet", or "not reported by server"."""
    if not stats.acceptance_reported:
        return NOT_REPORTED
    a = stats.acceptance
    return "no drafts yet" if a is None else f"{a:.0%}"
