/*
 * Cilk reducers (hyperobjects) cannot be captured by simsched: a reducer's
 * views and reductions depend on how a parallel run steals, which a serial
 * capture does not have.  This header exists so that a program including it
 * gets simsched's one-line error at its first use of a reducer
 * (`simsched cc` rejects cilk_reducer and the CILK_C_*REDUCER* names)
 * instead of a missing-header error.
 */
