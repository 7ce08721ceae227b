#include "src/filter_design.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <numbers>
#include <numeric>
#include <sstream>

#include "src/errors.hpp"
#include "src/hosted_faust.hpp"
#include "src/hosted_ladspa.hpp"
#include "src/hosted_lv2.hpp"
#include "src/hosted_so.hpp"
#include "src/io/input_file.hpp"

namespace chunkscope {
namespace {

using cplx = std::complex<double>;
using cvec = std::vector<cplx>;
constexpr double kPi = std::numbers::pi;

bool is_real(const cplx& c) { return c.imag() == 0.0; }

// Complex division exactly as numpy's ufunc does it (Smith's method), so that the poles
// and zeros agree with scipy to the last bit and ties in the pairing break the same way.
cplx npdiv(const cplx& a, const cplx& b) {
  const double ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  if (std::fabs(br) >= std::fabs(bi)) {
    if (br == 0 && bi == 0) return {ar / std::fabs(br), ai / std::fabs(br)};
    const double rat = bi / br;
    const double scl = 1.0 / (br + bi * rat);
    return {(ar + ai * rat) * scl, (ai - ar * rat) * scl};
  }
  const double rat = br / bi;
  const double scl = 1.0 / (bi + br * rat);
  return {(ar * rat + ai) * scl, (ai * rat - ar) * scl};
}
cplx npmul(const cplx& a, const cplx& b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

cplx prod(const cvec& v) {
  cplx r{1.0, 0.0};
  for (const auto& x : v) r = npmul(r, x);
  return r;
}

// ---- the scipy zpk -> sos path, step for step (scipy.signal._filter_design) ----

// _cplxreal: one element of each conjugate pair (positive imaginary part, sorted by real
// part, runs of equal real part sorted by |imag|), then the real elements sorted.
cvec cplxreal(cvec z) {
  if (z.empty()) return z;
  const double tol = 100 * std::numeric_limits<double>::epsilon();
  std::stable_sort(z.begin(), z.end(), [](const cplx& a, const cplx& b) {
    if (a.real() != b.real()) return a.real() < b.real();
    return std::abs(a.imag()) < std::abs(b.imag());
  });
  cvec zr, zp, zn;
  for (const auto& x : z) {
    if (std::abs(x.imag()) <= tol * std::abs(x))
      zr.emplace_back(x.real(), 0.0);
    else if (x.imag() > 0)
      zp.push_back(x);
    else
      zn.push_back(x);
  }
  if (zp.size() != zn.size()) throw std::logic_error("cplxreal: unmatched complex values");
  // runs of (approximately) equal real part: sort each run by |imag|
  auto sort_runs = [&](cvec& v) {
    std::size_t i = 0;
    while (i < zp.size()) {
      std::size_t j = i;
      while (j + 1 < zp.size() && (zp[j + 1].real() - zp[j].real()) <= tol * std::abs(zp[j])) ++j;
      if (j > i)
        std::stable_sort(v.begin() + static_cast<long>(i), v.begin() + static_cast<long>(j) + 1,
                         [](const cplx& a, const cplx& b) { return std::abs(a.imag()) < std::abs(b.imag()); });
      i = j + 1;
    }
  };
  sort_runs(zn);
  sort_runs(zp);
  cvec out;
  for (std::size_t i = 0; i < zp.size(); ++i) out.push_back((zp[i] + std::conj(zn[i])) / 2.0);
  out.insert(out.end(), zr.begin(), zr.end());
  return out;
}

std::size_t idx_worst(const cvec& p) {
  std::size_t best = 0;
  double bv = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double v = std::abs(1.0 - std::abs(p[i]));
    if (v < bv) {
      bv = v;
      best = i;
    }
  }
  return best;
}

enum class Which { real, complex, any };

std::size_t nearest_idx(const cvec& fro, const cplx& to, Which which) {
  std::vector<std::size_t> order(fro.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return std::abs(fro[a] - to) < std::abs(fro[b] - to); });
  for (auto i : order) {
    if (which == Which::any) return i;
    if ((which == Which::real) == is_real(fro[i])) return i;
  }
  throw std::logic_error("zpk2sos: no zero of the requested kind");
}

// np.poly of up to two roots, real part.
std::array<double, 3> poly(const cvec& r) {
  cvec a{1.0};
  for (const auto& root : r) {
    cvec n(a.size() + 1, 0.0);
    for (std::size_t i = 0; i < a.size(); ++i) {
      n[i] += a[i];
      n[i + 1] += npmul(a[i], -root);
    }
    a = n;
  }
  std::array<double, 3> out{0, 0, 0};
  // right-aligned as in _single_zpksos: sos[3-len(b):3] = b
  for (std::size_t i = 0; i < a.size(); ++i) out[3 - a.size() + i] = a[i].real();
  return out;
}

Sos single_zpksos(const cvec& z, const cvec& p) {
  const auto b = poly(z);
  const auto a = poly(p);
  return {b[0], b[1], b[2], a[0], a[1], a[2]};
}

std::vector<Sos> zpk2sos(cvec z, cvec p, double k) {
  // pairing='nearest', digital
  if (z.size() < p.size()) z.resize(p.size(), 0.0);
  if (p.size() < z.size()) p.resize(z.size(), 0.0);
  const std::size_t n_sections = (std::max(p.size(), z.size()) + 1) / 2;
  if (p.size() % 2 == 1) {
    p.emplace_back(0.0);
    z.emplace_back(0.0);
  }
  z = cplxreal(z);
  p = cplxreal(p);
  std::vector<Sos> sos(n_sections, Sos{0, 0, 0, 0, 0, 0});
  auto erase = [](cvec& v, std::size_t i) { v.erase(v.begin() + static_cast<long>(i)); };
  auto count_real = [](const cvec& v) { return std::count_if(v.begin(), v.end(), is_real); };
  for (std::size_t si1 = n_sections; si1-- > 0;) {
    const std::size_t si = si1;
    const std::size_t p1_idx = idx_worst(p);
    const cplx p1 = p[p1_idx];
    erase(p, p1_idx);
    if (is_real(p1) && count_real(p) == 0) {
      // special case (1): last remaining real pole
      const auto z1_idx = nearest_idx(z, p1, Which::real);
      const cplx z1 = z[z1_idx];
      erase(z, z1_idx);
      sos[si] = single_zpksos({z1, 0.0}, {p1, 0.0});
    } else if (p.size() + 1 == z.size() && !is_real(p1) && count_real(p) == 1 && count_real(z) == 1) {
      // special case (2): must pair with a complex zero
      const auto z1_idx = nearest_idx(z, p1, Which::complex);
      const cplx z1 = z[z1_idx];
      erase(z, z1_idx);
      sos[si] = single_zpksos({z1, std::conj(z1)}, {p1, std::conj(p1)});
    } else {
      cplx p2;
      if (is_real(p1)) {
        cvec reals;
        std::vector<std::size_t> ridx;
        for (std::size_t i = 0; i < p.size(); ++i)
          if (is_real(p[i])) {
            reals.push_back(p[i]);
            ridx.push_back(i);
          }
        const std::size_t p2_idx = ridx[idx_worst(reals)];
        p2 = p[p2_idx];
        erase(p, p2_idx);
      } else {
        p2 = std::conj(p1);
      }
      if (!z.empty()) {
        const auto z1_idx = nearest_idx(z, p1, Which::any);
        const cplx z1 = z[z1_idx];
        erase(z, z1_idx);
        if (!is_real(z1)) {
          sos[si] = single_zpksos({z1, std::conj(z1)}, {p1, p2});
        } else if (!z.empty()) {
          const auto z2_idx = nearest_idx(z, p1, Which::real);
          const cplx z2 = z[z2_idx];
          erase(z, z2_idx);
          sos[si] = single_zpksos({z1, z2}, {p1, p2});
        } else {
          sos[si] = single_zpksos({z1}, {p1, p2});
        }
      } else {
        sos[si] = single_zpksos({}, {p1, p2});
      }
    }
  }
  for (int i = 0; i < 3; ++i) sos[0][static_cast<std::size_t>(i)] *= k;
  return sos;
}

}  // namespace

std::vector<Sos> butter_sos(int order, const std::vector<double>& wn_hz, BType btype, double fs) {
  if (order < 1 || order > 16) throw InputError(fmt::format("butterworth: order {} is out of range 1..16", order));
  const bool band = btype == BType::bandpass || btype == BType::bandstop;
  if (wn_hz.size() != (band ? 2u : 1u)) throw InputError("butterworth: wrong number of edge frequencies");
  std::vector<double> wn;
  for (double f : wn_hz) {
    const double w = 2 * f / fs;
    if (!(w > 0 && w < 1))
      throw InputError(fmt::format("butterworth: {} Hz is not between 0 and Nyquist ({} Hz)", f, fs / 2));
    wn.push_back(w);
  }
  // buttap
  cvec z, p;
  for (int m = -order + 1; m < order; m += 2) {
    // numpy: (1j*pi*m) / (2N) multiplies by the reciprocal of 2N
    const double theta = (kPi * m) * (1.0 / (2.0 * order));
    p.push_back(-cplx(std::cos(theta), std::sin(theta)));
  }
  double k = 1.0;
  // pre-warp (fs = 2 in normalised units)
  const double fs2n = 2.0;
  std::vector<double> warped;
  for (double w : wn) warped.push_back(2 * fs2n * std::tan(kPi * w / fs2n));
  const auto degree = static_cast<int>(p.size() - z.size());
  if (btype == BType::lowpass) {
    const double wo = warped[0];
    for (auto& x : z) x *= wo;
    for (auto& x : p) x *= wo;
    k *= std::pow(wo, degree);
  } else if (btype == BType::highpass) {
    const double wo = warped[0];
    const cplx gain_fix = npdiv(prod([&] { cvec t; for (auto x : z) t.push_back(-x); return t; }()),
                                prod([&] { cvec t; for (auto x : p) t.push_back(-x); return t; }()));
    for (auto& x : z) x = npdiv(wo, x);
    for (auto& x : p) x = npdiv(wo, x);
    for (int i = 0; i < degree; ++i) z.emplace_back(0.0);
    k *= gain_fix.real();
  } else {
    const double bw = warped[1] - warped[0];
    const double wo = std::sqrt(warped[0] * warped[1]);
    if (btype == BType::bandpass) {
      cvec zl, pl;
      for (auto x : z) zl.push_back(npdiv(npmul(x, bw), 2.0));
      for (auto x : p) pl.push_back(npdiv(npmul(x, bw), 2.0));
      cvec zb, pb;
      for (auto x : zl) zb.push_back(x + std::sqrt(npmul(x, x) - wo * wo));
      for (auto x : zl) zb.push_back(x - std::sqrt(npmul(x, x) - wo * wo));
      for (auto x : pl) pb.push_back(x + std::sqrt(npmul(x, x) - wo * wo));
      for (auto x : pl) pb.push_back(x - std::sqrt(npmul(x, x) - wo * wo));
      for (int i = 0; i < degree; ++i) zb.emplace_back(0.0);
      z = zb;
      p = pb;
      k *= std::pow(bw, degree);
    } else {
      const cplx gain_fix = npdiv(prod([&] { cvec t; for (auto x : z) t.push_back(-x); return t; }()),
                                  prod([&] { cvec t; for (auto x : p) t.push_back(-x); return t; }()));
      cvec zh, ph;
      for (auto x : z) zh.push_back(npdiv(bw / 2.0, x));
      for (auto x : p) ph.push_back(npdiv(bw / 2.0, x));
      cvec zb, pb;
      for (auto x : zh) zb.push_back(x + std::sqrt(npmul(x, x) - wo * wo));
      for (auto x : zh) zb.push_back(x - std::sqrt(npmul(x, x) - wo * wo));
      for (auto x : ph) pb.push_back(x + std::sqrt(npmul(x, x) - wo * wo));
      for (auto x : ph) pb.push_back(x - std::sqrt(npmul(x, x) - wo * wo));
      for (int i = 0; i < degree; ++i) zb.emplace_back(0.0, wo);
      for (int i = 0; i < degree; ++i) zb.emplace_back(0.0, -wo);
      z = zb;
      p = pb;
      k *= gain_fix.real();
    }
  }
  // bilinear_zpk with fs = 2
  {
    const double f2 = 2.0 * fs2n;
    const auto deg = static_cast<int>(p.size() - z.size());
    cvec a, b;
    for (auto x : z) a.push_back(f2 - x);
    for (auto x : p) b.push_back(f2 - x);
    const cplx kf = npdiv(prod(a), prod(b));
    for (auto& x : z) x = npdiv(f2 + x, f2 - x);
    for (auto& x : p) x = npdiv(f2 + x, f2 - x);
    for (int i = 0; i < deg; ++i) z.emplace_back(-1.0);
    k *= kf.real();
  }
  return zpk2sos(z, p, k);
}

Sos cookbook_biquad(StageKind kind, double f0, double fs, double q, double gain_db, double slope) {
  if (q <= 0) q = 1.0 / std::numbers::sqrt2;
  const double w0 = 2 * kPi * f0 / fs;
  const double cw = std::cos(w0), sw = std::sin(w0);
  const double A = std::pow(10.0, gain_db / 40.0);
  double alpha = sw / (2 * q);
  if ((kind == StageKind::lowshelf || kind == StageKind::highshelf) && slope > 0) {
    const double r = (A + 1 / A) * (1 / slope - 1) + 2;
    if (r <= 0) throw InputError(fmt::format("shelf slope s={} is too steep for gain {} dB", slope, gain_db));
    alpha = sw / 2 * std::sqrt(r);
  }
  const double sA = std::sqrt(A);
  switch (kind) {
    case StageKind::lp2: return {(1 - cw) / 2, 1 - cw, (1 - cw) / 2, 1 + alpha, -2 * cw, 1 - alpha};
    case StageKind::hp2: return {(1 + cw) / 2, -(1 + cw), (1 + cw) / 2, 1 + alpha, -2 * cw, 1 - alpha};
    case StageKind::bp2: return {alpha, 0, -alpha, 1 + alpha, -2 * cw, 1 - alpha};
    case StageKind::notch: return {1, -2 * cw, 1, 1 + alpha, -2 * cw, 1 - alpha};
    case StageKind::allpass: return {1 - alpha, -2 * cw, 1 + alpha, 1 + alpha, -2 * cw, 1 - alpha};
    case StageKind::peak:
      return {1 + alpha * A, -2 * cw, 1 - alpha * A, 1 + alpha / A, -2 * cw, 1 - alpha / A};
    case StageKind::lowshelf:
      return {A * ((A + 1) - (A - 1) * cw + 2 * sA * alpha), 2 * A * ((A - 1) - (A + 1) * cw),
              A * ((A + 1) - (A - 1) * cw - 2 * sA * alpha),  (A + 1) + (A - 1) * cw + 2 * sA * alpha,
              -2 * ((A - 1) + (A + 1) * cw),                  (A + 1) + (A - 1) * cw - 2 * sA * alpha};
    case StageKind::highshelf:
      return {A * ((A + 1) + (A - 1) * cw + 2 * sA * alpha), -2 * A * ((A - 1) + (A + 1) * cw),
              A * ((A + 1) + (A - 1) * cw - 2 * sA * alpha),  (A + 1) - (A - 1) * cw + 2 * sA * alpha,
              2 * ((A - 1) - (A + 1) * cw),                   (A + 1) - (A - 1) * cw - 2 * sA * alpha};
    default: throw std::logic_error("cookbook_biquad: not a cookbook stage");
  }
}

Sos normalized(const Sos& s) {
  const double a0 = s[3];
  return {s[0] / a0, s[1] / a0, s[2] / a0, 1.0, s[4] / a0, s[5] / a0};
}

bool sos_stable(const Sos& s0) {
  const Sos s = normalized(s0);
  const double a1 = s[4], a2 = s[5];
  // Both roots of z^2 + a1 z + a2 strictly inside the unit circle (Jury conditions).
  return std::fabs(a2) < 1.0 && std::fabs(a1) < 1.0 + a2;
}

std::vector<Sos> load_sos_file(const std::string& path) {
  std::istringstream in(read_text_file_bounded(path, kSosFileLimit, fmt::format("sos file '{}'", path)));
  std::vector<Sos> out;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (auto h = line.find('#'); h != std::string::npos) line.erase(h);
    for (char& c : line)
      if (c == ',' || c == '\t' || c == ';') c = ' ';
    std::istringstream ss(line);
    std::vector<double> row;
    std::string tok;
    while (ss >> tok) row.push_back(parse_number(tok, fmt::format("sos file '{}' line {}", path, lineno)));
    if (row.empty()) continue;
    if (row.size() != 6)
      throw InputError(fmt::format("sos file '{}' line {}: {} columns, expected 6 (b0 b1 b2 a0 a1 a2)", path,
                                   lineno, row.size()));
    Sos s{row[0], row[1], row[2], row[3], row[4], row[5]};
    if (s[3] == 0.0) throw InputError(fmt::format("sos file '{}' line {}: a0 is 0", path, lineno));
    if (!sos_stable(s))
      throw InputError(fmt::format("sos file '{}' line {}: unstable section (a pole on or outside the unit circle)",
                                   path, lineno));
    out.push_back(normalized(s));
  }
  if (in.bad()) throw InputError(fmt::format("sos file '{}': read error", path));
  if (out.empty()) throw InputError(fmt::format("sos file '{}': no sections", path));
  return out;
}

std::complex<double> sos_response(const std::vector<Sos>& cascade, double f, double fs) {
  const double w = 2 * kPi * f / fs;
  const cplx z1 = std::polar(1.0, -w);
  const cplx z2 = z1 * z1;
  cplx h{1.0, 0.0};
  for (const auto& s : cascade) h *= (s[0] + s[1] * z1 + s[2] * z2) / (s[3] + s[4] * z1 + s[5] * z2);
  return h;
}

double sos_response_db(const std::vector<Sos>& cascade, double f, double fs) {
  return 20.0 * std::log10(std::max(std::abs(sos_response(cascade, f, fs)), 1e-300));
}

StageDesign design_stage(const StageSpec& spec, double fs) {
  StageDesign d;
  d.spec = spec;
  const std::string where = fmt::format("chain stage '{}'", spec.text);
  const double nyq = fs / 2;
  for (double f : spec.freqs)
    if (f >= nyq)
      throw InputError(fmt::format("{}: {} Hz is not below Nyquist ({} Hz at rate {})", where, f, nyq, fs));
  switch (spec.kind) {
    case StageKind::lowpass: d.sections = butter_sos(spec.order, spec.freqs, BType::lowpass, fs); break;
    case StageKind::highpass: d.sections = butter_sos(spec.order, spec.freqs, BType::highpass, fs); break;
    case StageKind::bandpass: d.sections = butter_sos(spec.order, spec.freqs, BType::bandpass, fs); break;
    case StageKind::bandstop: d.sections = butter_sos(spec.order, spec.freqs, BType::bandstop, fs); break;
    case StageKind::peak:
    case StageKind::lowshelf:
    case StageKind::highshelf:
    case StageKind::notch:
    case StageKind::allpass:
    case StageKind::lp2:
    case StageKind::hp2:
    case StageKind::bp2:
      try {
        d.sections = {cookbook_biquad(spec.kind, spec.freqs.at(0), fs, spec.q, spec.gain_db, spec.slope)};
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}: {}", where, e.what()));
      }
      break;
    case StageKind::gain:
      d.sections = {Sos{std::pow(10.0, spec.gain_db / 20.0), 0, 0, 1, 0, 0}};
      d.gain_only = true;
      break;
    case StageKind::sos: d.sections = load_sos_file(spec.path); break;
    case StageKind::spin:
    case StageKind::sleep: break;
    case StageKind::so: d.hosted = load_so_stage(spec.path, spec.params, where); break;
    case StageKind::lv2: d.hosted = load_lv2_stage(spec.path, spec.params, where); break;
    case StageKind::ladspa: d.hosted = load_ladspa_stage(spec.path, spec.label, spec.params, where); break;
    case StageKind::faust: d.hosted = load_faust_stage(spec.path, spec.params, where); break;
  }
  for (auto& s : d.sections) {
    for (double c : s)
      if (!std::isfinite(c)) throw InputError(fmt::format("{}: design produced a non-finite coefficient", where));
    s = normalized(s);
    if (!sos_stable(s)) throw InputError(fmt::format("{}: design is unstable at rate {}", where, fs));
  }
  return d;
}

}  // namespace chunkscope
