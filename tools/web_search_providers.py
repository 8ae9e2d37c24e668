"""Moved: the web search is the `websearch` package at the repository root (this table is websearch/providers.py).

Only `gcite/build/marketplace.py` still imports the provider table from here, and that folder is being rebuilt in
parallel (as gcite/release/); once its import reads `from websearch.providers import PROVIDERS`, delete this file.
It is not shipped in the .difypkg (.difyignore): nothing in the plugin imports it.
"""

from websearch.providers import PROVIDERS

__all__ = ["PROVIDERS"]
