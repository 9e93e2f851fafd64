"""Ansible strategy `mitogen_linear` (PyPI mitogen), ansible.cfg's default: the linear strategy with
one persistent Python interpreter per host for the whole run instead of a new process per task,
reached over the same SSH settings (2.3-2.7x fewer seconds per host-task, docs/operations.md,
"Speed"). ansible.cfg points strategy_plugins here so that it works without knowing where pip put
ansible_mitogen. Where mitogen is not installed (ansible-playbook run by hand from a bare
ansible-core), it falls back to ansible.builtin.linear with a warning instead of failing.

Either way each play first loads the Jinja filter and test plugins in ansible-playbook itself
(warm_jinja_plugins): Ansible forks a worker per host-task, and a worker whose task uses a filter
or test otherwise loads every one of them from source itself, the parent never having done it
(a tenth of the controller's CPU in a no-op `apply --full`, docs/operations.md "Seventh pass"),
and before each host-task's worker is forked it compiles the task's template strings there
(topology/operate/jinja_compile_memo.py): a worker otherwise compiles every role var it renders
again, at every use (a quarter of the controller's CPU, docs/operations.md "Tenth pass"). A worker
also renders each of a task's variables once for the task instead of once per template that reads it
(topology/operate/jinja_vars_memo.py, docs/operations.md "Eleventh pass")."""

from ansible.plugins.loader import filter_loader, test_loader
from ansible.utils.display import Display

try:
    from topology.operate import jinja_compile_memo, jinja_vars_memo
except ImportError:  # ansible-playbook run without superpod installed: no memo
    jinja_compile_memo = jinja_vars_memo = None


def warm_jinja_plugins() -> None:
    """Load the filter and test plugins (builtin and configured paths) once in this process, so
    that the workers forked from it inherit them instead of each loading them again."""
    for loader in (filter_loader, test_loader):
        for _ in loader.all():
            pass


class WarmPluginsFirst:
    """A strategy that warms the Jinja plugins in ansible-playbook before each play runs (and shares a
    templar's lazy variables between its renders), and the compiled templates of each host-task
    before its worker is forked."""

    def run(self, iterator, play_context):
        warm_jinja_plugins()
        if jinja_vars_memo is not None:
            jinja_vars_memo.install()
        return super().run(iterator, play_context)

    def _queue_task(self, host, task, task_vars, play_context):
        if jinja_compile_memo is not None:
            jinja_compile_memo.warm(jinja_compile_memo.task_values(task_vars, task.args))
        return super()._queue_task(host, task, task_vars, play_context)


try:
    import ansible_mitogen.loaders
    import ansible_mitogen.strategy
except ImportError:
    from ansible.plugins.strategy.linear import StrategyModule as _Linear

    class StrategyModule(WarmPluginsFirst, _Linear):
        def __init__(self, tqm):
            Display().warning("strategy mitogen_linear: PyPI mitogen is not installed; running ansible.builtin.linear "
                              "(pip install 'superpod[ansible]' for the faster strategy)")
            super().__init__(tqm)
else:
    class StrategyModule(WarmPluginsFirst, ansible_mitogen.strategy.StrategyMixin,
                         ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)):
        pass
