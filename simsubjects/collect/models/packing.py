"""Prefix packing for exact scoring: sequences that share a prefix are encoded in one row.

Many prompts of a study differ only near the end (the Ultimatum Game's 11 offers for one name
pair share the first ~125 tokens). A group of such sequences becomes one packed row: the shared
prefix once, then each sequence's own remainder, with an attention mask that lets a remainder
see the prefix and itself only, and position ids that continue the prefix for every remainder.
The model then computes exactly what it computes for each sequence alone, with fewer tokens.
"""

from __future__ import annotations

from dataclasses import dataclass


def lcp(a, b) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class Packed:
    tokens: list[int]
    positions: list[int]  # position id of each packed token
    segment: list[int]  # -1: shared prefix; k: the k-th member's remainder
    members: list[int]  # indices of the packed sequences
    offsets: list[int]  # where each member's remainder starts in the row
    prefix: int  # length of the shared prefix

    def where(self, k: int, pos: int) -> int:
        """Row index of position `pos` of member k's own sequence."""
        return pos if pos < self.prefix else self.offsets[k] + pos - self.prefix


def pack(seqs: list[tuple[int, ...]], max_len: int = 2048, min_shared: int = 8) -> list[Packed]:
    """Greedy groups of lexicographically adjacent sequences that share a prefix.

    A sequence joins the current group when that encodes fewer tokens than leaving it alone (the
    group's shared prefix may shrink, which lengthens every member's remainder), the shared prefix
    has at least `min_shared` tokens, and the row stays within `max_len` tokens.
    """
    order = sorted(range(len(seqs)), key=lambda i: seqs[i])
    groups: list[tuple[int, list[int]]] = []
    for i in order:
        s = seqs[i]
        if groups:
            plen, members = groups[-1]
            shared = min(plen, lcp(seqs[members[0]], s))
            total = sum(len(seqs[j]) for j in members)
            now = plen + total - plen * len(members)
            packed_len = shared + total + len(s) - shared * (len(members) + 1)
            if shared >= min_shared and packed_len < now + len(s) and packed_len <= max_len:
                groups[-1] = (shared, members + [i])
                continue
        groups.append((len(s), [i]))
    out = []
    for plen, members in groups:
        if len(members) == 1:
            plen = len(seqs[members[0]])
        first = seqs[members[0]]
        tokens, positions, segment, offsets = list(first[:plen]), list(range(plen)), [-1] * plen, []
        for k, j in enumerate(members):
            rest = seqs[j][plen:]
            offsets.append(len(tokens))
            tokens += rest
            positions += range(plen, plen + len(rest))
            segment += [k] * len(rest)
        out.append(Packed(tokens, positions, segment, members, offsets, plen))
    return out


def fill(rows: list[Packed], capacity: int) -> list[list[Packed]]:
    """Packed rows placed side by side in lines of at most `capacity` tokens (first fit, longest
    first), so that short rows share a line instead of being padded to the longest one. Within a
    line, a block mask keeps each packed row to itself."""
    lines: list[list] = []  # [tokens used, rows]
    for row in sorted(rows, key=lambda r: -len(r.tokens)):
        for line in lines:
            if line[0] + len(row.tokens) <= capacity:
                line[0] += len(row.tokens)
                line[1].append(row)
                break
        else:
            lines.append([len(row.tokens), [row]])
    return [line for _, line in lines]
