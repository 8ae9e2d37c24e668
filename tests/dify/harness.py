"""Boot Dify's own api with its stand-ins and set it up as an operator would (see conftest.py).

Inputs (scripts/test_dify.sh sets them): GCITE_DIFY_TARBALL (the pinned api source), GCITE_DIFY_PYTHON (Dify's
venv), GCITE_DIFY_WORK (an empty work folder; every process keeps its files there). A missing one is an error
that says what to run, never a skip.
"""

import json
import os
import secrets
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from citations.filter import parse_roles
from gcite.authoring import retrofit
from gcite.local.knowledge import load_json
from gcite.local.plugin_process import PluginProcess
from gcite.local.search_server import SearchServer
from tests.dify import stack as st
from tests.dify.console import Console, Knowledge
from tests.dify.daemon import MODEL, OPENAI_IDENTIFIER, Daemon
from tests.dify.sandbox import Sandbox
from tests.support.cited import cited_chatflow
from tests.support.yamltext import safe_load

ROOT = Path(__file__).resolve().parents[2]
DSL_FILES = ("gcite_chatflow.yml", "gcite_chatflow.en.yml", "gcite_chatflow_code.yml", "gcite_chatflow_code.en.yml")
PLACEHOLDER_DATASET = "00000000-0000-4000-8000-000000000000"  # the shipped DSLs' knowledge base id (dsl_build)
BOCHA_URL = "https://api.bochaai.com"
BOCHA_KEY_PLACEHOLDER = "REPLACE_WITH_YOUR_BOCHA_API_KEY"
LLM_PROVIDER = "langgenius/openai/openai"
RETROFIT_FIXTURE = ROOT / "tests" / "fixtures" / "retrofit" / "svcvit-image-knowledge-base.zh.yml"  # a builder's own
RETROFIT_APP = "retrofit:" + RETROFIT_FIXTURE.name  # its `gcite retrofit --nodes code` output, among run.apps
RETROFIT_OPTIONS = retrofit.Options(nodes="code")  # Code nodes: no plugin tool needed
CITED_APP = "cited:" + DSL_FILES[0]  # the Chinese plugin chatflow with cited_answer in place of LLM + validate
# a shape retrofit places inside a container: retrieval before a loop, the LLM and the Answer in it (issue 33)
RETROFIT_LOOP_FIXTURE = ROOT / "tests" / "fixtures" / "retrofit" / "shapes" / "own-0.6.0-loop-retrieval-outside.ja.yml"
RETROFIT_LOOP_APP = "retrofit:" + RETROFIT_LOOP_FIXTURE.name
TOOL_PROVIDER = "gcite/gcite/gcite"
METADATA_FIELDS = ("document_title", "source_file_url", "access_roles", "updated")
ENDPOINT_SECRET = "test-dify-endpoint-secret-0123456789-abcdef"
HOOK_ID = "testdifyhook0001"
# questions about documents a user without a role may not see (the chiller table, visitors, the lift)
RESTRICTED_QUERIES = ("冷水机组供水温度设定为多少？", "访客来访需要怎么登记？", "电梯困人时怎么处置？")


@dataclass
class App:
    name: str
    dsl_text: str
    app_id: str = ""
    key: str = ""
    import_result: dict[str, Any] = field(default_factory=dict)


@dataclass
class DifyRun:
    phases: st.Phases
    stack: st.Stack
    base_url: str = ""
    console: Console | None = None
    tenant_id: str = ""
    sandbox: Sandbox | None = None
    daemon: Daemon | None = None
    plugin: PluginProcess | None = None
    search: SearchServer | None = None
    dataset_id: str = ""
    dataset_key: str = ""
    knowledge: Knowledge | None = None
    metadata_ids: dict[str, str] = field(default_factory=dict)
    documents: dict[str, str] = field(default_factory=dict)  # sample document_id -> Dify document id
    apps: dict[str, App] = field(default_factory=dict)
    retrofitted: retrofit.Result | None = None  # what `gcite retrofit` made of RETROFIT_FIXTURE (RETROFIT_APP)
    retrofitted_loop: retrofit.Result | None = None  # … and of RETROFIT_LOOP_FIXTURE (RETROFIT_LOOP_APP)
    kb: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        for closer in (
            lambda: self.stack.close(),
            lambda: self.plugin and self.plugin.close(),
            lambda: self.daemon and self.daemon.close(),
            lambda: self.sandbox and self.sandbox.close(),
            lambda: self.search and self.search.stop(),
        ):
            try:
                closer()
            except Exception as error:  # noqa: BLE001 - stop the rest whatever one does
                print(f"test-dify: while stopping: {error!r}", file=sys.stderr)
        print(self.phases.summary(), file=sys.stderr, flush=True)


def required_env(name: str, what: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        pytest.fail(f"{name} is not set ({what}); run these tests with `make test-dify`", pytrace=False)
    return value


def boot() -> DifyRun:
    tarball = Path(required_env("GCITE_DIFY_TARBALL", "Dify's api source, ../shared/dify/dify-api-*.tar.gz"))
    python = Path(required_env("GCITE_DIFY_PYTHON", "the python of .venv-dify"))
    work = Path(required_env("GCITE_DIFY_WORK", "an empty work folder"))
    for path, what in ((tarball, "Dify's api source"), (python, "Dify's venv")):
        if not path.exists():
            pytest.fail(f"{what} not found at {path}; run `make test-dify`", pytrace=False)
    run = DifyRun(phases=st.Phases(), stack=st.Stack(work))
    try:
        _boot(run, tarball, python, work)
    except BaseException:
        run.close()
        raise
    return run


def _boot(run: DifyRun, tarball: Path, python: Path, work: Path) -> None:
    phase, stack = run.phases.phase, run.stack
    daemon_key, inner_key, sandbox_key = (secrets.token_hex(16) for _ in range(3))
    with phase("unpack Dify's api source, start PostgreSQL and Redis, the stand-ins and OUR plugin process"):
        unpacked: dict[str, Path] = {}
        unpacker = threading.Thread(target=lambda: unpacked.setdefault("api", st.unpack_dify(tarball, work)))
        unpacker.start()
        pg_port = st.start_postgres(stack, "dify")
        redis_port = st.start_redis(stack)
        run.sandbox = Sandbox(sandbox_key)
        run.search = SearchServer().start()
        run.plugin = PluginProcess(ROOT, sys.executable)
        stack.adopt("plugin", run.plugin._process.pid)  # PluginProcess has no public pid
        identifier = plugin_identifier()
        run.daemon = Daemon(run.plugin, ROOT, api_key=daemon_key, inner_api_key=inner_key, plugin_identifier=identifier)
        unpacker.join()
        if "api" not in unpacked:
            raise st.StackError(f"could not unpack {tarball}")
        api = unpacked["api"]
    api_port = st.free_port()
    run.base_url = f"http://{st.LOCALHOST}:{api_port}"
    run.daemon.inner_api_url = run.base_url
    env = st.dify_env(
        api_port=api_port,
        pg_port=pg_port,
        redis_port=redis_port,
        storage=work / "storage",
        sandbox_url=run.sandbox.url,
        daemon_url=run.daemon.url,
        daemon_key=daemon_key,
        inner_key=inner_key,
        sandbox_key=sandbox_key,
    )
    with phase("Dify's migrations (flask db upgrade)"):
        st.run_migrations(stack, python, api, env)
    with phase("start Dify's api (gunicorn) and Celery worker"):
        api_proc = st.start_api(stack, python, api, env, api_port)
        worker = st.start_worker(stack, python, api, env)
        stack.wait_until("api", api_proc, lambda: requests.get(run.base_url + "/health", timeout=2).ok, 180)
        stack.wait_until("worker", worker, lambda: " ready." in stack.log("worker").read_text(errors="replace"), 180)
    with phase("console set-up, login, model and tool credentials"):
        run.console = Console(run.base_url)
        run.console.setup_and_login()
        run.tenant_id = run.console.tenant_id()
        run.daemon.tenant_id = run.tenant_id
        run.console.set_llm(LLM_PROVIDER, MODEL, {"openai_api_key": "scripted-llm-needs-no-key"})
        run.console.add_tool_credentials(TOOL_PROVIDER, run.search.credentials(("bocha",)))
    with phase("economy knowledge base with the sample documents and their metadata"):
        build_knowledge_base(run)
    with phase("import, publish and key the four shipped chatflows"):
        for name in DSL_FILES:
            add_app(run, name, dsl_for_dify((ROOT / "dsl" / name).read_text(encoding="utf-8"), run))
    with phase("retrofit a builder's chatflow (gcite retrofit --nodes code), import, publish and key it"):
        run.retrofitted = retrofit.retrofit(
            builder_export_for_dify(RETROFIT_FIXTURE.read_text(encoding="utf-8"), run), RETROFIT_OPTIONS
        )
        add_app(run, RETROFIT_APP, run.retrofitted.text)  # retrofit's output as it is, nothing edited after
        run.retrofitted_loop = retrofit.retrofit(
            builder_export_for_dify(RETROFIT_LOOP_FIXTURE.read_text(encoding="utf-8"), run), RETROFIT_OPTIONS
        )
        add_app(run, RETROFIT_LOOP_APP, run.retrofitted_loop.text)
    with phase("a chatflow with cited_answer (tests/support/cited.py), import, publish and key it"):
        add_app(
            run, CITED_APP, dsl_for_dify(cited_chatflow((ROOT / "dsl" / DSL_FILES[0]).read_text(encoding="utf-8")), run)
        )
    run.daemon.endpoint_settings[HOOK_ID] = {
        "app": {"app_id": run.apps["gcite_chatflow.yml"].app_id},
        "token_secret": ENDPOINT_SECRET,
        "allowed_origins": "",
        "snippet_length": "300",
    }


def add_app(run: DifyRun, name: str, dsl_text: str) -> App:
    app = App(name, dsl_text)
    app.app_id, app.import_result = run.console.import_app(app.dsl_text)
    run.console.publish(app.app_id)
    app.key = run.console.app_api_key(app.app_id)
    run.apps[name] = app
    return app


def plugin_identifier() -> str:
    """The plugin unique identifier the shipped DSLs depend on (the daemon lists OUR plugin under it)."""
    dsl = safe_load((ROOT / "dsl" / DSL_FILES[0]).read_text(encoding="utf-8"))
    for dependency in dsl.get("dependencies") or []:
        identifier = (dependency.get("value") or {}).get("plugin_unique_identifier") or ""
        if identifier.startswith("gcite/gcite:"):
            return identifier
    raise AssertionError("the plugin DSL names no gcite/gcite dependency")


def dsl_for_dify(text: str, run: DifyRun) -> str:
    """What an operator edits before importing: the knowledge base id, and (Code variant) the Bocha key and, here,
    the local search server in place of api.bochaai.com."""
    assert PLACEHOLDER_DATASET in text
    text = text.replace(PLACEHOLDER_DATASET, run.dataset_id)
    if BOCHA_KEY_PLACEHOLDER in text:
        credentials = run.search.credentials(("bocha",))
        text = text.replace(BOCHA_KEY_PLACEHOLDER, credentials["bocha_api_key"]).replace(BOCHA_URL, run.search.base_url)
    return text


def builder_export_for_dify(text: str, run: DifyRun) -> str:
    """A builder's chatflow as THIS Dify would export it, before `gcite retrofit` runs on it: its knowledge retrieval
    on this Dify's dataset, its LLM on the model the stand-in daemon serves (LLM_PROVIDER, MODEL) and that model's
    plugin as its one dependency, as Dify's export lists a model's plugin. A reranking model it names stays: with
    reranking_enable false and one dataset Dify never calls it (api/core/rag/retrieval/dataset_retrieval.py)."""
    dsl = safe_load(text)
    kinds: dict[str, int] = {}
    for node in dsl["workflow"]["graph"]["nodes"]:
        data = node["data"]
        if data.get("type") == "knowledge-retrieval":
            assert data["dataset_ids"], node["id"]
            config = data.get("multiple_retrieval_config") or {}
            assert not config.get("reranking_enable"), f"{node['id']}: the stand-in daemon serves no reranking model"
            data["dataset_ids"] = [run.dataset_id]
        elif data.get("type") == "llm":
            data["model"].update(provider=LLM_PROVIDER, name=MODEL)
        else:
            continue
        kinds[data["type"]] = kinds.get(data["type"], 0) + 1
    assert set(kinds) == {"knowledge-retrieval", "llm"}, kinds  # both were pointed at this Dify
    dsl["dependencies"] = [
        {
            "current_identifier": None,
            "type": "marketplace",
            "value": {"marketplace_plugin_unique_identifier": OPENAI_IDENTIFIER},
        }
    ]
    return yaml.safe_dump(dsl, allow_unicode=True, sort_keys=False)


def build_knowledge_base(run: DifyRun) -> None:
    """The built-in sample documents (gcite/samples/knowledge_base.json) in an economy (keyword) dataset, one Dify
    segment per sample segment, each document's doc_metadata (incl. access_roles, one of them JSON null) set
    through the Knowledge API."""
    run.kb = load_json("knowledge_base.json")
    run.dataset_key = run.console.dataset_api_key()
    run.knowledge = kb = Knowledge(run.base_url, run.dataset_key)
    dataset = kb.post(
        "/datasets",
        {"name": run.kb["dataset_name"], "indexing_technique": "economy", "permission": "all_team_members"},
        "create dataset",
    )
    run.dataset_id = dataset["id"]
    for name in METADATA_FIELDS:
        created = kb.post(f"/datasets/{run.dataset_id}/metadata", {"type": "string", "name": name}, "metadata field")
        run.metadata_ids[name] = created["id"]
    batches = []
    for document in run.kb["documents"]:
        text = "\n\n".join(segment["content"] for segment in document["segments"])
        created = kb.post(
            f"/datasets/{run.dataset_id}/document/create-by-text",
            {
                "name": document["document_name"],
                "text": text,
                "indexing_technique": "economy",
                "doc_form": "text_model",
                "process_rule": {
                    "mode": "custom",
                    "rules": {
                        "pre_processing_rules": [
                            {"id": "remove_extra_spaces", "enabled": False},
                            {"id": "remove_urls_emails", "enabled": False},
                        ],
                        "segmentation": {"separator": "\n\n", "max_tokens": 1000, "chunk_overlap": 0},
                    },
                },
            },
            "create document",
        )
        run.documents[document["document_id"]] = created["document"]["id"]
        batches.append(created["batch"])
    kb.wait_indexed(run.dataset_id, batches)
    operations = [
        {
            "document_id": run.documents[d["document_id"]],
            "metadata_list": [
                {"id": run.metadata_ids[name], "name": name, "value": d["doc_metadata"].get(name)}
                for name in METADATA_FIELDS
            ],
        }
        for d in run.kb["documents"]
    ]
    kb.post(f"/datasets/{run.dataset_id}/documents/metadata", {"operation_data": operations}, "document metadata")


def stored_metadata(run: DifyRun) -> dict[str, dict[str, Any]]:
    """Every document's own metadata fields as the Knowledge API returns them, by sample document id."""
    out = {}
    for sample_id, dify_id in run.documents.items():
        document = run.knowledge.get(
            f"/datasets/{run.dataset_id}/documents/{dify_id}", "document detail", params={"metadata": "only"}
        )
        out[sample_id] = {
            m["name"]: m.get("value") for m in document.get("doc_metadata") or [] if m.get("id") != "built-in"
        }  # Dify's own fields (upload date, …) are not ours
    return out


def restricted_texts(run: DifyRun, roles: set[str]) -> list[str]:
    """Texts of the sample documents these roles may not see (their ACL as the filter node reads it)."""
    texts = []
    for document in run.kb["documents"]:
        allowed = parse_roles(document["doc_metadata"]["access_roles"])
        if allowed is not None and not allowed & roles:
            texts += [document["doc_metadata"]["document_title"], document["document_name"]]
            texts += [segment["content"] for segment in document["segments"]]
    return texts


def dump(events: list[dict[str, Any]]) -> str:
    return json.dumps(events, ensure_ascii=False)


RULES = ("# 引用规则", "# Citation rules")  # cited_answer's rules heading, in the instructions' language


def tool_prompt(run: DifyRun, query: str, containing: str = "") -> str:
    """The (latest) system prompt Dify's model manager sent the model provider for a `cited_answer` call with this
    question (and holding `containing`)."""
    for request in reversed(run.daemon.llm_requests):
        messages = request["data"]["prompt_messages"]
        system = str(messages[0].get("content")) if messages else ""
        if messages[-1].get("content") == query and any(r in system for r in RULES) and containing in system:
            return system
    raise AssertionError(f"no model call of the tool for {query!r}")
