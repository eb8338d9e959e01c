"""The checks of torch_dist.py: collectives, point-to-point, groups, CUDA graphs, the memory pool and
symmetric memory through torch.distributed, each with a known answer (see torch_dist.py)."""
import torch
import torch.distributed as dist


R = dist.ReduceOp
DTYPES = [
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
    torch.int32, torch.int64, torch.bool, torch.uint16, torch.uint32, torch.uint64,
    torch.float8_e4m3fn, torch.float8_e5m2,
]

class Checker:
    def __init__(self, rank, world, device):
        self.rank, self.world, self.device = rank, world, device
        self.failures, self.refused, self.passed = [], [], 0

    def run(self, name, fn):
        """Runs one check. PyTorch's own refusals are recorded; anything else failing is a failure."""
        try:
            ok = fn()
        except Exception as e:  # noqa: BLE001 -- every error is either a refusal or a failure
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            if refused_by_pytorch(e):
                self.refused.append(name)
                return
            self.failures.append(f"{name}: {type(e).__name__}: {msg}")
            return
        if ok is True:
            self.passed += 1
        else:
            self.failures.append(f"{name}: {ok}")


def refused_by_pytorch(e):
    """True for errors PyTorch raises before calling NCCL (unsupported dtype or op)."""
    text = str(e)
    if isinstance(e, dist.DistBackendError) or "NCCL error" in text:
        return False  # the library answered: never a refusal
    markers = ("not supported", "Unsupported", "unsupported", "Unconvertible", "Cannot use ReduceOp", "must be",
               "expected scalar type")
    return isinstance(e, (RuntimeError, ValueError, TypeError)) and any(m in text for m in markers)


def values(dtype, shape, seed):
    """Random small integers, exact in dtype together with their reductions over <= 4 ranks."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        v = torch.randint(0, 2, shape, generator=g)
    elif dtype == torch.float8_e5m2:
        v = torch.randint(0, 2, shape, generator=g)  # 2 mantissa bits: sums up to 4, quarters
    elif dtype == torch.float8_e4m3fn:
        v = torch.randint(0, 3, shape, generator=g)
    elif dtype in (torch.uint8, torch.uint16, torch.uint32, torch.uint64):
        v = torch.randint(0, 4, shape, generator=g)
    else:
        v = torch.randint(-3, 4, shape, generator=g)
    return v.to(torch.float64)


def to_dtype(v64, dtype):
    if dtype == torch.bool:
        return v64 != 0
    return v64.to(dtype)


def poison(numel, dtype, device):
    """An output filled with a value no check can produce (99; True for bool)."""
    return to_dtype(torch.full((numel,), 99.0, dtype=torch.float64), dtype).to(device)


def same_bits(got, want):
    """Bitwise equality (after moving to the CPU), with a short description of the first mismatch."""
    got = got.detach().cpu()
    want = want.detach().cpu()
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"dtype/shape {got.dtype}{tuple(got.shape)} != {want.dtype}{tuple(want.shape)}"
    if got.numel() == 0:
        return True
    size = got.element_size()
    as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[size]
    g, w = got.contiguous().view(as_int), want.contiguous().view(as_int)
    bad = (g != w).nonzero()
    if bad.numel() == 0:
        return True
    i = bad[0].tolist()
    return (f"{bad.shape[0]} of {got.numel()} elements differ; first at {i}: "
            f"got {got[tuple(i)].item()} want {want[tuple(i)].item()}")


def reduce_ref(stack, op, dtype, world):
    """The expected reduction of the ranks' float64 values (stack: world x ...) as dtype."""
    if dtype == torch.bool:
        # PyTorch reduces bools as bytes: SUM and MAX are OR, PRODUCT and MIN are AND.
        anyv, allv = stack.amax(0) != 0, stack.amin(0) != 0
        return {R.SUM: anyv, R.MAX: anyv, R.PRODUCT: allv, R.MIN: allv}[op]
    integer = not dtype.is_floating_point
    if op == R.SUM:
        r = stack.sum(0)
    elif op == R.PRODUCT:
        r = stack.prod(0)
    elif op == R.MAX:
        r = stack.amax(0)
    elif op == R.MIN:
        r = stack.amin(0)
    elif op == R.AVG:
        r = stack.sum(0) / world
        if integer:
            r = torch.trunc(r)  # NCCL's integer average truncates
    elif op == "premul":
        r = (stack * 0.5).sum(0)
    else:
        raise AssertionError(op)
    return to_dtype(r, dtype)


def make_op(op, dtype, device):
    """PreMulSum comes as a host scalar (ncclScalarHostImmediate) or a device tensor of the data's
    type (ncclScalarDevice)."""
    if op == "premul":
        return dist._make_nccl_premul_sum(0.5)
    if op == "premul_tensor":
        return dist._make_nccl_premul_sum(to_dtype(torch.tensor([0.5], dtype=torch.float64), dtype).to(device))
    return op


def all_ranks(dtype, shape, seed, world):
    return torch.stack([values(dtype, shape, seed * 100 + r) for r in range(world)])


def check_collectives(c):
    rank, world, dev = c.rank, c.world, c.device
    n = 1000 + 3  # odd, not a multiple of the world size
    ops = [R.SUM, R.PRODUCT, R.MAX, R.MIN, R.AVG, "premul", "premul_tensor"]
    for di, dtype in enumerate(DTYPES):
        dname = str(dtype).replace("torch.", "")
        for oi, op in enumerate(ops):
            if dtype == torch.bfloat16 and op in ("premul", "premul_tensor"):
                # PyTorch 2.11 hands NCCL a float32 host scalar for bfloat16, which the library reads
                # as a bfloat16 (its low half, 0 for 0.5), and refuses a bfloat16 device scalar.
                continue
            oname = op if isinstance(op, str) else str(op).split(".")[-1]
            seed = 1 + di * 10 + oi

            def allreduce(dtype=dtype, op=op, seed=seed):
                stack = all_ranks(dtype, (n,), seed, world)
                t = to_dtype(stack[rank], dtype).to(dev)
                dist.all_reduce(t, op=make_op(op, dtype, dev))
                ref_op = "premul" if op == "premul_tensor" else op
                return same_bits(t, reduce_ref(stack, ref_op, dtype, world))
            c.run(f"all_reduce {dname} {oname}", allreduce)

            def reduce_scatter(dtype=dtype, op=op, seed=seed):
                stack = all_ranks(dtype, (world * 257,), seed + 5000, world)
                out = poison(257, dtype, dev)
                dist.reduce_scatter_tensor(out, to_dtype(stack[rank], dtype).to(dev), op=make_op(op, dtype, dev))
                ref_op = "premul" if op == "premul_tensor" else op
                want = reduce_ref(stack, ref_op, dtype, world)[rank * 257:(rank + 1) * 257]
                return same_bits(out, want)
            c.run(f"reduce_scatter_tensor {dname} {oname}", reduce_scatter)

        for root in range(world):
            def reduce(dtype=dtype, root=root, seed=di * 10 + root):
                stack = all_ranks(dtype, (n,), seed + 7000, world)
                t = to_dtype(stack[rank], dtype).to(dev)
                dist.reduce(t, dst=root, op=R.MAX)
                if rank != root:
                    return True
                return same_bits(t, reduce_ref(stack, R.MAX, dtype, world))
            c.run(f"reduce {dname} max root {root}", reduce)

            def broadcast(dtype=dtype, root=root, seed=di * 10 + root):
                stack = all_ranks(dtype, (n,), seed + 8000, world)
                t = to_dtype(stack[rank], dtype).to(dev)
                dist.broadcast(t, src=root)
                return same_bits(t, to_dtype(stack[root], dtype))
            c.run(f"broadcast {dname} root {root}", broadcast)

        def all_gather(dtype=dtype, seed=di):
            stack = all_ranks(dtype, (n,), seed + 9000, world)
            out = poison(world * n, dtype, dev)
            dist.all_gather_into_tensor(out, to_dtype(stack[rank], dtype).to(dev))
            return same_bits(out, to_dtype(stack.reshape(-1), dtype))
        c.run(f"all_gather_into_tensor {dname}", all_gather)

        def all_to_all(dtype=dtype, seed=di):
            # Unequal splits: rank r sends (r + d + 1) * 3 elements to rank d.
            send_counts = [(rank + d + 1) * 3 for d in range(world)]
            recv_counts = [(s + rank + 1) * 3 for s in range(world)]
            mine = to_dtype(values(dtype, (sum(send_counts),), seed * 100 + rank + 11000), dtype)
            out = poison(sum(recv_counts), dtype, dev)
            dist.all_to_all_single(out, mine.to(dev), recv_counts, send_counts)
            want = []
            for s in range(world):
                theirs = to_dtype(values(dtype, (sum((s + d + 1) * 3 for d in range(world)),),
                                         seed * 100 + s + 11000), dtype)
                off = sum((s + d + 1) * 3 for d in range(rank))
                want.append(theirs[off:off + recv_counts[s]])
            return same_bits(out, torch.cat(want))
        c.run(f"all_to_all_single unequal {dname}", all_to_all)

    def all_to_all_equal():
        stack = all_ranks(torch.float32, (world * 513,), 12000, world)
        out = poison(world * 513, torch.float32, dev)
        dist.all_to_all_single(out, stack[rank].float().to(dev))
        want = torch.cat([stack[s].float()[rank * 513:(rank + 1) * 513] for s in range(world)])
        return same_bits(out, want)
    c.run("all_to_all_single equal float32", all_to_all_equal)


def check_p2p(c):
    rank, world, dev = c.rank, c.world, c.device
    nxt, prv = (rank + 1) % world, (rank - 1) % world

    def send_recv():
        mine = values(torch.float32, (4099,), 13000 + rank).float()
        got = poison(4099, torch.float32, dev)
        if rank % 2 == 0:
            dist.send(mine.to(dev), dst=nxt)
            dist.recv(got, src=prv)
        else:
            dist.recv(got, src=prv)
            dist.send(mine.to(dev), dst=nxt)
        return same_bits(got, values(torch.float32, (4099,), 13000 + prv).float())
    c.run("send/recv ring", send_recv)

    def batch():
        # Both neighbours, different sizes and dtypes per direction.
        to_next = values(torch.int64, (1000 + rank,), 14000 + rank).long()
        to_prev = values(torch.bfloat16, (77 * (rank + 1),), 15000 + rank).bfloat16()
        from_prev = poison(1000 + prv, torch.int64, dev)
        from_next = poison(77 * (nxt + 1), torch.bfloat16, dev)
        reqs = dist.batch_isend_irecv([
            dist.P2POp(dist.isend, to_next.to(dev), nxt),
            dist.P2POp(dist.isend, to_prev.to(dev), prv),
            dist.P2POp(dist.irecv, from_prev, prv),
            dist.P2POp(dist.irecv, from_next, nxt),
        ])
        for r in reqs:
            r.wait()
        a = same_bits(from_prev, values(torch.int64, (1000 + prv,), 14000 + prv).long())
        b = same_bits(from_next, values(torch.bfloat16, (77 * (nxt + 1),), 15000 + nxt).bfloat16())
        return a if a is not True else b
    c.run("batch_isend_irecv both neighbours", batch)

    def barrier():
        dist.barrier()
        return True
    c.run("barrier", barrier)


def check_mem_pool(c):
    """PyTorch's NCCL memory pool: tensors allocated by ncclMemAlloc, registered with
    ncclCommRegister (so the library may use them zero-copy), then deregistered and freed."""
    rank, world, dev = c.rank, c.world, c.device
    backend = dist.distributed_c10d._get_default_group()._get_backend(dev)
    try:
        allocator = backend.mem_allocator
    except (AttributeError, RuntimeError):  # RuntimeError: PyTorch turned it off for this NCCL
        allocator = None
    if allocator is None or not hasattr(torch.cuda, "MemPool"):
        c.refused.append("NCCL memory pool (not in this PyTorch)")
        return

    def pool():
        mem_pool = torch.cuda.MemPool(allocator)
        n = 1 << 20
        with torch.cuda.use_mem_pool(mem_pool):
            x = torch.empty(n, device=dev)
            y = torch.empty(world * n, device=dev)
        backend.register_mem_pool(mem_pool)
        try:
            stack = all_ranks(torch.float32, (n,), 19000, world)
            x.copy_(stack[rank].float())
            y.fill_(99)
            dist.all_gather_into_tensor(y, x)
            ok = same_bits(y, stack.reshape(-1).float())
            dist.all_reduce(x)
            return ok if ok is not True else same_bits(x, stack.sum(0).float())
        finally:
            torch.cuda.synchronize()
            backend.deregister_mem_pool(mem_pool)
            del x, y
    c.run("NCCL memory pool (ncclMemAlloc + ncclCommRegister)", pool)


def check_symmetric_memory(c):
    """PyTorch's symmetric memory on the NCCL backend: symm_mem.empty allocates with ncclMemAlloc,
    rendezvous registers the buffer as a window (ncclCommWindowRegister) and makes the group's device
    communicator (ncclDevCommCreate with LSA and rail GIN barriers); a collective then runs on it."""
    try:
        import torch.distributed._symmetric_memory as symm_mem
        symm_mem.set_backend("NCCL")
    except Exception as e:  # noqa: BLE001 -- an older PyTorch has no NCCL backend
        c.refused.append(f"symmetric memory, NCCL backend (not in this PyTorch: {type(e).__name__})")
        return
    rank, world, dev = c.rank, c.world, c.device

    def rendezvous():
        n = 1 << 16
        t = symm_mem.empty(n, dtype=torch.float32, device=dev)
        stack = all_ranks(torch.float32, (n,), 23000, world)
        t.copy_(stack[rank].float())
        hdl = symm_mem.rendezvous(t, dist.group.WORLD.group_name)
        if (hdl.rank, hdl.world_size) != (rank, world):
            return f"the handle says rank {hdl.rank} of {hdl.world_size}"
        if len(hdl.buffer_ptrs) != world or 0 in hdl.buffer_ptrs:
            return f"buffer pointers {[hex(p) for p in hdl.buffer_ptrs]} for {world} ranks"
        dist.all_reduce(t)
        return same_bits(t, stack.sum(0).float())
    c.run("symmetric memory, NCCL backend (rendezvous: window and device communicator)", rendezvous)


def check_gather_scatter(c):
    rank, world, dev = c.rank, c.world, c.device
    for root in range(world):
        def gather(root=root):
            stack = all_ranks(torch.int32, (321,), 20000 + root, world)
            outs = [poison(321, torch.int32, dev) for _ in range(world)] if rank == root else None
            dist.gather(stack[rank].int().to(dev), outs, dst=root)
            return True if rank != root else same_bits(torch.cat(outs), stack.reshape(-1).int())
        c.run(f"gather root {root}", gather)

        def scatter(root=root):
            stack = all_ranks(torch.float16, (123,), 21000 + root, world)
            ins = [stack[r].half().to(dev) for r in range(world)] if rank == root else None
            out = poison(123, torch.float16, dev)
            dist.scatter(out, ins, src=root)
            return same_bits(out, stack[rank].half())
        c.run(f"scatter root {root}", scatter)

    def all_gather_list():
        stack = all_ranks(torch.float64, (77,), 22000, world)
        outs = [poison(77, torch.float64, dev) for _ in range(world)]
        dist.all_gather(outs, stack[rank].to(dev))
        return same_bits(torch.cat(outs), stack.reshape(-1))
    c.run("all_gather (list)", all_gather_list)


def check_groups(c):
    rank, world, dev = c.rank, c.world, c.device
    if world < 2:
        c.refused.append("subgroups (one rank has no two halves)")
        return
    half = world // 2
    lo, hi = list(range(half)), list(range(half, world))
    # new_group: every rank creates every group, in the same order.
    g_lo, g_hi = dist.new_group(lo), dist.new_group(hi)
    mine_group, members = (g_lo, lo) if rank < half else (g_hi, hi)

    def sub_allreduce(group=mine_group, members=members, label="new_group"):
        stack = all_ranks(torch.int32, (333,), 16000, world)
        t = stack[rank].int().to(dev)
        dist.all_reduce(t, group=group)
        return same_bits(t, stack[members].sum(0).int())
    c.run("new_group all_reduce", sub_allreduce)

    def split():
        split_group = getattr(dist, "split_group", None) or dist.distributed_c10d.split_group
        sub = split_group(split_ranks=[lo, hi])
        stack = all_ranks(torch.float32, (555,), 17000, world)
        t = stack[rank].float().to(dev)
        dist.all_reduce(t, group=sub)
        ok = same_bits(t, stack[members].sum(0).float())
        # A collective on the parent after the split still works.
        u = stack[rank].float().to(dev)
        dist.all_reduce(u)
        return ok if ok is not True else same_bits(u, stack.sum(0).float())
    c.run("split_group all_reduce", split)


def check_cuda_graph(c):
    rank, world, dev = c.rank, c.world, c.device
    n = 8192

    def graph():
        x = torch.zeros(n, device=dev)
        y = poison(world * n, torch.float32, dev)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm up outside the capture, as PyTorch's docs ask
            dist.all_reduce(x)
            dist.all_gather_into_tensor(y, x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            dist.all_reduce(x)
            dist.all_gather_into_tensor(y, x)
        for step in range(20):
            stack = all_ranks(torch.float32, (n,), 18000 + step, world)
            x.copy_(stack[rank].float().to(dev))
            g.replay()
            torch.cuda.synchronize()
            total = stack.sum(0).float()
            ok = same_bits(x, total)
            if ok is True:
                ok = same_bits(y, total.repeat(world))
            if ok is not True:
                return f"replay {step}: {ok}"
        return True
    c.run("cuda graph all_reduce + all_gather, 20 replays", graph)
