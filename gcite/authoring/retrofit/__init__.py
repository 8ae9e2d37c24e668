"""`gcite retrofit`: G-Cite citations wired into a builder's own exported Dify app DSL.

For every LLM node whose context comes from Knowledge Retrieval node(s) — directly, or through a variable aggregator
of retrieval results — `retrofit` adds, beside what they join:
- a merge node (our `merge_chunks` tool, or the Code node from nodes/merge_chunks.py) between the retrieval and the
  LLM; with `web="gcite"` our `web_search` tool runs in parallel and feeds it too;
- the LLM's context rewired to the merge node's `formatted_chunks`, and G-Cite's citation rules appended to its
  system prompt in the prompt's own language (the builder's prompt and persona kept; never added twice);
- a validate node after the LLM (the LLM's text, the merge node's `chunk_metadata`, the question), so the cited
  sources, invalid ids and support flags are in its `node_finished`; in a workflow-mode app, each End node after the
  LLM also outputs its `citations`;
- `acl`: the hidden `user_roles` Start input, the pre-filter slots node after Start, the pre-filter conditions on
  each retrieval node and a filter node before the merge, as in our own chatflows; `memory`: the multi-turn memory of
  our chatflows (conversation variables, the remember and save nodes, the history section of the prompt);
  `sources_in_answer`: each Answer node showing the LLM's text (`{{#<llm>.text#}}`) then lists the cited sources, as
  our chatflows' Answer node does (`chatflows.source_list`), and in a workflow each End node after the LLM outputs
  that list as `references`; an Answer showing two retrofitted LLMs' texts is refused (two chunk lists, one
  numbering); `answer`: what those Answer nodes show (`llm-node`, the default: the LLM's text; `cited`: the plugin's
  `cited_answer` tool in the LLM node's place with its model and system prompt, unless the LLM uses what the tool
  cannot carry; `clean`: the validate node's clean answer and list, `citations/answer_layout.py`).
Everything else (ids, variables, model settings, features, positions of existing nodes) is kept.

The node shapes, prompt text, pre-filter and memory come from `gcite.authoring.chatflows` (our own chatflows'
generator) and `gcite.authoring.prefilter`; nothing of them is repeated here. Every change is reported as one line;
a second run on the output changes nothing. What cannot be done safely is refused with one line (`RetrofitRefusal`).

The passes, in the order `retrofit` runs them, each a function over the shared `plan.Plan` whose docstring says
what it reads and writes (a reader can take them one at a time):
1. `reading.parse`: the text → the app document (or a refusal);
2. `paths.check_options`, `paths.find_paths`, `paths.check_paths`, `answers.check_answers`: the retrieval → LLM
   paths, and every refusal before anything changes;
3. for each path (`retrofit_path` below): `access.add_access_control` and `access.add_filter` (--acl),
   `nodes.add_merge` (with `nodes.add_web_search`, --web gcite), `nodes.rewire_context`, `prompt.rewrite_prompt`,
   `nodes.add_validate`, `answers.list_sources` (--sources-in-answer), `answers.clean_answers` (--answer clean),
   `memory.add_memory` (--memory), `memory.note_builtin_memory`; with --answer cited, `prompt.warn_contradictions`
   and `cited.replace_llm` right after the merge node (then `memory.add_memory`) where `cited.uncarried` finds
   nothing the tool cannot carry, else `cited.kept_note` and the passes above; each node is placed
   (`graph.Graph.position_near`) and wired as it is added, so the report reads node by node;
4. for each LLM retrofitted before (`complete_path`): what the options ask and the first run did not add;
5. `cited.complete_cited` for each cited_answer node put in an LLM's place before; `cited.panel_note`: what happens
   to Dify's native citation panel; `dependencies.declare_dependency`: the G-Cite plugin in the app's dependencies;
6. `report`: the YAML text, the change lines and the notes (`Result`).
"""

import copy
import gc
from dataclasses import dataclass, field
from typing import Any

from citations.answer_layout import ANSWERS
from gcite.authoring import chatflows as dsl_build
from gcite.authoring.retrofit.access import add_access_control, add_filter
from gcite.authoring.retrofit.answers import check_answers, clean_answers, list_sources
from gcite.authoring.retrofit.cited import complete_cited, kept_note, panel_note, replace_llm, uncarried
from gcite.authoring.retrofit.dependencies import declare_dependency
from gcite.authoring.retrofit.memory import add_memory, note_builtin_memory
from gcite.authoring.retrofit.nodes import add_merge, add_validate, rewire_context
from gcite.authoring.retrofit.paths import check_options, check_paths, find_paths
from gcite.authoring.retrofit.plan import GCITE_PLUGIN, LANGS, NODES, PREFIX, WEBS, Options, Plan, Target, new_id
from gcite.authoring.retrofit.prompt import (
    CONTEXT,
    RULE_HEADINGS,
    chunks_section,
    citation_rules,
    detect_lang,
    lang_of,
    rewrite_prompt,
    warn_contradictions,
)
from gcite.authoring.retrofit.reading import RetrofitRefusal, check_document, read_text, reading_refusal
from gcite.authoring.retrofit.splice import splice

__all__ = [
    "ANSWERS",
    "CONTEXT",
    "GCITE_PLUGIN",
    "LANGS",
    "NODES",
    "PREFIX",
    "RULE_HEADINGS",
    "WEBS",
    "Options",
    "Result",
    "RetrofitRefusal",
    "chunks_section",
    "citation_rules",
    "detect_lang",
    "new_id",
    "retrofit",
]


@dataclass
class Result:
    document: dict[str, Any]
    text: str
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)


def retrofit(text: str, options: Options | None = None) -> Result:
    """Retrofit one DSL text. Raises RetrofitRefusal (one line) for what it must refuse.

    Python's cyclic garbage collector is paused while it runs: reading and writing a DSL allocates a YAML object per
    value and nothing here makes reference cycles, but each full collection walks every live object, which made the
    time per node grow with the app's size (1.5-1.7x from 200 to 2,000 nodes; 0.8x without it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _retrofit(text, options)
    finally:
        if enabled:
            gc.enable()


def _retrofit(text: str, options: Options | None) -> Result:
    options = options or Options()
    document, yaml_text, wrapped = read_text(text)
    try:
        document = check_document(document)
    except RetrofitRefusal as refusal:
        raise RetrofitRefusal(reading_refusal(refusal)) from None
    before = copy.deepcopy(document)
    plan = Plan(document, options)
    try:
        run(plan)
    except RetrofitRefusal:
        raise
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as error:
        # a value of a shape `parse` does not check: one line, never a traceback
        raise RetrofitRefusal(
            f"cannot rewire safely: a value in the DSL has an unexpected shape "
            f"({type(error).__name__}: {str(error)[:120]}); export the app again from Dify "
            f"and retrofit that file, or report it with the file to the G-Cite team"
        ) from None
    return report(plan, wrapped, yaml_text, before)


def run(plan: Plan) -> None:
    """The passes after reading, in order: the checks (nothing changes before all of them pass), then each path,
    each LLM retrofitted before, and the dependency."""
    check_options(plan)
    find_paths(plan)
    check_paths(plan)
    if plan.options.sources_in_answer:
        check_answers(plan, [t.llm for t in plan.targets] + plan.done)
    for target in plan.targets:
        retrofit_path(plan, target)
    for llm_id in plan.done:
        complete_path(plan, llm_id)
    for cite in plan.cited:
        complete_cited(plan, cite)
    panel_note(plan)
    declare_dependency(plan)


def retrofit_path(plan: Plan, target: Target) -> None:
    """One retrieval → LLM path, pass by pass: access control, merge (and web search), context, prompt, validate,
    source list, memory. Reads the path; writes the nodes, edges and prompt each pass names."""
    o = plan.options
    llm, lang = target.llm, lang_of(plan, target.llm)
    v = dsl_build.Variant(plugin=o.nodes == "plugin", lang=label_lang(lang), slots=o.slots)
    rag = [target.source, target.selector[1]] if len(target.selector) == 2 else list(target.selector)
    upstream = target.source
    if o.acl:
        add_access_control(plan, target, v)
        rag, upstream = add_filter(plan, target, v, rag)
    merge = add_merge(plan, target, v, rag, upstream)
    if o.answer == "cited":
        why = uncarried(plan, llm)
        if not why:
            warn_contradictions(plan, llm)  # the tool carries the system prompt as it is: said before it goes
            cite = replace_llm(plan, target, v, merge, upstream)
            if o.memory:
                add_memory(plan, target, v, cite)
            return
        kept_note(plan, llm, why)
    rewire_context(plan, target, merge, upstream)
    rewrite_prompt(plan, llm, lang)
    validate = add_validate(plan, target, v, merge)
    if o.sources_in_answer:
        list_sources(plan, llm, validate)
    if o.answer == "clean":
        clean_answers(plan, llm, validate)
    if o.memory:
        add_memory(plan, target, v, validate)
    note_builtin_memory(plan, llm)


def label_lang(lang: str) -> str:
    """The language of the added nodes' titles: the rules' where our chatflows have it, else English."""
    return lang if lang in dsl_build.LANGS else "en"


def complete_path(plan: Plan, llm_id: str) -> None:
    """An LLM retrofitted before: add what the options ask for and the first run did not (nothing by default).
    Reads the LLM's merge node (its context); writes the prompt, validate node, source list and memory the options
    ask for and lack; refuses --acl on an LLM retrofitted without it (retrofit adds access control on a first run
    only)."""
    g = plan.graph
    merge = g.by_id[llm_id]["data"]["context"]["variable_selector"][0]
    lang = lang_of(plan, llm_id)
    v = dsl_build.Variant(plugin=plan.options.nodes == "plugin", lang=label_lang(lang), slots=plan.options.slots)
    rewrite_prompt(plan, llm_id, lang)
    validate = plan.id_of("validate", llm_id)
    if validate not in g.by_id:
        validate = add_validate(plan, Target(llm_id, merge, [merge, "formatted_chunks"], []), v, merge)
    if plan.options.sources_in_answer:
        list_sources(plan, llm_id, validate)
    if plan.options.answer == "clean":
        clean_answers(plan, llm_id, validate)
    if plan.options.answer == "cited":
        why = uncarried(plan, llm_id)
        if why:
            kept_note(plan, llm_id, why)
        else:
            plan.notes.append(
                f"--answer cited: LLM {g.title(llm_id)} was retrofitted before as an LLM node; cited_answer takes "
                f"an LLM's place on a first run only: run --answer cited on the app as exported before G-Cite"
            )
    if plan.options.memory:
        add_memory(plan, Target(llm_id, merge, [], []), v, validate)
    if plan.options.acl and plan.id_of("filter", llm_id) not in g.by_id:
        # access control asked for and absent: written without it, the app would show every chunk to everyone
        raise RetrofitRefusal(
            f"--acl: LLM {g.title(llm_id)} was retrofitted before without access control, "
            f"which retrofit adds on a first run only: run it with --acl on the app as "
            f"exported before G-Cite (not on its .gcite.yml)"
        )


def report(plan: Plan, wrapped: bool, yaml_text: str, before: dict[str, Any]) -> Result:
    """Pass, last: the rewired app as the YAML Dify imports, with the change lines and the notes (a first note when
    the file came in the export API's wrapped form). The YAML is the builder's own text with the changes spliced in
    (`splice.splice`: a diff shows what changed and nothing else). Reads the plan; writes nothing."""
    notes = plan.notes
    plan.graph.flush()
    if wrapped:
        notes = ['read the export API\'s {"data": …} form; the output is the plain YAML Dify imports', *notes]
    return Result(plan.document, splice(yaml_text, before, plan.document), plan.changes, notes, plan.warnings)
