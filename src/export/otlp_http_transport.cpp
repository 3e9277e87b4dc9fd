// OTLP/HTTP transport over libcurl directly, so that what it reads of an answer is bounded
// (body and headers), which opentelemetry-cpp's curl client does not allow; bodies are binary
// protobuf or OTLP JSON, optionally gzip. Thread-safety: send() from several threads at once
// (each on a curl channel of its own); cancel() from any thread.
#include "export/otlp_http_transport.hpp"

#include <curl/curl.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/parse.hpp"
#include "export/otlp_failure_hints.hpp"
#include "export/otlp_transport_shared.hpp"
#include "lens/otlp_json.hpp"

namespace lens::exporters {
namespace {

using google::protobuf::Message;
// The pieces both transports share (otlp_transport_shared.hpp, otlp_failure_hints.hpp).
using namespace transport;

std::string gzip(const std::string& data) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream sink(&out);
    google::protobuf::io::GzipOutputStream::Options options;
    options.format = google::protobuf::io::GzipOutputStream::GZIP;
    google::protobuf::io::GzipOutputStream stream(&sink, options);
    void* buffer = nullptr;
    int size = 0;
    std::size_t written = 0;
    while (written < data.size() && stream.Next(&buffer, &size)) {
      const std::size_t n =
          std::min<std::size_t>(static_cast<std::size_t>(size), data.size() - written);
      std::memcpy(buffer, data.data() + written, n);
      written += n;
      if (n < static_cast<std::size_t>(size)) stream.BackUp(static_cast<int>(size - n));
    }
    stream.Close();
  }
  return out;
}

// What one HTTP exchange gave back, within the response caps.
struct HttpAnswer {
  int status = 0;
  std::string body;
  std::string retry_after;
  std::string content_type;
  bool body_too_large = false;
  bool headers_too_large = false;
};

// The body of a google.rpc.Status (or its JSON form) that an error answer carries.
std::string http_status_message(const HttpAnswer& answer, bool json) {
  if (answer.status >= 200 && answer.status < 300) return {};
  if (json) {
    const auto parsed = nlohmann::json::parse(answer.body, nullptr, false);
    if (parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()) {
      return parsed["message"].get<std::string>();
    }
    return {};
  }
  return rpc_status_message(answer.body);
}

std::string reason_suffix(const std::string& reason) {
  return reason.empty() ? std::string() : " (" + reason.substr(0, 200) + ")";
}

// curl callbacks: they stop the transfer (by taking fewer bytes than given) past the caps, so
// that a receiver answering an endless body or endless headers costs at most the caps.
std::size_t take_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& answer = *static_cast<HttpAnswer*>(user);
  const std::size_t n = size * count;
  if (answer.body.size() + n > kMaxResponseBytes) {
    answer.body_too_large = true;
    return 0;
  }
  answer.body.append(data, n);
  return n;
}

// One header line at a time, the status line and the blank line included.
struct HeaderReader {
  HttpAnswer* answer;
  std::size_t bytes = 0;
};
std::size_t take_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& reader = *static_cast<HeaderReader*>(user);
  const std::size_t n = size * count;
  reader.bytes += n;
  if (reader.bytes > kMaxResponseBytes) {
    reader.answer->headers_too_large = true;
    return 0;
  }
  std::string_view line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response (after "100 Continue", or a redirect that is not followed): its headers
    // replace the previous ones'.
    reader.answer->retry_after.clear();
    reader.answer->content_type.clear();
    return n;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  const std::string key = lens::detail::to_lower(line.substr(0, colon));
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
    value.remove_suffix(1);
  }
  if (key == "retry-after") reader.answer->retry_after.assign(value);
  if (key == "content-type") reader.answer->content_type.assign(value);
  return n;
}

// A curl easy handle in its own multi handle: the multi handle lets cancel() wake a transfer
// at once (curl_multi_wakeup) and keeps the connection for the next export.
struct CurlChannel {
  CurlChannel() : easy(curl_easy_init()), multi(curl_multi_init()) {}
  ~CurlChannel() {
    if (multi != nullptr) curl_multi_cleanup(multi);
    if (easy != nullptr) curl_easy_cleanup(easy);
  }
  CurlChannel(const CurlChannel&) = delete;
  CurlChannel& operator=(const CurlChannel&) = delete;
  CURL* easy;
  CURLM* multi;
};

// OTLP/HTTP over libcurl directly: what it reads of an answer is bounded (kMaxResponseBytes of
// body, the same of headers), which opentelemetry-cpp's curl client does not allow.
class HttpTransport final : public OtlpTransport {
 public:
  HttpTransport(const OtlpSignalSettings& s, Signal signal)
      : signal_(signal),
        url_(s.endpoint.value),
        json_(s.protocol.value == OtlpProtocol::http_json),
        tls_(url_.rfind("https://", 0) == 0),
        // As opentelemetry-cpp's curl client did: OTEL_EXPORTER_OTLP_INSECURE skips the
        // verification of an https:// endpoint's certificate.
        skip_verify_(s.insecure.value),
        ca_path_(s.certificate.value),
        client_key_path_(s.client_key.value),
        client_certificate_path_(s.client_certificate.value),
        gzip_(s.compression.value == "gzip"),
        hints_(s) {
    static std::once_flag curl_ready;
    std::call_once(curl_ready, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    for (const auto& header : s.headers.value) {
      headers_.push_back(header.key + ": " + header.value);
    }
    headers_.push_back(std::string("Content-Type: ") +
                       (json_ ? "application/json" : "application/x-protobuf"));
    headers_.push_back("User-Agent: " + transport::user_agent());
    if (gzip_) headers_.push_back("Content-Encoding: gzip");
    headers_.push_back("Expect:");  // no wait for "100 Continue" before a large body
    target_ = url_ + (json_ ? " (http/json)" : " (http/protobuf)");
  }

  ~HttpTransport() override { cancel(); }

  Attempt send(const Message& request, Millis timeout) noexcept override {
    try {
      std::string body = json_ ? otlp_json::encode(request) : request.SerializeAsString();
      if (gzip_) body = gzip(body);
      std::unique_ptr<CurlChannel> channel = take_channel();
      if (channel->easy == nullptr || channel->multi == nullptr) {
        return failure(Attempt::Kind::kPermanent, "http-create",
                       "cannot create the HTTP request (curl)");
      }
      HttpAnswer answer;
      HeaderReader header_reader{&answer};
      char error[CURL_ERROR_SIZE] = {};
      curl_slist* header_list = nullptr;
      for (const std::string& header : headers_) {
        curl_slist* grown = curl_slist_append(header_list, header.c_str());
        if (grown == nullptr) break;
        header_list = grown;
      }
      CURL* easy = channel->easy;
      set_options(easy, body, header_list, timeout, error, answer, header_reader);
      const CURLcode code = perform(*channel);
      curl_slist_free_all(header_list);
      if (code == CURLE_OK) {
        long status = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        answer.status = static_cast<int>(status);
      }
      // The TLS connection was up: a reused one (no new connect), or a new one whose
      // handshake (curl's "app connect") finished.
      long new_connections = 0;
      curl_off_t tls_connect_time = 0;
      curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &new_connections);
      curl_easy_getinfo(easy, CURLINFO_APPCONNECT_TIME_T, &tls_connect_time);
      const bool tls_connected = !tls_ || new_connections == 0 || tls_connect_time > 0;
      // A connection whose answer was cut short cannot carry the next request.
      if (code == CURLE_OK) give_back(std::move(channel));
      std::string reason = error[0] != '\0' ? error : curl_easy_strerror(code);
      return hints_.explain(result(code, answer, reason, tls_connected));
    } catch (const std::exception& e) {
      return failure(Attempt::Kind::kPermanent, "encode",
                     std::string("cannot encode the request: ") + e.what());
    } catch (...) {
      return failure(Attempt::Kind::kPermanent, "encode", "cannot encode the request");
    }
  }

  void cancel() noexcept override {
    cancelled_.store(true, std::memory_order_release);
    in_flight_.cancel([](CURLM* multi) { curl_multi_wakeup(multi); });
  }

 private:
  // One POST of `body` with the transport's headers and TLS files; the answer goes to `answer`
  // (body) and `header_reader` (headers) within the caps, curl's error text to `error`.
  void set_options(CURL* easy, const std::string& body, curl_slist* header_list, Millis timeout,
                   char* error, HttpAnswer& answer, HeaderReader& header_reader) const {
    curl_easy_reset(easy);
    curl_easy_setopt(easy, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, header_list);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, take_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &answer);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, take_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, &header_reader);
    // An announced Content-Length over the cap ends the transfer before any body is read.
    curl_easy_setopt(easy, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(kMaxResponseBytes));
    if (tls_) {
      if (!ca_path_.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, ca_path_.c_str());
      if (!client_key_path_.empty()) {
        curl_easy_setopt(easy, CURLOPT_SSLKEY, client_key_path_.c_str());
      }
      if (!client_certificate_path_.empty()) {
        curl_easy_setopt(easy, CURLOPT_SSLCERT, client_certificate_path_.c_str());
      }
      curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, skip_verify_ ? 0L : 1L);
      curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, skip_verify_ ? 0L : 2L);
    }
  }

  // Runs the transfer on this thread; CURLE_ABORTED_BY_CALLBACK when cancel() ended it.
  CURLcode perform(CurlChannel& channel) {
    if (curl_multi_add_handle(channel.multi, channel.easy) != CURLM_OK) return CURLE_FAILED_INIT;
    CURLcode code = CURLE_ABORTED_BY_CALLBACK;
    if (in_flight_.add(channel.multi)) {
      for (;;) {
        int running = 0;
        if (curl_multi_perform(channel.multi, &running) != CURLM_OK) {
          code = CURLE_FAILED_INIT;
          break;
        }
        int left = 0;
        bool done = false;
        while (CURLMsg* message = curl_multi_info_read(channel.multi, &left)) {
          if (message->msg == CURLMSG_DONE) {
            code = message->data.result;
            done = true;
          }
        }
        if (done || running == 0) break;
        if (cancelled_.load(std::memory_order_acquire)) {
          code = CURLE_ABORTED_BY_CALLBACK;
          break;
        }
        curl_multi_poll(channel.multi, nullptr, 0, 1000, nullptr);
      }
      in_flight_.remove(channel.multi);
    }
    curl_multi_remove_handle(channel.multi, channel.easy);
    return code;
  }

  // `tls_connected`: the TLS handshake finished (always true without TLS).
  Attempt result(CURLcode code, const HttpAnswer& answer, const std::string& reason,
                 bool tls_connected) const {
    if (answer.body_too_large || answer.headers_too_large || code == CURLE_FILESIZE_EXCEEDED) {
      // Not retried: the receiver may well have taken the data, and a receiver that answers
      // this way will again.
      return failure(Attempt::Kind::kPermanent, "http-answer-too-large",
                     std::string("the receiver's answer exceeded ") +
                         std::to_string(kMaxResponseBytes / 1024) + " KiB of " +
                         (answer.headers_too_large ? "headers" : "body") +
                         "; lens stopped reading it and counts the export as failed");
    }
    if (code == CURLE_ABORTED_BY_CALLBACK) return transport::cancelled();
    if (code == CURLE_OPERATION_TIMEDOUT) {
      return failure(
          Attempt::Kind::kRetryable, "http-timeout",
          "no answer before the timeout" + reason_suffix(reason) +
              (tls_ && !tls_connected ? tls_not_established(client_certificate_path_.empty())
                                      : std::string()));
    }
    if (code != CURLE_OK) {
      const bool handshake = code == CURLE_SSL_CONNECT_ERROR ||
                             code == CURLE_PEER_FAILED_VERIFICATION ||
                             code == CURLE_SSL_CERTPROBLEM || code == CURLE_SSL_CACERT_BADFILE;
      // curl reports a certificate it cannot verify as a handshake failure or, with TLS 1.3,
      // a client certificate the server refused as an error reading the answer.
      if (tls_) {
        if (std::optional<Attempt> refused =
                tls_failure("http", reason, handshake, client_certificate_path_.empty())) {
          return *refused;
        }
        if (handshake) {
          return failure(Attempt::Kind::kPermanent, "http-tls",
                         "TLS handshake failed" + reason_suffix(reason));
        }
      }
      // (An answer in HTTP/0.9, a gRPC port, is CURLE_UNSUPPORTED_PROTOCOL: a connection
      // error below, with the protocol hint.)
      if (code == CURLE_URL_MALFORMAT || code == CURLE_FAILED_INIT || code == CURLE_OUT_OF_MEMORY) {
        return failure(Attempt::Kind::kPermanent, "http-create",
                       "cannot create the HTTP request" + reason_suffix(reason));
      }
      // With TLS 1.3 a server that refuses a missing client certificate may just close the
      // connection: that cannot be told from a network error, but it can be hinted at.
      return failure(
          Attempt::Kind::kRetryable, "http-connect",
          "cannot connect or the connection broke" + reason_suffix(reason) +
              (tls_ && client_certificate_path_.empty() ? std::string("; ") + kClientCertificateHint
                                                        : std::string()));
    }
    const bool json = answer.content_type.find("json") != std::string::npos ||
                      (answer.content_type.empty() && json_);
    Attempt attempt =
        classify_http_status(answer.status, answer.retry_after, http_status_message(answer, json));
    if (attempt.ok() && !answer.body.empty()) {
      auto response = transport::new_response(signal_);
      const bool parsed = json ? otlp_json::decode(answer.body, *response).ok()
                               : response->ParseFromString(answer.body);
      if (parsed) transport::read_partial_success(signal_, *response, attempt);
    }
    return attempt;
  }

  std::unique_ptr<CurlChannel> take_channel() {
    {
      std::lock_guard<std::mutex> lock(channels_mutex_);
      if (!idle_channels_.empty()) {
        std::unique_ptr<CurlChannel> channel = std::move(idle_channels_.back());
        idle_channels_.pop_back();
        return channel;
      }
    }
    return std::make_unique<CurlChannel>();
  }
  void give_back(std::unique_ptr<CurlChannel> channel) {
    std::lock_guard<std::mutex> lock(channels_mutex_);
    idle_channels_.push_back(std::move(channel));
  }

  const Signal signal_;
  const std::string url_;
  const bool json_;
  const bool tls_;
  const bool skip_verify_;
  const std::string ca_path_;
  const std::string client_key_path_;
  const std::string client_certificate_path_;
  const bool gzip_;
  const EndpointHints hints_;
  std::vector<std::string> headers_;
  std::mutex channels_mutex_;
  std::vector<std::unique_ptr<CurlChannel>> idle_channels_;  // at most one per concurrent send
  std::atomic<bool> cancelled_{false};
  InFlight<CURLM> in_flight_;
};

}  // namespace

std::unique_ptr<OtlpTransport> make_http_transport(const OtlpSignalSettings& settings,
                                                   Signal signal) {
  return std::make_unique<HttpTransport>(settings, signal);
}

}  // namespace lens::exporters
