"""PyTorch's own DistributedSampler, as the reference for triax's (tests/data/test_distributed_sampler.cpp).

Each argument is one case "n,replicas,rank,shuffle,seed,epoch,drop_last"; prints one line of
indices per case.
"""
import sys

import torch  # noqa: F401  (DistributedSampler shuffles with torch.randperm)
from torch.utils.data import DistributedSampler

for case in sys.argv[1:]:
    n, replicas, rank, shuffle, seed, epoch, drop_last = (int(x) for x in case.split(","))
    sampler = DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=bool(shuffle),
                                 seed=seed, drop_last=bool(drop_last))
    sampler.set_epoch(epoch)
    print(" ".join(str(i) for i in sampler))
