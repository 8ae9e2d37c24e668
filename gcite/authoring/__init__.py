"""Builder features: what a Dify app is made of, generated from this repository or wired into a builder's own.

- `bundle.py`: `nodes/*.py`, one self-contained Code node each, bundled from the `citations` package;
- `chatflows.py`: our chatflow DSLs (`dsl/`), plugin and Code-node versions in both languages (`build-dsl`);
- `prefilter.py`: the Knowledge Retrieval conditions that pre-filter by role, as the chatflows, `retrofit` and
  `gcite prefilter` write them into a retrieval node (and `gcite acl` judges stored values by);
- `schema.py`: the chunk and citation types, and the tools' declared output item schemas kept in step with them
  (`sync-schema`);
- `retrofit/`: G-Cite wired into a builder's own exported app, as passes over one plan.

Why together: each writes what a builder imports into Dify or pastes into a node (Code nodes, DSLs, retrieval
conditions, tool schemas), and each is checked by a test that compares what is committed with what it generates.
Shipping the plugin (package, signing, Marketplace checks) is `gcite.release`.
"""
