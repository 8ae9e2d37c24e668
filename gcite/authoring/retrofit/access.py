"""`--acl`: access control as in our own chatflows — the hidden `user_roles` Start input, the pre-filter slots
node after Start, the pre-filter conditions on each retrieval of the path, and a filter node before the merge node.
The conditions come from `gcite.authoring.prefilter`, the nodes from our chatflows' generator."""

import json

from gcite.authoring import chatflows as dsl_build
from gcite.authoring.prefilter import templated_conditions
from gcite.authoring.retrofit.graph import DEFAULT_SIZE, GAP
from gcite.authoring.retrofit.plan import Plan, Target, template_of


def our_conditions(plan: Plan, retrieval: str) -> bool:
    """The retrieval's metadata filter is the pre-filter an earlier run added (every condition id `acl-…`)."""
    conditions = (plan.graph.by_id[retrieval]["data"].get("metadata_filtering_conditions") or {}).get("conditions")
    return bool(conditions) and all(str(c.get("id", "")).startswith("acl-") for c in conditions)


def add_access_control(plan: Plan, target: Target, v: dsl_build.Variant) -> None:
    """Pass: the pre-filter on the path's retrievals.

    Reads the Start node, the options (`acl`, `slots`) and the retrievals' metadata filters. Writes the hidden
    `user_roles` Start input and the slots node after Start (once per app: the edges that left Start now leave
    it), and on each retrieval without it the pre-filter conditions over the slots."""
    g, o = plan.graph, plan.options
    start = g.start_id()
    variables = g.by_id[start]["data"].setdefault("variables", [])
    if not any(x.get("variable") == "user_roles" for x in variables):
        variables.append(
            {
                "variable": "user_roles",
                "label": v.text["user_roles"],
                "type": "text-input",
                "required": False,
                "hide": True,
                "max_length": 256,
                "options": [],
            }
        )
        plan.change(f"input added: Start {g.title(start)} gains the hidden user_roles input")
    roles = plan.id_of("acl_roles", start)
    if roles not in g.by_id:
        x, y = g.position_near(start, dy=DEFAULT_SIZE[1] + 2 * GAP)
        node = dsl_build.code_node(
            roles,
            x,
            y,
            v.text["acl_roles"],
            "acl_prefilter",
            {"user_roles": [start, "user_roles"]},
            {**{f"role_{n}": "string" for n in range(1, o.slots + 1)}, "role_count": "number"},
            code=dsl_build.prefilter_code(o.slots),
        )
        plan.add_node(node, "fills the pre-filter's role slots")
        # after Start, before everything Start led to: every retrieval sees its slots
        for edge in [e for e in g.edges if e.get("source") == start]:
            g.move_source(edge, roles)
            plan.change(f"edge moved: {g.title(start)} → {g.title(edge['target'])} now leaves {roles}")
        g.add_edge(start, roles)
        plan.change(f"edge added: {g.title(start)} → {roles}")
    slots = [f"{{{{#{roles}.role_{n}#}}}}" for n in range(1, o.slots + 1)]
    for r in target.retrievals:
        data = g.by_id[r]["data"]
        if our_conditions(plan, r):
            continue
        data["metadata_filtering_mode"] = "manual"
        data["metadata_filtering_conditions"] = templated_conditions(o.acl, slots)
        plan.change(
            f"pre-filter added: retrieval {g.title(r)} admits only documents whose {o.acl} "
            f"names one of the user's roles (or none)"
        )


def add_filter(plan: Plan, target: Target, v: dsl_build.Variant, rag: list[str]) -> tuple[list[str], str]:
    """Pass: the filter node between the path's source and the merge node, unless an earlier run added it.

    Reads the options (`nodes`, `acl`) and the retrieval selector `rag`. Writes the node (our `filter_chunks` tool
    or its Code node, its field set in its code when it is not the default), the edge source → filter, and removes
    the edge source → LLM. Returns the filtered chunks' selector and the filter node's id (what the merge node
    reads next)."""
    g, o = plan.graph, plan.options
    node_id = plan.id_of("filter", target.llm)
    start = g.start_id()
    if node_id not in g.by_id:
        x, y = g.position_near(target.source, dy=-(DEFAULT_SIZE[1] + 2 * GAP))
        if o.nodes == "plugin":
            node = dsl_build.gcite_tool(
                node_id,
                x,
                y,
                v.text["acl_filter"],
                "filter_chunks",
                plan.identifier,
                {
                    "rag_chunks": dsl_build.variable(*rag),
                    "user_roles": dsl_build.mixed(template_of([start, "user_roles"])),
                },
                {"acl_field": o.acl, "condition": "", "case_sensitive": True, "missing_acl": "visible"},
            )
        else:
            node = dsl_build.code_node(
                node_id,
                x,
                y,
                v.text["acl_filter"],
                "filter_chunks",
                {"rag_chunks": rag, "user_roles": [start, "user_roles"]},
                dsl_build.FILTER_OUTPUTS,
            )
            # a Code node takes no constant: the field is the node's own default, or set here in its code
            if o.acl != "access_roles":
                node["data"]["code"] = node["data"]["code"].replace(
                    'acl_field="access_roles"', f"acl_field={json.dumps(o.acl, ensure_ascii=False)}", 1
                )
        plan.add_node(node, f"drops chunks whose {o.acl} the user's roles do not match")
        g.add_edge(target.source, node_id)
        plan.change(f"edge added: {g.title(target.source)} → {node_id}")
        if g.has_edge(target.source, target.llm):
            g.remove_edge(target.source, target.llm)
            plan.change(f"edge removed: {g.title(target.source)} → {g.title(target.llm)} (now through {node_id})")
    return [node_id, "chunks"], node_id
