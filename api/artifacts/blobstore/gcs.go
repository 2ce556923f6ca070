//go:build !nogcs

package blobstore

// gs:// stores. The Google Cloud Storage client (gRPC, OpenTelemetry,
// Google API clients) is about 30 MB of the 44 MB the blob stores add to the
// binary; `-tags nogcs` builds without it, and gs:// URLs then fail to open
// (no driver registered for "gs").
import _ "gocloud.dev/blob/gcsblob"
