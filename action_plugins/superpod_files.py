"""superpod_files: a role's file writes in one round trip (issue 39: each template, copy or file
task costs the controller a worker fork, argument templating and a callback per host, on a
converged node too).

    - name: Write the role's files
      superpod_files:
        files:
          - {dest: /etc/foo, state: directory, owner: root, group: root, mode: "0755"}
          - {dest: /etc/foo/a.conf, src: a.conf.j2, mode: "0644", notify: [Restart foo]}
          - {dest: /etc/foo/b.json, content: "{{ foo_report | to_nice_json }}\\n", mode: "0644"}
          - {dest: /etc/foo/old.conf, state: absent}
          - {dest: /etc/foo/c.conf, src: c.conf.j2, vars: {port: 1}, enabled: "{{ foo_c | bool }}"}

Each entry: dest; state file (default), directory or absent; a file's src (a template found as
ansible.builtin.template finds it: the role's templates/), file_src (a text file copied as it is,
found as ansible.builtin.copy finds it: the role's files/) or content; owner, group, mode;
vars (extra variables for its template); enabled (false: the entry is left out, as a task's
`when` would skip it); notify (handlers to notify when this entry changed).

Every template is rendered here, on the controller, as ansible.builtin.template renders it (the
same search path, template variables and Jinja options), before anything is sent: a template
that fails names its file and nothing is written. Then one call of the module of the same name
(library/superpod_files.py) compares and writes what differs, in list order; check mode writes
nothing; the diff is per file (before/after, headed by its path). The result names each dest
(`files`, `changed_files`) and lists `managed` for the record (topology/operate/record_entries.py).
"""

from __future__ import annotations

import os

# _template_vars: the template action's own source of ansible_managed, template_path... (no public
# API offers them; ansible.builtin.template and the template lookup import the same function)
from ansible._internal._templating import _template_vars
from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template

ENTRY_KEYS = frozenset(("dest", "state", "src", "file_src", "content", "owner", "group", "mode", "vars", "enabled",
                        "notify"))
SENT_KEYS = ("dest", "state", "content", "owner", "group", "mode")
# ansible.builtin.template's defaults (trim_blocks on, the rest Jinja's)
TEMPLATE_OVERRIDES = {"trim_blocks": True, "lstrip_blocks": False, "newline_sequence": "\n"}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("files",))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        entries = self._entries()
        if any(e.get("notify") for e in entries) and self._task.notify:
            raise AnsibleActionFail("superpod_files: notify per entry or on the task, not both (the task's "
                                    "would replace the entries')")
        sent = [self._sent(entry, task_vars) for entry in entries]
        if not sent:
            return dict(result, changed=False, files=[], changed_files=[], managed=[])
        result.update(self._execute_module(module_name="ansible.legacy.superpod_files", module_args={"files": sent},
                                           task_vars=task_vars))
        # the module echoes its arguments (every file's content) as `invocation`, which the run's
        # events keep on disk: contents leave the node's result only in a --diff, as a template's do
        result.pop("invocation", None)
        if not self._task.diff:
            result.pop("diff", None)
        changed = set(result.get("changed_files") or [])
        notify = [h for e, s in zip(entries, sent, strict=True) if os.path.normpath(s["dest"]) in changed
                  for h in _as_list(e.get("notify"))]
        if notify:
            # what Ansible's task executor sets from a task's `notify:`: the strategy notifies
            # these handlers when the result is changed (each entry's own, not the whole list's)
            result["_ansible_notify"] = list(dict.fromkeys(notify))
        return result

    def _entries(self) -> list[dict]:
        files = self._task.args.get("files")
        if not isinstance(files, list):
            raise AnsibleActionFail(f"superpod_files: files must be a list; got {type(files).__name__}")
        out = []
        for entry in files:
            if not isinstance(entry, dict) or not isinstance(entry.get("dest"), str) or not entry["dest"]:
                raise AnsibleActionFail(f"superpod_files: each entry needs a dest; got {entry!r}")
            unknown = set(entry) - ENTRY_KEYS
            if unknown:
                raise AnsibleActionFail(f"superpod_files: {entry['dest']}: unknown keys {sorted(unknown)}")
            if boolean(entry.get("enabled", True), strict=True):
                out.append(entry)
        return out

    def _sent(self, entry: dict, task_vars: dict) -> dict:
        """The entry as the module takes it: a template rendered into content."""
        state = entry.get("state", "file")
        has = [k for k in ("src", "file_src", "content") if entry.get(k) is not None]
        if state == "file" and len(has) != 1:
            raise AnsibleActionFail(f"superpod_files: {entry['dest']}: a file needs one of src, file_src, content")
        if state != "file" and has:
            raise AnsibleActionFail(f"superpod_files: {entry['dest']}: {has[0]} is for state file only")
        sent = {k: entry[k] for k in SENT_KEYS if entry.get(k) is not None}
        if entry.get("src") is not None:
            sent["content"] = self._render(entry, task_vars)
        elif entry.get("file_src") is not None:
            sent["content"] = self._static(entry)
        elif state == "file" and not isinstance(entry["content"], str):
            raise AnsibleActionFail(f"superpod_files: {entry['dest']}: content must be a string")
        if "mode" in sent:
            sent["mode"] = str(sent["mode"])
        return sent

    def _static(self, entry: dict) -> str:
        """A role's file as ansible.builtin.copy finds it (files/), sent as text."""
        try:
            with open(self._find_needle("files", entry["file_src"]), "rb") as f:
                return f.read().decode("utf-8")
        except (AnsibleError, UnicodeDecodeError) as exc:
            raise AnsibleActionFail(f"superpod_files: {entry['dest']}: file_src {entry['file_src']}: {exc}") from exc

    def _render(self, entry: dict, task_vars: dict) -> str:
        """The template as ansible.builtin.template renders it (plugins/action/template.py)."""
        src, dest = entry["src"], entry["dest"]
        try:
            source = self._find_needle("templates", src)
            data = trust_as_template(self._loader.get_text_file_contents(source))
            searchpath = [*task_vars.get("ansible_search_path", []), self._loader._basedir, os.path.dirname(source)]
            searchpath = [q for p in searchpath for q in (os.path.join(p, "templates"), p)]
            render_vars = task_vars.copy()
            render_vars.update(_template_vars.generate_ansible_template_vars(
                path=src, fullpath=source, dest_path=dest,
                include_ansible_managed="ansible_managed" not in render_vars))
            render_vars.update(entry.get("vars") or {})
            templar = self._templar.copy_with_new_env(searchpath=searchpath, available_variables=render_vars)
            rendered = templar.template(data, escape_backslashes=False, overrides=TEMPLATE_OVERRIDES)
        except AnsibleError as exc:
            raise AnsibleActionFail(f"superpod_files: {dest}: template {src}: {exc.message}", orig_exc=exc) from exc
        return "" if rendered is None else str(rendered)


def _as_list(value) -> list:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)
