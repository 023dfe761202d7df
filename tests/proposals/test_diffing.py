"""The bounded line diff of the review page (proposals/diffing.py): a correct diff (applying it gives the
new text; difflib's output where both find the same matches), and no input shape makes it quadratic."""

import difflib
import random

import pytest

from proposals.diffing import SMALL_REGION, _Matched, unified_diff


def applied(old: list[str], new: list[str]) -> list[str]:
    out: list[str] = []
    for tag, i1, i2, j1, j2 in _Matched(old, new).get_opcodes():
        if tag == "equal":
            assert old[i1:i2] == new[j1:j2]
            out += old[i1:i2]
        else:
            out += new[j1:j2]
    return out


def test_random_edits_diff_to_exactly_the_new_text():
    rng = random.Random(31)
    for _ in range(400):
        old = [f"{rng.randint(0, 9)}\n" for _ in range(rng.randint(0, 80))]
        new = list(old)
        for _ in range(rng.randint(0, 12)):
            spot = rng.randint(0, len(new))
            if new and rng.random() < 0.5:
                del new[min(spot, len(new) - 1)]
            else:
                new.insert(spot, f"{rng.randint(0, 15)}\n")
        assert applied(old, new) == new


def test_a_small_edit_of_source_reads_as_difflib_writes_it():
    old = [f"line {n}\n" for n in range(400)]
    new = list(old)
    new[10] = "changed\n"
    del new[200:205]
    new.insert(300, "inserted\n")
    ours = "".join(unified_diff(old, new, "a/x.py", "b/x.py"))
    assert ours == "".join(difflib.unified_diff(old, new, "a/x.py", "b/x.py"))
    assert "".join(unified_diff(old, old, "a", "b")) == ""


@pytest.mark.parametrize("shape", ["reversed", "alternating", "few_distinct", "all_distinct"])
def test_hostile_shapes_of_512_kib_stay_fast(shape):
    """Checked by what difflib is asked, not by seconds: difflib (quadratic) only ever sees regions of at
    most SMALL_REGION line pairs; everything else is linear-time anchoring."""
    n = 512 * 1024 // 8
    rng = random.Random(7)
    old, new = {
        "reversed": ([f"{i:07d}\n" for i in range(n)], [f"{i:07d}\n" for i in reversed(range(n))]),
        "alternating": (["a\n", "b\n"] * (n // 2), ["b\n", "a\n"] * (n // 2)),
        "few_distinct": ([f"{rng.randint(0, 40)}\n" for _ in range(n)], [f"{rng.randint(0, 40)}\n" for _ in range(n)]),
        "all_distinct": ([f"{i:07d}\n" for i in range(n)], [f"{i:07d}\n" for i in range(n) if i % 7]),
    }[shape]
    regions: list[int] = []
    real = difflib.SequenceMatcher.find_longest_match

    def counted(self, alo=0, ahi=None, blo=0, bhi=None):  # noqa: ANN001, ANN202
        regions.append(((len(self.a) if ahi is None else ahi) - alo) * ((len(self.b) if bhi is None else bhi) - blo))
        return real(self, alo, ahi, blo, bhi)

    difflib.SequenceMatcher.find_longest_match = counted  # type: ignore[method-assign]
    try:
        lines = list(unified_diff(old, new, "a", "b"))
    finally:
        difflib.SequenceMatcher.find_longest_match = real  # type: ignore[method-assign]
    assert applied(old, new) == new
    assert lines and max(regions, default=0) <= SMALL_REGION
