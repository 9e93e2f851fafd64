"""Ansible strategy `mitogen_linear` (PyPI mitogen), ansible.cfg's default: the linear strategy with
one persistent Python interpreter per host for the whole run instead of a new process per task,
reached over the same SSH settings (2.3-2.7x fewer seconds per host-task, docs/operations.md,
"Speed"). ansible.cfg points strategy_plugins here so that it works without knowing where pip put
ansible_mitogen. Where mitogen is not installed (ansible-playbook run by hand from a bare
ansible-core), it falls back to ansible.builtin.linear with a warning instead of failing."""

from ansible.utils.display import Display

try:
    import ansible_mitogen.loaders
    import ansible_mitogen.strategy
except ImportError:
    from ansible.plugins.strategy.linear import StrategyModule as _Linear

    class StrategyModule(_Linear):
        def __init__(self, tqm):
            Display().warning("strategy mitogen_linear: PyPI mitogen is not installed; running ansible.builtin.linear "
                              "(pip install 'superpod[ansible]' for the faster strategy)")
            super().__init__(tqm)
else:
    class StrategyModule(ansible_mitogen.strategy.StrategyMixin,
                         ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)):
        pass
