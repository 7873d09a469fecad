#pragma once
// AMX's tile registers for bf16 matrix products: their configuration, Linux's
// permission to use them, and one product over operands laid out as tiles load them.
// A tile holds 16 rows of 64 bytes. tdpbf16ps adds to an fp32 tile C (16 x 16) the
// product of a bf16 tile A (16 x 32, row-major) and a bf16 tile B in the
// pair-interleaved ("VNNI") layout: B's row p holds, for each of 16 columns n, the
// values of rows 2p and 2p + 1 of the logical (32 x 16) matrix, side by side.
#include <cstdint>

#include <c10/util/BFloat16.h>

namespace vit::detail::amx {

// Whether this process may use AMX's bf16 tiles: cpu_isa() (VIT_CPU_ISA's cap
// included) reaches kAmx, and Linux granted the tile state (asked once).
bool tiles_usable();

constexpr int64_t kTileRows = 16;              // rows of every tile
constexpr int64_t kTileColumns = 16;           // fp32 columns of C, dword columns of B
constexpr int64_t kTileDepth = 32;             // bf16 values of A's rows: one step along K
constexpr int64_t kPairRows = kTileDepth / 2;  // rows of B per step

inline int64_t round_up(int64_t n, int64_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

// Loads tile_product()'s configuration on the calling thread for a scope of tile
// work, and puts back what the thread had before (oneDNN's, or none).
class TileScope {
 public:
  TileScope();
  ~TileScope();
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;

 private:
  alignas(64) uint8_t saved_[64];  // the thread's configuration before, as STTILECFG writes it
};

// c = a b, fp32, inside a TileScope, where
//   a: m_tiles*16 rows of k_steps*32 bf16 values, rows a_stride values apart;
//   b: the pair-interleaved B, k_steps*16 rows of n_tiles*16 value pairs,
//      rows b_stride pairs apart;
//   c: m_tiles*16 rows of n_tiles*16 floats, rows c_stride floats apart.
// Every row and value of those extents is read or written: callers pad their
// operands (zeros along K) and ignore what their padded rows produce.
void tile_product(const c10::BFloat16* a, int64_t a_stride, const c10::BFloat16* b,
                  int64_t b_stride, float* c, int64_t c_stride, int64_t m_tiles, int64_t n_tiles,
                  int64_t k_steps);

}  // namespace vit::detail::amx
