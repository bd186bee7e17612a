"""The threads that carry :mod:`gradcodes.torch`'s point-to-point messages over Gloo, whose requests complete only
in ``wait``: the master's parameter send per worker (``_Sender``), a one-shot send (``_Once``), a worker's control
receiver that ends a stuck process after the grace (``_Watchdog``); the tags and exit statuses they use.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any

from ._children import STOP

PARAM_TAG = 72
#: the control channel: the master's stop message on its own tag, received by a thread of every worker that is
#: always posted, so that it arrives even while the worker's parameter slots are full and its compute is stuck
CTRL_TAG = 73
#: a tag nothing is ever sent on: the master's receive on it, timed out, closes the link to a stuck worker
CUT_TAG = 74
#: the exit status of a worker process that ends itself because its compute did not return within the grace
#: after the stop message: 0, since the run it served has finished (a non-zero status would make torchrun's
#: agent stop the whole group, the master included, before it has returned its result)
STOPPED_STATUS = 0
#: the exit status of a worker process that ends itself because its link to the master failed before any stop
#: message (the master died: the run did not finish)
ORPHAN_STATUS = 1



class _Sender(threading.Thread):
    """Sends ``buf`` (a message buffer) to ``dst`` each time :meth:`send` is called; :attr:`busy` until the
    receiver took it. :meth:`stop` sends the stop message (header kind :data:`STOP`) once the send in flight, if
    any, is taken. A failed send ends the thread and is kept in :attr:`error`. After :meth:`want` found it busy,
    it reports ``key`` on ``notify`` once the send in flight is taken."""

    def __init__(self, dist: Any, buf: Any, dst: int, tag: int, notify: queue.Queue[int] | None = None,
                 key: int = 0) -> None:
        super().__init__(daemon=True, name=f"gradcodes-send-{dst}-{tag}")
        self.dist, self.buf, self.dst, self.tag = dist, buf, dst, tag
        self.notify, self.key = notify, int(key)
        self.wanted = False
        self.go = threading.Event()
        self.idle = threading.Event()
        self.idle.set()
        self.closing = False
        self.stopping = False
        self.lock = threading.Lock()
        self.error: BaseException | None = None
        #: called just before the stop message is sent (the master writes the final parameters into ``buf``)
        self.fill: Callable[[], None] | None = None

    @property
    def busy(self) -> bool:
        return not self.idle.is_set()

    def send(self, *, last: bool = False) -> None:
        self.idle.clear()
        self.closing = last
        self.go.set()

    def want(self) -> bool:
        """True when idle (the caller may fill the buffer and :meth:`send`); otherwise False, and ``key`` is
        reported on ``notify`` as soon as the send in flight is taken."""
        with self.lock:
            if not self.busy:
                return True
            self.wanted = True
            return False

    def stop(self) -> None:
        """Send the stop message now, or as soon as the receiver took the message in flight (a worker skipped at
        the stop because it was busy would never stop, and its parent would wait for it)."""
        with self.lock:
            self.stopping = True
            if not self.busy:
                if self.fill is not None:
                    self.fill()
                self.buf[1] = STOP
                self.send(last=True)

    def run(self) -> None:
        while True:
            self.go.wait()
            self.go.clear()
            try:
                self.dist.isend(self.buf, self.dst, tag=self.tag).wait()
            except Exception as exc:     # the receiver is gone: the master reports it (a run may have finished)
                self.error = exc
                return
            with self.lock:
                if self.stopping and not self.closing:       # stop() came while this send was in flight
                    if self.fill is not None:
                        self.fill()
                    self.buf[1] = STOP
                    self.send(last=True)
                    continue
                self.idle.set()
                if self.wanted and self.notify is not None:
                    self.wanted = False
                    self.notify.put(self.key)
            if self.closing:
                return


class _Once(threading.Thread):
    """Sends the message buffer ``buf`` once to ``dst`` on ``tag`` (the master's control stop message); a failed
    send is kept in :attr:`error` (the receiver's process has ended)."""

    def __init__(self, dist: Any, buf: Any, dst: int, tag: int) -> None:
        super().__init__(daemon=True, name=f"gradcodes-ctrl-{dst}")
        self.dist, self.buf, self.dst, self.tag = dist, buf, dst, tag
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.dist.isend(self.buf, self.dst, tag=self.tag).wait()
        except Exception as exc:     # the worker's process has ended: the master records it
            self.error = exc


class _Watchdog(threading.Thread):
    """A worker's control receiver: waits for the master's stop message on ``CTRL_TAG`` (its receive is posted
    for the whole run, so the message arrives however stuck the worker's compute is). Once it came (or the link to
    the master failed), :attr:`stopped` is set, and when :attr:`done` (set by :meth:`Worker.run` on its way out)
    is not set within ``wait`` seconds, the watchdog flushes stdout and stderr, prints why and ends the process
    with ``os._exit``: status :data:`STOPPED_STATUS` (0) after the stop message, :data:`ORPHAN_STATUS` (1) after a
    link failure. A worker stuck in user code (an endless loop, a sleep, a lock) thus cannot keep the job alive.
    """

    def __init__(self, dist: Any, buf: Any, rank: int, wait: float) -> None:
        super().__init__(daemon=True, name=f"gradcodes-watchdog-{rank}")
        self.dist, self.buf, self.rank, self.wait = dist, buf, int(rank), float(wait)
        self.stopped = threading.Event()
        self.done = threading.Event()
        self.why = ""

    def run(self) -> None:
        try:
            self.dist.irecv(self.buf, src=0, tag=CTRL_TAG).wait()
            self.why, status = "the master's stop message came", STOPPED_STATUS
        except Exception as exc:
            self.why, status = f"the link to the master failed ({exc})", ORPHAN_STATUS
        self.stopped.set()
        if self.done.wait(self.wait):
            return
        try:
            # written straight to stderr, not through the logger: a handler's lock held by the stuck compute thread
            # must not keep this process from ending
            sys.stdout.flush()
            print(f"gradcodes.torch: rank {self.rank}: {self.why} {self.wait:g} s ago and this worker has not "
                  f"finished (its compute has not returned): ending the process with status {status}",
                  file=sys.stderr, flush=True)
        finally:
            os._exit(status)
