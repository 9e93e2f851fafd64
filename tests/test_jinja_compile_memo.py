"""The Jinja compile memo (topology/operate/jinja_compile_memo.py): what Ansible renders with it is what
it renders without it, for every setting the compiled code depends on; a warmed string is not
compiled again; and this ansible-core still has what the memo reads (an upgrade that drops it fails
here instead of silently losing the speed)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from topology.operate import jinja_compile_memo

# Role-var and task-arg shapes of the roles: backslashes inside expression strings (escaped by
# Ansible's lexer for a variable, not for a template file), regex back-references, whitespace
# control, a `#jinja2:` override header, a block with trim_blocks, an undefined-default chain.
SOURCES = [
    "{{ 'a\\nb' }}",
    "{{ 'x' | regex_replace('(x)', '\\\\1\\\\1') }}",
    "{{ value.split('\\n') | length }}",
    "{% for i in items %}{{ i }}\n{% endfor %}",
    "{%- for i in items -%} {{ i }} {%- endfor %}",
    "#jinja2: trim_blocks: False\n{% if true %}\nkept\n{% endif %}",
    "{{ missing | default(items | map('string') | join(',')) }}",
    "plain {{ value }} text {# a comment #}",
]

RENDER = textwrap.dedent("""
    import json, sys
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template
    from topology.operate import jinja_compile_memo

    sources = json.loads(sys.argv[1])
    if sys.argv[2] == "memo":
        assert jinja_compile_memo.install()
        warmed = jinja_compile_memo.warm([[trust_as_template(s) for s in sources]])
    else:
        warmed = 0
    templar = Templar(loader=DataLoader(), variables={"items": [1, 2], "value": "p\\\\nq"})
    out = {}
    for escape in (True, False):
        for source in sources:
            out[f"{escape} {source}"] = repr(templar.template(trust_as_template(source), escape_backslashes=escape))
    print(json.dumps({"out": out, "warmed": warmed, "entries": len(jinja_compile_memo.memo)}))
""")


def render(mode: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", RENDER, json.dumps(SOURCES), mode],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def test_this_ansible_core_has_what_the_memo_reads():
    assert jinja_compile_memo.install(), (
        "ansible-core changed: the Jinja compile memo cannot read its compile context any more "
        "(topology/operate/jinja_compile_memo.py); the full check would run without it")


def test_rendering_is_the_same_with_the_memo():
    plain, memoized = render("plain"), render("memo")
    assert plain["out"] == memoized["out"]
    # the escape flag is part of the key: the two renders of a backslash expression differ
    assert plain["out"]["True {{ 'a\\nb' }}"] != plain["out"]["False {{ 'a\\nb' }}"]


def test_a_warmed_string_is_not_compiled_again():
    # every source but the `#jinja2:` one is warmed; rendering with the escape flag of a variable
    # adds nothing, rendering as a template file (no escaping) adds one entry per source
    memoized = render("memo")
    warmable = [s for s in SOURCES if not s.startswith("#jinja2:")]
    assert memoized["warmed"] == len(warmable)
    assert memoized["entries"] == len(warmable) + 1 + len(SOURCES)


class OtherHostsVars(dict):
    """A mapping that renders what it holds when read (as hostvars and lazy containers do)."""

    def values(self):
        raise AssertionError("rendered")

    def __iter__(self):
        raise AssertionError("rendered")


def test_warming_reads_containers_as_stored_and_skips_hostvars():
    from ansible.template import trust_as_template

    held = trust_as_template("{{ held }}")
    task_vars = {"hostvars": object(), "vars": {"x": trust_as_template("{{ not_walked }}")},
                 "role_var": OtherHostsVars(a=[held, trust_as_template("no template")])}
    strings = [s for value in jinja_compile_memo.task_values(task_vars, {"msg": "{{ untrusted }}"})
               for s in jinja_compile_memo.template_strings(value)]
    assert strings == [held]
