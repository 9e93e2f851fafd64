"""The shared lazy variables (topology/operate/jinja_vars_memo.py): what Ansible renders with them is
what it renders without them, also when the variables change under the same templar (a loop's next
item, a registered result written into the same mapping, a new mapping); a variable that others read
is rendered once instead of once per reader; and this ansible-core still has the hook (an upgrade that
drops it fails here instead of silently losing the speed)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from topology.operate import jinja_vars_memo

ROOT = Path(__file__).resolve().parents[1]
BASE = "{{ [3, 1, 2] | map('int') | list }}"

RENDER = textwrap.dedent("""
    import collections, json, sys
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template as T
    from ansible._internal._templating._engine import TemplateEngine
    from topology.operate import jinja_vars_memo

    if sys.argv[1] == "memo":
        assert jinja_vars_memo.install()
    renders = collections.Counter()
    template = TemplateEngine.template

    def counted(self, variable, **kwargs):
        if isinstance(variable, str):
            renders[str(variable)] += 1
        return template(self, variable, **kwargs)

    TemplateEngine.template = counted
    variables = {"base": T(sys.argv[2]), "a": T("{{ base | sum }}"), "b": T("{{ base | length }}"),
                 "c": T("{{ a + b + (base | max) }}"), "d": T("{{ item * 10 + c }}"), "item": 1,
                 "unsafe": "{{ base }}", "words": T("{{ ['x', 'y'] }}")}
    templar = Templar(loader=DataLoader(), variables=variables)
    out = {"first": templar.template(T("{{ [a, b, c, d, unsafe] }}"))}
    out["base renders"] = renders[sys.argv[2]]
    # a loop's next item: the same mapping, one value replaced in place, the setter called again
    variables["item"] = 2
    templar.available_variables = variables
    out["next item"] = templar.template(T("{{ d }}"))
    # a result registered into the same mapping without the setter (as a loop and until do)
    variables["result"] = {"rc": 0}
    out["registered"] = templar.template(T("{{ result.rc }}"))
    variables["result"] = {"rc": 1}
    out["registered again"] = templar.template(T("{{ result.rc }}"))
    # a template that appends to what a variable renders to, then a later render of the variable
    out["appended"] = templar.template(T("{% set w = words %}{{ w.append('z') or w | join }}"))
    out["appended again"] = templar.template(T("{{ words | join }}"))
    # a conditional with its own locals on top, and a new mapping
    out["conditional"] = templar.evaluate_conditional(T("c > item"))
    templar.available_variables = dict(variables, item=3)
    out["new mapping"] = templar.template(T("{{ d }}"))
    print(json.dumps(out))
""")


def render(mode: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", RENDER, mode, BASE], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def test_this_ansible_core_has_the_hook():
    assert jinja_vars_memo.install(), (
        "ansible-core changed: its lazy variables cannot be shared any more "
        "(topology/operate/jinja_vars_memo.py); the full check would run without it")


def test_renders_are_the_same_with_and_without_it_and_follow_changed_variables():
    plain, shared = render("plain"), render("memo")
    plain_base, shared_base = plain.pop("base renders"), shared.pop("base renders")
    # the one difference: a change a template makes to what a variable rendered to lasts for the
    # task's later renders (why the roles change only containers they made, the test below)
    assert (plain.pop("appended again"), shared.pop("appended again")) == ("xy", "xyz")
    assert shared == plain
    assert shared["first"] == [6, 3, 12, 22, "{{ base }}"]
    assert (shared["next item"], shared["new mapping"]) == (32, 42)
    assert (shared["registered"], shared["registered again"]) == (0, 1)
    assert shared["conditional"] is True
    # base is read by a, b, c (through a and b too) and d: once per reader without, once with
    assert plain_base > 1 and shared_base == 1, (plain_base, shared_base)


MUTATION = re.compile(r"\b([a-z_][a-z_0-9]*)(?:\.[a-z_][a-z_0-9]*)*"
                      r"\.(?:append|extend|insert|update|setdefault|pop|remove|clear)\(")
JINJA_FILES = ("templates/**/*.j2", "vars/*.yml", "defaults/*.yml", "tasks/*.yml")


def test_the_roles_templates_change_only_containers_they_made():
    """A template that changed a container a variable rendered to would see it changed in the task's
    later renders with the memo (without it, the next render starts from the variable again): every
    container a role's Jinja changes is one it made itself with `{% set NAME = ... %}`."""
    changed_elsewhere, seen = [], 0
    for role in sorted((ROOT / "roles").iterdir()):
        for pattern in JINJA_FILES:
            for path in role.glob(pattern):
                text = path.read_text()
                names = MUTATION.findall(text)
                seen += len(names)
                for name in set(names):
                    if not re.search(r"\{%-?\s*set\s+" + name + r"\s*=", text):
                        changed_elsewhere.append(f"{path.relative_to(ROOT)}: {name}")
    assert seen > 0, "no container changes found: the pattern no longer matches the roles' Jinja"
    assert not changed_elsewhere, changed_elsewhere


def rendered_reads(tmp_path: Path, mitogen: bool) -> int:
    """How many times a play's variable that three others read is rendered in one task: the count of
    lines its pipe lookup appends."""
    from tests.roles.playbook import debug_values, run_play

    log = tmp_path / f"renders-{mitogen}.log"
    tasks = [{"name": "read base through three others", "ansible.builtin.debug": {"msg": "{{ [a, b, c] }}"},
              "vars": {"base": "{{ lookup('ansible.builtin.pipe', 'echo x >> " + str(log) + "; echo 1') }}",
                       "a": "{{ base }}", "b": "{{ base }}{{ base }}", "c": "{{ a }}{{ b }}"}}]
    results = run_play(tmp_path, tasks, {"node1": {}}, mitogen=mitogen)
    assert debug_values(results["node1"]) == [["1", "11", "111"]]
    return len(log.read_text().splitlines())


def test_the_strategy_shares_the_variables_in_its_workers(tmp_path):
    """Through ansible.cfg's strategy (mitogen_linear) a worker renders the variable once for the
    task; through ansible-core's own linear strategy (no memo) once per read."""
    assert rendered_reads(tmp_path, mitogen=True) == 1
    assert rendered_reads(tmp_path, mitogen=False) > 1
