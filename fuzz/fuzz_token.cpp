// libFuzzer target: the reproduction-token parser (properties/token.cpp)
// on any string. A malformed token must be refused with a reason, never
// crash, leak or trip a sanitizer; a token it accepts must encode back to
// a token that decodes to the same fields. Built and run by scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "properties/token.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string why;
  const auto t = moacert::properties::Token::decode(text, &why);
  if (!t) {
    if (why.empty()) std::abort();  // a refusal always says why
    return 0;
  }
  const auto u = moacert::properties::Token::decode(t->encode(), &why);
  if (!u) std::abort();
  if (u->op != t->op || u->format != t->format || u->variant != t->variant ||
      u->rule.kind != t->rule.kind || std::memcmp(&u->rule.k, &t->rule.k, sizeof u->rule.k) != 0 ||
      u->seed != t->seed || u->index != t->index || u->size != t->size || u->path != t->path ||
      u->tiles != t->tiles || u->version != t->version || !(u->shape == t->shape))
    std::abort();
  return 0;
}
