"""`make test-dify` only (scripts/test_dify.sh sets GCITE_TEST_DIFY=1): `make test` does not collect tests/dify.

The session fixture `dify` boots Dify's own api from the pinned source (PostgreSQL, Redis, migrations, gunicorn,
the Celery worker), with the two stand-ins (sandbox, plugin daemon running OUR plugin process) and the local
search server, then sets it up as an operator would (console set-up and login, model and tool credentials, the
economy knowledge base with the sample documents, the four shipped chatflows, a chatflow with `cited_answer` and one
builder's chatflow after `gcite retrofit` imported, published and keyed).
Everything it started is stopped when the session ends, however it ends.
"""

import os

import pytest

from tests.dify.harness import DifyRun, boot

ENABLE = "GCITE_TEST_DIFY"


def pytest_ignore_collect(collection_path, config):
    if os.environ.get(ENABLE) != "1":
        return True  # `make test` and plain `pytest tests`: these tests need Dify, run them with `make test-dify`
    return None


@pytest.fixture(scope="session")
def dify() -> DifyRun:
    run = boot()
    try:
        yield run
    finally:
        run.close()


@pytest.fixture(autouse=True)
def timed(request, dify):
    """Each test is a phase of its own: its time is printed and in the summary."""
    with dify.phases.phase(f"test {request.node.name}"):
        yield
