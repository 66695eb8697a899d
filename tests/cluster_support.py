"""Test helpers for cluster/interop/report tests: a generator of multi-rank
npuprof run directories in the real on-disk format (profiler_info + NPR1 raw
data written by the core's RawWriter), and small utilities.

The generated job simulates synchronous data-parallel training: every step,
each rank computes (device kernels), then joins a ring AllReduce that ends
for all ranks when the slowest rank has arrived plus the transfer time. Ranks
live on hosts of 8; each host's wall clock is skewed by a known offset.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from npuprof.events import EventKind, EventTable
from npuprof.rawstore import RAW_DIR, RawWriter
from npuprof.runinfo import base_info, write_info

REPO = Path(__file__).resolve().parents[1]
T0 = 1_790_000_000_000_000_000          # 2026-09 in epoch ns
KERNELS = [("MatMul", 900_000), ("Add", 120_000), ("Softmax", 300_000), ("LayerNorm", 200_000),
           ("MatMul", 700_000), ("Gelu", 150_000)]


@dataclass
class GeneratedJob:
    root: Path
    ranks: int
    steps: list
    slow_ranks: list
    skew_ns: dict                     # rank -> clock skew of its host (local = true + skew)
    compute_ns: dict = field(default_factory=dict)   # (rank, step) -> compute time


def ensure_cluster_plugin() -> None:
    """Register the cluster/report plugins in this process if their entry points are absent."""
    from npuprof.plugins.manager import get_plugin_host

    host = get_plugin_host()
    import npuprof.cluster.plugin as cp

    if host.pm.get_plugin("cluster") is None and not host.pm.is_registered(cp):
        host.register(cp, "cluster")
    try:
        import npuprof.report.plugin as rp
    except ImportError:
        return
    if host.pm.get_plugin("report") is None and not host.pm.is_registered(rp):
        host.register(rp, "report")


def make_job(root: Path, ranks: int = 64, steps: int = 5, slow_ranks: tuple = (13, 42), slow_factor: float = 1.3,
             per_host: int = 8, host_skew_ns: Optional[list] = None, seed: int = 0, world_size: Optional[int] = None,
             first_step: int = 1, counters: bool = True, links: bool = False) -> GeneratedJob:
    """Write ``ranks`` run directories under ``root`` and return the ground truth.

    ``links``: each kernel carries the launch link (``corr``) of the host
    operator that precedes it, as CANN's connectionId would.
    """
    rng = np.random.default_rng(seed)
    n_hosts = (ranks + per_host - 1) // per_host
    if host_skew_ns is None:
        host_skew_ns = [0] + [int(x) for x in rng.integers(-3_000_000, 3_000_000, n_hosts - 1)]
    skew = {r: int(host_skew_ns[r // per_host]) for r in range(ranks)}
    job = GeneratedJob(root=root, ranks=ranks, steps=list(range(first_step, first_step + steps)),
                       slow_ranks=list(slow_ranks), skew_ns=skew)
    cols: dict = {r: {k: [] for k in ("ts", "dur", "kind", "name", "type", "args", "device", "stream", "tid",
                                      "value", "corr")} for r in range(ranks)}

    def add(r: int, ts: int, dur: int, kind: EventKind, name: str, typ: str = "", args: str = "",
            device: int = -1, stream: int = -1, tid: int = 0, value: float = 0.0, corr: int = -1) -> None:
        c = cols[r]
        c["corr"].append(corr)
        c["ts"].append(ts + skew[r])
        c["dur"].append(dur)
        c["kind"].append(int(kind))
        c["name"].append(name)
        c["type"].append(typ)
        c["args"].append(args)
        c["device"].append(device)
        c["stream"].append(stream)
        c["tid"].append(tid)
        c["value"].append(value)

    t = T0
    size = 64 << 20
    for step in job.steps:
        compute = {}
        for r in range(ranks):
            noise = rng.normal(1.0, 0.01, len(KERNELS)).clip(0.95, 1.05)
            factor = slow_factor if r in slow_ranks else 1.0
            compute[r] = [int(d * n * factor) for (_, d), n in zip(KERNELS, noise)]
            job.compute_ns[(r, step)] = sum(compute[r])
        arrive = {r: t + 50_000 + sum(compute[r]) for r in range(ranks)}
        last = max(arrive.values())
        transfer = 400_000
        end = last + transfer
        for r in range(ranks):
            dev = r % per_host
            pid = 1000 + r
            add(r, t, end + 20_000 - t, EventKind.STEP, f"ProfilerStep#{step}", "ProfilerStep", tid=pid)
            k_t = t + 50_000
            for (name, _), d in zip(KERNELS, compute[r]):
                link = len(cols[r]["ts"]) if links else -1
                add(r, k_t - 30_000, 20_000, EventKind.OP, f"{name}-op", name, tid=pid, corr=link)
                add(r, k_t, d, EventKind.KERNEL, f"{name}_kernel", name, device=dev, stream=2, corr=link)
                k_t += d
            group = "world"
            add(r, arrive[r], end - arrive[r], EventKind.COMM, f"hcom_allReduce_{step}", "AllReduce",
                json.dumps({"group": group, "size": size, "wait_ns": last - arrive[r]}), device=dev, stream=5)
            peer = (r + 1) % ranks
            transport = "HCCS" if peer // per_host == r // per_host else "RDMA"
            add(r, last + 10_000, transfer // 2, EventKind.COMM, "Memcpy", "AllReduce",
                json.dumps({"group": group, "src_rank": r, "dst_rank": peer, "size": size // 2,
                            "transport": transport}), device=dev, stream=5)
            add(r, last + 10_000 + transfer // 2, transfer // 4, EventKind.COMM, "Reduce_Inline", "AllReduce",
                json.dumps({"group": group, "src_rank": r, "dst_rank": r, "size": size // 2,
                            "transport": "LOCAL"}), device=dev, stream=5)
            if counters:
                for i in range(5):
                    ts_c = t + i * (end - t) // 5
                    add(r, ts_c, 0, EventKind.COUNTER, "CPU Usage(%)", "host_sys", value=40.0 + 5 * i + r % 7,
                        tid=pid)
                    add(r, ts_c, 0, EventKind.COUNTER, "Memory Usage(%)", "host_sys", value=30.0 + i, tid=pid)
        t = end + 100_000
    world = world_size or ranks
    for r in range(ranks):
        c = cols[r]
        pid = 1000 + r
        table = EventTable.from_records(ts=c["ts"], dur=c["dur"], kind=c["kind"], name=c["name"], type=c["type"],
                                        args=c["args"], device=c["device"], stream=c["stream"], tid=c["tid"],
                                        value=c["value"], corr=c["corr"], pid=pid, source="generated")
        stamp = "20260911" + f"{r:09d}"
        run_dir = root / f"node{r // per_host}-rank{r}_{pid}_{stamp}_ascend_ms"
        writer = RawWriter(run_dir / RAW_DIR)
        writer.append(table)
        writer.close()
        info = base_info({"export_type": ["text"]}, r, r % per_host, world)
        info["npuprof"].update({"hostname": f"node{r // per_host}", "pid": pid, "state": "stopped",
                                "steps": job.steps, "clock": {"monotonic_ns": 0, "realtime_ns": T0 + skew[r]},
                                "start_time_ns": T0 + skew[r]})
        write_info(run_dir, r, info)
    return job


def run_py(code: str, env: Optional[dict] = None, cwd: Optional[Path] = None, timeout: int = 600,
           python: Optional[str] = None) -> "subprocess.CompletedProcess":
    """Run Python code in a fresh interpreter (the test venv by default)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([python or sys.executable, "-c", code], capture_output=True, text=True, env=full_env,
                          cwd=cwd, timeout=timeout)


# A real 2-rank job: MindSpore on CPU trains a small MLP in each process and
# averages gradients with a real all-reduce over a loopback TCP socket,
# recorded with npuprof.cluster.record_communication. Rank/world come from RANK_ID/RANK_SIZE.
MS_RANK_WORKLOAD = r'''
import json, os, socket, struct, sys, time
import numpy as np
import mindspore as ms
from mindspore import nn
import npuprof
from npuprof import record_function, schedule
from npuprof.cluster import rank_profiler
from npuprof.cluster.record_communication import comm_op, record_link
from npuprof.config import env_rank

rank, world, device = env_rank()
out, port, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
ms.set_seed(0)
peer = 1 - rank
if rank == 0:
    srv = socket.create_server(("127.0.0.1", port))
    sock, _ = srv.accept()
else:
    for _ in range(600):
        try:
            sock = socket.create_connection(("127.0.0.1", port)); break
        except OSError:
            time.sleep(0.05)
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

def recv_exact(n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise RuntimeError("peer closed")
        buf += chunk
    return bytes(buf)

def allreduce(flat, step):
    data = flat.astype(np.float32).tobytes()
    with comm_op(f"hcom_allReduce_{step}", "AllReduce", group="world", size=len(data)) as op:
        t0 = time.perf_counter_ns()
        sock.sendall(struct.pack("<I", len(data)) + data)
        t1 = time.perf_counter_ns()
        record_link(t0, t1, rank, peer, len(data), "TCP", group="world", op_type="AllReduce", name="send")
        w0 = time.perf_counter_ns()
        (n,) = struct.unpack("<I", recv_exact(4))
        op.wait_ns = time.perf_counter_ns() - w0
        other = np.frombuffer(recv_exact(n), dtype=np.float32)
        t2 = time.perf_counter_ns()
        total = flat + other
        record_link(t2, time.perf_counter_ns(), rank, rank, len(data), "LOCAL", group="world",
                    op_type="AllReduce", name="reduce")
    return total / 2

net = nn.SequentialCell([nn.Dense(64, 128), nn.ReLU(), nn.Dense(128, 10)])
loss_fn = nn.MSELoss()
opt = nn.SGD(net.trainable_params(), learning_rate=0.01)
grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, opt.parameters)
rng = np.random.default_rng(rank)
x = ms.Tensor(rng.standard_normal((32, 64)).astype(np.float32))
y = ms.Tensor(rng.standard_normal((32, 10)).astype(np.float32))
losses = []
with rank_profiler(output_path=os.path.join(out, f"rank{rank}"), activities=["CPU"], host_sys=["cpu", "mem"],
                   host_sys_usage_freq=100, schedule=schedule(wait=1, warmup=1, active=steps - 2)) as prof:
    for step in range(steps):
        with record_function("forward_backward"):
            loss, grads = grad_fn(x, y)
        flat = np.concatenate([g.asnumpy().ravel() for g in grads])
        avg = allreduce(flat, step)
        new, off = [], 0
        for g in grads:
            n = int(np.prod(g.shape))
            new.append(ms.Tensor(avg[off:off + n].reshape(g.shape)))
            off += n
        with record_function("optimizer"):
            opt(tuple(new))
        losses.append(float(loss.asnumpy()))
        time.sleep(0.01 * (1 + rank))
        prof.step()
sock.close()
print(json.dumps({"rank": rank, "world": world, "saved_runs": [str(p) for p in prof.saved_runs],
                  "losses": losses}))
'''


def run_ms_ranks(out: Path, steps: int = 6, world: int = 2, timeout: int = 600) -> list:
    """Launch ``world`` MindSpore ranks (RANK_ID/RANK_SIZE/DEVICE_ID set) and return their JSON facts."""
    import socket
    import subprocess

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = out / "ms_rank_workload.py"
    out.mkdir(parents=True, exist_ok=True)
    script.write_text(MS_RANK_WORKLOAD)
    procs = []
    for r in range(world):
        env = dict(os.environ, RANK_ID=str(r), RANK_SIZE=str(world), DEVICE_ID=str(r), GLOG_v="3")
        procs.append(subprocess.Popen([sys.executable, str(script), str(out), str(port), str(steps)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    facts = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=timeout)
        assert p.returncode == 0, stderr[-4000:]
        facts.append(json.loads(stdout.strip().splitlines()[-1]))
    return facts


# -- the ecosystem tools' own environment ------------------------------------------------------------------------
# msprof-analyze, HTA and xprof pull pandas 3, jupyterlab and google-cloud clients; they live in their own venv so
# the project's .venv stays lean. `make interop` (or the first interop test) creates it.
INTEROP_VENV = REPO / ".venv-interop"
INTEROP_PACKAGES = ["msprof-analyze==26.2.0", "HolisticTraceAnalysis==0.5.0", "xprof==2.24.2"]


def interop_python() -> Path:
    """Python of .venv-interop, created with the pinned tools when missing (serialised by a file lock)."""
    import fcntl
    import subprocess

    py = INTEROP_VENV / "bin" / "python"
    stamp = INTEROP_VENV / ".npuprof-interop-installed"
    # beside the venv, not in tempfile.gettempdir(): the suite points that into each session's basetemp,
    # so two concurrent sessions would each hold their own lock and install into one venv at once
    lock_path = INTEROP_VENV.parent / ".venv-interop.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text() == " ".join(INTEROP_PACKAGES):
            return py
        if not py.exists():
            subprocess.run([_base_python(), "-m", "venv", str(INTEROP_VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", *INTEROP_PACKAGES], check=True, timeout=1800)
        stamp.write_text(" ".join(INTEROP_PACKAGES))
    return py


def _base_python() -> str:
    """The interpreter the project venv was made from (its 'home' in pyvenv.cfg), else this one."""
    cfg = Path(sys.prefix) / "pyvenv.cfg"
    if cfg.exists():
        for line in cfg.read_text().splitlines():
            key, _, val = line.partition("=")
            if key.strip() == "executable":
                return val.strip()
            if key.strip() == "home":
                cand = Path(val.strip()) / f"python{sys.version_info.major}.{sys.version_info.minor}"
                if cand.exists():
                    return str(cand)
    return sys.executable
