"""Compile each Jinja template source once per run, in ansible-playbook, before it forks (issue 39).

ansible-core compiles a template string again every time it renders it (`Environment.from_string`
keeps nothing), and a role var of `vars/main.yml` is rendered again at every use; each host-task
runs in a worker forked for it, so whatever a worker compiled is lost when it exits. In a no-op
`apply --full` a quarter of the controller's CPU went to compiling the same few hundred strings
again (docs/operations.md, "Tenth pass"). The strategy (strategy_plugins/mitogen_linear.py) calls
`warm` in ansible-playbook with each host-task's variables before forking its worker: every
trusted template string among them is compiled there once, and the forked workers inherit the
code objects.

The memo sits on `AnsibleEnvironment.compile` (Jinja's public method) and is keyed by everything
the generated code depends on: the source, the environment's syntax and code-generation settings
and whether Ansible's lexer escapes backslashes for this compile. A hit returns the code object
that compiling the same source with the same settings returns; nothing is stored on disk. The
escape flag is read from ansible-core 2.19's compile context (an internal): where that is missing
(another ansible-core) `install` reports False and nothing changes."""

from __future__ import annotations

import collections.abc as c
import types
import typing as t

try:
    from ansible._internal._templating import _jinja_bits as ansible_jinja
    from ansible.template import is_trusted_as_template
except ImportError:  # not ansible-core 2.19: no memo
    ansible_jinja = None

# Environment attributes the lexer and code generator read (Jinja 3.1, Ansible's overlays).
CODE_SETTINGS = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
                 "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
                 "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "optimized",
                 "is_async", "autoescape", "finalize")
# Sources from data rather than the playbook (a loop over many values) must not grow it unbounded.
MAX_ENTRIES = 50_000
TEMPLATE_MARKS = ("{{", "{%", "{#")

memo: dict[tuple, types.CodeType] = {}
warm_environment = None  # Ansible's default environment (as a TemplateEngine's), made at the first warm


def settings_key(environment) -> tuple:
    """What of ENVIRONMENT decides the code compiled from a source."""
    return (type(environment), tuple(environment.extensions),
            *(getattr(environment, name) for name in CODE_SETTINGS))


def escapes_backslashes() -> bool:
    """Whether Ansible's lexer escapes backslashes in this compile (its compile context's flag)."""
    context = ansible_jinja._TemplateCompileContext.current(optional=True)
    return bool(context and context.escape_backslashes)


def install() -> bool:
    """Put the memo on AnsibleEnvironment.compile (once). False where this ansible-core lacks what it reads."""
    if ansible_jinja is None or not hasattr(ansible_jinja, "_TemplateCompileContext"):
        return False
    environment_class = ansible_jinja.AnsibleEnvironment
    if getattr(environment_class.compile, "memoized", False):
        return True
    compile_source = environment_class.compile

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):
        # a parsed tree (compile_expression), raw Python source or the template debugger: as before
        if raw or not isinstance(source, str) or self._debuggable_template_source:
            return compile_source(self, source, name, filename, raw, defer_init)
        key = (str(source), name, filename, defer_init, escapes_backslashes(), settings_key(self))
        code = memo.get(key)
        if code is None:
            code = compile_source(self, source, name, filename, raw, defer_init)
            if len(memo) < MAX_ENTRIES:
                memo[key] = code
        return code

    compile.memoized = True
    environment_class.compile = compile
    return True


def template_strings(value: t.Any) -> c.Iterator[str]:
    """The trusted strings in VALUE (nested lists and dicts) that Ansible would compile. A container
    is read as stored (dict.values, list iteration): a lazy one would render what it holds, and
    other mappings (hostvars) are not walked at all."""
    if isinstance(value, str):
        if any(mark in value for mark in TEMPLATE_MARKS) and not value.startswith("#jinja2:") \
                and is_trusted_as_template(value):
            yield value
    elif isinstance(value, dict):
        for item in dict.values(value):
            yield from template_strings(item)
    elif isinstance(value, list):
        for item in list.__iter__(value):
            yield from template_strings(item)
    elif isinstance(value, tuple):
        for item in tuple.__iter__(value):
            yield from template_strings(item)


def task_values(task_vars: c.Mapping[str, t.Any], task_args: t.Any) -> list[t.Any]:
    """What a host-task's worker renders: its variables (not hostvars, the other hosts' variables,
    nor `vars`, the same variables again) and its arguments."""
    return [value for name, value in task_vars.items() if name not in ("hostvars", "vars")] + [task_args]


def warm(values: c.Iterable[t.Any]) -> int:
    """Compile every trusted template string in VALUES as Ansible renders a variable (its default
    environment, backslashes escaped), unless compiled already. Returns how many entries the memo gained."""
    global warm_environment
    if not install():
        return 0
    if warm_environment is None:
        warm_environment = ansible_jinja.AnsibleEnvironment()
    before = len(memo)
    with ansible_jinja._TemplateCompileContext(escape_backslashes=True):
        for value in values:
            for source in template_strings(value):
                try:
                    warm_environment.compile(source)  # the memo's own lookup: a known string costs its key
                except Exception:  # a broken template fails where Ansible renders it, with its own message
                    continue
    return len(memo) - before
