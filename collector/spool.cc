#include "collector/spool.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <sstream>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

namespace netdiag::collector {
namespace {

namespace fs = std::filesystem;

}  // namespace

uint64_t randomEpoch() {
  std::random_device rd;
  uint64_t e = 0;
  while (e == 0) e = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return e;
}

namespace {

// ---------------------------------------------------------------- memory --

class MemorySpool final : public Spool {
 public:
  explicit MemorySpool(uint64_t max_bytes) : max_bytes_(max_bytes) {}

  bool push(std::string batch) override {
    std::lock_guard lock(mu_);
    const uint64_t size = batch.size();
    if (max_bytes_ > 0 && size > max_bytes_) {
      ++dropped_;  // could never fit: keep the older batches instead
      return false;
    }
    while (max_bytes_ > 0 && !queue_.empty() && bytes_ + size > max_bytes_) {
      bytes_ -= queue_.front().size();
      queue_.pop_front();
      ++dropped_;
    }
    bytes_ += size;
    queue_.push_back(std::move(batch));
    return true;
  }
  std::optional<std::string> peek(size_t i) const override {
    std::lock_guard lock(mu_);
    if (i >= queue_.size()) return std::nullopt;
    return queue_[i];
  }
  void pop(size_t n) override {
    std::lock_guard lock(mu_);
    n = std::min(n, queue_.size());
    for (size_t k = 0; k < n; ++k) {
      bytes_ -= queue_.front().size();
      queue_.pop_front();
    }
  }
  size_t batches() const override {
    std::lock_guard lock(mu_);
    return queue_.size();
  }
  uint64_t bytes() const override {
    std::lock_guard lock(mu_);
    return bytes_;
  }
  uint64_t dropped() const override {
    std::lock_guard lock(mu_);
    return dropped_;
  }
  mutable std::mutex mu_;
  const uint64_t max_bytes_;
  std::deque<std::string> queue_;
  uint64_t bytes_ = 0;
  uint64_t dropped_ = 0;
};

// ------------------------------------------------------------------ disk --

constexpr uint32_t kMagic = 0x5053444e;  // "NDSP" little-endian
constexpr uint64_t kHeaderBytes = 12;    // magic, length, CRC-32 (LE u32 each)
// A length beyond this is corruption, not a batch (batches are ~KB..MB).
constexpr uint64_t kMaxRecordBytes = 256ull << 20;
constexpr char kHeadFile[] = "head";
constexpr char kHeadTmpFile[] = "head.tmp";
constexpr char kLockFile[] = "lock";
constexpr char kEpochFile[] = "epoch";
constexpr char kEpochTmpFile[] = "epoch.tmp";

uint32_t crc(const char* data, size_t size) {
  return static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(data), static_cast<uInt>(size)));
}
void putU32(char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t getU32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<unsigned char>(in[i])} << (8 * i);
  return v;
}
std::string errnoText() { return std::strerror(errno); }

std::string segmentName(uint64_t index) {
  char name[40];
  std::snprintf(name, sizeof name, "seg-%020llu.log", static_cast<unsigned long long>(index));
  return name;
}
std::optional<uint64_t> parseSegmentName(const std::string& name) {
  // seg-<20 digits>.log exactly
  if (name.size() != 4 + 20 + 4 || name.rfind("seg-", 0) != 0 || name.compare(24, 4, ".log") != 0)
    return std::nullopt;
  uint64_t v = 0;
  for (size_t i = 4; i < 24; ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return v;
}

// Whether a valid record starts at `pos` of `data`; its payload length if so.
std::optional<uint32_t> validRecordAt(const std::string& data, size_t pos) {
  if (pos + kHeaderBytes > data.size()) return std::nullopt;
  if (getU32(data.data() + pos) != kMagic) return std::nullopt;
  const uint32_t length = getU32(data.data() + pos + 4);
  if (length > kMaxRecordBytes || pos + kHeaderBytes + length > data.size()) return std::nullopt;
  if (crc(data.data() + pos + kHeaderBytes, length) != getU32(data.data() + pos + 8))
    return std::nullopt;
  return length;
}

bool readWholeFile(int fd, std::string* out) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  out->resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out->size()) {
    const ssize_t n = pread(fd, out->data() + got, out->size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  out->resize(got);
  return true;
}

bool writeAll(int fd, const char* data, size_t size, off_t offset) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void fsyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

struct Record {
  uint64_t segment;
  uint64_t offset;
  uint32_t length;
  uint64_t framed() const { return kHeaderBytes + length; }
};

struct Head {
  uint64_t segment = 0;
  uint64_t offset = 0;
  uint64_t dropped = 0;
};

std::string headText(const Head& h) {
  std::ostringstream body;
  body << "netdiag-spool v1 head " << h.segment << ' ' << h.offset << " dropped " << h.dropped;
  const std::string text = body.str();
  std::ostringstream out;
  out << text << " crc " << crc(text.data(), text.size()) << '\n';
  return out.str();
}

std::optional<Head> parseHead(const std::string& content) {
  const size_t crc_at = content.rfind(" crc ");
  if (crc_at == std::string::npos) return std::nullopt;
  const std::string text = content.substr(0, crc_at);
  std::istringstream tail(content.substr(crc_at + 5));
  uint64_t want = 0;
  if (!(tail >> want) || want != crc(text.data(), text.size())) return std::nullopt;
  std::istringstream in(text);
  std::string magic, version, word_head, word_dropped;
  Head h;
  if (!(in >> magic >> version >> word_head >> h.segment >> h.offset >> word_dropped >> h.dropped))
    return std::nullopt;
  if (magic != "netdiag-spool" || version != "v1" || word_head != "head" ||
      word_dropped != "dropped")
    return std::nullopt;
  return h;
}

class DiskSpool final : public Spool {
 public:
  DiskSpool(std::string dir, uint64_t max_bytes)
      : dir_(std::move(dir)),
        max_bytes_(max_bytes),
        // Segments small enough that deleting acknowledged ones frees space
        // promptly, large enough that there are few files.
        segment_limit_(std::clamp<uint64_t>(max_bytes / 16, 64 << 10, 8 << 20)) {}

  ~DiskSpool() override {
    for (auto& [index, fd] : fds_) ::close(fd);
    if (lock_fd_ >= 0) ::close(lock_fd_);
  }

  bool open(std::string* error, std::vector<std::string>* warnings) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) return fail(error, "cannot create spool directory " + dir_ + ": " + ec.message());
    const std::string lock_path = path(kLockFile);
    lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd_ < 0) return fail(error, "cannot open " + lock_path + ": " + errnoText());
    if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0)
      return fail(error, "spool directory " + dir_ + " is in use by another process (" + lock_path +
                             " is locked)");

    if (!takeEpoch(error, warnings)) return false;

    Head head;
    bool head_ok = false;
    {
      const int fd = ::open(path(kHeadFile).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        std::string content;
        readWholeFile(fd, &content);
        ::close(fd);
        if (auto h = parseHead(content)) {
          head = *h;
          head_ok = true;
        } else {
          warn(warnings, path(kHeadFile) +
                             ": unreadable head file; replaying every record "
                             "(the analyzer drops the duplicates)");
        }
      }
    }

    std::map<uint64_t, std::string> segments;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
      const std::string name = entry.path().filename().string();
      if (name == kHeadFile || name == kLockFile || name == kEpochFile) continue;
      if (name == kHeadTmpFile || name == kEpochTmpFile) {
        fs::remove(entry.path(), ec);  // an interrupted head update
        continue;
      }
      const auto index = parseSegmentName(name);
      if (!index || !entry.is_regular_file()) {
        warn(warnings, entry.path().string() + ": not a spool file, ignored");
        continue;
      }
      segments[*index] = entry.path().string();
    }
    if (ec) return fail(error, "cannot list spool directory " + dir_ + ": " + ec.message());
    // The head is written when a spool is created, so a missing one with
    // segments present was lost (deleted by hand, a crash mid-creation).
    if (!head_ok && !segments.empty() && !fs::exists(path(kHeadFile), ec))
      warn(warnings, path(kHeadFile) + ": missing; replaying every record");

    uint64_t next_segment = head.segment;
    for (const auto& [index, file] : segments) {
      next_segment = std::max(next_segment, index + 1);
      if (index < head.segment) {  // fully acknowledged before the restart
        fs::remove(file, ec);
        continue;
      }
      const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0) {
        warn(warnings, file + ": cannot open (" + errnoText() + "), skipped");
        continue;
      }
      std::string data;
      if (!readWholeFile(fd, &data)) {
        warn(warnings, file + ": cannot read (" + errnoText() + "), skipped");
        ::close(fd);
        continue;
      }
      const size_t before = records_.size();
      scanSegment(index, file, data, index == head.segment ? head.offset : 0, warnings);
      if (records_.size() == before) {
        ::close(fd);
        fs::remove(file, ec);  // nothing left to deliver in it
      } else {
        fds_[index] = fd;
      }
    }
    dropped_ = head.dropped;
    // Appending to a segment whose tail may be torn would hide new records
    // behind garbage: always start a fresh one.
    write_segment_ = next_segment;
    write_offset_ = 0;

    bool dropped_any = false;
    while (!records_.empty() && bytes_ > max_bytes_) {  // the bound may have shrunk
      dropFront();
      ++dropped_;
      dropped_any = true;
    }
    if (dropped_any || !head_ok) {
      writeHead();
      releaseSegments();
    }
    return true;
  }

  bool push(std::string batch) override {
    std::lock_guard lock(mu_);
    const uint64_t framed = kHeaderBytes + batch.size();
    if (batch.size() > kMaxRecordBytes || framed > max_bytes_) {
      ++dropped_;
      writeHead();
      return false;
    }
    bool dropped_any = false;
    while (!records_.empty() && bytes_ + framed > max_bytes_) {
      dropFront();
      ++dropped_;
      dropped_any = true;
    }
    const bool stored = append(batch);
    if (!stored) {
      ++dropped_;
      dropped_any = true;
    }
    if (dropped_any) {
      writeHead();
      releaseSegments();
    }
    return stored;
  }

  std::optional<std::string> peek(size_t i) const override {
    std::lock_guard lock(mu_);
    if (i >= records_.size()) return std::nullopt;
    const Record& r = records_[i];
    const auto it = fds_.find(r.segment);
    if (it == fds_.end()) return std::nullopt;
    std::string data(r.framed(), '\0');
    size_t got = 0;
    while (got < data.size()) {
      const ssize_t n = pread(it->second, data.data() + got, data.size() - got,
                              static_cast<off_t>(r.offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;
      got += static_cast<size_t>(n);
    }
    if (!validRecordAt(data, 0)) return std::nullopt;  // changed under us on disk
    return data.substr(kHeaderBytes);
  }

  void pop(size_t n) override {
    std::lock_guard lock(mu_);
    n = std::min(n, records_.size());
    if (n == 0) return;
    for (size_t k = 0; k < n; ++k) dropFront();
    writeHead();
    releaseSegments();
  }

  size_t batches() const override {
    std::lock_guard lock(mu_);
    return records_.size();
  }
  uint64_t bytes() const override {
    std::lock_guard lock(mu_);
    return bytes_;
  }
  uint64_t dropped() const override {
    std::lock_guard lock(mu_);
    return dropped_;
  }
  uint64_t epoch() const override { return epoch_; }

 private:
  // This start's epoch: the one in the epoch file plus one (a random one when
  // there is none yet, so a spool directory made anew never reuses the
  // numbers of a deleted one), written and fsync'ed before open() returns.
  bool takeEpoch(std::string* error, std::vector<std::string>* warnings) {
    const std::string file = path(kEpochFile);
    uint64_t previous = 0;
    bool have = false;
    const int in = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (in >= 0) {
      std::string content;
      const bool read = readWholeFile(in, &content);
      ::close(in);
      std::istringstream text(content);
      std::string magic, version, word;
      if (read && (text >> magic >> version >> word >> previous) && magic == "netdiag-spool" &&
          version == "v1" && word == "epoch" && previous != 0) {
        have = true;
      } else {
        warn(warnings, file + ": unreadable epoch file; taking a random epoch");
      }
    } else if (errno != ENOENT) {
      return fail(error, "cannot read " + file + ": " + errnoText());
    }
    epoch_ = have ? previous + 1 : randomEpoch();
    if (epoch_ == 0) epoch_ = 1;  // wrapped
    const std::string text = "netdiag-spool v1 epoch " + std::to_string(epoch_) + "\n";
    const std::string tmp = path(kEpochTmpFile);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return fail(error, "cannot write " + tmp + ": " + errnoText());
    const bool ok = writeAll(fd, text.data(), text.size(), 0) && ::fsync(fd) == 0;
    ::close(fd);
    if (!ok || ::rename(tmp.c_str(), file.c_str()) != 0) {
      return fail(error, "cannot persist the uplink epoch in " + file + ": " + errnoText());
    }
    fsyncDir(dir_);
    return true;
  }

  static bool fail(std::string* error, std::string message) {
    if (error) *error = std::move(message);
    return false;
  }
  static void warn(std::vector<std::string>* warnings, std::string message) {
    if (warnings) warnings->push_back(std::move(message));
  }
  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  uint64_t epoch_ = 0;

  // Collects the valid records of one segment at or after `from`, skipping
  // (and reporting) torn or corrupt stretches.
  void scanSegment(uint64_t index, const std::string& file, const std::string& data, uint64_t from,
                   std::vector<std::string>* warnings) {
    size_t pos = 0;
    while (pos < data.size()) {
      if (const auto length = validRecordAt(data, pos)) {
        if (pos >= from) {
          records_.push_back(Record{index, pos, *length});
          bytes_ += kHeaderBytes + *length;
        }
        pos += kHeaderBytes + *length;
        continue;
      }
      size_t next = pos + 1;
      while (next < data.size() && !validRecordAt(data, next)) ++next;
      if (next >= data.size()) {
        warn(warnings, file + ": torn or corrupt tail of " + std::to_string(data.size() - pos) +
                           " bytes at offset " + std::to_string(pos) + " skipped");
      } else {
        warn(warnings, file + ": " + std::to_string(next - pos) + " corrupt bytes at offset " +
                           std::to_string(pos) + " skipped");
      }
      pos = next;
    }
  }

  bool append(const std::string& batch) {
    const uint64_t framed = kHeaderBytes + batch.size();
    if (write_fd_ < 0 || (write_offset_ > 0 && write_offset_ + framed > segment_limit_)) {
      if (write_fd_ >= 0) {
        ++write_segment_;
        write_offset_ = 0;
        write_fd_ = -1;  // stays open in fds_ for peeks while it holds records
      }
      const std::string file = path(segmentName(write_segment_));
      const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) return false;
      fsyncDir(dir_);  // the new file's name must survive a crash too
      write_fd_ = fd;
      fds_[write_segment_] = fd;
    }
    char header[kHeaderBytes];
    putU32(header, kMagic);
    putU32(header + 4, static_cast<uint32_t>(batch.size()));
    putU32(header + 8, crc(batch.data(), batch.size()));
    std::string frame;
    frame.reserve(framed);
    frame.append(header, kHeaderBytes);
    frame.append(batch);
    if (!writeAll(write_fd_, frame.data(), frame.size(), static_cast<off_t>(write_offset_)) ||
        fdatasync(write_fd_) != 0) {
      // Cut the partial record off; if even that fails the next open skips it.
      if (ftruncate(write_fd_, static_cast<off_t>(write_offset_)) != 0) {
        ++write_segment_;  // never write after an unknown tail
        write_offset_ = 0;
        write_fd_ = -1;
      }
      return false;
    }
    records_.push_back(Record{write_segment_, write_offset_, static_cast<uint32_t>(batch.size())});
    write_offset_ += framed;
    bytes_ += framed;
    return true;
  }

  void dropFront() {
    bytes_ -= records_.front().framed();
    records_.pop_front();
  }

  Head currentHead() const {
    Head h;
    h.dropped = dropped_;
    if (!records_.empty()) {
      h.segment = records_.front().segment;
      h.offset = records_.front().offset;
    } else {
      h.segment = write_segment_;
      h.offset = write_offset_;
    }
    return h;
  }

  // Atomically replaces the head file (write, rename). Not fsync'ed: losing
  // the newest head in a power cut only resends acknowledged batches, which
  // the analyzer drops as duplicates, and an fsync per acknowledgement
  // would cost more than the batches themselves.
  void writeHead() {
    const std::string text = headText(currentHead());
    const std::string tmp = path(kHeadTmpFile);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    const bool ok = writeAll(fd, text.data(), text.size(), 0);
    ::close(fd);
    if (ok) ::rename(tmp.c_str(), path(kHeadFile).c_str());
  }

  // Deletes segments wholly before the head (after the head names a later one).
  void releaseSegments() {
    const uint64_t head_segment = currentHead().segment;
    for (auto it = fds_.begin(); it != fds_.end() && it->first < head_segment;) {
      if (it->first == write_segment_ && write_fd_ >= 0) {
        ++it;
        continue;
      }
      ::close(it->second);
      std::error_code ec;
      fs::remove(path(segmentName(it->first)), ec);
      it = fds_.erase(it);
    }
  }

  mutable std::mutex mu_;
  const std::string dir_;
  const uint64_t max_bytes_;
  const uint64_t segment_limit_;
  int lock_fd_ = -1;
  std::deque<Record> records_;
  std::map<uint64_t, int> fds_;  // segment -> fd, for every segment holding records
  int write_fd_ = -1;
  uint64_t write_segment_ = 0;
  uint64_t write_offset_ = 0;
  uint64_t bytes_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace

std::unique_ptr<Spool> makeMemorySpool(uint64_t max_bytes) {
  return std::make_unique<MemorySpool>(max_bytes);
}

std::unique_ptr<Spool> openDiskSpool(const std::string& dir, uint64_t max_bytes, std::string* error,
                                     std::vector<std::string>* warnings) {
  if (dir.empty()) {
    if (error) *error = "spool directory is empty";
    return nullptr;
  }
  if (max_bytes == 0) {
    if (error) *error = "spool max_bytes must be > 0 for a disk spool";
    return nullptr;
  }
  auto spool = std::make_unique<DiskSpool>(dir, max_bytes);
  if (!spool->open(error, warnings)) return nullptr;
  return spool;
}

}  // namespace netdiag::collector
