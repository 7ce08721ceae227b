#!/usr/bin/env python3
"""Summary of a tests/gpu/check.sh run: per-run tables and the targets.

Usage: summary.py OUT_DIR   (the folder check.sh wrote its compare JSON, clocks and NVTX
counts into). Prints to stdout. Exit status: 0 every target met; 3 a target missed; 1 data
missing or a proof failed (NVTX counts, checksums absent) -- check.sh maps these to its own
exit codes. Standard library only.
"""
import json
import os
import statistics
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
WARMUP_FLAG = 2  # rt/chunk.hpp kChunkWarmup

failures = []   # proofs that could not be made (exit 1)
targets = []    # (name, figure text, target text, met)


def us(ns):
    return "-" if ns is None else f"{ns / 1000:.1f}"


def load(name):
    path = os.path.join(OUT, name + ".json")
    try:
        with open(path) as f:
            return json.load(f)
    except Exception as e:  # a failed step leaves no file
        return None


def pct(values, p):
    """Nearest-rank percentile of a list (None when empty)."""
    if not values:
        return None
    v = sorted(values)
    k = max(1, -(-len(v) * p // 100))  # ceil(n * p / 100)
    return v[int(k) - 1]


def variants(doc):
    out = {}
    for v in (doc or {}).get("variants", []):
        out[v.get("name", "?")] = v
    return out


def gpu_stage(report):
    """Per-chunk H2D + kernels + D2H (CUDA events) of the counted chunks: (p50, p95)."""
    cols = (report.get("series") or {}).get("columns") or {}
    h, k, d, fl = (cols.get(n) or [] for n in ("h2d_ns", "kernel_ns", "d2h_ns", "flags"))
    if not h or not (len(h) == len(k) == len(d)):
        return None, None
    tot = [h[i] + k[i] + d[i] for i in range(len(h)) if not (fl and i < len(fl) and fl[i] & WARMUP_FLAG)]
    tot = [t for t in tot if t > 0]
    return pct(tot, 50), pct(tot, 95)


def figures(v):
    r = v.get("report") or {}
    proc = (r.get("stages") or {}).get("process") or {}
    g50, g95 = gpu_stage(r)
    launch = (r.get("process_parts") or {}).get("launch") or {}
    wl = r.get("workload") or {}
    ck = r.get("checksums") or {}
    return {
        "proc_p50": proc.get("p50"), "proc_p95": proc.get("p95"), "gpu_p50": g50, "gpu_p95": g95,
        "launch_p50": launch.get("p50"), "launches": r.get("launches_per_chunk"),
        "dispatches": r.get("dispatches_per_chunk"), "planned": wl.get("dispatches_per_chunk_planned"),
        "ck_in": ck.get("input") or [], "ck_out": ck.get("output") or [], "counted": (r.get("counts") or {}).get("counted"),
    }


def clocks(name):
    lines = []
    p = os.path.join(OUT, name + ".clocks")
    if os.path.exists(p):
        lines += [l.rstrip() for l in open(p)]
    p = os.path.join(OUT, name + ".clocks_samples")
    if os.path.exists(p):
        mhz = []
        pstates = set()
        for l in open(p):
            parts = [x.strip() for x in l.split(",")]
            if parts and parts[0].isdigit():
                mhz.append(int(parts[0]))
                if len(parts) > 1:
                    pstates.add(parts[1])
        if mhz:
            lines.append(f"during: SM clock min {min(mhz)} / median {int(statistics.median(mhz))} / max {max(mhz)} MHz "
                         f"over {len(mhz)} samples, pstates {','.join(sorted(pstates))}")
    return lines or ["clocks: not recorded (no nvidia-smi)"]


RUNS = [
    ("c256", "7 sections, 256 frames stereo, --speed max"),
    ("c128", "7 sections, 128 frames stereo, --speed max"),
    ("chain10_c128", "10 one-section filters, 128 frames stereo, --speed max"),
    ("paced_c256", "7 sections, 256 frames stereo, --speed 1 (paced, 4 s)"),
    ("timing_off_c256", "7 sections, 256 frames stereo, --speed max, --gpu-timing off"),
]
SWEEPS = ["sweep_2ch_c64", "sweep_2ch_c512", "sweep_2ch_c1024", "sweep_2ch_c4096", "sweep_32ch_c256",
          "sweep_32ch_c1024", "sweep_batch32_c256", "sweep_batch128_c256"]

data = {}
print("figures in us; process = the backend's process() call as the engine timed it (host view);")
print("gpu = H2D + kernels + D2H between CUDA events, per chunk (device view); launch = CPU time in")
print("the CUDA calls; ck = first-chunk output checksums equal to the cpu variant's")
for name, title in RUNS + [(s, "sweep") for s in SWEEPS]:
    doc = load(name)
    if doc is None:
        if not name.startswith("sweep"):
            failures.append(f"{name}: no report (the run failed; see {name}.out)")
        continue
    vs = variants(doc)
    rows = {}
    print(f"\n{name}: {title}")
    print(f"  {'variant':<20} {'proc p50':>9} {'proc p95':>9} {'gpu p50':>8} {'gpu p95':>8} {'launch p50':>10} "
          f"{'launches':>8} {'disp':>5} {'ck':>4}")
    cpu = figures(vs["cpu"]) if "cpu" in vs and vs["cpu"].get("available") else None
    for vn, v in vs.items():
        if not v.get("available", False):
            print(f"  {vn:<20} unavailable: {v.get('reason', '')}")
            if not name.startswith("sweep"):
                failures.append(f"{name}: {vn} could not run: {v.get('reason', '')}")
            continue
        f = figures(v)
        rows[vn] = f
        same = "-" if cpu is None or vn == "cpu" else ("yes" if f["ck_out"] and f["ck_out"] == cpu["ck_out"] else "NO")
        print(f"  {vn:<20} {us(f['proc_p50']):>9} {us(f['proc_p95']):>9} {us(f['gpu_p50']):>8} {us(f['gpu_p95']):>8} "
              f"{us(f['launch_p50']):>10} {f['launches'] if f['launches'] is not None else '-':>8} "
              f"{f['dispatches'] if f['dispatches'] is not None else '-':>5} {same:>4}")
    if not name.startswith("sweep"):
        for l in clocks(name):
            print(f"  {l}")
    data[name] = rows

# ---------------------------------------------------------------- target: f32 identical to the CPU
checked = identical = 0
chunks = set()
for name, _ in RUNS:
    rows = data.get(name) or {}
    cpu = rows.get("cpu")
    if not cpu:
        continue
    if not cpu["ck_out"]:
        failures.append(f"{name}: the cpu variant recorded no checksums")
        continue
    if cpu["ck_out"] == cpu["ck_in"]:
        failures.append(f"{name}: output checksums equal the input's: the chain did nothing")
    for vn, f in rows.items():
        if not vn.startswith("cuda"):
            continue
        checked += 1
        chunks.add(len(f["ck_out"]))
        ok = f["ck_out"] == cpu["ck_out"] and f["ck_in"] == cpu["ck_in"]
        identical += ok
        if not ok:
            print(f"\n{name}: {vn} output differs from the CPU's (first differing chunk "
                  f"{next((i for i, (a, b) in enumerate(zip(f['ck_out'], cpu['ck_out'])) if a != b), '?')})")
targets.append(("f32 output identical to the CPU (checksums of the first chunks, noise)",
                f"{identical} of {checked} CUDA variant runs, {'/'.join(map(str, sorted(chunks))) or 0} chunks each",
                "all", checked > 0 and identical == checked))

# ---------------------------------------------------------------- target: launches per chunk
bad = []
seen = 0
for name in ("c256", "c128", "chain10_c128", "paced_c256", "timing_off_c256"):
    for vn, f in (data.get(name) or {}).items():
        if not vn.startswith("cuda"):
            continue
        seen += 1
        want = 1.0 if ":graph" in vn else f["planned"]
        if f["launches"] is None or want is None or abs(f["launches"] - want) > 1e-9 or f["dispatches"] != f["planned"]:
            bad.append(f"{name} {vn}: {f['launches']} launches, {f['dispatches']} dispatches (planned {f['planned']})")
fig = "; ".join(
    f"{vn} {f['launches']}" for vn, f in (data.get("chain10_c128") or {}).items() if vn.startswith("cuda"))
targets.append(("launches per chunk: graph 1, eager = plan dispatches (10 filters: " + (fig or "no data") + ")",
                f"{seen - len(bad)} of {seen} variant runs as planned" + ("" if not bad else ": " + "; ".join(bad)),
                "all", seen > 0 and not bad))

# ---------------------------------------------------------------- targets: 256 frames stereo, 7 sections
for name, label in (("c256", "--speed max"), ("paced_c256", "--speed 1")):
    g = (data.get(name) or {}).get("cuda:graph")
    if g is None:
        targets.append((f"cuda:graph 256 frames stereo 7 sections {label}: GPU stage p95", "no data", "<= 15 us", False))
        targets.append((f"cuda:graph 256 frames stereo 7 sections {label}: process() p95", "no data", "<= 30 us", False))
        continue
    targets.append((f"cuda:graph 256 frames stereo 7 sections {label}: GPU stage p95 (device view)",
                    f"{us(g['gpu_p95'])} us", "<= 15 us", g["gpu_p95"] is not None and g["gpu_p95"] <= 15000))
    targets.append((f"cuda:graph 256 frames stereo 7 sections {label}: process() p95 (host view)",
                    f"{us(g['proc_p95'])} us", "<= 30 us", g["proc_p95"] is not None and g["proc_p95"] <= 30000))

# ---------------------------------------------------------------- target: graph >= 3x eager, 10 filters unfused
rows = data.get("chain10_c128") or {}
need = ("cuda:eager:unfused", "cuda:eager", "cuda:graph:unfused", "cuda:graph")
if all(n in rows and rows[n]["proc_p50"] for n in need):
    base = rows["cuda:eager:unfused"]["proc_p50"]
    print("\nchain10_c128: where the speed-up comes from (process p50 of eager:unfused / process p50 of the variant)")
    print(f"  {'variant':<20} {'proc p50':>9} {'launches':>8} {'x':>6}  what it adds")
    what = {"cuda:eager:unfused": "baseline: 10 kernel launches per chunk",
            "cuda:eager": "fusion alone: one kernel of 10 sections, launched eagerly",
            "cuda:graph:unfused": "graph alone: 10 kernels, one graph launch",
            "cuda:graph": "fusion and graph"}
    for n in need:
        print(f"  {n:<20} {us(rows[n]['proc_p50']):>9} {rows[n]['launches']:>8} {base / rows[n]['proc_p50']:>5.2f}x  {what[n]}")
    fusion = base / rows["cuda:eager"]["proc_p50"]
    graph = base / rows["cuda:graph:unfused"]["proc_p50"]
    both = base / rows["cuda:graph"]["proc_p50"]
    on_top = rows["cuda:eager"]["proc_p50"] / rows["cuda:graph"]["proc_p50"]
    print(f"  fusion alone {fusion:.2f}x, graph alone {graph:.2f}x, both {both:.2f}x "
          f"(graph on top of fusion {on_top:.2f}x)")
    targets.append(("10-filter chain unfused, 128 frames: graph vs eager (process p50 eager:unfused / graph:unfused)",
                    f"{graph:.2f}x", ">= 3x", graph >= 3))
else:
    targets.append(("10-filter chain unfused, 128 frames: graph vs eager", "no data", ">= 3x", False))

# ---------------------------------------------------------------- host vs device, timing off
print("\nhost view beside device view, 256 frames stereo 7 sections (us)")
print(f"  {'run':<42} {'proc p50':>9} {'proc p95':>9} {'gpu p50':>8} {'gpu p95':>8}")
for name, label in (("c256", "--speed max, timing on"), ("timing_off_c256", "--speed max, --gpu-timing off"),
                    ("paced_c256", "--speed 1, timing on")):
    for vn in ("cuda:graph", "cuda:eager"):
        f = (data.get(name) or {}).get(vn)
        if f:
            print(f"  {vn + ' ' + label:<42} {us(f['proc_p50']):>9} {us(f['proc_p95']):>9} {us(f['gpu_p50']):>8} "
                  f"{us(f['gpu_p95']):>8}")

# ---------------------------------------------------------------- NVTX (a proof, not a target)
print("\nNVTX ranges seen by tests/gpu/nvtx_count.cpp (NVTX_INJECTION64_PATH)")
for mode in ("graph", "eager"):
    p = os.path.join(OUT, f"nvtx_{mode}.count")
    rep = load(f"nvtx_{mode}")
    if not os.path.exists(p) or rep is None:
        failures.append(f"NVTX {mode}: no count or no report")
        print(f"  {mode}: no data")
        continue
    line = open(p).read().strip()
    head, _, name_list = line.partition(" names=")  # names may hold spaces ("graph launch")
    kv = dict(x.split("=", 1) for x in head.split(": ", 1)[-1].split(" ") if "=" in x)
    names = {}
    for item in name_list.split(","):
        if ":" in item:
            n, c = item.rsplit(":", 1)
            names[n] = int(c)
    n_chunks = (rep.get("backend_counters") or {}).get("chunks")
    ok = (n_chunks and names.get("chunk") == n_chunks and kv.get("pushes") == kv.get("pops")
          and (names.get("graph launch") == n_chunks if mode == "graph" else names.get("cascade", 0) >= n_chunks))
    print(f"  {mode}: {line}")
    print(f"  {mode}: 'chunk' ranges {names.get('chunk')} for {n_chunks} chunks processed: {'ok' if ok else 'MISMATCH'}")
    if not ok:
        failures.append(f"NVTX {mode}: ranges do not match the chunks processed")

for name in ("sanitizer_memcheck", "sanitizer_racecheck"):
    p = os.path.join(OUT, name + ".out")
    if os.path.exists(p):
        last = [l.strip() for l in open(p) if "SUMMARY" in l]
        print(f"\n{name}: {last[-1] if last else 'no summary line'}")
if os.path.exists(os.path.join(OUT, "sanitizer.skipped")):
    print("\ncompute-sanitizer: skipped (not on this machine)")

# ---------------------------------------------------------------- targets
print("\ntargets (measured beside target)")
missed = 0
for name, figure, target, met in targets:
    missed += not met
    print(f"  {'MET   ' if met else 'MISSED'} {name}: {figure} (target {target})")
if failures:
    print("\nproofs that could not be made:")
    for f in failures:
        print(f"  - {f}")
    sys.exit(1)
sys.exit(3 if missed else 0)
