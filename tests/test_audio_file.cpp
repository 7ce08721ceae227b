#include <doctest/doctest.h>

#include <filesystem>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <sndfile.h>

#include "src/io/audio_file.hpp"
#include "src/errors.hpp"
#include "tests/test_util.hpp"

using namespace chunkscope;
namespace fs = std::filesystem;

namespace {
std::string input_error(const std::string& path) {
  try {
    AudioReader r(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }
}  // namespace

TEST_CASE("the bundled audio reads as documented") {
  const auto dir = testutil::source_dir() + "/audio/";
  AudioReader mix(dir + "mix_stereo_48k.flac");
  CHECK(mix.info().rate == 48000);
  CHECK(mix.info().channels == 2);
  CHECK(mix.info().frames == 480000);
  AudioReader speech(dir + "speech_mono_44k1.wav");
  CHECK(speech.info().rate == 44100);
  CHECK(speech.info().channels == 1);
  std::vector<float> buf(1000);
  std::int64_t total = 0, got;
  while ((got = speech.read(buf.data(), 1000)) > 0) total += got;
  CHECK(total == speech.info().frames);
}

TEST_CASE("bad input files: missing, empty, not audio, truncated header, truncated data") {
  testutil::TempDir td;
  CHECK(has(input_error(td.file("nope.wav")), "no such file"));
  std::ofstream(td.file("empty.wav")).close();
  CHECK(has(input_error(td.file("empty.wav")), "file is empty"));
  std::ofstream(td.file("text.wav")) << "this is not audio, just some words in a file\n";
  CHECK(has(input_error(td.file("text.wav")), "not a readable audio file"));
  CHECK(has(input_error(td.path().string()), "is a directory"));
  // a real WAV cut short: first inside the header, then inside the data
  std::vector<float> x(48000, 0.25f);
  testutil::write_wav(td.file("full.wav"), x, 1, 48000, true);
  const auto bytes = testutil::slurp(td.file("full.wav"));
  std::ofstream(td.file("head.wav"), std::ios::binary).write(bytes.data(), 30);
  CHECK(!input_error(td.file("head.wav")).empty());
  std::ofstream(td.file("half.wav"), std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size() / 2));
  CHECK(has(input_error(td.file("half.wav")), "truncated"));
  // header only: no frames
  testutil::write_wav(td.file("zero.wav"), {}, 1, 48000, true);
  CHECK(has(input_error(td.file("zero.wav")), "no audio frames"));
}

TEST_CASE("writer: nothing appears at the target until commit - failure leaves nothing behind") {
  testutil::TempDir td;
  const auto out = td.file("out.wav");
  {
    AudioWriter w(out, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 48000, 2);
    std::vector<float> x(200, 0.1f);
    w.write(x.data(), 100);
    CHECK(!fs::exists(out));
    // abandoned: destructor without commit
  }
  CHECK(!fs::exists(out));
  CHECK(fs::is_empty(td.path()));
  {
    AudioWriter w(out, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 48000, 2);
    std::vector<float> x(200, 0.1f);
    w.write(x.data(), 100);
    w.commit();
  }
  CHECK(fs::exists(out));
  AudioReader r(out);
  CHECK(r.info().frames == 100);
  CHECK_THROWS_AS(AudioWriter(td.file("no/such/dir/x.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 48000, 1), InputError);
}

TEST_CASE("output format follows the extension, else the input's") {
  const int wav16 = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
  CHECK(output_format_for("x.wav", wav16, 2, 48000) == wav16);
  CHECK((output_format_for("x.flac", wav16, 2, 48000) & SF_FORMAT_TYPEMASK) == SF_FORMAT_FLAC);
  CHECK(output_format_for("x.flac", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 2, 48000) == (SF_FORMAT_FLAC | SF_FORMAT_PCM_24));
  CHECK(output_format_for("x.ogg", wav16, 2, 48000) == (SF_FORMAT_OGG | SF_FORMAT_VORBIS));
  CHECK(output_format_for("noext", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 1, 44100) == (SF_FORMAT_FLAC | SF_FORMAT_PCM_16));
  CHECK_THROWS_AS(output_format_for("x.xyz", wav16, 2, 48000), InputError);
}

TEST_CASE("process: samples beyond full scale are counted, integers clip them, --output-format float keeps them") {
  testutil::TempDir td;
  // a 16-bit sine at 0.8 of full scale, raised by 6 dB: the tops of every cycle go over
  std::vector<float> in(2 * 4800);
  for (std::size_t i = 0; i < in.size() / 2; ++i)
    in[2 * i] = in[2 * i + 1] = 0.8f * static_cast<float>(std::sin(2 * 3.141592653589793 * 440.0 * double(i) / 48000));
  testutil::write_wav(td.file("in.wav"), in, 2, 48000, true);
  // the float file is the reference: it keeps every sample as the chain made it
  const auto f = testutil::run_cli({"process", td.file("in.wav"), td.file("float.wav"), "-c", "gain:6dB",
                                    "--output-format", "float"});
  REQUIRE_MESSAGE(f.rc == 0, f.err);
  const auto kept = testutil::read_all(td.file("float.wav"));
  std::size_t over = 0;
  double peak = 0;
  for (double x : kept) {
    over += std::fabs(x) > 1.0 ? 1 : 0;
    peak = std::max(peak, std::fabs(x));
  }
  REQUIRE(over > 0);
  CAPTURE(f.out);
  CHECK(f.out.find(fmt::format("beyond full scale: {} of {} samples", over, kept.size())) != std::string::npos);
  CHECK(f.out.find("kept as written") != std::string::npos);
  // the same run into the input's 16-bit format: the same count, said as clipped, and the file holds none over
  const auto p = testutil::run_cli({"process", td.file("in.wav"), td.file("pcm.wav"), "-c", "gain:6dB"});
  REQUIRE_MESSAGE(p.rc == 0, p.err);
  CAPTURE(p.out);
  CHECK(p.out.find(fmt::format("CLIPPED: {} of {} samples", over, kept.size())) != std::string::npos);
  CHECK(p.out.find(fmt::format("peak {:+.1f} dBFS", 20 * std::log10(peak))) != std::string::npos);
  std::size_t beyond = 0;
  for (double x : testutil::read_all(td.file("pcm.wav"))) beyond += std::fabs(x) > 1.0 ? 1 : 0;
  CHECK(beyond == 0);
  // no gain, no line
  const auto q = testutil::run_cli({"process", td.file("in.wav"), td.file("quiet.wav"), "-c", "gain:0dB"});
  REQUIRE_MESSAGE(q.rc == 0, q.err);
  CHECK(q.out.find("full scale") == std::string::npos);
  // bad values: one line naming the flag, exit 2, nothing written
  const auto bad = testutil::run_cli({"process", td.file("in.wav"), td.file("bad.wav"), "-c", "gain:6dB",
                                      "--output-format", "f32"});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("--output-format: 'f32' is not auto, float, double, pcm16, pcm24 or pcm32") != std::string::npos);
  const auto flac = testutil::run_cli({"process", td.file("in.wav"), td.file("f.flac"), "-c", "gain:6dB",
                                       "--output-format", "float"});
  CHECK(flac.rc == 2);
  CHECK(flac.err.find("output '") != std::string::npos);
  CHECK(flac.err.find("cannot hold") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(td.file("bad.wav")));
  CHECK_FALSE(std::filesystem::exists(td.file("f.flac")));
}

TEST_CASE("synth -o: the report counts the samples beyond full scale, and the finding says whether the file clipped them") {
  testutil::TempDir td;
  // a 0.5 sine raised by 9 dB peaks at 1.41: the tops of every cycle go over
  const std::vector<std::string> run = {"synth", "--duration", "0.2s", "--speed", "max", "-q", "-c", "gain:9dB"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = run;
    a.insert(a.end(), extra.begin(), extra.end());
    return testutil::run_cli(a);
  };
  // synth's input is float, so its output keeps the samples: the reference
  const auto f = with({"-o", td.file("float.wav"), "--json", td.file("float.json")});
  REQUIRE_MESSAGE(f.rc == 0, f.err);
  const auto kept = testutil::read_all(td.file("float.wav"));
  std::uint64_t over = 0;
  for (double x : kept) over += std::fabs(x) > 1.0 ? 1 : 0;
  REQUIRE(over > 0);
  const auto jf = testutil::load_json(td.file("float.json"));
  CHECK(jf["output"]["integer"] == false);
  CHECK(jf["output"]["samples"] == kept.size());
  CHECK(jf["output"]["over_full_scale"] == over);
  CHECK(jf["output"]["peak"].get<double>() == doctest::Approx(std::pow(10.0, 9.0 / 20) * 0.5).epsilon(0.01));
  bool info = false;
  for (const auto& x : jf["diagnosis"]) info = info || x["rule"] == "output_over_full_scale";
  CHECK(info);
  // into 16-bit samples: the same count, clipped, a warning that says how to keep them
  const auto p = with({"-o", td.file("pcm.wav"), "--output-format", "pcm16", "--json", td.file("pcm.json")});
  REQUIRE_MESSAGE(p.rc == 0, p.err);
  const auto jp = testutil::load_json(td.file("pcm.json"));
  CHECK(jp["output"]["integer"] == true);
  CHECK(jp["output"]["over_full_scale"] == over);
  bool warned = false;
  for (const auto& x : jp["diagnosis"])
    if (x["rule"] == "output_clipped") {
      warned = true;
      CHECK(x["severity"] == "warning");
      CHECK(x["evidence"]["over_full_scale"] == over);
      CHECK(x["next"].get<std::string>().find("--output-format float") != std::string::npos);
    }
  CHECK(warned);
  std::uint64_t beyond = 0;
  for (double x : testutil::read_all(td.file("pcm.wav"))) beyond += std::fabs(x) > 1.0 ? 1 : 0;
  CHECK(beyond == 0);
  // the terminal says it on its own line
  const auto t = testutil::run_cli({"synth", "--duration", "0.2s", "--speed", "max", "-c", "gain:9dB", "-o",
                                    td.file("t.wav"), "--output-format", "pcm24"});
  REQUIRE_MESSAGE(t.rc == 0, t.err);
  CHECK(t.out.find(fmt::format("output     {} of {} samples beyond full scale", over, kept.size())) != std::string::npos);
  CHECK(t.out.find("CLIPPED in the integer samples of") != std::string::npos);
  // no file, no format: one line naming the flag, exit 2
  const auto bad = with({"--output-format", "float"});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("--output-format: float needs --output") != std::string::npos);
}
