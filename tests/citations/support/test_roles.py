"""The roles cue (citations/support/roles.py)."""

from citations.support.roles import roles_cue
from citations.support.text import folded


def test_roles_cue_swapped_comparison():
    text = folded("A座比B座高")
    assert roles_cue(text, folded("B座比A座高，共32层")) == {"kind": "roles", "claim": "a座比b座", "source": "b座比a座"}
    swapped = roles_cue(folded("Alice defeated Bob in the final"), folded("Bob defeated Alice in the final"))
    assert swapped["kind"] == "roles"
    assert roles_cue(text, folded("A座比B座高")) is None
