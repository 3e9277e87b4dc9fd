// Fuzz target: `lens collect`'s OTLP/HTTP request handling: the body as cpp-httplib hands it over
// (gzip/deflate or brotli decoded by httplib's decompressors), then the server's own handler
// (collect_server/http_export_handler.hpp): token, Content-Type, protobuf or OTLP JSON decoding,
// id checks, the sink's encoding.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>

#include "collect_server/export_request.hpp"
#include "collect_server/http_export_handler.hpp"
#include "collect_server/otlp_sink.hpp"
#include "collect_server/request_accounting.hpp"
#include "fuzz_input.hpp"
#include "lens/otlp_json.hpp"

namespace {

constexpr const char* kToken = "fuzz-token";
// cpp-httplib reads bodies in pieces of CPPHTTPLIB_RECV_BUFSIZ bytes.
constexpr std::size_t kPiece = 4096;

struct Collector {
  std::unique_ptr<lens::cli::OtlpSink> sink;
  std::unique_ptr<lens::cli::RequestAccounting> accounting;
  std::unique_ptr<lens::cli::HttpExportHandler> handler;  // without a connection guard
};

Collector& collector() {
  static Collector instance = [] {
    char dir[] = "/tmp/lens-fuzz-collect-XXXXXX";
    if (::mkdtemp(dir) == nullptr) {
      lens::fuzz::fail("cannot create a temporary directory");
    }
    auto sink = lens::cli::OtlpSink::open(dir, 1);
    if (!sink.ok()) {
      lens::fuzz::fail(sink.message());
    }
    // The files stay open; nothing is ever written to them.
    for (const char* name : {"/traces.jsonl", "/metrics.jsonl", "/logs.jsonl"}) {
      ::unlink((std::string(dir) + name).c_str());
    }
    ::rmdir(dir);
    Collector made;
    made.sink = std::move(*sink);
    made.accounting = std::make_unique<lens::cli::RequestAccounting>(
        *made.sink, kToken, lens::cli::RequestLimits{}, lens::cli::MemoryBudget::kDefaultBytes);
    made.handler = std::make_unique<lens::cli::HttpExportHandler>(*made.accounting, nullptr);
    return made;
  }();
  return instance;
}

// What cpp-httplib's Server does with a body before the handler's ContentReader sees it
// (detail::prepare_content_receiver): gzip and deflate, or brotli, decoded piece by piece.
bool deliver(const httplib::Request& req, std::string_view body,
             const httplib::ContentReceiver& receiver) {
  const std::string encoding = req.get_header_value("Content-Encoding");
  std::unique_ptr<httplib::detail::decompressor> decompressor;
  if (encoding == "gzip" || encoding == "deflate") {
    decompressor = std::make_unique<httplib::detail::gzip_decompressor>();
  } else if (encoding.find("br") != std::string::npos) {
    decompressor = std::make_unique<httplib::detail::brotli_decompressor>();
  }
  if (decompressor && !decompressor->is_valid()) {
    return false;
  }
  for (std::size_t at = 0; at < body.size(); at += kPiece) {
    const std::string_view piece = body.substr(at, kPiece);
    const bool more = decompressor ? decompressor->decompress(piece.data(), piece.size(), receiver)
                                   : receiver(piece.data(), piece.size());
    if (!more) {
      return false;
    }
  }
  return true;
}

std::string gzip(std::string_view body) {
  httplib::detail::gzip_compressor compressor;
  std::string out;
  compressor.compress(body.data(), body.size(), true, [&](const char* data, std::size_t size) {
    out.append(data, size);
    return true;
  });
  return out;
}

}  // namespace

// Input, HTTP-like: a path line ("/v1/traces"), "Name: value" header lines, an empty line, the
// body. The pseudo-header "X-Fuzz-Compress: gzip" makes the target gzip the body first. The
// sink has a 1-byte cap, so requests are encoded, then dropped unwritten.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using lens::cli::Signal;
  Collector& c = collector();
  std::string_view text = lens::fuzz::as_text(data, size);

  httplib::Request req;
  req.method = "POST";
  bool compress = false;
  bool first = true;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (first) {
      req.path = std::string(line);
      first = false;
      continue;
    }
    if (line.empty()) {
      break;  // the body follows
    }
    const std::size_t colon = line.find(':');
    std::string name(line.substr(0, colon));
    std::string value(colon == std::string_view::npos ? "" : line.substr(colon + 1));
    value.erase(0, value.find_first_not_of(" \t"));
    if (name == "X-Fuzz-Compress") {
      compress = true;
      continue;
    }
    req.headers.emplace(std::move(name), std::move(value));
  }
  Signal signal;
  if (req.path == "/v1/traces") {
    signal = Signal::kTraces;
  } else if (req.path == "/v1/metrics") {
    signal = Signal::kMetrics;
  } else if (req.path == "/v1/logs") {
    signal = Signal::kLogs;
  } else {
    return 0;  // cpp-httplib answers 404 itself
  }
  std::string body(text);
  if (compress) {
    body = gzip(body);
    req.headers.erase("Content-Encoding");
    req.headers.emplace("Content-Encoding", "gzip");
  }

  httplib::Response res;
  const httplib::ContentReader reader(
      [&](const httplib::ContentReceiver& receiver) { return deliver(req, body, receiver); },
      [](const httplib::MultipartContentHeader& /*header*/,
         const httplib::ContentReceiver& /*receiver*/) { return false; });
  try {
    c.handler->handle(signal, req, res, reader);
  } catch (const std::exception& e) {
    // cpp-httplib would answer 500 with e.what() in an EXCEPTION_WHAT header; gRPC, UNIMPLEMENTED.
    lens::fuzz::fail(std::string("the request handler threw: ") + e.what());
  }

  if (res.status != 200 && res.status != 400 && res.status != 401 && res.status != 413 &&
      res.status != 415) {
    lens::fuzz::fail("unexpected HTTP status " + std::to_string(res.status));
  }
  const bool protobuf = res.get_header_value("Content-Type") == "application/x-protobuf";
  // An empty protobuf response (no partial_success) is an empty body; anything else has one.
  if (res.body.empty() && !(res.status == 200 && protobuf)) {
    lens::fuzz::fail("HTTP " + std::to_string(res.status) + " without a body");
  }
  if (res.status == 200) {
    auto response = lens::cli::new_response(signal, {});
    const bool parses = protobuf ? response->ParseFromString(res.body)
                                 : lens::otlp_json::decode(res.body, *response).ok();
    if (!parses) {
      lens::fuzz::fail("the 200 response does not parse as an OTLP response: " + res.body);
    }
  }
  return 0;
}
