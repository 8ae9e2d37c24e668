"""Every shipped chatflow in Dify's own api server (`make test-dify`)."""

from tests.dify.console import chat


def test_boot(dify):
    app = dify.apps["gcite_chatflow.yml"]
    status, events = chat(dify.base_url, app.key, "访客来访需要怎么登记？", {"user_roles": "前台"}, user="u1")
    print(status, [e.get("event") for e in events])
    assert status == 200
