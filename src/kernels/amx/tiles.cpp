#include "tiles.hpp"

#include <immintrin.h>

#include "vit/cpu_isa.hpp"

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#define VIT_AMX_ON_LINUX 1
#else
#define VIT_AMX_ON_LINUX 0
#endif

// The tile instructions, in functions that hold their target attribute: the project
// builds for x86-64 without AMX, and these run only where tiles_usable().
#define VIT_AMX __attribute__((target("amx-tile,amx-bf16")))

namespace vit::detail::amx {
namespace {

// Linux's arch_prctl request for an extended state, and AMX's tile data
// (asm/prctl.h and the kernel's xstate numbering; glibc names neither).
constexpr int kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
constexpr int kTileDataFeature = 18;        // XFEATURE_XTILEDATA

bool permission_granted() {
#if VIT_AMX_ON_LINUX
  return syscall(SYS_arch_prctl, kRequestPermission, kTileDataFeature) == 0;
#else
  return false;
#endif
}

// LDTILECFG's 64-byte operand: palette 1, and for each tile its bytes per
// row and its rows.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

const TileConfig& full_tiles() {
  static const TileConfig config = [] {
    TileConfig c;
    for (int t = 0; t < 8; ++t) {
      c.bytes_per_row[t] = 64;
      c.rows[t] = kTileRows;
    }
    return c;
  }();
  return config;
}

// Tiles 0-3 accumulate a block of up to 2 x 2 tiles of c; 4-5 hold a's
// tiles, 6-7 b's. M and N (1 or 2) are the block's tiles down and across.
template <int M, int N>
VIT_AMX void block_product(const c10::BFloat16* a, int64_t a_stride, const c10::BFloat16* b,
                           int64_t b_stride, float* c, int64_t c_stride, int64_t k_steps) {
  const int64_t a_bytes = a_stride * 2, b_bytes = b_stride * 4, c_bytes = c_stride * 4;
  const auto* a1 = a + kTileRows * a_stride;  // the second row of tiles
  const auto* b1 = b + 2 * kTileColumns;      // the second column of tiles
  _tile_zero(0);
  if constexpr (N == 2) _tile_zero(1);
  if constexpr (M == 2) _tile_zero(2);
  if constexpr (M == 2 && N == 2) _tile_zero(3);
  for (int64_t s = 0; s < k_steps; ++s) {
    const int64_t a_offset = s * kTileDepth, b_offset = s * kPairRows * b_stride * 2;
    _tile_loadd(4, a + a_offset, a_bytes);
    _tile_loadd(6, b + b_offset, b_bytes);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (N == 2) {
      _tile_loadd(7, b1 + b_offset, b_bytes);
      _tile_dpbf16ps(1, 4, 7);
    }
    if constexpr (M == 2) {
      _tile_loadd(5, a1 + a_offset, a_bytes);
      _tile_dpbf16ps(2, 5, 6);
      if constexpr (N == 2) _tile_dpbf16ps(3, 5, 7);
    }
  }
  float* c1 = c + kTileRows * c_stride;
  _tile_stored(0, c, c_bytes);
  if constexpr (N == 2) _tile_stored(1, c + kTileColumns, c_bytes);
  if constexpr (M == 2) _tile_stored(2, c1, c_bytes);
  if constexpr (M == 2 && N == 2) _tile_stored(3, c1 + kTileColumns, c_bytes);
}

VIT_AMX void load_config(const TileConfig& config) {
  _tile_loadconfig(&config);
}

VIT_AMX void store_config(TileConfig& config) {
  _tile_storeconfig(&config);
}

VIT_AMX void release_tiles() {
  _tile_release();
}

}  // namespace

bool tiles_usable() {
  static const bool usable = cpu_isa() >= CpuIsa::kAmx && permission_granted();
  return usable;
}

// Every tile 16 x 64 bytes. The scope puts back the configuration oneDNN left
// loaded, since a oneDNN that skips reloading a configuration it believes is still
// there then finds it. Other code on the thread may load its own configuration in
// between, so each scope loads ours again.
TileScope::TileScope() {
  static_assert(sizeof(saved_) == sizeof(TileConfig), "STTILECFG writes 64 bytes");
  store_config(*reinterpret_cast<TileConfig*>(saved_));
  load_config(full_tiles());
}

TileScope::~TileScope() {
  const auto& saved = *reinterpret_cast<const TileConfig*>(saved_);
  if (saved.palette == 0)  // the tiles were not configured
    release_tiles();
  else
    load_config(saved);
}

void tile_product(const c10::BFloat16* a, int64_t a_stride, const c10::BFloat16* b,
                  int64_t b_stride, float* c, int64_t c_stride, int64_t m_tiles, int64_t n_tiles,
                  int64_t k_steps) {
  for (int64_t i = 0; i < m_tiles; i += 2) {
    const bool two_down = i + 1 < m_tiles;
    const auto* a_block = a + i * kTileRows * a_stride;
    float* c_row = c + i * kTileRows * c_stride;
    for (int64_t j = 0; j < n_tiles; j += 2) {
      const bool two_across = j + 1 < n_tiles;
      const auto* b_block = b + j * kTileColumns * 2;
      float* c_block = c_row + j * kTileColumns;
      if (two_down && two_across)
        block_product<2, 2>(a_block, a_stride, b_block, b_stride, c_block, c_stride, k_steps);
      else if (two_down)
        block_product<2, 1>(a_block, a_stride, b_block, b_stride, c_block, c_stride, k_steps);
      else if (two_across)
        block_product<1, 2>(a_block, a_stride, b_block, b_stride, c_block, c_stride, k_steps);
      else
        block_product<1, 1>(a_block, a_stride, b_block, b_stride, c_block, c_stride, k_steps);
    }
  }
}

}  // namespace vit::detail::amx
