// A test fixture base for the multi-process tests: each test gets an empty directory of its own,
// <temp>/<prefix>-<pid>-<test name>, for the files its processes write. It is removed after the
// test, or kept for a look after a failure when the fixture asks for that.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>

class TestDirectory : public ::testing::Test {
 protected:
  TestDirectory(std::string prefix, bool keep_after_failure)
      : prefix_(std::move(prefix)), keep_after_failure_(keep_after_failure) {}

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + "-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!keep_after_failure_ || !HasFailure()) std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_;

 private:
  std::string prefix_;
  bool keep_after_failure_;
};
