"""What an Answer node shows, named once for the places that must agree (change them together here).

Three layouts (`ANSWERS`; `build-dsl --answer`, `retrofit --answer`):

- `cited` (the plugin chatflows' default): one `cited_answer` tool node writes the answer and streams it with clean
  citations; the Answer node shows its two stream variables (`cited_template`): the answer, then the cited sources.
  The style the tool renders citations in comes from the chatflow's hidden input `STYLE_INPUT`: empty (Dify's web
  app, the Service API by default) is the tool's default, superscripts; G-Cite's own readers (the endpoint, `gcite run`,
  `demo`, `serve`, `gcite.client`) send `MACHINE_STYLE` (`machine_inputs`), so that what streams is canonical
  `[C:id]` markers of known chunks, sent whole, with no list: the endpoint's `Translator` numbers them and takes
  the rest from the tool's structured outputs (its `node_finished`), never from HTML.
- `llm-node` (the Code-node chatflows' default, and `--answer llm-node`): the LLM's text, a blank line, then the
  validate node's source list labelled with the raw `[C:N]` markers the streamed LLM text carries (`source_list`);
  the validate node's output holding that list is `SOURCE_LIST` (made by `citations.references`); the endpoint's
  `AnswerText` (endpoints/chat_protocol.py) passes the LLM's text on and drops what the template appends after it:
  the `SOURCE_GAP` and the list (their content reaches clients as `sources`/`done`).
- `clean` (`--answer clean`, no plugin needed): nothing streams while the LLM writes; once it ends, the validate
  node's clean answer (numbers 1..K) and its list of the cited sources (`clean_template`; docs/validator.md, "Two
  ways to show it in a Dify Answer node").
"""

ANSWERS = ("cited", "llm-node", "clean")
SOURCE_LIST = "references_by_marker_markdown"  # the validate node's output an Answer node lists the sources with
CLEAN_ANSWER = "answer"  # the validate node's answer with clean numbers
CLEAN_LIST = "references_markdown"  # its list of the cited sources, numbered as that answer
SOURCE_GAP = "\n\n"  # between the LLM's text and the list: whitespace from a node that is not the LLM
CITED_TOOL = "cited_answer"
CITED_STREAMS = ("answer", "sources")  # the tool's stream variables, in the order the Answer node shows them
CITED_MEMORY = "answer_without_markers"  # what the memory node keeps of a cited answer
STYLE_INPUT = "citation_style"  # the chatflow's hidden Start input the tool's `style` reads
MACHINE_STYLE = "markers"


def source_list(validate):
    """What an Answer node shows after the LLM's text to list the cited sources of the validate node `validate`
    (docs/validator.md, "Stream, then list the sources")."""
    return SOURCE_GAP + "{{#" + validate + "." + SOURCE_LIST + "#}}"


def clean_template(validate):
    """The whole Answer template of the `clean` layout: the validate node's clean answer, then its list."""
    return "{{#" + validate + "." + CLEAN_ANSWER + "#}}" + SOURCE_GAP + "{{#" + validate + "." + CLEAN_LIST + "#}}"


def cited_template(node):
    """The whole Answer template of the `cited` layout: the `cited_answer` node's answer, then its sources (both
    stream variables: what an Answer shows of a tool must stream, or it is lost from the saved message)."""
    return "".join("{{#" + node + "." + name + "#}}" for name in CITED_STREAMS)


def style_reference():
    """The tool's `style` input in a chatflow: the hidden Start input (empty: the tool's default)."""
    return "{{#start." + STYLE_INPUT + "#}}"


def machine_inputs(inputs=None):
    """A chatflow's inputs with the style G-Cite's own readers ask a `cited_answer` node for (other chatflows
    ignore an input they do not declare)."""
    return {**(inputs or {}), STYLE_INPUT: MACHINE_STYLE}
