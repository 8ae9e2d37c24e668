"""G-Cite's citation logic: standard library only, Python 3.10 syntax, importing nothing else from the
repository. The single source of truth for the Code nodes in `nodes/` (generated: `make dsl`) and the plugin tools."""
