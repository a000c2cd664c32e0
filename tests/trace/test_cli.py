"""The `simsched trace` commands: import, validate, info."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from simsched.cli import main
from simsched.trace import raw as R

from .test_raw import fib_records, write


def run(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_import_validate_info(tmp_path, capsys):
    raw = write(tmp_path / "fib.raw", fib_records(6), compress=True)
    sst = tmp_path / "fib.sst"
    code, _, err = run(["trace", "import", str(raw), "-o", str(sst), "--program", "fib"], capsys)
    assert code == 0 and "strands" in err
    code, out, _ = run(["trace", "validate", str(sst)], capsys)
    assert code == 0 and "ok" in out
    code, out, _ = run(["trace", "info", str(sst), "--json"], capsys)
    info = json.loads(out)
    for key in ("strands", "frames", "refs", "instructions", "footprint_lines", "work", "span"):
        assert key in info
    assert info["program"] == "fib" and info["frames"] == 25 and info["args"] == []
    # the program's arguments belong to the header too: without them a re-import of a
    # capture's raw stream was another trace (another digest) than the capture's
    again = tmp_path / "again.sst"
    argv = ["trace", "import", str(raw), "-o", str(again), "--program", "fib"]
    code, _, _ = run([*argv, "--arg", "6", "--arg", "-v"], capsys)
    assert code == 0
    code, out, _ = run(["trace", "info", str(again), "--json"], capsys)
    assert json.loads(out)["args"] == ["6", "-v"]
    with_args = R.import_raw(raw, tmp_path / "api.sst", program="fib", args=["6", "-v"])
    assert json.loads(out)["digest"] == with_args.digest != info["digest"]


def test_import_names_the_program_in_utf8(tmp_path, capsys):
    """The default program, the raw file's stem, was a lone surrogate for a byte that is not
    UTF-8 (b"fib\\xff"), and a run of the trace failed in the results' Parquet table with a
    traceback; such a --program is refused in one line."""
    raw = write(tmp_path / os.fsdecode(b"fib\xff.raw"), fib_records(4))
    sst = tmp_path / "fib.sst"
    code, _, _ = run(["trace", "import", str(raw), "-o", str(sst)], capsys)
    assert code == 0
    code, out, _ = run(["trace", "info", str(sst), "--json"], capsys)
    assert json.loads(out)["program"] == "fib\\xff"
    argv = ["trace", "import", str(raw), "-o", str(tmp_path / "x.sst")]
    code, _, err = run([*argv, "--program", os.fsdecode(b"a\xff")], capsys)
    assert code == 2 and "--program 'a\\udcff': expected one line of UTF-8 text" in err
    assert not (tmp_path / "x.sst").exists()


def test_validate_detects_flipped_chunk_byte(tmp_path, capsys):
    raw = write(tmp_path / "fib.raw", fib_records(9))
    sst = tmp_path / "fib.sst"
    R.import_raw(raw, sst)
    data = bytearray(sst.read_bytes())
    data[170] ^= 0x10  # inside the first chunk
    sst.write_bytes(bytes(data))
    code, _, err = run(["trace", "validate", str(sst)], capsys)
    assert code == 2 and str(sst) in err and len(err.strip().splitlines()) == 1


def test_import_bad_stream_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.raw"
    bad.write_bytes(np.zeros(3, R.RAW_DTYPE).tobytes())
    code, _, err = run(["trace", "import", str(bad), "-o", str(tmp_path / "x.sst")], capsys)
    assert code == 2 and "bad header" in err
    assert not (tmp_path / "x.sst").exists()


def test_gen_then_info_and_truncated_copy(tmp_path, capsys):
    ms = tmp_path / "ms.sst"
    code, _, _ = run(["trace", "gen", "mergesort", "--param", "n=4096", "-o", str(ms)], capsys)
    assert code == 0
    code, out, _ = run(["trace", "info", str(ms), "--json"], capsys)
    info = json.loads(out)
    assert info["program"] == "mergesort" and info["refs"] > 4096 * 12
    assert info["span"] < info["work"]
    bad = tmp_path / "bad.sst"
    bad.write_bytes(ms.read_bytes()[:10000])
    code, _, err = run(["trace", "info", str(bad)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(bad) in err


def test_gen_bad_parameter_exit_2(tmp_path, capsys):
    code, _, err = run(
        ["trace", "gen", "mergesort", "--param", "n=abc", "-o", str(tmp_path / "x.sst")], capsys
    )
    assert code == 2 and "n" in err
    code, _, err = run(["trace", "gen", "nosuch", "-o", str(tmp_path / "x.sst")], capsys)
    assert code == 2 and "nosuch" in err


def test_import_of_a_trace_says_it_is_not_a_raw_stream(tmp_path, capsys):
    sst = tmp_path / "fib.sst"
    R.import_raw(write(tmp_path / "fib.raw", fib_records(5)), sst)
    code, _, err = run(["trace", "import", str(sst), "-o", str(tmp_path / "x.sst")], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{sst}: not a simsched raw stream" in err and "stray" not in err
    assert not (tmp_path / "x.sst").exists()


def test_gen_heat_info_shows_the_repeat(tmp_path, capsys, monkeypatch):
    heat = tmp_path / "heat.sst"
    params = ["--param", "nx=18", "--param", "ny=10", "--param", "cutoff=4", "--param", "iters=8"]
    code, _, _ = run(["trace", "gen", "heat", *params, "-o", str(heat)], capsys)
    assert code == 0
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run(["trace", "info", str(heat)], capsys)
    assert code == 0
    assert "run 4 times (iterations +2 each); the file stores" in " ".join(out.split())
    assert " references in 1 chunk " in " ".join(out.split()) + " "  # not "1 chunks"
    code, out, _ = run(["trace", "info", str(heat), "--json"], capsys)
    info = json.loads(out)
    assert info["iterations"] == 8 and info["repeat"]["count"] == 4
    assert info["repeat"]["stored_refs"] < info["refs"]
