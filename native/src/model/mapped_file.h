// A read-only memory-mapped file (checkpoint shards are mapped, never copied, when already bf16).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace ee {

class MappedFile {
 public:
  static Result<MappedFile*> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ee
