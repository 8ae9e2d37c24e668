"""The support check (docs/support-check.md): `check_support` in `citations.support.check`."""
