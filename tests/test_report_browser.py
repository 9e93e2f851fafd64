"""The report in a real browser: headless Chromium loads each kind of page (overview, a rack, all racks, an SU),
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
        for name, page in (("overview", "index.html"), ("rack", f"{rack}.html"), ("racks", "racks.html"),
                           ("su", "su-01.html"), ("broken", "broken.html"))
    }  # in parallel: each launch takes seconds on a loaded machine
    messages = {name: console_messages(proc) for name, proc in runs.items()}
    kinds = ("overview", "rack", "racks", "su")  # every kind of page the report writes
    assert all(messages[k] == [] for k in kinds), messages
    assert any("noSuchFunction is not defined" in m for m in messages["broken"]), messages["broken"]
    for name in kinds:
        width, height, raw = png_pixels(tmp_path / f"{name}.png")
        assert (width, height) == (WIDTH, HEIGHT)
        assert len(set(raw[:: 7])) > 40, f"{name}: the screenshot is nearly blank"  # drawn, not a white page


PDFTOTEXT = shutil.which("pdftotext")


@pytest.mark.timeout(120)
@pytest.mark.skipif(not PDFTOTEXT, reason="pdftotext not installed (scripts/bootstrap.sh installs poppler-utils)")
def test_a_rack_page_prints_as_its_floor_sheet(tmp_path):
    """Chromium's own print engine lays the rack page out on paper (the print stylesheet): the
    navigation is gone and every cable of the rack is on the sheet with its ID, metres and part,
    however long the schedule runs (rows are never cut off by a scroll box)."""
    from topology.render.labels import cable_labels

    layout = stack_layout("roce-1k")
    write_all(render_report(layout, tmp_path))
    rack = next(r.name for r in layout.racks if r.kind == "network")
    pdf = tmp_path / "rack.pdf"
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-pdf-header-footer",
         f"--user-data-dir={tmp_path / 'profile'}", f"--print-to-pdf={pdf}",
         (tmp_path / "report" / f"{rack}.html").as_uri()],
        capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0 and pdf.is_file(), proc.stderr[-2000:]
    text = subprocess.run([PDFTOTEXT, "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    pages = text.count("\f")
    words = set(text.split())
    assert "bill of materials" not in text  # the header's navigation is not printed
    ours = [c for c in cable_labels(layout) if rack in (c.a_rack, c.b_rack)]
    assert len(ours) > 40 and pages > 1
    missing = [c.cable_id for c in ours if c.cable_id not in words]
    assert not missing, missing[:10]
    assert all(c.link.cable_part in words for c in ours)
