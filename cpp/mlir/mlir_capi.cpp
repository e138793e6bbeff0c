// Finding MLIR's C API in jaxlib's library (see mlir_capi.h).
//
// The library is hundreds of megabytes, its string table ~90 MB, so both
// tables are read in fixed-size pieces with pread: nothing of them is mapped
// or held, and the process's resident memory does not grow with them.
#include "mlir/mlir_capi.h"

#if defined(__linux__)
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace slcore {
namespace {

#if defined(__linux__)

struct Wanted {
  const char* name;
  void** slot;
  uint64_t name_offset;  // in the string table; UINT64_MAX until found
};

struct Loaded {
  std::string want;  // the file name to match
  std::string path;
  uintptr_t base = 0;
  bool found = false;
};

int find_loaded(dl_phdr_info* info, size_t, void* data) {
  auto* l = static_cast<Loaded*>(data);
  const char* name = info->dlpi_name;
  if (name == nullptr || *name == 0) return 0;
  const char* slash = std::strrchr(name, '/');
  const char* base = slash ? slash + 1 : name;
  if (l->want != base) return 0;
  l->path = name;
  l->base = info->dlpi_addr;
  l->found = true;
  return 1;
}

bool read_at(int fd, void* buf, size_t n, uint64_t offset) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t got = pread(fd, p, n, static_cast<off_t>(offset));
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

class File {
 public:
  explicit File(const std::string& path) : fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~File() {
    if (fd_ >= 0) close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

constexpr size_t kPiece = size_t{4} << 20;
constexpr size_t kLongestName = 64;  // longer than any wanted name, with its NUL

// Each wanted name's offset in the string table [offset, offset + size): the
// first place where it stands as a whole string (a NUL after it).  A linker
// may merge a name into the tail of a longer one, so a match need not start
// after a NUL.
void find_names(int fd, uint64_t offset, uint64_t size, std::vector<Wanted>& wanted) {
  std::vector<char> buf(kPiece + kLongestName);
  size_t left = wanted.size();
  for (uint64_t at = 0; at < size && left > 0; at += kPiece) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kPiece + kLongestName, size - at));
    if (!read_at(fd, buf.data(), n, offset + at)) return;
    const char* begin = buf.data();
    const char* end = begin + n;
    // Matches starting in the overlap are the next piece's.
    const char* last_start = begin + std::min(n, kPiece);
    for (const char* p = begin; p < last_start;) {
      const void* hit = memmem(p, static_cast<size_t>(end - p), "mlir", 4);
      if (hit == nullptr) break;
      const char* s = static_cast<const char*>(hit);
      if (s >= last_start) break;
      p = s + 4;
      if (p >= end || *p < 'A' || *p > 'Z') continue;  // C API names go on in CamelCase
      for (Wanted& w : wanted) {
        if (w.name_offset != UINT64_MAX) continue;
        const size_t len = std::strlen(w.name);
        if (static_cast<size_t>(end - s) > len && std::memcmp(s, w.name, len) == 0 && s[len] == 0) {
          w.name_offset = at + static_cast<uint64_t>(s - begin);
          --left;
        }
      }
    }
  }
}

// Fills each slot whose name a defined function of the symbol table carries.
void find_symbols(int fd, const Elf64_Shdr& symtab, uintptr_t base, std::vector<Wanted>& wanted) {
  const size_t per_piece = kPiece / sizeof(Elf64_Sym);
  std::vector<Elf64_Sym> syms(per_piece);
  const uint64_t count = symtab.sh_size / sizeof(Elf64_Sym);
  size_t left = 0;
  for (const Wanted& w : wanted) left += w.name_offset != UINT64_MAX;
  for (uint64_t first = 0; first < count && left > 0; first += per_piece) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(per_piece, count - first));
    if (!read_at(fd, syms.data(), n * sizeof(Elf64_Sym), symtab.sh_offset + first * sizeof(Elf64_Sym))) return;
    for (size_t i = 0; i < n; ++i) {
      const Elf64_Sym& s = syms[i];
      if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx == SHN_UNDEF || s.st_value == 0) continue;
      for (Wanted& w : wanted) {
        if (w.name_offset == s.st_name && *w.slot == nullptr) {
          *w.slot = reinterpret_cast<void*>(base + s.st_value);
          --left;
        }
      }
    }
  }
}

std::string resolve(const std::string& library, MlirCApi& api) {
  Loaded l;
  l.want = library;
  dl_iterate_phdr(find_loaded, &l);
  if (!l.found) return library + " is not loaded in this process";
  File f(l.path);
  if (f.fd() < 0) return "cannot open " + l.path;
  Elf64_Ehdr eh;
  if (!read_at(f.fd(), &eh, sizeof eh, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr)) {
    return l.path + " is not a 64-bit ELF file";
  }
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  if (eh.e_shnum == 0 || !read_at(f.fd(), sections.data(), sections.size() * sizeof(Elf64_Shdr), eh.e_shoff)) {
    return l.path + ": cannot read its section headers";
  }
  const Elf64_Shdr* symtab = nullptr;
  for (const Elf64_Shdr& s : sections) {
    if (s.sh_type == SHT_SYMTAB) symtab = &s;
  }
  if (symtab == nullptr || symtab->sh_link >= sections.size()) return l.path + " has no symbol table (stripped)";
  const Elf64_Shdr& strtab = sections[symtab->sh_link];
  std::vector<Wanted> wanted = {
      {"mlirOperationGetNumOperands", reinterpret_cast<void**>(&api.operation_num_operands), UINT64_MAX},
      {"mlirOperationGetOperand", reinterpret_cast<void**>(&api.operation_operand), UINT64_MAX},
      {"mlirOperationGetNumResults", reinterpret_cast<void**>(&api.operation_num_results), UINT64_MAX},
      {"mlirOperationGetResult", reinterpret_cast<void**>(&api.operation_result), UINT64_MAX},
      {"mlirOperationGetNextInBlock", reinterpret_cast<void**>(&api.operation_next_in_block), UINT64_MAX},
      {"mlirOperationGetLocation", reinterpret_cast<void**>(&api.operation_location), UINT64_MAX},
      {"mlirValueGetType", reinterpret_cast<void**>(&api.value_type), UINT64_MAX},
      {"mlirBlockGetFirstOperation", reinterpret_cast<void**>(&api.block_first_operation), UINT64_MAX},
      {"mlirBlockGetNumArguments", reinterpret_cast<void**>(&api.block_num_arguments), UINT64_MAX},
      {"mlirBlockGetArgument", reinterpret_cast<void**>(&api.block_argument), UINT64_MAX},
      {"mlirOperationSetAttributeByName", reinterpret_cast<void**>(&api.operation_set_attribute), UINT64_MAX},
      {"mlirOperationGetName", reinterpret_cast<void**>(&api.operation_name), UINT64_MAX},
      {"mlirIdentifierStr", reinterpret_cast<void**>(&api.identifier_str), UINT64_MAX},
      {"mlirOperationGetAttributeByName", reinterpret_cast<void**>(&api.operation_attribute), UINT64_MAX},
      {"mlirOperationCreate", reinterpret_cast<void**>(&api.operation_create), UINT64_MAX},
      {"mlirOperationGetBlock", reinterpret_cast<void**>(&api.operation_block), UINT64_MAX},
      {"mlirBlockInsertOwnedOperationBefore", reinterpret_cast<void**>(&api.block_insert_before), UINT64_MAX},
      {"mlirOperationSetOperand", reinterpret_cast<void**>(&api.operation_set_operand), UINT64_MAX},
      {"mlirOperationGetContext", reinterpret_cast<void**>(&api.operation_context), UINT64_MAX},
      {"mlirIdentifierGet", reinterpret_cast<void**>(&api.identifier_get), UINT64_MAX},
      {"mlirLocationNameGet", reinterpret_cast<void**>(&api.location_name_get), UINT64_MAX},
  };
  find_names(f.fd(), strtab.sh_offset, strtab.sh_size, wanted);
  find_symbols(f.fd(), *symtab, l.base, wanted);
  for (const Wanted& w : wanted) {
    if (*w.slot == nullptr) {
      api = MlirCApi{};
      return std::string(w.name) + " is not in " + l.path + "'s symbol table";
    }
  }
  return "";
}

#else

// Elsewhere the library is no ELF file (a Mach-O dylib, a DLL): the walk reads through the bindings.
std::string resolve(const std::string& library, MlirCApi&) {
  return "finding " + library + "'s C API is implemented for Linux's ELF libraries only";
}

#endif

}  // namespace

const MlirCApi* find_mlir_capi(const std::string& library, std::string& why) {
  // One search per library file name and process; the answers stay for the
  // process's life, so the pointers handed out stay valid.
  struct Found {
    MlirCApi api;
    std::string failure;
  };
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Found>> found;
  std::lock_guard<std::mutex> hold(mutex);
  std::unique_ptr<Found>& f = found[library];
  if (!f) {
    f = std::make_unique<Found>();
    f->failure = resolve(library, f->api);
  }
  why = f->failure;
  return why.empty() ? &f->api : nullptr;
}

}  // namespace slcore
