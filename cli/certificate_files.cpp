// The files of one variant's certificate (cli/certificate_files.hpp):
// JSON, Markdown and the HTML page, with what only certify knows added —
// the SIMT emulator's counters and the kernel's declared envelope with
// what it excludes —, each written atomically.
#include "cli/certificate_files.hpp"

#include <string>
#include <tuple>

#include <fmt/core.h>

#include "files/atomic_write.hpp"
#include "properties/certify.hpp"

namespace moacert::cli {

namespace fs = std::filesystem;

reports::BuildInfo build_info() {
  return {MOACERT_VERSION, MOACERT_BUILD_FLAGS};
}

void write_page(const fs::path& path, const reports::Page& page) {
  files::write_atomically(path, page.html);
  if (!page.no_plots.empty())
    fmt::print(stderr, "moacert: {}: {} has no plots\n", page.no_plots, path.string());
}

CertificateFiles render_certificate(const properties::Certificate& cert,
                                    const std::string& simt_counters,
                                    const kernels::Variant& variant,
                                    const reports::Provenance& provenance) {
  CertificateFiles f{reports::to_json(cert, build_info(), provenance),
                     reports::to_markdown(cert, build_info(), provenance),
                     reports::to_html(cert, build_info(), provenance)};
  if (!simt_counters.empty()) {
    f.json["simt_counters"] = nlohmann::json::parse(simt_counters);
    f.markdown +=
        "\n## SIMT emulator counters (all calls)\n\n```json\n" + simt_counters + "\n```\n";
  }
  // A built-in variant, or a plugin declaring nothing, certificates as
  // before, but where its reach narrows the draws (the SIMT emulator's
  // token counts): then what that excludes, and why.
  const kernels::Envelope envelope = variant.declared_envelope();
  const bool declares = !envelope.unlimited() || envelope.device != kernels::Device::cpu;
  properties::EnvelopeExclusions out;
  if (declares) {
    f.json["envelope"] = envelope;
    f.markdown += "\n## Envelope (the problems the kernel declares it supports)\n\n";
    f.markdown += envelope.str();
    f.markdown += "; every case was drawn inside it.\n";
    // What it keeps out of reach: the op's regimes and deployment scale.
    out = properties::excluded_by(cert.op, envelope);
  }
  const std::vector<properties::EnvelopeExclusion> reach = properties::excluded_by_reach(variant);
  if (!reach.empty()) {
    f.markdown += "\n## Drawn within (narrower than the kernel supports)\n\n";
    f.markdown += variant.reach.str() + ": " + variant.reach_why + "; `--shape` reaches past it.\n";
  }
  out.deployment_scale.insert(out.deployment_scale.end(), reach.begin(), reach.end());
  if (!declares && reach.empty()) return f;
  nlohmann::json& j = f.json["envelope_excludes"];
  j = {{"regimes", nlohmann::json::array()}, {"deployment_scale", nlohmann::json::array()}};
  for (const auto& [list, key, heading] :
       {std::tuple{&out.regimes, "regimes", "Regimes of the op it excludes"},
        std::tuple{&out.deployment_scale, "deployment_scale",
                   "Axes along which it excludes the deployment scale"}}) {
    f.markdown += fmt::format("\n{}: {}", heading, list->empty() ? "none.\n" : "\n\n");
    for (const properties::EnvelopeExclusion& x : *list) {
      j[key].push_back({{"name", x.what}, {"why", x.why}});
      f.markdown += "- " + x.what + ": " + x.why + "\n";
    }
  }
  return f;
}

void write_certificate_files(const fs::path& dir, const CertificateFiles& f) {
  files::write_atomically(dir / "certificate.json", f.json.dump(2) + "\n");
  files::write_atomically(dir / "certificate.md", f.markdown);
  write_page(dir / "report.html", f.page);
}

nlohmann::json write_certificate(const fs::path& dir, const properties::Certificate& cert,
                                 const std::string& simt_counters, const kernels::Variant& variant,
                                 const reports::Provenance& provenance) {
  CertificateFiles f = render_certificate(cert, simt_counters, variant, provenance);
  write_certificate_files(dir, f);
  return std::move(f.json);
}

}  // namespace moacert::cli
