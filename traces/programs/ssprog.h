/*
 * ssprog.h -- helpers shared by simsched's annotated benchmark programs.
 *
 * ss_pfor(lo, hi, grain, body, ctx): a parallel loop over [lo, hi) as a
 *   balanced binary divide and conquer of spawned tasks; leaves of at most
 *   `grain` iterations call body(lo, hi, ctx).
 * ss_pfor_ir(...): the same loop with uneven branching (the irregular
 *   variants of LAWS Sec. 6.1): a node splits its range into 2, 3 or 4
 *   children (chosen from the range's position), each an even share.
 * ss_arg(argc, argv, i, default): integer argument i, or the default.
 */
#ifndef SSPROG_H
#define SSPROG_H

#include <stdio.h>
#include <stdlib.h>

#include "simsched.h"

typedef void (*ss_body)(long lo, long hi, void *ctx);

__attribute__((unused)) static void ss_pfor(long lo, long hi, long grain, ss_body body, void *ctx)
{
    if (hi - lo <= grain) {
        body(lo, hi, ctx);
        return;
    }
    long mid = lo + (hi - lo) / 2;
    SS_SPAWN(ss_pfor(lo, mid, grain, body, ctx));
    SS_SPAWN(ss_pfor(mid, hi, grain, body, ctx));
    SS_SYNC();
}

__attribute__((unused)) static void ss_pfor_ir(long lo, long hi, long grain, ss_body body, void *ctx)
{
    long n = hi - lo;
    if (n <= grain) {
        body(lo, hi, ctx);
        return;
    }
    /* 2, 3 or 4 children by position, each an even share of the rows ([LAWS15] 3.2). */
    long k = 2 + (lo / (grain > 0 ? grain : 1)) % 3;
    if (k > n)
        k = n;
    for (long j = 0; j < k; j++)
        SS_SPAWN(ss_pfor_ir(lo + n * j / k, lo + n * (j + 1) / k, grain, body, ctx));
    SS_SYNC();
}

__attribute__((unused)) static long ss_arg(int argc, char **argv, int i, long dflt)
{
    if (argc <= i)
        return dflt;
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*end || v < 1) {
        fprintf(stderr, "%s: argument %d (%s) must be a positive integer\n", argv[0], i, argv[i]);
        exit(2);
    }
    return v;
}

/* A deterministic pseudo-random stream (64-bit LCG), for reproducible inputs. */
static unsigned long ss_rand_state = 88172645463325252ul;
__attribute__((unused)) static unsigned long ss_rand(void)
{
    ss_rand_state = ss_rand_state * 6364136223846793005ul + 1442695040888963407ul;
    return ss_rand_state >> 17;
}

#endif
