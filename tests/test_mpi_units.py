"""Unit tests of gradcodes.mpi pieces that need no MPI: rank layouts, per-worker encoding and the parents'
combination (against the code's own encode/decode), delay models, results and the synthetic problem."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

import gradcodes as gc
from gradcodes._runtime.codec import Combiner
from gradcodes.mpi import FixedDelay, Hang, RunResult, ShiftedExponential, WorkerEncoder, layout_for
from gradcodes.mpi._comm import Tags
from gradcodes.mpi._problem import SyntheticProblem


def test_tree_layout_matches_the_code_tree():
    code = gc.coded_reduce(3, 2, 1)
    lay = layout_for(code)
    assert (lay.kind, lay.size, lay.workers) == ("tree", 13, 12)
    assert lay.children(0) == [w + 1 for w in code.children(None)]
    for v in range(code.N):
        par = code.parent(v)
        assert lay.parent(v + 1) == (0 if par is None else par + 1)
        assert lay.children(v + 1) == [c + 1 for c in code.children(v)]


def test_flat_layout():
    lay = layout_for(gc.cyclic_repetition(5, 1, rng=0))
    assert (lay.kind, lay.size) == ("flat", 6)
    assert lay.children(0) == [1, 2, 3, 4, 5] and lay.children(3) == [] and lay.parent(4) == 0


@pytest.mark.parametrize("make", [lambda: gc.cyclic_repetition(6, 2, rng=1), lambda: gc.ye_abbe(6, 2, 2),
                                  lambda: gc.fractional_repetition(6, 2)])
@pytest.mark.parametrize("p", [1, 7, 40])
def test_worker_messages_and_master_combination_equal_encode_decode(make, p):
    code = make()
    rng = np.random.default_rng(p)
    C = rng.normal(size=(code.k, p))

    def grad(w, j):
        return C[j] * w + j

    w = rng.normal(size=p)
    G = np.stack([grad(w, j) for j in range(code.k)])
    q = -(-p // code.m)
    Y = np.zeros((code.n, q))
    for i in range(code.n):
        WorkerEncoder(code, i, p, np.float64).encode(w, grad, Y[i])
    assert np.allclose(Y, code.encode(G), rtol=1e-13, atol=1e-13)
    comb = Combiner(code)
    out, tmp = np.zeros(code.m * q), np.empty(q)
    F = [5, 0, 3, 2][: code.n - code.s]
    comb.combine(F, Y, out, tmp)
    assert np.allclose(out[:p], G.sum(axis=0), rtol=1e-12, atol=1e-12)
    assert np.allclose(out[:p], code.decode(F, Y, length=p), rtol=1e-13, atol=1e-13)


def test_tree_reduction_by_hand_equals_execute():
    """Leaves send their own message; each parent adds the inner decode of its first n - s children."""
    code = gc.coded_reduce(3, 2, 1)
    lay = layout_for(code)
    p = 9
    G = np.random.default_rng(0).normal(size=(code.k, p))
    own = np.zeros((code.N, p))
    for v in range(code.N):
        WorkerEncoder(code, v, p, np.float64).encode(None, lambda w, j: G[j], own[v])
    up = own.copy()
    inner = Combiner(code.inner)
    tmp = np.empty(p)
    for r in range(code.N, 0, -1):                       # children before parents (breadth-first order)
        kids = lay.children(r)
        if kids:
            inner.combine([2, 0], up[[k - 1 for k in kids]], up[r - 1], tmp, accumulate=True)
    root = np.zeros(p)
    inner.combine([1, 2], up[[k - 1 for k in lay.children(0)]], root, tmp)
    assert np.allclose(root, G.sum(axis=0), rtol=1e-12, atol=1e-12)


def test_tags_age_wraps_around():
    t = Tags(tag_ub=32767)                                # the smallest TAG_UB MPI allows
    for it in (0, 5, t.window - 1, t.window, 3 * t.window + 7):
        assert t.age(t.tag(it), it) == 0
        assert t.age(t.tag(it - 3), it) == 3
        assert t.age(t.tag(it + 2), it) == -2
        assert t.iteration(t.tag(it), it + 4) == it


def test_delay_models_are_seeded_and_validated():
    d = ShiftedExponential(1e-3, m_data=100, rng=4)
    a = [d.delay(w, 3, workers=4, load_fraction=0.5) for w in range(4)]
    assert a == [d.delay(w, 3, workers=4, load_fraction=0.5) for w in range(4)]
    assert all(x >= 0.05 for x in a) and len(set(a)) == 4
    late = [w for w in range(8) if FixedDelay(1.0, count=3, rng=9).delay(w, 11, workers=8, load_fraction=1) > 0]
    assert len(late) == 3
    both = FixedDelay(0.5, workers=[2]) + Hang([2], start=4)
    assert both.delay(2, 3, workers=4, load_fraction=1) == 0.5
    assert math.isinf(both.delay(2, 4, workers=4, load_fraction=1))
    with pytest.raises(ValueError, match="either workers"):
        FixedDelay(0.1)
    with pytest.raises(ValueError, match="seconds"):
        FixedDelay(-1.0, workers=[0])


def test_run_result_table_csv_json(tmp_path):
    T = 4
    res = RunResult("demo", "flat", 3, 2, np.array([0.2, 0.1, 0.1, 0.3]), np.full(T, 0.05), np.full(T, 1e-3),
                    np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1], [1, 1, 0]], dtype=bool), np.array([4.0, 3, 2, 1]),
                    np.full(T, 1e-15), "none", 0.125, {"p": 10}, stale=2)
    s = res.summary()
    assert s["mean_time"] == pytest.approx(0.5 / 3) and s["median_time"] == pytest.approx(0.1)
    assert s["final_loss"] == 1.0 and s["stale_dropped"] == 2
    assert "gc.simulate predicts 0.1250 s" in res.table()
    res.to_csv(tmp_path / "r.csv")
    rows = list(csv.DictReader(open(tmp_path / "r.csv")))
    assert len(rows) == T and rows[1]["used"] == "1 2" and float(rows[3]["elapsed"]) == pytest.approx(0.7)
    doc = json.loads(res.to_json(str(tmp_path / "r.json")))
    assert doc["summary"]["workers"] == 3 and len(doc["iterations"]) == T


def test_synthetic_problem_gradients_sum_to_the_full_gradient():
    for kind in ("least-squares", "logistic"):
        prob = SyntheticProblem(kind, points=90, dim=4, rng=1)
        g = prob.partial_gradient(7)
        w = np.random.default_rng(2).normal(size=4)
        assert np.allclose(sum(g(w, j) for j in range(7)), prob.gradient(w))
        eps = 1e-6
        num = np.array([(prob.loss(w + eps * e) - prob.loss(w - eps * e)) / (2 * eps) for e in np.eye(4)])
        assert np.allclose(num, prob.gradient(w), atol=1e-6)
    with pytest.raises(ValueError, match="kind"):
        SyntheticProblem("svm")


@pytest.mark.parametrize("make", [lambda: gc.cyclic_repetition(6, 2, rng=1), lambda: gc.ye_abbe(6, 2, 2),
                                  lambda: gc.fractional_repetition(6, 2), lambda: gc.coded_reduce(2, 2, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_worker_encoder_is_encode_worker_without_its_per_call_work(make, dtype, monkeypatch):
    """The set-up plan gives encode_worker's bits exactly (same coefficients in the run's dtype, same order of
    operations), and encode() never goes through the validating entry point or a BLAS thread context."""
    code = make()
    p = 37
    G = np.random.default_rng(3).normal(size=(code.k, p)).astype(dtype)
    n = getattr(code, "N", code.n)
    ref = [code.encode_worker(i, [G[j] for j in code.supports[i]], length=p) for i in range(n)]
    encoders = [WorkerEncoder(code, i, p, dtype) for i in range(n)]

    def forbidden(*args, **kwargs):
        raise AssertionError("per-call validation on the worker's path")

    monkeypatch.setattr(type(code), "encode_worker", forbidden)
    monkeypatch.setattr(gc._core.decoders, "single_threaded_blas", forbidden)
    for i, enc in enumerate(encoders):
        out = np.full(enc.q, np.nan, dtype=dtype)
        enc.encode(None, lambda w, j: G[j], out)
        assert out.dtype == dtype and out.tobytes() == ref[i].tobytes()
        B = code.float_B(dtype)[i].reshape(code.k, code.m)
        assert np.array_equal(enc.weights.reshape(code.k, code.m), B) and not enc.weights.flags.writeable


def test_worker_encoder_checks_what_the_callbacks_return():
    code = gc.cyclic_repetition(6, 2, rng=1)
    enc = WorkerEncoder(code, 0, 10, np.float32)
    out = np.empty(10, dtype=np.float32)
    with pytest.raises(ValueError, match="of length 10"):
        enc.encode(None, lambda w, j: np.zeros(9, dtype=np.float32), out)
    with pytest.raises(TypeError, match="returned dtype float64"):
        enc.encode(None, lambda w, j: np.zeros(10), out)
    with pytest.raises(ValueError,
                       match=r"coded_gradient\(params, weights\) must return .* length ceil\(length/m\)=10"):
        enc.check_message(np.zeros(10))
    with pytest.raises(ValueError, match=r"worker must be in \[0, n - 1\] = \[0, 5\]"):
        WorkerEncoder(code, 6, 10, np.float64)
    with pytest.raises(TypeError, match="float dtype"):
        WorkerEncoder(code, 0, 10, np.int64)


def test_combiner_caches_the_error_estimate_and_plan_per_responder_set(monkeypatch):
    code = gc.cyclic_repetition(6, 2, rng=1)
    comb = Combiner(code)
    calls = {"est": 0, "dec": 0}
    est, dec = type(code).error_estimate, type(code).decoding_matrix

    def counted_est(self, *a, **k):
        calls["est"] += 1
        return est(self, *a, **k)

    def counted_dec(self, *a, **k):
        calls["dec"] += 1
        return dec(self, *a, **k)

    monkeypatch.setattr(type(code), "error_estimate", counted_est)
    monkeypatch.setattr(type(code), "decoding_matrix", counted_dec)
    G = np.random.default_rng(0).normal(size=(code.k, 20))
    Y = code.encode(G)
    out = np.zeros(20)
    values = set()
    for rows in ([5, 0, 3, 2], [0, 2, 3, 5], [2, 3, 5, 0]):        # one set in three arrival orders
        comb.combine(rows, Y, out)
        assert np.allclose(out, G.sum(axis=0), rtol=1e-12, atol=1e-12)
        values.add(comb.error_estimate(rows, np.float64))
    assert calls == {"est": 1, "dec": 1} and len(values) == 1
    comb.error_estimate([1, 2, 3, 4], np.float64)
    comb.error_estimate([1, 2, 3, 4], np.float32)                 # another dtype: another entry
    assert calls["est"] == 3


def test_limit_blas_validates_its_argument():
    from gradcodes.mpi._setup import limit_blas

    limit_blas(None)                                               # leaves BLAS alone
    with pytest.raises(ValueError, match="blas_threads must be an integer >= 1 or None"):
        limit_blas(0)


def test_finite_check_of_a_combined_result():
    from gradcodes._runtime.engine import finite

    x = np.ones(1000, dtype=np.float32)
    assert finite(x)
    x[17] = np.nan
    assert not finite(x)
    big = np.full(10, np.finfo(np.float32).max, dtype=np.float32)   # the sum overflows, the entries are finite
    assert finite(big)
    big[3] = np.inf
    assert not finite(big)


@pytest.mark.parametrize("make", [lambda: gc.cyclic_repetition(6, 2, rng=1), lambda: gc.ye_abbe(6, 2, 2)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_combine_finite_is_the_combine_and_checks_every_block(make, dtype):
    """The master's decode with its check: the values of :meth:`Combiner.combine` (m = 1 and m = 2) in the
    messages' dtype, and a NaN or inf anywhere (first, middle or last column, any output block u) of a message
    the decode uses is reported."""
    code = make()
    q = 30
    Y = np.random.default_rng(0).normal(size=(code.n, q)).astype(dtype)
    rows = [5, 0, 3, 2]
    comb = Combiner(code)
    ref = np.zeros(code.m * q, dtype=dtype)
    comb.combine(rows, Y, ref)
    out = np.full(code.m * q, 7.0, dtype=dtype)
    assert comb.combine_finite(rows, Y, out)
    eps = np.finfo(dtype).eps
    scale = np.abs(comb.weights(rows, dtype)).max() * np.abs(Y).max() * len(rows)
    assert out.dtype == dtype and np.abs(out - ref).max() <= 4 * len(rows) * eps * scale
    for row in rows:
        for col in (0, 10, q - 1):
            for bad in (np.nan, np.inf, -np.inf):
                Z = Y.copy()
                Z[row, col] = bad
                plan = comb.plan(rows, dtype)
                used = any(row in idx for idx, _ in plan)
                assert comb.combine_finite(rows, Z, out) is (not used)


@pytest.mark.parametrize("make", [lambda: gc.cyclic_repetition(8, 2, rng=0), lambda: gc.fractional_repetition(6, 2),
                                  lambda: gc.ye_abbe(6, 2, 2)])
def test_earliest_decodable_tracker_is_decided_once_per_set(make, monkeypatch):
    """The runtime's tracker answers as ``code.decodable`` for every arrival prefix, and decides each covered
    responder set once per process: not again for a later prefix or iteration, nor for another tracker (another
    Master) of the same code. (The runtime's earlier cache replayed every arrival of a new set through the
    tracker, deciding the covered prefixes again, on the master's critical path.)"""
    from gradcodes.mpi._setup import wait_tracker

    code, ref = make(), make()
    calls: list[tuple[int, ...]] = []
    real = type(code)._decodable_set

    def counted(self, F, mask, dtype):
        if self is code:
            calls.append(tuple(int(x) for x in F))
        return real(self, F, mask, dtype)

    monkeypatch.setattr(type(code), "_decodable_set", counted)

    def run(seed: int) -> None:
        tracker, _ = wait_tracker(code, None, None, np.float64)       # a new tracker (Master) each time
        rng = np.random.default_rng(seed)
        for _ in range(100):
            tracker.reset()
            prefix: list[int] = []
            for i in rng.permutation(code.n):
                prefix.append(int(i))
                got = tracker.add(int(i))
                assert got == ref.decodable(prefix)
                if got:
                    break

    run(1)
    first = len(calls)
    assert len(set(calls)) == first                         # no set decided twice
    if code._group_bounds() is None:
        assert first > 0
    run(1)                                                  # the same sets again, a new tracker: no work
    assert len(calls) == first


class _Req:
    """A send request of :class:`_Comm`: complete once ``done`` is set (the receiver took the message)."""

    def __init__(self) -> None:
        self.done = False

    def Test(self) -> bool:
        return self.done


class _Comm:
    """Records the ``Isend`` calls of a :class:`ParamSender` (no MPI)."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, np.ndarray, _Req]] = []

    def Isend(self, buf: np.ndarray, dest: int, tag: int) -> _Req:
        req = _Req()
        self.sent.append((dest, buf, req))
        return req

    def complete(self, dest: int) -> None:
        for d, _, req in self.sent:
            if d == dest:
                req.done = True


def test_param_sender_copies_for_a_slow_worker_while_the_master_waits(monkeypatch):
    """A slow worker still receiving the parameters when the iteration ends: the parameters must not change under
    its pending send (MPI), so the train loop's ``writable`` needs them in another buffer. The first time that
    copy is made on the critical path; from then on :meth:`ParamSender.idle` (called while the master polls its
    receives) prepares it chunk by chunk, and ``writable`` copies nothing (the old sender copied the parameters
    on the critical path in every such iteration). Values stay exact, a short wait finishes the spare in
    ``writable``, and without a pending send ``writable`` returns the same array."""
    import gradcodes.mpi._comm as cm

    monkeypatch.setattr(cm, "get_mpi", lambda: None)
    comm = _Comm()
    p = 3 * cm.CHUNK + 5                                     # four chunks, the last one short
    ps = cm.ParamSender(comm, [1, 2], p, np.float64, Tags(tag_ub=32767))
    w = ps.writable(np.arange(p, dtype=np.float64))         # the initial parameters into a sender buffer
    assert (ps.copies, ps.copied) == (1, p)
    for t in range(6):
        comm.complete(2)                                     # the slow worker took the previous parameters late
        ps.send(w, t)
        assert ps.copies == (1 if t == 0 else 2)             # sent without a copy
        comm.complete(1)                                     # the fast worker answers; worker 2 still receiving
        waits = 2 if t == 4 else 5                           # iteration 4: too short a wait for the whole copy
        prepared = ps.prepared
        for _ in range(waits):
            ps.idle()
        copied = ps.copied
        new = ps.writable(w)
        assert new is not w and np.array_equal(new, w)       # never the buffer worker 2 is receiving
        if t == 0:
            assert (ps.copies, ps.copied - copied) == (2, p)            # the first time: on the critical path
        elif t == 4:
            assert (ps.copies, ps.copied - copied) == (2, p - 2 * cm.CHUNK)   # finishes the spare
        else:
            assert (ps.copies, ps.copied - copied, ps.prepared - prepared) == (2, 0, 1)
        new += 1.0                                           # the step, in place
        w = new
    comm.complete(2)
    ps.progress()
    assert ps.writable(w) is w                               # no pending send: the same array, no copy
    assert ps.copies == 2 and np.array_equal(w, np.arange(p) + 6.0)


@pytest.mark.parametrize(("tree", "rows"), [((2, 2, 1), [0]), ((2, 2, 1), [1]), ((3, 2, 1), [0, 1]),
                                           ((3, 2, 1), [2, 0])])
def test_combine_onto_a_base_equals_copy_then_accumulate(tree, rows):
    """A tree parent's ``coded_gradient`` message plus its children's decode, in one pass into a send buffer:
    the same values as copying the message and accumulating (a coefficient 1: one add; others: BLAS axpy), the
    message unchanged."""
    code = gc.coded_reduce(*tree).inner
    q = 11
    rng = np.random.default_rng(1)
    Y = rng.normal(size=(code.n, q))
    base = rng.normal(size=q)
    keep = base.copy()
    comb = Combiner(code)
    ref = base.copy()
    comb.combine(rows, Y, ref, accumulate=True)
    out = np.full(q, np.nan)
    comb.combine(rows, Y, out, base=base)
    assert np.array_equal(out, ref) and np.array_equal(base, keep)


@pytest.mark.parametrize("bad", [None, "child", "base"])
def test_combine_finite_onto_a_base_checks_the_sum_once(bad):
    """``combine_finite`` with ``base``: the same sum as :meth:`Combiner.combine` and its verdict, False when a
    used child or the base holds a NaN, the base never written."""
    code = gc.coded_reduce(3, 2, 1).inner
    q, rows = 13, [2, 0]
    rng = np.random.default_rng(2)
    Y = rng.normal(size=(code.n, q))
    base = rng.normal(size=q)
    if bad == "child":
        Y[0, 5] = np.nan
    elif bad == "base":
        base[7] = np.inf
    keep = base.copy()
    comb = Combiner(code)
    ref = np.empty(q)
    comb.combine(rows, Y, ref, base=base)
    out = np.empty(q)
    assert comb.combine_finite(rows, Y, out, base=base) is (bad is None)
    assert np.array_equal(out, ref, equal_nan=True) and np.array_equal(base, keep)


def test_combiner_single_names_the_message_that_is_the_decode():
    """The master returns a message as the gradient (no pass over it but the NaN/inf check) exactly when the
    decode is that message with coefficient 1: a CodedReduce parent's one child, a fractional repetition group;
    not a coefficient 1 - 2 ulp (a float solve), a combination, or m > 1."""
    tree = Combiner(gc.coded_reduce(2, 2, 1).inner)
    assert [tree.single([r], np.float64) for r in (0, 1)] == [0, 1]
    assert tree.single([1], np.float32) == 1
    assert Combiner(gc.fractional_repetition(2, 1)).single([1], np.float64) == 1     # one group
    frc = Combiner(gc.fractional_repetition(4, 1))
    assert frc.single([0, 2], np.float64) is None                 # one message from each group: two terms
    cyc = Combiner(gc.cyclic_repetition(2, 1, rng=0))
    (c,) = cyc.plan([0], np.float64)[0][1]                        # 1 exactly or 1 - 2 ulp, by the float solve
    assert (cyc.single([0], np.float64) == 0) is (c == 1)
    assert Combiner(gc.coded_reduce(3, 2, 1).inner).single([0, 1], np.float64) is None
    assert Combiner(gc.ye_abbe(6, 2, 2)).single([0, 1, 2, 3], np.float64) is None


# ------------------------------------------------------------------ whole-tree acceptance at the master


def _tails(lay, used: np.ndarray, rank: int) -> np.ndarray:
    """The tail of the message rank sends up, built as a runtime parent does (from its children's tails)."""
    from gradcodes._runtime.layout import write_tail

    kids = lay.children(rank)
    if not kids:
        return np.zeros(0, dtype=np.float32)
    below = np.stack([_tails(lay, used, c) for c in kids])
    out = np.empty(lay.tail(rank), dtype=np.float32)
    write_tail(out, [i for i, c in enumerate(kids) if used[c - 1]], below)
    assert np.array_equal(out != 0, used[np.array(lay.preorder(rank)) - 1])     # pre-order flags of the used
    return out


def _runtime_verdict(check, lay, used: np.ndarray) -> bool:
    """The master's verdict on the pattern ``used`` (the workers whose messages are in the sum)."""
    kids = lay.children(0)
    tails = np.stack([_tails(lay, used, c) for c in kids])
    try:
        check.check([i for i, c in enumerate(kids) if used[c - 1]], tails)
        return True
    except gc.DecodingError:
        return False


def _execute_verdict(code, mask: np.ndarray, dtype) -> bool:
    Y = code.encode(np.random.default_rng(1).uniform(0.5, 1.5, (code.k, 3)).astype(dtype))
    try:
        code.execute(mask, Y)
        return True
    except gc.DecodingError:
        return False


def test_tree_check_refuses_the_issue_pattern_as_execute_does():
    """coded_reduce(6, 2, 3, cyclic_repetition(6, 3, rng=34, refine=0)) in float32 with stragglers [0, 1, 2, 7,
    16, 22, 25, 27, 29, 33, 37, 38]: every parent's set decoded in float32 under the former estimate, execute
    refuses the pattern; so does the master's check (naming the ranks), and both accept the same pattern in float64
    at a tolerance its rigorous bound (1.2e-7) meets."""
    from gradcodes._runtime.layout import TreeCheck

    code = gc.coded_reduce(6, 2, 3, gc.cyclic_repetition(6, 3, rng=34, refine=0))
    lay = layout_for(code)
    mask = np.ones(code.N, dtype=bool)
    mask[[0, 1, 2, 7, 16, 22, 25, 27, 29, 33, 37, 38]] = False
    used = code.used(mask)
    assert not _execute_verdict(code, mask, np.float32)
    check32 = TreeCheck(code, lay, np.float32)
    assert not _runtime_verdict(check32, lay, used)
    kids = lay.children(0)
    tails = np.stack([_tails(lay, used, c) for c in kids])
    with pytest.raises(gc.DecodingError, match=r"iteration 7: the CodedReduce tree cannot decode") as err:
        check32.check([3, 4, 5], tails, iteration=7)
    assert f"the sum came from ranks {(np.flatnonzero(used) + 1).tolist()}" in str(err.value)
    assert err.value.responders == np.flatnonzero(used).tolist()
    assert check32.misses == 1                                       # the verdict was cached
    code.rtol = 1e-6
    assert _execute_verdict(code, mask, np.float64)
    assert _runtime_verdict(TreeCheck(code, lay, np.float64), lay, used)


@pytest.mark.parametrize("tree,dtype", [((6, 2, 3, 34), np.float32), ((3, 2, 1, 7), np.float32),
                                        ((3, 3, 1, 7), np.float32), ((3, 3, 1, 7), np.float64),
                                        ((4, 2, 2, 25), np.float32)])
def test_tree_check_has_executes_verdict_on_random_patterns(tree, dtype):
    """The master's check on random straggler patterns (each parent's decoding set: its first n - s responding
    children, as execute's tree decoder takes them) gives execute's verdict on every pattern; trees of 2 and 3
    levels with ill-conditioned inner codes, so that both verdicts occur."""
    from gradcodes._runtime.layout import TreeCheck

    n, L, s, rng = tree
    code = gc.coded_reduce(n, L, s, gc.cyclic_repetition(n, s, rng=rng, refine=0))
    lay = layout_for(code)
    check = TreeCheck(code, lay, dtype)
    verdicts = []
    for mask in code.random_patterns(60, rng=3):
        mine = _runtime_verdict(check, lay, code.used(mask))
        assert mine == _execute_verdict(code, mask, dtype), code.pattern_text(mask)
        verdicts.append(mine)
    if tree != (3, 3, 1, 7) or dtype == np.float32:
        assert any(verdicts) and not all(verdicts), "both verdicts should occur on these trees"


def test_tree_check_reports_the_whole_patterns_bound():
    """The master's reported error of a tree decode is the bound of the pattern it decoded (the rule's bound of the
    flattened decoding vector, as decode reports it), not the master's own decode plus (L - 1) times the inner
    code's worst, which did not bound the composed error; and that bound holds for a gradient in one partition."""
    from gradcodes._runtime.layout import TreeCheck

    code = gc.coded_reduce(3, 3, 1, gc.cyclic_repetition(3, 1, rng=7, refine=0))
    lay = layout_for(code)
    check = TreeCheck(code, lay, np.float64)
    kids = lay.children(0)
    accepted = 0
    for mask in code.random_patterns(20, rng=5):
        used = code.used(mask)
        tails = np.stack([_tails(lay, used, c) for c in kids])
        try:
            est = check.check([i for i, c in enumerate(kids) if used[c - 1]], tails)
        except gc.DecodingError:
            continue
        G = np.zeros((code.k, 8))
        G[int(np.random.default_rng(0).integers(code.k))] = 1.0 + np.arange(8) / 8
        g, info = code.decode(used, code.encode(G), return_info=True)
        assert est == info.error_estimate
        assert np.abs(g - G.sum(axis=0)).max() / np.abs(G).sum(axis=0).max() <= est
        accepted += 1
    assert accepted >= 5


def test_tree_check_of_a_parent_that_decoded_from_fewer_than_n_minus_s():
    """The "earliest" policy may stop below n - s children (fractional repetition: one per group): the check
    measures that decode's own coefficients (execute's tree decoder always takes n - s), and accepts it."""
    from gradcodes._runtime.layout import TreeCheck

    code = gc.coded_reduce(4, 2, 1, gc.fractional_repetition(4, 1))
    lay = layout_for(code)
    used = np.zeros(code.N, dtype=bool)
    used[[0, 2, 4, 6, 12, 14]] = True                 # the master: {0, 2}; worker 0: {4, 6}; worker 2: {12, 14}
    W = np.asarray(code._tree_weights(used[None], sets=True)[0][0], dtype=float)
    assert np.allclose(W @ code.float_B(), 1) and np.array_equal(W != 0, used)
    assert _runtime_verdict(TreeCheck(code, lay, np.float32), lay, used)


def test_grace_must_be_a_positive_finite_number_of_seconds():
    from gradcodes._runtime.setup import GRACE, check_grace

    assert check_grace(1) == 1.0 and GRACE == 5.0
    for bad in (0, -1.0, float("inf"), float("nan")):
        with pytest.raises(gc.GradcodesValueError, match="grace"):
            check_grace(bad)


def test_run_result_failures_default_empty_and_in_json():
    z = np.zeros(2)
    res = RunResult("c", "flat", 3, 2, z, z, z, np.ones((2, 3), dtype=bool))
    assert res.failures == {}
    res.failures[1] = "no goodbye within the grace"
    assert json.loads(res.to_json())["failures"] == {"1": "no goodbye within the grace"}
