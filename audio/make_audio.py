#!/usr/bin/env python3
"""Regenerate the bundled audio files in this folder.

    python3 audio/make_audio.py

Needs python3-numpy, espeak-ng and sox on PATH. Every signal is built from
fixed parameters and fixed random seeds, so running the script again gives
the same samples (and, with the same tool versions, the same bytes).

Files written next to this script:

  mix_stereo_48k.flac   10 s, stereo, 48 kHz, 16-bit FLAC test mix
  speech_mono_44k1.wav  a few seconds of synthetic speech, mono, 44.1 kHz, 16-bit
  impulse_mono_48k.wav  1 s, mono, 48 kHz, 16-bit: 0.5 at sample 0, zeros after
"""

import os
import shutil
import subprocess
import sys
import tempfile
import wave

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

MIX_RATE = 48000
MIX_SECONDS = 10.0
PEAK_DBFS = -3.0
PEAK = 10.0 ** (PEAK_DBFS / 20.0)  # ~0.708

SPEECH_RATE = 44100
SPEECH_TEXT = (
    "A low pass filter keeps the bass and removes the hiss. "
    "A high pass filter does the opposite."
)

IMPULSE_RATE = 48000
IMPULSE_VALUE = 0.5


def to_int16(x):
    """Float in [-1, 1) to int16 with the usual 1/32768 scale (0.5 -> 16384)."""
    q = np.round(np.asarray(x, dtype=np.float64) * 32768.0)
    return np.clip(q, -32768, 32767).astype("<i2")


def write_wav16(path, samples, rate):
    """samples: float array, shape (n,) or (n, channels)."""
    data = np.asarray(samples, dtype=np.float64)
    if data.ndim == 1:
        data = data[:, None]
    channels = data.shape[1]
    with wave.open(path, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(to_int16(data).tobytes())


def run(cmd):
    subprocess.run(cmd, check=True)


def fade(n, rate, ms=5.0):
    """Window of length n with raised-cosine fade in/out of `ms` milliseconds."""
    k = min(int(rate * ms / 1000.0), n // 2)
    w = np.ones(n)
    if k > 0:
        ramp = 0.5 - 0.5 * np.cos(np.pi * np.arange(k) / k)
        w[:k] = ramp
        w[n - k:] = ramp[::-1]
    return w


def band_noise(rng, n, rate, lo, hi):
    """White Gaussian noise restricted to [lo, hi] Hz by an FFT mask, unit RMS."""
    x = rng.standard_normal(n)
    spec = np.fft.rfft(x)
    f = np.fft.rfftfreq(n, 1.0 / rate)
    spec[(f < lo) | (f > hi)] = 0.0
    y = np.fft.irfft(spec, n)
    return y / np.sqrt(np.mean(y * y))


def make_mix():
    """Stereo test mix; section boundaries in seconds:

      0.00-0.25  silence
      0.25-3.00  sine 440 Hz left, 1000 Hz right, at -3 dBFS peak
      3.00-3.25  silence
      3.25-5.00  noise bursts (250 ms on / 250 ms off), -24 dBFS RMS:
                 white, band-limited 300-3400 Hz, white, band-limited 2-8 kHz
      5.00-5.25  silence
      5.25-9.75  logarithmic sine sweep 20 Hz -> 20 kHz, both channels, -3 dBFS
      9.75-10.0  silence
    """
    rate = MIX_RATE
    n_total = int(round(MIX_SECONDS * rate))
    out = np.zeros((n_total, 2))

    def span(t0, t1):
        return int(round(t0 * rate)), int(round(t1 * rate))

    # Tones.
    a, b = span(0.25, 3.00)
    t = np.arange(b - a) / rate
    w = fade(b - a, rate)
    out[a:b, 0] = PEAK * np.sin(2 * np.pi * 440.0 * t) * w
    out[a:b, 1] = PEAK * np.sin(2 * np.pi * 1000.0 * t) * w

    # Noise bursts, independent per channel, fixed seed.
    rng = np.random.default_rng(20240601)
    noise_rms = 10.0 ** (-24.0 / 20.0)
    bursts = [
        (3.25, 3.50, None),
        (3.75, 4.00, (300.0, 3400.0)),
        (4.25, 4.50, None),
        (4.75, 5.00, (2000.0, 8000.0)),
    ]
    for t0, t1, band in bursts:
        a, b = span(t0, t1)
        n = b - a
        w = fade(n, rate)
        for ch in range(2):
            if band is None:
                x = rng.standard_normal(n)
            else:
                x = band_noise(rng, n, rate, band[0], band[1])
            # Keep noise peaks well under the tone peak.
            x = np.clip(x * noise_rms, -0.5 * PEAK, 0.5 * PEAK)
            out[a:b, ch] = x * w

    # Exponential (log) sweep 20 Hz -> 20 kHz.
    a, b = span(5.25, 9.75)
    n = b - a
    dur = n / rate
    f0, f1 = 20.0, 20000.0
    k = np.log(f1 / f0)
    t = np.arange(n) / rate
    phase = 2 * np.pi * f0 * dur / k * (np.exp(t / dur * k) - 1.0)
    sweep = PEAK * np.sin(phase) * fade(n, rate)
    out[a:b, 0] = sweep
    out[a:b, 1] = sweep

    # Peak is -3 dBFS by construction; make it exact.
    out *= PEAK / np.max(np.abs(out))
    return out


def make_speech(tmp, path):
    raw = os.path.join(tmp, "speech_espeak.wav")
    run(["espeak-ng", "-v", "en", "-s", "150", "-w", raw, SPEECH_TEXT])
    # Resample to 44.1 kHz, normalise the peak to -3 dBFS, no dither (repeatable).
    run(["sox", "-V1", "-D", raw, "-r", str(SPEECH_RATE), "-b", "16", "-c", "1",
         "-e", "signed-integer", path, "rate", "-v", str(SPEECH_RATE),
         "gain", "-n", str(PEAK_DBFS)])


def make_impulse(path):
    x = np.zeros(IMPULSE_RATE)
    x[0] = IMPULSE_VALUE
    write_wav16(path, x, IMPULSE_RATE)


def main():
    for tool in ("sox", "espeak-ng"):
        if shutil.which(tool) is None:
            sys.exit(f"make_audio.py: '{tool}' not found on PATH")

    with tempfile.TemporaryDirectory() as tmp:
        mix_wav = os.path.join(tmp, "mix.wav")
        write_wav16(mix_wav, make_mix(), MIX_RATE)
        mix_flac = os.path.join(HERE, "mix_stereo_48k.flac")
        run(["sox", "-V1", "-D", mix_wav,
             "--comment", "", "-C", "8", mix_flac])

        make_speech(tmp, os.path.join(HERE, "speech_mono_44k1.wav"))

    make_impulse(os.path.join(HERE, "impulse_mono_48k.wav"))

    for name in ("mix_stereo_48k.flac", "speech_mono_44k1.wav",
                 "impulse_mono_48k.wav"):
        p = os.path.join(HERE, name)
        print(f"{name}: {os.path.getsize(p)} bytes")


if __name__ == "__main__":
    main()
