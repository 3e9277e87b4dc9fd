// A gRPC OTLP trace receiver on 127.0.0.1 that answers from a script (status codes in order,
// then OK) and keeps every request it answered OK: the gRPC side of what ScriptedHttpReceiver
// (otlp_test_servers.hpp) does for HTTP. Apart from that header so that only the tests that
// need gRPC's server headers compile them.
#pragma once

#include <grpcpp/grpcpp.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace lens::test_servers {

class ScriptedGrpcTraceReceiver final
    : public opentelemetry::proto::collector::trace::v1::TraceService::Service {
 public:
  using Request = opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
  using Response = opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse;

  ScriptedGrpcTraceReceiver() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~ScriptedGrpcTraceReceiver() override { server_->Shutdown(std::chrono::system_clock::now()); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // The next answer: a gRPC status code (0 = OK), in order; OK after the script.
  void push(grpc::StatusCode code) {
    std::lock_guard<std::mutex> lock(mutex_);
    script_.push_back(code);
  }
  // Every OK answer carries a partial_success with this error message (none when empty).
  void set_partial_success_message(std::string message) {
    std::lock_guard<std::mutex> lock(mutex_);
    partial_success_message_ = std::move(message);
  }
  // Requests answered with each code, in order of arrival.
  std::vector<grpc::StatusCode> answers() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return answers_;
  }
  // Requests answered OK.
  std::vector<Request> accepted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return accepted_;
  }

  grpc::Status Export(grpc::ServerContext*, const Request* request, Response* response) override {
    std::lock_guard<std::mutex> lock(mutex_);
    grpc::StatusCode code = grpc::StatusCode::OK;
    if (!script_.empty()) {
      code = script_.front();
      script_.pop_front();
    }
    answers_.push_back(code);
    if (code == grpc::StatusCode::OK) {
      accepted_.push_back(*request);
      if (!partial_success_message_.empty()) {
        response->mutable_partial_success()->set_error_message(partial_success_message_);
      }
      return grpc::Status::OK;
    }
    return grpc::Status(code, "scripted answer");
  }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  mutable std::mutex mutex_;
  std::deque<grpc::StatusCode> script_;
  std::vector<grpc::StatusCode> answers_;
  std::vector<Request> accepted_;
  std::string partial_success_message_;
};

}  // namespace lens::test_servers
