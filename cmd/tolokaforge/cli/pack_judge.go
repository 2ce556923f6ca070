//go:build dev

package cli

import (
	"io"

	"tolokaforge.io/operator/test/devcluster"
)

// standInJudge is pack validate's judge, in the dev build, when no judge model is
// configured: test/devcluster's, the one package of test/ the dev build imports.
type standInJudge = devcluster.StandInJudge

func newStandInJudge(diag io.Writer) (*standInJudge, error) {
	return devcluster.NewStandInJudge(diag)
}
