// Package config embeds the generated manifests the binary needs at run time
// (the CRDs installed by `tolokaforge dev`), so the binary never depends on a
// checkout.
//
// Imports: the standard library.
package config

import "embed"

// CRDs holds config/crd/bases/*.yaml.
//
//go:embed crd/bases/*.yaml
var CRDs embed.FS

// CRDDir is the directory of the CRD files inside CRDs.
const CRDDir = "crd/bases"
