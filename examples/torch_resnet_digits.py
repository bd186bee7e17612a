"""Train a small ResNet with BatchNorm on scikit-learn's digits with gradient coding, under ``torchrun``.

    torchrun --standalone --nproc-per-node 4 examples/torch_resnet_digits.py --checkpoint run.pt
    # killed (Ctrl-C, SIGKILL, a lost node)? the same command continues from the last checkpoint

Rank 0 is the master, ranks 1..N the workers (N = nproc-per-node - 1). The master waits, every step, only for the
first workers whose messages decode to the gradient of the mean loss over the global batch: a cyclic repetition
code (Tandon et al. 2017, Section 3) tolerates ``--stragglers`` slow or dead workers. The rest is a PyTorch training
loop: a map-style ``Dataset`` read by a ``DataLoader`` on every worker, SGD with momentum, a cosine learning-rate
schedule, gradient clipping, an evaluation callback (with early stopping at ``--target``), and a checkpoint every
``--checkpoint-every`` steps (model, BatchNorm statistics, optimizer, scheduler, data position, random states).

The data: the 1797 8x8 images of ``sklearn.datasets.load_digits`` (shipped with scikit-learn, no download),
upsampled to 16x16 (bilinear), 1500 for training and 297 for testing (a fixed split). ``--quick`` trains 36 steps
(three epochs) for the test suite. At the end every rank holds the final model: the ranks' digests of their
``state_dict`` are gathered and the master prints whether they agree; rank 0 saves it with ``--save``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

import gradcodes as gc
from gradcodes.torch import Callback, train

QUICK_ITERATIONS = 36


def load_digits16(dtype: torch.dtype = torch.float32, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """``(X_train, y_train, X_test, y_test)``: the digits as (N, 1, 16, 16) tensors, 8x8 upsampled bilinearly,
    standardised with the training images' mean and standard deviation; 1500 training and 297 test images."""
    from sklearn.datasets import load_digits

    d = load_digits()
    X = torch.as_tensor(d.images / 16.0, dtype=torch.float64).unsqueeze(1)
    X = F.interpolate(X, size=(16, 16), mode="bilinear", align_corners=False)
    y = torch.as_tensor(d.target, dtype=torch.int64)
    perm = torch.as_tensor(np.random.default_rng(seed).permutation(len(y)))
    X, y = X[perm], y[perm]
    mean, std = X[:1500].mean(), X[:1500].std()
    X = ((X - mean) / std).to(dtype)
    return X[:1500], y[:1500], X[1500:], y[1500:]


class Digits16(torch.utils.data.Dataset):
    """A map-style dataset: ``dataset[i]`` is one ``(image, label)`` pair (any map-style dataset will do)."""

    def __init__(self, X: torch.Tensor, y: torch.Tensor) -> None:
        self.X, self.y = X, y

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.X[i], self.y[i]


class Block(nn.Module):
    """A residual block (He et al. 2016, Section 3): two 3x3 convolutions with BatchNorm, and a 1x1 projection of
    the shortcut when the shape changes."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    """A stem convolution, two residual blocks (16x16 then 8x8), average pooling to 2x2, a linear classifier."""

    def __init__(self, width: int = 16, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.blocks = nn.Sequential(Block(width, width), Block(width, 2 * width, stride=2))
        self.head = nn.Linear(2 * width * 4, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 2).flatten(1))


def make_model(seed: int = 0, dtype: torch.dtype = torch.float32) -> ResNet:
    """The model, initialised from ``seed``: the same initial weights on every rank."""
    torch.manual_seed(seed)
    return ResNet().to(dtype)


def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Test accuracy in evaluation mode (BatchNorm's running statistics); the model is left in training mode."""
    model.eval()
    with torch.no_grad():
        acc = float((model(X).argmax(1) == y).double().mean())
    model.train()
    return acc


class Evaluate(Callback):
    """On the master after every ``every`` steps (and the last): the test accuracy, printed and kept; stops the run
    once it reaches ``target`` (early stopping)."""

    def __init__(self, X: torch.Tensor, y: torch.Tensor, every: int, iterations: int,
                 target: float | None = None) -> None:
        self.X, self.y, self.every, self.iterations, self.target = X, y, every, iterations, target
        self.history: list[tuple[int, float]] = []

    def on_step_end(self, step: int, model: Any, result: Any) -> bool:
        done = step + 1
        if done % self.every and done != self.iterations:
            return False
        acc = accuracy(model, self.X, self.y)
        self.history.append((done, acc))
        print(f"step {done}: test accuracy {acc:.3f}, learning rate {result.lr[-1]:.4f}", flush=True)
        return self.target is not None and acc >= self.target


def digest(model: nn.Module) -> str:
    """A SHA-256 digest of the model's parameters and buffers (bitwise)."""
    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        h.update(name.encode())
        h.update(t.detach().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="torchrun --standalone --nproc-per-node N+1 examples/torch_resnet_digits.py",
                                description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stragglers", type=int, default=1, help="slow workers tolerated, s (default 1)")
    p.add_argument("--iterations", type=int, default=120, help="optimizer steps (default 120, ten epochs)")
    p.add_argument("--quick", action="store_true", help=f"{QUICK_ITERATIONS} steps (the test suite's run)")
    p.add_argument("--batch-size", type=int, default=120, help="global batch, a multiple of N (default 120)")
    p.add_argument("--lr", type=float, default=0.2, help="peak learning rate of SGD with momentum 0.9")
    p.add_argument("--clip", type=float, default=2.0, help="clip the gradient's norm to this (default 2)")
    p.add_argument("--checkpoint", help="checkpoint file on the master; an existing one is resumed from")
    p.add_argument("--checkpoint-every", type=int, default=6, help="steps between checkpoints (default 6)")
    p.add_argument("--eval-every", type=int, default=6, help="steps between evaluations (default 6)")
    p.add_argument("--target", type=float, help="stop once the test accuracy reaches this (early stopping)")
    p.add_argument("--loader-workers", type=int, default=0, help="DataLoader processes per worker (default 0)")
    p.add_argument("--policy", default="earliest", choices=["earliest", "all"],
                   help="wait for the earliest decodable set (default) or for every worker (deterministic runs)")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", help="rank 0 saves the final state_dict here")
    p.add_argument("--json", action="store_true", help="rank 0 also prints the run's record as RESULT {...}")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    iterations = QUICK_ITERATIONS if args.quick else args.iterations
    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size() - 1
    if n < 2:
        raise SystemExit("run under torchrun --standalone --nproc-per-node N+1 with N >= 2 workers")
    dtype = getattr(torch, args.dtype)
    X, y, X_test, y_test = load_digits16(dtype, seed=args.seed)
    model = make_model(args.seed, dtype)
    code = gc.cyclic_repetition(n, args.stragglers, rng=0)     # the same code on every rank (rng given)
    evaluation = Evaluate(X_test, y_test, args.eval_every, iterations, args.target)
    result = train(code, model, nn.CrossEntropyLoss(reduction="none"), Digits16(X, y),
                   batch_size=args.batch_size, iterations=iterations, seed=args.seed,
                   policy=None if args.policy == "earliest" else "all",
                   optimizer=lambda ps: torch.optim.SGD(ps, lr=args.lr, momentum=0.9, nesterov=True),
                   scheduler=lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=iterations),
                   clip_grad_norm=args.clip, callbacks=[evaluation],
                   checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every if args.checkpoint else None,
                   loader_kwargs={"num_workers": args.loader_workers})
    # every rank holds the master's final parameters and BatchNorm statistics
    digests: list[Any] = [None] * (n + 1)
    dist.all_gather_object(digests, digest(model))
    if rank == 0 and result is not None:
        acc = accuracy(model, X_test, y_test)
        steps = len(result.times)
        print(f"{steps} steps (this process ran {result.start}..{steps - 1}), test accuracy {acc:.3f}, "
              f"mean step {1e3 * result.mean_iteration:.1f} ms; final model {digests[0]} on every rank: "
              f"{len(set(digests)) == 1}", flush=True)
        if args.save:
            torch.save(model.state_dict(), args.save)
        if args.json:
            print("RESULT " + json.dumps({"accuracy": acc, "steps": steps, "start": result.start,
                                          "digests": digests, "lr": result.lr, "history": evaluation.history,
                                          "mean_iteration": result.mean_iteration}), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
