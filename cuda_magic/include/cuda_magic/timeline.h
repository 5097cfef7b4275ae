// cuda_magic/timeline.h: marks for an intra-kernel timeline, recorded by k.timeline[grid, block].
//
//   #include <cuda_magic/timeline.h>
//   CM_RANGE_BEGIN("producer/load");  ...  CM_RANGE_END("producer/load");
//   CM_MARK("epilogue");
//
// cuda-magic supplies this header to both compilers (NVRTC in memory, nvcc beside the cell);
// no -I is needed.  Names are string literals.
//
// An ordinary build (no CUDA_MAGIC_TIMELINE) compiles every mark to nothing: the machine code
// of a marked kernel is the unmarked kernel's.  k.timeline builds the cell again with
// -DCUDA_MAGIC_TIMELINE (in the argv it shows); then each mark records one event per warp,
// written by the lowest active lane of the warp: the name's id (32-bit FNV-1a of the literal,
// computed at compile time; the host hashes the literals it finds in the source the same
// way), the kind, %smid and %globaltimer (ns).
//
// The buffer is laid out per warp, so no two warps share a counter or a cache line of slots:
// warp w of block b (b linear: x + gridDim.x * (y + gridDim.y * z); w = linear thread / 32)
// owns region r = b * warps_per_block + w: slots[r * capacity ... + capacity - 1] (16 bytes
// each: u64 time, u32 name id, u32 kind | lane << 8 | smid << 16) and counts[r], the number
// of events the warp attempted.  Past its capacity a warp's events are dropped and counted:
// lost = counts[r] - capacity.
//
// The warp's slot counter lives in static shared memory (32 counters per block: 384 bytes
// with their tags), so an event costs a shared-memory atomic, no global atomic.  Shared
// memory holds what the previous block left, so each counter carries a tag, nonce ^ b (the
// nonce is random per launch): a warp that finds another tag resets its counter first.  The
// reset is taken by one lane with a compare-and-swap (divergent paths of one warp may both
// record), and the others wait for it; within a launch the tags of two blocks always differ.
// So no initialisation call is needed.  Pointers, capacity and nonce come from the host
// through the extern "C" __constant__ struct cm_timeline, which the host sets before the launch
// (cuLibraryGetGlobal and a copy): read through the constant cache, not the kernel's parameters.
#ifndef CUDA_MAGIC_TIMELINE_H
#define CUDA_MAGIC_TIMELINE_H

#if !defined(CUDA_MAGIC_TIMELINE)

// Ordinary build: nothing at all (sizeof is not evaluated; it only insists on a literal).
#define CM_RANGE_BEGIN(name) ((void)sizeof("" name ""))
#define CM_RANGE_END(name) ((void)sizeof("" name ""))
#define CM_MARK(name) ((void)sizeof("" name ""))

#else

struct cm_timeline_state {
    unsigned long long slots;     // device address of the event slots (16 bytes each)
    unsigned long long counts;    // device address of the per-warp counts (unsigned int)
    unsigned long long nonce;     // random per launch: the tags of the shared counters
    unsigned int capacity;        // slots per warp
    unsigned int version;         // CM_TIMELINE_VERSION: the host checks it
};

#define CM_TIMELINE_VERSION 1u

extern "C" {
__constant__ cm_timeline_state cm_timeline;
}

struct alignas(16) cm_timeline_slot {
    unsigned long long time;
    unsigned int name;
    unsigned int meta;
};

namespace cm_timeline_detail {

__host__ __device__ constexpr unsigned int fnv1a(const char* s, unsigned int h = 2166136261u) {
    return *s ? fnv1a(s + 1, (h ^ static_cast<unsigned int>(static_cast<unsigned char>(*s)))
                                 * 16777619u) : h;
}

#ifdef __CUDA_ARCH__
// The warp's next slot: its counter in shared memory, reset once per block (see the top).
__device__ __forceinline__ unsigned int next_slot(unsigned int warp, unsigned long long tag) {
    __shared__ unsigned long long tags[32];
    __shared__ unsigned int counts[32];
    volatile unsigned long long* seen = &tags[warp];
    unsigned long long old = *seen;
    if (old != tag) {
        if (old != ~tag && atomicCAS(&tags[warp], old, ~tag) == old) {
            counts[warp] = 0u;           // this lane resets; ~tag tells the others to wait
            __threadfence_block();
            *seen = tag;
        } else {
            while (*seen != tag) {
            }
        }
    }
    return atomicAdd(&counts[warp], 1u);
}
#endif

template <unsigned int ID, unsigned int KIND>
__host__ __device__ __forceinline__ void record() {
#ifdef __CUDA_ARCH__
    unsigned int lower;
    asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(lower));
    if (__activemask() & lower)
        return;                          // not the lowest active lane
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now) :: "memory");
    unsigned int sm, lane;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    const unsigned int threads = blockDim.x * blockDim.y * blockDim.z;
    const unsigned int warp = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) >> 5;
    const unsigned long long block = blockIdx.x + static_cast<unsigned long long>(gridDim.x)
        * (blockIdx.y + static_cast<unsigned long long>(gridDim.y) * blockIdx.z);
    const unsigned long long region = block * ((threads + 31u) >> 5) + warp;
    const unsigned int n = next_slot(warp, cm_timeline.nonce ^ block);
    if (n < cm_timeline.capacity) {
        cm_timeline_slot* slots = reinterpret_cast<cm_timeline_slot*>(cm_timeline.slots);
        cm_timeline_slot event = {now, ID, KIND | (lane << 8) | (sm << 16)};
        slots[region * cm_timeline.capacity + n] = event;
    }
    reinterpret_cast<unsigned int*>(cm_timeline.counts)[region] = n + 1u;
#endif
}

}  // namespace cm_timeline_detail

#define CM_TIMELINE_RECORD_(name, kind) \
    ::cm_timeline_detail::record< ::cm_timeline_detail::fnv1a("" name ""), kind>()
#define CM_RANGE_BEGIN(name) CM_TIMELINE_RECORD_(name, 0u)
#define CM_RANGE_END(name) CM_TIMELINE_RECORD_(name, 1u)
#define CM_MARK(name) CM_TIMELINE_RECORD_(name, 2u)

// The resolution probe (k.timeline launches it once per process): one block per SM; lane 0
// reads %smid, then `samples` pairs of (%globaltimer, clock64) back to back.  out holds
// 1 + 2 * samples values per block.
extern "C" __global__ void cm_timeline_probe(unsigned long long* out, unsigned int samples) {
    if (threadIdx.x != 0)
        return;
    unsigned long long* mine = out + static_cast<unsigned long long>(blockIdx.x) * (1u + 2u * samples);
    unsigned int sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    mine[0] = sm;
    for (unsigned int i = 0; i < samples; ++i) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory");
        const long long c = clock64();
        mine[1 + 2 * i] = t;
        mine[2 + 2 * i] = static_cast<unsigned long long>(c);
    }
}

#endif  // CUDA_MAGIC_TIMELINE
#endif  // CUDA_MAGIC_TIMELINE_H
