from .tool import Tool, dumps


class GetOrderDetails(Tool):
    @staticmethod
    def invoke(data, order_id):
        orders = data["orders"]
        if order_id not in orders:
            return "Error: order not found"
        return dumps(orders[order_id])

    @staticmethod
    def get_info():
        return {
            "type": "function",
            "function": {
                "name": "get_order_details",
                "description": "Get the status and details of an order.",
                "parameters": {
                    "type": "object",
                    "properties": {"order_id": {"type": "string", "description": "The order id, such as '#W0000000'."}},
                    "required": ["order_id"],
                },
            },
        }
