"""The README's main job runs end to end and shows what it promises."""

from __future__ import annotations

from simsched import demo


def test_demo_prints_comparison_and_writes_figure(tmp_path, capsys):
    assert demo.main(["--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "PDF over WS" in out and "L2 misses" in out
    png = tmp_path / "timeline.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for run in ("ws-seed0", "ws-seed1", "ws-seed2", "pdf-seed0"):
        assert (tmp_path / run / "result.json").exists()
        assert (tmp_path / run / "config.json").exists()
