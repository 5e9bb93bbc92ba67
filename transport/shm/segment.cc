#include "transport/shm/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

#include "transport/slot_memory.h"

namespace weft::transport::shm {
namespace {

constexpr int kNameAttempts = 8;
constexpr double kMiB = 1024.0 * 1024.0;
/// Reserved by one posix_fallocate call: short enough that a timer signal every millisecond
/// rarely interrupts it.
constexpr size_t kReservePieceBytes = size_t{256} << 10;

Status randomHex(std::string* text) {
  uint64_t value = 0;
  if (getrandom(&value, sizeof(value), 0) != static_cast<ssize_t>(sizeof(value))) {
    return errnoStatus(errno, "getrandom for a shared-memory segment name");
  }
  char buffer[17];
  snprintf(buffer, sizeof(buffer), "%016" PRIx64, value);
  *text = buffer;
  return Status::ok();
}

Status missingFolder(const std::string& dir, int err) {
  return systemError(
      "shared-memory folder %s (WEFT_SHM_DIR) is not usable: %s: create it, point "
      "WEFT_SHM_DIR at an existing folder (default /dev/shm), or set NCCL_SHM_DISABLE=1",
      dir.c_str(), strerror(err));
}

Status notEnoughSpace(const std::string& dir, double freeBytes, size_t bytes, int peerRank) {
  return systemError(
      "%s has %.1f MiB free, %.1f MiB needed (%zu bytes) for a shared-memory connection with rank %d: "
      "enlarge this folder (WEFT_SHM_DIR; e.g. docker --shm-size, or mount -o remount,size=... for a "
      "tmpfs) or set NCCL_SHM_DISABLE=1",
      dir.c_str(), freeBytes / kMiB, bytes / kMiB, bytes, peerRank);
}

/// posix_fallocate of [0, bytes). It fails with EINTR when a signal arrives while it reserves (tmpfs
/// checks between pages and undoes the interrupted request), so it reserves in pieces and retries
/// an interrupted piece: a large segment is reserved even under a frequent timer signal. Returns 0
/// or an errno value.
int reserve(int fd, size_t bytes) {
  for (size_t offset = 0; offset < bytes;) {
    size_t piece = std::min(kReservePieceBytes, bytes - offset);
    int err = posix_fallocate(fd, static_cast<off_t>(offset), static_cast<off_t>(piece));
    if (err == EINTR) continue;
    if (err != 0) return err;
    offset += piece;
  }
  return 0;
}

/// Free bytes in `dir` for an unprivileged writer.
Status freeBytesIn(const std::string& dir, double* freeBytes) {
  struct statvfs info {};
  if (statvfs(dir.c_str(), &info) != 0) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR || err == EACCES) return missingFolder(dir, err);
    return errnoStatus(err, "statvfs of shared-memory folder %s", dir.c_str());
  }
  *freeBytes = static_cast<double>(info.f_bavail) * static_cast<double>(info.f_frsize);
  return Status::ok();
}

Status mapShared(int fd, size_t bytes, const std::string& path, void** base) {
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (mapped == MAP_FAILED) return errnoStatus(errno, "mmap of %zu bytes of %s", bytes, path.c_str());
  // Every page is made present and writable now, at setup, rather than by the first calls that
  // pass through the slots. MAP_POPULATE maps a shared mapping's pages read-only, so each page also
  // takes one write: an atomic add of 0, which changes nothing the peer may already have written.
  // Under a hypervisor with shadow page tables a page's first access costs about 10 us, which
  // made the first pass through a connection's slots several times slower than the rest.
  for (size_t offset = 0; offset < bytes; offset += kPageBytes) {
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(static_cast<char*>(mapped) + offset))
        .fetch_add(0, std::memory_order_relaxed);
  }
  *base = mapped;
  return Status::ok();
}

}  // namespace

ShmSegment::ShmSegment(std::string path, void* base, size_t bytes, dev_t device, ino_t inode, bool ownsName)
    : path_(std::move(path)),
      base_(base),
      bytes_(bytes),
      device_(device),
      inode_(inode),
      ownsName_(ownsName) {}

ShmSegment::~ShmSegment() {
  munmap(base_, bytes_);
  if (ownsName_) (void)unlinkName();
}

Status ShmSegment::unlinkName() {
  ownsName_ = false;
  struct stat info {};
  if (stat(path_.c_str(), &info) != 0 || info.st_dev != device_ || info.st_ino != inode_) {
    return Status::ok();  // already gone (or replaced by a file that is not ours)
  }
  if (unlink(path_.c_str()) != 0 && errno != ENOENT) {
    return errnoStatus(errno, "removing shared-memory segment name %s", path_.c_str());
  }
  return Status::ok();
}

Status ShmSegment::create(const std::string& dir, const std::string& prefix, size_t bytes, int peerRank,
                          std::unique_ptr<ShmSegment>* segment) {
  // Checked first so that a request far beyond the folder's size never reserves any memory.
  double freeBytes = 0;
  WEFT_RETURN_IF_ERROR(freeBytesIn(dir, &freeBytes));
  if (freeBytes < static_cast<double>(bytes)) return notEnoughSpace(dir, freeBytes, bytes, peerRank);

  std::string path;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < kNameAttempts; ++attempt) {
    std::string suffix;
    WEFT_RETURN_IF_ERROR(randomHex(&suffix));
    path = dir + "/" + prefix + suffix;
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) {
      int err = errno;
      if (err == ENOENT || err == ENOTDIR || err == EACCES) return missingFolder(dir, err);
      return errnoStatus(err, "creating shared-memory segment %s", path.c_str());
    }
  }
  if (fd < 0)
    return systemError("no unused shared-memory segment name in %s after %d tries", dir.c_str(),
                       kNameAttempts);

  struct stat info {};
  Status status;
  if (fstat(fd, &info) != 0) status = errnoStatus(errno, "fstat of %s", path.c_str());
  if (status.isOk()) {
    int err = reserve(fd, bytes);
    if (err == ENOSPC) {
      double nowFree = 0;
      (void)freeBytesIn(dir, &nowFree);
      status = notEnoughSpace(dir, nowFree, bytes, peerRank);
    } else if (err != 0) {
      status = errnoStatus(err, "reserving %zu bytes for shared-memory segment %s", bytes, path.c_str());
    }
  }
  void* base = nullptr;
  if (status.isOk()) status = mapShared(fd, bytes, path, &base);
  close(fd);
  if (!status.isOk()) {
    unlink(path.c_str());
    return status;
  }
  segment->reset(new ShmSegment(path, base, bytes, info.st_dev, info.st_ino, /*ownsName=*/true));
  return Status::ok();
}

Status ShmSegment::open(const std::string& path, size_t bytes, int peerRank,
                        std::unique_ptr<ShmSegment>* segment) {
  int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return errnoStatus(errno,
                       "opening shared-memory segment %s of rank %d (is the peer on this host, "
                       "with the same WEFT_SHM_DIR, and still alive?)",
                       path.c_str(), peerRank);
  }
  struct stat info {};
  Status status;
  if (fstat(fd, &info) != 0) {
    status = errnoStatus(errno, "fstat of %s", path.c_str());
  } else if (!S_ISREG(info.st_mode) || static_cast<size_t>(info.st_size) != bytes) {
    status = systemError(
        "shared-memory segment %s of rank %d holds %lld bytes, %zu expected: both ranks "
        "must run the same Weft build with the same NCCL_BUFFSIZE",
        path.c_str(), peerRank, static_cast<long long>(info.st_size), bytes);
  }
  void* base = nullptr;
  if (status.isOk()) status = mapShared(fd, bytes, path, &base);
  close(fd);
  WEFT_RETURN_IF_ERROR(status);
  segment->reset(new ShmSegment(path, base, bytes, info.st_dev, info.st_ino, /*ownsName=*/false));
  return Status::ok();
}

}  // namespace weft::transport::shm
