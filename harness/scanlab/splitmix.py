"""splitmix64: the generator every lesson program and grader draws its inputs from.

The C++ programs carry their own copy (each is one self-contained file); this is the
harness's only one, so a seed means the same numbers in a program, its tests and its
grader. `step` is one draw; `stream` is the same draws as a generator.
"""

from __future__ import annotations

from collections.abc import Iterator

MASK = (1 << 64) - 1


def step(state: int) -> tuple[int, int]:
    """One draw: (the new state, the 64-bit output)."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def stream(state: int) -> Iterator[int]:
    """The outputs of successive draws from `state`."""
    while True:
        state, out = step(state)
        yield out
