package runnerpb

import (
	"fmt"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// JudgeReportTrailer is the gRPC trailer key that carries the JudgeReport of a
// GradeTrial answered with success = false. The proto (byte-identical to the spec's)
// leaves grade unset on failure, yet a judge that ran and then failed was billed:
// the trailer hands its spend to the host's usage accounting without a grade. The
// "-bin" suffix makes gRPC carry the marshalled message as bytes.
const JudgeReportTrailer = "tolokaforge-judge-report-bin"

// JudgeReportMD is the trailer metadata carrying r.
func JudgeReportMD(r *JudgeReport) (metadata.MD, error) {
	b, err := proto.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("marshal judge report: %w", err)
	}
	return metadata.Pairs(JudgeReportTrailer, string(b)), nil
}

// JudgeReportFromMD reads the JudgeReport a failed GradeTrial left in its trailer:
// nil without one, an error when the value does not decode.
func JudgeReportFromMD(md metadata.MD) (*JudgeReport, error) {
	vs := md.Get(JudgeReportTrailer)
	if len(vs) == 0 {
		return nil, nil
	}
	r := &JudgeReport{}
	if err := proto.Unmarshal([]byte(vs[len(vs)-1]), r); err != nil {
		return nil, fmt.Errorf("trailer %s: %w", JudgeReportTrailer, err)
	}
	return r, nil
}
