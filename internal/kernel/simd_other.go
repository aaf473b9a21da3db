//go:build !amd64

package kernel

// simdImplementations returns no vector implementations on this
// architecture: the generic loops run.
func simdImplementations() []*implementation { return nil }
