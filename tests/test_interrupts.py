"""simsched.interrupts: Ctrl-C while a program loads is one line and status 130."""

from __future__ import annotations

import signal
import subprocess
import sys

from simsched.interrupts import INTERRUPTED, restore, while_loading


def test_an_interrupt_while_loading_exits_130_in_one_line_and_runs_finally():
    code = (
        "import os, signal, sys\n"
        "from simsched.interrupts import while_loading\n"
        "sys.argv[0] = 'study.py'\n"
        "while_loading()\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    signal.pause()\n"
        "finally:\n"
        "    print('cleaned up')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == INTERRUPTED == 130
    assert done.stderr == "study.py: interrupted (Ctrl-C)\n"
    assert done.stdout == "cleaned up\n"


def test_restore_gives_back_only_its_own_handler():
    before = signal.getsignal(signal.SIGINT)
    try:
        while_loading()
        restore()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # someone else's choice stays
        restore()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
