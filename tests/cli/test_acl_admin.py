"""`python -m gcite acl audit|fix` against a local Knowledge API server (tests/support/knowledge_api.py) on
127.0.0.1."""

import copy
import json
import os
import re
import subprocess
import sys

import pytest

from citations import filter as filter_chunks
from gcite import acl as acl_admin
from gcite.authoring.prefilter import conditions_for_roles
from gcite.cli import acl as acl_cli
from gcite.cli.main import main
from gcite.local.dify_metadata import admits
from tests.support import ROOT
from tests.support.knowledge_api import FakeDataset, KnowledgeApiServer

STAGES = acl_cli.dify_stages()

KEY = "dataset-Zq8uSECRETk3yWx41"
FIELD = "access_roles"

# name → (stored doc_metadata, the ACL value `fix` writes; None: nothing written)
CASES = {
    "conventional": ({FIELD: ",hr,it,", "department": "HR", "year": 2024}, None),
    "conventional-unsorted": ({FIELD: ",it,hr,", "department": "IT"}, None),
    "public": ({FIELD: "", "department": "all"}, None),
    "unset": ({"department": "ops", "year": 2020}, None),
    "json-null": ({FIELD: None, "department": "finance", "year": 2023, "reviewed": 1_717_000_000}, ""),
    "blank-space": ({FIELD: " ", "department": "a"}, ""),
    "blank-brackets": ({FIELD: "[ ]", "department": "b"}, ""),
    "blank-comma": ({FIELD: ",", "department": "c"}, ""),
    "blank-tab": ({FIELD: ",\t,", "department": "d"}, ""),
    "blank-ideographic": ({FIELD: "\u3000,", "department": "e"}, ""),
    "empty-json-array": ({FIELD: "[]", "department": "f"}, ""),
    "json-array-of-blank": ({FIELD: '[" "]', "department": "g"}, ""),
    "ideographic-in-list": ({FIELD: ",hr,\u3000it,", "department": "h", "year": 2022}, ",hr,it,"),
    "json-array": ({FIELD: '["hr", "it"]', "department": "i"}, ",hr,it,"),
    "delimited": ({FIELD: "hr；it", "department": "j"}, ",hr,it,"),
    "comma-list": ({FIELD: "运维工程师, 物业经理", "department": "k"}, ",运维工程师,物业经理,"),
    "number": ({FIELD: 7, "department": "l"}, ",7,"),
    "unreadable-json": ({FIELD: '["hr"', "department": "m"}, None),
    "unreadable-object": ({FIELD: '{"hr": 1}', "department": "n"}, None),
    "role-with-comma": ({FIELD: '["a,b"]', "department": "o"}, None),
}
UNREADABLE = {"unreadable-json", "unreadable-object", "role-with-comma", "unreadable-metadata"}
FILLERS = 230  # with the cases: three pages of Dify's 100-document maximum


def build_dataset(built_in: bool = False) -> FakeDataset:
    dataset = FakeDataset(
        {FIELD: "string", "department": "string", "year": "number", "reviewed": "time"}, built_in_field_enabled=built_in
    )
    for n in range(FILLERS // 2):
        dataset.add(f"filler-{n}", {FIELD: ",staff,", "department": f"D{n}"})
    for name, (metadata, _) in CASES.items():
        dataset.add(name, metadata)
    dataset.add("unreadable-metadata", "not a list")  # an answer the tool cannot read
    for n in range(FILLERS // 2, FILLERS):
        dataset.add(f"filler-{n}", {FIELD: ",staff,", "department": f"D{n}"})
    return dataset


@pytest.fixture
def server():
    with KnowledgeApiServer(KEY) as srv:
        yield srv


class Cli:
    """Runs `python -m gcite acl …` in-process with the key in the environment; checks the key never shows."""

    def __init__(self, server, capsys, monkeypatch):
        self.server, self.capsys, self.sleeps = server, capsys, []
        monkeypatch.setenv("DIFY_DATASET_API_KEY", KEY)
        monkeypatch.delenv("DIFY_BASE_URL", raising=False)
        monkeypatch.setattr(acl_cli, "pause", self.sleeps.append)

    def __call__(self, *args, base_url=None):
        code = main(["acl", *args, "--base-url", base_url or self.server.base_url])
        out, err = self.capsys.readouterr()
        assert KEY not in out and KEY not in err
        return code, out, err


@pytest.fixture
def cli(server, capsys, monkeypatch):
    return Cli(server, capsys, monkeypatch)


def ids_by_name(dataset):
    return {d["name"]: d["id"] for d in dataset.documents}


def row_of(out, doc_id):
    lines = [line for line in out.splitlines() if doc_id in line]
    assert len(lines) == 1, (doc_id, lines)
    return lines[0]


# --- audit -------------------------------------------------------------------------------------------


def test_audit_lists_every_document_once_with_what_each_stage_does(server, cli):
    dataset = server.add_dataset(build_dataset())
    code, out, err = cli("audit", "--dataset", dataset.id)
    assert code == acl_admin.EXIT_ATTENTION, err
    assert server.writes() == []
    for doc in dataset.documents:  # all three pages, each document once
        row_of(out, doc["id"])
    pages = [path for method, path, _ in server.requests if "/documents?" in path]
    assert [re.search(r"page=(\d+)", p).group(1) for p in pages] == ["1", "2", "3"]
    assert all("limit=100" in p for p in pages)
    ids = ids_by_name(dataset)
    assert row_of(out, ids["conventional"]).startswith("ok ")
    assert "pre-filter: roles hr, it | filter node: roles hr, it" in row_of(out, ids["conventional"])
    assert row_of(out, ids["unset"]).startswith("unset ")
    null_row = row_of(out, ids["json-null"])
    assert null_row.startswith("FIX ") and "json-null  null" in null_row
    assert "pre-filter: no one | filter node: everyone" in null_row and null_row.endswith('→ ""')
    assert '",\\t,"' in row_of(out, ids["blank-tab"]) and '"\\u3000,"' in row_of(out, ids["blank-ideographic"])
    assert "pre-filter: roles hr | filter node: roles hr, it" in row_of(out, ids["ideographic-in-list"])
    leak = row_of(out, ids["comma-list"])
    assert ", 运维," in leak and "substring match" in leak  # the pre-filter admits a shorter role the node drops
    for name in ("unreadable-json", "unreadable-object", "role-with-comma", "unreadable-metadata"):
        assert row_of(out, ids[name]).startswith("CANNOT-READ "), name
    assert "filter node: no one (malformed_acl)" in row_of(out, ids["unreadable-json"])
    fixes = sum(1 for _, target in CASES.values() if target is not None)
    assert f"{len(dataset.documents)} documents: " in out and f"{fixes} outside the convention" in out
    assert "4 it cannot read" in out


def test_audit_of_a_clean_dataset_exits_0_and_json_output_parses(server, cli):
    dataset = FakeDataset({FIELD: "string"})
    dataset.add("a", {FIELD: ",hr,"})
    dataset.add("b", {FIELD: ""})
    dataset.add("c", {})
    server.add_dataset(dataset)
    code, out, _ = cli("audit", "--dataset", dataset.id)
    assert code == acl_admin.EXIT_OK
    code, out, _ = cli("audit", "--dataset", dataset.id, "--json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert [row["status"] for row in lines[:-1]] == ["ok", "ok", "unset"]
    assert lines[0]["prefilter"] == lines[0]["filter_node"] == "roles hr"
    assert lines[-1]["exit_code"] == 0


# --- fix -------------------------------------------------------------------------------------------


def test_fix_without_apply_lists_the_writes_and_writes_nothing(server, cli):
    dataset = server.add_dataset(build_dataset())
    before = copy.deepcopy(dataset.documents)
    code, out, _ = cli("fix", "--dataset", dataset.id)
    assert code == acl_admin.EXIT_ATTENTION
    assert [m for m, _, _ in server.requests if m != "GET"] == []  # no write of any kind
    assert dataset.documents == before
    ids = ids_by_name(dataset)
    for name, (_, target) in CASES.items():
        row = row_of(out, ids[name])
        if target is None:
            assert "→" not in row, name
        else:
            assert row.endswith(f"→ {json.dumps(target, ensure_ascii=False)} (dry run: not written)"), row
    assert "nothing written" in out


def stored_without_acl(dataset):
    return {
        d["id"]: (
            {k: v for k, v in d["doc_metadata"].items() if k != FIELD}
            if isinstance(d["doc_metadata"], dict)
            else d["doc_metadata"]
        )
        for d in dataset.documents
    }


@pytest.mark.parametrize("built_in", [False, True])
def test_fix_apply_changes_only_the_acl_field_and_a_second_run_changes_nothing(server, cli, built_in):
    dataset = server.add_dataset(build_dataset(built_in))
    others = stored_without_acl(dataset)
    bound = {d["id"]: set(d["bound"]) for d in dataset.documents}
    code, out, err = cli("fix", "--dataset", dataset.id, "--apply")
    assert code == acl_admin.EXIT_ATTENTION, err  # the unreadable values are left for a person
    ids = ids_by_name(dataset)
    expected = {ids[name]: target for name, (_, target) in CASES.items() if target is not None}
    writes = server.writes()
    assert len(writes) == len(expected)
    acl_id = dataset.field(FIELD)["id"]
    for body in writes:
        (operation,) = body["operation_data"]
        assert operation["partial_update"] is True
        assert operation["metadata_list"] == [
            {"id": acl_id, "name": FIELD, "value": expected[operation["document_id"]]}
        ]
    for doc_id, target in expected.items():
        assert dataset.document(doc_id)["doc_metadata"][FIELD] == target
        assert row_of(out, doc_id).startswith("FIXED ")
        assert "wrote it" in out.split(doc_id, 1)[1].split("\n", 2)[1]
    assert stored_without_acl(dataset) == others  # every other metadata value as it was
    assert all(bound[d["id"]] <= d["bound"] for d in dataset.documents)  # and still bound
    for name in UNREADABLE - {"unreadable-metadata"}:
        assert dataset.document(ids[name])["doc_metadata"][FIELD] == CASES[name][0][FIELD]
    assert f"{len(expected)} write(s) made and read back" in out

    server.requests.clear()
    code, out, _ = cli("fix", "--dataset", dataset.id, "--apply")
    assert server.writes() == []
    assert "0 outside the convention" in out and "0 write(s)" in out
    assert code == acl_admin.EXIT_ATTENTION  # still only the unreadable ones
    for doc_id in expected:
        assert row_of(out, doc_id).startswith("ok ")


def test_a_dify_that_ignores_partial_update_is_caught_at_the_first_write(capsys, monkeypatch):
    with KnowledgeApiServer(KEY, ignore_partial_update=True) as server:
        dataset = FakeDataset({FIELD: "string", "department": "string"})
        dataset.add("n", {FIELD: None, "department": "finance"})
        dataset.add("m", {FIELD: " ", "department": "ops"})
        server.add_dataset(dataset)
        code, out, err = Cli(server, capsys, monkeypatch)("fix", "--dataset", dataset.id, "--apply")
    assert code == acl_admin.EXIT_API
    assert len(server.writes()) == 1  # stopped before the second document
    assert 'department: was "finance", now (not set)' in err and "partial_update" in err
    assert "1 write(s) were made before the error" in err


def test_a_dify_without_the_document_detail_endpoint_is_read_back_through_the_list(capsys, monkeypatch):
    with KnowledgeApiServer(KEY, detail_endpoint=False) as server:
        dataset = server.add_dataset(build_dataset())
        code, out, err = Cli(server, capsys, monkeypatch)("fix", "--dataset", dataset.id, "--apply")
    assert code == acl_admin.EXIT_ATTENTION, err
    expected = sum(1 for _, target in CASES.values() if target is not None)
    assert f"{expected} write(s) made and read back" in out
    detail = [p for m, p, _ in server.requests if m == "GET" and "/documents/" in p]
    assert len(detail) == 1  # tried once, then the list searched by name
    assert sum(1 for m, p, _ in server.requests if "keyword=" in p) >= expected


def test_a_write_that_does_not_hold_stops_the_run(capsys, monkeypatch):
    with KnowledgeApiServer(KEY, drop_writes=True) as server:
        dataset = FakeDataset({FIELD: "string"})
        dataset.add("n", {FIELD: None})
        dataset.add("m", {FIELD: " "})
        server.add_dataset(dataset)
        code, _, err = Cli(server, capsys, monkeypatch)("fix", "--dataset", dataset.id, "--apply")
    assert code == acl_admin.EXIT_API and len(server.writes()) == 1
    assert 'access_roles = "" to document' in err and "reads back as null" in err


def test_missing_acl_hidden_leaves_null_alone(server, cli):
    dataset = FakeDataset({FIELD: "string"})
    dataset.add("n", {FIELD: None})
    server.add_dataset(dataset)
    code, out, _ = cli("fix", "--dataset", dataset.id, "--apply", "--missing-acl", "hidden")
    assert code == acl_admin.EXIT_OK and server.writes() == []
    assert "pre-filter: no one | filter node: no one (missing_acl)" in out


# --- errors and retries ----------------------------------------------------------------------------


def test_a_refused_key_is_said_so_and_never_shown(server, cli, monkeypatch):
    dataset = server.add_dataset(build_dataset())
    monkeypatch.setenv("DIFY_DATASET_API_KEY", "dataset-wrong-" + KEY[::-1])
    code, out, err = cli("audit", "--dataset", dataset.id)
    assert code == acl_admin.EXIT_REFUSED
    assert "refused the key (HTTP 401: Access token is invalid)" in err and KEY[::-1] not in out + err
    monkeypatch.setenv("DIFY_DATASET_API_KEY", KEY)
    server.fail("GET", f"/v1/datasets/{dataset.id}/documents", 403)
    code, _, err = cli("fix", "--dataset", dataset.id, "--apply")
    assert code == acl_admin.EXIT_REFUSED and "HTTP 403" in err
    assert server.writes() == []


def test_no_such_dataset_or_field_is_404(server, cli):
    dataset = server.add_dataset(build_dataset())
    code, _, err = cli("audit", "--dataset", "0b5e7f10-0000-4000-8000-000000000000")
    assert code == acl_admin.EXIT_NOT_FOUND and "no dataset" in err and "Dataset not found." in err
    code, _, err = cli("audit", "--dataset", dataset.id, "--acl-field", "roles")
    assert code == acl_admin.EXIT_NOT_FOUND
    assert "no metadata field 'roles'" in err and "'access_roles'" in err
    code, _, err = cli("audit", "--dataset", dataset.id, "--acl-field", "year")
    assert code == acl_admin.EXIT_USAGE and "must be a string field" in err


def test_429_then_success_honours_retry_after(server, cli):
    dataset = server.add_dataset(build_dataset())
    server.fail("GET", f"/v1/datasets/{dataset.id}/documents", 429, times=2, headers={"Retry-After": "3"})
    server.fail("POST", f"/v1/datasets/{dataset.id}/documents/metadata", 502)
    code, out, err = cli("fix", "--dataset", dataset.id, "--apply")
    assert code == acl_admin.EXIT_ATTENTION, err
    assert cli.sleeps == [3.0, 3.0, 0.5]  # Retry-After twice, then the default back-off for the 502
    assert "HTTP 429; retrying in 3 s (1/4)" in err
    assert dataset.document(ids_by_name(dataset)["json-null"])["doc_metadata"][FIELD] == ""


def test_dify_clouds_quota_403_is_waited_out_not_called_a_refused_key(server, cli):
    dataset = server.add_dataset(build_dataset())
    quota = "Sorry, you have reached the knowledge base request rate limit of your subscription."
    server.fail("POST", f"/v1/datasets/{dataset.id}/documents/metadata", 403, times=2, message=quota)
    code, _, err = cli("fix", "--dataset", dataset.id, "--apply")
    assert code == acl_admin.EXIT_ATTENTION, err
    assert cli.sleeps == [acl_admin.QUOTA_WAIT, acl_admin.QUOTA_WAIT] and "rate limit" in err
    assert "refused the key" not in err


def test_5xx_exhausted_is_a_bounded_failure(server, cli):
    dataset = server.add_dataset(build_dataset())
    server.fail("GET", f"/v1/datasets/{dataset.id}/metadata", 503, times=10)
    code, _, err = cli("audit", "--dataset", dataset.id, "--retries", "2")
    assert code == acl_admin.EXIT_API
    assert "HTTP 503" in err and "gave up after 3 attempts" in err
    assert sum(1 for _, path, _ in server.requests if path.endswith("/metadata")) == 3
    assert len(cli.sleeps) == 2


def test_a_retry_after_beyond_the_limit_ends_the_run(server, cli):
    dataset = server.add_dataset(build_dataset())
    server.fail("GET", f"/v1/datasets/{dataset.id}/metadata", 429, headers={"Retry-After": "3600"})
    code, _, err = cli("audit", "--dataset", dataset.id)
    assert code == acl_admin.EXIT_API and "asks to wait 3600 s" in err and cli.sleeps == []


def test_a_retry_after_past_max_minutes_stops_the_run_before_waiting(server, cli):
    """--max-minutes 1 and a Retry-After of 90 s (within MAX_RETRY_AFTER): the wait would end after the run's
    limit, so the run stops at once instead of overrunning by the wait."""
    dataset = server.add_dataset(build_dataset())
    server.fail("GET", f"/v1/datasets/{dataset.id}/metadata", 429, headers={"Retry-After": "90"})
    code, _, err = cli("audit", "--dataset", dataset.id, "--max-minutes", "1")
    assert code == acl_admin.EXIT_API and cli.sleeps == []
    assert "the next attempt would start 90 s from now, after the longest one run takes (--max-minutes 1)" in err


def test_a_back_off_that_fits_in_max_minutes_is_waited(server, cli):
    dataset = server.add_dataset(build_dataset())
    server.fail("GET", f"/v1/datasets/{dataset.id}/metadata", 429, headers={"Retry-After": "50"})
    code, _, err = cli("audit", "--dataset", dataset.id, "--max-minutes", "1")
    assert code == acl_admin.EXIT_ATTENTION and cli.sleeps == [50.0], err


def test_unreachable_server_and_bad_arguments(cli, monkeypatch):
    code, _, err = cli("audit", "--dataset", "d", "--retries", "1", base_url="http://127.0.0.1:9/v1")
    # nothing listens there: said once (no retry warnings), naming what to check
    assert code == acl_admin.EXIT_API and "connection refused" in err and "--base-url" in err
    assert "warning" not in err and len(err.splitlines()) == 1
    monkeypatch.setenv("DIFY_DATASET_API_KEY", KEY + "\n")
    code, _, err = cli("audit", "--dataset", "d")
    assert code == acl_admin.EXIT_USAGE and "whitespace or control characters" in err
    monkeypatch.delenv("DIFY_DATASET_API_KEY")
    code, _, err = cli("audit", "--dataset", "d", base_url="ftp://x")
    assert code == acl_admin.EXIT_USAGE and "DIFY_DATASET_API_KEY: not set" in err and "--base-url" in err


@pytest.mark.parametrize(
    "url,problem",
    [
        ("http://127.0.0.1:99999/v1", "not a usable URL (Port out of range"),
        ("http://[::1", "not a usable URL (Invalid IPv6 URL)"),
        ("https:///v1", "the URL names no host"),
        ("http://127.0.0.1:0/v1", "port 0 is not a port to connect to"),
    ],
)
def test_a_malformed_base_url_is_refused_before_any_request(cli, url, problem):
    code, _, err = cli("audit", "--dataset", "d", base_url=url)
    assert code == acl_admin.EXIT_USAGE and len(err.splitlines()) == 1
    assert err.startswith(f"error: --base-url / DIFY_BASE_URL: {problem}") and cli.server.requests == []


def test_retry_after_as_an_http_date():
    assert acl_admin.parse_retry_after("7") == 7.0
    assert acl_admin.parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: retry now
    assert acl_admin.parse_retry_after("soon") is None


def test_the_module_runs_from_the_command_line_without_showing_the_key(server):
    dataset = server.add_dataset(build_dataset())
    env = dict(os.environ, DIFY_BASE_URL=server.base_url, DIFY_DATASET_API_KEY=KEY)
    done = subprocess.run(
        [sys.executable, "-m", "gcite", "acl", "fix", "--dataset", dataset.id],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == acl_admin.EXIT_ATTENTION, done.stderr
    assert KEY not in done.stdout + done.stderr
    assert "dry run" in done.stdout and server.writes() == []


# --- the documentation's table (docs/access-control.md) -------------------------------------------------

PROBES = ["hr", "it", "h", "t", "r", "i", "7", "a,b", "a", "b", "x"]


def readme_table():
    text = (ROOT / "docs" / "access-control.md").read_text(encoding="utf-8")
    start = text.index("| stored value (JSON) | pre-filter admits | filter node keeps | `acl fix` writes |")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        assert len(cells) == 4, line
        rows.append(cells)
    return rows


def parse_cell_value(cell):
    if cell == "(not set)":
        return acl_admin.MISSING
    assert cell.startswith("`") and cell.endswith("`"), cell
    return json.loads(cell[1:-1])


def parse_roles_cell(cell):
    return [json.loads(r) if r.startswith('"') else r for r in re.findall(r'"[^"]*"|[^, ]+', cell[len("roles ") :])]


def check_stage(cell, sees, probes, node_reason=None):
    """`sees(roles)`: does the stage let a user with these roles see the document."""
    if cell == "everyone":
        assert sees([]) and all(sees([p]) for p in probes)
    elif cell.startswith("no one"):
        assert not sees([]) and not any(sees([p]) for p in probes)
        if node_reason is not None:
            assert cell == f"no one ({node_reason()})"
    else:
        assert cell.startswith("roles "), cell
        roles = parse_roles_cell(cell)
        assert not sees([])
        assert all(sees([r]) for r in roles), roles
        assert not any(sees([p]) for p in probes if p not in roles)


def test_readme_acl_table_matches_the_stages():
    rows = readme_table()
    assert len(rows) >= 20
    values = []
    for value_cell, pre_cell, node_cell, fix_cell in rows:
        if value_cell.startswith("chunk's `doc_metadata` is JSON text"):
            text = json.loads(re.search(r"`(\".*\")`", value_cell).group(1))
            item = {"content": "", "metadata": {"doc_metadata": text}}
            check_stage(
                node_cell, lambda roles, item=item: filter_chunks.main([item], roles)["kept_count"] == 1, PROBES
            )
            continue
        value = parse_cell_value(value_cell)
        values.append(value)
        doc = {} if value is acl_admin.MISSING else {FIELD: value}
        item = {"content": "", "metadata": {"doc_metadata": doc}}

        def node(roles, item=item):
            return filter_chunks.main([item], roles)

        check_stage(pre_cell, lambda roles, doc=doc: admits(conditions_for_roles(FIELD, roles), doc), PROBES)
        check_stage(
            node_cell,
            lambda roles: node(roles)["kept_count"] == 1,
            PROBES,
            node_reason=lambda: node([])["dropped"][0]["reason"],
        )
        found = acl_admin.assess(FIELD, value, stages=STAGES)
        if fix_cell == "—":
            assert found.target is None and found.status in ("ok", "unset"), value_cell
        elif fix_cell.startswith("left alone"):
            assert found.status == "unreadable" and found.target is None, value_cell
        else:
            assert found.status == "fix" and fix_cell == f"`{json.dumps(found.target, ensure_ascii=False)}`", value_cell
    # every case of the issue is in the table
    for case in (None, acl_admin.MISSING, " ", "[ ]", ",", ",\t,", "\u3000,", '[" "]', '[""]', ",hr,it,", ""):
        assert case in values, case
    assert any(isinstance(v, str) and v.startswith('["') and v.endswith('"]') for v in values)  # JSON array text
    assert any(isinstance(v, str) and "；" in v for v in values)  # another delimiter
    assert any(acl_admin.assess(FIELD, v, stages=STAGES).status == "unreadable" for v in values)


def test_fix_is_idempotent_on_every_table_value():
    for value_cell, *_ in readme_table():
        if value_cell.startswith("chunk's"):
            continue
        found = acl_admin.assess(FIELD, parse_cell_value(value_cell), stages=STAGES)
        if found.target is not None:
            again = acl_admin.assess(FIELD, found.target, stages=STAGES)
            assert again.status == "ok" and again.prefilter == again.node, value_cell
            if found.node.reason == "malformed_acl" and found.target == "":  # names no role: fixed to public
                assert again.node.everyone, value_cell
                continue
            assert found.node.everyone == again.node.everyone and set(found.node.roles) == set(again.node.roles)


def test_pathological_values_are_judged_within_bounds():
    deep = acl_admin.assess(FIELD, "[" * 5000, stages=STAGES)
    assert deep.status == "unreadable" and deep.target is None
    many = ",".join(f"r{i}" for i in range(3000))
    found = acl_admin.assess(FIELD, many, stages=STAGES)
    assert found.status == "fix" and found.target == "," + many + ","
    assert found.node.text().endswith("(2980 more)")


def test_names_and_values_cannot_drive_the_terminal(server, cli):
    dataset = FakeDataset({FIELD: "string"})
    doc_id = dataset.add("\x1b[2Jreport\u202e.pdf", {FIELD: "\x1b[31m,hr,"})
    server.add_dataset(dataset)
    _, out, _ = cli("audit", "--dataset", dataset.id)
    assert "\x1b" not in out and "\u202e" not in out
    assert "\\u001b[2Jreport\\u202e.pdf" in row_of(out, doc_id)


def test_retry_after_dates_without_a_zone_are_utc_in_both_clients():
    import email.utils
    import time

    from websearch.http_client import parse_retry_after

    assert acl_admin.parse_retry_after is parse_retry_after  # one parser for the Knowledge API and the providers
    ahead = email.utils.formatdate(time.time() + 100, usegmt=True)
    for zone in ("GMT", "-0000", "+0000"):
        assert 95 < parse_retry_after(ahead.replace("GMT", zone)) <= 100
    assert parse_retry_after("inf") is None and parse_retry_after("nan") is None
