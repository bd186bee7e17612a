"""Master--worker aggregation over ``torch.distributed`` point-to-point messages (Gloo on CPU).

Rank 0 is the master and rank ``i + 1`` runs worker ``i`` of the code. Every iteration the master sends the
flattened parameters to each worker (tagged with the iteration), receives the workers' coded messages into one
preallocated row per worker, stops at the first decodable set of responders (the wait policies of
:func:`gradcodes.simulate`: by default the earliest decodable set), decodes with cached coefficients into a
preallocated gradient vector and exposes it as the parameters' ``.grad`` (views, no copy), so any
``torch.optim`` optimizer steps as usual.

Semantics, as in :mod:`gradcodes.mpi`: a message carries its iteration in its first entry and is dropped when it
is stale; a message with a NaN or infinite entry is dropped and its sender treated as a straggler; when the
responders cannot decode within ``timeout`` seconds the master raises :class:`gradcodes.mpi.StragglerTimeout` naming the
missing ranks; a crash on any rank ends the job (``torchrun`` stops every process when one fails). A worker whose
previous parameters the master could not yet deliver (it is still busy) is skipped, so no buffer is overwritten
while a send is in flight, and nothing gradient-sized is allocated per iteration.

Gloo sends complete only when the receiver has posted the matching receive, and a request's ``is_completed``
turns true only once ``wait`` has returned, so each pending receive is waited on by a small thread that reports
its slot on a queue: the master keeps one receive posted per worker, a worker one for its next parameters while
it computes (so newer parameters can abandon an injected delay), and the master's sends run on one thread per
worker so that a busy worker is skipped rather than waited for.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import GradcodesRuntimeError, GradcodesTypeError, GradcodesValueError
from ..mpi._comm import StragglerTimeout
from ..mpi._delays import Delay, NoDelay

__all__ = ["FlatParams", "Master", "Worker", "AggregateInfo", "StragglerTimeout", "GRAD_TAG", "PARAM_TAG"]

GRAD_TAG = 71
PARAM_TAG = 72
_STOP = -1.0
_BYE = -2.0
#: iterations are carried modulo this in the messages' first entry (exact in float32)
_WRAP = 2 ** 24


def _dist() -> Any:
    import torch.distributed as dist

    return dist


class FlatParams:
    """The parameters of a model as one flat vector: copy in, copy out, and ``.grad`` as views of a vector."""

    def __init__(self, params: Sequence[Any]) -> None:
        self.params = [p for p in params]
        if not self.params:
            raise GradcodesValueError("params must hold at least one tensor")
        self.numels = [int(p.numel()) for p in self.params]
        self.size = sum(self.numels)
        self.dtype = self.params[0].dtype
        if any(p.dtype != self.dtype for p in self.params):
            raise GradcodesTypeError("all parameters must have one dtype")

    def _views(self, vec: Any) -> list[Any]:
        out, o = [], 0
        for p, c in zip(self.params, self.numels, strict=True):
            out.append(vec[o:o + c].view_as(p))
            o += c
        return out

    def read(self, out: Any) -> None:
        """Copy the parameters into ``out`` (length ``size``)."""
        for v, p in zip(self._views(out), self.params, strict=True):
            v.copy_(p.detach())

    def write(self, vec: Any) -> None:
        """Copy ``vec`` into the parameters."""
        for v, p in zip(self._views(vec), self.params, strict=True):
            p.data.copy_(v)

    def read_grads(self, out: Any) -> None:
        """Copy the parameters' gradients into ``out`` (zeros where a gradient is None)."""
        for v, p in zip(self._views(out), self.params, strict=True):
            if p.grad is None:
                v.zero_()
            else:
                v.copy_(p.grad)

    def set_grads(self, vec: Any) -> None:
        """Make each parameter's ``.grad`` a view of ``vec`` (no copy)."""
        for v, p in zip(self._views(vec), self.params, strict=True):
            p.grad = v


@dataclass
class AggregateInfo:
    """What happened in one :meth:`Master.aggregate`: the responders in arrival order, dropped senders, time."""

    iteration: int
    responders: list[int]
    stale: int = 0
    bad: list[int] = field(default_factory=list)
    seconds: float = 0.0


class _Receiver(threading.Thread):
    """Keeps one receive posted into ``buf`` from ``src``; reports ``key`` on ``out`` when a message has landed and
    posts the next receive after :meth:`release`. Ends after a message whose first entry is ``last``."""

    def __init__(self, dist: Any, buf: Any, src: int, tag: int, key: int, out: queue.Queue[int],
                 last: float) -> None:
        super().__init__(daemon=True, name=f"gradcodes-recv-{src}-{tag}")
        self.dist, self.buf, self.src, self.tag, self.key, self.out, self.last = dist, buf, src, tag, key, out, last
        self.free = threading.Event()
        self.free.set()

    def release(self) -> None:
        self.free.set()

    def run(self) -> None:
        try:
            while True:
                self.free.wait()
                self.free.clear()
                self.dist.irecv(self.buf, src=self.src, tag=self.tag).wait()
                self.out.put(self.key)
                if float(self.buf[0]) == self.last:
                    return
        except Exception as exc:   # a peer died: wake the waiting thread, which raises
            self.error = exc
            self.out.put(-1 - self.key)


def _check(key: int, threads: Sequence[_Receiver]) -> int:
    """``key``, or raise the error of the receive thread that reported ``-1 - key``."""
    if key < 0:
        th = threads[-1 - key]
        raise GradcodesRuntimeError(f"receiving from rank {th.src} failed: {getattr(th, 'error', None)}") from getattr(
            th, "error", None)
    return key


class _Sender(threading.Thread):
    """Sends ``buf`` to ``dst`` each time :meth:`send` is called; :attr:`busy` until the receiver took it."""

    def __init__(self, dist: Any, buf: Any, dst: int, tag: int) -> None:
        super().__init__(daemon=True, name=f"gradcodes-send-{dst}-{tag}")
        self.dist, self.buf, self.dst, self.tag = dist, buf, dst, tag
        self.go = threading.Event()
        self.idle = threading.Event()
        self.idle.set()
        self.closing = False

    @property
    def busy(self) -> bool:
        return not self.idle.is_set()

    def send(self, *, last: bool = False) -> None:
        self.idle.clear()
        self.closing = last
        self.go.set()

    def run(self) -> None:
        while True:
            self.go.wait()
            self.go.clear()
            self.dist.isend(self.buf, self.dst, tag=self.tag).wait()
            self.idle.set()
            if self.closing:
                return


class Master:
    """The master (rank 0): send parameters, collect the first decodable messages, decode into ``.grad``.

    Parameters
    ----------
    code : LinearCode
        The gradient code; worker ``i`` is rank ``i + 1`` (the world has ``code.n + 1`` ranks).
    params : sequence of tensors
        The model's parameters (``model.parameters()``), one dtype, on the CPU.
    policy : str or WaitPolicy, optional
        When to stop waiting (:func:`gradcodes._simulate._policies.as_policy`: ``"earliest"`` decodable set, the
        default for exact codes; ``"first"`` ``n - s`` messages, the default for approximate codes; ``"all"``).
    timeout : float, default 60
        Seconds to wait in one iteration before :class:`gradcodes.mpi.StragglerTimeout`.
    poll : float, default 2e-4
        Seconds between polls of the pending receives.
    """

    def __init__(self, code: Any, params: Sequence[Any], *, policy: Any = None, timeout: float = 60.0,
                 poll: float = 2e-4) -> None:
        import torch

        from .._simulate._policies import as_policy

        self.dist = _dist()
        if self.dist.get_world_size() != code.n + 1:
            raise GradcodesValueError(f"the code has n={code.n} workers, so the job needs n + 1 = {code.n + 1} ranks; "
                                      f"it has {self.dist.get_world_size()}")
        self.code, self.n, self.m = code, int(code.n), int(code.m)
        self.flat = FlatParams(params)
        self.dtype = self.flat.dtype
        self.np_dtype = torch.empty(0, dtype=self.dtype).numpy().dtype
        self.q = -(-self.flat.size // self.m)
        self.policy = as_policy(policy, code)
        self.tracker = self.policy.tracker(code, self.np_dtype)
        self.timeout, self.poll = float(timeout), float(poll)
        self.inbox = torch.empty(self.n, self.q + 1, dtype=self.dtype)
        self.outbox = torch.empty(self.n, self.flat.size + 1, dtype=self.dtype)
        self.grad = torch.zeros(self.m * self.q, dtype=self.dtype)
        self._coef: dict[bytes, list[list[tuple[int, float]]]] = {}
        self._skipped = 0
        self._arrived: queue.Queue[int] = queue.Queue()
        self._recv = [_Receiver(self.dist, self.inbox[w], w + 1, GRAD_TAG, w, self._arrived, _BYE)
                      for w in range(self.n)]
        self._send = [_Sender(self.dist, self.outbox[w], w + 1, PARAM_TAG) for w in range(self.n)]
        for th in (*self._recv, *self._send):
            th.start()

    def broadcast(self, iteration: int) -> None:
        """Send the current parameters to every worker whose previous parameters have been delivered."""
        for w in range(self.n):
            if self._send[w].busy:
                self._skipped += 1
                continue
            row = self.outbox[w]
            row[0] = float(iteration % _WRAP)
            self.flat.read(row[1:])
            self._send[w].send()

    def _coefficients(self, mask: np.ndarray) -> list[list[tuple[int, float]]]:
        key = mask.tobytes()
        if key not in self._coef:
            A = np.asarray(self.code.decoding_matrix(np.flatnonzero(mask), dtype=self.np_dtype))
            self._coef[key] = [[(int(c), float(A[u, c])) for c in np.flatnonzero(A[u])] for u in range(self.m)]
            if len(self._coef) > 4096:
                self._coef.pop(next(iter(self._coef)))
        return self._coef[key]

    def aggregate(self, iteration: int) -> AggregateInfo:
        """Collect messages of ``iteration`` until the policy stops, decode into ``grad`` and ``.grad``."""
        import torch

        start = time.monotonic()
        deadline = start + self.timeout
        tag = float(iteration % _WRAP)
        have = np.zeros(self.n, dtype=bool)
        info = AggregateInfo(iteration, [])
        self.tracker.reset()
        while True:
            try:
                w = _check(self._arrived.get(timeout=max(deadline - time.monotonic(), 0.0)), self._recv)
            except queue.Empty:
                missing = [v + 1 for v in range(self.n) if not have[v]]
                raise StragglerTimeout(
                    f"iteration {iteration}: no decodable set of responders within timeout={self.timeout:g} s; "
                    f"received from ranks {[v + 1 for v in info.responders]}, missing ranks {missing}"
                    + (f", ranks {[v + 1 for v in info.bad]} sent NaN or infinite values" if info.bad else ""),
                    missing=missing, bad=[v + 1 for v in info.bad]) from None
            row = self.inbox[w]
            if float(row[0]) != tag:
                info.stale += 1
                self._recv[w].release()
                continue
            if not bool(torch.isfinite(row).all()):
                info.bad.append(w)
                self._recv[w].release()
                continue
            have[w] = True
            info.responders.append(w)
            if self.tracker.add(w):
                break
        coef = self._coefficients(have)
        self.grad.zero_()
        q = self.q
        for u in range(self.m):
            gu = self.grad[u * q:(u + 1) * q]
            for c, a in coef[u]:
                gu.add_(self.inbox[c, 1:], alpha=a)
        for w in info.responders:
            self._recv[w].release()
        self.flat.set_grads(self.grad[:self.flat.size])
        info.seconds = time.monotonic() - start
        return info

    def stop(self, timeout: float = 10.0) -> list[int]:
        """Send every worker the stop message and drain their last messages; the ranks that did not answer."""
        deadline = time.monotonic() + timeout
        for w in range(self.n):
            self._send[w].idle.wait(max(deadline - time.monotonic(), 0.0))
            if self._send[w].busy:
                continue
            self.outbox[w, 0] = _STOP
            self._send[w].send(last=True)
        pending = set(range(self.n))
        while pending:
            try:
                w = _check(self._arrived.get(timeout=max(deadline - time.monotonic(), 0.0)), self._recv)
            except queue.Empty:
                break
            if float(self.inbox[w, 0]) == _BYE:
                pending.discard(w)
            else:
                self._recv[w].release()
        # let the communication threads finish their last requests before the caller tears the process group down
        # (a thread still inside a Gloo wait at interpreter exit aborts the process)
        for th in [*self._send, *self._recv]:
            th.join(max(deadline - time.monotonic(), 0.0))
        return sorted(w + 1 for w in pending)


class Worker:
    """Worker ``worker`` (rank ``worker + 1``): receive parameters, compute the coded message, send it.

    Parameters
    ----------
    code : LinearCode
    worker : int
        This worker, ``0 <= worker < code.n``.
    params : sequence of tensors
        The model replica's parameters (overwritten with the master's each iteration).
    delay : Delay, optional
        Straggler injection (:mod:`gradcodes.mpi`'s models): the worker sleeps until ``delay`` seconds after
        the start of its iteration; newer parameters arriving meanwhile abandon the iteration.
    """

    def __init__(self, code: Any, worker: int, params: Sequence[Any], *, delay: Delay | None = None,
                 poll: float = 2e-4) -> None:
        import torch

        self.dist = _dist()
        self.code, self.worker = code, int(worker)
        self.flat = FlatParams(params)
        self.q = -(-self.flat.size // int(code.m))
        self.inbox = torch.empty(2, self.flat.size + 1, dtype=self.flat.dtype)
        self.outbox = torch.empty(self.q + 1, dtype=self.flat.dtype)
        self.delay = delay or NoDelay()
        self.poll = float(poll)
        self.load_fraction = float(code.loads[self.worker]) / float(code.k)
        self.iterations = 0

    @property
    def message(self) -> Any:
        """The send buffer's message part (length ``ceil(P/m)``): ``compute`` writes the message here."""
        return self.outbox[1:]

    def run(self, compute: Callable[[int, Any], None]) -> int:
        """Serve until the master's stop message; ``compute(iteration, message)`` fills the message in place
        (called after the parameters were written into the model). Returns the number of messages sent.

        Two receive slots alternate: while the worker computes on one, the next parameters land in the other.
        """
        arrived: queue.Queue[int] = queue.Queue()
        slots = [_Receiver(self.dist, self.inbox[j], 0, PARAM_TAG, j, arrived, _STOP) for j in range(2)]
        slots[1].free.clear()           # slot 0 receives first; slot 1 once slot 0 holds a message
        for th in slots:
            th.start()
        count = 0
        cur = _check(arrived.get(), slots)
        while True:
            header = float(self.inbox[cur, 0])
            if header == _STOP:
                break
            nxt = 1 - cur
            slots[nxt].release()
            start = time.monotonic()
            self.flat.write(self.inbox[cur, 1:])
            compute(int(header), self.outbox[1:])
            self.outbox[0] = header
            d = self.delay.delay(self.worker, int(header), workers=self.code.n, load_fraction=self.load_fraction)
            newer: int | None = None
            if d > 0:
                wait = start + d - time.monotonic()
                try:
                    newer = (_check(arrived.get(timeout=wait if math.isfinite(wait) else None), slots)
                             if wait > 0 else None)
                except queue.Empty:
                    newer = None
            if newer is None:
                self.dist.isend(self.outbox, 0, tag=GRAD_TAG).wait()
                count += 1
                newer = _check(arrived.get(), slots)
            cur = newer
        self.outbox[0] = _BYE
        self.dist.isend(self.outbox, 0, tag=GRAD_TAG).wait()
        self.iterations = count
        return count
