#!/usr/bin/env python3
"""chunkscope's CPU kernels beside scipy.signal.sosfilt, measured in one run, interleaved.

    python3 scripts/bench_vs_scipy.py [--chunkscope build/chunkscope] [--rounds 5]
                                      [--replay audio/mix_stereo_48k.flac] [--json FILE]

Each round, in alternating order:
  * `chunkscope bench --isa scalar,auto` over 2, 4, 8 and 32 channels (4 and 8: the chunk
    of 2 and 4 stereo streams batched with --batch), 6 sections, 256-frame
    chunks, f32 and f64, fused and unfused (the bench's chain: six one-section peaking
    filters);
  * scipy.signal.sosfilt on the same chain's sections (read from `chunkscope chain --json`)
    over 10 s of 48 kHz noise in memory, f32 and f64, along the time axis, for the same
    channel counts (the best of three calls);
  * with --replay FILE: `chunkscope replay FILE` at 128-frame chunks, --speed max, with
    --isa scalar and --isa auto, reading the process stage's p50 from the JSON report; and
    `chunkscope replay FILE --streams 4` at 128-frame chunks, --speed max, independent and
    --batch: the process time per stream's chunk (independent: the pooled p50; batched:
    the batch's p50 / 4).

It prints every figure as the median over the rounds, and the ratios (auto / scalar,
auto / scipy) as the medians of the per-round ratios. Throughput is in 1e9
biquad-samples per second (sections x frames x channels / s), as `chunkscope bench` counts.
A benchmark, not a test: figures depend on the machine and its load; compare only
figures from one run.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy import signal

CHANNELS = (2, 4, 8, 32)
STREAMS = 4  # the replay's streams, independent and batched
SECTIONS = 6
CHUNK = 256
DTYPES = ("f32", "f64")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench_vs_scipy: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout


def chain_sos(cs, spec):
    d = json.loads(run([cs, "chain", spec, "--json"]))
    return np.array([sec for st in d["stages"] for sec in st["sections"]], dtype=np.float64)


def chunkscope_rows(cs, tmp):
    out = os.path.join(tmp, "bench.json")
    run([cs, "bench", "--channels", ",".join(map(str, CHANNELS)), "--sections", str(SECTIONS), "--chunks", str(CHUNK),
         "--dtype", ",".join(DTYPES), "--isa", "scalar,auto", "--json", out])
    with open(out) as f:
        return json.load(f)


def scipy_gbs(sos, channels, dtype, seconds=10.0, rate=48000):
    rng = np.random.default_rng(7)
    frames = int(seconds * rate)
    x = rng.uniform(-0.5, 0.5, size=(frames, channels)).astype(dtype)
    s = sos.astype(dtype)
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        y = signal.sosfilt(s, x, axis=0)
        t = time.perf_counter() - t0
        assert y.dtype == x.dtype
        best = t if best is None else min(best, t)
    return len(s) * frames * channels / best / 1e9


def replay_p50(cs, path, isa, tmp):
    out = os.path.join(tmp, f"replay_{isa}.json")
    run([cs, "replay", path, "--chain", "hp:80:4 | lp:12000:8 | peak:1000:q=0.7:gain=6", "--chunk", "128", "--speed",
         "max", "--baseline", "0", "--isa", isa, "--json", out, "--quiet"])
    with open(out) as f:
        d = json.load(f)
    return d["stages"]["process"]["p50"], d["workload"]["signature"].get("cpu_isa", "?")


def replay_streams_p50(cs, path, batch, tmp):
    out = os.path.join(tmp, f"replay_streams_{batch}.json")
    run([cs, "replay", path, "--chain", "hp:80:4 | lp:12000:8 | peak:1000:q=0.7:gain=6", "--chunk", "128", "--speed",
         "max", "--baseline", "0", "--streams", str(STREAMS), "--json", out, "--quiet"] + (["--batch"] if batch else []))
    with open(out) as f:
        d = json.load(f)
    assert d["streams"]["mode"] == ("batched" if batch else "independent")
    p50 = d["streams"]["pooled"]["process"]["p50"]
    return p50 / STREAMS if batch else p50


def med(v):
    return statistics.median(v) if v else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunkscope", default="build/chunkscope")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--replay", default="")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    if a.rounds < 1:
        sys.exit("bench_vs_scipy: --rounds must be 1 or more")
    cs = a.chunkscope
    if not os.access(cs, os.X_OK):
        sys.exit(f"bench_vs_scipy: --chunkscope '{cs}': not an executable (build it first: make build)")
    if a.replay and not os.path.isfile(a.replay):
        sys.exit(f"bench_vs_scipy: --replay '{a.replay}': no such file")

    rounds = []
    spec = None
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            rec = {"chunkscope": {}, "scipy": {}, "replay": {}}
            order = ["chunkscope", "scipy", "replay"] if r % 2 == 0 else ["replay", "scipy", "chunkscope"]
            for what in order:
                if what == "chunkscope":
                    b = chunkscope_rows(cs, tmp)
                    for row in b["rows"]:
                        key = (row["dtype"], row["channels"], "auto" if row["isa_auto"] else row["isa"])
                        if not row["fused"]:
                            key = ("unfused",) + key
                        rec["chunkscope"][key] = (row["median_gbs"], row["isa"], row["layout"], row["warning"])
                        spec = row["chain_spec"]
                elif what == "scipy":
                    if spec is None:  # the first round runs the bench first
                        spec = chunkscope_rows(cs, tmp)["rows"][0]["chain_spec"]
                    sos = chain_sos(cs, spec)
                    assert len(sos) == SECTIONS
                    for dt in DTYPES:
                        for ch in CHANNELS:
                            rec["scipy"][(dt, ch)] = scipy_gbs(sos, ch, np.float32 if dt == "f32" else np.float64)
                elif a.replay:
                    for isa in ("scalar", "auto"):
                        rec["replay"][isa] = replay_p50(cs, a.replay, isa, tmp)
                    for batch in (False, True):
                        rec["replay"]["batched" if batch else "independent"] = replay_streams_p50(cs, a.replay, batch, tmp)
            rounds.append(rec)
            print(f"round {r + 1}/{a.rounds} done", file=sys.stderr, flush=True)

    print(f"chunkscope bench chain: '{spec}' ({SECTIONS} sections), {CHUNK}-frame chunks; scipy {signal.__name__} "
          f"from scipy {__import__('scipy').__version__}, numpy {np.__version__}; medians of {a.rounds} interleaved rounds")
    print(f"{'dtype':<6}{'ch':>3}  {'scalar':>8}  {'auto':>8} {'(isa, layout)':<26}{'scipy':>8}  "
          f"{'auto/scalar':>11}  {'auto/scipy':>10}")
    summary = []
    for dt in DTYPES:
        for ch in CHANNELS:
            sc = [x["chunkscope"][(dt, ch, "scalar")][0] for x in rounds]
            au = [x["chunkscope"][(dt, ch, "auto")][0] for x in rounds]
            sp = [x["scipy"][(dt, ch)] for x in rounds]
            isa, layout = rounds[-1]["chunkscope"][(dt, ch, "auto")][1:3]
            flagged = sum(1 for x in rounds for k in ("scalar", "auto") if x["chunkscope"][(dt, ch, k)][3])
            r_sc = med([u / s for u, s in zip(au, sc)])
            r_sp = med([u / s for u, s in zip(au, sp)])
            print(f"{dt:<6}{ch:>3}  {med(sc):>8.3f}  {med(au):>8.3f} {'(' + isa + ', ' + layout + ')':<26}{med(sp):>8.3f}  "
                  f"{r_sc:>10.2f}x  {r_sp:>9.2f}x" + (f"   ({flagged} flagged bench rows)" if flagged else ""))
            summary.append({"dtype": dt, "channels": ch, "sections": SECTIONS, "chunk": CHUNK, "scalar_gbs": med(sc),
                            "auto_gbs": med(au), "auto_isa": isa, "auto_layout": layout, "scipy_gbs": med(sp),
                            "auto_over_scalar": r_sc, "auto_over_scipy": r_sp, "flagged_rows": flagged,
                            "rounds": {"scalar": sc, "auto": au, "scipy": sp}})
    print("unfused (one pass per section):")
    for dt in DTYPES:
        for ch in CHANNELS:
            sc = [x["chunkscope"][("unfused", dt, ch, "scalar")][0] for x in rounds]
            au = [x["chunkscope"][("unfused", dt, ch, "auto")][0] for x in rounds]
            isa, layout = rounds[-1]["chunkscope"][("unfused", dt, ch, "auto")][1:3]
            r_sc = med([u / s for u, s in zip(au, sc)])
            print(f"{dt:<6}{ch:>3}  {med(sc):>8.3f}  {med(au):>8.3f} {'(' + isa + ', ' + layout + ')':<26}{'':>8}  "
                  f"{r_sc:>10.2f}x")
            summary.append({"dtype": dt, "channels": ch, "sections": SECTIONS, "chunk": CHUNK, "unfused": True,
                            "scalar_gbs": med(sc), "auto_gbs": med(au), "auto_isa": isa, "auto_layout": layout,
                            "auto_over_scalar": r_sc, "rounds": {"scalar": sc, "auto": au}})
    for dt in DTYPES[1:]:
        for ch in CHANNELS:
            f32 = med([x["chunkscope"][("f32", ch, "auto")][0] for x in rounds])
            f64 = med([x["chunkscope"][(dt, ch, "auto")][0] for x in rounds])
            print(f"{dt} / f32 (auto, {ch} ch): {f64 / f32:.2f}")
    replay = None
    if a.replay:
        sc = [x["replay"]["scalar"][0] for x in rounds]
        au = [x["replay"]["auto"][0] for x in rounds]
        isa = rounds[-1]["replay"]["auto"][1]
        ratio = med([s / u for s, u in zip(sc, au)])
        print(f"replay {a.replay} --chunk 128 --speed max: process p50 {med(sc) / 1000:.2f} us (scalar) vs "
              f"{med(au) / 1000:.2f} us (auto: {isa}), {ratio:.2f}x lower")
        ind = [x["replay"]["independent"] for x in rounds]
        bat = [x["replay"]["batched"] for x in rounds]
        r_b = med([i / b for i, b in zip(ind, bat)])
        print(f"replay {a.replay} --chunk 128 --speed max --streams {STREAMS}: process per stream's chunk "
              f"{med(ind) / 1000:.2f} us (independent, pooled p50) vs {med(bat) / 1000:.2f} us (--batch, the batch's "
              f"p50 / {STREAMS}), {r_b:.2f}x lower")
        replay = {"file": a.replay, "chunk": 128, "scalar_p50_ns": sc, "auto_p50_ns": au, "auto_isa": isa,
                  "scalar_over_auto": ratio, "streams": STREAMS, "independent_per_stream_p50_ns": ind,
                  "batched_per_stream_p50_ns": bat, "independent_over_batched": r_b}
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"schema": "chunkscope.bench-vs-scipy/1", "unit": "1e9 biquad-samples per second",
                       "chain": spec, "rounds": a.rounds, "rows": summary, "replay": replay}, f, indent=2)


if __name__ == "__main__":
    main()
