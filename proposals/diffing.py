"""A line diff whose cost is bounded whatever the two texts are (both are an author's to choose).

`difflib.unified_diff` is roughly quadratic in the lines of the files: two 512 KiB files took 45 s.
This one compares lines by number (each distinct line is hashed once), strips the common head and
tail, then anchors on lines that occur exactly once on both sides and are in the same order
(patience diff: a longest increasing subsequence, O(k log k)), and does the same between anchors for
at most MAX_LEVELS levels. What is left between anchors is matched by difflib only when it is small
(SMALL_REGION line pairs), else it is shown as removed and added. The total work is
O(MAX_LEVELS · n log n + √SMALL_REGION · n) for n lines, so a file's diff costs time in its size.
Sizes are the caller's to cap (proposals.diffs).
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections.abc import Iterator

MAX_LEVELS = 8
SMALL_REGION = 10_000


def _unique_anchors(a: list[int], b: list[int], alo: int, ahi: int, blo: int, bhi: int) -> list[tuple[int, int]]:
    """Pairs (i, j) with a[i] == b[j] for lines unique in both ranges, the longest run in the same order."""
    seen_a: dict[int, int] = {}
    for i in range(alo, ahi):
        seen_a[a[i]] = -1 if a[i] in seen_a else i
    seen_b: dict[int, int] = {}
    for j in range(blo, bhi):
        line = b[j]
        if seen_a.get(line, -1) >= 0:
            seen_b[line] = -1 if line in seen_b else j
    pairs = sorted((seen_a[line], j) for line, j in seen_b.items() if j >= 0)
    # Longest increasing subsequence of the b positions (patience sorting, with back links).
    tails: list[int] = []  # b position ending each pile
    tail_index: list[int] = []  # index into pairs of that pile's top
    back = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pile = bisect_left(tails, j)
        if pile == len(tails):
            tails.append(j)
            tail_index.append(k)
        else:
            tails[pile] = j
            tail_index[pile] = k
        back[k] = tail_index[pile - 1] if pile > 0 else -1
    out: list[tuple[int, int]] = []
    k = tail_index[-1] if tail_index else -1
    while k >= 0:
        out.append(pairs[k])
        k = back[k]
    out.reverse()
    return out


def _match(a: list[int], b: list[int], alo: int, ahi: int, blo: int, bhi: int, level: int,
           out: list[tuple[int, int]]) -> None:
    while alo < ahi and blo < bhi and a[alo] == b[blo]:
        out.append((alo, blo))
        alo, blo = alo + 1, blo + 1
    tail = []
    while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
        ahi, bhi = ahi - 1, bhi - 1
        tail.append((ahi, bhi))
    if alo < ahi and blo < bhi:
        anchors = _unique_anchors(a, b, alo, ahi, blo, bhi) if level < MAX_LEVELS else []
        if anchors:
            i0, j0 = alo, blo
            for i, j in anchors:
                _match(a, b, i0, i, j0, j, level + 1, out)
                out.append((i, j))
                i0, j0 = i + 1, j + 1
            _match(a, b, i0, ahi, j0, bhi, level + 1, out)
        elif (ahi - alo) * (bhi - blo) <= SMALL_REGION:
            matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            for block in matcher.get_matching_blocks():
                out.extend((alo + block.a + n, blo + block.b + n) for n in range(block.size))
    out.extend(reversed(tail))


def matching_blocks(old: list[str], new: list[str]) -> list[tuple[int, int, int]]:
    """difflib-style matching blocks (i, j, n) of two line lists, ending with (len(old), len(new), 0)."""
    ids: dict[str, int] = {}
    a = [ids.setdefault(line, len(ids)) for line in old]
    b = [ids.setdefault(line, len(ids)) for line in new]
    pairs: list[tuple[int, int]] = []
    _match(a, b, 0, len(a), 0, len(b), 0, pairs)
    blocks: list[tuple[int, int, int]] = []
    for i, j in pairs:
        if blocks and blocks[-1][0] + blocks[-1][2] == i and blocks[-1][1] + blocks[-1][2] == j:
            blocks[-1] = (blocks[-1][0], blocks[-1][1], blocks[-1][2] + 1)
        else:
            blocks.append((i, j, 1))
    blocks.append((len(a), len(b), 0))
    return blocks


class _Matched(difflib.SequenceMatcher):
    """A SequenceMatcher told its matching blocks, for difflib's grouping into hunks."""

    def __init__(self, old: list[str], new: list[str]) -> None:
        super().__init__(None, old, new, autojunk=False)
        self.matching_blocks = [difflib.Match(*block) for block in matching_blocks(old, new)]

    def set_seq2(self, b: object) -> None:  # skip difflib's index of b: never used here
        self.b = b
        self.matching_blocks = self.opcodes = None  # type: ignore[assignment]


def _span(start: int, length: int) -> str:
    return f"{start + 1 if length else start}" + ("" if length == 1 else f",{length}")


def unified_diff(old: list[str], new: list[str], fromfile: str, tofile: str, context: int = 3) -> Iterator[str]:
    """Lines of a unified diff (as `difflib.unified_diff`, lines keeping their ends) in bounded time."""
    started = False
    for group in _Matched(old, new).get_grouped_opcodes(context):
        if not started:
            started = True
            yield f"--- {fromfile}\n"
            yield f"+++ {tofile}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_span(first[1], last[2] - first[1])} +{_span(first[3], last[4] - first[3])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in old[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in old[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in new[j1:j2])
