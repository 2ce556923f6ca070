"""The project's tool registry: tau_sync classes by name."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from retail_tools.cancel_pending_order import CancelPendingOrder  # noqa: E402
from retail_tools.get_order_details import GetOrderDetails  # noqa: E402
from retail_tools.get_user_details import GetUserDetails  # noqa: E402
from retail_tools.modify_user_address import ModifyUserAddress  # noqa: E402
from retail_tools.think import Think  # noqa: E402

TOOLS = {
    "get_user_details": GetUserDetails,
    "get_order_details": GetOrderDetails,
    "cancel_pending_order": CancelPendingOrder,
    "modify_user_address": ModifyUserAddress,
    "think": Think,
}
