"""`chatflows.render`: libyaml's emitter where it writes what PyYAML's own writes, byte for byte (the DSL files, what
retrofit adds to a builder's file and a file it writes again whole), PyYAML's otherwise."""

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gcite.authoring import chatflows
from gcite.authoring.chatflows import astral_stand_ins, render

# YAML's indicators and what makes a scalar need quotes, Chinese, astral characters (emoji), private-use ones (the
# stand-ins), and what libyaml writes its own way (a tab, NEL, LS, PS, BOM, a control character, U+10FFFF)
ALPHABET = st.sampled_from(
    list(" :#-'\"|>&*!%@`{}[],?\\\n ab1.0~=")
    + list("会议室预约，。：“”")
    + ["📚", "😀", "𠀀", "\U0010fffe"]
    + ["\ue000", "\ue001", "\uf8ff"]
    + ["\t", "\x85", "\u2028", "\u2029", "\ufeff", "\x00", "\x1b", "\x7f", "\U0010ffff"]
)
# characters the fast path takes, and words YAML reads as something else: many documents take it
FAST_ALPHABET = st.sampled_from(
    list(" :#-'\"|>&*!%@`{}[],?\\\n ab1.0~=yYnN")
    + list("会议室预约，。：“”")
    + ["📚", "😀", "\ue000", "\xa0", "\u3000"]
)
WORDS = st.sampled_from(["true", "null", "~", "1e3", "0x1F", "- a", "? b", ": c", "#d", "'", "0o7", "2001-12-14", ""])


# multi-line text whose lines run past the width (120), some ending in a space
LINE = st.text(st.sampled_from(list("ab 1:#'\"会议室")), min_size=60, max_size=200)  # no astral: see the guard
LINES = st.lists(st.tuples(LINE, st.sampled_from(["\n", " \n", "\n "])), min_size=1, max_size=3).map(
    lambda parts: "".join(line + end for line, end in parts).rstrip("\n")
)


def documents(alphabet):
    text = st.text(alphabet, max_size=40) | st.text(alphabet, min_size=100, max_size=300) | WORDS | LINES
    scalars = text | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none()
    return st.recursive(
        scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=25
    )


def pyyaml(document) -> str:
    return yaml.dump(document, Dumper=chatflows._Dumper, allow_unicode=True, sort_keys=False, width=120)


@settings(max_examples=300, deadline=None)
@given(documents(ALPHABET) | documents(FAST_ALPHABET))
def test_render_writes_what_pyyamls_emitter_writes(document):
    assert render(document) == pyyaml(document)


def test_the_fast_emitter_is_taken_for_our_chatflows_and_an_emoji_stays_as_it_is():
    document = chatflows.chatflow(chatflows.variants()[0], "gcite/gcite:0.0.1@x")
    assert astral_stand_ins(document) == {"📚": "\ue000"}  # the app's icon
    text = render(document)
    assert text == pyyaml(document) and "  icon: 📚\n" in text and "\\U" not in text


def test_what_libyaml_writes_its_own_way_takes_pyyamls_emitter():
    assert astral_stand_ins({"a": "x\ty"}) is None
    assert astral_stand_ins({"a": "📚", "b": "\ue000"}) is None
    assert astral_stand_ins({"a": "\ue000"}) == {}  # no astral character: nothing stands in
    assert astral_stand_ins({"a": " \n📚"}) is None  # PyYAML writes it double-quoted, the emoji escaped
    assert astral_stand_ins({"a": "x\n\n"}) is None  # "|+": libyaml would end the document with "..."
    assert astral_stand_ins({"": "x"}) is None and astral_stand_ins({"会" * 32: "x"}) is None  # "? key"
    # PyYAML writes multi-line text with a line ending in a space double-quoted, and breaks a long line of it with
    # "\" (libyaml at a space)
    prompt = "You are a helpful assistant. \nAnswer the question using only the context below, and cite " + "x " * 40
    assert astral_stand_ins({"prompt": prompt}) is None and astral_stand_ins({"a": "x\ny "}) is None
    looped: list = []
    looped.append(looped)  # PyYAML writes it with an anchor; the walk must end
    shared = {"k": "v"}
    assert astral_stand_ins(looped) is None and astral_stand_ins([shared, shared]) is None
    for document in (
        {"a": "x\ty"},
        {"a": "📚", "b": "\ue000"},
        {"k📚": ["\U0010ffff"]},
        ["\n", "a"],
        {"": ""},
        {"prompt": prompt},
        looped,
        [shared, shared],
    ):
        assert render(document) == pyyaml(document)
