# CPU time a process spends while its communicator across emulated hosts is idle (the target:
# the proxy under 5% of one core per process). Each rank is its own host (NCCL_HOSTID), so its
# connections go through the proxy and the socket network; a 64 MiB AllReduce starts the socket
# helper threads first. process_time() counts every thread of the process, PyTorch's own watchdog
# included, so run it on NVIDIA's NCCL too for the floor:
#
#   NCCL_SOCKET_IFNAME=lo NCCL_NET=Socket LD_PRELOAD=build-gpu/src/libnccl.so.2 \
#     python3 -m torch.distributed.run --standalone --nproc-per-node 2 scripts/idle_cpu.py [SECONDS]
import os
import sys
import time

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
# Ranks of different emulated hosts may share a GPU (NCCL refuses that only inside a host), so more
# processes than GPUs run too (4 on one GPU: 4 hosts of one).
local = int(os.environ["LOCAL_RANK"]) % torch.cuda.device_count()
idle_seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
os.environ["NCCL_HOSTID"] = f"idle-cpu-host-{rank}"  # before the library reads it
torch.cuda.set_device(local)
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
big = torch.ones(16 << 20, device="cuda")
for _ in range(5):
    dist.all_reduce(big)
small = torch.ones(2, device="cuda")
dist.all_reduce(small)
torch.cuda.synchronize()
expected = float(dist.get_world_size() ** 5)  # five in-place sums of ones
assert big[0].item() == expected and small[0].item() == dist.get_world_size(), "wrong AllReduce result"
time.sleep(0.5)  # past the proxy's polling after its last progress (BRAID_PROXY_SPIN_US)
cpu0, wall0 = time.process_time(), time.monotonic()
time.sleep(idle_seconds)
cpu1, wall1 = time.process_time(), time.monotonic()
print(f"rank {rank}: idle CPU {100.0 * (cpu1 - cpu0) / (wall1 - wall0):.2f}% of one core over {wall1 - wall0:.1f} s",
      flush=True)
dist.barrier()
dist.destroy_process_group()
