package task

// Protocol v2 (EngineProtocolVersion) dropped user_simulator.first_message and
// user_simulator.user_context from the trial spec: the engine owns the opening
// turn and the user's context now. Older schema dumps (the canonical
// tbench_echo_hello fixture among them) still carry both keys, always as null,
// so the strict decoder accepts exactly that and nothing else: a non-null value
// is an engine below v2 asking for behaviour this runner no longer has, and
// silently ignoring it would run a different conversation than the one asked for.
const legacyUserSimulatorRefusal = "protocol v2 dropped this key from the trial spec (only null is accepted, as older schema dumps carry it)"

func (UserSimulatorConfig) legacyNullKeys() map[string]string {
	return map[string]string{
		"first_message": legacyUserSimulatorRefusal,
		"user_context":  legacyUserSimulatorRefusal,
	}
}
