// `lens report --job` end to end (see job_report.hpp).
#include "report/job_report.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "report/hangs.hpp"
#include "report/job_ledger.hpp"
#include "report/otlp_reader.hpp"
#include "report/report_file.hpp"
#include "report/run_builder.hpp"

namespace lens::report {
namespace {

constexpr const char* kPrefix = "lens report: ";
constexpr std::size_t kPrintedWarnings = 20;

struct Identity {
  std::string run_id, run_uuid, job_uuid;
  std::string key() const {
    return !run_uuid.empty() ? run_uuid : !run_id.empty() ? "id:" + run_id : std::string();
  }
};

Identity identity_of(const opentelemetry::proto::resource::v1::Resource& resource) {
  Identity out;
  for (const auto& attribute : resource.attributes()) {
    if (!attribute.value().has_string_value()) continue;
    const std::string& key = attribute.key();
    if (key == "nemo.run.id") out.run_id = attribute.value().string_value();
    if (key == "nemo.lens.run_uuid") out.run_uuid = attribute.value().string_value();
    if (key == "nemo.lens.job_uuid") out.job_uuid = attribute.value().string_value();
  }
  return out;
}

// Splits one DIR's requests by run identity, each run into its own RunBuilder.
class JobSplitter final : public TelemetrySink {
 public:
  struct Run {
    Identity identity;
    RunBuilder builder;
  };

  void on_traces(const opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest&
                     request) override {
    split(
        request, request.resource_spans(), [](auto& part) { return part.add_resource_spans(); },
        [](RunBuilder& builder, const auto& part) { builder.on_traces(part); });
  }
  void on_metrics(const opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest&
                      request) override {
    split(
        request, request.resource_metrics(), [](auto& part) { return part.add_resource_metrics(); },
        [](RunBuilder& builder, const auto& part) { builder.on_metrics(part); });
  }
  void on_logs(
      const opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest& request) override {
    split(
        request, request.resource_logs(), [](auto& part) { return part.add_resource_logs(); },
        [](RunBuilder& builder, const auto& part) { builder.on_logs(part); });
  }

  std::map<std::string, Run>& runs() { return runs_; }

 private:
  RunBuilder& builder_for(const Identity& identity) {
    auto [it, inserted] = runs_.try_emplace(identity.key());
    if (inserted) it->second.identity = identity;
    return it->second.builder;
  }

  // The whole request to one run when all its resources are of that run (the usual case), else
  // a part per run.
  template <class Request, class Items, class Add, class Deliver>
  void split(const Request& request, const Items& items, Add add, Deliver deliver) {
    std::vector<Identity> identities;
    identities.reserve(static_cast<std::size_t>(items.size()));
    bool one_run = true;
    for (const auto& item : items) {
      identities.push_back(identity_of(item.resource()));
      one_run = one_run && identities.back().key() == identities.front().key();
    }
    if (identities.empty()) return;
    if (one_run) {
      deliver(builder_for(identities.front()), request);
      return;
    }
    std::map<std::string, std::pair<Identity, Request>> parts;
    for (int i = 0; i < items.size(); ++i) {
      const Identity& identity = identities[static_cast<std::size_t>(i)];
      auto& part = parts[identity.key()];
      part.first = identity;
      *add(part.second) = items[i];
    }
    for (auto& [key, part] : parts) deliver(builder_for(part.first), part.second);
  }

  std::map<std::string, Run> runs_;
};

// The ranks of `run` whose newest hang report lies within the run and no step followed.
std::set<int> hung_ranks(const std::filesystem::path& dir, const LedgerRunInput& run) {
  std::int64_t start = INT64_MAX, end = INT64_MIN;
  for (const auto& [rank, data] : run.data.ranks) {
    for (const SpanRecord& span : data.spans) {
      start = std::min(start, span.start_ns);
      end = std::max(end, span.end_ns);
    }
  }
  std::set<int> out;
  if (start > end) return out;
  HangLog hangs(run.run_id.empty() ? std::nullopt : std::optional<std::string>(run.run_id));
  hangs.consume_file(dir / "logs.jsonl");
  for (const auto& [rank, hang] : hangs.ranks()) {
    if (!hang.resumed && hang.time_ns >= start && hang.time_ns <= end) out.insert(rank);
  }
  return out;
}

// Reads DIR's runs (those with a rank) into `runs`.
Result<ReadStats> read_runs(const std::filesystem::path& path, std::vector<LedgerRunInput>& runs) {
  JobSplitter splitter;
  Result<ReadStats> read = read_telemetry_dir(path, splitter);
  if (!read.ok()) return read;
  for (auto& [key, run] : splitter.runs()) {
    LedgerRunInput input;
    input.source = path.string();
    input.run_id = run.identity.run_id;
    input.run_uuid = run.identity.run_uuid;
    input.job_uuid = run.identity.job_uuid;
    input.data = run.builder.take();
    if (input.data.ranks.empty()) continue;
    input.hung_ranks = hung_ranks(path, input);
    runs.push_back(std::move(input));
  }
  return read;
}

}  // namespace

std::optional<JobLedger> job_ledger_in_dir(const std::filesystem::path& dir) {
  std::vector<LedgerRunInput> runs;
  if (!read_runs(dir, runs).ok() || runs.size() < 2) return std::nullopt;
  JobLedger ledger = account_job(runs);
  if (ledger.runs.size() < 2 || ledger.job_uuids.size() != 1) return std::nullopt;
  return ledger;
}

int run_job_report(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<LedgerRunInput> runs;
  std::vector<std::string> warnings, sources;
  for (const std::filesystem::path& path : options.job) {
    const std::string dir = path.string();
    sources.push_back(dir);
    std::vector<LedgerRunInput> dir_runs;
    Result<ReadStats> read = read_runs(path, dir_runs);
    if (!read.ok()) {
      err << kPrefix << "cannot read DIR '" << dir << "': " << read.message()
          << "; accepted: a directory of OTLP JSON line files\n";
      return 2;
    }
    if (read->telemetry_files.empty()) {
      err << kPrefix << "no telemetry files in DIR '" << dir << "' (" << read->files_seen
          << " files, none of OTLP JSON lines); accepted: traces.jsonl, metrics.jsonl, "
             "logs.jsonl or OpenTelemetry Collector file exporter output\n";
      return 2;
    }
    for (std::size_t i = 0; i < read->warnings.size() && i < kPrintedWarnings; ++i) {
      err << kPrefix << "warning: " << read->warnings[i] << "\n";
      warnings.push_back(read->warnings[i]);
    }
    const std::size_t ranked = dir_runs.size();
    for (LedgerRunInput& run : dir_runs) runs.push_back(std::move(run));
    if (ranked == 0) {
      err << kPrefix << "no rank in DIR '" << dir
          << "': no span, point or log record with a dl.rank or rank resource attribute; "
             "accepted: telemetry whose resource has dl.rank\n";
      return 2;
    }
  }
  const JobLedger ledger = account_job(runs);
  if (ledger.runs.empty()) {
    err << kPrefix << "no span in the DIRs of --job; accepted: runs with megatron spans\n";
    return 2;
  }
  if (ledger.job_uuids.size() > 1) {
    std::string list;
    for (const std::string& uuid : ledger.job_uuids) list += (list.empty() ? "" : ", ") + uuid;
    warnings.push_back("the runs carry " + std::to_string(ledger.job_uuids.size()) +
                       " job identities (nemo.lens.job_uuid: " + list +
                       "); they are accounted as one job");
    err << kPrefix << "warning: " << warnings.back() << "\n";
  }
  if (!write_report_file(options.html, "-o", err, [&](std::ostream& file) {
        file << ledger_page(ledger, sources, warnings);
      }))
    return 1;
  // summary.json next to the page keeps what a run's report put there and gains "ledger".
  const std::filesystem::path summary_path = options.html.parent_path() / "summary.json";
  nlohmann::json summary = nlohmann::json::object();
  if (std::ifstream existing(summary_path); existing) {
    nlohmann::json parsed = nlohmann::json::parse(existing, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object()) summary = std::move(parsed);
  }
  summary["ledger"] = ledger_json(ledger);
  if (!write_report_file(summary_path, "summary.json (next to -o)", err,
                         [&](std::ostream& file) { file << summary.dump(2) << "\n"; })) {
    return 1;
  }
  for (const std::string& line : ledger_summary_lines(ledger)) out << line << "\n";
  out << "job ledger: " << options.html.string() << "\n";
  out << "summary: " << summary_path.string() << "\n";
  return 0;
}

}  // namespace lens::report
