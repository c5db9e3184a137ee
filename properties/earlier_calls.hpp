// A failure that depends on earlier calls (docs/design.md#certify): a
// kernel whose calls run in a process kept from call to call
// (kernels::Variant::fresh_process: a plugin's worker, a worker command's
// process) may keep state there, a workspace or a cache, that an earlier
// call leaves and a later one reads. Its failing case alone, in a fresh
// process, holds; the calls that set it up are found, named in the reason
// and carried by the token (Token::setup), which a replay makes first.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "properties/token.hpp"

namespace moacert::properties {

// The most recent earlier calls tried one by one for the single call that
// sets a failure up, before all of them together.
inline constexpr std::size_t kSingleSetupTries = 16;

// Runs `setup`'s cases (of `token`'s certification) on `v` in a fresh
// process, in order, their outputs unjudged. False when a case cannot be
// made or the kernel faults on it.
bool run_setup(const kernels::Variant& v, const Token& token, const std::vector<Token::Call>& setup,
               int threads);

// The calls, among `earlier` (in the order they ran), after which
// `fails_again` (the failing case run once more and judged) fails in a
// fresh process: the most recent of the last kSingleSetupTries that does
// alone, else all of `earlier`; nullopt when neither does.
std::optional<std::vector<Token::Call>> find_setup(const kernels::Variant& v, const Token& token,
                                                   const std::vector<Token::Call>& earlier,
                                                   int threads,
                                                   const std::function<bool()>& fails_again);

// What such a failure adds to its reason: "depends on earlier calls: holds
// in a fresh worker, fails there after the call of random case 3 (rmsnorm
// f32 T=5 D=40 ...), which the token replays first".
std::string depends_words(const Token& token, const std::vector<Token::Call>& setup);

}  // namespace moacert::properties
