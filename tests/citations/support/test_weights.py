"""The support check's numbers as one frozen object (citations/support/weights.py), passed in, never patched."""

import math

import pytest

from citations.stream import CitationStream
from citations.support.units import GENERIC, LONG, NAME, SHORT
from citations.support.weights import DEFAULT_WEIGHTS, SHIPPED, Weights, as_dict, replace
from citations.validate import main


def test_the_default_weights_are_the_shipped_values():
    assert as_dict(DEFAULT_WEIGHTS) == SHIPPED and DEFAULT_WEIGHTS == Weights()
    assert DEFAULT_WEIGHTS.threshold == 0.25 and DEFAULT_WEIGHTS.cue("negation") == 0.05


def test_weights_are_frozen_and_replace_makes_new_ones():
    # replace(weights, …) as dataclasses.replace(obj, …): the tuner's step
    with pytest.raises(AttributeError):
        DEFAULT_WEIGHTS.part_weight = 0.5
    with pytest.raises(AttributeError):
        del DEFAULT_WEIGHTS.part_weight
    moved = replace(DEFAULT_WEIGHTS, part_weight=0.5, cue_scope=0.9)
    assert moved.part_weight == 0.5 and moved.cue("scope") == 0.9 and moved.threshold == DEFAULT_WEIGHTS.threshold
    assert DEFAULT_WEIGHTS.part_weight == SHIPPED["part_weight"] and moved != DEFAULT_WEIGHTS
    assert moved == Weights(part_weight=0.5, cue_scope=0.9) and hash(moved) == hash(
        Weights(part_weight=0.5, cue_scope=0.9)
    )
    with pytest.raises(TypeError, match="no part_wieght"):
        Weights(part_wieght=0.5)


def test_the_word_weights_follow_the_weights():
    moved = Weights(weight_generic=0.2, weight_name=4.0, weight_short=0.7)
    assert (
        moved.word_weights[GENERIC],
        moved.word_weights[NAME],
        moved.word_weights[LONG],
        moved.word_weights[SHORT],
    ) == (0.2, 4.0, 1.0, 0.7)


def test_zh_scale_puts_the_chinese_threshold_on_the_english_one():
    weights = DEFAULT_WEIGHTS
    assert abs(weights.threshold_zh**weights.zh_scale - weights.threshold) < 1e-9  # a raw 0.20 becomes 0.25
    assert weights.zh_scale == math.log(weights.threshold) / math.log(weights.threshold_zh)


def test_weights_passed_in_reach_the_node_and_the_shipped_ones_stay():
    answer, chunks = (
        "The guards patrol every 2 hours and visitors sign in at the desk [C:1].",
        [{"id": "1", "content": "The guards patrol every 2 hours at night."}],
    )
    stream = CitationStream(chunks, weights=replace(DEFAULT_WEIGHTS, threshold=0.99))
    stream.feed(answer)
    strict = stream.result()["citations"][0]
    shipped = main(answer, chunks)["citations"][0]
    assert strict["support"] == shipped["support"] and strict["weak"] and not shipped["weak"]
