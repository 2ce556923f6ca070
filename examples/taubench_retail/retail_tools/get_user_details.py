from .tool import Tool, dumps


class GetUserDetails(Tool):
    @staticmethod
    def invoke(data, user_id):
        users = data["users"]
        if user_id not in users:
            return "Error: user not found"
        return dumps(users[user_id])

    @staticmethod
    def get_info():
        return {
            "type": "function",
            "function": {
                "name": "get_user_details",
                "description": "Get the details of a user, including their orders.",
                "parameters": {
                    "type": "object",
                    "properties": {"user_id": {"type": "string", "description": "The user id, such as 'noah_brown_6181'."}},
                    "required": ["user_id"],
                },
            },
        }
