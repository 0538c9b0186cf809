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
    """Greedy groups of lexicographically adjacent sequences that share a long enough prefix.

    A sequence joins the current group when the shared prefix stays at least half of its
    length (so packing always saves work) and the row stays under `max_len` tokens.
    """
    order = sorted(range(len(seqs)), key=lambda i: seqs[i])
    groups: list[tuple[int, list[int]]] = []
    for i in order:
        s = seqs[i]
        if groups:
            plen, members = groups[-1]
            shared = min(plen, lcp(seqs[members[0]], s))
            packed_len = shared + sum(len(seqs[j]) - shared for j in members) + len(s) - shared
            if shared >= min_shared and 2 * shared >= len(s) and packed_len <= max_len:
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
