"""Ctrl-C (a real SIGINT to the ``gradcodes`` process) ends any command at once: one line on stderr, no traceback,
exit status 130, and the partial report where the command has one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from _faults import slack

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _interrupt(argv: list[str], after: float) -> tuple[int, str, str, float]:
    """Start ``python -m gradcodes ARGV``, wait until it printed to stderr or ``after`` seconds, send SIGINT;
    return (status, stdout, stderr, seconds from the signal to the exit)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "gradcodes", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(after)
    assert proc.poll() is None, "the command ended before the signal: give it more work"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err, time.monotonic() - sent


def test_sigint_ends_the_tour_with_130():
    status, out, err, took = _interrupt(["tour"], after=slack(4.0))
    assert status == 130, (status, out[-2000:], err[-2000:])
    assert "Traceback" not in err and err.strip().endswith("gradcodes: interrupted")
    assert "as expected" not in out                 # no summary claims the tour was complete
    assert took < slack(2.0)


def test_sigint_during_verify_prints_the_partial_report_and_exits_130():
    # ~12 million sets: minutes of work, interrupted after a few seconds
    status, out, err, took = _interrupt(["verify", "cyclic_mds", "-n", "70", "-s", "5", "--param", "field=real",
                                         "--limit", "20000000", "--workers", "1", "--no-search"],
                                        after=slack(5.0))
    assert status == 130, (status, out[-2000:], err[-2000:])
    assert "Traceback" not in err and "gradcodes: interrupted" in err
    assert "interrupted (Ctrl-C)" in out and "partial report, not a proof" in out
    assert "RECOVERY PROVEN" not in out and "UNPROVEN" in out
    assert took < slack(5.0)
