"""superpod_plan_mismatch: the node differs from its plan (a GPU lost, a planned link missing).

The roles call it where they compare what a node has with what the plan says it must have,
instead of ansible.builtin.fail. What it returns depends on the run:
- apply (no --check): the task fails with `msg`: a node unlike its plan is never called done;
- drift (--check): the task reports *changed* with `msg`, and the host goes on, so the roles
  after it are still checked. `superpod drift` reads the named items from `plan_mismatch` and
  reports the host as drift (exit 1) naming each one (topology/operate/events.py), never as an
  error stop (exit 2), which stays for what really failed: a module, a connection, the syntax.

Both results carry `plan_mismatch`: the list of named items (one string per mismatch).
Shared by the roles through ansible.cfg's action_plugins (molecule/base.yml for the scenarios).
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

RESULT_KEY = "plan_mismatch"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("msg", "items"))
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        msg, items = self._task.args.get("msg"), self._task.args.get("items")
        if not isinstance(msg, str) or not isinstance(items, list):
            raise AnsibleActionFail("superpod_plan_mismatch: msg must be a string and items a list (one string per "
                                    f"mismatch); got msg {type(msg).__name__}, items {type(items).__name__}")
        items = [str(i) for i in items]
        if not msg or not items:
            raise AnsibleActionFail("superpod_plan_mismatch: msg and items (one per mismatch) must not be empty; "
                                    "call it only when there is a mismatch (`when:`)")
        result["msg"] = msg
        result[RESULT_KEY] = items
        if self._task.check_mode:
            result["changed"] = True  # drift: reported and named; the host goes on
        else:
            result["failed"] = True  # apply: a node unlike its plan fails
        return result
