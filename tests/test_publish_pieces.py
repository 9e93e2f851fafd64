"""`publish` takes a file in pieces and never holds it whole (issue 39: labels.csv and layout.json
are 100 MB each at 100k GPUs): each piece is compared with the current generation's file and
written as it comes. What lands on disk is exactly the pieces joined, whatever the cut; an
unchanged file, cut differently, changes nothing; a stream that fails leaves the old set."""

from __future__ import annotations

import os
import weakref
from pathlib import Path

import pytest

from topology.render.files import publish


def pieces(text: str, size: int):
    return (text[k:k + size] for k in range(0, len(text), size))


def shown(out) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


def generations(tmp_path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir() if ".gen-" in p.name)


BIG = "".join(f"row-{n:06d},ü,{n * 7}\n" for n in range(20_000))  # a non-ASCII char: UTF-8 per piece


def test_pieces_land_as_the_joined_text(tmp_path):
    out = tmp_path / "out"
    changed = publish({out / "big.csv": pieces(BIG, 4096), out / "small.txt": "one\n"}, out)
    assert sorted(p.name for p in changed) == ["big.csv", "small.txt"]
    assert shown(out) == {"big.csv": BIG.encode(), "small.txt": b"one\n"}


def test_the_same_text_cut_otherwise_changes_nothing(tmp_path):
    out = tmp_path / "out"
    publish({out / "big.csv": BIG}, out)
    first = generations(tmp_path)
    assert publish({out / "big.csv": pieces(BIG, 777)}, out) == []
    assert generations(tmp_path) == first  # no new generation: nothing was written


@pytest.mark.parametrize("new", [
    BIG[:150_000] + "X" + BIG[150_001:],  # a byte differs deep inside: the matched bytes come from the old file
    BIG[:-5],  # a prefix of the old text
    BIG + "row-tail\n",  # the old text is a prefix of the new
    "",  # empty
], ids=["differs-inside", "shorter", "longer", "empty"])
def test_a_changed_text_is_written_whole(tmp_path, new):
    out = tmp_path / "out"
    publish({out / "big.csv": BIG, out / "same.txt": "kept\n"}, out)
    changed = publish({out / "big.csv": pieces(new, 5000), out / "same.txt": pieces("kept\n", 2)}, out)
    assert [p.name for p in changed] == ["big.csv"]
    assert shown(out) == {"big.csv": new.encode(), "same.txt": b"kept\n"}


def test_a_stream_that_fails_mid_file_leaves_the_old_set(tmp_path):
    out = tmp_path / "out"
    publish({out / "big.csv": BIG}, out)
    before, gens = shown(out), generations(tmp_path)

    def failing():
        yield from pieces(BIG[:100_000] + "changed", 4096)
        raise RuntimeError("renderer failed")

    with pytest.raises(RuntimeError, match="renderer failed"):
        publish({out / "big.csv": failing()}, out)
    assert shown(out) == before
    assert generations(tmp_path) == gens


@pytest.mark.parametrize("first", [True, False], ids=["first-plan", "re-plan"])
def test_no_piece_is_held_once_the_next_is_made(tmp_path, first):
    """Each piece is a str subclass (weakly referable): when the stream makes a piece, every piece
    before the one just handed over is gone, on a first plan (written) and a re-plan (compared)."""
    out = tmp_path / "out"
    text = BIG if first else BIG[:-1] + "!"
    if not first:
        publish({out / "big.csv": BIG}, out)

    class Piece(str):
        pass

    refs: list[weakref.ref] = []
    held: list[int] = []

    def tracked():
        for piece in pieces(text, 4096):
            held.append(sum(r() is not None for r in refs[:-1]))
            p = Piece(piece)
            refs.append(weakref.ref(p))
            yield p
            del p

    publish({out / "big.csv": tracked()}, out)
    assert len(refs) > 50
    assert max(held) == 0, f"up to {max(held)} earlier pieces were held"
    assert (out / "big.csv").read_bytes() == text.encode()


def test_a_kept_mode_survives_a_streamed_rewrite(tmp_path):
    out = tmp_path / "out"
    publish({out / "big.csv": BIG}, out)
    os.chmod(out / "big.csv", 0o640)
    publish({out / "big.csv": pieces(BIG + "more\n", 4096)}, out)
    assert (out / "big.csv").stat().st_mode & 0o777 == 0o640


def test_the_plan_hands_its_large_files_over_in_pieces():
    """The writers cut their files (bench/bench_plan.py's 1k pod: labels.csv, layout.json and the
    NetBox interfaces are about 1 MB each there, 36-104 MB at 100k GPUs): no piece over 1 MB, the
    largest files in several, and the pieces join to the whole text iter_artifacts gives (which
    tests/test_artifact_identity.py holds to the record)."""
    from tests.artifact_identity import bench_spec
    from topology.layout.build import build
    from topology.render.artifacts import iter_artifact_pieces, iter_artifacts
    from topology.render.pieces import pieces_of

    layout = build(bench_spec("1k"))
    cut = {path: [p.encode() for p in pieces_of(pieces)]
           for path, pieces in iter_artifact_pieces(layout, Path("/o"), Path("/i"))}
    whole = dict(iter_artifacts(layout, Path("/o"), Path("/i")))
    assert {p: b"".join(c) for p, c in cut.items()} == {p: t.encode() for p, t in whole.items()}
    largest = max(cut, key=lambda p: len(whole[p]))
    assert len(whole[largest]) > 1_000_000, "the pod is too small to show the cut"
    assert max(len(piece) for c in cut.values() for piece in c) < 1_000_000
    for name in ("labels.csv", "layout.json", "cabling.csv", "netbox/09-interfaces.csv"):
        assert len(cut[Path("/o") / name]) > 1, name
