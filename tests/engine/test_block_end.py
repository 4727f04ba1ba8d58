"""Issue 33 item 7: an inline completion ends with its block. Below a module-level function, a new
one-line `def` header took a docstring, a `return`, a blank line and then another `def` header with
no body. A new definition at the block's level (or above it) after a blank line ends the block, in
the one place the rules live (engine/completion.py), for the stop check and the finished text."""

from __future__ import annotations

import pytest

from specterm.engine import CompletionRequest
from specterm.engine.completion import InlineStops, finish_completion, live_completion

ABOVE = "def area(w, h):\n    return w * h\n\n\n"
RUN_ON = '\n    """Twice x."""\n    return 2 * x\n\ndef triple(x):'
BODY = '\n    """Twice x."""\n    return 2 * x'


def header_request(header: str = "def double(x):", **kw) -> CompletionRequest:
    return CompletionRequest(prefix=ABOVE + header, suffix="\n", max_lines=8, **kw)


def test_a_new_top_level_def_after_a_blank_line_ends_the_suggestion():
    req = header_request()
    assert finish_completion(RUN_ON, req) == BODY
    assert finish_completion(RUN_ON + "\n    pass", req) == BODY
    # a class, a decorator, an async def: all start the next definition
    for nxt in ("class Triple:", "@cache", "async def triple(x):"):
        assert finish_completion(BODY + "\n\n" + nxt, req) == BODY, nxt
    # the live ghost follows the same rule: what it shows is never cut later
    assert live_completion(RUN_ON + "\n", req) == BODY


def test_the_stop_check_ends_generation_at_the_same_line():
    req = header_request()
    stops = InlineStops(req)
    assert stops(BODY + "\n\n") is None  # (a blank line alone ends nothing)
    assert stops(BODY + "\n\ndef tri") is None  # (the header line is not complete yet)
    assert stops(RUN_ON + "\n") == "stop"


@pytest.mark.parametrize("prefix, text, want", [
    # a method header in a class: the next method at the same level after a blank line ends it
    ("class A:\n    def f(self):", "\n        return 1\n\n    def g(self):\n        return 2",
     "\n        return 1"),
    # at the end of a line in a body: a sibling definition (same level) after a blank line ends it
    ("def f():\n    x = 1", "\n    y = 2\n\n    def inner():\n        pass", "\n    y = 2"),
    # a blank module-level line: the first definition is the suggestion, the second ends it
    ("import os\n\n", "def f():\n    return 1\n\n\ndef g():\n    return 2", "def f():\n    return 1"),
])
def test_same_level_definitions_after_a_blank_line_end_the_block(prefix, text, want):
    req = CompletionRequest(prefix=prefix, suffix="", max_lines=8)
    assert finish_completion(text, req) == want
    stops = InlineStops(req)
    assert stops(text + "\n") == "stop"


@pytest.mark.parametrize("prefix, text", [
    # deeper definitions belong to the block: a class's methods after its docstring
    ("class A:", '\n    """An A."""\n\n    def f(self):\n        return 1'),
    # a nested function in the body of the function being written
    ("def outer():", "\n    x = 1\n\n    def inner():\n        return x"),
    # no blank line before it: a decorated definition is one definition
    ("", "@cache\ndef f():\n    return 1"),
    # other code at the same level after a blank line is not a new definition
    ("def f():\n    x = 1", "\n    y = 2\n\n    return x + y"),
])
def test_what_belongs_to_the_block_stays(prefix, text):
    req = CompletionRequest(prefix=prefix, suffix="", max_lines=8)
    assert finish_completion(text, req) == text
    assert InlineStops(req)(text + "\n") is None
