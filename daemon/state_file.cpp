// StateFile: common/fs atomic_write (temp in the same folder, fsync, rename, fsync of the
// folder); a file is trusted only when it is a regular file of ours, 0600 or stricter.
#include "daemon/state_file.h"

#include "common/fs.h"
#include "common/log.h"
#include "daemon/config_write.h"
#include "daemon/worker.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

constexpr std::size_t kMaxStoreBytes = 4u << 20;

std::string file_stamp(const struct stat& st) {
  return fmt::format("{}:{}:{}.{}", st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

}  // namespace

std::string utc_now(const char* format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

StateFile::StateFile(std::string path, std::string what, std::string lost, std::string section, Worker* worker)
    : path_(std::move(path)),
      what_(std::move(what)),
      lost_(std::move(lost)),
      section_(std::move(section)),
      worker_(worker) {}

json::object* StateFile::section(bool create) {
  if (!doc_.is_object()) {
    if (!create) return nullptr;
    doc_ = json::object{{"version", 1}};
  }
  json::value* r = doc_.as_object().if_contains(section_);
  if (!r) {
    if (!create) return nullptr;
    r = &(doc_.as_object()[section_] = json::object{});
  }
  return r->if_object();
}

void StateFile::set_aside(const std::string& why, bool untrusted) {
  std::optional<Kept> kept;
  if (untrusted && keep_) {
    // Followed if a link, but only a regular file is read, and not past the bound.
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      std::string text = read_and_close(fd, kMaxStoreBytes);
      fd = -1;
      boost::system::error_code ec;
      json::value v = text.size() > kMaxStoreBytes ? json::value() : json::parse(text, ec);
      if (!ec && v.is_object()) kept = keep_(v);
    }
    if (fd >= 0) ::close(fd);
  }
  std::string bad = path_ + ".bad-" + utc_now("%Y%m%dT%H%M%SZ");
  for (int i = 1; ::access(bad.c_str(), F_OK) == 0 && i < 100; ++i)
    bad = fmt::format("{}.bad-{}-{}", path_, utc_now("%Y%m%dT%H%M%SZ"), i);
  bool moved = ::rename(path_.c_str(), bad.c_str()) == 0;
  // Said until the next write, so worded as what happened then, not as now.
  problem_ = fmt::format(
      "{} {} was set aside at {} because it {}: {}, and {}", what_, path_, utc_now("%H:%M:%S UTC"), why,
      moved ? "it was moved aside to " + bad : fmt::format("it could not be moved aside ({})", std::strerror(errno)),
      kept ? kept->said : lost_);
  log::warn("{}", problem_);
  doc_ = nullptr;
  stamp_ = "moved";
  if (!kept) return;
  doc_ = std::move(kept->doc);
  write(
      [path = path_](boost::system::result<void, std::string> r) {
        if (!r) log::warn("{}: what was kept of it could not be written: {}", path, r.error());
      },
      true);
}

void StateFile::load() {
  if (saving_ > 0) return;  // the file is older than memory until the write lands
  struct stat st {};
  if (::lstat(path_.c_str(), &st) != 0) {
    doc_ = nullptr;
    stamp_ = "missing";
    return;
  }
  // Whoever else can write this file could grant something in our name.
  if (S_ISLNK(st.st_mode)) return set_aside("is a symbolic link", true);
  if (!S_ISREG(st.st_mode)) return set_aside("is not a regular file");
  if (st.st_uid != ::geteuid()) return set_aside(fmt::format("belongs to uid {}, not to you", st.st_uid), true);
  if (st.st_mode & 077)
    return set_aside(
        fmt::format("can be read or written by others (mode {:04o}; oppx writes it 0600)", st.st_mode & 07777), true);
  if (file_stamp(st) == stamp_) return;
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return set_aside(fmt::format("cannot be read ({})", std::strerror(errno)));
  std::string text = read_and_close(fd, kMaxStoreBytes);
  if (text.size() > kMaxStoreBytes) return set_aside("is larger than 4 MiB");
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return set_aside("is not valid JSON (" + ec.message() + ")");
  if (!v.is_object()) return set_aside("is not a JSON object");
  if (auto* r = v.as_object().if_contains(section_); r && !r->is_object())
    return set_aside("has a \"" + section_ + "\" that is not an object");
  doc_ = std::move(v);
  stamp_ = file_stamp(st);
}

void StateFile::save(Saved done) { write(std::move(done), false); }

void StateFile::write(Saved done, bool keep_problem) {
  keep_problem_ = keep_problem;
  std::string text = pretty_json(doc_);
  if (!worker_) {
    auto r = atomic_write(path_, text, 0600);
    saved(r);
    return done(std::move(r));
  }
  ++saving_;
  worker_->run([path = path_, text = std::move(text)] { return atomic_write(path, text, 0600); },
               [this, done = std::move(done)](boost::system::result<void, std::string> r) {
                 --saving_;
                 saved(r);
                 done(std::move(r));
               });
}

// Writes land in order, and each holds all that memory held when it was asked: the last one says
// what the file now is.
void StateFile::saved(const boost::system::result<void, std::string>& r) {
  if (saving_ > 0) return;
  if (!r) {
    stamp_.clear();  // read it again next time: memory may now differ from the file
    return;
  }
  struct stat st {};
  stamp_ = ::lstat(path_.c_str(), &st) == 0 ? file_stamp(st) : "";
  if (!keep_problem_) problem_.clear();
}

}  // namespace oppx::daemon
