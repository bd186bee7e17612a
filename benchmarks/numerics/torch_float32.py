"""float32 exactness of gradcodes.torch: the decoded gradient against the single-process full-batch gradient.

    python benchmarks/numerics/torch_float32.py          # table -> benchmarks/numerics/results/torch_float32.txt
    python benchmarks/numerics/torch_float32.py --smoke  # a linear model, one batch, no files; skipped without torch

One process, no torch.distributed: for each code, every worker's message is computed as a worker of
:func:`gradcodes.torch.train` computes it (:class:`gradcodes.torch.CodedGradient`), every responder set of size
``n - s`` is decoded as a parent of the runtime decodes (``gradcodes.torch._children.Children.combine``), and the
worst relative error ``||g - g_ref|| / ||g_ref||`` over the sets and over ``BATCHES`` global batches (the CNN on
the digits, float32, parameters perturbed between batches) is reported for

* **before**: the message as the gradient of the weighted loss in one float32 backward pass (``encoding="loss"``;
  ``encode_worker`` in float32 for ``m > 1``) and the decode with float32 coefficients accumulated in float32;
* **after**: the runtime's defaults (``encoding="auto"``: one backward pass per partition combined in float64 and
  rounded once when ``B`` has coefficients other than 0 and 1; the decode accumulated in float64 and rounded once);
* **message rounding only**: float64 messages rounded once to float32 and decoded in float64, the floor that
  float32 messages on the wire impose;
* the single-process float32 gradient's own error against float64.
"""

from __future__ import annotations

import itertools
import os
import queue
import sys

import numpy as np

BATCHES, BATCH = 5, 120
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "torch_float32.txt")


def main(smoke: bool) -> None:
    try:
        import torch
    except ImportError:
        print("smoke: torch not installed (pip install 'gradcodes[torch]'): skipped")
        return
    import gradcodes as gc
    from gradcodes._simulate._policies import as_policy
    from gradcodes.torch import CodedGradient, CodedSampler
    from gradcodes.torch._children import Children
    from gradcodes.torch._job import digits, make_model

    torch.set_num_threads(1)
    X, y, _, _ = digits(torch.float32)
    X64 = X.double()
    loss_fn = torch.nn.CrossEntropyLoss(reduction="none")
    codes = [("cyclic_repetition(3, 1)", gc.cyclic_repetition(3, 1, rng=0)),
             ("cyclic_repetition(4, 2)", gc.cyclic_repetition(4, 2, rng=0)),
             ("fractional_repetition(3, 2)", gc.fractional_repetition(3, 2)),
             ("ye_abbe(3, 1, m=2)", gc.ye_abbe(3, 1, 2))]
    batches, kind = (1, "linear") if smoke else (BATCHES, "cnn")
    if smoke:
        codes = codes[:1]

    def flat_grad(model):
        return torch.cat([p.grad.reshape(-1) for p in model.parameters()])

    def rel(g, ref):
        return float((g.double() - ref.double()).norm() / ref.double().norm())

    lines = [f"digits {kind}, float32, global batch {BATCH}, {batches} batches, every responder set of size n - s; "
             "worst ||g - g_ref|| / ||g_ref|| against the single-process float32 gradient",
             f"{'code':30s} {'before':>9s} {'after':>9s} {'rounding':>9s} {'f32 ref vs f64':>15s} "
             f"{'after/before':>13s}"]
    for name, code in codes:
        model = make_model(kind, seed=0, dtype=torch.float32)
        model64 = make_model(kind, seed=0, dtype=torch.float64)
        P = sum(p.numel() for p in model.parameters())
        q = -(-P // code.m)
        kids = Children(None, code, list(range(1, code.n + 1)), q, torch.float32, "cpu", queue.Queue(), 0,
                        as_policy(None, code))
        before = [CodedGradient(model, loss_fn, code, w, CodedSampler(len(X), code, w, batch_size=BATCH),
                                encoding="loss" if code.m == 1 else "partitions") for w in range(code.n)]
        after = [CodedGradient(model, loss_fn, code, w, CodedSampler(len(X), code, w, batch_size=BATCH))
                 for w in range(code.n)]
        exact = [CodedGradient(model64, loss_fn, code, w, CodedSampler(len(X), code, w, batch_size=BATCH))
                 for w in range(code.n)]
        worst = np.zeros(4)
        gen = torch.Generator().manual_seed(0)
        for t in range(batches):
            with torch.no_grad():
                for p, p64 in zip(model.parameters(), model64.parameters(), strict=True):
                    p.add_(0.05 * torch.randn(p.shape, generator=gen))
                    p64.copy_(p)
            ref = CodedSampler(len(X), code, None, batch_size=BATCH)
            idx = ref.global_batch(t)
            model.zero_grad()
            loss_fn(model(X[idx]), y[idx]).mean().backward()
            gref = flat_grad(model).clone()
            model64.zero_grad()
            loss_fn(model64(X64[idx]), y[idx]).mean().backward()
            worst[3] = max(worst[3], rel(gref, flat_grad(model64)))
            Mb, Ma, Me = torch.zeros(code.n, q), torch.zeros(code.n, q), torch.zeros(code.n, q, dtype=torch.float64)
            for w in range(code.n):
                sm = CodedSampler(len(X), code, w, batch_size=BATCH)
                wi = sm.global_batch(t)[sm._offsets]
                if code.m == 1:
                    before[w](X[wi], y[wi], Mb[w])
                else:                                   # the earlier m > 1 path: encode_worker in float32
                    rows = torch.zeros(len(sm.partitions), P)
                    b = sm.per_partition
                    for r in range(len(sm.partitions)):
                        model.zero_grad()
                        (loss_fn(model(X[wi][r * b:(r + 1) * b]), y[wi][r * b:(r + 1) * b]).sum() / BATCH).backward()
                        rows[r] = flat_grad(model)
                    code.encode_worker(w, rows, out=Mb[w])
                after[w](X[wi], y[wi], Ma[w])
                exact[w](X64[wi], y[wi], Me[w])
            for F in itertools.combinations(range(code.n), code.n - code.s):
                F = list(F)
                plan32 = kids.combiner.plan(F, np.float32)
                g = torch.zeros(code.m * q)
                for u, (ix, cs) in enumerate(plan32):           # before: float32 coefficients and sums
                    for i, a in zip(ix, cs, strict=True):
                        g[u * q:(u + 1) * q].add_(Mb[i], alpha=a)
                worst[0] = max(worst[0], rel(g[:P], gref))
                for M, col in ((Ma, 1), (Me.float(), 2)):       # after, and float64 messages rounded once
                    kids.payload[:] = M
                    kids.combine(F, g, accumulate=False)
                    worst[col] = max(worst[col], rel(g[:P], gref))
        lines.append(f"{name:30s} {worst[0]:9.2e} {worst[1]:9.2e} {worst[2]:9.2e} {worst[3]:15.2e} "
                     f"{worst[1] / max(worst[0], 1e-300):12.2f}x")
    text = "\n".join(lines)
    print(text)
    if not smoke:
        with open(OUT, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main("--smoke" in sys.argv)
