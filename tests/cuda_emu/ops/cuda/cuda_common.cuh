/* CPU emulation of src/ops/cuda/cuda_common.cuh, for checking kernel LOGIC on a machine
 * without a GPU (scripts/cuda_emu_check.sh). Every CUDA thread of a block is a fiber run by
 * the launching thread; blocks run one after another; __syncthreads is a block barrier and
 * warp shuffles go through a per-warp buffer and barrier; shared memory, static (rewritten
 * by launch2call.c; a `__shared__` left in code it did not rewrite is plain `static`) and
 * dynamic, is the block's own and starts as NaN in every block. Divergent barriers (a
 * deadlock, a __syncthreads after some threads returned, a full-mask shuffle or __syncwarp
 * with returned lanes) and launches outside the CUDA limits stop the program. It does not
 * model the GPU's memory model (every thread sees every write at once), occupancy or
 * timing, and cuBLAS is a double-accumulating GEMM (emu_cuda.h: the runtime and cuBLAS
 * shims). A pass here is evidence, not a GPU result. */
#pragma once
#include <functional>
#include <ucontext.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <stddef.h>
#include <stdint.h>
#include "ops/cuda/cuda.h"
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
// sync primitives: the threads of a block are fibers run by one host thread; a barrier
// parks the fiber that arrives until the last one of its group arrives. On x86-64 a fiber
// switch saves the callee-saved registers and swaps stacks (no system call, unlike
// swapcontext, which saves the signal mask); elsewhere (or with EMU_UCONTEXT) ucontext.
#if defined(__x86_64__) && !defined(EMU_UCONTEXT)
extern "C" void emu_switch(void **save_sp, void *to_sp);
__asm__(".text\n.weak emu_switch\n.type emu_switch,@function\nemu_switch:\n"
        "pushq %rbp\npushq %rbx\npushq %r12\npushq %r13\npushq %r14\npushq %r15\n"
        "movq %rsp, (%rdi)\nmovq %rsi, %rsp\n"
        "popq %r15\npopq %r14\npopq %r13\npopq %r12\npopq %rbx\npopq %rbp\nret\n");
struct EmuCtx { void *sp; };
inline void emu_ctx_make(EmuCtx &c, char *stack, size_t n, void (*fn)()) {
    void **s = (void **)(((uintptr_t)(stack + n)) & ~(uintptr_t)15);
    *--s = nullptr;       /* fn's return address: fn never returns */
    *--s = (void *)fn;    /* where emu_switch's ret goes */
    for (int i = 0; i < 6; i++) *--s = nullptr; /* rbp rbx r12-r15 */
    c.sp = s;
}
inline void emu_ctx_swap(EmuCtx &from, EmuCtx &to) { emu_switch(&from.sp, to.sp); }
#else
struct EmuCtx { ucontext_t uc; };
inline void emu_ctx_make(EmuCtx &c, char *stack, size_t n, void (*fn)()) {
    getcontext(&c.uc); c.uc.uc_stack.ss_sp = stack; c.uc.uc_stack.ss_size = n; c.uc.uc_link = nullptr;
    makecontext(&c.uc, fn, 0);
}
inline void emu_ctx_swap(EmuCtx &from, EmuCtx &to) { swapcontext(&from.uc, &to.uc); }
#endif
struct EmuBar { int expected = 0, arrived = 0; unsigned gen = 0; };
struct EmuFiber { EmuCtx ctx; uint3e tid; int flat, state; EmuBar *wait_on; unsigned wait_gen; };
enum { EMU_RUNNABLE, EMU_WAITING, EMU_DONE };
struct EmuBlock {
    EmuBar bar; std::vector<EmuBar> wbar; std::vector<int> wexited; std::vector<long long> xbuf; void *dyn;
    std::vector<EmuFiber> f; EmuCtx sched; int cur = 0, exited = 0; const char *kernel = "";
    std::vector<std::pair<const void *, size_t>> sslots; char *sarena = nullptr; size_t sused = 0; /* static __shared__ */
};
inline EmuBlock *g_blk;
enum { EMU_STATIC_SHARED = 48 * 1024 };
/* the block's memory for the static __shared__ declaration `key` (launch2call rewrites each
 * one into a call): the same bytes for every thread of the block, NaN-poisoned when the
 * block starts, so a read of shared memory this block did not write shows */
inline void *emu_shared(const void *key, size_t bytes);
[[noreturn]] inline void emu_kernel_fail(const char *why) {
    EmuFiber &f = g_blk->f[g_blk->cur];
    fprintf(stderr, "emu: kernel %s, block (%u,%u,%u) thread (%u,%u,%u): %s\n", g_blk->kernel, blockIdx.x, blockIdx.y,
            blockIdx.z, f.tid.x, f.tid.y, f.tid.z, why);
    exit(98);
}
inline void *emu_shared(const void *key, size_t bytes) {
    EmuBlock &b = *g_blk;
    for (auto &sl : b.sslots) if (sl.first == key) return b.sarena + sl.second;
    size_t off = (b.sused + 15) & ~(size_t)15;
    if (off + bytes > EMU_STATIC_SHARED) emu_kernel_fail("static __shared__ memory over 48 KiB");
    b.sslots.push_back({key, off});
    b.sused = off + bytes;
    return b.sarena + off;
}
inline void emu_arrive(EmuBar &b) {
    if (++b.arrived == b.expected) { b.arrived = 0; b.gen++; return; } /* the last one releases the others */
    EmuFiber &f = g_blk->f[g_blk->cur];
    f.state = EMU_WAITING; f.wait_on = &b; f.wait_gen = b.gen;
    emu_ctx_swap(f.ctx, g_blk->sched);
}
inline void __syncthreads() {
    if (g_blk->exited) emu_kernel_fail("__syncthreads after threads of the block returned (divergent barrier)");
    emu_arrive(g_blk->bar);
}
inline int emu_warp() { return g_blk->f[g_blk->cur].flat >> 5; }
inline void __syncwarp(unsigned = 0xffffffffu) {
    if (g_blk->wexited[emu_warp()]) emu_kernel_fail("__syncwarp (full mask) after lanes of the warp returned");
    emu_arrive(g_blk->wbar[emu_warp()]);
}
template <class T> inline T emu_shfl(T v, int src_of_lane_fn_xor, int mode) {
    int flat = g_blk->f[g_blk->cur].flat, lane = flat & 31, w = flat >> 5;
    if (g_blk->wexited[w]) emu_kernel_fail("warp shuffle (full mask) after lanes of the warp returned");
    if ((size_t)(w * 32 + 32) > g_blk->xbuf.size()) emu_kernel_fail("warp shuffle in a partial warp");
    long long raw = 0; memcpy(&raw, &v, sizeof v);
    g_blk->xbuf[flat] = raw;
    emu_arrive(g_blk->wbar[w]);
    int src = mode ? (lane ^ src_of_lane_fn_xor) : src_of_lane_fn_xor;
    long long r = g_blk->xbuf[w * 32 + (src & 31)];
    emu_arrive(g_blk->wbar[w]);
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
/* The threads of a block are fibers run round-robin by the calling thread; a fiber runs until
 * it reaches a barrier or returns. Blocks run one after another. A round in which no fiber
 * can move is a deadlock (threads wait at different barriers) and stops the program. */
inline std::function<void()> *g_emu_body;
inline void emu_fiber_main() { /* never returns: switches back to the scheduler for good */
    (*g_emu_body)();
    EmuBlock &b = *g_blk;
    EmuFiber &f = b.f[b.cur];
    f.state = EMU_DONE;
    b.exited++; b.wexited[f.flat >> 5]++;
    EmuBar *bars[2] = {&b.bar, &b.wbar[f.flat >> 5]};
    for (EmuBar *x : bars) { /* a returned thread no longer counts */
        if (x->arrived) emu_kernel_fail("returned while other threads wait at a barrier (divergent barrier)");
        x->expected--;
    }
    emu_ctx_swap(f.ctx, b.sched);
    abort();
}
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
    static const size_t STACK = 256 << 10;
    static std::vector<char *> stacks;
    while ((int)stacks.size() < nt) stacks.push_back((char *)malloc(STACK));
    std::vector<char> dyn(shm + 16), sarena(EMU_STATIC_SHARED + 16, (char)0xff);
    std::function<void()> body = [&]() { kern(args...); };
    g_emu_body = &body;
    EmuBlock b; b.kernel = name; b.dyn = dyn.data(); b.f.resize(nt); b.xbuf.assign(nt, 0); b.sarena = sarena.data();
    g_blk = &b;
    blockDim = block; gridDim = grid;
    /* EMU_REVERSE=1 runs the blocks, and the threads of each block, in the opposite order: a
     * kernel without races (there are no atomics) gives the same bits either way */
    static const bool rev = getenv("EMU_REVERSE") && strcmp(getenv("EMU_REVERSE"), "0");
    size_t nb = (size_t)grid.x * grid.y * grid.z;
    for (size_t li = 0; li < nb; li++) {
        size_t l = rev ? nb - 1 - li : li;
        blockIdx.x = (unsigned)(l % grid.x);
        blockIdx.y = (unsigned)(l / grid.x % grid.y);
        blockIdx.z = (unsigned)(l / ((size_t)grid.x * grid.y));
        b.bar = EmuBar{nt, 0, 0}; b.wbar.assign(nw, EmuBar{}); b.wexited.assign(nw, 0); b.exited = 0;
        for (int w = 0; w < nw; w++) b.wbar[w].expected = std::min(32, nt - 32 * w);
        memset(dyn.data(), 0xff, dyn.size()); /* NaN: a read of unwritten shared memory shows */
        memset(b.sarena, 0xff, b.sused);
        b.sslots.clear(); b.sused = 0;
        for (int t = 0; t < nt; t++) {
            EmuFiber &f = b.f[t];
            f.flat = t; f.state = EMU_RUNNABLE;
            f.tid.x = t % block.x; f.tid.y = (t / block.x) % block.y; f.tid.z = t / (block.x * block.y);
            emu_ctx_make(f.ctx, stacks[t], STACK, emu_fiber_main);
        }
        for (int done = 0; done < nt;) {
            bool moved = false;
            done = 0;
            for (int u = 0; u < nt; u++) {
                int t = rev ? nt - 1 - u : u;
                EmuFiber &f = b.f[t];
                if (f.state == EMU_DONE) { done++; continue; }
                if (f.state == EMU_WAITING) {
                    if (f.wait_on->gen == f.wait_gen) continue;
                    f.state = EMU_RUNNABLE;
                }
                b.cur = t; threadIdx = f.tid; moved = true;
                emu_ctx_swap(b.sched, f.ctx);
            }
            if (!moved && done < nt) {
                b.cur = 0;
                for (int t = 0; t < nt; t++) if (b.f[t].state == EMU_WAITING) { b.cur = t; break; }
                threadIdx = b.f[b.cur].tid;
                emu_kernel_fail("deadlock: threads of the block wait at different barriers");
            }
        }
    }
    g_blk = nullptr;
}
