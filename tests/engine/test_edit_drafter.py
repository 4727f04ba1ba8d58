"""The edit drafter's follower on token lists: it copies the original while the rewrite agrees,
and finds its place again after an inserted, a deleted or a replaced stretch."""

from __future__ import annotations

from specterm.engine.edit_drafter import NEAR, OriginalFollower, Prediction

HEAD = [1, 2, 3]  # the prompt before the region (its opening fence, say)
FENCE = [9]  # the closing fence after it
REGION = list(range(100, 140))
PROMPT = HEAD + REGION + FENCE + [5, 6, 7]  # ... the instruction, the answer's start


def follower() -> OriginalFollower:
    return OriginalFollower(Prediction(PROMPT, len(HEAD), len(HEAD) + len(REGION) + len(FENCE)), len(PROMPT))


def test_copies_the_original_while_the_rewrite_agrees():
    f = follower()
    history = PROMPT + [100]
    tokens, match = f.propose(history, 5)
    assert tokens == [101, 102, 103, 104, 105]
    assert match == 1
    history += [101, 102, 103]  # three of them accepted, then the target's own 104
    history += [104]
    assert f.propose(history, 4) == ([105, 106, 107, 108], 5)
    assert f.pointer == 5


def test_copy_runs_to_the_closing_fence_and_stops_there():
    f = follower()
    history = PROMPT + REGION[:-1]
    assert f.propose(history, 8) == ([REGION[-1]] + FENCE, 32)
    assert f.propose(history + [REGION[-1]] + FENCE, 8)[0] == []


def test_finds_its_place_after_an_inserted_stretch():
    f = follower()
    history = PROMPT + REGION[:10]
    assert f.propose(history, 3)[0] == [110, 111, 112]
    history += [900, 901, 902]  # the rewrite inserts three new tokens
    assert f.propose(history, 3) == ([], 0)
    assert f.pointer is None  # lost while the new text has nothing to copy
    history += [110]  # and goes on with the original
    assert f.propose(history, 3) == ([111, 112, 113], 1)
    assert f.pointer == 11


def test_finds_its_place_after_a_deleted_stretch():
    f = follower()
    history = PROMPT + REGION[:10]
    f.propose(history, 3)
    history += [120]  # 110..119 deleted: one agreeing token this far from the pointer is no place yet
    assert f.propose(history, 3) == ([], 0)
    history += [121]
    assert f.propose(history, 3) == ([122, 123, 124], 2)
    history += [122, 123]
    assert f.propose(history, 2) == ([124, 125], 4)


def test_a_replaced_token_is_skipped_over():
    f = follower()
    history = PROMPT + REGION[:5] + [777]  # 105 renamed
    assert f.propose(history, 3) == ([], 0)
    history += [106]
    assert f.propose(history, 3) == ([107, 108, 109], 1)


def test_far_jumps_need_three_agreeing_tokens():
    region = list(range(100, 100 + 3 * NEAR))
    prompt = HEAD + region + FENCE
    f = OriginalFollower(Prediction(prompt, len(HEAD), len(HEAD) + len(region) + 1), len(prompt))
    far = region[2 * NEAR + 20:]  # the rewrite drops most of the region
    history = prompt + region[:2] + far[:1]
    assert f.propose(history, 2) == ([], 0)  # one agreeing token far away: noise
    history += far[1:2]
    assert f.propose(history, 2) == ([], 0)
    history += far[2:3]
    assert f.propose(history, 2) == (far[3:5], 3)


def test_repeated_code_prefers_the_place_near_the_pointer():
    # the original has the same line twice; after a change in the second, the follower must go on
    # in the second, not jump back to the first
    line = [50, 51, 52, 53]
    region = [10] + line + [11, 12] + line + [13]
    prompt = HEAD + region + FENCE
    f = OriginalFollower(Prediction(prompt, len(HEAD), len(HEAD) + len(region) + 1), len(prompt))
    history = prompt + region[:9]  # up to the second line's 51
    assert f.propose(history, 2) == ([52, 53], 9)
    history += [99, 53]  # 52 replaced
    assert f.propose(history, 2) == ([13, 9], 1)
