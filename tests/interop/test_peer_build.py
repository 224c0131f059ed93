"""Building the peers: several processes compiling the same peer at once (a benchmark's group
members start together) end with one set of classes and no error."""

from __future__ import annotations

from pathlib import Path

import pytest

from peers.build import publish


def _compiled(path: Path, marker: str = "KafkaPeer.class") -> Path:
    path.mkdir()
    (path / marker).write_bytes(b"\xca\xfe\xba\xbe")
    return path


def test_the_first_finished_compile_is_moved_into_place(tmp_path: Path) -> None:
    staging = _compiled(tmp_path / "staging-1")
    publish(staging, tmp_path / "classes", "KafkaPeer.class")
    assert (tmp_path / "classes" / "KafkaPeer.class").exists() and not staging.exists()


def test_a_later_compile_of_the_same_source_is_dropped(tmp_path: Path) -> None:
    classes = _compiled(tmp_path / "classes")
    staging = _compiled(tmp_path / "staging-2")
    publish(staging, classes, "KafkaPeer.class")
    assert (classes / "KafkaPeer.class").exists() and not staging.exists()


def test_a_place_holding_something_else_is_an_error(tmp_path: Path) -> None:
    classes = _compiled(tmp_path / "classes", marker="Other.class")
    staging = _compiled(tmp_path / "staging-3")
    with pytest.raises(OSError):
        publish(staging, classes, "KafkaPeer.class")
