"""`SharedPlugins` (gcite/local/runner.py): conversations whose services share one plugin process, as the daemon runs
one per installed plugin. Each tool's backwards model call goes to its own conversation's LLM, even when two run at
once; closing a conversation's services leaves the process running, `SharedPlugins.close()` stops it, and a process
that died is started again."""

import threading

from gcite.authoring import chatflows
from gcite.local.llm import ExtractiveModel
from gcite.local.runner import SharedPlugins, run_chatflow
from gcite.local.services import local_services
from tests.support import ROOT


class Says(ExtractiveModel):
    """An LLM that answers every question with one cited sentence of its own."""

    def __init__(self, sentence: str) -> None:
        super().__init__()
        self.sentence = sentence

    def invoke_llm(self, *, prompt_messages, model_parameters, tools=None, stop=None, stream=True):
        self.prompts.append(list(prompt_messages))
        return self._chunks(prompt_messages, iter([self.sentence]))


def answer_of(events: list[dict]) -> str:
    return "".join(e["answer"] for e in events if e["event"] == "message")


def test_two_conversations_at_once_share_one_process_and_each_tool_calls_its_own_model():
    dsl = chatflows.PLUGIN_DSL.read_text(encoding="utf-8")  # cited_answer calls the model backwards
    plugins = SharedPlugins()
    models = {
        "alpha": Says("Alpha: the meeting room is booked in the office app [C:1]."),
        "bravo": Says("Bravo: visitors register at the front desk [C:1]."),
    }
    events: dict[str, list[dict]] = {}
    try:
        with (
            local_services(models["alpha"], shared_plugins=plugins) as alpha,
            local_services(models["bravo"], shared_plugins=plugins) as bravo,
        ):
            assert alpha.plugin() is bravo.plugin()
            process = alpha.plugin()

            def converse(name, services):
                events[name] = list(run_chatflow(dsl, "会议室怎么预约？", {"user_roles": "前台"}, services))

            threads = [threading.Thread(target=converse, args=item) for item in (("alpha", alpha), ("bravo", bravo))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
        assert all(model.prompts for model in models.values())  # each model was called, by its own tool call
        assert "Alpha:" in answer_of(events["alpha"]) and "Bravo" not in answer_of(events["alpha"])
        assert "Bravo:" in answer_of(events["bravo"]) and "Alpha" not in answer_of(events["bravo"])
        assert process.alive  # the conversations' services are closed; the shared process runs on
        process.close()  # a process that died is started again on next use
        assert plugins.process(ROOT) is not process and plugins.process(ROOT).alive
        restarted = plugins.process(ROOT)
    finally:
        plugins.close()
    assert not restarted.alive


def test_services_without_shared_plugins_start_their_own_and_stop_it_on_close():
    with local_services() as one, local_services() as other:
        mine, theirs = one.plugin(), other.plugin()
        assert mine is not theirs and mine.alive
    assert not mine.alive and not theirs.alive
