"""Fixtures the web search tests share. Only the standard library and pytest at the top (tests/test_layout.py)."""

import pytest


@pytest.fixture
def mocked():
    """requests' HTTP calls answered by `responses` (registered by the test); an unused registration is no error."""
    import responses

    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield rsps
