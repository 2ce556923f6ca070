package artifacts

import "tolokaforge.io/operator/api/result"

// gradeDoc is the attempt's grade.yaml: api/result owns its shape and its
// reading, so the writer and every reader agree on what a grade says.
func gradeDoc(a *Attempt) (*result.File, error) {
	return result.NewFile(a.TrialID, a.AttemptNumber, a.GradedBy, a.Grade)
}
