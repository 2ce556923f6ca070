"""A foreign client of the runner: Python, grpcio and the message classes protoc
generates from the spec's proto (api/runnerpb/runner.proto, byte-identical to
runner-protocol.md's). It shares no code with the Go client.

usage: client.py ADDRESS STUBS_DIR CASES_JSON
Each case is {"trial_id", "trial_spec_json", "calls": [{"tool_name", "arguments_json",
"call_id"}], "llm_messages_json", "termination_reason"}. For each, the client calls
RegisterTrial, ExecuteTool per call, GradeTrial and CleanupTrial, and prints one JSON
line of what came back; the Go test asserts on it.
"""
import json
import sys

sys.path.insert(0, sys.argv[2])

import grpc  # noqa: E402
import runner_pb2 as pb  # noqa: E402

SERVICE = "/tolokaforge.runner.RunnerService/"


def rpc(channel, name, req_cls, resp_cls):
    return channel.unary_unary(
        SERVICE + name,
        request_serializer=req_cls.SerializeToString,
        response_deserializer=resp_cls.FromString,
    )


def main():
    address, cases_path = sys.argv[1], sys.argv[3]
    with open(cases_path) as f:
        cases = json.load(f)
    with grpc.insecure_channel(address) as channel:
        register = rpc(channel, "RegisterTrial", pb.RegisterTrialRequest, pb.RegisterTrialResponse)
        execute = rpc(channel, "ExecuteTool", pb.ExecuteToolRequest, pb.ExecuteToolResponse)
        grade = rpc(channel, "GradeTrial", pb.GradeTrialRequest, pb.GradeTrialResponse)
        cleanup = rpc(channel, "CleanupTrial", pb.CleanupTrialRequest, pb.CleanupTrialResponse)
        for case in cases:
            out = {"trial_id": case["trial_id"]}
            r = register(pb.RegisterTrialRequest(
                trial_id=case["trial_id"],
                trial_spec_json=case["trial_spec_json"],
                engine_protocol_version=case["engine_protocol_version"],
            ), timeout=60)
            out["register_success"], out["register_error"] = r.success, r.error
            if r.success:
                statuses = []
                for call in case.get("calls", []):
                    e = execute(pb.ExecuteToolRequest(
                        trial_id=case["trial_id"], tool_name=call["tool_name"],
                        arguments_json=call["arguments_json"], call_id=call["call_id"],
                    ), timeout=60)
                    statuses.append(pb.ExecutionStatus.Name(e.status))
                out["exec_statuses"] = statuses
                g = grade(pb.GradeTrialRequest(
                    trial_id=case["trial_id"],
                    llm_messages_json=case["llm_messages_json"],
                    termination_reason=case["termination_reason"],
                ), timeout=120)
                out["grade_success"], out["grade_error"] = g.success, g.error
                if g.success:
                    out["binary_pass"] = g.grade.binary_pass
                    out["score"] = g.grade.score
                    out["state_checks"] = g.grade.components.state_checks
                    out["reasons"] = g.grade.reasons
                cleanup(pb.CleanupTrialRequest(trial_id=case["trial_id"]), timeout=60)
            print(json.dumps(out, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
