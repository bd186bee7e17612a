"""torchrun job for tests/test_torch_ddp_eval.py: ``ddp_train`` on ranks 1-2 with rank 2 late by LATE seconds every
step and an evaluation on rank 1 that takes EVAL seconds; rank 1 prints its recorded step times."""

from __future__ import annotations

import json
import time

import torch
import torch.distributed as dist

from gradcodes.torch import FixedDelay, ddp_train

LATE, EVAL = 0.4, 0.4


def main() -> None:
    dist.init_process_group("gloo")
    group = dist.new_group([1, 2])
    torch.manual_seed(0)
    X, y = torch.randn(40, 4, dtype=torch.float64), torch.randint(0, 2, (40,))
    model = torch.nn.Linear(4, 2).double()

    def evaluate(m: torch.nn.Module) -> float:
        time.sleep(EVAL)
        return 0.5

    res = ddp_train(model, torch.nn.CrossEntropyLoss(reduction="none"), X, y, workers=2, batch_size=8,
                    iterations=4, optimizer=lambda ps: torch.optim.SGD(ps, lr=0.1), group=group,
                    delay=FixedDelay(LATE, workers=[1]), evaluate=evaluate)
    if res is not None:
        print("TIMES " + json.dumps(res.times), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
