/* emu_selftest.cpp: the emulation must stop on what a GPU would not forgive. Each case is
 * run as `emu_selftest N`; case 0 is correct code and must pass, every other case must stop
 * with exit status 98 (scripts/cuda_emu_check.sh checks both). Case 12 plants a race (a
 * shared-memory read with no barrier after the write): it prints a different sum when run
 * with EMU_REVERSE=1, while case 0 prints the same. Case 13 reads in block 1 the shared
 * memory only block 0 wrote: it must print nan (each block's shared memory starts as NaN).
 * Rewritten by launch2call (its __shared__ declarations) and built with EMU_DEVICE_MEMORY. */
#include "ops/cuda/cuda_common.cuh"

__global__ void k_ok(float *x) { float v = warp_sum(1.0f); __syncthreads(); x[threadIdx.x] = v; }
__global__ void k_ret_then_sync(float *x) { if (threadIdx.x < 16) return; __syncthreads(); x[threadIdx.x] = 1; }
__global__ void k_sync_in_branch(float *x) { if (threadIdx.x < 16) __syncthreads(); x[threadIdx.x] = 1; }
__global__ void k_shfl_partial(float *x) { if (threadIdx.x >= 20) return; x[threadIdx.x] = warp_sum(1.0f); }
__global__ void k_past_end(float *x, int n) { x[n + 300 + threadIdx.x] = 1; }
__global__ void k_race(float *x) { /* reads a neighbour's shared slot with no barrier between */
    __shared__ float sh[64];
    sh[threadIdx.x] = (float)threadIdx.x + 1;
    float v = sh[(threadIdx.x + 1) % 64];
    x[threadIdx.x] = v == v ? v : 0; /* 0 where the neighbour had not written yet */
}
__global__ void k_stale_shared(float *x) { /* block 1 reads shared memory only block 0 wrote */
    __shared__ float sh[32];
    if (blockIdx.x == 0) sh[threadIdx.x] = 1;
    __syncthreads();
    x[blockIdx.x * 32 + threadIdx.x] = sh[threadIdx.x];
}

int main(int argc, char **argv) {
    int w = argc > 1 ? atoi(argv[1]) : 0;
    float *d = nullptr, host[64] = {0};
    if (cudaMalloc(&d, 64 * sizeof(float)) != cudaSuccess) return 1;
    switch (w) {
    case 0: /* correct: launches, copies both ways, a GEMM through the shim */
        emu_launch(k_ok, "k_ok", dim3(2), dim3(64), 0, d);
        cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost);
        printf("selftest 0: %g (expect 32)\n", host[5]);
        return host[5] == 32 ? 0 : 1;
    case 1: emu_launch(k_ret_then_sync, "k_ret_then_sync", dim3(1), dim3(32), 0, d); break;
    case 2: emu_launch(k_sync_in_branch, "k_sync_in_branch", dim3(1), dim3(32), 0, d); break;
    case 3: emu_launch(k_shfl_partial, "k_shfl_partial", dim3(1), dim3(32), 0, d); break;
    case 4: emu_launch(k_ok, "k_ok", dim3(1), dim3(2048), 0, d); break;
    case 5: emu_launch(k_ok, "k_ok", dim3(1, 70000), dim3(32), 0, d); break;
    case 6: emu_launch(k_ok, "k_ok", dim3(1), dim3(32), 50000, d); break;
    case 7: printf("%g\n", d[3]); break;                                    /* host reads device memory */
    case 8: emu_launch(k_ok, "k_ok", dim3(1), dim3(64), 0, host); break;  /* a host pointer to a kernel */
    case 9: emu_launch(k_past_end, "k_past_end", dim3(1), dim3(32), 0, d, 64); break; /* past the end */
    case 10: cudaMemcpy(d, host, sizeof host, cudaMemcpyDeviceToHost); break; /* direction swapped */
    case 11: cudaMemcpy(d, host, 2 * sizeof host, cudaMemcpyHostToDevice); break; /* too long */
    case 12:
        emu_launch(k_race, "k_race", dim3(1), dim3(64), 0, d);
        cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost);
        { float t = 0; for (float v : host) t += v; printf("selftest 12: sum %g\n", t); }
        return 0;
    case 13:
        emu_launch(k_stale_shared, "k_stale_shared", dim3(2), dim3(32), 0, d);
        cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost);
        { float t = 0; for (float v : host) t += v; printf("selftest 13: sum %g\n", t); }
        return 0;
    default: return 2;
    }
    printf("selftest %d: not stopped\n", w);
    return 0;
}
