#pragma once
// Filter design: Butterworth sections identical to scipy.signal.butter(..., output='sos'),
// Audio EQ Cookbook biquads, gain, SOS files, stability checks and frequency response.
// Not real-time: allocates and throws InputError on bad input.
#include <array>
#include <complex>
#include <string>
#include <memory>
#include <vector>

#include "rt/hosted.hpp"
#include "src/chain_spec.hpp"

namespace chunkscope {

/// One second-order section as scipy writes it: b0 b1 b2 a0 a1 a2.
using Sos = std::array<double, 6>;

enum class BType { lowpass, highpass, bandpass, bandstop };

/// Digital Butterworth design, the same sections (order and pairing) as
/// scipy.signal.butter(order, wn_hz, btype, fs=fs, output='sos'). wn_hz has one edge for
/// lowpass/highpass, two for bandpass/bandstop; edges must lie in (0, fs/2).
std::vector<Sos> butter_sos(int order, const std::vector<double>& wn_hz, BType btype, double fs);

/// Audio EQ Cookbook biquad for peak, lowshelf, highshelf, notch, allpass, lp2, hp2, bp2.
/// q <= 0 picks the default 1/sqrt(2); slope > 0 uses the shelf slope S instead of q.
Sos cookbook_biquad(StageKind kind, double f0, double fs, double q, double gain_db, double slope);

/// Reads an SOS file: one section per line, six numbers "b0 b1 b2 a0 a1 a2" separated by
/// spaces, tabs or commas, '#' starts a comment. Checks a0 != 0 and stability; returns the
/// sections normalised to a0 = 1. Throws InputError naming the file and line.
std::vector<Sos> load_sos_file(const std::string& path);

/// True when both poles of the (normalised) section lie strictly inside the unit circle.
bool sos_stable(const Sos& s);

/// Section divided through by a0.
Sos normalized(const Sos& s);

/// Complex response of a cascade at frequency f (Hz) for sample rate fs.
std::complex<double> sos_response(const std::vector<Sos>& cascade, double f, double fs);

/// Magnitude response in dB.
double sos_response_db(const std::vector<Sos>& cascade, double f, double fs);

/// A designed stage: the spec plus its normalised sections (empty for spin/sleep).
struct StageDesign {
  StageSpec spec;
  std::vector<Sos> sections;
  bool gain_only = false;  // a pure gain stage: one section {g,0,0,1,0,0}
  std::shared_ptr<const HostedFactory> hosted;  // hosted stages (so:): the loaded, checked code
};

/// Designs one stage for sample rate fs. Throws InputError naming the stage.
StageDesign design_stage(const StageSpec& spec, double fs);

}  // namespace chunkscope
