#!/usr/bin/env python3
"""PyTorch's torch.distributed, backend "nccl", running on Weft's libnccl.so.2.

Runs N ranks (default 2) as child processes that all share GPU cuda:0 (Weft allows several ranks
per GPU), each started with LD_PRELOAD=<Weft's library>, so the dynamic loader binds the NCCL calls
of torch's libtorch_cuda.so to Weft: the preloaded object has the SONAME libnccl.so.2 and satisfies
libtorch_cuda.so's DT_NEEDED entry. Each rank checks:

  swap          /proc/self/maps holds exactly one libnccl* file, and it is --lib. torch's
                __init__ may load nvidia/nccl/lib/libnccl.so.* by path, searching sys.path: each
                rank's PYTHONPATH starts with a folder whose nvidia/nccl/lib/libnccl.so.2 links to
                --lib, so that search finds Weft's library too; checked again as swap_at_end,
                after the training and destroy_process_group
  banner        (checked by the parent) the NCCL_DEBUG=INFO log of the rank (NCCL_DEBUG_FILE)
                holds Weft's banner and its "Init COMPLETE" lines: the calls reached Weft. Where
                they reached another NCCL, its own banner is quoted
  collectives   all_reduce (sum, max, avg, int64, bfloat16), reduce, all_gather (list and
                all_gather_into_tensor), broadcast from rank 1, reduce_scatter_tensor, gather,
                scatter, all_to_all_single (equal and unequal splits), send/recv in a ring through
                batch_isend_irecv, barrier, and new_group (ranks [0, 1], and the last rank alone,
                which torch builds with ncclCommSplit) with collectives on the new groups;
                sizes 7 and 1000003 elements, integer values, so every expected result is exact
                and computed on the host
  DDP           20 SGD steps of a small model under DistributedDataParallel, each rank training on
                its share of a fixed global batch; after every step the loss of the whole batch
                must match, within rtol 1e-4 / atol 1e-5, the losses of plain single-process SGD on
                the whole batch, which the parent computes itself without torch.distributed

Each rank prints "PASS name" or "FAIL name: detail" per check; the parent shows rank 0's report,
the failures of the other ranks, and exits 0 only when every rank passed everything, the swap was
proven on every rank and the losses matched.

The parent computes its reference while the ranks run. On SIGTERM (a `timeout` around it) it kills
the ranks before it ends: they run in process groups of their own, out of the signal's reach.

Usage:
  python3 tests/gpu/torch_client.py --lib build/lib/libnccl.so.2 [--ranks 2] [--timeout 180]
                                    [--log-dir DIR]
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import shutil
import tempfile
import time

CHILD_FLAG = "--child"
SIZES = (7, 1000003)
DDP_STEPS = 20
DDP_LR = 0.05
DDP_IN, DDP_HIDDEN = 32, 64
DDP_SAMPLES_PER_RANK = 32  # 64 samples in all with 2 ranks
LOSS_RTOL, LOSS_ATOL = 1e-4, 1e-5


# ------------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Checks torch.distributed (backend nccl) on Weft's libnccl.so.2.",
        epilog="Every rank uses GPU cuda:0. Exit status 0 when every check passed on every rank.",
    )
    parser.add_argument("--lib", required=True, help="path of Weft's libnccl.so.2")
    parser.add_argument("--ranks", type=int, default=2, help="number of ranks (default 2)")
    parser.add_argument(
        "--timeout", type=float, default=180.0, help="seconds for the whole multi-rank run (default 180)"
    )
    parser.add_argument("--log-dir", help="folder for each rank's output and NCCL log (default: a temporary one)")
    parser.add_argument(CHILD_FLAG, action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ranks < 1:
        parser.error("--ranks must be at least 1")
    return args


# ------------------------------------------------------------------------------------------------
# Values the checks use: every rank can compute every rank's input, so expected results are exact
# ------------------------------------------------------------------------------------------------


def contribution(torch, rank, count, dtype, salt=0, modulus=1009):
    """The input of `rank` for a check: small non-negative integers, different on every rank."""
    index = torch.arange(count, dtype=torch.int64)
    values = (index * (salt + 1) + 13 * rank + 7 * salt) % modulus
    return values.to(dtype)


def unequal_split(sender, receiver, count):
    """How many elements `sender` sends to `receiver` in the unequal all_to_all_single check."""
    return count * (1 + (sender + 2 * receiver) % 3) + sender + receiver + 1


# ------------------------------------------------------------------------------------------------
# Child: one rank
# ------------------------------------------------------------------------------------------------


class Report:
    """The results of one rank's checks, printed as they come."""

    def __init__(self, rank):
        self.rank = rank
        self.failures = []
        self.count = 0

    def passed(self, name):
        self.count += 1
        print("PASS %s" % name, flush=True)

    def failed(self, name, detail):
        self.count += 1
        self.failures.append(name)
        print("FAIL %s: %s" % (name, detail), flush=True)

    def skipped(self, name, why):
        print("SKIP %s: %s" % (name, why), flush=True)

    def run(self, name, check, *args):
        """Runs check(*args), which returns None when it passed or a string saying what is wrong."""
        try:
            detail = check(*args)
        except Exception as error:  # a check's failure must not hide the others
            detail = "%s: %s" % (type(error).__name__, error)
        if detail is None:
            self.passed(name)
        else:
            self.failed(name, detail)


def difference(torch, actual, expected, exact=True):
    """None when `actual` (any device) equals `expected` (host); otherwise a short description."""
    actual = actual.detach().to("cpu")
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return "got shape %s %s, expected %s %s" % (
            tuple(actual.shape), actual.dtype, tuple(expected.shape), expected.dtype)
    if exact:
        same = torch.eq(actual, expected)
    else:
        same = torch.isclose(actual.double(), expected.double(), rtol=1e-6, atol=1e-6)
    if bool(same.all()):
        return None
    wrong = (~same).nonzero().flatten()
    first = int(wrong[0])
    flat_actual, flat_expected = actual.flatten(), expected.flatten()
    return "%d of %d elements differ; first at %d: got %s, expected %s" % (
        wrong.numel(), expected.numel(), first, flat_actual[first].item(), flat_expected[first].item())


def list_difference(torch, actuals, expecteds):
    for i, (actual, expected) in enumerate(zip(actuals, expecteds)):
        detail = difference(torch, actual, expected)
        if detail is not None:
            return "entry %d: %s" % (i, detail)
    return None


class Collectives:
    """The collective checks of one rank. Each check_* returns None or what went wrong."""

    def __init__(self, torch, dist, rank, world, device):
        self.torch, self.dist = torch, dist
        self.rank, self.world, self.device = rank, world, device

    def mine(self, count, dtype, salt=0, modulus=1009):
        return contribution(self.torch, self.rank, count, dtype, salt, modulus).to(self.device)

    def everyone(self, count, dtype, salt=0, modulus=1009, ranks=None):
        ranks = range(self.world) if ranks is None else ranks
        return [contribution(self.torch, r, count, dtype, salt, modulus) for r in ranks]

    def finish(self):
        self.torch.cuda.synchronize(self.device)

    def check_all_reduce(self, count, dtype, op_name, salt, modulus=1009):
        torch, dist = self.torch, self.dist
        tensor = self.mine(count, dtype, salt, modulus)
        if dtype == torch.int64:
            tensor = tensor * (1 << 33)  # beyond 32 bits
        dist.all_reduce(tensor, op=getattr(dist.ReduceOp, op_name))
        self.finish()
        inputs = torch.stack(self.everyone(count, torch.int64, salt, modulus))
        if dtype == torch.int64:
            inputs = inputs * (1 << 33)
        if op_name == "SUM":
            expected = inputs.sum(dim=0)
        elif op_name == "MAX":
            expected = inputs.max(dim=0).values
        else:  # AVG: ncclAvg may scale before summing, so compare within a tolerance
            expected = inputs.double().sum(dim=0) / self.world
            return difference(torch, tensor.double(), expected, exact=False)
        return difference(torch, tensor, expected.to(dtype))

    def check_reduce(self, count):
        torch, dist = self.torch, self.dist
        tensor = self.mine(count, torch.float32, salt=3)
        dst = self.world - 1
        dist.reduce(tensor, dst=dst, op=dist.ReduceOp.SUM)
        self.finish()
        if self.rank != dst:
            return None  # the other ranks' buffers are unspecified
        expected = torch.stack(self.everyone(count, torch.int64, salt=3)).sum(dim=0)
        return difference(torch, tensor, expected.to(torch.float32))

    def check_all_gather_list(self, count):
        torch, dist = self.torch, self.dist
        outputs = [torch.full((count,), -1.0, device=self.device) for _ in range(self.world)]
        dist.all_gather(outputs, self.mine(count, torch.float32, salt=4))
        self.finish()
        return list_difference(torch, outputs, self.everyone(count, torch.float32, salt=4))

    def check_all_gather_into_tensor(self, count):
        torch, dist = self.torch, self.dist
        output = torch.full((self.world * count,), -1.0, device=self.device)
        dist.all_gather_into_tensor(output, self.mine(count, torch.float32, salt=5))
        self.finish()
        return difference(torch, output, torch.cat(self.everyone(count, torch.float32, salt=5)))

    def check_broadcast(self, count, src):
        torch, dist = self.torch, self.dist
        tensor = self.mine(count, torch.float32, salt=6)
        dist.broadcast(tensor, src=src)
        self.finish()
        return difference(torch, tensor, contribution(torch, src, count, torch.float32, salt=6))

    def check_reduce_scatter(self, count):
        torch, dist = self.torch, self.dist
        output = torch.full((count,), -1.0, device=self.device)
        dist.reduce_scatter_tensor(output, self.mine(self.world * count, torch.float32, salt=7))
        self.finish()
        total = torch.stack(self.everyone(self.world * count, torch.int64, salt=7)).sum(dim=0)
        expected = total[self.rank * count:(self.rank + 1) * count].to(torch.float32)
        return difference(torch, output, expected)

    def check_gather(self, count):
        torch, dist = self.torch, self.dist
        dst = 0
        tensor = self.mine(count, torch.float32, salt=8)
        if self.rank == dst:
            outputs = [torch.full((count,), -1.0, device=self.device) for _ in range(self.world)]
            dist.gather(tensor, gather_list=outputs, dst=dst)
            self.finish()
            return list_difference(torch, outputs, self.everyone(count, torch.float32, salt=8))
        dist.gather(tensor, dst=dst)
        self.finish()
        return None

    def check_scatter(self, count):
        torch, dist = self.torch, self.dist
        src = self.world - 1
        output = torch.full((count,), -1.0, device=self.device)
        if self.rank == src:
            pieces = [t.to(self.device) for t in self.everyone(count, torch.float32, salt=9)]
            dist.scatter(output, scatter_list=pieces, src=src)
        else:
            dist.scatter(output, src=src)
        self.finish()
        return difference(torch, output, contribution(torch, self.rank, count, torch.float32, salt=9))

    def check_all_to_all_equal(self, count):
        torch, dist = self.torch, self.dist
        output = torch.full((self.world * count,), -1.0, device=self.device)
        dist.all_to_all_single(output, self.mine(self.world * count, torch.float32, salt=10))
        self.finish()
        r = self.rank
        expected = torch.cat([full[r * count:(r + 1) * count]
                              for full in self.everyone(self.world * count, torch.float32, salt=10)])
        return difference(torch, output, expected)

    def check_all_to_all_unequal(self, count):
        torch, dist = self.torch, self.dist
        world, r = self.world, self.rank
        send_splits = [unequal_split(r, j, count) for j in range(world)]
        recv_splits = [unequal_split(j, r, count) for j in range(world)]
        output = torch.full((sum(recv_splits),), -1.0, device=self.device)
        dist.all_to_all_single(output, self.mine(sum(send_splits), torch.float32, salt=11),
                               output_split_sizes=recv_splits, input_split_sizes=send_splits)
        self.finish()
        pieces = []
        for j in range(world):  # rank j's input, cut by j's splits; piece r is what j sent to r
            splits = [unequal_split(j, k, count) for k in range(world)]
            full = contribution(torch, j, sum(splits), torch.float32, salt=11)
            start = sum(splits[:r])
            pieces.append(full[start:start + splits[r]])
        return difference(torch, output, torch.cat(pieces))

    def check_ring_send_recv(self, count):
        torch, dist = self.torch, self.dist
        world, r = self.world, self.rank
        received = torch.full((count,), -1.0, device=self.device)
        operations = [
            dist.P2POp(dist.isend, self.mine(count, torch.float32, salt=12), (r + 1) % world),
            dist.P2POp(dist.irecv, received, (r - 1) % world),
        ]
        for request in dist.batch_isend_irecv(operations):
            request.wait()
        self.finish()
        return difference(torch, received, contribution(torch, (r - 1) % world, count, torch.float32, salt=12))

    def check_barrier(self):
        self.dist.barrier()
        self.finish()
        return None

    def check_group(self, group, members, count):
        """all_reduce and broadcast (from the group's last member, a global rank) on a new group."""
        torch, dist = self.torch, self.dist
        if self.rank not in members:
            return None
        tensor = self.mine(count, torch.float32, salt=13)
        dist.all_reduce(tensor, group=group)
        self.finish()
        expected = torch.stack(self.everyone(count, torch.int64, salt=13, ranks=members)).sum(dim=0)
        detail = difference(torch, tensor, expected.to(torch.float32))
        if detail is not None:
            return "all_reduce: " + detail
        src = max(members)
        tensor = self.mine(count, torch.float32, salt=14)
        dist.broadcast(tensor, src=src, group=group)
        self.finish()
        detail = difference(torch, tensor, contribution(torch, src, count, torch.float32, salt=14))
        return None if detail is None else "broadcast: " + detail


def run_collectives(report, torch, dist, rank, world, device):
    c = Collectives(torch, dist, rank, world, device)
    bf16_modulus = max(1, 256 // world)  # sums stay below 256, exact in bfloat16
    for n in SIZES:
        report.run("all_reduce_sum_f32_%d" % n, c.check_all_reduce, n, torch.float32, "SUM", 1)
        report.run("all_reduce_max_f32_%d" % n, c.check_all_reduce, n, torch.float32, "MAX", 2)
        report.run("all_reduce_avg_f32_%d" % n, c.check_all_reduce, n, torch.float32, "AVG", 15)
        report.run("all_reduce_sum_i64_%d" % n, c.check_all_reduce, n, torch.int64, "SUM", 16)
        report.run("all_reduce_sum_bf16_%d" % n, c.check_all_reduce, n, torch.bfloat16, "SUM", 17,
                   bf16_modulus)
        report.run("reduce_%d" % n, c.check_reduce, n)
        report.run("all_gather_list_%d" % n, c.check_all_gather_list, n)
        report.run("all_gather_into_tensor_%d" % n, c.check_all_gather_into_tensor, n)
        if world > 1:
            report.run("broadcast_from_1_%d" % n, c.check_broadcast, n, 1)
        else:
            report.run("broadcast_from_0_%d" % n, c.check_broadcast, n, 0)
        report.run("reduce_scatter_tensor_%d" % n, c.check_reduce_scatter, n)
        report.run("gather_%d" % n, c.check_gather, n)
        report.run("scatter_%d" % n, c.check_scatter, n)
        report.run("all_to_all_single_%d" % n, c.check_all_to_all_equal, n)
        report.run("all_to_all_single_unequal_%d" % n, c.check_all_to_all_unequal, n // 4 + 1)
        if world > 1:
            report.run("send_recv_ring_%d" % n, c.check_ring_send_recv, n)
        else:
            report.skipped("send_recv_ring_%d" % n, "one rank")
    report.run("barrier", c.check_barrier)
    run_group_checks(report, c, dist, world)


def run_group_checks(report, collectives, dist, world):
    """new_group must be called by every rank, members or not, in the same order."""
    if world < 2:
        report.skipped("new_group", "one rank")
        return
    # A group of the last rank alone: the other ranks split with NCCL_SPLIT_NOCOLOR, and its one
    # member's group rank (0) differs from its global rank.
    groups = [("new_group_0_1", [0, 1]), ("new_group_last", [world - 1])]
    for name, ranks in groups:
        try:
            group = dist.new_group(ranks=ranks)
        except Exception as error:
            report.failed(name, "new_group(ranks=%s): %s: %s" % (ranks, type(error).__name__, error))
            continue
        for n in SIZES:
            report.run("%s_%d" % (name, n), collectives.check_group, group, sorted(ranks), n)


def check_swap(report, lib, when="swap"):
    """The only libnccl* mapped into this process is Weft's library (check `when`)."""
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(None, 5)
            if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith("libnccl"):
                paths.add(fields[5].strip())
    print("libnccl mappings: %s" % (sorted(paths) or "none"), flush=True)
    wanted = os.path.realpath(lib)
    real = sorted({os.path.realpath(p.replace(" (deleted)", "")) for p in paths})
    if real == [wanted]:
        report.passed(when)
        return True
    report.failed(when, "expected only %s mapped, found %s" % (wanted, real or "no libnccl"))
    return False


def print_versions(torch, rank):
    if rank != 0:
        return
    print("torch %s, CUDA %s" % (torch.__version__, torch.version.cuda), flush=True)
    try:
        print("torch.cuda.nccl.version(): %s" % (torch.cuda.nccl.version(),), flush=True)
    except Exception as error:
        print("torch.cuda.nccl.version(): unavailable (%s)" % error, flush=True)
    print("GPU: %s" % torch.cuda.get_device_name(0), flush=True)


def init_process_group(dist, rank, world, device, timeout_s):
    """device_id makes torch create the NCCL communicator now, and lets new_group split it."""
    import datetime
    import inspect

    options = dict(backend="nccl", rank=rank, world_size=world, init_method="env://",
                   timeout=datetime.timedelta(seconds=timeout_s))
    try:
        eager = "device_id" in inspect.signature(dist.init_process_group).parameters
    except (TypeError, ValueError):  # no signature to read: torch 2.3 and later take device_id
        eager = True
    if eager:
        options["device_id"] = device
    dist.init_process_group(**options)
    print("init_process_group: %s" % (
        "eager, device_id=%s" % device if "device_id" in options else "without device_id"), flush=True)


# ------------------------------------------------------------------------------------------------
# The model: the same in the ranks (under DDP) and in the parent's reference
# ------------------------------------------------------------------------------------------------


def build_model(torch, device):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(DDP_IN, DDP_HIDDEN), torch.nn.ReLU(), torch.nn.Linear(DDP_HIDDEN, 1))
    return model.to(device)


def global_batch(torch, world, device):
    generator = torch.Generator().manual_seed(1234)
    samples = DDP_SAMPLES_PER_RANK * world
    inputs = torch.randn(samples, DDP_IN, generator=generator)
    targets = torch.randn(samples, 1, generator=generator)
    return inputs.to(device), targets.to(device)


def full_batch_loss(torch, model, inputs, targets):
    with torch.no_grad():
        return float(torch.nn.functional.mse_loss(model(inputs), targets))


def use_exact_float32(torch):
    """No TF32 in float32 matrix products, in the ranks as in the reference."""
    torch.set_float32_matmul_precision("highest")


def train_ddp(torch, rank, world, device):
    """DDP training on this rank's share of the global batch; returns the whole batch's losses."""
    from torch.nn.parallel import DistributedDataParallel

    use_exact_float32(torch)
    model = build_model(torch, device)
    ddp = DistributedDataParallel(model, device_ids=[device.index])
    optimizer = torch.optim.SGD(ddp.parameters(), lr=DDP_LR)
    inputs, targets = global_batch(torch, world, device)
    share = slice(rank * DDP_SAMPLES_PER_RANK, (rank + 1) * DDP_SAMPLES_PER_RANK)
    losses = []
    for _ in range(DDP_STEPS):
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(ddp(inputs[share]), targets[share])
        loss.backward()
        optimizer.step()
        losses.append(full_batch_loss(torch, model, inputs, targets))
    torch.cuda.synchronize(device)
    return losses


def reference_losses(torch, world, device):
    """Plain SGD on the whole batch, one process, no torch.distributed."""
    use_exact_float32(torch)
    model = build_model(torch, device)
    optimizer = torch.optim.SGD(model.parameters(), lr=DDP_LR)
    inputs, targets = global_batch(torch, world, device)
    losses = []
    for _ in range(DDP_STEPS):
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(full_batch_loss(torch, model, inputs, targets))
    torch.cuda.synchronize(device)
    return losses


def child_main(args):
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    report = Report(rank)
    load_nccl_only_from(args.lib)
    import torch
    import torch.distributed as dist

    if not torch.cuda.is_available():
        report.failed("cuda", "torch.cuda.is_available() is False")
        return 1
    torch.cuda.set_device(0)
    device = torch.device("cuda:0")
    print_versions(torch, rank)
    init_process_group(dist, rank, world, device, max(30, int(args.timeout * 0.75)))
    swapped = check_swap(report, args.lib)
    run_collectives(report, torch, dist, rank, world, device)
    try:
        losses = train_ddp(torch, rank, world, device)
        print("LOSSES " + json.dumps(losses), flush=True)
        report.passed("ddp_training")  # the parent compares the losses with its reference
    except Exception as error:
        report.failed("ddp_training", "%s: %s" % (type(error).__name__, error))
    dist.destroy_process_group()
    # Still only Weft's library after everything ran: nothing loaded NVIDIA's later.
    swapped = check_swap(report, args.lib, "swap_at_end") and swapped
    ok = swapped and not report.failures
    print("RESULT rank %d: %s (%d checks, %d failed)" % (
        rank, "PASS" if ok else "FAIL", report.count, len(report.failures)), flush=True)
    return 0 if ok else 1


# ------------------------------------------------------------------------------------------------
# Parent: starts the ranks, watches them, compares the losses
# ------------------------------------------------------------------------------------------------


def load_nccl_only_from(lib):
    """Makes any ctypes load of a libnccl.so* by path load lib: a backstop for a loader that
    looks for NVIDIA's NCCL without searching sys.path (where the shim of nccl_shim sits)."""
    import ctypes

    original = ctypes.CDLL.__init__

    def init(self, name, *args, **kwargs):
        if isinstance(name, str) and os.path.basename(name).startswith("libnccl.so"):
            name = lib
        original(self, name, *args, **kwargs)

    ctypes.CDLL.__init__ = init


def die_with_parent():
    """In a rank, before it runs: the kernel kills it when the parent dies, even by SIGKILL (a
    `timeout` that gave up waiting), so no rank stays on the GPU after the check."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nccl_shim(lib, log_dir):
    """A folder that, first on sys.path, makes torch's search for nvidia/nccl/lib find --lib."""
    shim = os.path.join(log_dir, "shim")
    lib_dir = os.path.join(shim, "nvidia", "nccl", "lib")
    os.makedirs(lib_dir, exist_ok=True)
    link = os.path.join(lib_dir, "libnccl.so.2")
    if not os.path.lexists(link):
        os.symlink(os.path.realpath(lib), link)
    return shim


def child_environment(lib, rank, world, port, debug_path, shim):
    env = dict(os.environ)
    preload = [lib] + ([env["LD_PRELOAD"]] if env.get("LD_PRELOAD") else [])
    python_path = [shim] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env.update({
        "LD_PRELOAD": " ".join(preload),
        "PYTHONPATH": os.pathsep.join(python_path),
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": "INIT",
        "NCCL_DEBUG_FILE": debug_path,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "RANK": str(rank),
        "WORLD_SIZE": str(world),
        "LOCAL_RANK": str(rank),
        "LOCAL_WORLD_SIZE": str(world),
        "PYTHONUNBUFFERED": "1",
        # A rank that hangs is asked, before it is killed, what its communicators wait for.
        "WEFT_DUMP_SIGNAL": "USR1",
        # An error fails the check it came from and those after it, one by one; torch's watchdog
        # would otherwise end the whole process at the first, before the rank reports the rest.
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "0",
    })
    return env


class Rank:
    """One child process and the files its output goes to."""

    def __init__(self, rank, args, log_dir, port):
        self.rank = rank
        self.stdout_path = os.path.join(log_dir, "rank%d.out" % rank)
        self.stderr_path = os.path.join(log_dir, "rank%d.err" % rank)
        self.debug_path = os.path.join(log_dir, "rank%d.nccl" % rank)
        command = [sys.executable, os.path.abspath(__file__), CHILD_FLAG, "--lib", args.lib,
                   "--ranks", str(args.ranks), "--timeout", str(args.timeout)]
        with open(self.stdout_path, "w") as out, open(self.stderr_path, "w") as err:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                env=child_environment(args.lib, rank, args.ranks, port, self.debug_path,
                                      nccl_shim(args.lib, log_dir)), start_new_session=True,
                preexec_fn=die_with_parent)
        self.returncode = None
        self.hung = False

    def poll(self):
        if self.returncode is None:
            self.returncode = self.process.poll()
        return self.returncode

    def ask_what_it_waits_for(self):
        """Sends SIGUSR1 where the child has a handler for it (Weft's WEFT_DUMP_SIGNAL, set once a
        communicator exists; without one the signal would end it): it then logs what its
        communicators wait for. Whether it did is read in /proc/PID/status."""
        try:
            with open("/proc/%d/status" % self.process.pid) as f:
                caught = next((line.split()[1] for line in f if line.startswith("SigCgt:")), "0")
            if int(caught, 16) >> (signal.SIGUSR1 - 1) & 1:
                os.kill(self.process.pid, signal.SIGUSR1)
                return True
        except (OSError, ValueError):
            pass
        return False

    def kill(self):
        """Kills the child's own process group (the child leads it: start_new_session)."""
        self.hung = True
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            self.process.kill()
        self.returncode = self.process.wait()

    def stdout(self):
        with open(self.stdout_path, errors="replace") as f:
            return f.read()

    def stderr(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    def debug_log(self):
        try:
            with open(self.debug_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""


def wait_for_ranks(ranks, deadline):
    """Waits for every rank; kills those still running at the deadline (time.monotonic), or 30 s
    after a rank failed (the others then usually wait for it forever)."""
    while True:
        running = [r for r in ranks if r.poll() is None]
        if not running:
            return
        if any(r.returncode not in (None, 0) for r in ranks):
            deadline = min(deadline, time.monotonic() + 30)
        if time.monotonic() >= deadline:
            if any([r.ask_what_it_waits_for() for r in running]):
                time.sleep(2)  # for what they log
            for r in running:
                print("rank %d hung: still running at the deadline, killed" % r.rank, flush=True)
                r.kill()
            return
        time.sleep(0.2)


def tail(text, lines=40):
    return "\n".join(text.rstrip("\n").split("\n")[-lines:])


def parse_losses(text):
    for line in text.splitlines():
        if line.startswith("LOSSES "):
            try:
                return [float(x) for x in json.loads(line[len("LOSSES "):])]
            except (ValueError, TypeError):
                return None
    return None


def report_rank(rank):
    """Prints what a rank said; returns whether it passed, the Weft banner included."""
    out, err = rank.stdout(), rank.stderr()
    ok = rank.returncode == 0 and not rank.hung
    if rank.rank == 0:
        print("---- rank 0 ----")
        print(out.rstrip("\n"))
    else:
        for line in out.splitlines():
            if line.startswith(("FAIL", "RESULT", "libnccl mappings")):
                print("[rank %d] %s" % (rank.rank, line))
    log = rank.debug_log().splitlines()
    banner = next((line for line in log if "NCCL INFO Weft " in line), None)
    inits = sum("Init COMPLETE" in line for line in log)
    if banner is not None and inits > 0:
        print("PASS banner (rank %d): %s; %d communicator(s) made by Weft" % (rank.rank, banner.strip(), inits))
    else:
        other = next((line for line in log if "NCCL version" in line), None)
        print("FAIL banner (rank %d): the NCCL_DEBUG=INFO log %s" % (
            rank.rank, "shows another NCCL: " + other.strip() if other else
            "has %s and %d \"Init COMPLETE\" line(s)" % ("Weft's banner" if banner else "no Weft banner", inits)))
        ok = False
    if not ok:
        print("rank %d: exit status %s%s" % (
            rank.rank, rank.returncode, " (killed: hung)" if rank.hung else ""))
        if rank.rank != 0:
            print("rank %d stdout tail:\n%s" % (rank.rank, tail(out, 5)))
        print("rank %d stderr tail:\n%s" % (rank.rank, tail(err)))
    return ok


def reference_or_error(world):
    """The single-process reference losses, or why the parent could not compute them."""
    try:
        import torch
    except ImportError as error:
        return "the parent cannot import torch for its reference run: %s" % error
    if not torch.cuda.is_available():
        return "the parent has no CUDA for its reference run"
    try:
        return reference_losses(torch, world, torch.device("cuda:0"))
    except Exception as error:
        return "the reference run failed: %s: %s" % (type(error).__name__, error)


def compare_losses(ranks, reference):
    """The ranks' DDP losses against the parent's single-process reference."""
    if isinstance(reference, str):
        print("FAIL ddp_losses: " + reference)
        return False
    all_losses = [parse_losses(r.stdout()) for r in ranks]
    if any(losses is None or len(losses) != DDP_STEPS for losses in all_losses):
        missing = [r.rank for r, losses in zip(ranks, all_losses)
                   if losses is None or len(losses) != DDP_STEPS]
        print("FAIL ddp_losses: no complete LOSSES line from ranks %s" % missing)
        return False
    worst, ok = 0.0, True
    for rank, losses in enumerate(all_losses):
        for step, (got, want) in enumerate(zip(losses, reference)):
            diff = abs(got - want)
            worst = max(worst, diff)
            if not diff <= LOSS_ATOL + LOSS_RTOL * abs(want):
                if ok:
                    print("FAIL ddp_losses: rank %d step %d: DDP %.9g, reference %.9g" % (
                        rank, step + 1, got, want))
                ok = False
    print("reference losses: first %.6g, last %.6g; rank 0 DDP: first %.6g, last %.6g" % (
        reference[0], reference[-1], all_losses[0][0], all_losses[0][-1]))
    print("%s ddp_losses: max |DDP - reference| = %.3g over %d steps x %d ranks" % (
        "PASS" if ok else "FAIL", worst, DDP_STEPS, len(ranks)))
    return ok


def parent_main(args):
    lib = os.path.abspath(args.lib)
    if not os.path.isfile(lib):
        print("no such library: %s" % lib, file=sys.stderr)
        return 2
    args.lib = lib
    port = free_port()
    print("Weft library: %s (%s)" % (lib, os.path.realpath(lib)))
    print("ranks: %d on cuda:0, MASTER_PORT %d, timeout %g s" % (args.ranks, port, args.timeout),
          flush=True)
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="weft-torch-")
    os.makedirs(log_dir, exist_ok=True)
    ranks = []

    def end_ranks(signum=None, frame=None):
        for r in ranks:
            if r.poll() is None:
                r.kill()
        if signum is not None:
            sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, end_ranks)
    try:
        deadline = time.monotonic() + args.timeout
        ranks.extend(Rank(r, args, log_dir, port) for r in range(args.ranks))
        reference = reference_or_error(args.ranks)
        wait_for_ranks(ranks, deadline)
        ranks_ok = all([report_rank(r) for r in ranks])
        print("----")
        losses_ok = compare_losses(ranks, reference)
    finally:
        end_ranks()
        if not args.log_dir:
            shutil.rmtree(log_dir, ignore_errors=True)
    ok = ranks_ok and losses_ok
    print("torch_client: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


def main(argv):
    args = parse_args(argv)
    return child_main(args) if args.child else parent_main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
