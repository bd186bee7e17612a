"""The noise of single-process mixed-precision training's accuracy: the spread that tests/test_torch_amp.py allows
between gradcodes.torch.train with autocast and GradScaler and single-process AMP.

    python benchmarks/runtime/torch_amp_noise.py            # seeds 0-4, 100 steps
    python benchmarks/runtime/torch_amp_noise.py --smoke    # one seed, 5 steps, writes nothing (the test suite)

One process: the digits CNN of ``gradcodes.torch._job`` (float32, seed 0), SGD (lr 0.1, momentum 0.9), global
batches of 120 in the data order of ``CodedSampler(seed)`` for seeds 0-4, float16 autocast with the default
``torch.amp.GradScaler("cpu")``, and the same without autocast; the test accuracy (297 images) after 100 steps.
Accuracies are deterministic (no timing): the spread over the seeds is the range of the five. Results:
``benchmarks/runtime/results/torch_amp_noise.txt``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")


def accuracy(seed: int, steps: int, amp: bool) -> float:
    import torch
    from torch import nn

    import gradcodes as gc
    from gradcodes.torch import CodedSampler
    from gradcodes.torch._job import digits, make_model

    X, y, Xt, yt = digits(torch.float32)
    model = make_model("cnn", seed=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu")
    sampler = CodedSampler(len(X), gc.cyclic_repetition(3, 1, rng=0), None, batch_size=120, seed=seed)
    for t in range(steps):
        sampler.set_epoch(t // len(sampler))
        idx = sampler.global_batch(t % len(sampler))
        opt.zero_grad()
        if amp:
            with torch.autocast("cpu", dtype=torch.float16):
                loss = nn.functional.cross_entropy(model(X[idx]), y[idx])
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            nn.functional.cross_entropy(model(X[idx]), y[idx]).backward()
            opt.step()
    with torch.no_grad():
        return float((model(Xt).argmax(1) == yt).double().mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="one seed, 5 steps, write nothing")
    args = ap.parse_args()
    import importlib.util

    missing = [m for m in ("torch", "sklearn") if importlib.util.find_spec(m) is None]
    if missing:                       # optional extras: skip with a message
        print(f"skipped: {', '.join(missing)} not installed (pip install 'gradcodes[torch]')")
        return
    seeds, steps = ([0], 5) if args.smoke else (range(5), 100)
    lines = [f"load average before: {os.getloadavg()[0]:.2f}",
             f"digits CNN, {steps} steps of 120 samples, test accuracy on 297 images, data orders of seeds "
             f"{list(seeds)}"]
    for amp in (True, False):
        accs = [accuracy(s, steps, amp) for s in seeds]
        label = "float16 autocast + GradScaler" if amp else "float32"
        lines.append(f"{label:>30}: " + " ".join(f"{a:.4f}" for a in accs)
                     + f"   range {max(accs) - min(accs):.4f} ({min(accs):.4f} to {max(accs):.4f})")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if not args.smoke:
        out = Path(__file__).resolve().parent / "results" / "torch_amp_noise.txt"
        out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
