package telemetry

import "google.golang.org/grpc/metadata"

// MetadataCarrier is gRPC metadata as a propagation.TextMapCarrier: the
// host injects an attempt's trace context into a runner call's metadata
// with it (and tests acting as a traced host do the same).
type MetadataCarrier metadata.MD

// Get is k's first value, "" without one.
func (c MetadataCarrier) Get(k string) string {
	if v := metadata.MD(c).Get(k); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Set replaces k's values with v.
func (c MetadataCarrier) Set(k, v string) { metadata.MD(c).Set(k, v) }

// Keys lists the keys present.
func (c MetadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
