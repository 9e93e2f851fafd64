"""The report in a real browser: headless Chromium loads the overview and a rack elevation,
takes screenshots, and logs no console message (the report logs nothing of its own, so any
message -- an uncaught error, a failed load -- is a defect). A page with a planted error proves
the check sees one."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from tests.conftest import stack_layout
from topology.render.files import write_all
from topology.render.report import render_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(not CHROMIUM, reason="chromium not installed (scripts/bootstrap.sh installs it)")
CONSOLE = re.compile(r":CONSOLE[:(]\d*\)?\]? ?(.*)")
WIDTH, HEIGHT = 1280, 900


def start(page: Path, shot: Path, profile: Path) -> subprocess.Popen:
    """Chromium prints every console message to stderr as INFO:CONSOLE with --enable-logging."""
    return subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}",
         f"--screenshot={shot}", page.as_uri()],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def console_messages(proc: subprocess.Popen) -> list[str]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    return [m.group(1) for line in (out + err).splitlines() if (m := CONSOLE.search(line))]


def png_pixels(path: Path) -> tuple[int, int, bytes]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    width, height = struct.unpack(">II", data[16:24])
    idat, pos = b"", 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    return width, height, zlib.decompress(idat)


@pytest.mark.timeout(120)
def test_overview_and_a_rack_elevation_open_in_chromium_without_console_errors(tmp_path):
    layout = stack_layout("lab")
    files = render_report(layout, tmp_path)
    write_all(files)
    report = tmp_path / "report"
    rack = next(r.name for r in layout.racks if r.kind == "compute")
    broken = report / "broken.html"  # the same page with a planted error: the check must catch it
    planted = "<script>noSuchFunction();</script></body>"
    broken.write_text((report / "index.html").read_text().replace("</body>", planted))
    runs = {
        name: start(report / page, tmp_path / f"{name}.png", tmp_path / f"profile-{name}")
        for name, page in (("overview", "index.html"), ("rack", f"{rack}.html"), ("broken", "broken.html"))
    }  # in parallel: each launch takes seconds on a loaded machine
    messages = {name: console_messages(proc) for name, proc in runs.items()}
    assert messages["overview"] == [] and messages["rack"] == [], messages
    assert any("noSuchFunction is not defined" in m for m in messages["broken"]), messages["broken"]
    for name in ("overview", "rack"):
        width, height, raw = png_pixels(tmp_path / f"{name}.png")
        assert (width, height) == (WIDTH, HEIGHT)
        assert len(set(raw[:: 7])) > 40, f"{name}: the screenshot is nearly blank"  # drawn, not a white page
