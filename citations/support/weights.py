"""The support check's numbers as one frozen object, `Weights`, passed to `check_support` (never patched).

The shipped values (`DEFAULT_WEIGHTS`) were chosen on the development splits by bench/tune_support.py and rounded
(docs/support-check.md); the tuner tries others, `replace(DEFAULT_WEIGHTS, name=value)`. Nothing in the check
caches a value computed from a weight, so other weights are never scored against stale ones.

`Weights` is a small frozen class of its own rather than a `dataclasses` dataclass: the validator Code node runs
in a fresh process at every call, and importing `dataclasses` (it imports `inspect`) would cost that process
about 7 ms, a seventh of the node's whole cost."""

# name -> shipped value
SHIPPED = {
    # the thresholds: `weak` is support < threshold. Chinese sentences score lower than English ones for the same
    # support (characters and bigrams against word stems), so the same rule gives them their own raw threshold; a
    # Chinese sentence's score is raised to zh_scale = ln threshold / ln threshold_zh, which puts it on the English
    # scale (a raw 0.20 becomes 0.25, 0 stays 0 and 1 stays 1; zh_scale 1 leaves scores raw). Written out, not
    # computed: importing `math` would cost the Code node's process more than the rest of this module (a test holds
    # it to the thresholds)
    "threshold": 0.25,
    "threshold_zh": 0.20,
    "zh_scale": 0.8613531161467861,
    # the weight of a content unit (`citations.support.units`)
    "weight_exact": 3.2,  # a number or a code (B2, GB50016): the facts a wrong citation most often gets wrong
    "weight_name": 5.0,  # a capitalised word inside a sentence
    "weight_char": 1.0,  # one Chinese character (as much as a bigram; a bigram with a stop character weighs 0.5)
    "weight_generic": 0.1,  # a generic word (GENERIC_WORDS, GENERIC_ZH): it says little about which fact is stated
    "weight_short": 0.6,  # an English word of four letters or fewer (not a name)
    "weight_question": 0.3,  # factor for what the question itself says (repeating it proves nothing)
    # the score (`citations.support.score`)
    "missing_exact": 0.33,  # factor per number or code of the sentence that the chunk does not contain
    "missing_decay": 0.86,  # factor per word of the sentence that the chunk lacks ("the more is missing, the lower")
    "weight_zh_word": 6.0,  # the weight a two-character Chinese word's units add up to (see `coverage`)
    "part_weight": 0.8,  # how much the weakest part of a multi-part sentence counts against the whole's score
    "min_part_weight": 3.0,  # a part with less content than this is not judged on its own
    "passage_match": 0.25,  # a cue counts only where the chunk's matching passage holds this share of the sentence
    # a contradiction cue's factor (`judge`)
    "cue_negation": 0.05,
    "cue_antonym": 0.2,
    "cue_number": 0.4,
    "cue_roles": 0.2,
    "cue_scope": 0.5,
    # an uncited sentence (`is_factual`)
    "min_factual_weight": 3.0,  # less content than this is never judged "factual" (greetings, "如下：")
}


class Weights:
    """The support check's numbers (SHIPPED's names), frozen: `Weights(part_weight=0.5)` is the shipped weights
    but one; `replace(weights, …)` makes others. `word_weights` follows from them when the object is made: the
    weight of each kind of English word (`word_kinds`: generic, name, long, short)."""

    __slots__ = (*SHIPPED, "word_weights")

    def __init__(self, **values):
        unknown = sorted(values.keys() - SHIPPED.keys())
        if unknown:
            raise TypeError(f"Weights has no {', '.join(unknown)} (its names: {', '.join(SHIPPED)})")
        values = {**SHIPPED, **values}
        for name, value in values.items():
            object.__setattr__(self, name, value)
        object.__setattr__(
            self, "word_weights", (values["weight_generic"], values["weight_name"], 1.0, values["weight_short"])
        )

    def __setattr__(self, name, value):
        raise AttributeError(f"Weights are frozen: replace(weights, {name}=…) makes new ones")

    def __delattr__(self, name):
        raise AttributeError("Weights are frozen")

    def cue(self, kind):
        """The factor of a contradiction cue ("negation", "antonym", "number", "roles", "scope")."""
        return getattr(self, "cue_" + kind)

    def __eq__(self, other):
        return as_dict(self) == as_dict(other) if isinstance(other, Weights) else NotImplemented

    def __hash__(self):
        return hash(tuple(as_dict(self).items()))


def as_dict(weights):
    """{name: value} of `weights` (as dataclasses.asdict gives a dataclass's)."""
    return {name: getattr(weights, name) for name in SHIPPED}


def replace(weights, **changes):
    """New weights: `weights` with `changes` (as dataclasses.replace makes a dataclass's): the tuner's step."""
    return Weights(**{**as_dict(weights), **changes})


DEFAULT_WEIGHTS = Weights()
