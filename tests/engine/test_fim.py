"""Fill-in-the-middle prompts, token healing and the inline stop rules."""

from __future__ import annotations

import numpy as np
import pytest

from specterm.engine import CompletionRequest, ContextFile, ModelSettings
from specterm.engine.completion import InlineStops, drop_suffix_repeat, finish_completion, worth_caching
from specterm.engine.llamacpp.fim_prompt import build_fim_prompt
from specterm.engine.llamacpp.model import LlamaModel
from specterm.engine.speculative import HealIndex

from ggufs import FIM_MID, FIM_PRE, FIM_SUF


def test_fim_prompt_uses_the_models_own_tokens_and_keeps_text_nearest_the_cursor(models):
    m = LlamaModel.load(ModelSettings(path=models.fim, ctx=512))
    try:
        assert m.fim is not None and (m.fim.pre, m.fim.suf, m.fim.mid) == (FIM_PRE, FIM_SUF, FIM_MID)
        prefix = "".join(f"line_{i} = {i}\n" for i in range(400)) + "total = "
        suffix = "\nprint(total)\n" + "".join(f"after_{i} = {i}\n" for i in range(400))
        fp = build_fim_prompt(m, CompletionRequest(prefix=prefix, suffix=suffix), max_tokens=64)
        toks = fp.tokens
        assert fp.fim and len(toks) <= m.n_ctx - 64
        assert toks[-1] == FIM_MID and FIM_PRE in toks and FIM_SUF in toks
        pre_part = m.detokenize(toks[toks.index(FIM_PRE) + 1 : toks.index(FIM_SUF)])
        suf_part = m.detokenize(toks[toks.index(FIM_SUF) + 1 : -1])
        assert "line_399 = 399" in pre_part and "line_0 = 0\n" not in pre_part  # end kept
        assert suf_part.startswith("\nprint(total)") and "after_399" not in suf_part  # start kept
        assert fp.heal and prefix.encode().endswith(fp.heal)  # the last token is healed
        assert not pre_part.endswith(fp.heal.decode())
    finally:
        m.close()


def test_fim_model_completes_in_the_middle(models, engine_factory):
    eng = engine_factory(models.fim, "lookup", draft_max=4)
    req = CompletionRequest(prefix="def add(a, b):\n    return ", suffix="\n\nprint(add(1, 2))\n",
                            max_tokens=16)
    result = eng.run(req)
    reason, stats = result.reason, result.stats
    assert stats.tokens >= 1 and reason in ("eos", "stop", "length")
    assert eng.info.fim


def test_context_files_go_before_the_cursor_file_when_the_model_has_separators(models):
    m = LlamaModel.load(ModelSettings(path=models.fim, ctx=1024))
    try:
        if m.fim.sep < 0 or m.fim.rep < 0:
            # SmolLM2's vocabulary has no file separator token: the prompt must not use one; the
            # file goes before the prefix as a plain-text snippet, as llama.cpp's /infill does
            # (with separators: tests/engine/test_extra_context.py)
            fp = build_fim_prompt(m, CompletionRequest(
                prefix="x = ", context_files=(ContextFile("util.py", "def helper(): pass\n"),)), 32)
            pre = fp.tokens.index(FIM_PRE)
            assert fp.tokens[0] == m.bos or fp.tokens[0] != FIM_PRE
            assert "def helper(): pass" in m.detokenize(fp.tokens[:pre])
            assert fp.tokens[:pre].count(FIM_PRE) == 0  # no repo token either (it shares FIM_PRE here)
    finally:
        m.close()


@pytest.mark.parametrize("prefix", [
    "def square(x):\n    \"\"\"Return x squared.\"\"\"\n    ",
    "def add(a, b):\n    ",  # the demo model wants a second indent level here without the guard
])
def test_prefix_ending_in_spaces_does_not_double_the_indentation(models, engine_factory, prefix):
    """Without healing a prefix of four spaces continues with ' return' (five spaces)."""
    eng = engine_factory(models.demo, "none")
    text = eng.run(CompletionRequest(prefix=prefix, suffix="\n", max_tokens=12,
                                                   multiline=False)).text
    assert text.strip() and not text[0].isspace(), repr(text)


def test_the_heal_index_is_built_with_the_engine_not_by_the_first_completion(models, engine_factory):
    """Scanning the whole vocabulary is the load's work: the first suggestion after the app
    starts (or after a jump) must not wait for it."""
    eng = engine_factory(models.demo, "none")
    index = eng.decoder._heal_index
    assert index is not None
    text = eng.run(CompletionRequest(prefix="def add(a, b):\n    ret", suffix="\n", max_tokens=4)).text
    assert text and eng.decoder._heal_index is index


def test_heal_index_allows_exactly_the_tokens_that_agree_with_the_healed_text():
    pieces = [b"", b"\n", b"\n   ", b"\n    ", b"\n     ", b"\n    x", b" return", b"return", b"  y"]
    idx = HealIndex(pieces)
    allowed = lambda m: {pieces[i] for i in np.flatnonzero(m)}  # noqa: E731
    assert allowed(idx.mask(b"\n    ")) == {b"\n", b"\n   ", b"\n    ", b"\n     ", b"\n    x"}
    assert allowed(idx.mask(b"\n    ", no_blank_after=True)) == {b"\n", b"\n   ", b"\n    ", b"\n    x"}
    assert allowed(idx.mask(b" ", no_blank_after=True)) == {b" return"}
    assert b" return" not in allowed(idx.mask(b"", no_blank_after=True))
    assert b"return" in allowed(idx.mask(b"", no_blank_after=True))
    twice = HealIndex(pieces + [b"\n"])  # one piece under two ids (as vocabularies have): both agree
    assert {1, len(pieces)} <= set(np.flatnonzero(twice.mask(b"\n    ")).tolist())


def test_models_without_fim_tokens_fall_back_to_prefix_completion(models):
    m = LlamaModel.load(ModelSettings(path=models.demo, ctx=512))
    try:
        assert m.fim is None
        fp = build_fim_prompt(m, CompletionRequest(prefix="import os\n", suffix="print(1)"), 32)
        assert not fp.fim
        assert "print" not in m.detokenize(fp.tokens)
    finally:
        m.close()


def test_finish_completion_drops_text_that_repeats_the_suffix():
    req = CompletionRequest(prefix="def f(x):\n    ", suffix="\n    return y\n")
    assert finish_completion("y = x + 1\n    return y", req) == "y = x + 1"
    # a suggestion that is exactly what follows the cursor is not shown
    assert finish_completion("return y", CompletionRequest(prefix="    ", suffix="return y\n")) == ""
    # closing brackets already after the cursor are not repeated
    assert finish_completion("a, b)", CompletionRequest(prefix="f(", suffix=")\n")) == "a, b"


def test_drop_suffix_repeat_cuts_trailing_lines_that_repeat_the_following_code():
    suffix = "\n    if not items:\n        return 0\n\n    return total / len(items)\n"
    text = (
        "total = sum(items)\n"
        "    if not items:\n"
        "        return 0\n"
        "\n"
        "    return total / len(items)"
    )
    # the longest repeated tail goes, blank lines in either text do not break the match
    assert drop_suffix_repeat(text, suffix) == "total = sum(items)"
    # a repeat of only the first following line goes too; indentation does not matter
    assert drop_suffix_repeat("n = 1\nif not items:", suffix) == "n = 1"
    # lines that merely look like later code (not the code right after the cursor) stay
    kept = "total = sum(items)\n    return total / len(items)"
    assert drop_suffix_repeat(kept, suffix) == kept
    # the first line is never cut by this rule: starting at a line end, it is the new text
    assert drop_suffix_repeat("\n    if not items:", suffix) == ""  # (all of it is already there)
    assert drop_suffix_repeat("x = 2\n", "\n") == "x = 2\n"


def test_drop_suffix_repeat_on_closing_brackets_of_the_cursor_line():
    assert drop_suffix_repeat("a, b)", ")\n") == "a, b"
    assert drop_suffix_repeat("key]):", "]):\nnext()") == "key"
    # brackets the suggestion opens itself are its own: the call keeps its parenthesis
    assert drop_suffix_repeat("g(1)", ")\n") == "g(1)"
    assert drop_suffix_repeat("g(1))", ")\n") == "g(1)"
    # only a one-line suggestion: a multi-line one moves the cursor line's rest after its last line
    assert drop_suffix_repeat("a,\n    b)", ")\n") == "a,\n    b)"
    # nothing after the cursor on its line: nothing to compare
    assert drop_suffix_repeat("x)", "\ny)") == "x)"


def test_drop_suffix_repeat_empties_a_suggestion_that_is_already_there():
    assert drop_suffix_repeat("return y", "return y\n") == ""
    assert drop_suffix_repeat("ret", "return y\n") == ""  # a start of what is there adds nothing
    assert drop_suffix_repeat("\n    return y", "\n    return y\n") == ""
    assert drop_suffix_repeat(")", ")") == ""
    assert drop_suffix_repeat("return x", "return y\n") == "return x"
    assert drop_suffix_repeat("   ", "") == "   "  # blanks are the caller's business
    assert drop_suffix_repeat("", "anything") == ""


def test_finish_completion_stops_at_the_end_of_the_block_and_the_line_cap():
    req = CompletionRequest(prefix="class A:\n    def f(self):\n        ", suffix="", max_lines=3)
    text = "x = 1\n        y = 2\n    def g(self):\n        pass"
    assert finish_completion(text, req) == "x = 1\n        y = 2"
    many = "\n".join(f"        v{i} = {i}" for i in range(10))
    # one line rule for every backend: at most max_lines lines, the cursor line's rest the first
    assert finish_completion("a = 0\n" + many, req) == "a = 0\n        v0 = 0\n        v1 = 1"
    # a blank lead-in (the suggestion starts on the next line) does not count
    assert finish_completion("\n" + many, req) == "\n" + "\n".join(many.split("\n")[:3])
    single = CompletionRequest(prefix="x = ", suffix="", multiline=False)
    assert finish_completion("1\ny = 2", single) == "1"
    after_colon = CompletionRequest(prefix="def f():", suffix="", multiline=False)
    assert finish_completion("\n    return 1\n    x = 2", after_colon) == "\n    return 1"


def test_after_a_line_that_ends_a_nested_block_a_suggestion_may_step_out_of_it():
    """Tab on `return v, v, v` that ends an `if` used to be followed by no suggestion at all: the
    next line is a dedent, and the block rule cut it. At the end of a line with code the
    suggestion may step out to an enclosing block, never to the top level; elsewhere the rule
    is as before."""
    prefix = "def f(s, v):\n    if s == 0.0:\n        return v, v, v"
    req = CompletionRequest(prefix=prefix, suffix="", max_lines=8)
    text = "\n    if s == 1.0:\n        return v, 0, 0\n    return 0, 0, 0\n\ndef g():\n    pass"
    assert finish_completion(text, req) == "\n    if s == 1.0:\n        return v, 0, 0\n    return 0, 0, 0"
    stops = InlineStops(req)
    assert stops(text.split("def g")[0]) is None and stops(text + "\n") == "stop"
    # to the top level: not a step out (the next function is not this block's business)
    assert finish_completion("\ndef g():\n    pass", req) == ""
    # with code after the cursor on its line, or the cursor in the indentation: as before
    mid = CompletionRequest(prefix=prefix, suffix="  # done\n", max_lines=8)
    assert finish_completion(text, mid) == ""
    blank = CompletionRequest(prefix="def f(s, v):\n    if s:\n        ", suffix="", max_lines=8)
    assert finish_completion("x = 1\n    return x", blank) == "x = 1"


def test_the_stop_check_and_the_finished_text_apply_the_same_line_cap():
    """Generation stops (InlineStops) exactly when finish_completion would cut: no line generated
    that is then thrown away, none cut that the cap allows."""
    for multiline, max_lines in ((True, 1), (True, 3), (False, 16)):
        req = CompletionRequest(prefix="    ", suffix="", multiline=multiline, max_lines=max_lines)
        stops = InlineStops(req)
        for lead in ("", "\n"):
            text, stopped_at = lead, None
            for i in range(6):
                text += ("    " if i or lead else "") + f"v{i} = {i}\n"
                if stops(text):
                    stopped_at = text
                    break
            assert stopped_at is not None
            cap = max_lines if multiline else 1
            assert finish_completion(stopped_at, req).count("\n") == cap - 1 + len(lead)


def test_cursor_in_indentation_adds_no_blanks_whatever_the_backend_sent():
    req = CompletionRequest(prefix="def f():\n    ", suffix="")
    assert finish_completion("    return 1", req) == "return 1"
    assert finish_completion("return 1", req) == "return 1"


def test_a_completion_cut_before_any_text_is_not_worth_caching():
    assert not worth_caching("time", "")
    assert worth_caching("time", "x = 1")
    assert worth_caching("eos", "")
    assert not worth_caching("error", "partial")
    assert not worth_caching("cancelled", "x")


@pytest.mark.parametrize("fim", [True, False])
def test_a_prefix_over_budget_keeps_its_start_while_the_user_types(models, fim):
    """Cut to exactly the budget, the prompt's first token would move with every typed token and
    the KV cache would be read again in full at each keystroke: the cut moves in steps."""
    m = LlamaModel.load(ModelSettings(path=models.fim if fim else models.demo, ctx=512))
    try:
        body = "".join(f"value_{i} = compute({i}, scale=2)\n" for i in range(300))
        prompts = [build_fim_prompt(m, CompletionRequest(prefix=body + typed, suffix="\nend\n"), 64).tokens
                   for typed in ("total = ", "total = value_1 + ", "total = value_1 + value_2 * ")]
        assert all(len(p) <= m.n_ctx - 64 for p in prompts)
        head = prompts[0][:64]
        assert all(p[:64] == head for p in prompts)  # one start: the cache keeps it
        text = m.detokenize(prompts[-1])
        assert "value_299 = compute(299" in text and "value_0 = " not in text  # the end is kept
    finally:
        m.close()
