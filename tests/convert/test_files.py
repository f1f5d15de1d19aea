"""hhrlhf.convert.files: writing outputs through temporary files."""

from __future__ import annotations

from hhrlhf.convert.files import write_rows


def test_write_rows_never_writes_through_a_planted_part_link(tmp_path):
    """The temporary file has an unpredictable name: a link at ``NAME.part`` is left alone."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.jsonl.part").symlink_to(victim)
    assert write_rows([{"a": 1}], out) == 1
    assert victim.read_text() == "precious\n"
    assert out.read_text() == '{"a":1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "out.jsonl",
        "out.jsonl.part",
        "victim.txt",
    ]
