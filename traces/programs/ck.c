/*
 * ck -- a rudimentary checkers player: both sides are played by a negamax
 * alpha-beta search (the CPU-bound "ck" of CAB Table III and SAWS Table 1).
 *
 * usage: ck [DEPTH [GRAIN [MOVES]]]   (DEPTH plies searched per move, default
 *                                      7; a node with fewer than GRAIN plies
 *                                      left is searched serially inside its
 *                                      task, default 3; MOVES moves of the
 *                                      game played, default 4)
 *
 * Rules: 8 x 8 board, men move one square diagonally forward, kings in all
 * four directions; a capture jumps an adjacent enemy piece onto the empty
 * square behind it and is compulsory; there are no multiple jumps; a man
 * reaching the far row is crowned.  A side with no move has lost.
 *
 * Search: "young brothers wait" -- a node searches its first move as a spawned
 * task and syncs, then spawns all its other moves at once; after each child
 * the parent raises alpha and stops spawning at a beta cut-off.  In Cilk the
 * update is an inlet run as the child returns; this serial elision applies it
 * right after the child, which is exactly where a capture sees it.  The
 * branching degree of the DAG is therefore irregular: the number of legal
 * moves, cut short by alpha-beta.  Every task copies the position it extends
 * into its own frame, so its data are stack references.
 *
 * Each move of the game spawns one root search from main and syncs.
 */
#include <string.h>

#include "ssprog.h"

/* A 10 x 10 board with a one-square border: square (r, c) is 11 + 10 r + c. */
#define OFF 3
#define W 10
#define INF 1000000
#define WIN 100000

typedef struct {
    signed char sq[W * W]; /* 0 empty, +1/+2 white man/king, -1/-2 black, OFF border */
    int side;              /* +1 white to move, -1 black */
} pos_t;

typedef struct {
    short from, to, over; /* over: captured square, 0 if a plain move */
} move_t;

static long depth_arg, grain;
static long nodes;

static int gen(const pos_t *p, move_t *mv)
{
    static const int dirs[4] = {W - 1, W + 1, -W - 1, -W + 1};
    int n = 0, caps = 0;
    for (int s = W + 1; s < W * W - W - 1; s++) {
        int v = p->sq[s];
        if (v == OFF || v * p->side <= 0)
            continue;
        /* white men move down the board (+W), black men up */
        int d0 = v * p->side == 1 ? (p->side > 0 ? 0 : 2) : 0;
        int d1 = v * p->side == 1 ? d0 + 2 : 4;
        for (int d = d0; d < d1; d++) {
            int t = s + dirs[d];
            if (p->sq[t] == 0) {
                if (!caps)
                    mv[n++] = (move_t){(short)s, (short)t, 0};
            } else if (p->sq[t] != OFF && p->sq[t] * p->side < 0 && p->sq[t + dirs[d]] == 0) {
                if (!caps)
                    n = 0; /* captures are compulsory: drop the plain moves */
                caps = 1;
                mv[n++] = (move_t){(short)s, (short)(t + dirs[d]), (short)t};
            }
        }
    }
    return n;
}

static void make(pos_t *p, move_t m)
{
    int v = p->sq[m.from];
    p->sq[m.from] = 0;
    if (m.over)
        p->sq[m.over] = 0;
    int row = m.to / W - 1;
    if ((v == 1 && row == 7) || (v == -1 && row == 0))
        v *= 2;
    p->sq[m.to] = (signed char)v;
    p->side = -p->side;
}

/* Material (a king counts three men) and advancement, from the mover's side. */
static int evaluate(const pos_t *p)
{
    int e = 0;
    for (int s = W + 1; s < W * W - W - 1; s++) {
        int v = p->sq[s];
        if (v == OFF || v == 0)
            continue;
        int row = s / W - 1;
        int adv = v == 1 ? row : v == -1 ? 7 - row : 0;
        e += (v == 2 || v == -2 ? 300 : 100) * (v > 0 ? 1 : -1) + (v > 0 ? adv : -adv);
    }
    return e * p->side;
}

static int search_serial(const pos_t *p, int depth, int alpha, int beta)
{
    nodes++;
    move_t mv[48];
    int n = gen(p, mv);
    if (n == 0)
        return -WIN;
    if (depth == 0)
        return evaluate(p);
    int best = -INF;
    for (int i = 0; i < n; i++) {
        pos_t c = *p;
        make(&c, mv[i]);
        int v = -search_serial(&c, depth - 1, -beta, -alpha);
        if (v > best)
            best = v;
        if (v > alpha)
            alpha = v;
        if (alpha >= beta)
            break;
    }
    return best;
}

typedef struct {
    int score;
    int move; /* index of the best move (root only) */
} result_t;

static void search(const pos_t *parent, move_t m, int depth, int alpha, int beta, result_t *out)
{
    pos_t p = *parent;
    if (m.from)
        make(&p, m);
    if (depth < grain) {
        out->score = search_serial(&p, depth, alpha, beta);
        return;
    }
    nodes++;
    move_t mv[48];
    int n = gen(&p, mv);
    if (n == 0) {
        out->score = -WIN;
        return;
    }
    result_t r[48];
    int best = -INF, best_i = 0;
    for (int i = 0; i < n; i++) {
        SS_SPAWN(search(&p, mv[i], depth - 1, -beta, -alpha, &r[i]));
        if (i == 0)
            SS_SYNC(); /* young brothers wait for the eldest */
        /* the inlet: take the child's score as it returns */
        int v = -r[i].score;
        if (v > best) {
            best = v;
            best_i = i;
        }
        if (v > alpha)
            alpha = v;
        if (alpha >= beta)
            break;
    }
    SS_SYNC();
    out->score = best;
    out->move = best_i;
}

int main(int argc, char **argv)
{
    depth_arg = ss_arg(argc, argv, 1, 7);
    grain = ss_arg(argc, argv, 2, 3);
    long moves = ss_arg(argc, argv, 3, 4);
    pos_t game;
    memset(&game, OFF, sizeof(game.sq));
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 8; c++)
            game.sq[W + 1 + r * W + c] = (signed char)((r + c) % 2 == 0 ? 0 : r < 3 ? 1 : r > 4 ? -1 : 0);
    game.side = -1; /* black moves first */
    SS_ROI_BEGIN();
    long played = 0;
    for (; played < moves; played++) {
        move_t mv[48];
        int n = gen(&game, mv);
        if (n == 0)
            break;
        result_t res = {0, 0};
        SS_SPAWN(search(&game, (move_t){0, 0, 0}, (int)depth_arg, -INF, INF, &res));
        SS_SYNC();
        make(&game, mv[res.move]);
        printf("move %ld: %d-%d score %d\n", played, mv[res.move].from, mv[res.move].to, res.score);
    }
    SS_ROI_END();
    printf("ck depth=%ld grain=%ld moves=%ld nodes=%ld\n", depth_arg, grain, played, nodes);
    return 0;
}
