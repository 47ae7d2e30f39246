/* sim_streams.cpp - streams, events and the copies and memsets on them, for
 * the device emulation's runtime (sim_runtime.cpp). Kernels, copies, memsets
 * and the cuBLAS / cuDNN stand-ins' calls are work items (sim_submit);
 * BF_SIM_STREAMS says when they run:
 *   sync (default)  at the call: every stream is always done
 *   lazy            queued per stream, and run when the host waits: a
 *                   stream, event or device synchronize, a stream query, a
 *                   device-to-host copy into pageable memory, cudaFree, work
 *                   on stream 0. Then everything queued runs, a stream that
 *                   waits for an event (cudaStreamWaitEvent) only after its
 *                   record; the stream the host waits for runs last, after
 *                   the others went as far as they could: so a stream that
 *                   lacks a wait for it reads what it has not written yet
 *   shuffled        as lazy, each next item from a random stream among those
 *                   that may run (BF_SIM_SEED)
 * The legacy stream 0 runs its work at the call, after everything queued.
 * Host memory: a pinned buffer (cudaHostRegister) is read or written when its
 * copy runs; a pageable one at the call (host-to-device staged, device-to-host
 * after its stream), as CUDA documents. A sticky error drops what is queued.
 * The NCCL stand-in's collectives run on a thread of their own (sim_nccl.cpp):
 * queries report them, and work waits for them before it runs. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "sim_internal.h"

#define STICKY_RETURN()                                           \
    do {                                                          \
        if (sim_sticky()) return sim_err(sim_sticky_error());      \
    } while (0)

enum { WORK, RECORD, WAIT };

struct item {
    int kind;
    std::function<void()> work; /* WORK */
    unsigned long seq;          /* RECORD: its number; WAIT: the record waited for */
};

struct sim_stream {
    unsigned magic;
    int id; /* creation order: lazy mode's tie-break */
    std::deque<item> q;
};

struct sim_event {
    unsigned magic;
    unsigned long last; /* the latest record, 0: none (complete) */
};

static std::set<const void *> live_streams, live_events;
static std::map<int, sim_stream *> by_id;
/* records queued and not yet run, by number: the stream that holds each */
static std::map<unsigned long, sim_stream *> pending;
static unsigned long next_seq;
static int next_id;
static unsigned long rng_state;

static int mode(void) { return sim_cfg().streams; }
static int stream_ok(cudaStream_t s) { return !s || live_streams.count((const void *)s); }
int sim_stream_ok(cudaStream_t s) { return stream_ok(s); }

/* ---- the NCCL stand-in's collectives ---- */

static std::atomic<int> external_pending;
void sim_external_begin(void) { external_pending++; }
void sim_external_end(void) { external_pending--; }
int sim_external_pending(void) { return external_pending.load(); }
void sim_wait_external(void) {
    while (external_pending.load() > 0) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

/* ---- the queues ---- */

static void run_work(const std::function<void()> &w) {
    sim_wait_external();
    if (!sim_sticky()) w();
}

static void drop_all(void) {
    for (auto &kv : by_id) kv.second->q.clear();
    pending.clear();
}

static int runnable(const item &it) { return it.kind != WAIT || !pending.count(it.seq); }

/* Run everything queued, each stream in its order, a stream waiting for an
 * event only after that record ran. The order between streams: lazy, the
 * stream the host waits for (`last`, 0: none) after the others have run as
 * far as they can (so a stream that should have waited for it ran first);
 * shuffled, a random stream that can run. */
static void run_queued(int last) {
    std::vector<int> ready;
    for (;;) {
        if (sim_sticky()) {
            drop_all();
            return;
        }
        ready.clear();
        for (auto &kv : by_id)
            if (!kv.second->q.empty() && runnable(kv.second->q.front())) ready.push_back(kv.first);
        if (ready.empty()) return; /* done: a wait names a record queued before it, so nothing is stuck */
        int id = ready[0];
        if (mode() == 2) {
            rng_state = rng_state * 6364136223846793005UL + 1442695040888963407UL;
            id = ready[(rng_state >> 33) % ready.size()];
        } else if (id == last && ready.size() > 1) {
            id = ready[1];
        }
        sim_stream *s = by_id[id];
        item it = std::move(s->q.front());
        s->q.pop_front();
        if (it.kind == WORK) run_work(it.work);
        else if (it.kind == RECORD) pending.erase(it.seq);
    }
}

void sim_drain(cudaStream_t st) {
    std::lock_guard<std::recursive_mutex> g(sim_lock());
    if (mode() && stream_ok(st)) run_queued(st ? ((sim_stream *)st)->id : 0);
}

void sim_drain_all(void) { sim_drain(0); }

/* run until record seq has run */
static void drain_record(unsigned long seq) {
    auto r = pending.find(seq);
    if (r != pending.end()) run_queued(r->second->id);
}

void sim_submit(cudaStream_t st, std::function<void()> work) {
    std::lock_guard<std::recursive_mutex> g(sim_lock());
    if (!mode() || !st || !stream_ok(st)) {
        sim_drain_all(); /* the legacy stream: after everything queued */
        run_work(work);
        return;
    }
    ((sim_stream *)st)->q.push_back(item{WORK, std::move(work), 0});
}

/* ---- streams and events: checked handles ---- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) {
    STICKY_RETURN();
    std::lock_guard<std::recursive_mutex> g(sim_lock());
    if (!rng_state) rng_state = sim_cfg().seed ^ 0x5bd1e995UL;
    sim_stream *h = new sim_stream{0x5157, ++next_id, {}};
    live_streams.insert(h);
    by_id[h->id] = h;
    *s = (cudaStream_t)h;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
    STICKY_RETURN();
    std::lock_guard<std::recursive_mutex> g(sim_lock());
    if (!s || !live_streams.count((const void *)s)) return sim_err(cudaErrorInvalidResourceHandle);
    sim_drain(s); /* CUDA finishes the queued work first */
    live_streams.erase((const void *)s);
    by_id.erase(((sim_stream *)s)->id);
    delete (sim_stream *)s;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    STICKY_RETURN();
    if (!stream_ok(s)) return sim_err(cudaErrorInvalidResourceHandle);
    sim_drain(s);
    sim_wait_external();
    STICKY_RETURN();
    return cudaSuccess;
}

/* queued work counts as finished by the time anyone asks: it runs here */
cudaError_t cudaStreamQuery(cudaStream_t s) {
    STICKY_RETURN();
    if (!stream_ok(s)) return sim_err(cudaErrorInvalidResourceHandle);
    sim_drain(s);
    STICKY_RETURN();
    return external_pending.load() > 0 ? cudaErrorNotReady : cudaSuccess; /* not an error: not recorded */
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) {
    STICKY_RETURN();
    std::lock_guard<std::recursive_mutex> g(sim_lock());
    sim_event *h = new sim_event{0xe7e7, 0};
    live_events.insert(h);
    *e = (cudaEvent_t)h;
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
    STICKY_RETURN();
    std::lock_guard<std::recursive_mutex> g(sim_lock());
    if (!e || !live_events.erase((const void *)e)) return sim_err(cudaErrorInvalidResourceHandle);
    delete (sim_event *)e; /* its queued records and waits go by number */
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    STICKY_RETURN();
    std::lock_guard<std::recursive_mutex> g(sim_lock());
    if (!live_events.count((const void *)e) || !stream_ok(s)) return sim_err(cudaErrorInvalidResourceHandle);
    sim_event *ev = (sim_event *)e;
    ev->last = 0;
    if (!mode()) return cudaSuccess;
    if (!s) {
        sim_drain_all();
        return cudaSuccess;
    }
    ev->last = ++next_seq;
    ((sim_stream *)s)->q.push_back(item{RECORD, {}, ev->last});
    pending[ev->last] = (sim_stream *)s;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    STICKY_RETURN();
    std::lock_guard<std::recursive_mutex> g(sim_lock());
    if (!live_events.count((const void *)e)) return sim_err(cudaErrorInvalidResourceHandle);
    drain_record(((sim_event *)e)->last);
    STICKY_RETURN();
    return cudaSuccess;
}

/* s waits for e's latest record (one never recorded, or already run, is complete) */
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
    STICKY_RETURN();
    std::lock_guard<std::recursive_mutex> g(sim_lock());
    if (!live_events.count((const void *)e) || !stream_ok(s)) return sim_err(cudaErrorInvalidResourceHandle);
    const unsigned long seq = ((sim_event *)e)->last;
    if (!mode() || !pending.count(seq)) return cudaSuccess;
    if (!s) drain_record(seq);
    else ((sim_stream *)s)->q.push_back(item{WAIT, {}, seq});
    return cudaSuccess;
}

/* ---- copies ---- */

/* the direction a copy of (dst, src) must have, checked against kind */
static cudaError_t copy_check(void *dst, const void *src, size_t span_d, size_t span_s, cudaMemcpyKind kind) {
    const int dd = sim_is_device(dst), sd = sim_is_device(src);
    int want_dd, want_sd;
    switch (kind) {
    case cudaMemcpyHostToDevice: want_dd = 1; want_sd = 0; break;
    case cudaMemcpyDeviceToHost: want_dd = 0; want_sd = 1; break;
    case cudaMemcpyDeviceToDevice: want_dd = 1; want_sd = 1; break;
    case cudaMemcpyHostToHost: want_dd = 0; want_sd = 0; break;
    case cudaMemcpyDefault: want_dd = dd; want_sd = sd; break;
    default: return cudaErrorInvalidMemcpyDirection;
    }
    if (dd != want_dd || sd != want_sd) return cudaErrorInvalidValue;
    if (dd && !sim_device_range(dst, span_d)) return cudaErrorInvalidValue;
    if (sd && !sim_device_range(src, span_s)) return cudaErrorInvalidValue;
    return cudaSuccess;
}

/* height rows of width bytes, pitches apart, checked; queued as the host side allows */
static cudaError_t copy_rows(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                             cudaMemcpyKind kind, cudaStream_t s) {
    std::lock_guard<std::recursive_mutex> g(sim_lock());
    STICKY_RETURN();
    if (!stream_ok(s)) return sim_err(cudaErrorInvalidResourceHandle);
    if (!width || !height) return cudaSuccess;
    if (!dst || !src) return sim_err(cudaErrorInvalidValue);
    if (width > dpitch || width > spitch) return sim_err(cudaErrorInvalidPitchValue);
    const size_t span_d = (height - 1) * dpitch + width, span_s = (height - 1) * spitch + width;
    cudaError_t e = copy_check(dst, src, span_d, span_s, kind);
    if (e != cudaSuccess) return sim_err(e);
    auto rows = [=](const char *from) {
        for (size_t r = 0; r < height; r++) memmove((char *)dst + r * dpitch, from + r * spitch, width);
    };
    const int dd = sim_is_device(dst), sd = sim_is_device(src);
    if (mode() && !sd && !sim_is_pinned(src)) { /* pageable source: staged now */
        auto staged = std::make_shared<std::vector<char>>((const char *)src, (const char *)src + span_s);
        sim_submit(s, [=] { rows(staged->data()); });
    } else if (!dd && !sim_is_pinned(dst)) { /* pageable destination: returns once the copy is done */
        sim_drain(s);
        STICKY_RETURN();
        sim_wait_external();
        rows((const char *)src);
    } else {
        sim_submit(s, [=] { rows((const char *)src); });
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
    return copy_rows(dst, n, src, n, n, 1, kind, s);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t s) {
    return copy_rows(dst, dpitch, src, spitch, width, height, kind, s);
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
    std::lock_guard<std::recursive_mutex> g(sim_lock());
    STICKY_RETURN();
    if (!stream_ok(s)) return sim_err(cudaErrorInvalidResourceHandle);
    if (!n) return cudaSuccess;
    if (!sim_device_range(p, n)) return sim_err(cudaErrorInvalidValue);
    sim_submit(s, [=] { memset(p, v, n); });
    return cudaSuccess;
}
