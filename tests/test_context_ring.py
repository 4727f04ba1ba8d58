"""The context ring (tui/context_ring.py): picks by similarity, evicts by similarity, stays bounded."""

from __future__ import annotations

from specterm.tui.context_ring import CHUNK_LINES, ContextRing, line_set, similarity


def code(name: str, n: int = 20) -> list[str]:
    return [f"def {name}_{i}(x):" if i % 2 == 0 else f"    return {name}(x) + {i}" for i in range(n)]


def test_similarity_is_the_share_of_common_lines():
    a, b = line_set(["x = 1", "y = 2", ""]), line_set(["x = 1", "  z = 3"])
    assert similarity(a, b) == 2 * 1 / 4
    assert similarity(a, a) == 1.0 and similarity(a, frozenset()) == 0.0


def test_the_ring_picks_the_chunk_most_like_the_cursor_lines_in_ring_order():
    ring = ContextRing()
    assert ring.add("/p/a.py", 0, code("alpha"))
    assert ring.add("/p/b.py", 0, code("beta"))
    assert ring.add("/p/c.py", 0, code("gamma"))
    around = code("beta")[:6] + ["unrelated = True"]
    (best,) = ring.pick(around, 1)
    assert best.path == "/p/b.py" and "return beta(x) + 1" in best.text
    two = ring.pick(code("gamma")[:4] + code("alpha")[:2], 2)
    assert [c.path for c in two] == ["/p/a.py", "/p/c.py"]  # ring order (oldest first), not score order


def test_a_similar_chunk_replaces_the_old_one_and_the_ring_stays_bounded():
    ring = ContextRing(size=4)
    ring.add("/p/a.py", 0, code("alpha", 40))
    edited = code("alpha", 40)
    edited[3] = "    return alpha(x) + 333"  # one line changed: 39 of 40 lines in common
    assert ring.add("/p/a.py", 0, edited)
    assert len(ring) == 1 and "333" in ring.chunks[0].text  # the new one replaced the old
    assert not ring.add("/p/a.py", 0, edited)  # the same lines again change nothing
    version = ring.version
    for i in range(10):
        ring.add(f"/p/f{i}.py", 0, code(f"name{i}"))
    assert len(ring) == 4 and ring.version == version + 10
    assert [c.path for c in ring.chunks] == [f"/p/f{i}.py" for i in range(6, 10)]  # the oldest went
    assert not ring.add("/p/tiny.py", 0, ["", "x", ""])  # too little to be worth room


def test_chunks_are_taken_around_a_row_and_the_requests_own_rows_are_left_out():
    ring = ContextRing()
    lines = [f"line_{i} = {i}" for i in range(500)]
    ring.add_around("/p/a.py", lines, 300)
    chunk = ring.chunks[0]
    assert chunk.start == 300 - CHUNK_LINES // 2 and chunk.text.startswith(f"line_{chunk.start} =")
    assert chunk.text.count("\n") == CHUNK_LINES
    ring.add_around("/p/a.py", lines, 0)  # clamped at the start
    assert ring.chunks[1].start == 0
    picked = ring.pick(lines[290:300], 5, path="/p/a.py", rows=(200, 420))
    assert [c.text for c in picked] == [ring.chunks[1].text]  # the chunk at 268 is in the request
    assert len(ring.pick(lines[290:300], 5, path="/p/other.py")) == 2


def test_picks_held_from_the_last_request_keep_their_places_and_new_ones_follow():
    ring = ContextRing()
    for name in ("alpha", "beta", "gamma", "delta"):
        assert ring.add(f"/p/{name}.py", 0, code(name))
    first = ring.pick(code("gamma")[:4] + code("beta")[:4], 2)
    assert [c.path for c in first] == ["/p/beta.py", "/p/gamma.py"]
    # The cursor's lines now favour alpha over beta: beta goes, gamma keeps its place at the
    # front (the engine reuses what it read of it), alpha follows though it is older in the ring.
    moved = code("gamma")[:4] + code("alpha")[:4]
    again = ring.pick(moved, 2, held=first)
    assert [c.path for c in again] == ["/p/gamma.py", "/p/alpha.py"]
    assert [c.path for c in ring.pick(moved, 2)] == ["/p/alpha.py", "/p/gamma.py"]  # without: ring order
    # The same picks as before come back in the order they were held.
    assert ring.pick(moved, 2, held=again) == again
    # A held chunk the ring no longer has is not picked again.
    assert ring.add("/p/gamma.py", 0, code("gamma")[:-1] + ["    return 0"])  # replaces the old gamma
    third = ring.pick(moved, 2, held=again)
    assert [c.path for c in third] == ["/p/alpha.py", "/p/gamma.py"] and "return 0" in third[1].text
