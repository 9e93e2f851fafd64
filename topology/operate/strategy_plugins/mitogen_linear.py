"""Ansible strategy `mitogen_linear` (PyPI mitogen), ansible.cfg's default: the linear strategy with
one persistent Python interpreter per host for the whole run instead of a new process per task,
reached over the same SSH settings (2.3-2.7x fewer seconds per host-task, docs/operations.md,
"Speed"). ansible.cfg points strategy_plugins here so that it works without knowing where pip put
ansible_mitogen. Where mitogen is not installed (ansible-playbook run by hand from a bare
ansible-core), it falls back to ansible.builtin.linear with a warning instead of failing.

Either way each play first loads the Jinja filter and test plugins in ansible-playbook itself
(warm_jinja_plugins): Ansible forks a worker per host-task, and a worker whose task uses a filter
or test otherwise loads every one of them from source itself, the parent never having done it
(a tenth of the controller's CPU in a no-op `apply --full`, docs/operations.md "Seventh pass")."""

from ansible.plugins.loader import filter_loader, test_loader
from ansible.utils.display import Display


def warm_jinja_plugins() -> None:
    """Load the filter and test plugins (builtin and configured paths) once in this process, so
    that the workers forked from it inherit them instead of each loading them again."""
    for loader in (filter_loader, test_loader):
        for _ in loader.all():
            pass


class WarmPluginsFirst:
    """A strategy that warms the Jinja plugins in ansible-playbook before each play runs."""

    def run(self, iterator, play_context):
        warm_jinja_plugins()
        return super().run(iterator, play_context)


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
