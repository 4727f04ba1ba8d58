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


def rename_region() -> list[int]:
    """A region that uses the name 77 three times (a rename's original)."""
    return [10, 11, 77, 12, 13, 14, 15, 77, 16, 17, 18, 19, 20, 77, 21, 22, 23]


def test_a_rename_is_learned_and_drafted_at_the_next_use():
    """The rewrite wrote 88 where the original has 77: the copy then drafts 88 at the next 77 and
    goes on copying after it, its agreement counting the replaced name as agreeing."""
    region = rename_region()
    prompt = HEAD + region + FENCE
    f = OriginalFollower(Prediction(prompt, len(HEAD), len(HEAD) + len(region) + 1), len(prompt))
    history = prompt + [10, 11]
    assert f.propose(history, 3) == ([77, 12, 13], 2)
    history += [88]  # renamed
    assert f.propose(history, 3) == ([], 0)  # a name not in the original: lost for now
    history += [12]
    tokens, match = f.propose(history, 8)
    assert tokens == [13, 14, 15, 88, 16, 17, 18, 19]  # the next use drafted renamed
    assert match == 1  # (a change seen once is not yet agreement)
    history += [13, 14, 15, 88]  # the target renamed it too: the copy follows on after it
    assert f.propose(history, 3) == ([16, 17, 18], 8)
    assert f.replacements[(77,)].held == 2


def test_a_replacement_the_target_does_not_repeat_is_dropped():
    """Renamed once, then kept: the replacement failed as often as it held, and once it fails
    more the copy drafts the original again."""
    region = rename_region()
    prompt = HEAD + region + FENCE
    f = OriginalFollower(Prediction(prompt, len(HEAD), len(HEAD) + len(region) + 1), len(prompt))
    history = prompt + [10, 11, 88, 12]
    f.propose(prompt + [10, 11], 3)
    f.propose(prompt + [10, 11, 88], 3)
    assert f.propose(history, 4)[0] == [13, 14, 15, 88]
    history += [13, 14, 15, 77]  # not renamed here
    tokens, _ = f.propose(history, 3)
    assert tokens == [16, 17, 18]
    r = f.replacements[(77,)]
    assert (r.held, r.failed) == (1, 1) and r.trusted
    history += [16, 17, 18, 19, 20]
    r.failed += 1  # (as a second kept use would count it)
    assert f.propose(history, 3)[0] == [77, 21, 22]  # no longer trusted: the original is drafted


def test_a_long_rewrite_is_not_learned_as_a_replacement():
    region = rename_region()
    prompt = HEAD + region + FENCE
    f = OriginalFollower(Prediction(prompt, len(HEAD), len(HEAD) + len(region) + 1), len(prompt))
    history = prompt + [10]
    f.propose(history, 2)
    history += [901, 902, 903, 904, 905, 906, 907, 908, 909, 910]  # 11 77 rewritten as 10 new tokens
    f.propose(history, 2)
    history += [12, 13]
    f.propose(history, 2)
    assert f.replacements == {}


def test_a_weak_copy_yields_to_a_free_guess_that_agrees_longer():
    """Where the rewrite left the region for text found elsewhere in the prompt and touches the
    original again by one token, the copy's guess rests on that one token; prompt lookup's on
    all the text it followed. The longer agreement drafts; a copy that agrees for long is kept."""
    import numpy as np

    from specterm.engine.drafters import LookupDrafter
    from specterm.engine.edit_drafter import WEAK_AGREEMENT, EditDrafter
    from specterm.engine.settings import SamplingSettings

    other = [500, 501, 502, 503, 110, 600, 601, 602, 603]  # code before the region, in the prompt
    prompt = HEAD + other + REGION + FENCE + [5, 6, 7]
    start = len(HEAD) + len(other)
    inner = LookupDrafter()
    drafter = EditDrafter(OriginalFollower(Prediction(prompt, start, start + len(REGION) + len(FENCE)), len(prompt)),
                          inner)
    drafter.begin(prompt)
    args = (SamplingSettings(temperature=0.0), np.random.default_rng(0))

    copying = prompt + REGION[:10]
    strong = drafter.draft(copying, 4, *args)
    assert strong.tokens == REGION[10:14] and strong.sources == ["original"] * 4
    assert strong.match >= WEAK_AGREEMENT

    left = copying + other[:5]  # the rewrite writes the other code, which reaches token 110
    assert drafter.follower.propose(left, 4) == (REGION[11:15], 1)  # the copy: one token agrees
    weak = drafter.draft(left, 4, *args)
    assert weak.tokens == other[5:9] and weak.sources != ["original"] * 4
    assert weak.match >= len(other[:5])
