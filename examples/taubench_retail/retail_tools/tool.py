import json


class Tool:
    """A tau_sync tool: invoke(data, **kwargs) over the tables as dicts, and
    get_info() describing it as an OpenAI function."""

    @staticmethod
    def invoke(*args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def get_info():
        raise NotImplementedError


def dumps(value):
    return json.dumps(value, sort_keys=True)
