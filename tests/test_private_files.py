"""One atomic writer for every generated file (topology/render/files.write_atomic) and the private
records under .runs/ (topology/operate/private_files.write_private): modes as the OS reports them."""

from __future__ import annotations

import os
import stat

import pytest

from topology.operate.private_files import write_private
from topology.render.files import write_atomic


@pytest.fixture
def open_umask():
    old = os.umask(0)  # the most permissive umask: any mode we see is the one we set
    yield
    os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_write_atomic_takes_a_mode_and_sets_it_on_an_unchanged_file(tmp_path, open_umask):
    path = tmp_path / "record.json"
    path.write_text("{}")
    os.chmod(path, 0o644)
    assert write_atomic(path, "{}", mode=0o600)  # same bytes, wrong mode: rewritten
    assert mode(path) == 0o600 and path.read_text() == "{}"
    assert not write_atomic(path, "{}", mode=0o600)  # now nothing to do


def test_write_private_is_0600_in_a_0700_folder(tmp_path, open_umask):
    path = tmp_path / "runs" / "r1" / "record.json"
    write_private(path, "secret")
    assert mode(path) == 0o600 and mode(path.parent) == 0o700 and path.read_text() == "secret"


@pytest.mark.parametrize("write", [write_atomic, write_private])
def test_a_link_at_the_path_is_replaced_never_written_through(tmp_path, write):
    outside = tmp_path / "outside"
    outside.write_text("keep")
    (tmp_path / "d").mkdir(mode=0o700)
    path = tmp_path / "d" / "f"
    path.symlink_to(outside)
    write(path, "new")
    assert outside.read_text() == "keep"
    assert not path.is_symlink() and path.read_text() == "new"
