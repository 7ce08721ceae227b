#include "src/render/html.hpp"

namespace chunkscope {

std::string html_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size() + 8);
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string render_html(const std::variant<RunReport, CompareReport>& report) {
  return std::visit([](const auto& r) { return render_html(r); }, report);
}

}  // namespace chunkscope
