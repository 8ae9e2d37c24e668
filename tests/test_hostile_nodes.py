"""Hostile input through the nodes: each case (bench/hostile.py) is a clear error or a correct result, and the
memory it takes stays close to what its input itself takes. `make bench` prints the time of each."""

import pytest

from bench.hostile import CASES, MB, measure


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_case(name):
    _, peak, size = measure(CASES[name])
    assert peak <= 1.5 * size + 32 * MB, f"{name}: peak {peak / MB:.1f} MB for {size / MB:.1f} MB of input"
