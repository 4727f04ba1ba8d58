"""What a request's end says to its callers."""

from __future__ import annotations

from specterm.engine import Finished, Stats


def test_an_answer_is_a_natural_end_or_a_time_cut_never_a_cancel_or_failure():
    def answered(reason: str) -> bool:
        return Finished(reason=reason, text="x", stats=Stats()).answered

    assert all(answered(r) for r in ("eos", "length", "stop", "time"))
    assert not any(answered(r) for r in ("cancelled", "superseded", "busy", "error"))
