from .tool import Tool


class Think(Tool):
    @staticmethod
    def invoke(data, thought):
        return ""

    @staticmethod
    def get_info():
        return {
            "type": "function",
            "function": {
                "name": "think",
                "description": "Think about something without changing anything.",
                "parameters": {"type": "object", "properties": {"thought": {"type": "string"}}, "required": ["thought"]},
            },
        }
