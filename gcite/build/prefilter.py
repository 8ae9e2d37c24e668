"""Transitional: the pre-filter's conditions now live in `gcite.authoring.prefilter`.

`gcite/acl.py` still imports them from here, and it is being reworked on another branch (issue 31, item 4), which
takes its imports elsewhere; this file keeps it importable until that lands, and goes with it. Nothing else may
import this path (tests/test_layout.py holds that).
"""

from gcite.authoring.prefilter import conditions_for_roles

__all__ = ["conditions_for_roles"]
