"""The collection protocol of a parent (the master, or a CodedReduce tree parent), written once for every transport.

Every iteration a parent waits for its children's coded messages until its wait policy is satisfied (by default
the earliest decodable set: :class:`gradcodes.EarliestDecodable`), then decodes them. What can happen on the way is
the same over MPI and over ``torch.distributed``, and is decided here, in :meth:`Collection.collect`:

* a message of an **earlier iteration** (a late child) is dropped and counted as stale; a message of a **later**
  iteration (a parent that fell behind its children) is kept for that iteration;
* a message with a **NaN or infinite** entry makes its sender a straggler for the iteration: it is dropped and the
  wait goes on (the parent may also combine first and check the sum once, passing the culprits back as ``bad``);
  with ``nonfinite="overflow"`` (mixed-precision training with a loss scaler) it is an answer like any other
  instead: the decode is then not finite, the caller's scaler skips the step and lowers the scale;
* a child whose **link failed** (its process ended: a crash, ``os._exit``, a kill the launcher let the job
  survive) is a straggler from then on, never waited for again (:attr:`Collection.dead`);
* as soon as the children left (outside the NaN senders, the dead, and the rows the caller knows cannot answer)
  can no longer satisfy the policy, the iteration **ends at once** with :class:`StragglerTimeout` naming the ranks;
* at the **timeout** the iteration ends with :class:`StragglerTimeout` naming the ranks that did not answer;
* at an optional early **stop time** (approximate codes: decode whatever arrived) the rows so far are returned.

A transport supplies an :class:`Endpoint`: the parent's receive buffers (one row per child) and a way to wait for
the next arrival. ``gradcodes.mpi`` polls posted ``Irecv`` requests (``Testany``); ``gradcodes.torch`` waits on
the queue its receive threads report to; the tests drive the same protocol with a simulated transport (random
arrival orders, delays, losses, duplicates) and check every decoded gradient against the true sum.
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection as Coll
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .._base.errors import GradcodesError, GradcodesValueError
from .._core.apply import _dot

__all__ = ["StragglerTimeout", "Endpoint", "Lost", "ABORT", "Collection", "finite", "age"]


class StragglerTimeout(GradcodesError, RuntimeError):
    """Fewer responders than needed within the timeout (names the missing workers); a :class:`RuntimeError`
    and a :class:`gradcodes.GradcodesError`."""

    def __init__(self, message: str, missing: list[int] | None = None, bad: list[int] | None = None) -> None:
        super().__init__(message)
        self.missing = list(missing or [])
        self.bad = list(bad or [])


def age(iteration: int, t: int) -> int:
    """How many iterations older than ``t`` a message of ``iteration`` is (negative: newer)."""
    return int(t) - int(iteration)


def finite(row: np.ndarray) -> bool:
    """Whether every entry of the numpy ``row`` is finite, without a row-sized temporary in the usual case: a NaN or
    inf makes the sum of squares (one BLAS ``dot``) non-finite; a finite sum that overflows (entries above about
    ``sqrt(max / p)``) falls back to the exact check."""
    dot = _dot(row.dtype) if row.flags.c_contiguous and row.size else None
    if dot is not None:
        total = dot(row, row)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            total = np.add.reduce(row)
    if math.isfinite(float(np.abs(total))):
        return True
    return bool(np.isfinite(row).all())


@dataclass(frozen=True)
class Lost:
    """The event of a child whose link failed (its process ended); ``why`` says how."""

    row: int
    why: str


class _Abort:
    def __repr__(self) -> str:
        return "ABORT"


#: The event that ends a wait without a result (the parent got newer parameters, or the master moved on).
ABORT = _Abort()


class Endpoint(Protocol):
    """A parent's receive side over some transport: one row (buffer) per child, ``ranks[i]`` sending into row ``i``.

    :meth:`wait` returns the next event within ``timeout`` seconds: a row index (a message has landed in that row,
    whose iteration :meth:`age` now tells), a :class:`Lost` child, :data:`ABORT`, or ``None`` (nothing yet; the
    caller looks at its clock and waits again). A row keeps its message until :meth:`drop`, which also makes the
    row receive the child's next message.
    """

    def age(self, i: int, t: int) -> int | None:
        """Age of row ``i``'s message relative to iteration ``t`` (None: the row holds no message)."""

    def finite(self, i: int) -> bool:
        """Whether row ``i``'s payload is finite."""

    def drop(self, i: int) -> None:
        """Forget row ``i``'s message; receive the child's next one into the row."""

    def wait(self, timeout: float) -> int | Lost | _Abort | None:
        """The next event, waiting at most ``timeout`` seconds."""


class Collection:
    """The state of one parent's wait for its children, across iterations: the protocol of the module docstring.

    Parameters
    ----------
    ranks : sequence of int
        The children's ranks (row ``i`` is ``ranks[i]``), used in the messages of errors.
    tracker : object, optional
        The wait policy's tracker (``add(row) -> bool`` is True once the rows added so far suffice; ``reset()``),
        e.g. ``policy.tracker(code, dtype)`` of :mod:`gradcodes._simulate._policies`.
    need : int, optional
        A count of messages that also ends the wait (a count policy, or ``n - s`` with an early-stopping tracker).
        At least one of ``tracker`` and ``need`` is given.
    who : str, default ""
        Prefix of error messages (a tree parent: ``"rank r: "``).
    nonfinite : {"straggler", "overflow"}, default "straggler"
        What a message with a NaN or infinite entry is. ``"straggler"``: a faulty message, its sender a straggler
        for the iteration (dropped; the wait goes on). ``"overflow"``: a loss scaler's overflow signal (a scaled
        float16 gradient that overflowed, ``torch.amp.GradScaler``), accepted as an answer like any other
        message and never checked here: a partition that overflows overflows on every worker that holds it, so
        waiting for finite holders would only run into the timeout. The caller finds the decode non-finite
        (``finite``) and its scaler skips the step, as single-process mixed precision skips a batch any part
        of which overflowed.
    """

    #: the values of ``nonfinite``
    NONFINITE = ("straggler", "overflow")

    def __init__(self, ranks: Sequence[int], *, tracker: Any = None, need: int | None = None,
                 who: str = "", nonfinite: str = "straggler") -> None:
        if tracker is None and need is None:
            raise GradcodesValueError("Collection needs a wait policy's tracker or a count of messages (need)")
        if nonfinite not in self.NONFINITE:
            raise GradcodesValueError(f"nonfinite must be 'straggler' or 'overflow', got {nonfinite!r}")
        #: what a NaN/inf message is: a straggler's (dropped) or a loss scaler's overflow (an answer)
        self.nonfinite = nonfinite
        self.ranks = [int(r) for r in ranks]
        self.K = len(self.ranks)
        self.tracker = tracker
        self.need = None if need is None else int(need)
        self.who = who
        #: stale messages dropped so far (every iteration)
        self.stale = 0
        #: rows whose link failed during the run: row -> what happened; never waited for again
        self.dead: dict[int, str] = {}
        self._got: list[int] = []

    def names(self, rows: Coll[int]) -> list[int]:
        """The ranks of ``rows``, sorted."""
        return sorted(self.ranks[i] for i in set(rows))

    def _done(self, i: int) -> bool:
        self._got.append(i)
        hit = self.tracker is not None and bool(self.tracker.add(i))
        return hit or (self.need is not None and len(self._got) >= self.need)

    def possible(self, excluded: Coll[int]) -> bool:
        """Whether the children outside ``excluded`` could still end the wait (the rows received so far keep
        counting)."""
        rest = [i for i in range(self.K) if i not in excluded]
        if self.need is not None and len(rest) >= self.need:
            return True
        tr = self.tracker
        if tr is None:
            return False
        tr.reset()
        ok = any(tr.add(i) for i in rest)
        tr.reset()
        for i in self._got:
            tr.add(i)
        return ok

    def collect(self, ep: Endpoint, t: int, *, deadline: float = math.inf, timeout: float | None = None,
                stop_at: float | None = None, absent: Coll[int] = (), bad: Sequence[int] = (),
                check_finite: bool = True) -> tuple[list[int] | None, list[int]]:
        """Wait for the children's messages of iteration ``t`` until the policy is satisfied.

        Returns ``(rows, bad)``: the rows used, in arrival order (``None`` when the endpoint aborted the wait), and
        the rows that sent NaN/inf. ``deadline`` (``time.monotonic()``): raise :class:`StragglerTimeout` naming the
        missing ranks (``timeout``, the seconds that deadline stands for, is only quoted in the message).
        ``stop_at``: return the rows so far at that time (approximate codes). ``absent``: rows known not to answer
        this iteration (a set is used as it is, so the caller may shrink it while waiting). ``bad``: rows already
        found non-finite for ``t`` by a check of their combined sum; their messages are dropped. ``check_finite``:
        check each message as it arrives (else the caller checks the sum and passes the culprits back as ``bad``).
        With ``nonfinite="overflow"`` no message is checked (``check_finite`` is ignored) and ``bad`` must be empty:
        a NaN/inf message is an answer.
        """
        overflow = self.nonfinite == "overflow"
        if overflow and bad:
            raise GradcodesValueError("a collection with nonfinite='overflow' takes NaN/inf messages as answers: "
                                      "no row can be bad")
        check_finite = check_finite and not overflow
        if self.tracker is not None:
            self.tracker.reset()
        got: list[int] = []
        self._got = got
        bad = list(bad)
        absent_set = absent if isinstance(absent, set) else set(absent)
        for i in bad:
            if ep.age(i, t) == 0:
                ep.drop(i)
        if bad:
            self._check(t, absent_set, bad)

        def use(i: int) -> bool:
            if check_finite and not ep.finite(i):
                bad.append(i)
                ep.drop(i)
                self._check(t, absent_set, bad)
                return False
            return self._done(i)

        for i in range(self.K):                              # messages kept from earlier
            if i in self.dead:
                continue
            a = ep.age(i, t)
            if a is None:
                continue
            if a > 0:
                self.stale += 1
                ep.drop(i)
            elif a == 0 and use(i):
                return got, bad
        end = deadline if stop_at is None else min(deadline, stop_at)
        while True:
            ev = ep.wait(max(end - time.monotonic(), 0.0))
            if ev is None:
                now = time.monotonic()
                if stop_at is not None and now >= stop_at:
                    return got, bad
                if now >= deadline:
                    raise self._timeout(t, timeout if timeout is not None else math.nan, bad)
                continue
            if ev is ABORT:
                return None, bad
            if isinstance(ev, Lost):
                self.lost(ev.row, ev.why, t, absent_set | set(bad))
                continue
            assert isinstance(ev, int)
            if ev in self.dead:
                continue
            a = ep.age(ev, t)
            if a is None:
                continue
            if a > 0:                                           # stale: drop, receive the next
                self.stale += 1
                ep.drop(ev)
            elif a == 0 and ev not in got and use(ev):          # (a < 0: kept for its iteration)
                return got, bad

    def lost(self, i: int, why: str, t: int, excluded: Coll[int] = ()) -> None:
        """Child ``i``'s link failed during iteration ``t``: from now on it is a straggler that never answers;
        raise :class:`StragglerTimeout` at once when the children left, outside ``excluded``, cannot end the wait.
        """
        self.dead[i] = f"its link failed during the run, at iteration {t} (its process ended): {why}"
        if self._got and i in self._got:
            self._got.remove(i)
        gone = set(self.dead)
        if not self.possible(set(excluded) | gone):
            others = set(excluded) - gone
            raise StragglerTimeout(
                f"{self.who}iteration {t}: the links of ranks {self.names(gone)} failed (their processes ended)"
                + (f", ranks {self.names(others)} cannot answer" if others else "")
                + "; the remaining ranks cannot decode, so the iteration cannot finish",
                missing=self.names(set(excluded) | gone))

    def _check(self, t: int, absent: set[int], bad: list[int]) -> None:
        """Raise when the NaN/inf senders, the dead and ``absent`` leave no way to end the wait."""
        excluded = absent | set(bad) | set(self.dead)
        if self.possible(excluded):
            return
        rest = [j for j in range(self.K) if j not in excluded]
        busy = absent - set(bad)
        raise StragglerTimeout(
            f"{self.who}iteration {t}: ranks {self.names(bad)} sent NaN or infinite values"
            + (f", ranks {self.names(busy)} cannot answer (still busy with earlier parameters)" if busy else "")
            + (f", the links of ranks {self.names(self.dead)} failed" if self.dead else "")
            + f"; the remaining ranks {self.names(rest)} cannot decode, so the iteration cannot finish",
            missing=self.names(busy | set(self.dead)), bad=self.names(bad))

    def _timeout(self, t: int, timeout: float, bad: list[int]) -> StragglerTimeout:
        got = self._got
        missing = [i for i in range(self.K) if i not in got and i not in bad]
        within = f" within {timeout:g} s" if math.isfinite(timeout) else " before the timeout"
        return StragglerTimeout(
            f"{self.who}iteration {t}: no decodable set of responders{within}; received from ranks "
            f"{[self.ranks[i] for i in got]}, missing ranks {self.names(missing)}"
            + (f", ranks {self.names(bad)} sent NaN or infinite values" if bad else ""),
            missing=self.names(missing), bad=self.names(bad))


# shown (tracebacks, reprs, pickles) under its public name
StragglerTimeout.__module__ = "gradcodes.mpi"
