"""`specterm bench --replay FILE` through the installed script: the real app types a small file
with the demo model. The figures depend on the machine; the report's shape (every key, numbers,
never null), the typed buffer equalling the file and no vanished suggestion are asserted."""

from __future__ import annotations

from pathlib import Path

SMALL = "def add_one(x):\n    return x + 1\n\n\ndef add_two(x):\n    return x + 2\n"
LATENCIES = ("first_ghost_ms", "typing_ms", "complete_ms", "after_accept_ms", "after_jump_ms", "person_ms",
             "person_look_ms")


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def test_replay_of_a_small_file_reports_every_key_with_numbers(bench, tmp_path: Path):
    path = tmp_path / "small.py"
    path.write_text(SMALL)
    r = bench("--replay", str(path), "--cps", "30", "--json", "--max-tokens", "16", timeout=600)
    data = r.json()
    for key in LATENCIES:
        assert set(data[key]) == {"p50", "p95"} and all(_number(v) for v in data[key].values())
        count = data[key.replace("_ms", "_count")]
        assert isinstance(count, int) and count >= 0
        if count == 0:  # no sample: 0, and the count says so
            assert data[key] == {"p50": 0, "p95": 0}
        assert data[key]["p50"] <= data[key]["p95"]
    for key in ("accepted_chars_share", "in_app_vs_headless", "served_share", "wasted_tokens",
                "in_app_tokens_per_s", "headless_tokens_per_s"):
        assert _number(data[key]) and data[key] >= 0, key
    assert 0 <= data["accepted_chars_share"] <= 1
    # the headless re-run runs the app's requests in order up to the last compared one
    assert 1 <= data["compared_requests"] <= data["headless_reruns"] <= (
        data["requests"] + data["prefetches"] + data["alternatives"])  # every kind the app ran
    assert _number(data["in_app_drafted"]) and _number(data["headless_drafted"])
    assert data["text_matches"] is True  # typed and accepted text is exactly the file
    # (auto-indent aside, and the last line break: the open line the region left has it)
    assert data["typed_chars"] + data["accepted_chars"] >= len(SMALL) - 1 - 8
    assert data["vanished"] == 0, data["vanished_examples"]
    assert data["regions"] == 1 and data["file_chars"] == len(SMALL)  # a small file: all of it
    assert data["pauses"] >= 1 and data["requests"] >= 1
    assert data["jumps"] == 1 and data["after_jump_count"] <= 1  # one region: one jump to its start
    # every accept is timed or counted without a next one; probes are accepts the file did not want
    assert 0 <= data["accept_probes"] <= data["after_accept_count"] + data["accepts_without_next"]
    assert data["suggestions_accepted"] + data["accept_probes"] >= data["after_accept_count"]
    assert data["typing_ms"] == data["first_ghost_ms"]  # the pauses inside continuous typing
    # the person's path: each of the file's 3 writable lines visited once, typing at once or after a look
    assert data["person_spots"] + data["person_look_spots"] == 3
    assert data["person_count"] <= data["person_spots"] and data["person_look_count"] <= data["person_look_spots"]
    assert 0 <= data["person_within_600ms"] <= data["person_count"]
    assert "first suggestion after a pause" in r.err  # the table goes to stderr with --json
    assert "a person's path" in r.err


def _clean_error(r, needle: str) -> None:
    assert r.rc == 2, (r.rc, r.out, r.err)
    assert "Traceback" not in r.err and r.out == ""
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert needle in r.err, r.err


def test_replay_bad_input_exits_2_with_one_line(bench, tmp_path: Path):
    _clean_error(bench("--replay", str(tmp_path / "missing.py")), "no such file")
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 4)
    _clean_error(bench("--replay", str(tmp_path / "blob.bin")), "looks like a binary file")
    (tmp_path / "nul.py").write_bytes(b"x = 1\x00\n")
    _clean_error(bench("--replay", str(tmp_path / "nul.py")), "looks like a binary file")
    (tmp_path / "late-nul.py").write_bytes(b"x = 1\n" * 2000 + b"\x00\n")  # past the editor's binary sniff
    _clean_error(bench("--replay", str(tmp_path / "late-nul.py")), "not a text file")
    (tmp_path / "empty.py").write_text("\n\n")
    _clean_error(bench("--replay", str(tmp_path / "empty.py")), "nothing to type")
    (tmp_path / "ok.py").write_text(SMALL)
    _clean_error(bench("--replay", str(tmp_path / "ok.py"), "--cps", "0"), "must be above 0")
    _clean_error(bench("--replay", str(tmp_path / "ok.py"), "--cps", "fast"), "characters a second")
    _clean_error(bench("--cps", "5"), "go with --replay")
    _clean_error(bench("--replay", str(tmp_path / "ok.py"), str(tmp_path)), "runs alone")


def test_a_persons_places_are_lines_to_write_spread_over_the_file_in_no_order():
    from specterm.tui.bench.replay import PERSON_CHARS, pick_spots

    text = "".join(f"def function_{i}(value):\n    return value * {i}\n\n" for i in range(300))
    lines = text.split("\n")
    spots = pick_spots(text, 20, seed=3)
    assert len(spots) == len(set(spots)) == 20
    assert spots != sorted(spots)  # visited in no order, as a person moves about
    assert all(i >= 1 and len(lines[i].strip()) >= PERSON_CHARS for i in spots)
    assert max(spots) - min(spots) > len(lines) // 2  # spread over the file
    assert pick_spots(text, 20, seed=3) == spots  # the seed decides
    assert pick_spots("x\n\n", 10) == [] and pick_spots("", 10) == []


def test_regions_are_whole_lines_spread_over_the_file_within_the_budget():
    from specterm.tui.bench.replay import BUDGET_S, DEFAULT_CPS, TYPING_SHARE, ReplayOptions, pick_regions

    text = "".join(f"def function_{i}(value):\n    return value * {i}\n\n" for i in range(600))[:25_000]
    regions = pick_regions(text, ReplayOptions())
    assert len(regions) > 1
    assert sum(r.end - r.start for r in regions) <= DEFAULT_CPS * BUDGET_S * TYPING_SHARE
    for a, b in zip(regions, regions[1:]):
        assert a.end <= b.start  # in order, never overlapping
    assert regions[-1].start > len(text) // 2  # spread over the file, not bunched at the top
    for r in regions:
        assert r.start == 0 or text[r.start - 1] == "\n"  # whole lines
        assert r.end == len(text) or text[r.end - 1] == "\n"
    assert pick_regions(text, ReplayOptions(full=True)) == [type(regions[0])(0, len(text))]
    assert pick_regions(text, ReplayOptions(seed=1)) != regions  # the seed picks other lines


def test_each_region_leaves_an_open_line_and_typing_it_back_gives_the_file():
    """The copy keeps an empty line where each region was, so the regions are typed as new code
    is written, with nothing after the cursor on its line (where suggestions are asked for)."""
    from specterm.tui.bench.replay import ReplayOptions, open_lines, pick_regions

    text = "".join(f"def function_{i}(value):\n    return value * {i}\n\n" for i in range(600))[:25_000]
    regions = pick_regions(text, ReplayOptions())
    copy = open_lines(text, regions)
    assert len(copy) == len(text) - sum(r.typed_end(text) - r.start for r in regions)
    rebuilt = copy
    for r in regions:  # type each region back, in order: the regions before it are the file's again
        at = r.start
        line_after = rebuilt[at:].split("\n", 1)[0]
        assert line_after == "" and (at == 0 or rebuilt[at - 1] == "\n")  # an empty line, the cursor at its start
        rebuilt = rebuilt[:at] + text[r.start:r.typed_end(text)] + rebuilt[at:]
    assert rebuilt == text
    # a region at the end of a file without a last line break is typed whole
    tail = "x = 1\ny = 2"
    last = type(regions[0])(6, len(tail))
    assert last.typed_end(tail) == len(tail) and open_lines(tail, [last]) == "x = 1\n"
