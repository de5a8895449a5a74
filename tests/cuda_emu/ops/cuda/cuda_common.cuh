/* CPU emulation of src/ops/cuda/cuda_common.cuh, for checking kernel LOGIC on a machine
 * without a GPU (scripts/cuda_emu_check.sh). Every CUDA thread of a block is a std::thread;
 * blocks run one after another (so `__shared__` is `static`); __syncthreads is a block
 * barrier and warp shuffles go through a per-warp buffer and barrier. It does not model
 * the GPU's memory limits, occupancy, timing or launch-configuration limits, and cuBLAS
 * is a naive double-accumulating loop (emu_cuda.h: the runtime and cuBLAS shims). A pass here is evidence, not a GPU result. */
#pragma once
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include "ops/ops.h"
}
struct uint3e { unsigned x = 0, y = 0, z = 0; };
struct dim3 { unsigned x, y, z; dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };
inline thread_local uint3e threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
using std::min; using std::max;
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
#include "emu_cuda.h"
void cuda_fail(const char *file, int line, const char *call, const char *msg);
const char *cublas_status_name(cublasStatus_t s);
extern int g_cuda_sync_launches;
#define CUDA_CHECK(call) do { cudaError_t err_ = (call); if (err_ != cudaSuccess) cuda_fail(__FILE__, __LINE__, #call, cudaGetErrorString(err_)); } while (0)
#define CUBLAS_CHECK(call) do { cublasStatus_t st_ = (call); if (st_ != CUBLAS_STATUS_SUCCESS) cuda_fail(__FILE__, __LINE__, #call, cublas_status_name(st_)); } while (0)
#define KERNEL_CHECK(name) do { } while (0)
extern cublasHandle_t g_cublas;
enum CudaPrecision { PREC_FP32, PREC_TF32, PREC_BF16 };
extern int g_cuda_prec;
#define CUDA_WS_SLOTS 12
#define WS_COLSUM 9
void cuda_colsum_acc(float *out, const float *X, int R, int C);
void *cuda_ws(int slot, size_t bytes);
static inline float *ws_f(int slot, size_t n) { return (float *)cuda_ws(slot, n * sizeof(float)); }
void cuda_gemm(float *C, const float *A, const float *B, int M, int N, int K, int ta, int tb, float alpha, float beta);
void cuda_gemm_strided(float *C, const float *A, const float *B, int M, int N, int K, int ta, int tb, float alpha,
                       float beta, int batch, long long sA, long long sB, long long sC);
#define TPB 256
static inline int grid_for(size_t n, int tpb = TPB) { size_t g = (n + tpb - 1) / tpb; if (g > 64) g = 64; return (int)(g ? g : 1); }
#define GRID_STRIDE(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)blockDim.x * gridDim.x)
// sync primitives
struct EmuBlock { std::barrier<> *bar; std::vector<std::barrier<> *> wbar; std::vector<long long> xbuf; void *dyn; };
inline EmuBlock *g_blk;
inline void __syncthreads() { g_blk->bar->arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { g_blk->wbar[threadIdx.x >> 5]->arrive_and_wait(); }
template <class T> inline T emu_shfl(T v, int src_of_lane_fn_xor, int mode) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    long long raw = 0; memcpy(&raw, &v, sizeof v);
    g_blk->xbuf[threadIdx.x] = raw;
    g_blk->wbar[w]->arrive_and_wait();
    int src = mode ? (lane ^ src_of_lane_fn_xor) : src_of_lane_fn_xor;
    long long r = g_blk->xbuf[w * 32 + src];
    g_blk->wbar[w]->arrive_and_wait();
    T out; memcpy(&out, &r, sizeof out); return out;
}
template <class T> inline T __shfl_xor_sync(unsigned, T v, int o) { return emu_shfl(v, o, 1); }
template <class T> inline T __shfl_sync(unsigned, T v, int s) { return emu_shfl(v, s, 0); }
template <class T> inline T warp_sum(T v) { for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o); return v; }
inline float warp_max(float v) { for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o)); return v; }
template <class T> T block_sum(T v, T *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v); __syncthreads(); if (lane == 0) sh[w] = v; __syncthreads();
    T t = 0; for (int i = 0; i < nw; i++) t += sh[i]; return t;
}
inline float block_max(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_max(v); __syncthreads(); if (lane == 0) sh[w] = v; __syncthreads();
    float t = -INFINITY; for (int i = 0; i < nw; i++) t = fmaxf(t, sh[i]); return t;
}
/* The launch configuration against the CUDA limits, and (EMU_DEVICE_MEMORY) every pointer
 * argument against the device allocations. */
template <class T> inline void emu_check_arg(const char *name, int i, const T &) {}
template <class T> inline void emu_check_arg(const char *name, int i, T *p) {
    char what[160];
    snprintf(what, sizeof what, "kernel %s", name);
    char arg[32];
    snprintf(arg, sizeof arg, "argument %d", i);
    emu_need_dev((const void *)p, 0, what, arg);
}
inline void emu_launch_fail(const char *name, const char *why, unsigned a, unsigned b, unsigned c) {
    fprintf(stderr, "emu: kernel %s: invalid launch: %s (%u, %u, %u)\n", name, why, a, b, c);
    exit(98);
}
/* One std::thread per CUDA thread of a block, kept for all the blocks of a launch (blocks run
 * one after another): between blocks the threads meet at a launch barrier and thread 0
 * makes fresh block and warp barriers (a thread that returns early drops out of them). */
template <class K, class... A> void emu_launch(K kern, const char *name, dim3 grid, dim3 block, size_t shm, A... args) {
    int nt = block.x * block.y * block.z, nw = (nt + 31) / 32;
    if (!block.x || !block.y || !block.z || block.x > 1024 || block.y > 1024 || block.z > 64 || nt > 1024)
        emu_launch_fail(name, "block", block.x, block.y, block.z);
    if (!grid.x || !grid.y || !grid.z || grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
        emu_launch_fail(name, "grid", grid.x, grid.y, grid.z);
    if (shm > 48 * 1024) {
        auto it = g_emu_shm_optin.find((void *)kern);
        if (it == g_emu_shm_optin.end() || (size_t)it->second < shm)
            emu_launch_fail(name, "dynamic shared memory over 48 KiB without cudaFuncSetAttribute (bytes, opted-in, -)",
                            (unsigned)shm, it == g_emu_shm_optin.end() ? 0u : (unsigned)it->second, 0);
    }
    { int i = 0; (emu_check_arg(name, i++, args), ...); }
    EmuDevScope guard(name);
    std::vector<char> dyn(shm + 16);
    std::barrier<> launch(nt);
    EmuBlock b; b.bar = nullptr; b.xbuf.assign(nt, 0); b.dyn = dyn.data(); b.wbar.assign(nw, nullptr);
    auto fresh = [&]() {
        delete b.bar; b.bar = new std::barrier<>(nt);
        for (int w = 0; w < nw; w++) { delete b.wbar[w]; b.wbar[w] = new std::barrier<>(32); }
        memset(dyn.data(), 0xff, dyn.size()); // NaN: a read of unwritten dynamic shared memory shows
        g_blk = &b;
    };
    std::vector<std::thread> th;
    for (int t = 0; t < nt; t++)
        th.emplace_back([&, t]() {
            threadIdx.x = t % block.x; threadIdx.y = (t / block.x) % block.y; threadIdx.z = t / (block.x * block.y);
            blockDim = block; gridDim = grid;
            // flat id for shuffles: 2-D blocks here use no shuffles (k_conv_bwd_part, the column sums)
            for (unsigned bz = 0; bz < grid.z; bz++)
                for (unsigned by = 0; by < grid.y; by++)
                    for (unsigned bx = 0; bx < grid.x; bx++) {
                        launch.arrive_and_wait();
                        if (t == 0) fresh();
                        launch.arrive_and_wait();
                        blockIdx.x = bx; blockIdx.y = by; blockIdx.z = bz;
                        kern(args...);
                        b.bar->arrive_and_drop(); b.wbar[t / 32]->arrive_and_drop();
                    }
        });
    for (auto &x : th) x.join();
    delete b.bar; for (auto p : b.wbar) delete p;
}
