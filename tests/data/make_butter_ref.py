#!/usr/bin/env python3
"""Make butter_ref.json: reference Butterworth designs from SciPy.

    python3 tests/data/make_butter_ref.py

Each case is scipy.signal.butter(N, Wn, btype, fs=fs, output='sos') for a
lowpass/highpass of order 1..16 or a bandpass/bandstop of order 1..8 (2N
poles), at cutoffs from very low to near Nyquist. Sections are stored as
scipy returns them (rows b0 b1 b2 a0 a1 a2, in scipy's order and pairing,
overall gain folded into the first row), floats at full precision.

The committed butter_ref.json is what the C++ tests read; running the tests
never needs SciPy. Rerun this only to refresh or extend the data.
"""

import json
import os

import scipy
from scipy import signal

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "butter_ref.json")

GENERATOR = "scipy.signal.butter(N, Wn, btype, fs=fs, output='sos')"

# (cutoff Hz, fs Hz) for lowpass and highpass, orders 1..16.
SINGLE_EDGE = [
    (1000.0, 48000.0),
    (80.0, 44100.0),
    (12000.0, 48000.0),
    (20.0, 96000.0),    # very low relative to fs
    (20000.0, 44100.0), # near Nyquist
]

# ((low, high) Hz, fs Hz) for bandpass and bandstop, orders 1..8.
BANDS = [
    ((300.0, 3400.0), 16000.0),
    ((1000.0, 2000.0), 48000.0),
    ((50.0, 15000.0), 44100.0),
    ((5000.0, 5100.0), 48000.0),  # narrow
]


def case(btype, order, wn, fs):
    sos = signal.butter(order, wn if len(wn) == 2 else wn[0], btype,
                        fs=fs, output="sos")
    return {
        "btype": btype,
        "order": order,
        "fs": float(fs),
        "wn": [float(f) for f in wn],
        "sos": [[float(v) for v in row] for row in sos],
    }


def main():
    cases = []
    for btype in ("lowpass", "highpass"):
        for f, fs in SINGLE_EDGE:
            for order in range(1, 17):
                cases.append(case(btype, order, [f], fs))
    for btype in ("bandpass", "bandstop"):
        for (lo, hi), fs in BANDS:
            for order in range(1, 9):
                cases.append(case(btype, order, [lo, hi], fs))

    # One case per line keeps the file readable and diffs small.
    with open(OUT, "w") as f:
        f.write("{\n")
        f.write('"generator": %s,\n' % json.dumps(GENERATOR))
        f.write('"scipy_version": %s,\n' % json.dumps(scipy.__version__))
        f.write('"cases": [\n')
        f.write(",\n".join(json.dumps(c, allow_nan=False) for c in cases))
        f.write("\n]\n}\n")

    # The file must parse back to exactly the same numbers.
    with open(OUT) as f:
        assert json.load(f)["cases"] == cases
    print(f"{OUT}: {len(cases)} cases")


if __name__ == "__main__":
    main()
