#!/usr/bin/env python3
"""torch.distributed (ProcessGroupNCCL) on whichever libnccl.so.2 the process loaded.

One process per GPU, started by torchrun; tests/integration/run_torch_dist.sh runs it twice, on
NVIDIA's NCCL (the reference) and on Braid through LD_PRELOAD, and compares the two:

  torchrun --standalone --nproc-per-node 4 tests/integration/torch_dist.py --expect nvidia --out DIR
  LD_PRELOAD=$PWD/build/src/libnccl.so.2 torchrun --standalone --nproc-per-node 4 \
      tests/integration/torch_dist.py --expect braid --out DIR2 --ref DIR/result.json

Every check has a known answer. Inputs are random small integers, different on every rank, so that
every datatype holds them, and their sums, products, maxima and averages over 2 or 4 ranks, exactly:
outputs are compared bit for bit. A dtype/op pair that PyTorch itself refuses (it raises before
calling NCCL) is recorded as refused, not failed; the Braid run must refuse exactly the pairs the
NVIDIA run refused. DDP training is compared with the reference run's parameters: bit for bit on 2
ranks (a sum of two numbers does not depend on order), within a stated tolerance on more.
"""
import argparse
import json
import os
import statistics
import sys
import time

# Deterministic cuBLAS for the DDP comparison; must be set before CUDA initializes.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch_dist_checks import (  # noqa: E402
    Checker, check_collectives, check_cuda_graph, check_gather_scatter, check_groups, check_mem_pool, check_p2p,
    check_symmetric_memory)

# Relative tolerance of the DDP parameters against the reference run when the reduction order
# may differ (more than 2 ranks): a few float32 ulps after the training steps.
DDP_RTOL = 1e-5
DDP_ATOL = 1e-6


def make_model(device):
    torch.manual_seed(1234)
    return torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
        torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
        torch.nn.Linear(4096, 1024),
    ).to(device)


def run_ddp(c, steps, timing_steps):
    """Trains a 25M-parameter MLP; returns (flat parameters after `steps`, median step ms)."""
    rank, dev = c.rank, c.device
    torch.use_deterministic_algorithms(True)
    model = torch.nn.parallel.DistributedDataParallel(make_model(dev), device_ids=[dev.index])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator(device=dev).manual_seed(4321 + rank)

    def step():
        x = torch.randn(64, 1024, device=dev, generator=g)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu()
    times = []
    for i in range(timing_steps + 10):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        if i >= 10:
            times.append((time.perf_counter() - t0) * 1e3)
    torch.use_deterministic_algorithms(False)
    return params, statistics.median(times)


def mapped_file(address):
    """The file mapped at address in this process, from /proc/self/maps."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if lo <= address < hi and len(fields) >= 6:
                return os.path.realpath(fields[5])
    return None


def check_library(expect):
    """Which library serves PyTorch's NCCL calls: the one whose definitions the dynamic linker's
    global scope finds first, which is where libtorch_cuda's references bind. (PyTorch's wheel also
    maps its own libnccl.so.2 by path at import; under LD_PRELOAD that copy is loaded but unused.)"""
    import ctypes
    scope = ctypes.CDLL(None)
    served = {}
    for sym in ("ncclCommInitRankConfig", "ncclAllReduce", "ncclSend", "ncclCommSplit", "ncclMemAlloc"):
        try:
            served[sym] = mapped_file(ctypes.cast(getattr(scope, sym), ctypes.c_void_p).value)
        except AttributeError:  # not in the global scope: only a local dependency of libtorch_cuda
            served[sym] = None
    if None in served.values():
        with open("/proc/self/maps") as maps:
            mapped = {os.path.realpath(f.split()[5]) for f in maps
                      if len(f.split()) >= 6 and os.path.basename(f.split()[5]).startswith("libnccl")}
        if len(mapped) != 1:
            return sorted(mapped), f"NCCL is not in the global scope and several copies are mapped: {mapped}"
        served = {k: next(iter(mapped)) for k in served}
    files = sorted(set(served.values()))
    if len(files) != 1:
        return files, f"NCCL symbols come from several files: {served}"
    if expect == "braid":
        want = os.path.realpath(os.environ.get("BRAID_LIB", ""))
        if files[0] != want:
            return files, f"NCCL calls go to {files[0]}, not Braid's {want} (is LD_PRELOAD set?)"
    elif expect == "nvidia" and "nvidia/nccl" not in files[0]:
        return files, f"NCCL calls go to {files[0]}, not NVIDIA's wheel"
    return files, None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--expect", choices=["braid", "nvidia", "any"], default="any",
                    help="which library must have been loaded (braid: the realpath of $BRAID_LIB)")
    ap.add_argument("--out", required=True, help="directory for result.json and the DDP parameters")
    ap.add_argument("--ref", help="result.json of a reference run to compare with")
    ap.add_argument("--ddp-steps", type=int, default=5)
    ap.add_argument("--timing-steps", type=int, default=100)
    ap.add_argument("--timing-only", action="store_true",
                    help="skip the checks: only the library check and the DDP step time")
    args = ap.parse_args()

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    dev = torch.device("cuda", local)
    torch.cuda.set_device(dev)
    # device_id binds the process group to the GPU: eager communicator creation, which split_group
    # (ncclCommSplit) and graph capture rely on.
    dist.init_process_group("nccl", device_id=dev)
    c = Checker(rank, world, dev)

    paths, lib_error = check_library(args.expect)
    if lib_error:
        c.failures.append(f"library: {lib_error}")
    version = torch.cuda.nccl.version()

    t0 = time.perf_counter()
    sections = (check_collectives, check_gather_scatter, check_p2p, check_groups, check_cuda_graph, check_mem_pool,
                check_symmetric_memory)
    for section in () if args.timing_only else sections:
        section(c)
    checks_s = time.perf_counter() - t0
    params, step_ms = run_ddp(c, args.ddp_steps, args.timing_steps)

    # Gather every rank's findings on rank 0.
    report = {"rank": rank, "failures": c.failures, "refused": c.refused, "passed": c.passed,
              "step_ms": step_ms}
    reports = [None] * world
    dist.all_gather_object(reports, report)
    dist.barrier()
    dist.destroy_process_group()
    if rank != 0:
        return 0

    os.makedirs(args.out, exist_ok=True)
    params_path = os.path.join(args.out, "ddp_params.pt")
    torch.save(params, params_path)
    failures = [f"rank {r['rank']}: {f}" for r in reports for f in r["failures"]]
    refused = sorted(set(reports[0]["refused"]))
    step_ms = statistics.median(r["step_ms"] for r in reports)
    result = {"library": paths, "nccl_version": list(version) if isinstance(version, tuple) else version,
              "world": world, "passed": sum(r["passed"] for r in reports), "failures": failures,
              "refused_by_pytorch": refused, "ddp_step_ms_median": step_ms, "ddp_params": params_path,
              "checks_s": round(checks_s, 1)}
    print(f"library: NCCL calls served by {paths} (NCCL version {version}); {world} ranks")
    print(f"checks: {result['passed']} passed on all ranks, {len(failures)} failed, "
          f"{len(refused)} refused by PyTorch ({checks_s:.1f} s)")

    if args.ref and not args.timing_only:
        with open(args.ref) as f:
            ref = json.load(f)
        if sorted(ref["refused_by_pytorch"]) != refused:
            only_ref = sorted(set(ref["refused_by_pytorch"]) - set(refused))
            only_here = sorted(set(refused) - set(ref["refused_by_pytorch"]))
            failures.append(f"refusals differ from the reference: only there {only_ref}, only here {only_here}")
        ref_params = torch.load(ref["ddp_params"])
        identical = torch.equal(params.view(torch.int32), ref_params.view(torch.int32))
        max_diff = (params - ref_params).abs().max().item()
        close = torch.allclose(params, ref_params, rtol=DDP_RTOL, atol=DDP_ATOL)
        print(f"ddp parameters after {args.ddp_steps} steps vs reference: "
              f"{'bit-identical' if identical else 'differ'}, max |diff| {max_diff:.3g}")
        if world == 2 and not identical:
            failures.append(f"ddp parameters differ from the reference on 2 ranks (max |diff| {max_diff:.3g})")
        elif not close:
            failures.append(f"ddp parameters outside rtol {DDP_RTOL} atol {DDP_ATOL} (max |diff| {max_diff:.3g})")
        ratio = step_ms / ref["ddp_step_ms_median"]
        result["ddp_step_ratio"] = ratio
        print(f"ddp step (median of {args.timing_steps}): {step_ms:.3f} ms here, "
              f"{ref['ddp_step_ms_median']:.3f} ms reference, ratio {ratio:.3f}")
    else:
        print(f"ddp step (median of {args.timing_steps}): {step_ms:.3f} ms")
    print(f"refused by PyTorch: {', '.join(refused) if refused else 'none'}")
    result["failures"] = failures
    with open(os.path.join(args.out, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    for f in failures:
        print("FAIL", f)
    print("PASS" if not failures else f"FAILED ({len(failures)})")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
