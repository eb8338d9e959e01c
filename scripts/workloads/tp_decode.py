"""A tensor-parallel decode step as an LLM server runs it: LAYERS layers, each a row-parallel
Linear(HIDDEN, HIDDEN) on TOKENS tokens followed by an AllReduce of its bf16 output (1 MiB at the
defaults), captured once in a CUDA graph and replayed (graph mode), or run eagerly. Prints the median
step time over STEPS replays; the result is compared with an eager run of the same step (bf16 sums may be ordered
differently by the two paths, so within 5%, not bit for bit).

    torchrun --standalone --nproc-per-node 4 scripts/workloads/tp_decode.py [graph|eager]
"""
import os
import statistics
import sys

import torch
import torch.distributed as dist

LAYERS = int(os.environ.get("LAYERS", 80))
TOKENS = int(os.environ.get("TOKENS", 128))
HIDDEN = int(os.environ.get("HIDDEN", 4096))
STEPS = int(os.environ.get("STEPS", 50))


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "graph"
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    world = dist.get_world_size()
    gen = torch.Generator(device="cuda").manual_seed(1234 + rank)
    weights = [torch.randn(HIDDEN, HIDDEN, device="cuda", dtype=torch.bfloat16, generator=gen) / HIDDEN**0.5
               for _ in range(LAYERS)]
    x0 = torch.randn(TOKENS, HIDDEN, device="cuda", dtype=torch.bfloat16, generator=gen)
    x = x0.clone()

    def step():
        h = x
        for w in weights:
            h = h @ w
            dist.all_reduce(h)
            h = h * (1.0 / world)
        return h

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            expected = step()  # warm-up; connections made before capture
    torch.cuda.current_stream().wait_stream(s)
    run = step
    if mode == "graph":
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = step()

        def run():
            graph.replay()
            return out

    got = run()
    torch.cuda.synchronize()
    ok = torch.allclose(got.float(), expected.float(), rtol=0.05, atol=0.05)
    times = []
    for _ in range(STEPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    t = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    flag = torch.tensor([0 if ok else 1], device="cuda")
    dist.all_reduce(flag)
    if rank == 0:
        print(f"tp_decode {mode}: {world} ranks, {LAYERS} layers, {TOKENS * HIDDEN * 2 >> 10} KiB AllReduce: "
              f"median step {t.item():.3f} ms, {'matches eager' if flag.item() == 0 else 'WRONG on ' + str(int(flag.item())) + ' ranks'}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
