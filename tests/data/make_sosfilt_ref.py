#!/usr/bin/env python3
"""Make sosfilt_ref.json: reference outputs of scipy.signal.sosfilt.

    python3 tests/data/make_sosfilt_ref.py

Three Butterworth cascades (sections from scipy.signal.butter(..., output='sos'))
each filter the same deterministic input, from zero initial state, in float64:

    x[n] = 0.5*sin(2*pi*440*n/48000) + 0.25*sin(2*pi*9000*n/48000),
    n = 0 .. 1999, then x[0] += 1.0 (an impulse).

The JSON describes the input by that formula (so a test can regenerate it)
and also stores the samples, together with each chain's sections and
scipy.signal.sosfilt(sos, x), all floats at full precision. The input is
computed with math.sin in the order written above, as a C++ test would
compute 2.0*pi*440.0*n/48000.0 with std::sin.

The committed sosfilt_ref.json is what the C++ tests read; running the tests
never needs SciPy. Rerun this only to refresh or extend the data.
"""

import json
import math
import os

import numpy as np
import scipy
from scipy import signal

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "sosfilt_ref.json")

FS = 48000.0
LENGTH = 2000
TONES = [(0.5, 440.0), (0.25, 9000.0)]  # (amplitude, frequency Hz)
IMPULSE_INDEX = 0
IMPULSE_AMPLITUDE = 1.0
FORMULA = ("x[n] = 0.5*sin(2*pi*440*n/48000) + 0.25*sin(2*pi*9000*n/48000) "
           "for n in 0..1999, then x[0] += 1.0")


def make_input():
    x = []
    for n in range(LENGTH):
        v = 0.0
        for amp, freq in TONES:
            v += amp * math.sin(2.0 * math.pi * freq * n / FS)
        x.append(v)
    x[IMPULSE_INDEX] += IMPULSE_AMPLITUDE
    return np.array(x, dtype=np.float64)


def chains():
    return [
        ("lowpass4_1k",
         "butter(4, 1000, 'lowpass', fs=48000)",
         signal.butter(4, 1000.0, "lowpass", fs=FS, output="sos")),
        ("highpass2_80_lowpass8_12k",
         "butter(2, 80, 'highpass', fs=48000) then butter(8, 12000, 'lowpass', fs=48000)",
         np.vstack([signal.butter(2, 80.0, "highpass", fs=FS, output="sos"),
                    signal.butter(8, 12000.0, "lowpass", fs=FS, output="sos")])),
        ("bandpass3_500_5k",
         "butter(3, [500, 5000], 'bandpass', fs=48000)",
         signal.butter(3, [500.0, 5000.0], "bandpass", fs=FS, output="sos")),
    ]


def floats(a):
    return [float(v) for v in a]


def main():
    x = make_input()
    out_chains = []
    for name, design, sos in chains():
        y = signal.sosfilt(sos, x)
        out_chains.append({
            "name": name,
            "design": design,
            "sos": [floats(row) for row in sos],
            "y": floats(y),
        })

    doc = {
        "generator": "scipy.signal.sosfilt(sos, x)",
        "scipy_version": scipy.__version__,
        "input": {
            "formula": FORMULA,
            "fs": FS,
            "length": LENGTH,
            "tones": [{"amplitude": a, "freq": f} for a, f in TONES],
            "impulse": {"index": IMPULSE_INDEX, "amplitude": IMPULSE_AMPLITUDE},
            "x": floats(x),
        },
        "chains": out_chains,
    }
    with open(OUT, "w") as f:
        json.dump(doc, f, allow_nan=False)
        f.write("\n")

    with open(OUT) as f:
        assert json.load(f) == doc
    print(f"{OUT}: {len(out_chains)} chains x {LENGTH} samples")


if __name__ == "__main__":
    main()
