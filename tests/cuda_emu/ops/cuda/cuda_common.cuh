/* CPU emulation of src/ops/cuda/cuda_common.cuh, for checking kernel LOGIC on a machine
 * without a GPU (scripts/cuda_emu_check.sh). Every CUDA thread of a block is a std::thread;
 * blocks run one after another (so `__shared__` is `static`); __syncthreads is a block
 * barrier and warp shuffles go through a per-warp buffer and barrier. It does not model
 * the GPU's memory limits, occupancy, timing or launch-configuration limits, and cuBLAS
 * is a naive double-accumulating loop. A pass here is evidence, not a GPU result. */
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
extern thread_local uint3e threadIdx, blockIdx;
extern thread_local dim3 blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
using std::min; using std::max;
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
typedef int cudaError_t;
#define cudaSuccess 0
#define cudaMemcpyDeviceToHost 2
#define cudaFuncAttributeMaxDynamicSharedMemorySize 0
inline int cudaMemcpy(void *d, const void *s, size_t n, int) { memcpy(d, s, n); return 0; }
template <class K> inline int cudaFuncSetAttribute(K, int, int) { return 0; }
void cuda_fail(const char *file, int line, const char *call, const char *msg);
#define CUDA_CHECK(call) do { if ((call) != 0) cuda_fail(__FILE__, __LINE__, #call, "err"); } while (0)
#define KERNEL_CHECK(name) do { } while (0)
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
extern EmuBlock *g_blk;
inline void __syncthreads() { g_blk->bar->arrive_and_wait(); }
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
template <class K, class... A> void emu_launch(K kern, dim3 grid, dim3 block, size_t shm, A... args) {
    int nt = block.x * block.y * block.z;
    std::vector<char> dyn(shm + 16);
    for (unsigned by = 0; by < grid.y; by++)
        for (unsigned bx = 0; bx < grid.x; bx++) {
            EmuBlock b; std::barrier<> bar(nt); b.bar = &bar; b.xbuf.assign(nt, 0); b.dyn = dyn.data();
            std::vector<std::barrier<> *> wb; for (int w = 0; w < (nt + 31) / 32; w++) wb.push_back(new std::barrier<>(32));
            b.wbar = wb; g_blk = &b;
            std::vector<std::thread> th;
            for (int t = 0; t < nt; t++)
                th.emplace_back([&, t]() {
                    threadIdx.x = t % block.x; threadIdx.y = (t / block.x) % block.y; threadIdx.z = 0;
                    // flat id for shuffles: kernels here use 1-D blocks except k_conv_bwd_part (no shuffles)
                    blockIdx.x = bx; blockIdx.y = by; blockDim = block; gridDim = grid;
                    kern(args...);
                    bar.arrive_and_drop(); wb[t / 32]->arrive_and_drop();
                });
            for (auto &x : th) x.join();
            for (auto p : wb) delete p;
        }
}
