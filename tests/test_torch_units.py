"""Single-process units of gradcodes.torch: the sampler, the loss weighting, FlatParams, the job's argument
parsing and bad input (the multi-process behaviour is in tests/test_torch.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcodes as gc
from gradcodes.torch import CodedSampler, FlatParams, coded_loss, loss_weights

torch = pytest.importorskip("torch")


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([(4, 1), (6, 2), (5, 1)]), st.integers(0, 3), st.integers(0, 1000))
def test_sampler_splits_each_global_batch_by_partition(ns, epoch, seed):
    n, s = ns
    code = gc.cyclic_repetition(n, s, rng=0)
    per_worker = []
    for i in range(n):
        sm = CodedSampler(100, code, i, batch_size=2 * n, seed=seed)
        sm.set_epoch(epoch)
        per_worker.append(list(sm))
        assert sm.partition_ids.tolist() == np.repeat(code.supports[i], 2).tolist()
    ref = CodedSampler(100, code, None, batch_size=2 * n, seed=seed)
    ref.set_epoch(epoch)
    for b, batch in enumerate(ref):
        assert batch == ref.global_batch(b).tolist()
        for i in range(n):                               # worker i's samples are its partitions' slices
            want = [x for j in code.supports[i] for x in batch[2 * j:2 * j + 2]]
            assert per_worker[i][b] == want
    again = CodedSampler(100, code, None, batch_size=2 * n, seed=seed)
    again.set_epoch(epoch)
    assert list(again) == list(ref)                      # deterministic across ranks


def test_sampler_bad_input_names_the_parameter():
    code = gc.cyclic_repetition(4, 1, rng=0)
    with pytest.raises(ValueError, match="batch_size must be a multiple"):
        CodedSampler(100, code, 0, batch_size=10)
    with pytest.raises(ValueError, match="worker"):
        CodedSampler(100, code, 4, batch_size=8)
    with pytest.raises(ValueError, match="batch_size"):
        CodedSampler(10, code, 0, batch_size=16)


@pytest.mark.parametrize("make", [lambda: gc.cyclic_repetition(5, 2, rng=1), lambda: gc.fractional_repetition(6, 2)])
def test_weighted_loss_gradient_is_the_encoded_message(make):
    """grad of sum_r B[i, part(r)] l_r / N equals row i of code.encode(partition gradients) (float64)."""
    code = make()
    N = 4 * code.k
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(N, 3, dtype=torch.float64, generator=g), torch.randn(N, dtype=torch.float64, generator=g)
    w = torch.randn(3, dtype=torch.float64, generator=g, requires_grad=True)
    parts = []
    for j in range(code.k):
        w.grad = None
        (((X[4 * j:4 * j + 4] @ w - y[4 * j:4 * j + 4]) ** 2).sum() / N).backward()
        parts.append(w.grad.clone())
    Y = code.encode(torch.stack(parts))
    for i in range(code.n):
        sm = CodedSampler(N, code, i, batch_size=N, shuffle=False)
        idx = next(iter(sm))
        w.grad = None
        coded_loss((X[idx] @ w - y[idx]) ** 2, loss_weights(code, i, sm.partition_ids, N,
                                                             dtype=torch.float64)).backward()
        torch.testing.assert_close(w.grad, Y[i], rtol=1e-12, atol=1e-14)


def test_loss_weights_refuses_m_above_one():
    with pytest.raises(ValueError, match="m = 2"):
        loss_weights(gc.ye_abbe(3, 1, 2), 0, [0, 1, 2], 3)


def test_flat_params_round_trip_and_grad_views():
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    flat = FlatParams(list(model.parameters()))
    assert flat.size == sum(p.numel() for p in model.parameters())
    vec = torch.arange(flat.size, dtype=torch.float32)
    flat.write(vec)
    out = torch.empty(flat.size)
    flat.read(out)
    torch.testing.assert_close(out, vec)
    g = torch.zeros(flat.size)
    flat.set_grads(g)
    g[0] = 5.0
    assert float(next(model.parameters()).grad.reshape(-1)[0]) == 5.0    # a view, not a copy


def test_job_parses_delays_and_schemes():
    from gradcodes.mpi import FixedDelay, NoDelay, ShiftedExponential
    from gradcodes.torch._job import build_scheme, parse_delay, parser

    assert isinstance(parse_delay("none", n=4, s=1, data=240), NoDelay)
    assert isinstance(parse_delay("fixed:0.3", n=4, s=1, data=240), FixedDelay)
    assert parse_delay("slow:0.3", n=4, s=1, data=240).workers == frozenset({3})
    assert isinstance(parse_delay("shiftexp:0.001", n=4, s=1, data=240), ShiftedExponential)
    with pytest.raises(ValueError, match="--delay"):
        parse_delay("sometimes", n=4, s=1, data=240)
    assert build_scheme("ddp", 4, 1)[0] is None
    assert build_scheme("all", 4, 1)[1] == "all"
    with pytest.raises(ValueError, match="unknown scheme"):
        build_scheme("nope", 4, 1)
    tree, _, label = build_scheme("coded_reduce", 6, 1, branching=2)
    assert (tree.N, tree.L, tree.branching, label) == (6, 2, 2, "coded_reduce b=2 L=2")
    with pytest.raises(ValueError, match="branching=2"):
        build_scheme("coded_reduce", 5, 1, branching=2)
    args = parser().parse_args(["--stragglers", "2", "--comm-factor", "3"])
    assert (args.stragglers, args.comm_factor) == (2, 3)


class _FakeDist:
    """Point-to-point receives from per-rank queues (what Children needs of torch.distributed), no processes."""

    def __init__(self):
        import queue

        self.queues = {}
        self._queue = queue.Queue

    def irecv(self, buf, src, tag):
        q = self.queues.setdefault(src, self._queue())

        class _Req:
            def wait(self):
                got = q.get()
                if isinstance(got, Exception):
                    raise got
                buf.copy_(got)

        return _Req()

    def send(self, src, t, msg, kind=0):
        """A message of iteration ``t`` from ``src`` in the runtime's format (int64 header, payload bytes)."""
        from gradcodes.torch._children import body, buffer

        buf = buffer(None, msg.numel(), msg.dtype, "cpu")
        buf[0], buf[1] = t, kind
        body(buf, msg.numel(), msg.dtype).copy_(msg)
        self.queues.setdefault(src, self._queue()).put(buf)

    def fail(self, src):
        """The link from ``src`` breaks: its pending receive raises."""
        self.queues.setdefault(src, self._queue()).put(RuntimeError("Connection closed by peer"))


def _children(code, ranks, q=5, dtype=None):
    import queue

    from gradcodes._simulate._policies import as_policy
    from gradcodes.torch._children import Children

    dist = _FakeDist()
    kids = Children(dist, code, ranks, q, dtype or torch.float64, "cpu", queue.Queue(), 0, as_policy(None, code))
    kids.start()
    return dist, kids


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([lambda: gc.fractional_repetition(4, 1), lambda: gc.cyclic_repetition(4, 2, rng=0),
                        lambda: gc.fractional_repetition(2, 1)]), st.data())
def test_children_fail_at_once_exactly_when_the_nan_senders_leave_no_decodable_set(make, data):
    """NaN/inf senders are stragglers; once the rest cannot decode the wait ends at once (the deadline is far)
    with an error naming the ranks, and otherwise the decode from the finite messages is exact."""
    import time

    from gradcodes.mpi import StragglerTimeout

    code = make()
    n = code.n
    bad = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    ranks = [10 + i for i in range(n)]
    dist, kids = _children(code, ranks)
    G = torch.randn(code.k, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    Y = code.encode(G)
    dist.send(ranks[0], 6, Y[0] + 1e3)                # stale (and wrong): must be dropped
    for i in bad:                                       # the NaN senders answer first
        msg = Y[i].clone()
        msg[i % 5] = float("nan") if i % 2 else float("inf")
        dist.send(ranks[i], 7, msg)
    rest = [i for i in range(n) if i not in bad]
    for i in rest:
        dist.send(ranks[i], 7, Y[i])
    start = time.monotonic()
    if not rest or not code.decodable(rest):
        with pytest.raises(StragglerTimeout, match="cannot decode, so the iteration cannot finish") as err:
            kids.collect(7, start + 60.0)
        seen = [r - 10 for r in err.value.bad]            # raised as soon as these made it impossible
        assert set(seen) <= set(bad) and not code.decodable([i for i in range(n) if i not in seen])
        assert time.monotonic() - start < 30
        return
    rows, got_bad, stale = kids.collect(7, start + 60.0)
    # (each child's receive thread reports on its own, so a NaN may land after the decode: a subset)
    assert set(got_bad) <= set(bad) and stale <= 1 and not set(rows) & set(bad)
    out = torch.empty(5, dtype=torch.float64)
    kids.combine(rows, out, accumulate=False)
    torch.testing.assert_close(out, G.sum(0), rtol=1e-12, atol=1e-12)


def test_children_keep_a_newer_message_and_time_out_naming_the_missing_ranks():
    from gradcodes.mpi import StragglerTimeout

    code = gc.fractional_repetition(2, 1)
    dist, kids = _children(code, [3, 4])
    dist.send(3, 5, torch.ones(5, dtype=torch.float64))          # iteration 5 while the parent is at 4
    kids.note(kids.arrived.get(), 4)
    assert kids.held[0] == 5
    kids.forget(4)                                                # a hung parent keeps newer messages ...
    assert kids.held[0] == 5
    rows, _, _ = kids.collect(5, float("inf"))
    assert rows == [0]
    kids.release(rows)
    import time

    with pytest.raises(StragglerTimeout, match=r"rank 1: iteration 6: .*missing ranks \[3, 4\]"):
        kids.collect(6, time.monotonic() + 0.2, who="rank 1: ")
    dist.send(4, 7, torch.ones(5, dtype=torch.float64))
    kids.note(kids.arrived.get(), 6)
    assert kids.held[1] == 7
    kids.forget(7)                                                # ... and drops those of its own iteration
    assert kids.held == [None, None]


def _linear_problem(dtype):
    from gradcodes.torch._job import digits, make_model

    X, y, _, _ = digits(dtype)
    return X, y, make_model("linear", seed=0, dtype=dtype), torch.nn.CrossEntropyLoss(reduction="none")


def test_coded_gradient_encodings_agree_in_float64_and_auto_picks_partitions_only_when_needed():
    from gradcodes.torch import CodedGradient

    X, y, model, loss_fn = _linear_problem(torch.float64)
    code = gc.cyclic_repetition(3, 1, rng=0)
    for w in range(3):
        sm = CodedSampler(len(X), code, w, batch_size=120)
        idx = next(iter(sm))
        a, b = torch.empty(650, dtype=torch.float64), torch.empty(650, dtype=torch.float64)
        CodedGradient(model, loss_fn, code, w, sm, encoding="loss")(X[idx], y[idx], a)
        CodedGradient(model, loss_fn, code, w, sm, encoding="partitions")(X[idx], y[idx], b)
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-15)
    assert CodedGradient(model, loss_fn, code, 0, sm).encoding == "loss"                       # float64
    X32, y32, m32, _ = _linear_problem(torch.float32)
    assert CodedGradient(m32, loss_fn, code, 0, sm).encoding == "partitions"                 # B beyond {0, 1}
    frac = gc.fractional_repetition(3, 2)
    assert CodedGradient(m32, loss_fn, frac, 0, CodedSampler(len(X), frac, 0, batch_size=120)).encoding == "loss"
    with pytest.raises(ValueError, match="encoding must be"):
        CodedGradient(m32, loss_fn, code, 0, sm, encoding="fast")
    with pytest.raises(ValueError, match="m = 2"):
        CodedGradient(m32, loss_fn, gc.ye_abbe(3, 1, 2), 0, sm, encoding="loss")


def test_float32_decode_of_a_cancelling_code_is_within_1e_6_of_the_single_process_gradient():
    """cyclic_repetition(3, 1) has B entries near 20 and decoding vectors that cancel: the message of one weighted
    float32 backward pass decoded with float32 sums was 1.5e-6 away on this linear model (3e-6 on the CNN)."""
    import itertools

    from gradcodes.torch import CodedGradient

    X, y, model, loss_fn = _linear_problem(torch.float32)
    code = gc.cyclic_repetition(3, 1, rng=0)
    _, kids = _children(code, [1, 2, 3], q=650, dtype=torch.float32)
    ref = CodedSampler(len(X), code, None, batch_size=120)
    worst = 0.0
    for t in range(3):
        idx = ref.global_batch(t)
        model.zero_grad()
        loss_fn(model(X[idx]), y[idx]).mean().backward()
        gref = torch.cat([p.grad.reshape(-1) for p in model.parameters()]).double()
        for w in range(3):
            sm = CodedSampler(len(X), code, w, batch_size=120)
            wi = sm.global_batch(t)[sm._offsets]
            CodedGradient(model, loss_fn, code, w, sm)(X[wi], y[wi], kids.payload[w])
        for F in itertools.combinations(range(3), 2):
            g = torch.empty(650)
            kids.combine(list(F), g, accumulate=False)
            worst = max(worst, float((g.double() - gref).norm() / gref.norm()))
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1.5)
    assert worst <= 1e-6, worst


def test_a_busy_worker_gets_its_stop_message_once_it_takes_its_last_parameters():
    """The master's stop skipped a worker whose previous parameters were still in flight (a worker blocked in its
    own send to a busy parent): that worker never stopped and its tree parent waited for it, so a torch job hung
    at the end (seen in a CI-like run). Now its sender delivers the stop message right after the message in
    flight, however late."""
    import threading

    from gradcodes.torch._children import STOP
    from gradcodes.torch._links import _Sender

    taken = threading.Event()
    sent = []

    class _Dist:
        def isend(self, buf, dst, tag):
            class _Req:
                def wait(self):
                    if not sent:
                        taken.wait(30)            # the receiver takes the first message only when the test says
                    sent.append((int(buf[0]), int(buf[1])))

            return _Req()

    buf = torch.zeros(3, dtype=torch.int64)
    th = _Sender(_Dist(), buf, 1, 72)
    th.start()
    buf[0] = 7
    th.send()
    th.stop()                                     # while busy: the old stop skipped this worker
    assert th.busy and th.is_alive()
    taken.set()
    th.join(10)
    assert not th.is_alive() and sent == [(7, 0), (7, STOP)]
    idle = _Sender(_Dist(), torch.zeros(3, dtype=torch.int64), 2, 72)
    sent.append((0, 0))                           # (its sends are taken at once)
    idle.start()
    idle.stop()
    idle.join(10)
    assert not idle.is_alive() and sent[-1] == (0, STOP)


def test_drain_deadlines_leave_each_parent_time_for_its_childrens_goodbyes():
    from gradcodes._runtime.setup import height
    from gradcodes.mpi import layout_for
    from gradcodes.torch._setup import drain_deadline

    tree = layout_for(gc.coded_reduce(2, 2, 1))               # master, 2 parents, 4 leaves
    assert [height(tree, r) for r in range(7)] == [2, 1, 1, 0, 0, 0, 0]
    assert height(layout_for(gc.cyclic_repetition(4, 1, rng=0)), 0) == 1
    # a parent that got its stop message at 0 gives up at 20; its leaves say goodbye at once; the master
    # (stop messages sent at 0) waits until 30, after a parent that took its stop message up to 10 s late
    assert drain_deadline(tree, 1, 0.0, 10.0) == 20.0 and drain_deadline(tree, 0, 0.0, 10.0) == 30.0
    assert drain_deadline(tree, 1, 10.0, 10.0) <= drain_deadline(tree, 0, 0.0, 10.0)


# --- issue 34: the message header, frozen parameters, set-up checks, adversarial codes, the end of a run ---------


def test_flat_params_leave_frozen_parameters_out():
    """A frozen parameter got a zero .grad, so AdamW's weight decay moved it; now it is never read, written or
    given a .grad."""
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    model[0].weight.requires_grad_(False)
    flat = FlatParams(list(model.parameters()))
    assert flat.size == 2 + 2 + 1 and len(flat.params) == 3
    flat.set_grads(torch.ones(flat.size))
    assert model[0].weight.grad is None and model[0].bias.grad is not None
    for p in model.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="requires_grad=True"):
        FlatParams(list(model.parameters()))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_children_decode_every_float_dtype_with_the_iteration_exact_in_an_int_header(dtype):
    """The iteration travelled in the payload's first entry: float16 made 2049 into 2048 (the message was taken
    as stale), and bfloat16 failed at set-up (no numpy dtype)."""
    dt = getattr(torch, dtype)
    code = gc.fractional_repetition(4, 1)
    dist, kids = _children(code, [1, 2, 3, 4], dtype=dt)
    G = torch.randn(code.k, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    Y = code.encode(G).to(dt)
    t = 2049
    dist.send(1, t - 1, Y[0] + 100)                       # stale: dropped, though t - 1 and t share a float16
    for i in (1, 2):
        dist.send(i + 1, t, Y[i])
    import time

    rows, bad, stale = kids.collect(t, time.monotonic() + 30)
    # rows 1 and 2 decode at once, so the stale message may not be read yet (stale 0 or 1, by timing); read as
    # current it would have made row 0 a responder (the float16 bug)
    assert sorted(rows) == [1, 2] and bad == [] and stale in (0, 1)
    out = torch.empty(5, dtype=dt)
    kids.combine(rows, out, accumulate=False)
    u = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24, "float64": 2.0 ** -53}[dtype]
    torch.testing.assert_close(out.double(), G.sum(0), rtol=8 * u, atol=8 * u * float(G.abs().sum(0).max()))


def test_receiver_close_ends_an_idle_receive_thread():
    """A worker's spare parameter slot waited for release forever: one thread and two parameter buffers leaked
    per train call."""
    import queue

    from gradcodes.torch._children import STOP, Receiver

    dist = _FakeDist()
    th = Receiver(dist, torch.zeros(4, dtype=torch.int64), 0, 72, 1, queue.Queue(), STOP)
    th.free.clear()                                       # a slot not yet released
    th.start()
    th.close()
    th.join(5)
    assert not th.is_alive()


def test_drain_records_a_child_whose_link_failed_instead_of_raising():
    """A worker that exited after its last message turned a finished run into an error at the master's stop."""
    import time

    code = gc.fractional_repetition(2, 1)
    dist, kids = _children(code, [3, 4])
    dist.send(3, 0, torch.zeros(5, dtype=torch.float64), kind=2)     # rank 3 says goodbye
    dist.fail(4)                                                    # rank 4's link breaks
    missing = kids.drain(time.monotonic() + 10)
    assert missing == [] and list(kids.failed) == [4] and "link failed" in kids.failed[4]


class _World(_FakeDist):
    """A fake process group of ``size`` ranks seen from rank 0: set-up collectives, sends recorded per rank."""

    def __init__(self, size, others=None):
        super().__init__()
        import threading

        self.size, self.others = size, others or {}
        self.sent = []
        self.gate = threading.Event()
        self.gate.set()

    def get_backend(self):
        return "gloo"

    def get_world_size(self):
        return self.size

    def get_rank(self):
        return 0

    def all_gather(self, out, mine):
        for r, o in enumerate(out):
            o.copy_(self.others.get(r, mine))

    def isend(self, buf, dst, tag):
        world = self

        class _Req:
            def wait(self):
                world.gate.wait(30)
                world.sent.append((dst, int(buf[0]), int(buf[1])))

        return _Req()


def _master(world, code, monkeypatch, params=None, **kw):
    from gradcodes.torch import _master

    monkeypatch.setattr(_master, "_dist", lambda: world)
    params = params if params is not None else [torch.zeros(5, dtype=torch.float64, requires_grad=True)]
    return _master.Master(code, params, **kw)


def test_check_same_names_the_ranks_whose_code_or_model_differs():
    """Ranks that built cyclic_repetition(3, 1) without rng trained on wrong gradients without a word; now every
    rank refuses at set-up, naming the ranks (the same all-gathered digests on every rank)."""
    from gradcodes.torch._setup import check_same

    code = gc.cyclic_repetition(3, 1, rng=0)

    class _Gather(_World):
        def __init__(self, change):
            super().__init__(4)
            self.change = change

        def all_gather(self, out, mine):
            for r, o in enumerate(out):
                o.copy_(mine)
                self.change(r, o)

    def other_code(r, v):
        if r == 2:
            v[0] += 1

    def other_size(r, v):
        if r in (1, 3):
            v[1] = 6

    with pytest.raises(ValueError, match=r"ranks \[2\] built a different code than rank 0"):
        check_same(code, _Gather(other_code), 5)
    with pytest.raises(ValueError, match=r"ranks \[1, 3\] have a different number of trainable parameter entries "
                                         r"than rank 0 \(5; \[6, 6\]\)"):
        check_same(code, _Gather(other_size), 5)
    check_same(code, _Gather(lambda r, v: None), 5)
    check_same(gc.coded_reduce(2, 2, 1), _Gather(lambda r, v: None), 5)     # trees have a digest too

    def other_buffers(r, v):
        if r == 3:
            v[2] = 48

    with pytest.raises(ValueError, match=r"ranks \[3\] have buffers of a different size than rank 0 \(56 bytes; "
                                         r"\[48\]\)"):
        check_same(code, _Gather(other_buffers), 5, nbytes=56)


def test_master_decodes_an_adversarial_code_adversarially(monkeypatch):
    """adversarial_gc under gradcodes.torch decoded the first decodable set (one message here) and applied a
    liar's gradient; now n - s messages and decode_adversarial, as gradcodes.mpi does."""
    code = gc.adversarial_gc(np.ones((3, 3), dtype=np.int64), 0, 1)
    world = _World(4)
    with pytest.raises(ValueError, match=r"at least K \+ a = 2"):
        _master(world, code, monkeypatch, policy="earliest")
    with pytest.raises(TypeError, match="float32 or float64"):
        _master(world, code, monkeypatch, params=[torch.zeros(5, dtype=torch.float16, requires_grad=True)])
    master = _master(world, code, monkeypatch)
    G = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    Y = code.encode(G)
    master.broadcast(0)
    world.send(1, 0, Y[0])
    world.send(2, 0, Y[1] + 10.0)                         # worker 1 lies
    world.send(3, 0, Y[2])
    info = master.aggregate(0)
    assert info.adversaries == [1] and sorted(info.responders) == [0, 1, 2]
    torch.testing.assert_close(master.grad, G.sum(0), rtol=1e-12, atol=1e-12)


def test_master_sends_a_busy_worker_the_current_parameters_once_it_is_free(monkeypatch):
    """When every worker was still busy with earlier parameters at a broadcast, the iteration could never finish
    (a job with fractional_repetition(3, 2), which decodes from one message, timed out after a few hundred
    iterations): the master now sends each skipped worker this iteration's parameters as soon as it is free."""
    import threading

    code = gc.fractional_repetition(3, 2)
    world = _World(4)
    master = _master(world, code, monkeypatch, timeout=10.0)
    world.gate.clear()                                    # no worker takes its parameters yet
    master.broadcast(0)
    master.broadcast(1)                                   # every worker busy: all skipped
    assert master._busy == {0, 1, 2}

    def workers():
        world.gate.set()                                  # the workers take iteration 0's parameters ...
        for _ in range(1000):                             # ... and answer iteration 1 once they got it
            if any(t == 1 for _, t, _ in world.sent):
                dst = next(d for d, t, _ in world.sent if t == 1)
                world.send(dst, 1, torch.ones(5, dtype=torch.float64))
                return
            threading.Event().wait(0.01)

    th = threading.Thread(target=workers)
    th.start()
    info = master.aggregate(1)
    th.join(10)
    assert info.iteration == 1 and len(info.responders) == 1
    assert sorted(d for d, t, _ in world.sent if t == 1) == [1, 2, 3]


def test_torch_grace_must_be_a_positive_finite_number_of_seconds():
    from gradcodes._runtime.setup import GRACE
    from gradcodes._runtime.setup import check_grace as _check_grace
    from gradcodes.torch._links import STOPPED_STATUS

    assert _check_grace(2) == 2.0 and GRACE == 5.0 and STOPPED_STATUS == 0
    for bad in (0, -1.0, float("inf"), float("nan")):
        with pytest.raises(gc.GradcodesValueError, match="grace"):
            _check_grace(bad)


# --- issue 36: datasets through a DataLoader, model buffers in the messages, BatchNorm, the loop's arguments --------
class _Recorded:
    """A map-style dataset that records which samples were read (in this process: num_workers=0)."""

    def __init__(self, n):
        self.n, self.read = n, []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.read.append(int(i))
        return torch.tensor([float(i)]), int(i)


@pytest.mark.parametrize("workers", [0, 2])
def test_loader_feed_reads_the_workers_samples_of_any_iteration(workers):
    """In order, after a jump ahead, back, and across epochs: the batch of global iteration t is the worker's
    samples of global batch t (partition by partition), with 0 or 2 loader processes."""
    from gradcodes.torch import LoaderFeed

    code = gc.cyclic_repetition(4, 1, rng=0)
    data = _Recorded(50)                                 # 6 global batches of 8 per epoch
    feed = LoaderFeed(data, CodedSampler(50, code, 2, batch_size=8, seed=3), {"num_workers": workers})
    ref = CodedSampler(50, code, 2, batch_size=8, seed=3)
    for t in [0, 1, 2, 4, 3, 11, 5, 6, 13, 40]:
        ref.set_epoch(t // 6)
        want = ref.global_batch(t % 6)[ref._offsets].tolist()
        inputs, targets = feed.get(t)
        assert targets.tolist() == want and inputs[:, 0].tolist() == [float(i) for i in want], t
    if workers == 0:      # only this worker's samples were read (those of the skipped iteration 3 among them)
        mine = set()
        for e in range(7):
            ref.set_epoch(e)
            mine |= {i for b in ref for i in b}
        assert set(data.read) <= mine and len(set(data.read)) < 50


def test_loader_feed_refuses_the_arguments_it_sets_and_a_wrong_size():
    from gradcodes.torch import LoaderFeed

    code = gc.cyclic_repetition(4, 1, rng=0)
    with pytest.raises(ValueError, match="must not set"):
        LoaderFeed(_Recorded(40), CodedSampler(40, code, 0, batch_size=8), {"batch_size": 4})
    with pytest.raises(ValueError, match="40 samples, the dataset has 30"):
        LoaderFeed(_Recorded(30), CodedSampler(40, code, 0, batch_size=8))


def test_model_buffers_travel_bitwise_after_the_message_and_leave_bufferless_messages_unchanged():
    from gradcodes.torch._children import HEAD, body, buffer, trailer
    from gradcodes.torch._params import ModelBuffers

    torch.manual_seed(0)
    a = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.BatchNorm1d(5), torch.nn.BatchNorm1d(5))
    b = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.BatchNorm1d(5), torch.nn.BatchNorm1d(5))
    a(torch.randn(7, 3))                                 # running statistics and counters move
    src, dst = ModelBuffers(list(a.buffers())), ModelBuffers(list(b.buffers()))
    assert src.nbytes == 2 * (2 * 24 + 8)                # float32 statistics of 20 bytes padded to 24, the counter
    for dtype in (torch.float64, torch.float32, torch.bfloat16):
        msg = buffer(2, 3, dtype, "cpu", src.nbytes)
        assert msg.shape == (2, HEAD + -(-3 * msg.new_empty(0, dtype=dtype).element_size() // 8) + src.nbytes // 8)
        body(msg, 3, dtype).fill_(1.5)
        src.pack(trailer(msg, 3, dtype, src.nbytes)[1])
        dst.unpack(trailer(msg, 3, dtype, src.nbytes)[1])
        assert body(msg, 3, dtype).eq(1.5).all()         # the entries are untouched
        for x, y in zip(a.buffers(), b.buffers(), strict=True):
            assert x.dtype == y.dtype and torch.equal(x, y)
    assert buffer(None, 3, torch.float32, "cpu").shape == buffer(None, 3, torch.float32, "cpu", 0).shape == (HEAD + 2,)


def test_batchnorm_models_compute_one_forward_pass_per_partition():
    """The loss encoding's single forward pass would normalise over a worker's own partitions: refused, and
    "auto" takes per-partition passes whose decode is the ghost-batch gradient (float64)."""
    from gradcodes.torch import CodedGradient

    code = gc.cyclic_repetition(3, 1, rng=0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.Linear(6, 1)).double()
    loss_fn = torch.nn.MSELoss(reduction="none")
    X, y = torch.randn(12, 4, dtype=torch.float64), torch.randn(12, 1, dtype=torch.float64)
    with pytest.raises(ValueError, match="BatchNorm"):
        CodedGradient(model, loss_fn, code, 0, CodedSampler(12, code, 0, batch_size=12), encoding="loss")
    msgs = []
    for i in range(code.n):
        sm = CodedSampler(12, code, i, batch_size=12, shuffle=False)
        grad = CodedGradient(model, loss_fn, code, i, sm)
        assert grad.encoding == "partitions"
        out = torch.zeros(sum(p.numel() for p in model.parameters()), dtype=torch.float64)
        idx = next(iter(sm))
        grad(X[idx], y[idx], out)
        msgs.append(out)
    g = code.decode([0, 2], torch.stack(msgs)[[0, 2]])
    model.zero_grad()
    for j in range(3):                                   # ghost batches: each partition over its own 4 samples
        (loss_fn(model(X[4 * j:4 * j + 4]), y[4 * j:4 * j + 4]).sum() / 12).backward()
    ref = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    torch.testing.assert_close(g, ref, rtol=1e-12, atol=1e-14)


def test_train_refuses_bad_data_and_scheduler_step_before_any_message():
    from gradcodes.torch import train

    code = gc.cyclic_repetition(3, 1, rng=0)
    model = torch.nn.Linear(2, 1)
    kw = {"batch_size": 3, "iterations": 1, "optimizer": lambda ps: torch.optim.SGD(ps, lr=0.1)}
    with pytest.raises(ValueError, match="without the targets"):
        train(code, model, None, torch.zeros(6, 2), **kw)
    with pytest.raises(ValueError, match="map-style"):
        train(code, model, None, 5, **kw)
    with pytest.raises(ValueError, match="scheduler_step"):
        train(code, model, None, torch.zeros(6, 2), torch.zeros(6), scheduler_step="batch", **kw)
    with pytest.raises(gc.GradcodesValueError, match="autocast must be None, torch.float16 or torch.bfloat16"):
        train(code, model, None, torch.zeros(6, 2), torch.zeros(6), autocast=torch.float32, **kw)
    with pytest.raises(gc.GradcodesTypeError, match="grad_scaler must be a callable"):
        train(code, model, None, torch.zeros(6, 2), torch.zeros(6), grad_scaler=object(), **kw)
    with pytest.raises(gc.GradcodesValueError, match="grad_scaler needs float32 or float64 parameters"):
        train(code, torch.nn.Linear(2, 1).half(), None, torch.zeros(6, 2), torch.zeros(6),
              grad_scaler=lambda: torch.amp.GradScaler("cpu"), **kw)
    adv = gc.adversarial_gc(np.ones((3, 3), dtype=np.int64), 0, 1)
    with pytest.raises(gc.GradcodesValueError, match="not supported with an adversarial_gc code"):
        train(adv, model, None, torch.zeros(6, 2), torch.zeros(6), grad_scaler=lambda: None, **kw)


def test_staged_flat_params_move_a_whole_vector_in_one_copy_through_one_device_vector(monkeypatch):
    """CUDA parameters over Gloo: messages live in host buffers and FlatParams gathers into (or scatters from) one
    vector on the parameters' device, allocated once, with one copy per message (here forced on the CPU)."""
    import gradcodes.torch._params as params_module
    from gradcodes.torch._params import FlatParams

    monkeypatch.setattr(params_module, "FORCE_STAGING", True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)).double()
    flat = FlatParams(list(model.parameters()))
    assert flat.stage and params_module.wire_device(flat.device, True) == torch.device("cpu")
    assert not params_module.pin("cpu")
    want = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    out = torch.zeros(flat.size, dtype=torch.float64)
    flat.read(out)
    scratch = flat._scratch
    assert torch.equal(out, want) and scratch is not None and scratch.data_ptr() != out.data_ptr()
    flat.write(out * 2)
    assert torch.equal(torch.cat([p.detach().reshape(-1) for p in model.parameters()]), 2 * want)
    model(torch.ones(5, 3, dtype=torch.float64)).sum().backward()
    flat.read_grads(out)
    assert torch.equal(out, torch.cat([p.grad.reshape(-1) for p in model.parameters()]))
    assert flat._scratch is scratch                                # allocated once
    monkeypatch.setattr(params_module, "FORCE_STAGING", False)
    assert not FlatParams(list(model.parameters())).stage         # CPU parameters: messages in place
