#include "oracle/selection.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

#include "oracle/ops/table.hpp"

namespace moacert::oracle {

using moa::extent_t;

extent_t query_row_count(const Problem& p) {
  return oracle_op(p.op).query_row_count(p);
}

extent_t key_row_count(const Problem& p) {
  return oracle_op(p.op).key_row_count(p);
}

bool is_key_output(Op op, int out) {
  const std::string_view name = info(op).outputs[static_cast<std::size_t>(out)];
  const std::vector<std::string_view>& keys = oracle_op(op).key_outputs;
  return std::find(keys.begin(), keys.end(), name) != keys.end();
}

extent_t row_length(const Problem& p, int out) {
  const OpInfo& op = info(p.op);
  // lse is indexed by the row itself; every other output has the row's
  // elements along its last axis.
  if (op.outputs[static_cast<std::size_t>(out)] == "lse") return 1;
  const moa::Shape s = output_shapes(p)[static_cast<std::size_t>(out)];
  return s[s.rank() - 1];
}

namespace {

void sort_unique(std::vector<extent_t>& rows) {
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
}

void check_range(const std::vector<extent_t>& rows, extent_t count, const char* what,
                 const Problem& p) {
  for (extent_t r : rows) {
    if (r < 0 || r >= count) {
      throw std::invalid_argument(std::string(what) + " row " + std::to_string(r) +
                                  " is out of range: " + std::string(info(p.op).name) + " has " +
                                  std::to_string(count) + " " + what + " rows");
    }
  }
}

extent_t parse_index(std::string_view s, const std::string& text) {
  extent_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    throw std::invalid_argument("--rows \"" + text + "\": \"" + std::string(s) +
                                "\" is not a row index");
  }
  return v;
}

// "0,5..9" into rows; a range reaching past `count` is refused before it
// is expanded.
void parse_list(std::string_view list, const std::string& text, extent_t count,
                std::vector<extent_t>& rows) {
  if (list.empty()) throw std::invalid_argument("--rows \"" + text + "\": an empty list");
  while (true) {
    const std::size_t comma = std::min(list.find(','), list.size());
    const std::string_view item = list.substr(0, comma);
    const std::size_t dots = item.find("..");
    if (dots == std::string_view::npos) {
      rows.push_back(parse_index(item, text));
    } else {
      const extent_t lo = parse_index(item.substr(0, dots), text);
      const extent_t hi = parse_index(item.substr(dots + 2), text);
      if (lo > hi) {
        throw std::invalid_argument("--rows \"" + text + "\": the range " + std::string(item) +
                                    " has low > high");
      }
      if (hi >= count) {
        throw std::invalid_argument("--rows \"" + text + "\": the range " + std::string(item) +
                                    " ends past the last row, " + std::to_string(count - 1));
      }
      for (extent_t r = lo; r <= hi; ++r) rows.push_back(r);
    }
    if (comma == list.size()) return;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

Selection normalised(Selection s, const Problem& p) {
  sort_unique(s.query_rows);
  sort_unique(s.key_rows);
  check_range(s.query_rows, query_row_count(p), "query", p);
  if (!s.key_rows.empty() && key_row_count(p) == 0) {
    throw std::invalid_argument(std::string(info(p.op).name) +
                                " has no key rows (only attention.bwd and attention.fwdbwd do)");
  }
  check_range(s.key_rows, key_row_count(p), "key", p);
  return s;
}

Selection parse_selection(const std::string& text, const Problem& p) {
  Selection s;
  std::string_view rest = text;
  if (rest.empty()) throw std::invalid_argument("--rows: an empty selection");
  while (true) {
    const std::size_t semi = std::min(rest.find(';'), rest.size());
    std::string_view part = rest.substr(0, semi);
    std::vector<extent_t>* rows = &s.query_rows;
    if (part.substr(0, 2) == "q=") {
      part.remove_prefix(2);
    } else if (part.substr(0, 2) == "k=") {
      part.remove_prefix(2);
      rows = &s.key_rows;
    } else if (!part.empty() && !std::isdigit(static_cast<unsigned char>(part[0]))) {
      throw std::invalid_argument("--rows \"" + text + "\": \"" + std::string(part) +
                                  "\" is neither q=LIST nor k=LIST");
    }
    const bool keys = rows == &s.key_rows;
    if (keys && key_row_count(p) == 0) {
      throw std::invalid_argument("--rows \"" + text + "\": " + std::string(info(p.op).name) +
                                  " has no key rows (only attention.bwd and attention.fwdbwd do)");
    }
    parse_list(part, text, keys ? key_row_count(p) : query_row_count(p), *rows);
    if (semi == rest.size()) break;
    rest.remove_prefix(semi + 1);
  }
  try {
    return normalised(std::move(s), p);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("--rows \"" + text + "\": " + e.what());
  }
}

std::string str(const Selection& s) {
  auto list = [](const std::vector<extent_t>& rows) {
    std::string out;
    for (std::size_t k = 0; k < rows.size();) {
      std::size_t run = k;
      while (run + 1 < rows.size() && rows[run + 1] == rows[run] + 1) ++run;
      if (!out.empty()) out += ',';
      out += std::to_string(rows[k]);
      if (run > k) out += ".." + std::to_string(rows[run]);
      k = run + 1;
    }
    return out;
  };
  std::string out;
  if (!s.query_rows.empty()) out = "q=" + list(s.query_rows);
  if (!s.key_rows.empty()) out += (out.empty() ? "k=" : ";k=") + list(s.key_rows);
  return out;
}

}  // namespace moacert::oracle
