"""fp32 products of the CPU benchmark job: ATen's torch.mm against oneDNN's sgemm.

On Debian's LibTorch 1.13 torch.mm runs OpenBLAS; libdnnl.so.2 is the oneDNN
that LibTorch links, called here through ctypes on the same tensors. For each
layer of a block (qkv, proj, fc1, fc2) it times the forward and both backward
products (dx = dy W, dW = dy^T x), median of 20 calls, and checks that the two
agree. Never a runtime dependency of vit: it measures what kernels/linear chose.

Usage: OMP_NUM_THREADS=2 /usr/bin/python3 scripts/bench/sgemm_onednn_vs_aten.py [ROWS]
       ROWS = batch x 65 tokens, default 8320 (batch 128)
"""
import ctypes
import sys
import time

import torch

torch.set_num_threads(2)
dnnl = ctypes.CDLL("libdnnl.so.2")
sgemm = dnnl.dnnl_sgemm
sgemm.argtypes = [ctypes.c_char, ctypes.c_char] + [ctypes.c_int64] * 3 + [ctypes.c_float] + \
    [ctypes.c_void_p, ctypes.c_int64] * 2 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_int64]


def onednn_mm(a, b, ta, tb, out):
    """out = op(a) op(b), row-major."""
    k = a.shape[0] if ta else a.shape[1]
    status = sgemm(b"T" if ta else b"N", b"T" if tb else b"N", out.shape[0], out.shape[1], k, 1.0,
                   a.data_ptr(), a.stride(0), b.data_ptr(), b.stride(0), 0.0, out.data_ptr(),
                   out.stride(0))
    assert status == 0, status


def median_ms(fn, n=20):
    for _ in range(3):
        fn()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[n // 2] * 1e3


rows = int(sys.argv[1]) if len(sys.argv) > 1 else 8320
print(f"{rows} rows, {torch.get_num_threads()} threads; ms, ATen / oneDNN")
total_aten = total_onednn = 0.0
for name, n_out, n_in in [("qkv", 576, 192), ("proj", 192, 192), ("fc1", 768, 192), ("fc2", 192, 768)]:
    x, w, dy = torch.randn(rows, n_in), torch.randn(n_out, n_in), torch.randn(rows, n_out)
    y, dx, dw = torch.empty(rows, n_out), torch.empty(rows, n_in), torch.empty(n_out, n_in)
    pairs = [
        (lambda: torch.mm(x, w.t(), out=y), lambda: onednn_mm(x, w, False, True, y)),
        (lambda: torch.mm(dy, w, out=dx), lambda: onednn_mm(dy, w, False, False, dx)),
        (lambda: torch.mm(dy.t(), x, out=dw), lambda: onednn_mm(dy, x, True, False, dw)),
    ]
    times = [(median_ms(a), median_ms(o)) for a, o in pairs]
    for (_, run_onednn), out, exact in zip(pairs, (y, dx, dw), (x @ w.t(), dy @ w, dy.t() @ x)):
        run_onednn()
        assert torch.allclose(out, exact, rtol=1e-4, atol=1e-3), name
    print(f"{name:5s} forward {times[0][0]:6.2f} / {times[0][1]:6.2f}   dx {times[1][0]:6.2f} / "
          f"{times[1][1]:6.2f}   dW {times[2][0]:6.2f} / {times[2][1]:6.2f}")
    total_aten += sum(t[0] for t in times)
    total_onednn += sum(t[1] for t in times)
print(f"a block: {total_aten:.1f} / {total_onednn:.1f} ms")
