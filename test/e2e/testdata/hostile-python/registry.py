"""The project's tool registry: tau_sync classes by name."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from tools.probe_runner import ProbeRunner  # noqa: E402

TOOLS = {"probe_runner": ProbeRunner}
