"""ansible.cfg's strategy: mitogen_linear runs modules in one persistent interpreter per host
(mitogen renames that process `python(mitogen:...)`), and without PyPI mitogen the plugin falls
back to ansible.builtin.linear with a warning instead of failing the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PLAY = [{"hosts": "localhost", "gather_facts": False, "tasks": [
    {"name": "Name the process that runs the module",
     "ansible.builtin.shell": 'tr "\\0" " " < /proc/$PPID/cmdline', "changed_when": False, "register": "parent"},
    {"name": "Show it", "ansible.builtin.debug": {"msg": "PARENT={{ parent.stdout }}"}},
]}]


def run_play(tmp: Path, extra_env: dict[str, str]) -> subprocess.CompletedProcess:
    (tmp / "play.yml").write_text(yaml.safe_dump(PLAY))
    env = os.environ | {"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(tmp / "facts"), **extra_env}
    env.pop("ANSIBLE_STRATEGY", None)
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(tmp / "play.yml")],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)


def parent_of_module(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return next(line for line in proc.stdout.splitlines() if "PARENT=" in line)


def test_ansible_cfg_runs_modules_in_a_mitogen_interpreter(tmp_path):
    proc = run_play(tmp_path, {})
    assert "(mitogen:" in parent_of_module(proc)
    assert "mitogen is not installed" not in proc.stdout + proc.stderr


def test_without_mitogen_the_plugin_falls_back_to_linear(tmp_path):
    fake = tmp_path / "fake" / "ansible_mitogen"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no mitogen here')\n")
    proc = run_play(tmp_path, {"PYTHONPATH": str(fake.parent)})
    assert "(mitogen:" not in parent_of_module(proc)
    warning = "strategy mitogen_linear: PyPI mitogen is not installed; running ansible.builtin.linear"
    assert warning in proc.stdout + proc.stderr


LOAD_COUNTING_FILTER = """import os
with open(os.environ["FILTER_LOADS"], "a") as f:  # each time this source is loaded, by which process
    f.write(f"{os.getpid()}\\n")


class FilterModule:
    def filters(self):
        return {"counted": lambda value: value}
"""


def test_the_filter_plugins_are_loaded_once_before_the_workers_fork(tmp_path):
    """A worker is forked per host-task; one whose task uses a filter loaded every filter plugin
    from source again (the parent never had): the strategy loads them once in ansible-playbook."""
    (tmp_path / "filters").mkdir()
    (tmp_path / "filters" / "counting.py").write_text(LOAD_COUNTING_FILTER)
    loads = tmp_path / "loads"
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": f"Use the filter {i}", "ansible.builtin.debug": {"msg": "{{ 'x' | counted }}"}} for i in range(4)]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    env = os.environ | {"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(tmp_path / "facts"),
                        "ANSIBLE_FILTER_PLUGINS": str(tmp_path / "filters"), "FILTER_LOADS": str(loads)}
    env.pop("ANSIBLE_STRATEGY", None)
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(tmp_path / "play.yml")],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.count("msg: x") == 4, proc.stdout  # ansible.cfg's yaml result format
    assert len(loads.read_text().split()) == 1, loads.read_text()
