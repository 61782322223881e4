#include "cli/output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <streambuf>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace netdiag::cli {

std::string withCommas(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string utcTimestamp(std::time_t t) {
  std::tm tm{};
  char buf[32];
  if (gmtime_r(&t, &tm) == nullptr ||
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    return "?";
  return buf;
}

namespace {

// An output stream buffer over a file descriptor we created ourselves (so
// nothing reopens the file by name between the checks and the writes).
class FdBuffer : public std::streambuf {
 public:
  explicit FdBuffer(int fd) : fd_(fd), buf_(1 << 16) {
    setp(buf_.data(), buf_.data() + buf_.size());
  }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (sync() != 0) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override {
    const char* p = pbase();
    while (p < pptr()) {
      const ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        return -1;
      }
      p += n;
    }
    setp(buf_.data(), buf_.data() + buf_.size());
    return 0;
  }

 private:
  int fd_;
  std::vector<char> buf_;
  int error_ = 0;
};

std::string directoryOf(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

std::string writeFileAtomically(const std::string& path,
                                const std::function<void(std::ostream&)>& write) {
  if (path == "-") {
    write(std::cout);
    std::cout.flush();
    return std::cout ? "" : "cannot write to stdout";
  }
  // Only a regular file (or nothing) may be replaced: renaming over a device
  // (as root, /dev/null), a directory or a symlink would destroy it. A
  // symlink is refused rather than followed, so a planted link cannot
  // redirect the write either.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) return "refusing to write " + path + ": it is a symbolic link";
    if (!S_ISREG(st.st_mode)) return "refusing to replace " + path + ": not a regular file";
  } else if (errno != ENOENT) {
    return "cannot write " + path + ": " + std::strerror(errno);
  }
  // A fresh, unpredictable name in the target's directory (so the rename
  // stays on one filesystem), created with O_EXCL: it can never be a file or
  // link someone planted.
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    return "cannot create a temporary file in " + directoryOf(path) + ": " + std::strerror(errno);
  }
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);  // what a plain create would give, not mkostemp's 0600
  std::string error;
  {
    FdBuffer buffer(fd);
    std::ostream out(&buffer);
    write(out);
    out.flush();
    if (!out || buffer.error() != 0) {
      error = "cannot write " + path + ": " + std::strerror(buffer.error() ? buffer.error() : EIO);
    }
  }
  if (error.empty() && ::fsync(fd) != 0 && errno != EINVAL) {
    error = "cannot write " + path + ": " + std::strerror(errno);
  }
  if (::close(fd) != 0 && error.empty())
    error = "cannot write " + path + ": " + std::strerror(errno);
  if (error.empty() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
  }
  if (!error.empty()) ::unlink(tmp.c_str());
  return error;
}

}  // namespace netdiag::cli
