"""Every output of the validate Code node fits Dify's limits on any input (issue 34, item 7): every string, at any
depth, at most 400,000 characters (`CODE_MAX_STRING_LENGTH`), a cut one marked, and every array at most 30 items
(../shared/reference/dify-real-constraints.md). Long URLs, titles and subtitles, sentences whose missing words make
a long reason, and many ids."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citations.validate import CUT
from citations.validate import main as validate

CODE_MAX_STRING_LENGTH = 400_000
CODE_MAX_ARRAY_LENGTH = 30


def long_text(alphabet: str = "aZ0 /é中<&*[") -> st.SearchStrategy[str]:
    """Short or very long: a piece repeated up to 200,000 times."""
    return st.builds(
        lambda piece, times: piece * times,
        st.text(alphabet=alphabet, min_size=1, max_size=6),
        st.sampled_from([1, 1_000, 150_000]),
    )


def strings_and_arrays(value, path="outputs"):
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, list):
        yield path, value
        for n, item in enumerate(value):
            yield from strings_and_arrays(item, f"{path}[{n}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings_and_arrays(key, f"{path} key")
            yield from strings_and_arrays(item, f"{path}.{key}")


def fits(outputs: dict) -> None:
    json.dumps(outputs, allow_nan=False)
    for path, value in strings_and_arrays(outputs):
        if isinstance(value, str):
            assert len(value) <= CODE_MAX_STRING_LENGTH, (path, len(value))
        else:
            assert len(value) <= CODE_MAX_ARRAY_LENGTH, (path, len(value))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    count=st.integers(1, 40),
    title=long_text(),
    subtitle=long_text(),
    url=long_text("a/%é.-"),
    word=long_text("abcxyz"),
    markers=st.integers(1, 3),
)
def test_every_string_and_array_of_the_validate_node_fits_a_code_node(count, title, subtitle, url, word, markers):
    chunks = [
        {
            "id": str(n),
            "document_title": title + str(n),
            "display_subtitle": subtitle,
            "url": f"https://example.com/{url}",
            "source_type": "web",
            "content": "the room is on floor 3",
        }
        for n in range(1, count + 1)
    ]
    # the word, up to 900,000 characters, in the first three sentences (an answer past every cap, reasons as long as
    # the word); the others say "lift": as many ids as before, without the work of up to 108 MB of answer
    answer = " ".join(
        f"The {word if n <= 3 else 'lift'} room is on floor {n} [C:{n}]." * markers for n in range(1, count + 1)
    )
    answer += " [C:999999999] [C:abc]"
    outputs = validate(answer, chunks)
    fits(outputs)
    if len(title) > 300:
        assert all(c["document_title"].endswith(CUT) or len(c["document_title"]) <= 2_000 for c in outputs["citations"])


def test_a_list_of_many_sources_stops_with_a_line_that_counts_the_rest():
    from citations.references import MAX_LIST_CHARS, references_markdown

    citations = [
        {"index": n, "id": str(n), "document_title": "T" * 300, "url": "https://e.com/" + "<" * 2_000}
        for n in range(1, 200)
    ]
    markdown = references_markdown(citations)
    assert len(markdown) <= MAX_LIST_CHARS and markdown.endswith("characters)") and "more sources" in markdown


def test_the_reported_sizes_are_cut_and_say_so():
    url = "https://example.com/" + "a" * 40_000
    chunks = [
        {
            "id": str(n),
            "document_title": "T" * 40_000,
            "url": url,
            "source_type": "web",
            "content": "the room is on floor 3",
        }
        for n in range(1, 31)
    ]
    long_word = "x" * 90_000
    outputs = validate(" ".join(f"Zebra{long_word} [C:{n}]." for n in range(1, 31)), chunks)
    fits(outputs)
    assert len(outputs["references_markdown"]) < 20_000  # was 1.16 million: titles shortened, long URLs unlinked
    assert outputs["references_markdown"].split("\n")[0].endswith("…")
    citation = outputs["citations"][0]
    assert citation["weak"] and citation["reason"].endswith(CUT) and citation["url"] == ""
    assert len(outputs["answer"]) <= 380_000 and outputs["answer"].endswith(CUT)
