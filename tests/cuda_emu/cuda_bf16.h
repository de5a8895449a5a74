/* cuda_bf16.h for the CPU emulation: the bf16 type lives in emu_cuda.h */
#pragma once
#include "emu_cuda.h"
