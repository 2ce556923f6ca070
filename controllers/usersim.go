package controllers

import (
	"fmt"

	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// checkUserSimulator refuses a Trial whose task asks for an LLM user simulator
// (user_simulator.mode llm, the mode's default) while the Trial names no user
// at all: the attempt would quietly run against a scripted user that says the
// opening line and stops, and its grade would measure a conversation the task
// never meant. A Trial that wants the scripted user says so with
// spec.userSimulator (mode scripted, the default of that block). The oracle
// holds no conversation, so it needs no user model.
func checkUserSimulator(t *evalv1.Trial, desc *task.TaskDescription) error {
	if t.Spec.Agent.Provider == evalv1.ProviderOracle || t.Spec.UserSimulator != nil {
		return nil
	}
	if desc == nil || desc.UserSimulator == nil || desc.UserSimulator.Mode != task.UserSimLLM {
		return nil
	}
	return fmt.Errorf("spec.userSimulator: task %s simulates its user with an LLM (user_simulator.mode %s), but the Trial names no user model; "+
		"set spec.userSimulator {mode: llm, model: {...}} to simulate the user, or spec.userSimulator {mode: scripted} to run the task with a scripted user on purpose",
		desc.TaskID, desc.UserSimulator.Mode)
}
