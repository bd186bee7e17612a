"""Master--worker and CodedReduce-tree aggregation over ``torch.distributed`` point-to-point messages (Gloo on CPU).

Rank 0 is the master (the root) and rank ``i + 1`` runs worker ``i`` of the code; the ranks are laid out as in
:mod:`gradcodes.mpi` (:func:`gradcodes.mpi.layout_for`): for a master--worker code every worker is a child of
the master; for a :class:`~gradcodes.CodedReduceCode` (Reisizadeh et al. 2019, Section 3) the parent of rank
``r`` is rank ``(r - 1) // n`` and every parent decodes its children with the inner code and adds the result to
its own message. Every iteration the master sends the flattened parameters to every worker (tagged with the
iteration); each parent receives its children's coded messages into one preallocated row per child, stops at
the first decodable set of children (the wait policies of :func:`gradcodes.simulate`: by default the earliest
decodable set) and decodes with cached coefficients (:mod:`gradcodes.torch._children`). The master decodes into
a preallocated gradient vector and exposes it as the parameters' ``.grad`` (views, no copy), so any
``torch.optim`` optimizer steps as usual.

Semantics, as in :mod:`gradcodes.mpi`: a message carries its iteration in its first entry and is dropped when it
is stale; a message with a NaN or infinite entry is dropped and its sender treated as a straggler, and when the
NaN/inf senders leave no decodable set the parent raises :class:`gradcodes.mpi.StragglerTimeout` at once; when
the children cannot decode within ``timeout`` seconds the parent raises the same error naming the missing ranks
(a tree parent counts the time since its last decode, across the iterations it abandoned for newer
parameters); a crash on any rank ends the job (``torchrun`` stops every process when one fails). A worker whose
previous parameters the master could not yet deliver (it is still busy) is skipped, so no buffer is overwritten
while a send is in flight, and nothing gradient-sized is allocated per iteration.

Gloo sends complete only when the receiver has posted the matching receive, and a request's ``is_completed``
turns true only once ``wait`` has returned, so each pending receive is waited on by a small thread that reports
its slot on a queue: every parent keeps one receive posted per child, a worker one for its next parameters while
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

from .._base.errors import GradcodesTypeError, GradcodesValueError
from .._core.acceptance import DecodingError
from ..mpi._comm import StragglerTimeout
from ..mpi._delays import Delay, NoDelay
from ..mpi._layout import Layout, TreeCheck, layout_for, write_tail
from ._children import BYE, GRAD_TAG, WRAP, Children, Receiver, as_np_dtype, check_key

__all__ = ["FlatParams", "Master", "Worker", "AggregateInfo", "StragglerTimeout", "GRAD_TAG", "PARAM_TAG"]

PARAM_TAG = 72
#: seconds the master allows for delivering the stop messages, and every node per tree level for the goodbyes
STOP_WAIT = 10.0
_STOP = -1.0
_BYE = BYE
_WRAP = WRAP


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
        #: the device of the parameters: every buffer of the runtime is allocated there
        self.device = self.params[0].device
        if any(p.device != self.device for p in self.params):
            raise GradcodesValueError("all parameters must be on one device")
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


class _Sender(threading.Thread):
    """Sends ``buf`` to ``dst`` each time :meth:`send` is called; :attr:`busy` until the receiver took it.
    :meth:`stop` sends the stop message (``buf[0] = _STOP``) once the send in flight, if any, is taken."""

    def __init__(self, dist: Any, buf: Any, dst: int, tag: int) -> None:
        super().__init__(daemon=True, name=f"gradcodes-send-{dst}-{tag}")
        self.dist, self.buf, self.dst, self.tag = dist, buf, dst, tag
        self.go = threading.Event()
        self.idle = threading.Event()
        self.idle.set()
        self.closing = False
        self.stopping = False
        self.lock = threading.Lock()

    @property
    def busy(self) -> bool:
        return not self.idle.is_set()

    def send(self, *, last: bool = False) -> None:
        self.idle.clear()
        self.closing = last
        self.go.set()

    def stop(self) -> None:
        """Send the stop message now, or as soon as the receiver took the message in flight (a worker skipped at
        the stop because it was busy would never stop, and its parent would wait for it)."""
        with self.lock:
            self.stopping = True
            if not self.busy:
                self.buf[0] = _STOP
                self.send(last=True)

    def run(self) -> None:
        while True:
            self.go.wait()
            self.go.clear()
            self.dist.isend(self.buf, self.dst, tag=self.tag).wait()
            with self.lock:
                if self.stopping and not self.closing:       # stop() came while this send was in flight
                    self.buf[0] = _STOP
                    self.send(last=True)
                    continue
                self.idle.set()
            if self.closing:
                return


def _layout(code: Any, dist: Any) -> Layout:
    """The code's rank layout, checked against the world size."""
    layout = layout_for(code)
    if dist.get_world_size() != layout.size:
        what = (f"the tree has N={layout.workers} workers" if layout.kind == "tree"
                else f"the code has n={layout.workers} workers")
        raise GradcodesValueError(f"{what}, so the job needs {layout.size} ranks (1 master + {layout.workers} "
                                  f"workers); it has {dist.get_world_size()}")
    return layout


def height(layout: Layout, rank: int) -> int:
    """Levels of the tree below ``rank`` (0 for a leaf; 1 for a flat master)."""
    h = 0
    while kids := layout.children(rank):
        rank, h = kids[0], h + 1        # the first child's subtree is the deepest (levels fill left to right)
    return h


def drain_deadline(layout: Layout, rank: int, start: float, wait: float = STOP_WAIT) -> float:
    """When a node that got the stop message at ``start`` (the master: began sending them) gives up on its
    children's goodbyes: ``wait`` seconds per level below it, plus ``wait`` for the stop messages to reach every
    worker (a worker busy with its previous parameters takes its stop message when it is done with them).

    A child at height ``h - 1`` says goodbye within ``wait * h`` of its own stop message; the master posts all stop
    messages at once, so unless a child takes its stop message more than ``wait`` seconds after its parent, the
    goodbye comes before the parent's deadline.
    """
    return start + wait * (height(layout, rank) + 1)


def _combined(code: Any, layout: Layout) -> Any:
    """The code a parent decodes: the inner code on a tree, the code itself otherwise."""
    return code.inner if layout.kind == "tree" else code


class Master:
    """The master (rank 0): send parameters, collect the first decodable messages, decode into ``.grad``.

    Parameters
    ----------
    code : LinearCode
        The gradient code; worker ``i`` is rank ``i + 1``. A master--worker job has ``code.n + 1`` ranks; a
        :class:`~gradcodes.CodedReduceCode` runs as its tree (``code.N + 1`` ranks, the master decodes its
        ``branching`` children with the inner code).
    params : sequence of tensors
        The model's parameters (``model.parameters()``), one dtype, one device (every buffer is allocated there).
    policy : str or WaitPolicy, optional
        When to stop waiting (:func:`gradcodes._simulate._policies.as_policy` of the code decoded here:
        ``"earliest"`` decodable set, the default for exact codes; ``"first"`` ``n - s`` messages, the default for
        approximate codes; ``"all"``).
    timeout : float, default 60
        Seconds to wait in one iteration before :class:`gradcodes.mpi.StragglerTimeout`.
    poll : float, default 2e-4
        Unused (kept for callers of the earlier signature): the receive threads report arrivals on a queue.
    """

    def __init__(self, code: Any, params: Sequence[Any], *, policy: Any = None, timeout: float = 60.0,
                 poll: float = 2e-4) -> None:
        import torch

        from .._simulate._policies import as_policy

        self.dist = _dist()
        self.layout = _layout(code, self.dist)
        self.code, self.n, self.m = code, int(self.layout.workers), int(code.m)
        self.flat = FlatParams(params)
        self.dtype, self.device = self.flat.dtype, self.flat.device
        self.np_dtype = as_np_dtype(self.dtype)
        self.q = -(-self.flat.size // self.m)
        inner = _combined(code, self.layout)
        self.policy = as_policy(policy, inner)
        self.timeout, self.poll = float(timeout), float(poll)
        self.outbox = torch.empty(self.n, self.flat.size + 1, dtype=self.dtype, device=self.device)
        self.grad = torch.zeros(self.m * self.q, dtype=self.dtype, device=self.device)
        self._skipped = 0
        self._busy: set[int] = set()
        self._arrived: queue.Queue[int] = queue.Queue()
        tree = self.layout.kind == "tree"
        kids = self.layout.children(0)
        self.children = Children(self.dist, inner, kids, self.q, self.dtype, self.device,
                                 self._arrived, 0, self.policy, extra=self.layout.tail(kids[0]) if tree else 0)
        #: a CodedReduce tree: the whole tree's acceptance of each iteration's pattern (None for flat codes)
        self.tree_check = TreeCheck(code, self.layout, self.np_dtype) if tree else None
        self.tracker = self.children.tracker
        self.inbox = self.children.inbox
        self._send = [_Sender(self.dist, self.outbox[w], w + 1, PARAM_TAG) for w in range(self.n)]
        self.children.start()
        for th in self._send:
            th.start()

    def broadcast(self, iteration: int) -> None:
        """Send the current parameters to every worker whose previous parameters have been delivered."""
        self._busy = set()
        for w in range(self.n):
            if self._send[w].busy:
                self._skipped += 1
                self._busy.add(w)
                continue
            row = self.outbox[w]
            row[0] = float(iteration % _WRAP)
            self.flat.read(row[1:])
            self._send[w].send()

    def aggregate(self, iteration: int) -> AggregateInfo:
        """Collect messages of ``iteration`` until the policy stops, decode into ``grad`` and ``.grad``.

        On a CodedReduce tree every parent accepts its own children's decode, and the master then checks the whole
        pattern it decoded (``TreeCheck`` in ``gradcodes/mpi/_layout.py``, the rule of
        :meth:`gradcodes.CodedReduceCode.execute`, from the flags every parent sends after its payload): a
        pattern whose composed decode misses the tolerance of the messages' dtype raises
        :class:`gradcodes.DecodingError` naming the ranks."""
        start = time.monotonic()
        kids = self.children.ranks
        absent = [i for i, r in enumerate(kids) if r - 1 in self._busy]
        rows, bad, stale = self.children.collect(iteration, start + self.timeout, absent=absent)
        assert rows is not None
        self.children.combine(rows, self.grad, accumulate=False)
        if self.tree_check is not None:
            tails = self.children.tails
            try:
                self.tree_check.check(rows, (tails if tails.device.type == "cpu" else tails.cpu()).numpy(),
                                      iteration)
            except DecodingError:
                self.children.release(rows)
                raise
        self.children.release(rows)
        self.flat.set_grads(self.grad[:self.flat.size])
        return AggregateInfo(iteration, [kids[i] - 1 for i in rows], stale, [kids[i] - 1 for i in bad],
                             time.monotonic() - start)

    def stop(self, timeout: float = STOP_WAIT) -> list[int]:
        """Send every worker the stop message and drain the children's last messages; the ranks that did not
        answer.

        Each worker gets its stop message as soon as its previous parameters are delivered (``_Sender.stop``);
        the drain waits for the goodbyes as long as ``drain_deadline`` says with ``timeout`` seconds per
        step, since a parent says goodbye only after draining its own children.
        """
        start = time.monotonic()
        for th in self._send:
            th.stop()
        deadline = drain_deadline(self.layout, 0, start, timeout)
        missing = self.children.drain(deadline)
        # let the communication threads finish their last requests before the caller tears the process group down
        # (a thread still inside a Gloo wait at interpreter exit aborts the process)
        for th in self._send:
            th.join(max(deadline - time.monotonic(), 0.0))
        return missing


class Worker:
    """Worker ``worker`` (rank ``worker + 1``): receive parameters, compute the coded message, send it (a
    CodedReduce parent first adds the inner-code decode of its children's messages).

    Parameters
    ----------
    code : LinearCode
    worker : int
        This worker, ``0 <= worker < code.n``.
    params : sequence of tensors
        The model replica's parameters (overwritten with the master's each iteration).
    delay : Delay, optional
        Straggler injection (:mod:`gradcodes.mpi`'s models): the worker sleeps until ``delay`` seconds after
        the start of its iteration; newer parameters arriving meanwhile abandon the iteration. A hung worker
        (infinite delay) keeps draining its children's messages and still obeys the stop message.
    policy : str or WaitPolicy, optional
        A tree parent's wait for its children (default ``"earliest"`` decodable set of the inner code).
    timeout : float, default 60
        A tree parent that has not decoded its children for this many seconds raises
        :class:`gradcodes.mpi.StragglerTimeout` naming the missing ranks.
    """

    def __init__(self, code: Any, worker: int, params: Sequence[Any], *, delay: Delay | None = None,
                 poll: float = 2e-4, policy: Any = None, timeout: float = 60.0) -> None:
        import torch

        from .._simulate._policies import as_policy

        self.dist = _dist()
        self.layout = _layout(code, self.dist)
        self.code, self.worker = code, int(worker)
        if not 0 <= self.worker < self.layout.workers:
            raise GradcodesValueError(f"worker must be in [0, {self.layout.workers - 1}], got {worker}")
        self.rank = self.worker + 1
        self.parent = self.layout.parent(self.rank)
        self.flat = FlatParams(params)
        dev = self.flat.device
        self.q = -(-self.flat.size // int(code.m))
        self.inbox = torch.empty(2, self.flat.size + 1, dtype=self.flat.dtype, device=dev)
        #: entries after the payload: a tree parent's flags of the ranks below it whose messages are in its sum
        #: (``gradcodes.mpi._layout``, tree message format); 0 for a leaf and for flat codes
        self.tail = self.layout.tail(self.rank)
        self.outbox = torch.empty(self.q + 1 + self.tail, dtype=self.flat.dtype, device=dev)
        self.delay = delay or NoDelay()
        self.poll = float(poll)
        self.timeout = float(timeout)
        self.load_fraction = float(code.loads[self.worker]) / float(code.k)
        self.iterations = 0
        self._arrived: queue.Queue[int] = queue.Queue()
        kids = self.layout.children(self.rank)
        self.children: Children | None = None
        if kids:
            inner = _combined(code, self.layout)
            self.children = Children(self.dist, inner, kids, self.q, self.flat.dtype, dev, self._arrived, 2,
                                     as_policy(policy, inner), extra=self.layout.tail(kids[0]))

    @property
    def message(self) -> Any:
        """The send buffer's message part (length ``ceil(P/m)``): ``compute`` writes the message here."""
        return self.outbox[1:self.q + 1]

    def _next(self, threads: Sequence[Receiver], t: int) -> int:
        """The next parameter slot to arrive (children's messages meanwhile are kept or dropped)."""
        while True:
            key = check_key(self._arrived.get(), threads)
            if key < 2:
                return key
            assert self.children is not None
            self.children.note(key, t)

    def run(self, compute: Callable[[int, Any], None]) -> int:
        """Serve until the master's stop message; ``compute(iteration, message)`` fills the message in place
        (called after the parameters were written into the model). Returns the number of messages sent.

        Two receive slots alternate: while the worker computes on one, the next parameters land in the other.
        """
        slots = [Receiver(self.dist, self.inbox[j], 0, PARAM_TAG, j, self._arrived, _STOP) for j in range(2)]
        slots[1].free.clear()           # slot 0 receives first; slot 1 once slot 0 holds a message
        kids = self.children
        threads: list[Receiver] = [*slots, *(kids.recv if kids is not None else [])]
        for th in slots:
            th.start()
        if kids is not None:
            kids.start()
        count = 0
        t = -1
        since: float | None = None       # a tree parent: when it began waiting for a decode
        cur = self._next(threads, t)
        while True:
            header = float(self.inbox[cur, 0])
            if header == _STOP:
                break
            t = int(header)
            nxt = 1 - cur
            slots[nxt].release()
            start = time.monotonic()
            d = self.delay.delay(self.worker, t, workers=self.layout.workers, load_fraction=self.load_fraction)
            if math.isinf(d):            # hung: never answers, but keeps its children's sends flowing
                if kids is not None:
                    kids.forget(t)
                cur = self._next(threads, t)
                continue
            self.flat.write(self.inbox[cur, 1:])
            compute(t, self.outbox[1:self.q + 1])
            self.outbox[0] = header
            newer: list[int] = []
            if kids is not None:
                if since is None:
                    since = start

                def other(key: int, newer: list[int] = newer) -> bool:
                    newer.append(key)
                    return True

                rows, _, _ = kids.collect(t, since + self.timeout, other=other, threads=threads,
                                          who=f"rank {self.rank}: ")
                if rows is None:         # the master moved on: skip ahead
                    cur = newer[0]
                    continue
                kids.combine(rows, self.outbox[1:self.q + 1], accumulate=True)
                write_tail(self.outbox[self.q + 1:], rows, kids.tails)     # which workers are in the sum
                kids.release(rows)
                since = None
            while d > 0 and not newer:   # the injected delay; newer parameters (or STOP) abandon this iteration
                wait = start + d - time.monotonic()
                if wait <= 0:
                    break
                try:
                    key = check_key(self._arrived.get(timeout=wait), threads)
                except queue.Empty:
                    break
                if key < 2:
                    newer.append(key)
                elif kids is not None:
                    kids.note(key, t)
            if newer:
                cur = newer[0]
                continue
            self.dist.isend(self.outbox, self.parent, tag=GRAD_TAG).wait()
            count += 1
            cur = self._next(threads, t)
        if kids is not None:
            missing = kids.drain(drain_deadline(self.layout, self.rank, time.monotonic()), threads=threads)
            if missing:
                print(f"gradcodes.torch: rank {self.rank}: children {missing} did not finish", flush=True)
        self.outbox[0] = _BYE
        self.dist.isend(self.outbox, self.parent, tag=GRAD_TAG).wait()
        self.iterations = count
        return count
