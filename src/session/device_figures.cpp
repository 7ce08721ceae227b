#include "src/session/device_figures.hpp"

#include "src/report/build.hpp"

namespace chunkscope {

DeviceSection device_section(const DeviceStream& stream, const EngineResult& er, const DeviceInfo& input,
                             const DeviceInfo* output, int latency_chunks, std::int64_t t0_ns) {
  DeviceSection d;
  d.duplex = output != nullptr;
  d.input = input.name;
  d.output = d.duplex ? output->name : std::string("none");
  d.host_api = input.host_api;
  d.latency_chunks = d.duplex ? latency_chunks : 0;
  d.budget_rule = d.duplex ? "K x D - margin: ready for output K callbacks after the input arrived" : "D - margin";
  d.reported_input_latency_s = stream.reported_input_latency();
  d.reported_output_latency_s = d.duplex ? stream.reported_output_latency() : 0.0;
  d.stream_rate = stream.actual_rate();
  d.callbacks = stream.callbacks();
  d.callback_period = summarize(stream.callback_period());
  d.xruns = stream.xruns();
  d.input_overflows = stream.input_overflows();
  d.output_underflows = stream.output_underflows();
  d.priming = stream.priming();
  for (const auto& x : stream.xrun_list())
    d.xrun_list.push_back({x.callback, static_cast<double>(x.at_ns - t0_ns) / 1e9, static_cast<std::uint64_t>(x.flags)});
  d.underruns = er.underruns;
  d.late_chunks = er.late_chunks;
  d.underrun_seqs = er.underrun_seqs;
  return d;
}

}  // namespace chunkscope
