"""The one statistics type: the CLI prints it as JSON, the TUI status bar renders it, bench
aggregates it, and remote engines map server-reported figures onto it.

Only counts and timings are stored; every derived figure is a property so nothing is stored twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .drafters import PassRecord


@dataclass
class Stats:
    tokens: int = 0  # tokens emitted to the caller
    drafted: int = 0  # draft tokens actually sent to the target for verification
    accepted: int = 0  # of those, how many the target kept
    num_drafts: int = 0  # target passes that verified at least one draft token
    probes: int = 0  # of those, drafts the policy forced to learn (probes, cost measurements)
    target_passes: int = 0  # target decode calls during generation (prompt excluded)
    prompt_tokens: int = 0  # prompt tokens in the request
    prompt_tokens_decoded: int = 0  # of those, decoded now (the rest came from the prefix cache)
    prompt_time_s: float = 0.0
    # Characters of a completion's prefix its first-read budget left out (its window's start).
    prompt_cut_chars: int = 0
    # From the start of the request (prompt decoding included) to the first token: summed over the
    # requests folded in, so `time_to_first_token_s` is a mean for a session as for one request.
    first_token_time_s: float = 0.0
    draft_time_s: float = 0.0  # time spent producing drafts (draft model or lookup), catch-up included
    # Of draft_time_s: a draft model decoding text it had not seen (the prompt, text generated while
    # drafting was off) before it could draft; and how many tokens that was.
    draft_catchup_time_s: float = 0.0
    draft_catchup_tokens: int = 0
    # The draft model's work: reads before a draft (each is one decode call of catchup tokens)
    # and one-token decodes while drafting. The bench prices them at measured costs.
    draft_reads: int = 0
    draft_decodes: int = 0
    # Positions a derived draft copied from the target's KV cache instead of reading them.
    draft_adopted_tokens: int = 0
    verify_time_s: float = 0.0  # time in target passes during generation
    # Of verify_time_s: inside llama.cpp's decode (its results waited for); the rest of a pass is
    # host work (batch filling, logits copy, acceptance, KV bookkeeping).
    device_time_s: float = 0.0
    generation_time_s: float = 0.0  # wall time from first generated token pass to the end
    draft_max: int = 0  # the largest draft length allowed
    draft_length: int = 0  # the draft length the policy chose for the latest pass
    drafting: bool = True  # False while the policy has turned drafting off (it did not pay)
    drafted_by_position: list[int] = field(default_factory=list)
    accepted_by_position: list[int] = field(default_factory=list)
    # Draft tokens sent and accepted, by the drafter that proposed them ("session", "model", ...).
    drafted_by_drafter: dict[str, int] = field(default_factory=dict)
    accepted_by_drafter: dict[str, int] = field(default_factory=dict)
    # Passes that verified a draft tree (engine/token_tree.py): their rows (nodes, the pending
    # token included), paths beside the draft's own, tokens accepted along the paths taken, and
    # how often a branch took the target past the draft's own path (and by how many tokens).
    tree_passes: int = 0
    tree_rows: int = 0
    tree_branches: int = 0
    tree_accepted: int = 0
    tree_branch_taken: int = 0
    tree_branch_tokens: int = 0
    requests: int = 0  # requests folded into this object (1 per request, more for a session)
    acceptance_reported: bool = True  # False when a remote server reports no draft statistics

    # -- derived figures -------------------------------------------------------------------------
    @property
    def acceptance(self) -> float | None:
        """accepted / drafted as a fraction; None when nothing was drafted (never a made-up 0)."""
        if not self.acceptance_reported or self.drafted == 0:
            return None
        return self.accepted / self.drafted

    # The names llama-server and vLLM use for the same counts (their telemetry, our `--json`).
    @property
    def num_draft_tokens(self) -> int:
        return self.drafted

    @property
    def num_accepted_tokens(self) -> int:
        return self.accepted

    @property
    def mean_acceptance_length(self) -> float | None:
        """Tokens a drafting pass yields on average: 1 + accepted / num_drafts (vLLM's figure)."""
        if not self.acceptance_reported or self.num_drafts == 0:
            return None
        return 1.0 + self.accepted / self.num_drafts

    @property
    def time_to_first_token_s(self) -> float | None:
        return self.first_token_time_s / self.requests if self.requests else None

    @property
    def tokens_per_pass(self) -> float | None:
        """Tokens the target settled per pass: its own token plus the drafts it accepted, so never
        below 1. (Counting emitted tokens instead reads below 1 when the last pass ends generation:
        its end-of-generation token, or text past a stop string, is produced but not emitted.)"""
        return (self.accepted + self.target_passes) / self.target_passes if self.target_passes else None

    @property
    def tokens_per_second(self) -> float | None:
        return self.tokens / self.generation_time_s if self.generation_time_s > 0 else None

    @property
    def drafter_share(self) -> dict[str, float]:
        """Share of the accepted draft tokens each drafter produced (empty before any)."""
        total = sum(self.accepted_by_drafter.values())
        return {k: v / total for k, v in sorted(self.accepted_by_drafter.items())} if total else {}

    @property
    def tree_rows_per_pass(self) -> float | None:
        return self.tree_rows / self.tree_passes if self.tree_passes else None

    @property
    def tree_width(self) -> float | None:
        """Paths per tree pass (the draft's own and those beside it)."""
        return 1.0 + self.tree_branches / self.tree_passes if self.tree_passes else None

    @property
    def tree_path_length(self) -> float | None:
        """Draft tokens accepted per tree pass, along the path the target took."""
        return self.tree_accepted / self.tree_passes if self.tree_passes else None

    @property
    def acceptance_by_position(self) -> list[float | None]:
        return [
            (a / d if d else None)
            for a, d in zip(self.accepted_by_position, self.drafted_by_position)
        ]

    # -- updates ---------------------------------------------------------------------------------
    def record(self, rec: "PassRecord") -> None:
        """Count one pass of the speculative loop (the record the draft policy learns from)."""
        d = rec.draft
        self.draft_time_s += d.time_s
        self.draft_catchup_time_s += d.catchup_s
        self.draft_catchup_tokens += d.catchup_tokens
        self.draft_reads += int(d.catchup_tokens > 0)
        self.draft_decodes += d.decodes
        self.draft_adopted_tokens += d.adopted_tokens
        self.draft_length = rec.asked
        self.drafting = rec.drafting
        self.probes += int(rec.probing)
        self.verify_time_s += rec.verify_s
        self.device_time_s += rec.device_s
        self.record_pass(len(d.tokens), rec.accepted, d.sources)
        if rec.tree is not None:
            t = rec.tree
            self.tree_passes += 1
            self.tree_rows += t.rows
            self.tree_branches += t.branches
            self.tree_accepted += rec.accepted
            self.tree_branch_taken += int(rec.accepted > t.main_held)
            self.tree_branch_tokens += rec.accepted - t.main_held

    def record_pass(self, drafted: int, accepted: int, sources: list[str] | None = None) -> None:
        """Count one verification pass with `drafted` proposals of which the first `accepted` held;
        `sources` names the drafter of each proposal."""
        for i, src in enumerate((sources or [])[:drafted]):
            self.drafted_by_drafter[src] = self.drafted_by_drafter.get(src, 0) + 1
            if i < accepted:
                self.accepted_by_drafter[src] = self.accepted_by_drafter.get(src, 0) + 1
        self.target_passes += 1
        self.num_drafts += int(drafted > 0)
        self.drafted += drafted
        self.accepted += accepted
        if drafted > len(self.drafted_by_position):
            grow = drafted - len(self.drafted_by_position)
            self.drafted_by_position.extend([0] * grow)
            self.accepted_by_position.extend([0] * grow)
        for i in range(drafted):
            self.drafted_by_position[i] += 1
            if i < accepted:
                self.accepted_by_position[i] += 1

    def merge(self, other: "Stats") -> None:
        """Fold a finished request into a rolling (session) total."""
        for f in fields(self):
            name = f.name
            mine, theirs = getattr(self, name), getattr(other, name)
            if name in ("draft_max", "draft_length", "drafting", "acceptance_reported"):
                setattr(self, name, theirs)
            elif name in ("drafted_by_drafter", "accepted_by_drafter"):
                for key, v in theirs.items():
                    mine[key] = mine.get(key, 0) + v
            elif name in ("drafted_by_position", "accepted_by_position"):
                if len(theirs) > len(mine):
                    mine.extend([0] * (len(theirs) - len(mine)))
                for i, v in enumerate(theirs):
                    mine[i] += v
            else:
                setattr(self, name, mine + theirs)

    def copy(self) -> "Stats":
        new = Stats(**{f.name: getattr(self, f.name) for f in fields(self)})
        new.drafted_by_position = list(self.drafted_by_position)
        new.accepted_by_position = list(self.accepted_by_position)
        new.drafted_by_drafter = dict(self.drafted_by_drafter)
        new.accepted_by_drafter = dict(self.accepted_by_drafter)
        return new

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: stored counts plus the derived figures."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("acceptance", "tokens_per_pass", "tokens_per_second", "acceptance_by_position",
                     "num_draft_tokens", "num_accepted_tokens", "mean_acceptance_length",
                     "time_to_first_token_s", "drafter_share", "tree_rows_per_pass", "tree_width",
                     "tree_path_length"):
            out[name] = getattr(self, name)
        for key in ("prompt_time_s", "first_token_time_s", "draft_time_s", "draft_catchup_time_s",
                    "verify_time_s", "device_time_s", "generation_time_s", "time_to_first_token_s"):
            if out[key] is not None:
                out[key] = round(out[key], 6)
        return out
