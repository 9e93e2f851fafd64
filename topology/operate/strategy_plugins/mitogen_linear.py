"""Ansible strategy `mitogen_linear` (PyPI mitogen): the linear strategy with one persistent
Python interpreter per host instead of one process per task, reached over the same SSH
settings. ansible.cfg points strategy_plugins here so that `ANSIBLE_STRATEGY=mitogen_linear`
works without knowing where pip put ansible_mitogen (docs/operations.md: measured, opt-in)."""

import ansible_mitogen.loaders
import ansible_mitogen.strategy

Base = ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)


class StrategyModule(ansible_mitogen.strategy.StrategyMixin, Base):
    pass
