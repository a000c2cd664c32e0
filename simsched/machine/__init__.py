"""Machine model: schema, presets and loading (docs/machine-model.md)."""

from simsched.machine.loader import load_machine
from simsched.machine.presets import preset_names
from simsched.machine.schema import CacheLevel, Costs, Machine, Memory, parse_size

__all__ = ["CacheLevel", "Costs", "Machine", "Memory", "load_machine", "parse_size", "preset_names"]
