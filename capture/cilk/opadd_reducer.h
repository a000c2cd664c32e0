/* Cilk reducers cannot be captured by simsched: see reducer.h. */
#include "reducer.h"
