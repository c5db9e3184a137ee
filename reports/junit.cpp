#include "reports/junit.hpp"

#include <cstdint>
#include <sstream>

#include <fmt/core.h>

namespace moacert::reports {

namespace {

// The length of the well-formed UTF-8 sequence at s[i], or 0 when there is
// none (a stray continuation byte, a truncated, overlong or surrogate
// sequence, or a code point past U+10FFFF).
std::size_t utf8_length(const std::string& s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = byte(i);
  std::size_t n = 0;
  std::uint32_t cp = 0;
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF)
    n = 2, cp = b & 0x1F;
  else if (b >= 0xE0 && b <= 0xEF)
    n = 3, cp = b & 0x0F;
  else if (b >= 0xF0 && b <= 0xF4)
    n = 4, cp = b & 0x07;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  const bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
  return overlong || surrogate || cp > 0x10FFFF ? 0 : n;
}

// What stands for ASCII byte `b`: a reference, the byte itself for a tab
// or newline in character data, or null when it is written as it is or
// cannot be written at all (control characters). A parser turns a raw tab or newline in an
// attribute value into a space, and a raw CR anywhere into a newline.
const char* character_reference(unsigned char b, bool attribute) {
  switch (b) {
    case '&':
      return "&amp;";
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    case '"':
      return "&quot;";
    case '\'':
      return "&apos;";
    case '\t':
      return attribute ? "&#9;" : "\t";
    case '\n':
      return attribute ? "&#10;" : "\n";
    case '\r':
      return "&#13;";
    default:
      return nullptr;
  }
}

// The failure message: why, the shrunk case, and the line that replays it.
std::string failure_text(const properties::Certificate& c) {
  std::string text = c.failure;
  if (c.case_files_run > 0) {
    text += "\n" + c.failure_case;  // a case file has no token: its name
  } else {
    if (!c.failure_case.empty()) text += "\n" + c.failure_case;
    text += "\nreproduce: " + (c.reproduce_command.empty() ? "moacert reproduce " + c.worst_token
                                                           : c.reproduce_command);
  }
  return text;
}

}  // namespace

std::string xml_escape(const std::string& text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    const std::size_t n = utf8_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD for a byte that is not UTF-8
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(text, i, n);
      i += n;
      continue;
    }
    if (const char* reference = character_reference(b, attribute))
      out += reference;
    else if (b < 0x20)
      out += fmt::format("\\x{:02x}", b);  // XML 1.0 cannot hold it at all
    else
      out += static_cast<char>(b);
    ++i;
  }
  return out;
}

std::string to_junit(const std::vector<properties::Certificate>& cs, const BuildInfo& build) {
  int failures = 0;
  double seconds = 0;
  for (const auto& c : cs) {
    failures += c.holds ? 0 : 1;
    seconds += c.seconds;
  }
  const std::string op = cs.empty() ? std::string() : std::string(info(cs.front().op).name);
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << fmt::format(
      "<testsuites name=\"moacert certify\" tests=\"{}\" failures=\"{}\" time=\"{:.3f}\">\n",
      cs.size(), failures, seconds);
  x << fmt::format(
      "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" "
      "time=\"{:.3f}\">\n",
      xml_escape(op), cs.size(), failures, seconds);
  x << "    <properties>\n";
  x << fmt::format("      <property name=\"moacert.version\" value=\"{}\"/>\n",
                   xml_escape(build.version));
  x << fmt::format("      <property name=\"moacert.build\" value=\"{}\"/>\n",
                   xml_escape(build.flags));
  x << "    </properties>\n";
  for (const auto& c : cs) {
    const std::string format(name(c.format));
    x << fmt::format("    <testcase classname=\"{}\" name=\"{}.{}\" time=\"{:.3f}\">\n",
                     xml_escape(op), xml_escape(c.variant), format, c.seconds);
    if (!c.holds) {
      const std::string text = failure_text(c);
      x << fmt::format("      <failure type=\"counterexample\" message=\"{}\">{}</failure>\n",
                       xml_escape(text, /*attribute=*/true), xml_escape(text));
    }
    const std::string ran = c.case_files_run > 0 ? fmt::format("{} case files", c.case_files_run)
                                                 : fmt::format("{} curated + {} random cases",
                                                               c.curated_run, c.random_run);
    x << fmt::format(
        "      <system-out>{} {} {}, rule {}, seed {}: {} ({}, worst error/allowed {:.3g}, worst "
        "case {})</system-out>\n",
        xml_escape(op), xml_escape(c.variant), format, xml_escape(c.rule.str()), c.seed,
        c.holds ? "holds" : "FAILS", ran, c.worst_ratio, xml_escape(c.worst_token));
    x << "    </testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

}  // namespace moacert::reports
