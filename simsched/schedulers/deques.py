"""Per-worker deques and the accounting of sleeping thieves, shared by stealing policies.

WS, CAB, LAWS and SAWS all keep one deque per worker: the owner pushes and pops at the
top (LIFO), thieves take from the bottom.  :class:`WorkerDeques` holds them with the
count of queued strands (so that "is there anything to steal anywhere?" is O(1)) and the
steal counters every stealing policy reports.

**Sleeping thieves.**  A thief that finds nothing to steal anywhere is put to sleep until
work is pushed, rather than simulated attempt by attempt (which would cost one engine
event per ``steal_attempt`` cycles per idle core).  The attempts it would have made while
spinning are added when it wakes: a spinning thief that starts at ``t0`` attempts at
``t0, t0 + a, t0 + 2a, ...``; woken at ``t1`` it makes a real (counted) attempt at
``t1``, so ``(t1 - t0) // a`` are added (``a``: the thief's attempt period, given when it
goes to sleep; attempts are priced by distance, ``SchedContext.steal_cost``, so a thief
spinning over victims on several sockets attempts every
``SchedContext.mean_steal_cycles`` cycles on average; ``steal_attempt`` by default) — together, exactly the attempts of the spinning
thief in ``[t0, t1]``.  Waking every sleeper when one strand is pushed
(``ctx.wake(None)``) therefore does not inflate ``steal_attempts``: each woken thief's
attempt at ``t1`` is one a spinning thief makes too (tests/schedulers/test_deques.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable


class WorkerDeques:
    """One deque per core of the machine, the queued-strand count and steal counters.

    Parameters
    ----------
    n_cores
        Cores of the machine (deques are indexed by core number).
    steal_attempt
        Cycles of one steal attempt (``machine.costs.steal_attempt``), the default
        attempt period of the sleep accounting.
    counters
        The scheduler's counter dict; ``steal_attempts`` and ``steals`` are kept there.
    prefix
        Prefix of the two counter names, for a policy with a second tier of pools (CAB's
        inter-socket pools count ``inter_steal_attempts`` and ``inter_steals``).
    """

    def __init__(
        self, n_cores: int, steal_attempt: int, counters: dict[str, int], prefix: str = ""
    ) -> None:
        self.deques: list[deque[int]] = [deque() for _ in range(n_cores)]
        self.n_items = 0
        self.steal_attempt = int(steal_attempt)
        self.counters = counters
        self._k_attempts = prefix + "steal_attempts"
        self._k_steals = prefix + "steals"
        counters.setdefault(self._k_attempts, 0)
        counters.setdefault(self._k_steals, 0)
        self.sleep_since = [-1] * n_cores
        self.sleep_period = [self.steal_attempt] * n_cores

    @property
    def attempts_key(self) -> str:
        """Name of the counter of steal attempts (with the prefix)."""
        return self._k_attempts

    def push(self, core: int, strand: int) -> None:
        """Push ``strand`` on top of ``core``'s deque."""
        self.deques[core].append(strand)
        self.n_items += 1

    def push_all(self, core: int, strands: Iterable[int]) -> int:
        """Push several strands on ``core``'s deque (in order); returns how many."""
        dq = self.deques[core]
        before = len(dq)
        dq.extend(strands)
        k = len(dq) - before
        self.n_items += k
        return k

    def pop(self, core: int) -> int:
        """Pop the top of ``core``'s own deque, or -1 when it is empty."""
        dq = self.deques[core]
        if not dq:
            return -1
        self.n_items -= 1
        return dq.pop()

    def attempt(self, victim: int) -> int:
        """One steal attempt on ``victim`` (counted): its bottom strand, or -1."""
        self.counters[self._k_attempts] += 1
        dq = self.deques[victim]
        if not dq:
            return -1
        self.n_items -= 1
        self.counters[self._k_steals] += 1
        return dq.popleft()

    def mug(self, core: int, victim: int) -> int:
        """``core`` (own deque empty) claims ``victim``'s whole deque ([SAWS12] §2.3,
        mugging a deque a departed core left); returns the strands moved."""
        mine, theirs = self.deques[core], self.deques[victim]
        if mine:
            raise RuntimeError(f"core {core} mugs deque {victim} with its own deque non-empty")
        self.deques[core], self.deques[victim] = theirs, mine
        return len(theirs)

    def sleep(self, core: int, now: int, period: int | None = None) -> None:
        """``core`` goes to sleep at ``now`` as a thief with nothing to steal, which
        would attempt every ``period`` cycles (default: ``steal_attempt``)."""
        self.sleep_since[core] = now
        self.sleep_period[core] = self.steal_attempt if period is None else int(period)

    def wake(self, core: int, now: int) -> int:
        """Account the attempts ``core`` would have made spinning since it slept;
        returns how many were added."""
        since = self.sleep_since[core]
        added = 0
        if since >= 0:
            period = self.sleep_period[core]
            if period > 0:
                added = (now - since) // period
                self.counters[self._k_attempts] += added
            self.sleep_since[core] = -1
        return added

    def __len__(self) -> int:
        return self.n_items


class SocketDeques(WorkerDeques):
    """:class:`WorkerDeques` that also count the queued strands of each socket.

    LAWS and CATS steal inside a socket first; a thief asks "is there anything to steal
    in my socket?" in O(1) with :attr:`socket_items` instead of summing its peers' deques.

    Parameters
    ----------
    n_cores, steal_attempt, counters
        As for :class:`WorkerDeques`.
    socket_of
        Socket of every core of the machine.
    """

    def __init__(
        self, n_cores: int, steal_attempt: int, counters: dict[str, int], socket_of: Iterable[int]
    ) -> None:
        super().__init__(n_cores, steal_attempt, counters)
        self.socket_of = [int(s) for s in socket_of]
        self.socket_items = [0] * (max(self.socket_of, default=-1) + 1)

    def push(self, core: int, strand: int) -> None:
        """Push ``strand`` on top of ``core``'s deque."""
        super().push(core, strand)
        self.socket_items[self.socket_of[core]] += 1

    def push_all(self, core: int, strands: Iterable[int]) -> int:
        """Push several strands on ``core``'s deque (in order); returns how many."""
        k = super().push_all(core, strands)
        self.socket_items[self.socket_of[core]] += k
        return k

    def pop(self, core: int) -> int:
        """Pop the top of ``core``'s own deque, or -1 when it is empty."""
        s = super().pop(core)
        if s >= 0:
            self.socket_items[self.socket_of[core]] -= 1
        return s

    def attempt(self, victim: int) -> int:
        """One steal attempt on ``victim`` (counted): its bottom strand, or -1."""
        s = super().attempt(victim)
        if s >= 0:
            self.socket_items[self.socket_of[victim]] -= 1
        return s

    def mug(self, core: int, victim: int) -> int:
        """``core`` claims ``victim``'s whole deque; the strands move to ``core``'s
        socket in :attr:`socket_items` too."""
        k = super().mug(core, victim)
        self.socket_items[self.socket_of[victim]] -= k
        self.socket_items[self.socket_of[core]] += k
        return k

    def take_all(self, core: int) -> list[int]:
        """Empty ``core``'s deque (bottom first), e.g. when the core leaves the job."""
        dq = self.deques[core]
        out = list(dq)
        dq.clear()
        self.n_items -= len(out)
        self.socket_items[self.socket_of[core]] -= len(out)
        return out
