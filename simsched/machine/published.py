"""Published latency and bandwidth figures of the server presets' real machines.

``simsched calibrate`` prints the model's figure for each metric beside these; the preset
tests check the values derived from them.  Every figure names its source.  ``None``
means no published figure was found for that metric on that machine (the row is still
simulated and printed).  Peak figures are marked "peak": sustained STREAM bandwidth is
typically 60–80 % of them.
"""

from __future__ import annotations

from typing import NamedTuple


class Published(NamedTuple):
    """One published figure: ``value`` in ``unit`` (None: none found), and its source."""

    metric: str
    unit: str
    value: float | None
    source: str


_MCCALPIN = (
    "J. D. McCalpin, 'AMD Opteron Local Memory Latency Chart' (2010): Family10h rev B3, "
    "4-socket, pointer chase"
)
_AMD_DDR2_800 = "AMD: DDR2-800, two 64-bit channels per socket, 12.8 GB/s peak"
_SUN_X4600 = (
    "Sun Fire X4600/X4600 M2 Server Architecture white paper (2007): dual-channel "
    "DDR2-667 per CPU, 85.6 GB/s aggregate with 8 CPUs (peak)"
)
_ARK_8380 = (
    "Intel ARK, Xeon Platinum 8380: 8 channels of DDR4-3200 per socket, "
    "8 x 25.6 = 204.8 GB/s (peak)"
)
_ANAND_X7560 = "AnandTech, 'Xeon 7500 / Dell R810' review (2010)"
#: A peak transfer rate is compared with the model's DRAM traffic (``dram_*``), not with
#: STREAM's count, which for a triad moves 32 bytes per 24 it counts.
_NO_STREAM = "no published STREAM figure found (the peak is under dram_*)"

#: Published figures per preset name; presets not listed have none.
PUBLISHED: dict[str, tuple[Published, ...]] = {
    "opteron-8380-4x4": (
        Published("latency_local_ns", "ns", 100.0, _MCCALPIN),
        Published("latency_remote_ns", "ns", None, "no published 4-socket Shanghai figure found"),
        Published(
            "bandwidth_core_GBps",
            "GB/s",
            8.0,
            "AnandTech, Opteron 6174 review (2010) p. 5: one thread of STREAM on an Opteron "
            "2435 with DDR2-800 'over 8GB/s'",
        ),
        Published("bandwidth_socket_GBps", "GB/s", None, _NO_STREAM),
        Published("dram_socket_GBps", "GB/s", 12.8, _AMD_DDR2_800),
        Published("bandwidth_machine_GBps", "GB/s", None, _NO_STREAM),
        Published("dram_machine_GBps", "GB/s", 51.2, _AMD_DDR2_800 + ", x 4 sockets"),
        Published(
            "bandwidth_socket_remote_GBps",
            "GB/s",
            None,
            "the papers do not give the boards' HyperTransport link speed",
        ),
    ),
    "sunfire-x4600-8x4": (
        Published("latency_local_ns", "ns", None, "no published X4600 M2 figure found"),
        Published("latency_remote_ns", "ns", None, "no published X4600 M2 figure found"),
        Published("bandwidth_core_GBps", "GB/s", None, "no published X4600 M2 figure found"),
        Published("bandwidth_socket_GBps", "GB/s", None, _NO_STREAM),
        Published("dram_socket_GBps", "GB/s", 10.7, _SUN_X4600 + ", / 8"),
        Published("bandwidth_machine_GBps", "GB/s", None, _NO_STREAM),
        Published("dram_machine_GBps", "GB/s", 85.6, _SUN_X4600),
        Published(
            "bandwidth_socket_remote_GBps",
            "GB/s",
            4.0,
            "Sun X4600 white paper: coherent HyperTransport links, 8 GB/s aggregate per "
            "link = 4 GB/s each way (peak)",
        ),
    ),
    "xeon-x7560-4x8": (
        Published("latency_local_ns", "ns", 160.0, _ANAND_X7560 + " p. 7: SiSoft Sandra latency"),
        Published("latency_remote_ns", "ns", None, "no published figure found"),
        Published(
            "bandwidth_core_GBps", "GB/s", 5.0, _ANAND_X7560 + " p. 7: one STREAM thread, 5 GB/s"
        ),
        Published("bandwidth_socket_GBps", "GB/s", None, _NO_STREAM),
        Published(
            "dram_socket_GBps",
            "GB/s",
            25.6,
            _ANAND_X7560 + " p. 3: 4 SMI links per socket at 6.4 GB/s read each (peak)",
        ),
        Published(
            "bandwidth_machine_GBps",
            "GB/s",
            27.0,
            _ANAND_X7560 + " p. 7: STREAM triad, 32 threads, 25 to 29 GB/s (midpoint)",
        ),
        Published(
            "bandwidth_socket_remote_GBps",
            "GB/s",
            12.8,
            "Intel QPI at 6.4 GT/s: 12.8 GB/s each way per link (peak)",
        ),
    ),
    "xeon-8380-2x40": (
        Published("latency_local_ns", "ns", None, "no Intel figure found"),
        Published("latency_remote_ns", "ns", None, "no Intel figure found"),
        Published("bandwidth_core_GBps", "GB/s", None, "no Intel figure found"),
        Published("bandwidth_socket_GBps", "GB/s", None, _NO_STREAM),
        Published("dram_socket_GBps", "GB/s", 204.8, _ARK_8380),
        Published("bandwidth_machine_GBps", "GB/s", None, _NO_STREAM),
        Published("dram_machine_GBps", "GB/s", 409.6, _ARK_8380 + ", x 2 sockets"),
        Published(
            "bandwidth_socket_remote_GBps",
            "GB/s",
            67.2,
            "Intel ARK, Xeon Platinum 8380: 3 UPI links at 11.2 GT/s, 2 bytes per transfer "
            "= 22.4 GB/s each way per link (peak)",
        ),
    ),
}
