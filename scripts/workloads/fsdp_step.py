"""An FSDP2 training step: LAYERS Linear(HIDDEN, HIDDEN) bf16 layers, each its own fully_shard unit,
TOKENS tokens per rank, forward, backward (AllGather of parameters, ReduceScatter of gradients) and
an SGD step. Prints the median step time over STEPS steps after WARMUP.

    torchrun --standalone --nproc-per-node 4 scripts/workloads/fsdp_step.py
"""
import os
import statistics

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

LAYERS = int(os.environ.get("LAYERS", 16))
HIDDEN = int(os.environ.get("HIDDEN", 4096))
TOKENS = int(os.environ.get("TOKENS", 2048))
STEPS = int(os.environ.get("STEPS", 20))
WARMUP = int(os.environ.get("WARMUP", 5))


def main():
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(HIDDEN, HIDDEN, bias=False) for _ in range(LAYERS)])
    model = model.to(device="cuda", dtype=torch.bfloat16)
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(rank)
    x = torch.randn(TOKENS, HIDDEN, device="cuda", dtype=torch.bfloat16, generator=gen)
    times = []
    for i in range(WARMUP + STEPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        end.record()
        end.synchronize()
        if i >= WARMUP:
            times.append(start.elapsed_time(end))
    t = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    finite = torch.tensor([1.0 if torch.isfinite(loss).item() else 0.0], device="cuda")
    dist.all_reduce(finite, op=dist.ReduceOp.MIN)
    if rank == 0:
        print(f"fsdp_step: {dist.get_world_size()} ranks, {LAYERS} x Linear({HIDDEN}) bf16, {TOKENS} tokens/rank: "
              f"median step {t.item():.2f} ms, loss {'finite' if finite.item() == 1 else 'NOT FINITE'}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
