"""What an Answer node shows, named once for the three places that must agree (change them together here):

- the Answer template of our chatflows and of retrofit (`source_list`): the LLM's text, a blank line, then the
  validate node's source list labelled with the raw `[C:N]` markers the streamed LLM text carries;
- the validate node's output holding that list (`SOURCE_LIST`, made by `citations.references`);
- the endpoint's `AnswerText` (endpoints/chat_protocol.py), which passes the LLM's text on and drops what the
  template appends after it: the `SOURCE_GAP` and the list (their content reaches clients as `sources`/`done`).
"""

SOURCE_LIST = "references_by_marker_markdown"  # the validate node's output an Answer node lists the sources with
SOURCE_GAP = "\n\n"  # between the LLM's text and the list: whitespace from a node that is not the LLM


def source_list(validate):
    """What an Answer node shows after the LLM's text to list the cited sources of the validate node `validate`
    (docs/validator.md, "Stream, then list the sources")."""
    return SOURCE_GAP + "{{#" + validate + "." + SOURCE_LIST + "#}}"
