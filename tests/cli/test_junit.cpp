// reports::xml_escape over arbitrary bytes: what it writes is well-formed
// XML character data (no markup, only XML 1.0 characters, UTF-8), and a
// parser's unescaping gives back every string XML can hold.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "reports/junit.hpp"

namespace {

using moacert::reports::xml_escape;

// Well-formed UTF-8 by the Unicode standard's table of byte ranges (3-7),
// written independently of the code-point arithmetic of reports/junit.cpp.
bool well_formed_utf8(const std::string& s) {
  const auto in = [](unsigned char b, int lo, int hi) { return b >= lo && b <= hi; };
  for (std::size_t i = 0; i < s.size();) {
    const auto at = [&](std::size_t k) {
      return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0;
    };
    const unsigned char b = at(0);
    std::size_t n = 0;
    if (b <= 0x7F)
      n = 1;
    else if (in(b, 0xC2, 0xDF) && in(at(1), 0x80, 0xBF))
      n = 2;
    else if (b == 0xE0 && in(at(1), 0xA0, 0xBF) && in(at(2), 0x80, 0xBF))
      n = 3;
    else if ((in(b, 0xE1, 0xEC) || in(b, 0xEE, 0xEF)) && in(at(1), 0x80, 0xBF) &&
             in(at(2), 0x80, 0xBF))
      n = 3;
    else if (b == 0xED && in(at(1), 0x80, 0x9F) && in(at(2), 0x80, 0xBF))
      n = 3;
    else if (b == 0xF0 && in(at(1), 0x90, 0xBF) && in(at(2), 0x80, 0xBF) && in(at(3), 0x80, 0xBF))
      n = 4;
    else if (in(b, 0xF1, 0xF3) && in(at(1), 0x80, 0xBF) && in(at(2), 0x80, 0xBF) &&
             in(at(3), 0x80, 0xBF))
      n = 4;
    else if (b == 0xF4 && in(at(1), 0x80, 0x8F) && in(at(2), 0x80, 0xBF) && in(at(3), 0x80, 0xBF))
      n = 4;
    else
      return false;
    i += n;
  }
  return true;
}

const std::vector<std::pair<std::string, std::string>> kReferences = {
    {"&amp;", "&"},  {"&lt;", "<"},  {"&gt;", ">"},   {"&quot;", "\""},
    {"&apos;", "'"}, {"&#9;", "\t"}, {"&#10;", "\n"}, {"&#13;", "\r"}};

// What an XML parser reads back from the escaped text.
std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    bool replaced = false;
    for (const auto& [reference, c] : kReferences)
      if (s.compare(i, reference.size(), reference) == 0) {
        out += c;
        i += reference.size();
        replaced = true;
        break;
      }
    if (!replaced) out += s[i++];
  }
  return out;
}

rc::Gen<std::string> arbitrary_bytes() {
  return rc::gen::map(rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 256)),
                      [](const std::vector<int>& bytes) {
                        std::string s;
                        for (int b : bytes) s += static_cast<char>(b);
                        return s;
                      });
}

}  // namespace

RC_GTEST_PROP(XmlEscape, WritesWellFormedCharacterData, ()) {
  const std::string s = *arbitrary_bytes();
  const bool attribute = *rc::gen::arbitrary<bool>();
  const std::string x = xml_escape(s, attribute);
  RC_ASSERT(well_formed_utf8(x));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const unsigned char b = static_cast<unsigned char>(x[i]);
    RC_ASSERT(b != '<' && b != '>' && b != '"' && b != '\'');
    RC_ASSERT(b >= 0x20 || (!attribute && (b == '\t' || b == '\n')));
    if (b == '&') {
      bool known = false;
      for (const auto& [reference, c] : kReferences)
        known |= x.compare(i, reference.size(), reference) == 0;
      RC_ASSERT(known);
    }
  }
}

// Text XML can hold: characters from tab, newline, CR, markup, ASCII and
// all of Unicode but the surrogates, encoded in UTF-8.
rc::Gen<std::string> xml_text() {
  const auto code_point = rc::gen::weightedOneOf<std::uint32_t>(
      {{4, rc::gen::element<std::uint32_t>('\t', '\n', '\r', '&', '<', '>', '"', '\'')},
       {4, rc::gen::inRange<std::uint32_t>(0x20, 0x80)},
       {2, rc::gen::inRange<std::uint32_t>(0x80, 0xD800)},
       {1, rc::gen::inRange<std::uint32_t>(0xE000, 0x110000)}});
  return rc::gen::map(rc::gen::container<std::vector<std::uint32_t>>(code_point),
                      [](const std::vector<std::uint32_t>& cps) {
                        std::string s;
                        for (std::uint32_t c : cps) {
                          const auto byte = [&](std::uint32_t v) { s += static_cast<char>(v); };
                          if (c < 0x80) {
                            byte(c);
                          } else if (c < 0x800) {
                            byte(0xC0 | c >> 6), byte(0x80 | (c & 0x3F));
                          } else if (c < 0x10000) {
                            byte(0xE0 | c >> 12), byte(0x80 | (c >> 6 & 0x3F)),
                                byte(0x80 | (c & 0x3F));
                          } else {
                            byte(0xF0 | c >> 18), byte(0x80 | (c >> 12 & 0x3F));
                            byte(0x80 | (c >> 6 & 0x3F)), byte(0x80 | (c & 0x3F));
                          }
                        }
                        return s;
                      });
}

RC_GTEST_PROP(XmlEscape, AParserReadsBackWhatXmlCanHold, ()) {
  const std::string s = *xml_text();
  RC_ASSERT(well_formed_utf8(s));  // the generator's own law
  const bool attribute = *rc::gen::arbitrary<bool>();
  RC_ASSERT(unescape(xml_escape(s, attribute)) == s);
}

TEST(XmlEscape, NamesWhatXmlCannotHold) {
  // A byte that is not UTF-8 becomes U+FFFD; a control character \xNN.
  EXPECT_EQ(xml_escape("a\xff"
                       "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(xml_escape(std::string("a\0b\x1b", 4)), "a\\x00b\\x1b");
  EXPECT_EQ(xml_escape("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
}
