"""Prefix packing for exact scoring: sequences that share prefixes are encoded in one row, as a trie.

Many prompts of a study differ only near the end (the Ultimatum Game's 11 offers for one name
pair share the first ~125 tokens; the k! orderings of a question's options share the instruction
and the question, and orderings that start with the same options share those lines too). A group
of such sequences becomes one packed row holding their token trie: every shared prefix once, each
token attending to its ancestors in the trie only, with the position id it has in its own
sequence. The model then computes exactly what it computes for each sequence alone (tree
attention, as in SpecInfer, Miao et al. 2024), with fewer tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def lcp(a, b) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class Packed:
    tokens: list[int]
    positions: list[int]  # position id of each packed token (its depth in the trie)
    parents: list[int]  # row index of each token's parent in the trie (-1: the first token)
    members: list[int]  # indices of the packed sequences
    paths: list[list[int]]  # per member: the row index of each position of its own sequence
    _anc: np.ndarray | None = field(default=None, repr=False, compare=False)

    @classmethod
    def alone(cls, seq, member: int) -> "Packed":
        n = len(seq)
        return cls(list(seq), list(range(n)), list(range(-1, n - 1)), [member], [list(range(n))])

    def where(self, k: int, pos: int) -> int:
        """Row index of position `pos` of member k's own sequence."""
        return self.paths[k][pos]

    def ancestors(self) -> np.ndarray:
        """[i, j]: token i attends to token j (j is i or an ancestor of i in the trie)."""
        if self._anc is None and len(self.members) == 1:  # one sequence: plain causal attention
            self._anc = np.tri(len(self.tokens), dtype=bool)
        if self._anc is None:
            n = len(self.tokens)
            anc = np.zeros((n, n), dtype=bool)
            for i, p in enumerate(self.parents):  # parents come before their children
                if p >= 0:
                    anc[i, : p + 1] = anc[p, : p + 1]
                anc[i, i] = True
            self._anc = anc
        return self._anc


def pack(seqs: list[tuple[int, ...]], max_len: int = 2048, min_shared: int = 8) -> list[Packed]:
    """Rows of lexicographically adjacent sequences, each row the token trie of its members.

    In sorted order a sequence's longest shared prefix with any earlier member of the row is the
    one with its predecessor, so it adds only its tokens after that prefix. It joins the current
    row when that prefix has at least `min_shared` tokens and the row stays within `max_len`.
    """
    order = sorted(range(len(seqs)), key=lambda i: seqs[i])
    out: list[Packed] = []
    prev = None
    for i in order:
        s = seqs[i]
        row = out[-1] if out else None
        shared = lcp(prev, s) if row is not None else 0
        if row is None or shared < min_shared or len(row.tokens) + len(s) - shared > max_len:
            out.append(Packed.alone(s, i))
        else:
            path = row.paths[-1][:shared]
            for t in range(shared, len(s)):
                row.parents.append(path[-1] if path else -1)
                path.append(len(row.tokens))
                row.tokens.append(s[t])
                row.positions.append(t)
            row.members.append(i)
            row.paths.append(path)
        prev = s
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
