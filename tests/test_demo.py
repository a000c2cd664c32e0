"""The README's main job runs end to end and shows what it promises."""

from __future__ import annotations

import json
import statistics

from simsched import demo


def test_demo_prints_comparison_and_writes_figure(tmp_path, capsys, monkeypatch):
    drawn = []
    draw = demo.demo_figure
    monkeypatch.setattr(
        demo, "demo_figure", lambda t, runs: drawn.append(draw(t, runs)) or drawn[0]
    )
    assert demo.main(["--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "PDF over WS" in out and "L2 misses" in out
    png = tmp_path / "timeline.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    recs = {}
    for run in ("ws-seed0", "ws-seed1", "ws-seed2", "pdf-seed0"):
        assert (tmp_path / run / "result.json").exists()
        assert (tmp_path / run / "config.json").exists()
        recs[run] = json.loads((tmp_path / run / "result.json").read_text())

    ws_ax, pdf_ax, bars = drawn[0].axes
    # The timeline panels show the parallel region, not the serial start-up before it.
    left = ws_ax.get_xlim()[0]
    assert 0.2 * recs["ws-seed0"]["makespan_cycles"] < left
    assert "serial start-up before it" in pdf_ax.get_xlabel()
    # The WS panel says which seed it is, and that the table averages several.
    assert "seed 0, one of the 3 seeds" in ws_ax.get_title()
    assert f"{recs['ws-seed0']['L2_misses']:,} L2 misses" in ws_ax.get_title()
    # The L2-miss difference is drawn: one bar per scheduler, WS at its mean over seeds.
    widths = sorted(p.get_width() for p in bars.patches)
    ws_mean = statistics.fmean(recs[f"ws-seed{s}"]["L2_misses"] for s in range(3))
    assert widths == sorted([ws_mean, recs["pdf-seed0"]["L2_misses"]])
