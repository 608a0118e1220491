// Fuzz target: the consent store's file (daemon/consent, daemon/state_file) as it may be found on
// disk after a hand edit or a torn write, loaded and asked for a decision, then written back.
// Properties (fail closed): a definition is approved only if the file says so for its exact hash;
// after an approval is written, the store reads back as approved.
#include "daemon/consent.h"
#include "fuzz/driver.h"

#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <string_view>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "consent_store: %s\n", what);
  std::abort();
}

void empty_folder(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.' || (e->d_name[1] != '\0' && std::string_view(e->d_name) != ".."))
      ::unlink((dir + "/" + e->d_name).c_str());
  }
  ::closedir(d);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace oppx::daemon;
  const std::string dir = oppx::fuzz::temp_dir() + "/consent";
  const std::string path = dir + "/consent.json";
  ::mkdir(dir.c_str(), 0700);
  empty_folder(dir);  // the last input's file, and what the store moved aside (consent.json.bad-…)
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ::write(fd, data, size) != static_cast<ssize_t>(size)) broken("cannot write the input");
  ::close(fd);

  const std::string root = "/repo", name = "fs";
  const std::string hash = sha256_hex("fuzz definition");
  std::string_view text(reinterpret_cast<const char*>(data), size);
  {
    ConsentStore store(path);
    Consent c = store.lookup(root, name, hash);
    // The hash of this definition cannot come from the fuzzer's mutations without it being in the text.
    if (c == Consent::kApproved && text.find(hash) == std::string_view::npos)
      broken("approved without the definition's hash in the file");
    (void)store.approved_files(root, name);
    (void)store.lookup("/other", name, hash);
    bool saved = false;
    store.approve(root, name, hash, {}, [&](auto r) { saved = r.has_value(); });
    if (!saved) broken("the approval was not written");
  }
  ConsentStore again(path);
  if (again.lookup(root, name, hash) != Consent::kApproved) broken("an approval written is not read back");
  return 0;
}
