#include "src/device_figures.hpp"

namespace chunkscope {

DeviceFigures device_figures(const DeviceStream& stream, const EngineResult& er, const DeviceInfo& input,
                             const DeviceInfo* output, int latency_chunks, std::int64_t t0_ns) {
  DeviceFigures d;
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
  const auto& h = stream.callback_period();
  d.callback_period.count = h.count();
  if (h.count()) {
    d.callback_period.min = h.min();
    d.callback_period.p50 = h.value_at_percentile(50);
    d.callback_period.p95 = h.value_at_percentile(95);
    d.callback_period.p99 = h.value_at_percentile(99);
    d.callback_period.max = h.max();
  }
  d.xruns = stream.xruns();
  d.input_overflows = stream.input_overflows();
  d.output_underflows = stream.output_underflows();
  d.priming = stream.priming();
  for (const auto& x : stream.xrun_list()) d.xrun_list.push_back({x.callback, (x.at_ns - t0_ns) / 1e9, x.flags});
  d.underruns = er.underruns;
  d.late_chunks = er.late_chunks;
  d.underrun_seqs = er.underrun_seqs;
  return d;
}

nlohmann::json device_json(const DeviceFigures& d) {
  using nlohmann::json;
  json xl = json::array();
  for (const auto& x : d.xrun_list) xl.push_back({{"callback", x.callback}, {"at_s", x.at_s}, {"flags", x.flags}});
  const auto& p = d.callback_period;
  json cb = {{"count", p.count}};
  if (p.count)
    cb = {{"count", p.count}, {"min", p.min}, {"p50", p.p50}, {"p95", p.p95}, {"p99", p.p99}, {"max", p.max}};
  return {{"input", d.input},
          {"output", d.output},
          {"host_api", d.host_api},
          {"duplex", d.duplex},
          {"latency_chunks", d.latency_chunks},
          {"budget_rule", d.budget_rule},
          {"reported_input_latency_s", d.reported_input_latency_s},
          {"reported_output_latency_s", d.reported_output_latency_s},
          {"stream_rate", d.stream_rate},
          {"callbacks", d.callbacks},
          {"callback_period", cb},
          {"xruns", d.xruns},
          {"input_overflows", d.input_overflows},
          {"output_underflows", d.output_underflows},
          {"priming", d.priming},
          {"xrun_list", xl},
          {"underruns", d.underruns},
          {"late_chunks", d.late_chunks},
          {"underrun_seqs", d.underrun_seqs}};
}

}  // namespace chunkscope
