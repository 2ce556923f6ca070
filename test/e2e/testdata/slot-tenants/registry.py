"""The project's tool registry: tau_sync classes by name."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from tools.tenants import HauntTheSlot, InspectTheSlot, WaitAWhile  # noqa: E402

TOOLS = {"haunt_the_slot": HauntTheSlot, "inspect_the_slot": InspectTheSlot, "wait_a_while": WaitAWhile}
