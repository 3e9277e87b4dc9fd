// One HTTP POST with libcurl, for the tests that play HTTP clients of `lens collect` (healthy,
// refused, slow to answer): the answer's status, headers and body, and how long it took. Plain
// functions; each call has its own curl handle.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <string>
#include <vector>

namespace lens::testing {

struct PostAnswer {
  CURLcode result = CURLE_OK;  // curl's own outcome
  long status = 0;             // 0: no answer (timeout, refused, connection reset)
  std::string headers;
  std::string body;
  double seconds = 0;  // from sending to the end of the answer
};

inline std::size_t append_to_string(char* data, std::size_t size, std::size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

// POSTs `body` to `url` with exactly `headers` (add "Expect:" to send the body at once rather
// than after a 100 Continue), waiting at most `timeout_ms`.
inline PostAnswer curl_post(const std::string& url, const std::string& body,
                            const std::vector<std::string>& headers, long timeout_ms) {
  PostAnswer answer;
  CURL* curl = curl_easy_init();
  curl_slist* list = nullptr;
  for (const auto& header : headers) list = curl_slist_append(list, header.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_to_string);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, append_to_string);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &answer.headers);
  const auto start = std::chrono::steady_clock::now();
  answer.result = curl_easy_perform(curl);
  if (answer.result == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
  answer.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  return answer;
}

}  // namespace lens::testing
