from .tool import Tool, dumps


class CancelPendingOrder(Tool):
    @staticmethod
    def invoke(data, order_id, reason):
        orders = data["orders"]
        if order_id not in orders:
            return "Error: order not found"
        order = orders[order_id]
        if order["status"] != "pending":
            return "Error: non-pending order cannot be cancelled"
        if reason not in ("no longer needed", "ordered by mistake"):
            return "Error: invalid reason"
        refunds = [
            {"transaction_type": "refund", "amount": p["amount"], "payment_method_id": p["payment_method_id"]}
            for p in order["payment_history"]
        ]
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order["payment_history"].extend(refunds)
        return dumps(order)

    @staticmethod
    def get_info():
        return {
            "type": "function",
            "function": {
                "name": "cancel_pending_order",
                "description": "Cancel a pending order and refund its payments to their methods.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "order_id": {"type": "string", "description": "The order id, such as '#W0000000'."},
                        "reason": {"type": "string", "enum": ["no longer needed", "ordered by mistake"], "description": "Why the order is cancelled."},
                    },
                    "required": ["order_id", "reason"],
                },
            },
        }
