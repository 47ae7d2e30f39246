/* dlopen_probe.c - load _cuda.so the way the core does (dlopen, RTLD_LOCAL),
 * print its ABI, its report and what bf_cuda_check / bf_cuda_open say for
 * cuda:0. On a machine without a GPU or driver both must fail cleanly with
 * BF_ERR_DEVICE and a readable reason (no crash); with a GPU, open must work
 * and a 1 TiB reservation must fail as BF_ERR_BUDGET naming cuda:0.
 * Links the core's status.c for the error buffer (as _core does).
 * Usage: dlopen_probe path/to/_cuda.so   Exit 0 when every expectation holds. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "status.h"
#include "../../csrc/cuda/cuda_api.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s path/to/_cuda.so\n", argv[0]);
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen failed: %s\n", dlerror());
        return 1;
    }
    int (*abi)(void) = (int (*)(void))dlsym(h, "bf_cuda_abi_version");
    int (*report)(char *, size_t) = (int (*)(char *, size_t))dlsym(h, "bf_cuda_report");
    int (*check)(int, char *, size_t) = (int (*)(int, char *, size_t))dlsym(h, "bf_cuda_check");
    bf_status (*open)(const bf_cuda_host *, int, bf_backend **) =
        (bf_status(*)(const bf_cuda_host *, int, bf_backend **))dlsym(h, "bf_cuda_open");
    void (*close)(bf_backend *) = (void (*)(bf_backend *))dlsym(h, "bf_cuda_close");
    if (!abi || !report || !check || !open || !close) {
        printf("missing entry points\n");
        return 1;
    }
    int fails = 0;
    printf("ABI %d (core expects %d)\n", abi(), BF_CUDA_ABI);
    fails += abi() != BF_CUDA_ABI;

    static char buf[8192];
    int problems = report(buf, sizeof buf);
    printf("---- bf_cuda_report (%d problem line(s)) ----\n%s", problems, buf);
    char tiny[40];
    report(tiny, sizeof tiny); /* truncation must be safe */
    fails += strlen(tiny) >= sizeof tiny;

    char msg[1024];
    int bad = check(0, msg, sizeof msg);
    printf("---- bf_cuda_check(0) = %d ----\n%s\n", bad, msg);
    bad = check(-1, msg, sizeof msg);
    fails += !bad;

    const bf_cuda_host host = {bf_vfail};
    bf_backend *be = NULL;
    bf_clear_error();
    bf_status s = open(&host, 0, &be);
    printf("---- bf_cuda_open(cuda:0) = %s ----\n%s\n", bf_status_name(s),
           s == BF_OK ? "ok" : bf_last_error()->msg);
    if (s != BF_OK) {
        fails += s != BF_ERR_DEVICE || be != NULL || !*bf_last_error()->msg;
    } else {
        printf("opened %s\n", be->name);
        void *p = NULL;
        s = be->reserve(be, &p, (size_t)1 << 40);
        printf("reserve(1 TiB) = %s: %s\n", bf_status_name(s), bf_last_error()->msg);
        fails += s != BF_ERR_BUDGET || !strstr(bf_last_error()->msg, "cuda:0");
        s = be->reserve(be, &p, 1 << 20);
        fails += s != BF_OK || !p;
        be->release(be, p);
        close(be);
    }
    s = open(&host, 99, &be);
    printf("---- bf_cuda_open(cuda:99) = %s ----\n%s\n", bf_status_name(s), bf_last_error()->msg);
    fails += s != BF_ERR_DEVICE;
    printf("%s\n", fails ? "FAILED" : "all expectations hold");
    return fails != 0;
}
