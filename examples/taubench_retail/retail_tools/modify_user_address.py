from .tool import Tool, dumps


class ModifyUserAddress(Tool):
    @staticmethod
    def invoke(data, user_id, address1, city, state, country, zip):
        users = data["users"]
        if user_id not in users:
            return "Error: user not found"
        user = users[user_id]
        user["address"] = {"address1": address1, "city": city, "country": country, "state": state, "zip": zip}
        return dumps(user)

    @staticmethod
    def get_info():
        return {
            "type": "function",
            "function": {
                "name": "modify_user_address",
                "description": "Replace a user's default address.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "user_id": {"type": "string"},
                        "address1": {"type": "string"},
                        "city": {"type": "string"},
                        "state": {"type": "string"},
                        "country": {"type": "string"},
                        "zip": {"type": "string"},
                    },
                    "required": ["user_id", "address1", "city", "state", "country", "zip"],
                },
            },
        }
