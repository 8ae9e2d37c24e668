import subprocess
import sys

import yaml

from gcite.__main__ import main
from gcite.prefilter import conditions_for_roles, templated_conditions
from tests.conftest import ROOT


def test_prefilter_command_prints_literal_and_templated_conditions(capsys):
    main(["prefilter", "--roles", "物业经理, 前台"])
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["metadata_filtering_mode"] == "manual"
    assert printed["metadata_filtering_conditions"] == conditions_for_roles("access_roles", ["物业经理", "前台"])
    main(["prefilter", "--slots", "2", "--slot-node", "roles", "--missing-acl", "hidden"])
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["metadata_filtering_conditions"] == templated_conditions(
        "access_roles", ["{{#roles.role_1#}}", "{{#roles.role_2#}}"], "hidden")


def test_demo_runs_as_a_module():
    done = subprocess.run([sys.executable, "-m", "gcite", "demo"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.index("node_finished(merge)") < out.index("answer, as it streams") < out.index("cited sources")
    assert "status: cited; chunk list before answer: True" in out
    assert "[C:" not in out.split("answer, as it streams")[1].split("cited sources")[0]  # no raw marker shown
